"""Creating runs and the user's control: cancel, pause, resume, retry."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from python_endpoints.text import clean_text
from workers import states
from workers.errors import InvalidState, NotFound
from workers.models import dep_t, run_t, task_t
from workers.records import (
    CancelOutcome,
    CreatedRun,
)
from workers.spec import PreparedRun
from workers.states import ErrorType, RunStatus, TaskStatus
from workers.store._base import HELD, S, StoreBase, _event_row, downstream, upstream


class ControlMixin(StoreBase):
    # --- creating runs --------------------------------------------------------------------

    async def create_run(self, prepared: PreparedRun) -> CreatedRun:
        """Insert a run and all its tasks in one transaction.

        A task whose ``idempotency_key`` is held by an active task makes the whole submission
        a duplicate: nothing is inserted, and the existing task's run is returned with
        ``deduplicated=True``. The partial unique index is what enforces it.
        """
        (created,) = await self.create_runs([prepared])
        return created

    async def create_runs(self, prepared: Sequence[PreparedRun]) -> list[CreatedRun]:
        """Several submissions in one transaction — one commit, so a folder of a thousand files
        pays one sync of the database, not a thousand —, each as :meth:`create_run` makes it
        (a duplicate of an active task, or of one submitted earlier in the same call, gives
        that task's run with ``deduplicated=True``); in their order."""
        if not prepared:
            return []
        return await self._write(self._create_runs_tx, list(prepared))

    def _create_runs_tx(self, conn: sa.Connection, prepared: list[PreparedRun]) -> list[CreatedRun]:
        return [self._create_run_in(conn, p) for p in prepared]

    def _create_run_in(self, conn: sa.Connection, prepared: PreparedRun) -> CreatedRun:
        """One submission within a larger transaction: its own savepoint, so that a duplicate
        undoes only its own inserts."""
        for _ in range(5):
            try:
                with conn.begin_nested():
                    return self._create_run_tx(conn, prepared)
            except sa.exc.IntegrityError as exc:
                if "idempotency_key" not in str(exc.orig):
                    raise
            found = self._find_active_by_keys(conn, prepared)
            if found is not None:
                return found
            # The colliding task (another program's) finished since: insert again.
        raise InvalidState("could not submit: idempotency keys kept colliding; try again")

    def _create_run_tx(self, conn: sa.Connection, prepared: PreparedRun) -> CreatedRun:
        now = self.now()
        run_id = str(uuid.uuid4())
        ids = {t.key: str(uuid.uuid4()) for t in prepared.tasks}
        n = len(prepared.tasks)
        conn.execute(
            sa.insert(run_t),
            {
                "id": run_id,
                "material_id": prepared.material_id,
                "template": prepared.template,
                "status": RunStatus.COMPLETED if n == 0 else RunStatus.PENDING,
                "total_tasks": n,
                "pending_tasks": n,
                "created_at": now,
                "completed_at": now if n == 0 else None,
                "home_id": self.home_id,
            },
        )
        self._insert_tasks(conn, run_id, prepared.tasks, ids, completed=frozenset(), now=now)
        return CreatedRun(run_id, ids, deduplicated=False)

    def _find_active_by_keys(self, conn: sa.Connection, prepared: PreparedRun) -> CreatedRun | None:
        keys = [t.idempotency_key for t in prepared.tasks if t.idempotency_key]
        row = conn.execute(
            sa.select(task_t.c.workflow_run_id)
            .where(task_t.c.idempotency_key.in_(keys), task_t.c.status.in_(states.ACTIVE))
            .limit(1)
        ).first()
        if row is None or row.workflow_run_id is None:
            return None
        run_id = row.workflow_run_id
        ids = dict(
            conn.execute(
                sa.select(task_t.c.key, task_t.c.id).where(task_t.c.workflow_run_id == run_id)
            ).all()
        )
        return CreatedRun(run_id, {k: v for k, v in ids.items() if k}, deduplicated=True)

    # --- user control ---------------------------------------------------------------------

    async def cancel(self, task_id: str) -> CancelOutcome:
        """Cancel a task that has not finished, and everything downstream of it.

        A pending or claimed task is cancelled outright. A running one is marked cancelled at
        once too — its lease is revoked, so nothing its worker writes later counts — and is
        listed in ``was_running`` so that the engine holding it stops the executor.
        """
        return await self._write(self._cancel_tx, [task_id], task_id, None)

    async def cancel_run(self, run_id: str) -> CancelOutcome:
        return await self._write(self._cancel_run_tx, run_id)

    def _cancel_run_tx(self, conn: sa.Connection, run_id: str) -> CancelOutcome:
        ids = self._unfinished_ids(conn, run_id)
        return self._cancel_tx(conn, ids, None, run_id)

    def _require_unfinished(self, conn: sa.Connection, task_id: str) -> None:
        status = conn.execute(
            sa.select(task_t.c.status).where(task_t.c.id == task_id)
        ).scalar_one_or_none()
        if status is None:
            raise NotFound(f"no task {task_id}")
        if states.is_terminal(status):
            raise InvalidState(f"task {task_id} is already {status.value}")

    def _unfinished_ids(self, conn: sa.Connection, run_id: str) -> list[str]:
        """The ids of a run's pending, claimed and running tasks (NotFound without the run)."""
        self._require_run(conn, run_id)
        return list(
            conn.execute(
                sa.select(task_t.c.id).where(
                    task_t.c.workflow_run_id == run_id, task_t.c.status.in_(states.ACTIVE)
                )
            ).scalars()
        )

    def _cancel_tx(
        self, conn: sa.Connection, ids: list[str], single: str | None, run_id: str | None
    ) -> CancelOutcome:
        now = self.now()
        if single is not None:
            self._require_unfinished(conn, single)
        before = dict(
            conn.execute(
                sa.select(task_t.c.id, task_t.c.status).where(
                    task_t.c.id.in_(ids), task_t.c.status.in_(states.ACTIVE)
                )
            ).all()
        )
        if not before:
            return CancelOutcome((), ())
        rows = conn.execute(
            sa.update(task_t)
            .where(task_t.c.id.in_(list(before)), task_t.c.status.in_(states.ACTIVE))
            .values(
                status=S.CANCELLED,
                error="cancelled by the user",
                error_type=ErrorType.CANCELLED,
                completed_at=now,
                lease_token=None,
                lease_until=None,
            )
            .returning(task_t.c.id, task_t.c.workflow_run_id)
        ).all()
        events = [_event_row(r.id, r.workflow_run_id, "cancelled", now, None) for r in rows]
        deltas: dict[str, Counter[TaskStatus]] = {}
        for r in rows:
            if r.workflow_run_id:
                d = deltas.setdefault(r.workflow_run_id, Counter())
                d[before[r.id]] -= 1
                d[S.CANCELLED] += 1
        cascade_delta: Counter[TaskStatus] = Counter()
        cascaded = self._cascade(conn, [r.id for r in rows], now, events, cascade_delta)
        if cascaded:
            cascade_run = conn.execute(
                sa.select(task_t.c.workflow_run_id).where(task_t.c.id == cascaded[0])
            ).scalar_one()
            if cascade_run:
                deltas.setdefault(cascade_run, Counter()).update(cascade_delta)
        for rid, d in deltas.items():
            self._apply_run_delta(conn, rid, d, now)
        self._insert_events(conn, events)
        running = tuple(r.id for r in rows if before[r.id] in HELD)
        return CancelOutcome(tuple(r.id for r in rows) + tuple(cascaded), running)

    async def set_paused(self, task_id: str, paused: bool, reason: str | None = None) -> bool:
        """Hold (or release) a task. A held pending task is never claimed; a held running task
        is for its engine to pause. False when it was already so."""
        return await self._write(self._set_paused_tx, [task_id], task_id, paused, reason)

    async def set_run_paused(self, run_id: str, paused: bool) -> list[str]:
        """Hold (or release) every unfinished task of a run; returns the ids changed."""
        return await self._write(self._set_run_paused_tx, run_id, paused)

    def _set_run_paused_tx(self, conn: sa.Connection, run_id: str, paused: bool) -> list[str]:
        ids = self._unfinished_ids(conn, run_id)
        return self._pause_ids(conn, ids, paused, None)

    def _set_paused_tx(
        self,
        conn: sa.Connection,
        ids: list[str],
        single: str,
        paused: bool,
        reason: str | None,
    ) -> bool:
        self._require_unfinished(conn, single)
        return bool(self._pause_ids(conn, ids, paused, reason))

    def _pause_ids(
        self, conn: sa.Connection, ids: list[str], paused: bool, reason: str | None
    ) -> list[str]:
        now = self.now()
        values: dict[str, Any] = {"is_paused": paused}
        if reason:
            reason = clean_text(reason)[:500]
        if paused and reason:
            values["status_text"] = f"paused: {reason}"  # the job asked: it is stopping itself
        elif paused:
            # A held task is not claimed: paused at once. One that runs goes on until its
            # attempt stops for the pause: its engine then says "paused".
            values["status_text"] = sa.case(
                (task_t.c.status.in_(HELD), states.PAUSING), else_=sa.literal("paused")
            )
        else:
            values["status_text"] = None
        rows = conn.execute(
            sa.update(task_t)
            .where(
                task_t.c.id.in_(ids),
                task_t.c.status.in_(states.ACTIVE),
                task_t.c.is_paused.is_(not paused),
            )
            .values(**values)
            .returning(task_t.c.id, task_t.c.workflow_run_id)
        ).all()
        kind = "paused" if paused else "resumed"
        detail = {"reason": reason} if reason else None
        self._insert_events(
            conn, [_event_row(r.id, r.workflow_run_id, kind, now, detail) for r in rows]
        )
        return [r.id for r in rows]

    async def retry(self, task_id: str) -> list[str]:
        """Give a failed or cancelled task a new start. What it needs comes back with it: the
        failed or cancelled tasks upstream of it (else it would wait for ever), and the tasks
        downstream of any of these that were cancelled because of them. Returns the ids made
        pending again."""
        return await self._write(self._retry_tx, task_id)

    async def retry_run(self, run_id: str) -> list[str]:
        return await self._write(self._retry_run_tx, run_id)

    def _retry_run_tx(self, conn: sa.Connection, run_id: str) -> list[str]:
        self._require_run(conn, run_id)
        roots = list(
            conn.execute(
                sa.select(task_t.c.id).where(
                    task_t.c.workflow_run_id == run_id,
                    task_t.c.status.in_((S.FAILED, S.CANCELLED)),
                    sa.or_(
                        task_t.c.error_type.is_(None),
                        task_t.c.error_type != ErrorType.DEPENDENCY_FAILED,
                    ),
                )
            ).scalars()
        )
        if not roots:
            raise InvalidState(f"run {run_id} has no failed or cancelled task to retry")
        return self._revive(conn, roots)

    def _retry_tx(self, conn: sa.Connection, task_id: str) -> list[str]:
        status = conn.execute(
            sa.select(task_t.c.status).where(task_t.c.id == task_id)
        ).scalar_one_or_none()
        if status is None:
            raise NotFound(f"no task {task_id}")
        if status not in (S.FAILED, S.CANCELLED):
            raise InvalidState(
                f"task {task_id} is {status.value}; only failed or cancelled tasks can be retried"
            )
        return self._revive(conn, [task_id])

    def _revivable(self, conn: sa.Connection, roots: list[str], dependents: list[str]) -> list[str]:
        """The ``dependents`` that can run once ``roots`` are revived: a task that also waits
        for another failed or cancelled task, one not being revived, stays cancelled (made
        pending, it would wait for ever). Its own dependents then stay too."""
        if not dependents:
            return dependents
        dead = sa.select(task_t.c.id).where(task_t.c.status.in_((S.FAILED, S.CANCELLED)))
        blockers: dict[str, set[str]] = {}
        for task_id, dep_id in conn.execute(
            sa.select(dep_t.c.task_id, dep_t.c.depends_on_id).where(
                dep_t.c.task_id.in_(dependents), dep_t.c.depends_on_id.in_(dead)
            )
        ):
            blockers.setdefault(task_id, set()).add(dep_id)
        alive = set(roots) | set(dependents)
        changed = True
        while changed:
            changed = False
            for task_id in list(alive):
                if task_id in blockers and not blockers[task_id] <= alive:
                    alive.discard(task_id)
                    changed = True
        return [d for d in dependents if d in alive]

    def _revive(self, conn: sa.Connection, roots: list[str]) -> list[str]:
        now = self.now()
        up = upstream(roots)
        roots = roots + [
            i
            for i in conn.execute(
                sa.select(task_t.c.id).where(
                    task_t.c.id.in_(sa.select(up.c.task_id)),
                    task_t.c.status.in_((S.FAILED, S.CANCELLED)),
                )
            ).scalars()
            if i not in roots
        ]
        down = downstream(roots)
        dependents = list(
            conn.execute(
                sa.select(task_t.c.id).where(
                    task_t.c.id.in_(sa.select(down.c.task_id)),
                    task_t.c.status == S.CANCELLED,
                    task_t.c.error_type == ErrorType.DEPENDENCY_FAILED,
                )
            ).scalars()
        )
        dependents = self._revivable(conn, roots, dependents)
        ids = list(dict.fromkeys(roots + dependents))
        before = conn.execute(
            sa.select(task_t.c.id, task_t.c.status, task_t.c.workflow_run_id).where(
                task_t.c.id.in_(ids), task_t.c.status.in_((S.FAILED, S.CANCELLED))
            )
        ).all()
        ids = [r.id for r in before]
        conn.execute(
            sa.update(task_t)
            .where(task_t.c.id.in_(ids))
            .values(
                status=S.PENDING,
                retry_count=0,
                interruptions=0,
                charged_interruptions=0,
                checkpoint_seq_at_interruption=None,
                error=None,
                error_type=None,
                result=None,
                completed_at=None,
                next_run_at=None,
                progress=0.0,
                status_text=None,
                is_paused=False,
            )
        )
        self._recount_unmet(conn, ids)
        self._mark_log_retried(conn, ids)
        deltas: dict[str, Counter[TaskStatus]] = {}
        for r in before:
            if r.workflow_run_id:
                d = deltas.setdefault(r.workflow_run_id, Counter())
                d[r.status] -= 1
                d[S.PENDING] += 1
        for rid, d in deltas.items():
            self._apply_run_delta(conn, rid, d, now)
        self._insert_events(
            conn, [_event_row(r.id, r.workflow_run_id, "retried", now, None) for r in before]
        )
        return ids
