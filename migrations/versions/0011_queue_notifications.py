"""PostgreSQL: every change of the queue also notifies channel ``fredica`` (a wake-up hint)

Engines of other hosts LISTEN on it and look for work at once instead of at their next poll.
A hint only: a notification lost (a dropped connection, a listener not yet connected) loses
no work, the poll finds it. Every visible change moves the change stream's counter (its
triggers, or the store numbering a run's new tasks), so a statement trigger on the counter
notifies, whatever wrote — the store, another program's statement; PostgreSQL delivers it at
commit, once per transaction however many rows changed. Nothing changes on SQLite.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FUNCTION = (
    "CREATE FUNCTION fredica_counter_notify() RETURNS trigger LANGUAGE plpgsql AS $$\n"
    "BEGIN\n"
    "  PERFORM pg_notify('fredica', '');\n"
    "  RETURN NULL;\n"
    "END $$"
)
TRIGGER = (
    "CREATE TRIGGER trg_change_counter_notify AFTER UPDATE OF seq ON change_counter\n"
    "FOR EACH STATEMENT EXECUTE FUNCTION fredica_counter_notify()"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(FUNCTION)
        op.execute(TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS trg_change_counter_notify ON change_counter")
        op.execute("DROP FUNCTION IF EXISTS fredica_counter_notify()")
