"""The change stream: task.change_seq, workflow_run.change_seq, change_counter,
change_tombstone, and the triggers that keep them

A viewer (the GUI, ``fredica watch``, ``fredica process``) loads a snapshot once and then asks
for what changed since a cursor, instead of reading whole tables again. SQLite keeps the
stream itself, whoever writes: AFTER INSERT/UPDATE triggers bump the one-row counter and stamp
the row's ``change_seq`` (an UPDATE only when a column a viewer shows changed: not heartbeats,
leases or checkpoints; an INSERT only when its writer did not number the row
itself), and AFTER DELETE triggers leave a tombstone.

Rows that exist already get distinct numbers (tasks their rowid, runs theirs after the last
task's), and the counter starts past all of them, so a reader starting at 0 sees every row.

The trigger SQL is written out here as it was at this revision (a test compares the migrated
schema, triggers included, with the models'). A later migration that recreates ``task`` or
``workflow_run`` (a batch operation that copies the table) drops its triggers with it and must
create them again.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TASK_WATCHED = (
    "status",
    "progress",
    "status_text",
    "is_paused",
    "is_pausable",
    "error",
    "error_type",
    "result",
    "retry_count",
    "max_retries",
    "attempt",
    "interruptions",
    "priority",
    "resource",
    "claimed_at",
    "started_at",
    "completed_at",
    "next_run_at",
    "unmet_deps",
)
RUN_WATCHED = (
    "status",
    "total_tasks",
    "done_tasks",
    "pending_tasks",
    "claimed_tasks",
    "running_tasks",
    "failed_tasks",
    "cancelled_tasks",
    "completed_at",
)

_BUMP = "UPDATE change_counter SET seq = seq + 1 WHERE id = 1"
_SEQ = "(SELECT seq FROM change_counter WHERE id = 1)"
_NOW = "(julianday('now') - 2440587.5) * 86400.0"


def _triggers(table: str, kind: str, watched: tuple[str, ...], run_of: str) -> list[str]:
    stamp = f"UPDATE {table} SET change_seq = {_SEQ} WHERE rowid = NEW.rowid"
    when = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in watched)
    tomb = (
        "INSERT INTO change_tombstone (seq, kind, row_id, workflow_run_id, deleted_at) "
        f"VALUES ({_SEQ}, '{kind}', OLD.id, OLD.{run_of}, {_NOW})"
    )
    return [
        f"CREATE TRIGGER trg_{table}_change_insert AFTER INSERT ON {table}\n"
        f"WHEN NEW.change_seq = 0\nBEGIN\n  {_BUMP};\n  {stamp};\nEND",
        f"CREATE TRIGGER trg_{table}_change_update AFTER UPDATE OF {', '.join(watched)} "
        f"ON {table}\nWHEN {when}\nBEGIN\n  {_BUMP};\n  {stamp};\nEND",
        f"CREATE TRIGGER trg_{table}_change_delete AFTER DELETE ON {table}\n"
        f"BEGIN\n  {_BUMP};\n  {tomb};\nEND",
    ]


TRIGGERS = (
    *_triggers("task", "task", TASK_WATCHED, "workflow_run_id"),
    *_triggers("workflow_run", "run", RUN_WATCHED, "id"),
)
# PostgreSQL: the same stream, kept by PL/pgSQL. A BEFORE trigger writes the number into the
# row being written (no second version of the row); the counter's row lock, held to the
# commit, hands numbers out in commit order (writers are serialized besides, workers.db).
PG_FUNCTIONS = (
    "CREATE FUNCTION fredica_change_stamp() RETURNS trigger LANGUAGE plpgsql AS $$\n"
    "BEGIN\n"
    "  UPDATE change_counter SET seq = seq + 1 WHERE id = 1 RETURNING seq INTO NEW.change_seq;\n"
    "  RETURN NEW;\n"
    "END $$",
    "CREATE FUNCTION fredica_change_tombstone() RETURNS trigger LANGUAGE plpgsql AS $$\n"
    "DECLARE s bigint;\n"
    "BEGIN\n"
    "  UPDATE change_counter SET seq = seq + 1 WHERE id = 1 RETURNING seq INTO s;\n"
    "  INSERT INTO change_tombstone (seq, kind, row_id, workflow_run_id, deleted_at)\n"
    "  VALUES (s, TG_ARGV[0], OLD.id, to_jsonb(OLD) ->> TG_ARGV[1],\n"
    "          extract(epoch FROM clock_timestamp()));\n"
    "  RETURN OLD;\n"
    "END $$",
)


def _pg_triggers(table: str, kind: str, watched: tuple[str, ...], run_of: str) -> list[str]:
    when = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in watched)
    return [
        f"CREATE TRIGGER trg_{table}_change_insert BEFORE INSERT ON {table} FOR EACH ROW\n"
        "WHEN (NEW.change_seq = 0) EXECUTE FUNCTION fredica_change_stamp()",
        f"CREATE TRIGGER trg_{table}_change_update BEFORE UPDATE OF {', '.join(watched)} "
        f"ON {table} FOR EACH ROW\nWHEN ({when}) EXECUTE FUNCTION fredica_change_stamp()",
        f"CREATE TRIGGER trg_{table}_change_delete AFTER DELETE ON {table} FOR EACH ROW\n"
        f"EXECUTE FUNCTION fredica_change_tombstone('{kind}', '{run_of}')",
    ]


PG_TRIGGERS = (
    *PG_FUNCTIONS,
    *_pg_triggers("task", "task", TASK_WATCHED, "workflow_run_id"),
    *_pg_triggers("workflow_run", "run", RUN_WATCHED, "id"),
)
TRIGGER_NAMES = [
    f"trg_{t}_change_{e}" for t in ("task", "workflow_run") for e in ("insert", "update", "delete")
]


def upgrade() -> None:
    op.create_table(
        "change_counter",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("seq", sa.Integer(), server_default="0", nullable=False),
        sa.Column("pruned_seq", sa.Integer(), server_default="0", nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_change_counter_one_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_counter")),
    )
    op.create_table(
        "change_tombstone",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("row_id", sa.String(length=36), nullable=False),
        sa.Column("workflow_run_id", sa.String(length=36), nullable=True),
        sa.Column("deleted_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_change_tombstone")),
    )
    for table in ("task", "workflow_run"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("change_seq", sa.Integer(), server_default="0", nullable=False)
            )
    # Existing rows: distinct numbers, the counter past all of them (before the indexes and
    # the triggers: one pass each, nothing fired).
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.execute(
            "UPDATE task SET change_seq = n FROM (SELECT id AS nid, row_number() OVER "
            "(ORDER BY created_at, id) AS n FROM task) AS o WHERE task.id = o.nid"
        )
        op.execute(
            "UPDATE workflow_run SET change_seq = n + (SELECT count(*) FROM task) FROM "
            "(SELECT id AS nid, row_number() OVER (ORDER BY created_at, id) AS n "
            "FROM workflow_run) AS o WHERE workflow_run.id = o.nid"
        )
    else:
        op.execute("UPDATE task SET change_seq = rowid")
        op.execute(
            "UPDATE workflow_run SET change_seq = rowid + "
            "(SELECT coalesce(max(rowid), 0) FROM task)"
        )
    op.execute(
        "INSERT INTO change_counter (id, seq, pruned_seq) VALUES (1, "
        f"{'greatest' if postgres else 'max'}((SELECT coalesce(max(change_seq), 0) FROM task), "
        "(SELECT coalesce(max(change_seq), 0) FROM workflow_run)), 0)"
    )
    for table in ("task", "workflow_run"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(batch_op.f(f"ix_{table}_change_seq"), ["change_seq"])
    for ddl in PG_TRIGGERS if postgres else TRIGGERS:
        op.execute(ddl)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for name in TRIGGER_NAMES:
        table = name.removeprefix("trg_").rsplit("_change_", 1)[0]
        op.execute(f"DROP TRIGGER IF EXISTS {name}" + (f" ON {table}" if postgres else ""))
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS fredica_change_stamp()")
        op.execute("DROP FUNCTION IF EXISTS fredica_change_tombstone()")
    for table in ("workflow_run", "task"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(batch_op.f(f"ix_{table}_change_seq"))
            batch_op.drop_column("change_seq")
    op.drop_table("change_tombstone")
    op.drop_table("change_counter")
