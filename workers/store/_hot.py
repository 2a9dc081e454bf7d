"""The hot path at the driver level: the statements every claim and completion runs.

Each engine turn runs a handful of statements per task; through SQLAlchemy's execution layer
(execution contexts, result objects, parameter and type processing) they cost several times
what SQLite itself spends on them (measured: ~2.5 ms of CPU for a turn that SQLite does in
~0.4 ms). These statements therefore go straight to the DBAPI cursor of the transaction's own
connection — same transaction, same fencing, fixed SQL — and convert their few column types
by hand. Everything else in the store stays on SQLAlchemy.

Written for SQLite; on PostgreSQL the same statements run through
:class:`workers.store._dialect.PgCursor` (``INDEXED BY`` dropped, psycopg's parameter style),
except the claim, which has its own text there (``FOR UPDATE SKIP LOCKED``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from workers import jsonb
from workers.records import TaskRecord
from workers.states import RunStatus, TaskStatus
from workers.store._dialect import POSTGRESQL, PgCursor

COUNT_COLUMNS = {
    TaskStatus.PENDING: "pending_tasks",
    TaskStatus.CLAIMED: "claimed_tasks",
    TaskStatus.RUNNING: "running_tasks",
    TaskStatus.COMPLETED: "done_tasks",
    TaskStatus.FAILED: "failed_tasks",
    TaskStatus.CANCELLED: "cancelled_tasks",
}

# The claim. Its WHERE repeats the claimable indexes' predicate (workers.models.CLAIMABLE)
# word for word so that SQLite uses them (a bound parameter for 'pending' would hide the
# implication). A task waiting for its retry timer is not claimable until PROMOTE_DUE_SQL,
# run first, has cleared its next_run_at. {pick} is one of the two selects below.
CLAIM_SQL = """
UPDATE task SET status = :new_status, claimed_at = :now, started_at = :started_at,
       heartbeat_at = :now, lease_token = :token, attempt = attempt + 1,
       worker_id = :worker_id, lease_until = :lease_until, next_run_at = NULL
WHERE id = ({pick})
RETURNING *
"""

# PostgreSQL: one statement, the row picked and locked (a row another transaction holds is
# passed over, never waited for) and updated. {resources} narrows it to some classes.
PG_CLAIM_SQL = """
WITH picked AS (
    SELECT id FROM task
    WHERE status = 'pending' AND unmet_deps = 0 AND NOT is_paused AND next_run_at IS NULL
    {resources}
    ORDER BY priority DESC, created_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE task SET status = :new_status, claimed_at = :now, started_at = :started_at,
       heartbeat_at = :now, lease_token = :token, attempt = attempt + 1,
       worker_id = :worker_id, lease_until = :lease_until, next_run_at = NULL
FROM picked WHERE task.id = picked.id
RETURNING task.*
"""

# Any class: the head of ix_task_claimable.
PICK_ANY_SQL = """
    SELECT id FROM task INDEXED BY ix_task_claimable
    WHERE status = 'pending' AND unmet_deps = 0 AND NOT is_paused AND next_run_at IS NULL
    ORDER BY priority DESC, created_at
    LIMIT 1
"""

# The head of one class in ix_task_claimable_by_resource: one index seek, whatever the other
# classes have queued. A claim for several classes takes the best of their heads.
PICK_CLASS_SQL = """
        SELECT id, priority, created_at FROM task INDEXED BY ix_task_claimable_by_resource
        WHERE status = 'pending' AND unmet_deps = 0 AND NOT is_paused AND next_run_at IS NULL
          AND resource = :r{i}
        ORDER BY priority DESC, created_at
        LIMIT 1
"""

# Retries whose timer has run out become claimable (they enter the claimable indexes). Two
# seeks in the partial index ix_task_retry_due when nothing is due; 'pending' is literal so
# that SQLite sees the implication. A timer further ahead than any backoff sets one
# (:horizon) was set before the wall clock went back: it has run out too.
PROMOTE_DUE_SQL = (
    "UPDATE task INDEXED BY ix_task_retry_due SET next_run_at = NULL "
    "WHERE status = 'pending' AND next_run_at IS NOT NULL "
    "AND (next_run_at <= :now OR next_run_at > :horizon)"
)

COMPLETE_SQL = """
UPDATE task SET status = 'completed', result = :result, progress = 100.0,
       completed_at = :now, lease_token = NULL, lease_until = NULL, error = NULL,
       error_type = NULL
WHERE id = :task_id AND lease_token = :token AND status IN ('claimed', 'running')
RETURNING workflow_run_id, started_at
"""

RELEASE_DEPENDENTS_SQL = """
UPDATE task SET unmet_deps = unmet_deps - 1
WHERE id IN (SELECT task_id FROM task_dependency WHERE depends_on_id = :task_id)
"""

INSERT_EVENT_SQL = (
    "INSERT INTO task_event (task_id, workflow_run_id, at, kind, detail) "
    "VALUES (:task_id, :workflow_run_id, :at, :kind, :detail)"
)

# Whether a retry came due that no claim has promoted yet.
DUE_SQL = (
    "SELECT 1 FROM task INDEXED BY ix_task_retry_due "
    "WHERE status = 'pending' AND next_run_at IS NOT NULL "
    "AND (next_run_at <= :now OR next_run_at > :horizon)"
)

# Literal 'pending' so that SQLite answers from the partial index ix_task_retry_due. A retry
# that came due is in it until a claim promotes it: its time may be past.
NEXT_RETRY_SQL = (
    "SELECT min(next_run_at) FROM task INDEXED BY ix_task_retry_due "
    "WHERE status = 'pending' AND next_run_at IS NOT NULL"
)

SET_RUN_STATUS_SQL = (
    "UPDATE workflow_run SET status = :status, completed_at = :completed_at WHERE id = :run_id"
)
#: A run that completes or fails leaves a notice for the desktop app (one per run: a notice
#: not yet shown of an earlier end of the same run, before a retry, is replaced).
DROP_UNSHOWN_NOTICE_SQL = "DELETE FROM notice WHERE workflow_run_id = :run_id AND shown_at IS NULL"
ADD_NOTICE_SQL = (
    "INSERT INTO notice (kind, workflow_run_id, created_at, home_id) VALUES "
    "(:kind, :run_id, :now, (SELECT home_id FROM workflow_run WHERE id = :of_run))"
)

_JSON_COLUMNS = frozenset({"depends_on", "payload", "result", "checkpoint", "status_parts"})
_BOOL_COLUMNS = frozenset({"is_paused", "is_pausable"})
_claim_sql: dict[tuple[int | None, bool, int], str] = {}
_delta_sql: dict[tuple[str, ...], str] = {}


#: A driver cursor: sqlite3's, or psycopg's behind :class:`PgCursor`.
Cursor = Any


def cursor(conn: sa.Connection) -> Cursor:
    """A cursor on the driver connection of ``conn``, inside its transaction."""
    driver = conn.connection.driver_connection
    if isinstance(driver, sqlite3.Connection):
        return driver.cursor()
    return PgCursor(driver.cursor())  # type: ignore[union-attr]


def claim_sql(classes: int | None, dialect: str = "sqlite", types: int = 0) -> str:
    """The claim for any class (``None``), or for ``classes`` resource classes bound as
    ``:r0``, ``:r1``…: the best of the classes' heads, priority first, then the oldest.

    On PostgreSQL, ``types`` > 0 narrows it to that many task types bound as ``:ty0``… each
    with the newest payload version it may have, ``:tv0``…: what this build can run."""
    postgres = dialect == POSTGRESQL
    sql = _claim_sql.get((classes, postgres, types))
    if sql is None and postgres:
        resources = ""
        if classes is not None:
            resources = f"AND resource IN ({', '.join(f':r{i}' for i in range(classes))})"
        if types:
            version = "coalesce((payload ->> 'schema_version')::numeric, 1)"
            known = " OR ".join(f"(type = :ty{i} AND {version} <= :tv{i})" for i in range(types))
            resources += f" AND ({known})"
        sql = _claim_sql[classes, postgres, types] = PG_CLAIM_SQL.format(resources=resources)
    if sql is None:
        pick = PICK_ANY_SQL
        if classes is not None:
            heads = " UNION ALL ".join(
                f"SELECT * FROM ({PICK_CLASS_SQL.format(i=i)})" for i in range(classes)
            )
            pick = f"SELECT id FROM ({heads}) ORDER BY priority DESC, created_at LIMIT 1"
        sql = _claim_sql[classes, postgres, types] = CLAIM_SQL.format(pick=pick)
    return sql


#: What a progress report may set (``progress_values``), in the order its statement names them.
PROGRESS_COLUMNS = ("progress", "status_text", "status_parts", "is_pausable", "checkpoint")
_progress_sql: dict[tuple[str, ...], str] = {}


def write_progress(
    cur: Cursor, task_id: str, lease_token: str, values: Mapping[str, Any], now: float
) -> None:
    """Set a running attempt's progress columns (``values``, from ``progress_values``),
    fenced by its lease; a lost lease changes nothing."""
    columns = tuple(c for c in PROGRESS_COLUMNS if c in values)
    sql = _progress_sql.get(columns)
    if sql is None:
        sets = "".join(f"{c} = :{c}, " for c in columns)
        if "checkpoint" in columns:  # each checkpoint saved counts (recovery compares counts)
            sets += "checkpoint_seq = checkpoint_seq + 1, "
        sql = _progress_sql[columns] = (
            f"UPDATE task SET {sets}heartbeat_at = :now "
            "WHERE id = :task_id AND lease_token = :token AND status IN ('claimed', 'running')"
        )
    params: dict[str, Any] = {"task_id": task_id, "token": lease_token, "now": now}
    for c in columns:
        value = values[c]
        if c in ("checkpoint", "status_parts"):
            value = to_json(value, cur)
        elif c == "is_pausable":
            value = bool(value)
        params[c] = value
    cur.execute(sql, params)


def task_from_row(cur: Cursor, row: tuple[Any, ...]) -> TaskRecord:
    data: dict[str, Any] = {}
    decoded = isinstance(cur, PgCursor)  # psycopg decodes JSONB itself
    for (name, *_), value in zip(cur.description, row, strict=True):
        if name in _JSON_COLUMNS:
            value = json.loads(value) if value is not None and not decoded else value
        elif name in _BOOL_COLUMNS:
            value = bool(value)
        elif name == "status":
            value = TaskStatus(value)
        data[name] = value
    return TaskRecord.from_row(data)


def to_json(value: Any, cur: Any = None) -> str | None:
    """``value`` as JSON text for ``cur``'s database (PostgreSQL's jsonb: see workers.jsonb)."""
    if value is None:
        return None
    return jsonb.dumps(value) if isinstance(cur, PgCursor) else json.dumps(value)


def insert_events(cur: Cursor, events: Iterable[Mapping[str, Any]]) -> None:
    cur.executemany(
        INSERT_EVENT_SQL,
        [{**e, "detail": to_json(e.get("detail"), cur)} for e in events],
    )


def apply_run_delta(
    cur: Cursor, run_id: str, delta: Mapping[TaskStatus, int]
) -> tuple[RunStatus, dict[TaskStatus, int]] | None:
    """Add ``delta`` to the run's counters; return its stored status and new counts."""
    changes = sorted((COUNT_COLUMNS[s], n) for s, n in delta.items() if n)
    if not changes:
        return None
    columns = tuple(c for c, _ in changes)
    sql = _delta_sql.get(columns)
    if sql is None:
        sets = ", ".join(f"{c} = {c} + :d_{c}" for c in columns)
        returning = ", ".join(COUNT_COLUMNS.values())
        sql = _delta_sql[columns] = (
            f"UPDATE workflow_run SET {sets} WHERE id = :run_id RETURNING status, {returning}"
        )
    params: dict[str, Any] = {f"d_{c}": n for c, n in changes}
    params["run_id"] = run_id
    row = cur.execute(sql, params).fetchone()
    if row is None:
        return None
    counts = dict(zip(COUNT_COLUMNS, row[1:], strict=True))
    return RunStatus(row[0]), counts
