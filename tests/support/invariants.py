"""What must hold of the queue's tables whatever happened to them: read straight from the file.

- every run's counters equal the statuses of its tasks;
- every task's ``unmet_deps`` equals its dependencies that have not completed;
- nothing is stuck: a pending task has no failed or cancelled dependency (it is then claimable
  now, waits for a retry timer, waits for a dependency that can still complete, or is held),
  and no run is pending or running without an unfinished task.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

RUN_COUNTERS = """
SELECT r.id FROM workflow_run r
LEFT JOIN (
    SELECT workflow_run_id AS rid, COUNT(*) AS total,
           SUM(status = 'pending') AS p, SUM(status = 'claimed') AS c,
           SUM(status = 'running') AS r, SUM(status = 'completed') AS d,
           SUM(status = 'failed') AS f, SUM(status = 'cancelled') AS x
    FROM task GROUP BY workflow_run_id
) t ON t.rid = r.id
WHERE r.total_tasks != COALESCE(t.total, 0) OR r.pending_tasks != COALESCE(t.p, 0)
   OR r.claimed_tasks != COALESCE(t.c, 0) OR r.running_tasks != COALESCE(t.r, 0)
   OR r.done_tasks != COALESCE(t.d, 0) OR r.failed_tasks != COALESCE(t.f, 0)
   OR r.cancelled_tasks != COALESCE(t.x, 0)
"""

UNMET = """
SELECT t.id, t.unmet_deps, (
    SELECT count(*) FROM task_dependency d JOIN task p ON p.id = d.depends_on_id
    WHERE d.task_id = t.id AND p.status != 'completed') AS actual
FROM task t WHERE t.unmet_deps != actual
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


def queue_problems(db_path: Path) -> list[str]:
    """Every broken invariant, in words (empty when all hold)."""
    conn = sqlite3.connect(db_path)
    try:
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
    finally:
        conn.close()


def completed_events(db_path: Path) -> dict[str, int]:
    """How many ``completed`` events each task has."""
    conn = sqlite3.connect(db_path)
    try:
        return dict(
            conn.execute(
                "SELECT task_id, count(*) FROM task_event WHERE kind = 'completed' GROUP BY task_id"
            ).fetchall()
        )
    finally:
        conn.close()
