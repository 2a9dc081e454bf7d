"""A run knows the home (a host's data directory) it was submitted from, and so does its notice

On a queue shared by several hosts, a finished run is told by the window of the host that
submitted it, not by whichever window takes its notice first: ``workflow_run.home_id`` is
set at submission, and the notice written when the run ends copies it; a window takes the
notices of its own home (and those of runs submitted before this revision, which have none).
Plain ``ALTER TABLE ADD COLUMN``: no batch copy of ``workflow_run``, whose change-stream
triggers would go with it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("workflow_run", sa.Column("home_id", sa.String(length=64), nullable=True))
    op.add_column("notice", sa.Column("home_id", sa.String(length=64), nullable=True))


def downgrade() -> None:
    # SQLite drops a column in place since 3.35 (no copy of the table, its triggers kept).
    op.drop_column("notice", "home_id")
    op.drop_column("workflow_run", "home_id")
