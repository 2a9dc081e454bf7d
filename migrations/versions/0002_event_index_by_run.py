"""task_event: drop the index on the random task id (events are read within their run)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("task_event", schema=None) as batch_op:
        batch_op.drop_index("ix_task_event_task_id")


def downgrade() -> None:
    with op.batch_alter_table("task_event", schema=None) as batch_op:
        batch_op.create_index("ix_task_event_task_id", ["task_id"])
