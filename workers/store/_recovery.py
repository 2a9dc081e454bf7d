"""Start-up recovery's SQL, and the restart log.

Set-based: a handful of statements whatever the number of interrupted tasks. The log rows are
written first, from the tasks as they were found; then each kind of task is moved on in one
statement; then the runs' counters are recounted from their tasks and their statuses derived.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import Any

import sqlalchemy as sa

from workers import states
from workers.errors import NotFound
from workers.records import RecoveryReport, RestartLogEntry
from workers.states import RunStatus, TaskStatus
from workers.store import _hot
from workers.store._base import (
    StoreBase,
    log_t,
    run_t,
    task_t,
)

DISPOSITIONS = ("pending_review", "dismissed", "retried")


class RecoveryMixin(StoreBase):
    async def recover(self, session_id: str, resumable_types: Collection[str]) -> RecoveryReport:
        """Take over what a previous session left unfinished (DESIGN §4).

        claimed → pending; running → pending with its checkpoint when its type is resumable and
        it has retries left (a recovery counts as a retry), else failed ``INTERRUPTED`` (and its
        downstream cancelled); a paused task stays paused; tasks without a run fail
        ``ORPHANED``. Only held tasks and orphans are touched: the caller guarantees that no
        other engine is running on this database (the data directory's lock).
        """
        return await self._write(self._recover_tx, session_id, list(resumable_types))

    def _recover_tx(
        self, conn: sa.Connection, session_id: str, resumable: list[str]
    ) -> RecoveryReport:
        now = self.now()
        types = ", ".join(f":t{i}" for i in range(len(resumable))) or "NULL"
        params: dict[str, Any] = {f"t{i}": name for i, name in enumerate(resumable)}
        params.update({"session": session_id, "now": now})
        # Held tasks are selected with the predicate of the partial index ix_task_held, word
        # for word, so that SQLite scans that index and not the whole table (which also holds
        # every finished task); orphans through ix_task_workflow_run_id.
        action = f"""CASE
            WHEN workflow_run_id IS NULL THEN 'failed'
            WHEN status = 'claimed' THEN 'requeued'
            WHEN is_paused THEN 'kept_paused'
            WHEN type IN ({types}) AND retry_count < max_retries THEN 'requeued'
            ELSE 'failed' END"""
        where = (
            "(status IN ('claimed', 'running') OR (workflow_run_id IS NULL "
            "AND status IN ('pending', 'claimed', 'running')))"
        )
        conn.execute(
            sa.text(
                f"""INSERT INTO restart_task_log (session_id, task_id, task_type,
                    workflow_run_id, material_id, status_at_restart, progress, action,
                    disposition, detail, created_at, updated_at)
                SELECT :session, id, type, workflow_run_id, material_id, status, progress,
                    {action}, 'pending_review', status_text, :now, :now
                FROM task WHERE {where}"""
            ),
            params,
        )
        counts: dict[str, int] = dict(
            conn.execute(
                sa.text(
                    "SELECT action, count(*) FROM restart_task_log WHERE session_id = :session "
                    "GROUP BY action"
                ),
                {"session": session_id},
            ).all()
        )
        if not counts:
            return RecoveryReport(session_id, 0, 0, 0, 0, ())
        orphans = list(
            conn.execute(
                sa.text(
                    "UPDATE task SET status = 'failed', error_type = 'ORPHANED', "
                    "error = 'the task''s workflow run no longer exists', completed_at = :now, "
                    "lease_token = NULL, lease_until = NULL "
                    "WHERE workflow_run_id IS NULL AND status IN ('pending', 'claimed', 'running') "
                    "RETURNING id"
                ),
                {"now": now},
            ).scalars()
        )
        # Every held task in one statement: requeued (with its checkpoint), kept paused, or
        # failed INTERRUPTED.
        conn.execute(
            sa.text(
                f"""UPDATE task SET
                        status = CASE WHEN {action} = 'failed' THEN 'failed' ELSE 'pending' END,
                        retry_count = CASE WHEN status = 'running' AND NOT is_paused
                            AND {action} = 'requeued' THEN retry_count + 1
                            ELSE retry_count END,
                        error = CASE WHEN {action} = 'failed'
                            THEN 'interrupted: Fredica stopped while this task ran'
                            ELSE error END,
                        error_type = CASE WHEN {action} = 'failed' THEN 'INTERRUPTED'
                            ELSE error_type END,
                        completed_at = CASE WHEN {action} = 'failed' THEN :now
                            ELSE completed_at END,
                        status_text = CASE {action}
                            WHEN 'kept_paused' THEN 'paused (kept across a restart)'
                            WHEN 'requeued' THEN 'resuming after a restart'
                            ELSE status_text END,
                        lease_token = NULL, lease_until = NULL, worker_id = NULL
                    WHERE status IN ('claimed', 'running')"""
            ),
            params,
        )
        failed_ids = list(
            conn.execute(
                sa.text(
                    "SELECT task_id FROM restart_task_log WHERE session_id = :session "
                    "AND action = 'failed' AND workflow_run_id IS NOT NULL"
                ),
                {"session": session_id},
            ).scalars()
        )
        events: list[dict[str, Any]] = []
        if failed_ids:
            self._cascade(conn, failed_ids, now, events, Counter())
        self._insert_events(conn, events)
        runs = set(
            conn.execute(
                sa.text(
                    "SELECT DISTINCT workflow_run_id FROM restart_task_log "
                    "WHERE session_id = :session AND workflow_run_id IS NOT NULL"
                ),
                {"session": session_id},
            ).scalars()
        )
        self._recount_runs(conn, runs, now)
        return RecoveryReport(
            session_id=session_id,
            requeued=counts.get("requeued", 0),
            kept_paused=counts.get("kept_paused", 0),
            failed=len(failed_ids),
            orphaned=len(orphans),
            failed_ids=tuple(failed_ids),
        )

    def _recount_runs(self, conn: sa.Connection, run_ids: Collection[str], now: float) -> None:
        """Set each run's counters from its tasks, then derive its status."""
        if not run_ids:
            return
        ids = list(run_ids)
        counts: dict[str, Counter[TaskStatus]] = {r: Counter() for r in ids}
        for row in conn.execute(
            sa.select(task_t.c.workflow_run_id, task_t.c.status, sa.func.count().label("n"))
            .where(task_t.c.workflow_run_id.in_(ids))
            .group_by(task_t.c.workflow_run_id, task_t.c.status)
        ):
            counts[row.workflow_run_id][TaskStatus(row.status)] = row.n
        current = dict(
            conn.execute(sa.select(run_t.c.id, run_t.c.status).where(run_t.c.id.in_(ids))).all()
        )
        for run_id, c in counts.items():
            values: dict[str, Any] = {col: c.get(s, 0) for s, col in _hot.COUNT_COLUMNS.items()}
            values["total_tasks"] = sum(c.values())
            conn.execute(sa.update(run_t).where(run_t.c.id == run_id).values(**values))
            status = states.derive_run_status(c)
            if status != current.get(run_id):
                self._set_run_status(conn, run_id, RunStatus(status), now)

    # --- the restart log ------------------------------------------------------------------

    async def restart_log(self, *, only_pending: bool = False) -> list[RestartLogEntry]:
        return await self._read(self._restart_log_tx, only_pending)

    def _restart_log_tx(self, conn: sa.Connection, only_pending: bool) -> list[RestartLogEntry]:
        q = sa.select(log_t).order_by(log_t.c.id)
        if only_pending:
            q = q.where(log_t.c.disposition == "pending_review")
        return [RestartLogEntry.from_row(r) for r in conn.execute(q).mappings()]

    async def set_disposition(self, entry_id: int | None, disposition: str) -> int:
        """Mark one entry (or, with ``None``, every pending one) dismissed or retried."""
        if disposition not in DISPOSITIONS:
            raise ValueError(f"disposition must be one of {', '.join(DISPOSITIONS)}")
        return await self._write(self._disposition_tx, entry_id, disposition)

    def _disposition_tx(self, conn: sa.Connection, entry_id: int | None, disposition: str) -> int:
        q = sa.update(log_t).values(disposition=disposition, updated_at=self.now())
        if entry_id is None:
            q = q.where(log_t.c.disposition == "pending_review")
        else:
            q = q.where(log_t.c.id == entry_id)
        changed = conn.execute(q).rowcount
        if entry_id is not None and changed == 0:
            raise NotFound(f"no restart-log entry {entry_id}")
        return int(changed)
