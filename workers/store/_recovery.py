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
from workers.states import ErrorType, RunStatus, TaskStatus
from workers.store import _hot
from workers.store._base import (
    S,
    StoreBase,
    event_t,
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
        t = task_t
        held = t.c.status.in_((S.CLAIMED, S.RUNNING))
        orphan = sa.and_(
            t.c.status.in_(states.ACTIVE),
            sa.or_(
                t.c.workflow_run_id.is_(None),
                ~sa.exists().where(run_t.c.id == t.c.workflow_run_id),
            ),
        )
        can_resume = sa.and_(
            t.c.type.in_(resumable) if resumable else sa.false(),
            t.c.retry_count < t.c.max_retries,
        )
        action = sa.case(
            (orphan, sa.literal("failed")),
            (t.c.status == S.CLAIMED, sa.literal("requeued")),
            (t.c.is_paused, sa.literal("kept_paused")),
            (can_resume, sa.literal("requeued")),
            else_=sa.literal("failed"),
        )
        counts_before = Counter(
            {
                row.action: row.n
                for row in conn.execute(
                    sa.select(action.label("action"), sa.func.count().label("n"))
                    .where(sa.or_(held, orphan))
                    .group_by(action)
                )
            }
        )
        if not counts_before:
            return RecoveryReport(session_id, 0, 0, 0, 0, ())
        conn.execute(
            sa.insert(log_t).from_select(
                [
                    "session_id",
                    "task_id",
                    "task_type",
                    "workflow_run_id",
                    "material_id",
                    "status_at_restart",
                    "progress",
                    "action",
                    "disposition",
                    "detail",
                    "created_at",
                    "updated_at",
                ],
                sa.select(
                    sa.literal(session_id),
                    t.c.id,
                    t.c.type,
                    t.c.workflow_run_id,
                    t.c.material_id,
                    t.c.status,
                    t.c.progress,
                    action,
                    sa.literal("pending_review"),
                    t.c.status_text,
                    sa.literal(now),
                    sa.literal(now),
                ).where(sa.or_(held, orphan)),
            )
        )
        runs = set(
            conn.execute(
                sa.select(t.c.workflow_run_id)
                .where(held, t.c.workflow_run_id.is_not(None))
                .distinct()
            ).scalars()
        )
        orphans = list(
            conn.execute(
                sa.update(t)
                .where(orphan)
                .values(
                    status=S.FAILED,
                    error="the task's workflow run no longer exists",
                    error_type=ErrorType.ORPHANED,
                    completed_at=now,
                    lease_token=None,
                    lease_until=None,
                )
                .returning(t.c.id)
            ).scalars()
        )
        release = {"lease_token": None, "lease_until": None, "worker_id": None}
        conn.execute(
            sa.update(t)
            .where(t.c.status == S.CLAIMED)
            .values(status=S.PENDING, status_text="requeued after a restart", **release)
        )
        conn.execute(
            sa.update(t)
            .where(t.c.status == S.RUNNING, t.c.is_paused)
            .values(status=S.PENDING, status_text="paused (kept across a restart)", **release)
        )
        conn.execute(
            sa.update(t)
            .where(t.c.status == S.RUNNING, can_resume)
            .values(
                status=S.PENDING,
                retry_count=t.c.retry_count + 1,
                status_text="resuming after a restart",
                **release,
            )
        )
        failed = list(
            conn.execute(
                sa.update(t)
                .where(t.c.status == S.RUNNING)
                .values(
                    status=S.FAILED,
                    error="interrupted: Fredica stopped while this task ran",
                    error_type=ErrorType.INTERRUPTED,
                    completed_at=now,
                    **release,
                )
                .returning(t.c.id)
            ).scalars()
        )
        events: list[dict[str, Any]] = []
        if failed:
            self._cascade(conn, failed, now, events, Counter())
        conn.execute(
            sa.insert(event_t).from_select(
                ["task_id", "workflow_run_id", "at", "kind"],
                sa.select(
                    log_t.c.task_id,
                    log_t.c.workflow_run_id,
                    sa.literal(now),
                    sa.literal("recovered"),
                ).where(log_t.c.session_id == session_id),
            )
        )
        self._insert_events(conn, events)
        self._recount_runs(conn, runs, now)
        interrupted = tuple(failed)
        return RecoveryReport(
            session_id=session_id,
            requeued=counts_before.get("requeued", 0),
            kept_paused=counts_before.get("kept_paused", 0),
            failed=len(failed),
            orphaned=len(orphans),
            failed_ids=interrupted,
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
