"""task.status_parts: a status text as the job said it, message ids and arguments

A job's status text ("transcoding 42 %") comes with the messages it is made of, so that a
client can say it in its user's language; the text itself stays as before, for the clients
that show it as it is. Tasks written before have none: their texts are shown as they are.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMN (no batch copy): the table keeps its change triggers.
    op.add_column("task", sa.Column("status_parts", sa.JSON().with_variant(postgresql.JSONB(), "postgresql")))


def downgrade() -> None:
    with op.batch_alter_table("task") as batch:
        batch.drop_column("status_parts")
