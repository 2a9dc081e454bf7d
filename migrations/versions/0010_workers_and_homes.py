"""worker: the engines that run on the queue, for several hosts on one database; the home of
an interrupted task in the restart log

On PostgreSQL several engines — ``fredica worker`` on several hosts, desktop apps — share one
queue. Each engine registers itself (its host, the data directory it runs from — its *home*
—, its slots, its build and the task types and payload versions it can run), renews its row
with its heartbeat, and marks it at a graceful stop. ``fredica hosts`` lists them, ``fredica
drain`` asks one to finish its work and claim no more, and start-up recovery takes over only
what the same home ran before, never another host's live work. The restart log keeps the home
of the engine that held each task, so that each host reviews what it ran itself.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "worker",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("home_id", sa.String(length=64), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("build", sa.String(length=64), nullable=False),
        sa.Column("slots", JSON, server_default="{}", nullable=False),
        sa.Column("task_types", JSON, server_default="{}", nullable=False),
        sa.Column("draining", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("heartbeat_at", sa.Float(), nullable=False),
        sa.Column("stopped_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_worker")),
    )
    with op.batch_alter_table("worker", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_worker_home_id"), ["home_id"], unique=False)
    # Plain ALTER TABLE ADD COLUMN (no batch copy of a table with triggers; this one has none).
    op.add_column("restart_task_log", sa.Column("home_id", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("restart_task_log") as batch:
        batch.drop_column("home_id")
    with op.batch_alter_table("worker", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_worker_home_id"))
    op.drop_table("worker")
