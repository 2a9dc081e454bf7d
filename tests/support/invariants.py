"""What must hold of the queue's tables whatever happened to them: read straight from the file.

- every run's counters equal the statuses of its tasks;
- every task's ``unmet_deps`` equals its dependencies that have not completed;
- nothing is stuck: a pending task has no failed or cancelled dependency (it is then claimable
  now, waits for a retry timer, waits for a dependency that can still complete, or is held),
  and no run is pending or running without an unfinished task.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.rawdb import RawDB

RUN_COUNTERS = """
SELECT r.id FROM workflow_run r
LEFT JOIN (
    SELECT workflow_run_id AS rid, COUNT(*) AS total,
           SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS p,
           SUM(CASE WHEN status = 'claimed' THEN 1 ELSE 0 END) AS c,
           SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END) AS r,
           SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END) AS d,
           SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS f,
           SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) AS x
    FROM task GROUP BY workflow_run_id
) t ON t.rid = r.id
WHERE r.total_tasks != COALESCE(t.total, 0) OR r.pending_tasks != COALESCE(t.p, 0)
   OR r.claimed_tasks != COALESCE(t.c, 0) OR r.running_tasks != COALESCE(t.r, 0)
   OR r.done_tasks != COALESCE(t.d, 0) OR r.failed_tasks != COALESCE(t.f, 0)
   OR r.cancelled_tasks != COALESCE(t.x, 0)
"""

UNMET = """
SELECT * FROM (SELECT t.id, t.unmet_deps, (
    SELECT count(*) FROM task_dependency d JOIN task p ON p.id = d.depends_on_id
    WHERE d.task_id = t.id AND p.status != 'completed') AS actual
FROM task t) AS c WHERE c.unmet_deps != c.actual
"""

STUCK_TASKS = """
SELECT t.id, p.id, p.status FROM task t
JOIN task_dependency d ON d.task_id = t.id
JOIN task p ON p.id = d.depends_on_id
WHERE t.status = 'pending' AND p.status IN ('failed', 'cancelled')
"""

STUCK_RUNS = """
SELECT r.id, r.status FROM workflow_run r
WHERE r.status IN ('pending', 'running') AND NOT EXISTS (
    SELECT 1 FROM task t WHERE t.workflow_run_id = r.id
      AND t.status IN ('pending', 'claimed', 'running'))
"""


@contextmanager
def _connect(db: Path | RawDB) -> Iterator[Any]:
    """The SQLite file at a path, or either backend through :class:`RawDB`."""
    if isinstance(db, RawDB):
        with db.connect() as conn:
            yield conn
        return
    conn = sqlite3.connect(db)
    try:
        yield conn
    finally:
        conn.close()


def queue_problems(db_path: Path | RawDB) -> list[str]:
    """Every broken invariant, in words (empty when all hold)."""
    with _connect(db_path) as conn:
        problems = [
            f"run {r[0]}: counters disagree with its tasks" for r in conn.execute(RUN_COUNTERS)
        ]
        problems += [
            f"task {r[0]}: unmet_deps {r[1]}, actually {r[2]}" for r in conn.execute(UNMET)
        ]
        problems += [
            f"task {r[0]} is pending behind {r[2]} {r[1]}: nothing can ever claim it"
            for r in conn.execute(STUCK_TASKS)
        ]
        problems += [
            f"run {r[0]} is {r[1]} with no unfinished task" for r in conn.execute(STUCK_RUNS)
        ]
        return problems


def completed_events(db_path: Path | RawDB) -> dict[str, int]:
    """How many ``completed`` events each task has."""
    with _connect(db_path) as conn:
        return dict(
            conn.execute(
                "SELECT task_id, count(*) FROM task_event WHERE kind = 'completed' GROUP BY task_id"
            ).fetchall()
        )
