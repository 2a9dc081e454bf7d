"""task.charged_interruptions and the checkpoint sequence: an interruption is charged to a
task only when the task could have caused it

``interruptions`` now counts every crash a task lived through (its ceiling holds a task that
loops for review); ``charged_interruptions`` counts those that could be its own doing — its
work runs in the engine's process and it saved no checkpoint since its previous interruption —
and is what ``max_interruptions`` limits. ``checkpoint_seq`` counts the checkpoints a task has
saved; ``checkpoint_seq_at_interruption`` is that count at its last interruption.

Every interruption counted so far was charged under the old rule, so the charged count starts
equal to it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMN (no batch copy): the table keeps its change triggers.
    op.add_column(
        "task",
        sa.Column("charged_interruptions", sa.Integer(), server_default="0", nullable=False),
    )
    op.add_column(
        "task", sa.Column("checkpoint_seq", sa.Integer(), server_default="0", nullable=False)
    )
    op.add_column("task", sa.Column("checkpoint_seq_at_interruption", sa.Integer()))
    op.execute("UPDATE task SET charged_interruptions = interruptions WHERE interruptions > 0")


def downgrade() -> None:
    with op.batch_alter_table("task", schema=None) as batch_op:
        batch_op.drop_column("checkpoint_seq_at_interruption")
        batch_op.drop_column("checkpoint_seq")
        batch_op.drop_column("charged_interruptions")
