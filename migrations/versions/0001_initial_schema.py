"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

#: JSON columns: JSONB on PostgreSQL (indexable, compared by value), JSON text on SQLite.
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


revision: str = '0001'
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('material',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('title', sa.String(length=512), nullable=False),
    sa.Column('local_path', sa.Text(), nullable=True),
    sa.Column('kind', sa.String(length=16), server_default='unknown', nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=True),
    sa.Column('duration', sa.Float(), nullable=True),
    sa.Column('fingerprint', sa.String(length=128), nullable=True),
    sa.Column('metadata', JSON, server_default='{}', nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_material'))
    )
    with op.batch_alter_table('material', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_material_fingerprint'), ['fingerprint'], unique=False)

    op.create_table('restart_task_log',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=36), nullable=False),
    sa.Column('task_id', sa.String(length=36), nullable=False),
    sa.Column('task_type', sa.String(length=64), nullable=False),
    sa.Column('workflow_run_id', sa.String(length=36), nullable=True),
    sa.Column('material_id', sa.String(length=64), nullable=True),
    sa.Column('status_at_restart', sa.String(length=16), nullable=False),
    sa.Column('progress', sa.Float(), server_default='0', nullable=False),
    sa.Column('action', sa.String(length=16), nullable=False),
    sa.Column('disposition', sa.String(length=16), server_default='pending_review', nullable=False),
    sa.Column('detail', sa.Text(), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('updated_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_restart_task_log'))
    )
    with op.batch_alter_table('restart_task_log', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_restart_task_log_session_id'), ['session_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_restart_task_log_task_id'), ['task_id'], unique=False)

    op.create_table('workflow_run',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('material_id', sa.String(length=64), nullable=True),
    sa.Column('template', sa.String(length=128), nullable=True),
    sa.Column('status', sa.Enum('pending', 'running', 'completed', 'failed', 'cancelled', name='run_status', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('total_tasks', sa.Integer(), server_default='0', nullable=False),
    sa.Column('done_tasks', sa.Integer(), server_default='0', nullable=False),
    sa.Column('pending_tasks', sa.Integer(), server_default='0', nullable=False),
    sa.Column('claimed_tasks', sa.Integer(), server_default='0', nullable=False),
    sa.Column('running_tasks', sa.Integer(), server_default='0', nullable=False),
    sa.Column('failed_tasks', sa.Integer(), server_default='0', nullable=False),
    sa.Column('cancelled_tasks', sa.Integer(), server_default='0', nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('completed_at', sa.Float(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workflow_run'))
    )
    with op.batch_alter_table('workflow_run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_workflow_run_material_id'), ['material_id'], unique=False)

    op.create_table('task',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('key', sa.String(length=128), nullable=True),
    sa.Column('type', sa.String(length=64), nullable=False),
    sa.Column('workflow_run_id', sa.String(length=36), nullable=True),
    sa.Column('material_id', sa.String(length=64), nullable=True),
    sa.Column('status', sa.Enum('pending', 'claimed', 'running', 'completed', 'failed', 'cancelled', name='task_status', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('priority', sa.Integer(), server_default='0', nullable=False),
    sa.Column('depends_on', JSON, server_default='[]', nullable=False),
    sa.Column('payload', JSON, server_default='{}', nullable=False),
    sa.Column('result', JSON, nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('error_type', sa.String(length=64), nullable=True),
    sa.Column('idempotency_key', sa.String(length=256), nullable=True),
    sa.Column('retry_count', sa.Integer(), server_default='0', nullable=False),
    sa.Column('max_retries', sa.Integer(), server_default='0', nullable=False),
    sa.Column('progress', sa.Float(), server_default='0', nullable=False),
    sa.Column('is_paused', sa.Boolean(), server_default=sa.false(), nullable=False),
    sa.Column('is_pausable', sa.Boolean(), server_default=sa.true(), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('claimed_at', sa.Float(), nullable=True),
    sa.Column('started_at', sa.Float(), nullable=True),
    sa.Column('completed_at', sa.Float(), nullable=True),
    sa.Column('heartbeat_at', sa.Float(), nullable=True),
    sa.Column('unmet_deps', sa.Integer(), server_default='0', nullable=False),
    sa.Column('attempt', sa.Integer(), server_default='0', nullable=False),
    sa.Column('lease_token', sa.String(length=36), nullable=True),
    sa.Column('worker_id', sa.String(length=128), nullable=True),
    sa.Column('lease_until', sa.Float(), nullable=True),
    sa.Column('next_run_at', sa.Float(), nullable=True),
    sa.Column('resource', sa.String(length=16), server_default='cpu', nullable=False),
    sa.Column('status_text', sa.String(length=512), nullable=True),
    sa.Column('checkpoint', JSON, nullable=True),
    sa.CheckConstraint('progress >= 0 AND progress <= 100', name=op.f('ck_task_progress_range')),
    sa.CheckConstraint('unmet_deps >= 0', name=op.f('ck_task_unmet_deps_nonnegative')),
    sa.ForeignKeyConstraint(['workflow_run_id'], ['workflow_run.id'], name=op.f('fk_task_workflow_run_id_workflow_run'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_task'))
    )
    with op.batch_alter_table('task', schema=None) as batch_op:
        # Autogenerate cannot see expression indexes on SQLite: this one is written by hand.
        batch_op.create_index('ix_task_claimable', [sa.text('priority DESC'), 'created_at'], unique=False, sqlite_where=sa.text("status = 'pending' AND unmet_deps = 0 AND NOT is_paused"), postgresql_where=sa.text("status = 'pending' AND unmet_deps = 0 AND NOT is_paused"))
        batch_op.create_index('ix_task_held', ['worker_id'], unique=False, sqlite_where=sa.text("status IN ('claimed', 'running')"), postgresql_where=sa.text("status IN ('claimed', 'running')"))
        batch_op.create_index(batch_op.f('ix_task_material_id'), ['material_id'], unique=False)
        batch_op.create_index('ix_task_retry_due', ['next_run_at'], unique=False, sqlite_where=sa.text("status = 'pending' AND next_run_at IS NOT NULL"), postgresql_where=sa.text("status = 'pending' AND next_run_at IS NOT NULL"))
        batch_op.create_index(batch_op.f('ix_task_workflow_run_id'), ['workflow_run_id'], unique=False)
        batch_op.create_index('uq_task_idempotency_active', ['idempotency_key'], unique=True, sqlite_where=sa.text("idempotency_key IS NOT NULL AND status IN ('pending', 'claimed', 'running')"), postgresql_where=sa.text("idempotency_key IS NOT NULL AND status IN ('pending', 'claimed', 'running')"))

    op.create_table('task_dependency',
    sa.Column('task_id', sa.String(length=36), nullable=False),
    sa.Column('depends_on_id', sa.String(length=36), nullable=False),
    sa.ForeignKeyConstraint(['depends_on_id'], ['task.id'], name=op.f('fk_task_dependency_depends_on_id_task'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['task_id'], ['task.id'], name=op.f('fk_task_dependency_task_id_task'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('task_id', 'depends_on_id', name=op.f('pk_task_dependency'))
    )
    with op.batch_alter_table('task_dependency', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_task_dependency_depends_on_id'), ['depends_on_id'], unique=False)

    op.create_table('task_event',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('task_id', sa.String(length=36), nullable=False),
    sa.Column('workflow_run_id', sa.String(length=36), nullable=True),
    sa.Column('at', sa.Float(), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('detail', JSON, nullable=True),
    sa.ForeignKeyConstraint(['task_id'], ['task.id'], name=op.f('fk_task_event_task_id_task'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_task_event'))
    )
    with op.batch_alter_table('task_event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_task_event_task_id'), ['task_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_task_event_workflow_run_id'), ['workflow_run_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('task_event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_task_event_workflow_run_id'))
        batch_op.drop_index(batch_op.f('ix_task_event_task_id'))

    op.drop_table('task_event')
    with op.batch_alter_table('task_dependency', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_task_dependency_depends_on_id'))

    op.drop_table('task_dependency')
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.drop_index('ix_task_claimable')
        batch_op.drop_index('uq_task_idempotency_active', sqlite_where=sa.text("idempotency_key IS NOT NULL AND status IN ('pending', 'claimed', 'running')"), postgresql_where=sa.text("idempotency_key IS NOT NULL AND status IN ('pending', 'claimed', 'running')"))
        batch_op.drop_index(batch_op.f('ix_task_workflow_run_id'))
        batch_op.drop_index('ix_task_retry_due', sqlite_where=sa.text("status = 'pending' AND next_run_at IS NOT NULL"), postgresql_where=sa.text("status = 'pending' AND next_run_at IS NOT NULL"))
        batch_op.drop_index(batch_op.f('ix_task_material_id'))
        batch_op.drop_index('ix_task_held', sqlite_where=sa.text("status IN ('claimed', 'running')"), postgresql_where=sa.text("status IN ('claimed', 'running')"))

    op.drop_table('task')
    with op.batch_alter_table('workflow_run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_workflow_run_material_id'))

    op.drop_table('workflow_run')
    with op.batch_alter_table('restart_task_log', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_restart_task_log_task_id'))
        batch_op.drop_index(batch_op.f('ix_restart_task_log_session_id'))

    op.drop_table('restart_task_log')
    with op.batch_alter_table('material', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_material_fingerprint'))

    op.drop_table('material')
