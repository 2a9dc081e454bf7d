"""The queue's tables: ``workflow_run``, ``task``, ``task_dependency``, ``task_event``,
``restart_task_log``, ``notice``, and the change stream's ``change_counter`` and
``change_tombstone`` with the triggers that keep them (:data:`CHANGE_TRIGGERS`).

Times are Unix seconds (UTC by definition) stored as floats: they compare as numbers in the
claim query, survive a round trip through SQLite and PostgreSQL unchanged, and are what the API
shows. Only :mod:`workers.store` and :mod:`workers.recovery` read or write these tables.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateIndex
from sqlalchemy.sql.compiler import DDLCompiler
from sqlalchemy.types import TypeEngine

from workers.states import RunStatus, TaskStatus

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONValue = Any


class JSONDocument(sa.types.TypeDecorator[Any]):
    """JSON columns: JSONB on PostgreSQL (compared by value, so that the change triggers can
    tell a changed result; indexable), JSON text on SQLite.

    Chosen when a dialect compiles or binds it, rather than as ``with_variant(JSONB())``:
    naming JSONB here would load SQLAlchemy's PostgreSQL dialect (~20 ms) into every command
    on a SQLite file."""

    impl = sa.JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(sa.JSON())


JSON = JSONDocument()


def partial_index(name: str, *expressions: Any, where: str, unique: bool = False) -> sa.Index:
    """An index of the rows ``where`` holds, on SQLite and on PostgreSQL.

    SQLite's ``WHERE`` is SQLAlchemy's ``sqlite_where``; PostgreSQL's is added when the index
    is compiled for it (:func:`_create_partial_index_on_postgresql`), not given as
    ``postgresql_where``, whose check would load the PostgreSQL dialect (see
    :class:`JSONDocument`). The migrations create the same indexes with both options."""
    return sa.Index(
        name, *expressions, unique=unique, sqlite_where=sa.text(where), info={"where": where}
    )


@compiles(CreateIndex, "postgresql")
def _create_partial_index_on_postgresql(
    create: CreateIndex, compiler: DDLCompiler, **kw: Any
) -> str:
    text: str = compiler.visit_create_index(create, **kw)  # type: ignore[no-untyped-call]
    where = create.element.info.get("where")
    return f"{text} WHERE {where}" if where else text


#: The claimable indexes' predicate. The claim's WHERE repeats it word for word: SQLite uses a
#: partial index only when it can see that the query's WHERE implies the index's.
CLAIMABLE = "status = 'pending' AND unmet_deps = 0 AND NOT is_paused AND next_run_at IS NULL"
#: The predicate of the index of finished runs (retention), repeated word for word by its users.
FINISHED_RUN = "status IN ('completed', 'failed', 'cancelled')"


#: The one Fredica database's tables (the queue's here, the media library's in
#: :mod:`fredica_app.library.models`). Plain tables: the stores write SQL expressions, never
#: mapped objects, so ``sqlalchemy.orm`` (~50 ms of every command's start) is not loaded.
metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


def _enum(cls: type[TaskStatus] | type[RunStatus], name: str) -> sa.Enum:
    return sa.Enum(
        cls,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=16,
        values_callable=lambda e: [m.value for m in e],
        validate_strings=True,
    )


def _required(name: str, type_: Any, *args: Any, **kw: Any) -> sa.Column[Any]:
    """A NOT NULL column (a nullable one is ``sa.Column``'s default)."""
    return sa.Column(name, type_, *args, nullable=False, **kw)


def _count(name: str, **kw: Any) -> sa.Column[Any]:
    """A NOT NULL integer that starts at 0."""
    return _required(name, sa.Integer(), server_default="0", **kw)


#: A workflow run: the tasks submitted together, and their counts by status.
run_t = sa.Table(
    "workflow_run",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("material_id", sa.String(64), index=True),
    sa.Column("template", sa.String(128)),
    _required("status", _enum(RunStatus, "run_status")),
    _count("total_tasks"),
    # How many tasks are in each status, kept in the transaction of every task change so that
    # the run's status is derived in O(1) whatever the size of the run.
    _count("done_tasks"),
    _count("pending_tasks"),
    _count("claimed_tasks"),
    _count("running_tasks"),
    _count("failed_tasks"),
    _count("cancelled_tasks"),
    _required("created_at", sa.Float()),
    sa.Column("completed_at", sa.Float()),
    # Where the run's last visible change stands in the change stream (set by a trigger).
    _count("change_seq", index=True),
    # The home (a host's data directory) it was submitted from; NULL: not said.
    sa.Column("home_id", sa.String(64)),
    # Retention: finished runs, by when they finished.
    partial_index("ix_workflow_run_finished", "completed_at", where=FINISHED_RUN),
)

#: A task of the queue: a node of its run's DAG.
task_t = sa.Table(
    "task",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("key", sa.String(128)),
    _required("type", sa.String(64)),
    sa.Column(
        "workflow_run_id",
        sa.String(36),
        sa.ForeignKey("workflow_run.id", ondelete="SET NULL"),
        index=True,
    ),
    sa.Column("material_id", sa.String(64), index=True),
    _required("status", _enum(TaskStatus, "task_status")),
    _count("priority"),
    _required("depends_on", JSON, server_default="[]"),
    _required("payload", JSON, server_default="{}"),
    sa.Column("result", JSON),
    sa.Column("error", sa.Text()),
    sa.Column("error_type", sa.String(64)),
    sa.Column("idempotency_key", sa.String(256)),
    _count("retry_count"),
    _count("max_retries"),
    _required("progress", sa.Float(), server_default="0"),
    _required("is_paused", sa.Boolean(), server_default=sa.false()),
    _required("is_pausable", sa.Boolean(), server_default=sa.true()),
    _required("created_at", sa.Float()),
    sa.Column("claimed_at", sa.Float()),
    sa.Column("started_at", sa.Float()),
    sa.Column("completed_at", sa.Float()),
    sa.Column("heartbeat_at", sa.Float()),
    # What a durable queue needs beyond a task's record (docs/architecture.md).
    _count("unmet_deps"),
    _count("attempt"),
    sa.Column("lease_token", sa.String(36)),
    sa.Column("worker_id", sa.String(128)),
    sa.Column("lease_until", sa.Float()),
    sa.Column("next_run_at", sa.Float()),
    _required("resource", sa.String(16), server_default="cpu"),
    sa.Column("status_text", sa.String(512)),
    sa.Column("checkpoint", JSON),
    # Times the app (or the endpoints server running it) stopped while this task ran, by a
    # crash: not failures, they use no retry. Past a ceiling the task is held for review.
    _count("interruptions"),
    # Where the task's last visible change stands in the change stream (set by a trigger).
    _count("change_seq", index=True),
    # Of the interruptions, those charged to the task (``max_interruptions`` limits them): its
    # work ran in the engine's process, and it saved no checkpoint since its previous one.
    _count("charged_interruptions"),
    # Checkpoints saved so far, and how many there were at its last interruption.
    _count("checkpoint_seq"),
    sa.Column("checkpoint_seq_at_interruption", sa.Integer()),
    # ``status_text`` as the job said it: message ids and arguments (the endpoints' status
    # catalogue), for a client to say in its own language; None when the text is the engine's
    # or a job's plain words. A client uses it only while its English is ``status_text``.
    sa.Column("status_parts", JSON),
    # Serve the claim: only what could be claimed now is in them, in claim order. A task
    # waiting for its retry timer (next_run_at set) is not: the claim first clears the
    # next_run_at of retries that came due (through ix_task_retry_due), so a claim never
    # walks past tasks that wait. The unfiltered claim walks ix_task_claimable; a claim
    # for some resource classes takes the head of each class in ix_task_claimable_by_resource,
    # so that what other classes have queued costs it nothing.
    partial_index("ix_task_claimable", sa.text("priority DESC"), "created_at", where=CLAIMABLE),
    partial_index(
        "ix_task_claimable_by_resource",
        "resource",
        sa.text("priority DESC"),
        "created_at",
        where=CLAIMABLE,
    ),
    # One active task per idempotency key; a finished task's key may be used again.
    partial_index(
        "uq_task_idempotency_active",
        "idempotency_key",
        unique=True,
        where="idempotency_key IS NOT NULL AND status IN ('pending', 'claimed', 'running')",
    ),
    # Heartbeats and recovery look only at held tasks.
    partial_index("ix_task_held", "worker_id", where="status IN ('claimed', 'running')"),
    # The engine's retry timer: the earliest next_run_at among waiting retries.
    partial_index(
        "ix_task_retry_due",
        "next_run_at",
        where="status = 'pending' AND next_run_at IS NOT NULL",
    ),
    sa.CheckConstraint("progress >= 0 AND progress <= 100", name="progress_range"),
    sa.CheckConstraint("unmet_deps >= 0", name="unmet_deps_nonnegative"),
)

#: One edge of the DAG: ``task_id`` waits for ``depends_on_id``.
dep_t = sa.Table(
    "task_dependency",
    metadata,
    sa.Column(
        "task_id", sa.String(36), sa.ForeignKey("task.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column(
        "depends_on_id",
        sa.String(36),
        sa.ForeignKey("task.id", ondelete="CASCADE"),
        primary_key=True,
        index=True,
    ),
)

#: The timeline a user reads. Progress ticks are not events.
event_t = sa.Table(
    "task_event",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    # No index on the task id: task ids are random, so each event would land on a random
    # index page (measured: 5 of a drain transaction's 12 WAL pages). Indexed by run, new
    # events append at the end of their run's range; a task's timeline is read within its run.
    _required("task_id", sa.String(36), sa.ForeignKey("task.id", ondelete="CASCADE")),
    sa.Column("workflow_run_id", sa.String(36), index=True),
    _required("at", sa.Float()),
    _required("kind", sa.String(32)),
    sa.Column("detail", JSON),
)

#: What start-up recovery found and did, with a disposition the user can act on.
log_t = sa.Table(
    "restart_task_log",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    _required("session_id", sa.String(36), index=True),
    _required("task_id", sa.String(36), index=True),
    _required("task_type", sa.String(64)),
    sa.Column("workflow_run_id", sa.String(36)),
    sa.Column("material_id", sa.String(64)),
    _required("status_at_restart", sa.String(16)),
    _required("progress", sa.Float(), server_default="0"),
    _required("action", sa.String(16)),
    _required("disposition", sa.String(16), server_default="pending_review"),
    sa.Column("detail", sa.Text()),
    _required("created_at", sa.Float()),
    _required("updated_at", sa.Float()),
    # The home (host and data directory, ``worker``) of the engine that held the task when it
    # was interrupted: each host reviews what it ran itself. NULL: not known.
    sa.Column("home_id", sa.String(64)),
)

#: An engine on the queue: registered when it starts, renewed by its heartbeat, marked when it
#: stops. With several hosts on one database (PostgreSQL), how they see each other (``fredica
#: hosts``) and how one is asked to drain.
worker_t = sa.Table(
    "worker",
    metadata,
    # The engine's worker id: ``HOST:PID:RANDOM``, new for each start.
    sa.Column("id", sa.String(128), primary_key=True),
    _required("host", sa.String(255)),
    # This host's data directory, as a stable id: the engines of one home are one after
    # another (the data directory's lock), so a starting engine takes over what its home's
    # earlier engines left, and nothing of another home's.
    _required("home_id", sa.String(64), index=True),
    _required("pid", sa.Integer()),
    # The Fredica version it runs.
    _required("build", sa.String(64)),
    _required("slots", JSON, server_default="{}"),
    # The task types it runs, each with the newest payload version it understands.
    _required("task_types", JSON, server_default="{}"),
    # Asked to finish what it runs and claim nothing more (``fredica drain``).
    _required("draining", sa.Boolean(), server_default=sa.false()),
    _required("started_at", sa.Float()),
    _required("heartbeat_at", sa.Float()),
    sa.Column("stopped_at", sa.Float()),
)

#: A run's end the user is to be told of (it completed, or it failed), written in the
#: transaction that ends the run, whoever ends it (the desktop app's engine or a headless
#: ``fredica worker``). The desktop app takes each one once (``shown_at``), also at its next
#: start when it was not running then. Deleted with its run.
notice_t = sa.Table(
    "notice",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    # ``run_completed`` or ``run_failed``.
    _required("kind", sa.String(32)),
    _required(
        "workflow_run_id",
        sa.String(36),
        sa.ForeignKey("workflow_run.id", ondelete="CASCADE"),
        index=True,
    ),
    _required("created_at", sa.Float()),
    # When a desktop app took it to show; NULL: not yet.
    sa.Column("shown_at", sa.Float(), index=True),
    # The home its run was submitted from (its window tells it); NULL: any window may.
    sa.Column("home_id", sa.String(64)),
)


# --- the change stream ----------------------------------------------------------------------
#
# Every visible change of a task or a run — whoever writes it: this process, another one, a
# set-based statement — is stamped by SQLite itself: a trigger bumps the one-row counter and
# writes its value into the row's ``change_seq``; a deleted row leaves a tombstone with its
# own number. Writers are serialized (``BEGIN IMMEDIATE``), so numbers are handed out in commit
# order and a reader asking for ``change_seq > cursor`` never misses a change committed later
# with a smaller number (docs/architecture.md, "The change stream").

#: The change stream's counter: one row (``id = 1``).
counter_t = sa.Table(
    "change_counter",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
    # The last number handed out.
    _count("seq"),
    # Tombstones up to this number were pruned: a cursor below it may have missed deletions.
    _count("pruned_seq"),
    sa.CheckConstraint("id = 1", name="one_row"),
)

#: A deleted task or run (retention, ``fredica remove``), for readers of the stream.
tombstone_t = sa.Table(
    "change_tombstone",
    metadata,
    sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
    # ``task`` or ``run``.
    _required("kind", sa.String(8)),
    _required("row_id", sa.String(36)),
    # The run of a deleted task (a deleted run: itself), so that a reader of one run sees it.
    sa.Column("workflow_run_id", sa.String(36)),
    # Unix seconds, by SQLite's clock; tombstones are pruned by age (workers.retention).
    _required("deleted_at", sa.Float()),
)


#: What a viewer shows of a task (docs/cli.md's task object, less what never changes): an
#: UPDATE that changes one of these stamps the row. ``unmet_deps`` is in: its reaching 0 turns
#: a task waiting for its dependencies into one queued for a slot. Not the heartbeat and lease
#: columns, nor ``checkpoint``: those change without anything a viewer shows changing, and a
#: heartbeat every few seconds per running task would flood the stream.
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
#: What a viewer shows of a run: its status and its counts of tasks.
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
#: SQLite's clock as Unix seconds (``unixepoch('subsec')`` needs SQLite 3.42).
_NOW = "(julianday('now') - 2440587.5) * 86400.0"


def _change_triggers(table: str, kind: str, watched: tuple[str, ...], run_of: str) -> list[str]:
    stamp = f"UPDATE {table} SET change_seq = {_SEQ} WHERE rowid = NEW.rowid"
    # An INSERT is stamped unless its writer drew numbers itself, from the counter, in its
    # own transaction (the store does for a run's tasks: one counter update for all of them
    # instead of two statements per row). UPDATE OF fires when the statement names a column,
    # changed or not; the WHEN keeps a statement that rewrites the same values (a repeated
    # progress report) out of the stream.
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


#: The triggers that keep the change stream, as the migration that introduced them creates
#: them (a test compares the two). Recursive triggers are off (SQLite's default), so a stamp
#: does not fire anything; it names no watched column anyway.
CHANGE_TRIGGERS = (
    *_change_triggers("task", "task", TASK_WATCHED, "workflow_run_id"),
    *_change_triggers("workflow_run", "run", RUN_WATCHED, "id"),
)


# PostgreSQL keeps the same stream with PL/pgSQL: a BEFORE trigger writes the number into the
# row being written (no second version of the row); the counter's row lock, held to the
# commit, hands numbers out in commit order; a deleted row's tombstone is written AFTER.
_PG_FUNCTIONS = (
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


def _pg_change_triggers(table: str, kind: str, watched: tuple[str, ...], run_of: str) -> list[str]:
    when = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in watched)
    return [
        f"CREATE TRIGGER trg_{table}_change_insert BEFORE INSERT ON {table} FOR EACH ROW\n"
        "WHEN (NEW.change_seq = 0) EXECUTE FUNCTION fredica_change_stamp()",
        f"CREATE TRIGGER trg_{table}_change_update BEFORE UPDATE OF {', '.join(watched)} "
        f"ON {table} FOR EACH ROW\nWHEN ({when}) EXECUTE FUNCTION fredica_change_stamp()",
        f"CREATE TRIGGER trg_{table}_change_delete AFTER DELETE ON {table} FOR EACH ROW\n"
        f"EXECUTE FUNCTION fredica_change_tombstone('{kind}', '{run_of}')",
    ]


#: The same on PostgreSQL, functions first; and there every move of the counter notifies
#: channel ``fredica`` (a wake-up hint for engines of other hosts, delivered at commit, once
#: per transaction: migration 0011).
POSTGRES_CHANGE_TRIGGERS = (
    *_PG_FUNCTIONS,
    *_pg_change_triggers("task", "task", TASK_WATCHED, "workflow_run_id"),
    *_pg_change_triggers("workflow_run", "run", RUN_WATCHED, "id"),
    "CREATE FUNCTION fredica_counter_notify() RETURNS trigger LANGUAGE plpgsql AS $$\n"
    "BEGIN\n"
    "  PERFORM pg_notify('fredica', '');\n"
    "  RETURN NULL;\n"
    "END $$",
    "CREATE TRIGGER trg_change_counter_notify AFTER UPDATE OF seq ON change_counter\n"
    "FOR EACH STATEMENT EXECUTE FUNCTION fredica_counter_notify()",
)
#: The channel those notifications go to.
NOTIFY_CHANNEL = "fredica"


@sa.event.listens_for(metadata, "after_create")
def _create_change_stream(target: sa.MetaData, connection: sa.Connection, **kw: Any) -> None:
    """``create_all`` makes what the migrations make: the counter's row and the triggers."""
    if counter_t not in kw.get("tables", ()):
        return
    connection.exec_driver_sql("INSERT INTO change_counter (id, seq, pruned_seq) VALUES (1, 0, 0)")
    postgres = connection.dialect.name == "postgresql"
    for ddl in POSTGRES_CHANGE_TRIGGERS if postgres else CHANGE_TRIGGERS:
        connection.exec_driver_sql(ddl)
