"""The queue's SQL: every read and write of ``workflow_run``, ``task``, ``task_dependency`` and
``task_event`` goes through :class:`TaskStore`.

Each public method is one transaction. Writes begin ``IMMEDIATE`` (see :mod:`workers.db`), and
every status change is a compare-and-set (``WHERE status IN …``); writes that finish an
attempt are also fenced by the attempt's ``lease_token``, so a stale worker changes nothing.

The API is async, but a transaction runs whole on a store thread: one thread hop per
transaction rather than one per statement (aiosqlite's model costs ~27 hops per claim+complete
cycle, measured at a third of this design's throughput; see docs/architecture.md). Writes go
through one writer thread — SQLite has one writer anyway — and reads through a small pool that
runs beside it under WAL.

A run keeps a count of its tasks in each status, updated in the same transaction as every task
change, so its status is derived in O(1) (:func:`workers.states.derive_run_status`).
"""

from __future__ import annotations

import asyncio
import functools
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import sqlalchemy as sa

from workers import states
from workers.db import READ_ONLY
from workers.errors import InvalidState, NotFound
from workers.models import Task as TaskModel
from workers.models import TaskDependency, TaskEvent, WorkflowRun
from workers.records import (
    CancelOutcome,
    ClaimedTask,
    CreatedRun,
    EventRecord,
    FailOutcome,
    HeartbeatOutcome,
    RunRecord,
    TaskRecord,
)
from workers.spec import PreparedRun, PreparedTask
from workers.states import BackoffPolicy, ErrorType, RunStatus, TaskStatus

T = TypeVar("T")

task_t = cast(sa.Table, TaskModel.__table__)
run_t = cast(sa.Table, WorkflowRun.__table__)
dep_t = cast(sa.Table, TaskDependency.__table__)
event_t = cast(sa.Table, TaskEvent.__table__)

S = TaskStatus
HELD = (S.CLAIMED, S.RUNNING)

_COUNT_COLUMN = {
    S.PENDING: "pending_tasks",
    S.CLAIMED: "claimed_tasks",
    S.RUNNING: "running_tasks",
    S.COMPLETED: "done_tasks",
    S.FAILED: "failed_tasks",
    S.CANCELLED: "cancelled_tasks",
}

# The claim. Its WHERE repeats the partial index's predicate word for word so that SQLite uses
# ix_task_claimable (a bound parameter for 'pending' would hide the implication).
_CLAIM_SQL = """
UPDATE task SET status = :new_status, claimed_at = :now, started_at = :started_at,
       heartbeat_at = :now, lease_token = :token, attempt = attempt + 1,
       worker_id = :worker_id, lease_until = :lease_until, next_run_at = NULL
WHERE id = (
    SELECT id FROM task INDEXED BY ix_task_claimable
    WHERE status = 'pending' AND unmet_deps = 0 AND NOT is_paused
      AND (next_run_at IS NULL OR next_run_at <= :now)
      {resource_filter}
    ORDER BY priority DESC, created_at
    LIMIT 1
)
RETURNING *
"""


class _Clock:
    """Wall-clock Unix seconds, strictly increasing within this process, so that tasks created
    in one transaction keep their spec order under ``ORDER BY created_at``."""

    def __init__(self, source: Callable[[], float] = time.time) -> None:
        self._source = source
        self._last = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            now = self._source()
            if now <= self._last:
                now = self._last + 1e-6
            self._last = now
            return now


class IdempotencyConflict(Exception):
    """Internal: a keyed task collided with an active one."""


class TaskStore:
    """Async access to the queue's tables on an already-migrated database."""

    def __init__(
        self,
        engine: sa.Engine,
        *,
        clock: Callable[[], float] = time.time,
        backoff: BackoffPolicy = BackoffPolicy(),  # noqa: B008 - frozen
        rng: random.Random | None = None,
        lease_seconds: float = 60.0,
    ) -> None:
        self._engine = engine
        self._read_engine = engine.execution_options(**{READ_ONLY: True})
        self.now = _Clock(clock)
        self.backoff = backoff
        self._rng = rng or random.Random()
        self.lease_seconds = lease_seconds
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="fredica-db-write")
        self._readers = ThreadPoolExecutor(2, thread_name_prefix="fredica-db-read")
        self._claim_sql: dict[tuple[str, ...] | None, sa.TextualSelect] = {}

    @property
    def engine(self) -> sa.Engine:
        return self._engine

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._shutdown)

    def _shutdown(self) -> None:
        self._writer.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self._engine.dispose()

    # --- plumbing -------------------------------------------------------------------------

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in one write transaction on the writer thread.

        The transaction runs to its end even if the awaiting task is cancelled.
        """
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer, functools.partial(self._tx, fn, *args))

    def _tx(self, fn: Callable[..., T], *args: Any) -> T:
        with self._engine.begin() as conn:
            return fn(conn, *args)

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._readers, functools.partial(self._read_tx, fn, *args)
        )

    def _read_tx(self, fn: Callable[..., T], *args: Any) -> T:
        with self._read_engine.begin() as conn:
            return fn(conn, *args)

    # --- creating runs --------------------------------------------------------------------

    async def create_run(self, prepared: PreparedRun) -> CreatedRun:
        """Insert a run and all its tasks in one transaction.

        A task whose ``idempotency_key`` is held by an active task makes the whole submission
        a duplicate: nothing is inserted, and the existing task's run is returned with
        ``deduplicated=True``. The partial unique index is what enforces it.
        """
        for _ in range(5):
            try:
                return await self._write(self._create_run_tx, prepared)
            except sa.exc.IntegrityError as exc:
                if "idempotency_key" not in str(exc.orig):
                    raise
            found = await self._read(self._find_active_by_keys, prepared)
            if found is not None:
                return found
            # The colliding task finished between the two transactions: insert again.
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
            },
        )
        self._insert_tasks(conn, run_id, prepared.tasks, ids, completed=frozenset(), now=now)
        return CreatedRun(run_id, ids, deduplicated=False)

    def _insert_tasks(
        self,
        conn: sa.Connection,
        run_id: str,
        tasks: Sequence[PreparedTask],
        ids: Mapping[str, str],
        *,
        completed: frozenset[str],
        now: float,
    ) -> None:
        """Insert tasks whose ``depends_on`` are keys of ``ids``; ``completed`` are ids that
        already completed (they do not count as unmet)."""
        if not tasks:
            return
        rows = []
        edges: list[dict[str, str]] = []
        for i, t in enumerate(tasks):
            dep_ids = [ids[k] for k in t.depends_on]
            rows.append(
                {
                    "id": ids[t.key],
                    "key": t.key,
                    "type": t.type,
                    "workflow_run_id": run_id,
                    "material_id": t.material_id,
                    "status": S.PENDING,
                    "priority": t.priority,
                    "depends_on": dep_ids,
                    "payload": t.payload,
                    "idempotency_key": t.idempotency_key,
                    "max_retries": t.max_retries,
                    "resource": t.resource,
                    "created_at": now + i * 1e-6,
                    "unmet_deps": sum(1 for d in dep_ids if d not in completed),
                }
            )
            edges.extend({"task_id": ids[t.key], "depends_on_id": d} for d in dep_ids)
        conn.execute(sa.insert(task_t), rows)
        if edges:
            conn.execute(sa.insert(dep_t), edges)
        self.now._last = max(self.now._last, now + len(tasks) * 1e-6)

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

    # --- claiming and running -------------------------------------------------------------

    async def claim(
        self,
        worker_id: str,
        *,
        slots: Mapping[str, int] | None = None,
        limit: int = 1,
        start: bool = False,
        lease_seconds: float | None = None,
    ) -> list[ClaimedTask]:
        """Claim up to ``limit`` claimable tasks in one transaction.

        ``slots`` maps resource classes to how many tasks of that class the caller can start
        now (``None``: any class, no per-class limit). Each claim is one atomic ``UPDATE …
        RETURNING``: pending, no unmet dependency, not paused, due, of a class with a free slot,
        highest priority first then oldest. ``start=True`` folds ``mark_running`` into the same
        commit.
        """
        return await self._write(
            self._claim_tx, worker_id, slots, limit, start, lease_seconds or self.lease_seconds
        )

    def _claim_statement(self, resources: tuple[str, ...] | None) -> sa.TextualSelect:
        stmt = self._claim_sql.get(resources)
        if stmt is None:
            if resources is None:
                flt = ""
            else:
                names = ", ".join(f":r{i}" for i in range(len(resources)))
                flt = f"AND resource IN ({names})"
            stmt = sa.text(_CLAIM_SQL.format(resource_filter=flt)).columns(*task_t.columns)
            self._claim_sql[resources] = stmt
        return stmt

    def _claim_tx(
        self,
        conn: sa.Connection,
        worker_id: str,
        slots: Mapping[str, int] | None,
        limit: int,
        start: bool,
        lease_seconds: float,
    ) -> list[ClaimedTask]:
        free = None if slots is None else {k: v for k, v in slots.items() if v > 0}
        claimed: list[ClaimedTask] = []
        events: list[dict[str, Any]] = []
        run_deltas: dict[str, Counter[TaskStatus]] = {}
        new_status = S.RUNNING if start else S.CLAIMED
        now = self.now()
        while len(claimed) < limit and (free is None or free):
            resources = None if free is None else tuple(sorted(free))
            params: dict[str, Any] = {
                "new_status": new_status.value,
                "now": now,
                "started_at": now if start else None,
                "token": str(uuid.uuid4()),
                "worker_id": worker_id,
                "lease_until": now + lease_seconds,
            }
            if resources is not None:
                params.update({f"r{i}": r for i, r in enumerate(resources)})
            row = conn.execute(self._claim_statement(resources), params).mappings().first()
            if row is None:
                break
            task = _task_record(row)
            claimed.append(ClaimedTask(task, params["token"]))
            if free is not None:
                free[task.resource] -= 1
                if free[task.resource] <= 0:
                    del free[task.resource]
            if task.workflow_run_id:
                delta = run_deltas.setdefault(task.workflow_run_id, Counter())
                delta[S.PENDING] -= 1
                delta[new_status] += 1
            detail = {"worker_id": worker_id, "attempt": task.attempt}
            events.append(_event(task, "claimed", now, detail))
            if start:
                events.append(_event(task, "started", now, None))
        for run_id, delta in run_deltas.items():
            self._apply_run_delta(conn, run_id, delta, now)
        _insert_events(conn, events)
        return claimed

    async def mark_running(self, task_id: str, lease_token: str) -> bool:
        """claimed → running. False when the lease is no longer ours."""
        return await self._write(self._mark_running_tx, task_id, lease_token)

    def _mark_running_tx(self, conn: sa.Connection, task_id: str, lease_token: str) -> bool:
        now = self.now()
        row = conn.execute(
            sa.update(task_t)
            .where(
                task_t.c.id == task_id,
                task_t.c.lease_token == lease_token,
                task_t.c.status == S.CLAIMED,
            )
            .values(status=S.RUNNING, started_at=now, heartbeat_at=now)
            .returning(task_t.c.workflow_run_id)
        ).first()
        if row is None:
            return False
        if row.workflow_run_id:
            self._apply_run_delta(
                conn, row.workflow_run_id, Counter({S.CLAIMED: -1, S.RUNNING: 1}), now
            )
        _insert_events(conn, [_event_row(task_id, row.workflow_run_id, "started", now, None)])
        return True

    async def report_progress(
        self,
        task_id: str,
        lease_token: str,
        *,
        progress: float | None = None,
        status_text: str | None = None,
        is_pausable: bool | None = None,
        checkpoint: dict[str, Any] | None = None,
    ) -> bool:
        """Record progress (0 to 100), the one-line status, pausability and/or a checkpoint.

        No event: progress ticks are not part of the timeline. False when the lease is lost.
        """
        values: dict[str, Any] = {}
        if progress is not None:
            values["progress"] = min(100.0, max(0.0, float(progress)))
        if status_text is not None:
            values["status_text"] = status_text[:512]
        if is_pausable is not None:
            values["is_pausable"] = is_pausable
        if checkpoint is not None:
            values["checkpoint"] = checkpoint
        if not values:
            return True
        return await self._write(self._fenced_update_tx, task_id, lease_token, values)

    def _fenced_update_tx(
        self, conn: sa.Connection, task_id: str, lease_token: str, values: dict[str, Any]
    ) -> bool:
        values["heartbeat_at"] = self.now()
        result = conn.execute(
            sa.update(task_t)
            .where(
                task_t.c.id == task_id,
                task_t.c.lease_token == lease_token,
                task_t.c.status.in_(HELD),
            )
            .values(**values)
        )
        return result.rowcount == 1

    async def heartbeat(
        self, worker_id: str, task_ids: Collection[str], lease_seconds: float | None = None
    ) -> HeartbeatOutcome:
        """Extend the leases of the tasks ``worker_id`` holds, in one statement, and report
        which are still ours, which were asked to pause, and which were lost (cancelled by
        another process, or recovered)."""
        if not task_ids:
            return HeartbeatOutcome(frozenset(), frozenset(), frozenset())
        return await self._write(
            self._heartbeat_tx, worker_id, list(task_ids), lease_seconds or self.lease_seconds
        )

    def _heartbeat_tx(
        self, conn: sa.Connection, worker_id: str, task_ids: list[str], lease_seconds: float
    ) -> HeartbeatOutcome:
        now = self.now()
        rows = conn.execute(
            sa.update(task_t)
            .where(
                task_t.c.id.in_(task_ids),
                task_t.c.worker_id == worker_id,
                task_t.c.status.in_(HELD),
            )
            .values(heartbeat_at=now, lease_until=now + lease_seconds)
            .returning(task_t.c.id, task_t.c.is_paused)
        ).all()
        held = frozenset(r.id for r in rows)
        return HeartbeatOutcome(
            held=held,
            paused=frozenset(r.id for r in rows if r.is_paused),
            lost=frozenset(task_ids) - held,
        )

    # --- finishing attempts ---------------------------------------------------------------

    async def complete(
        self,
        task_id: str,
        lease_token: str,
        result: dict[str, Any] | None = None,
        *,
        new_tasks: Sequence[PreparedTask] = (),
    ) -> bool:
        """Complete an attempt: the task becomes ``completed`` with ``result``, and each task
        that depends on it has one unmet dependency fewer.

        ``new_tasks`` (dynamic fan-out) are added to the same run in the same transaction;
        their ``depends_on`` are keys of tasks of that run (this one included). False when the
        lease is no longer ours: nothing is written.
        """
        return await self._write(self._complete_tx, task_id, lease_token, result, new_tasks)

    async def complete_many(
        self, items: Sequence[tuple[str, str, dict[str, Any] | None]]
    ) -> list[bool]:
        """Group commit: complete several attempts ``(task_id, lease_token, result)`` in one
        transaction. Each is fenced on its own."""
        return await self._write(self._complete_many_tx, items)

    def _complete_many_tx(
        self, conn: sa.Connection, items: Sequence[tuple[str, str, dict[str, Any] | None]]
    ) -> list[bool]:
        return [self._complete_tx(conn, tid, tok, res, ()) for tid, tok, res in items]

    def _complete_tx(
        self,
        conn: sa.Connection,
        task_id: str,
        lease_token: str,
        result: dict[str, Any] | None,
        new_tasks: Sequence[PreparedTask],
    ) -> bool:
        now = self.now()
        row = conn.execute(
            sa.update(task_t)
            .where(
                task_t.c.id == task_id,
                task_t.c.lease_token == lease_token,
                task_t.c.status.in_(HELD),
            )
            .values(
                status=S.COMPLETED,
                result=result,
                progress=100.0,
                completed_at=now,
                lease_token=None,
                lease_until=None,
                error=None,
                error_type=None,
            )
            .returning(task_t.c.workflow_run_id, task_t.c.started_at)
        ).first()
        if row is None:
            return False
        # RETURNING shows the new row; the old status was claimed or running. A claimed task
        # that completes never started (a skip): its started_at is still empty.
        was = S.RUNNING if row.started_at is not None else S.CLAIMED
        conn.execute(
            sa.update(task_t)
            .where(
                task_t.c.id.in_(sa.select(dep_t.c.task_id).where(dep_t.c.depends_on_id == task_id))
            )
            .values(unmet_deps=task_t.c.unmet_deps - 1)
        )
        events = [_event_row(task_id, row.workflow_run_id, "completed", now, None)]
        delta: Counter[TaskStatus] = Counter({was: -1, S.COMPLETED: 1})
        if new_tasks and row.workflow_run_id:
            self._add_tasks(conn, row.workflow_run_id, new_tasks, now)
            delta[S.PENDING] += len(new_tasks)
            conn.execute(
                sa.update(run_t)
                .where(run_t.c.id == row.workflow_run_id)
                .values(total_tasks=run_t.c.total_tasks + len(new_tasks))
            )
        if row.workflow_run_id:
            self._apply_run_delta(conn, row.workflow_run_id, delta, now)
        _insert_events(conn, events)
        return True

    def _add_tasks(
        self, conn: sa.Connection, run_id: str, tasks: Sequence[PreparedTask], now: float
    ) -> None:
        existing = conn.execute(
            sa.select(task_t.c.key, task_t.c.id, task_t.c.status).where(
                task_t.c.workflow_run_id == run_id, task_t.c.key.is_not(None)
            )
        ).all()
        clash = {t.key for t in tasks} & {r.key for r in existing}
        if clash:
            raise InvalidState(f"run {run_id} already has tasks {sorted(clash)}")
        ids = {r.key: r.id for r in existing}
        ids.update({t.key: str(uuid.uuid4()) for t in tasks})
        done = frozenset(r.id for r in existing if r.status == S.COMPLETED)
        self._insert_tasks(conn, run_id, tasks, ids, completed=done, now=now)

    async def fail(
        self,
        task_id: str,
        lease_token: str,
        error: str,
        error_type: str = ErrorType.EXECUTOR_ERROR,
        *,
        retryable: bool = True,
    ) -> FailOutcome:
        """A failed attempt: retried with backoff while retries remain and the error type
        allows it, else a permanent failure that cancels everything downstream with
        ``DEPENDENCY_FAILED``. Fenced by ``lease_token``."""
        return await self._write(
            self._fail_tx, task_id, lease_token, error, str(error_type), retryable
        )

    def _fail_tx(
        self,
        conn: sa.Connection,
        task_id: str,
        lease_token: str,
        error: str,
        error_type: str,
        retryable: bool,
    ) -> FailOutcome:
        now = self.now()
        cur = conn.execute(
            sa.select(
                task_t.c.status,
                task_t.c.retry_count,
                task_t.c.max_retries,
                task_t.c.workflow_run_id,
            ).where(
                task_t.c.id == task_id,
                task_t.c.lease_token == lease_token,
                task_t.c.status.in_(HELD),
            )
        ).first()
        if cur is None:
            return FailOutcome(applied=False)
        decision = states.retry_decision(
            error_type,
            cur.retry_count,
            cur.max_retries if retryable else 0,
            self._rng.random(),
            self.backoff,
        )
        common = {
            "error": error[:10_000],
            "error_type": error_type,
            "lease_token": None,
            "lease_until": None,
        }
        run_id = cur.workflow_run_id
        if decision.retry:
            next_run_at = now + decision.delay
            conn.execute(
                sa.update(task_t)
                .where(task_t.c.id == task_id)
                .values(
                    status=S.PENDING,
                    retry_count=task_t.c.retry_count + 1,
                    next_run_at=next_run_at,
                    status_text=f"retrying in {decision.delay:.0f} s",
                    **common,
                )
            )
            if run_id:
                self._apply_run_delta(conn, run_id, Counter({cur.status: -1, S.PENDING: 1}), now)
            _insert_events(
                conn,
                [
                    _event_row(
                        task_id,
                        run_id,
                        "retry_scheduled",
                        now,
                        {"error": error[:500], "error_type": error_type, "delay": decision.delay},
                    )
                ],
            )
            return FailOutcome(applied=True, retried=True, next_run_at=next_run_at)
        conn.execute(
            sa.update(task_t)
            .where(task_t.c.id == task_id)
            .values(status=S.FAILED, completed_at=now, **common)
        )
        events = [
            _event_row(
                task_id, run_id, "failed", now, {"error": error[:500], "error_type": error_type}
            )
        ]
        delta: Counter[TaskStatus] = Counter({cur.status: -1, S.FAILED: 1})
        cascaded = self._cascade(conn, [task_id], now, events, delta)
        if run_id:
            self._apply_run_delta(conn, run_id, delta, now)
        _insert_events(conn, events)
        return FailOutcome(applied=True, retried=False, cascaded=tuple(cascaded))

    def _cascade(
        self,
        conn: sa.Connection,
        roots: list[str],
        now: float,
        events: list[dict[str, Any]],
        delta: Counter[TaskStatus],
    ) -> list[str]:
        """Cancel every unfinished task downstream of ``roots`` with DEPENDENCY_FAILED.

        Only pending tasks can be downstream of an unfinished task (a task with an unmet
        dependency is never claimed), so the cascade is pending → cancelled.
        """
        down = (
            sa.select(dep_t.c.task_id)
            .where(dep_t.c.depends_on_id.in_(roots))
            .cte("down", recursive=True)
        )
        down = down.union(
            sa.select(dep_t.c.task_id).join(down, dep_t.c.depends_on_id == down.c.task_id)
        )
        rows = conn.execute(
            sa.update(task_t)
            .where(task_t.c.id.in_(sa.select(down.c.task_id)), task_t.c.status == S.PENDING)
            .values(
                status=S.CANCELLED,
                error_type=ErrorType.DEPENDENCY_FAILED,
                error="an upstream task failed or was cancelled",
                completed_at=now,
            )
            .returning(task_t.c.id, task_t.c.workflow_run_id)
        ).all()
        for r in rows:
            events.append(
                _event_row(r.id, r.workflow_run_id, "cancelled", now, {"reason": "dependency"})
            )
        delta[S.PENDING] -= len(rows)
        delta[S.CANCELLED] += len(rows)
        return [r.id for r in rows]

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
        self._require_run(conn, run_id)
        ids = list(
            conn.execute(
                sa.select(task_t.c.id).where(
                    task_t.c.workflow_run_id == run_id, task_t.c.status.in_(states.ACTIVE)
                )
            ).scalars()
        )
        return self._cancel_tx(conn, ids, None, run_id)

    def _cancel_tx(
        self, conn: sa.Connection, ids: list[str], single: str | None, run_id: str | None
    ) -> CancelOutcome:
        now = self.now()
        if single is not None:
            status = conn.execute(
                sa.select(task_t.c.status).where(task_t.c.id == single)
            ).scalar_one_or_none()
            if status is None:
                raise NotFound(f"no task {single}")
            if states.is_terminal(status):
                raise InvalidState(f"task {single} is already {status.value}")
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
        _insert_events(conn, events)
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
        self._require_run(conn, run_id)
        ids = list(
            conn.execute(
                sa.select(task_t.c.id).where(
                    task_t.c.workflow_run_id == run_id, task_t.c.status.in_(states.ACTIVE)
                )
            ).scalars()
        )
        return self._pause_ids(conn, ids, paused, None)

    def _set_paused_tx(
        self,
        conn: sa.Connection,
        ids: list[str],
        single: str,
        paused: bool,
        reason: str | None,
    ) -> bool:
        status = conn.execute(
            sa.select(task_t.c.status).where(task_t.c.id == single)
        ).scalar_one_or_none()
        if status is None:
            raise NotFound(f"no task {single}")
        if states.is_terminal(status):
            raise InvalidState(f"task {single} is already {status.value}")
        return bool(self._pause_ids(conn, ids, paused, reason))

    def _pause_ids(
        self, conn: sa.Connection, ids: list[str], paused: bool, reason: str | None
    ) -> list[str]:
        now = self.now()
        values: dict[str, Any] = {"is_paused": paused}
        if paused:
            values["status_text"] = f"paused: {reason}" if reason else "paused"
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
        _insert_events(conn, [_event_row(r.id, r.workflow_run_id, kind, now, detail) for r in rows])
        return [r.id for r in rows]

    async def retry(self, task_id: str) -> list[str]:
        """Give a failed or cancelled task a new start, with the tasks downstream of it that
        were cancelled because of it. Returns the ids made pending again."""
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

    def _revive(self, conn: sa.Connection, roots: list[str]) -> list[str]:
        now = self.now()
        down = (
            sa.select(dep_t.c.task_id)
            .where(dep_t.c.depends_on_id.in_(roots))
            .cte("down", recursive=True)
        )
        down = down.union(
            sa.select(dep_t.c.task_id).join(down, dep_t.c.depends_on_id == down.c.task_id)
        )
        dependents = list(
            conn.execute(
                sa.select(task_t.c.id).where(
                    task_t.c.id.in_(sa.select(down.c.task_id)),
                    task_t.c.status == S.CANCELLED,
                    task_t.c.error_type == ErrorType.DEPENDENCY_FAILED,
                )
            ).scalars()
        )
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
        deltas: dict[str, Counter[TaskStatus]] = {}
        for r in before:
            if r.workflow_run_id:
                d = deltas.setdefault(r.workflow_run_id, Counter())
                d[r.status] -= 1
                d[S.PENDING] += 1
        for rid, d in deltas.items():
            self._apply_run_delta(conn, rid, d, now)
        _insert_events(
            conn, [_event_row(r.id, r.workflow_run_id, "retried", now, None) for r in before]
        )
        return ids

    def _recount_unmet(self, conn: sa.Connection, ids: Iterable[str]) -> None:
        parent = task_t.alias("parent")
        unmet = (
            sa.select(sa.func.count())
            .select_from(dep_t.join(parent, parent.c.id == dep_t.c.depends_on_id))
            .where(dep_t.c.task_id == task_t.c.id, parent.c.status != S.COMPLETED)
            .scalar_subquery()
        )
        conn.execute(sa.update(task_t).where(task_t.c.id.in_(list(ids))).values(unmet_deps=unmet))

    # --- the run's counters ---------------------------------------------------------------

    def _apply_run_delta(
        self, conn: sa.Connection, run_id: str, delta: Mapping[TaskStatus, int], now: float
    ) -> None:
        values = {_COUNT_COLUMN[s]: run_t.c[_COUNT_COLUMN[s]] + n for s, n in delta.items() if n}
        if not values:
            return
        row = (
            conn.execute(
                sa.update(run_t).where(run_t.c.id == run_id).values(**values).returning(run_t)
            )
            .mappings()
            .one()
        )
        run = RunRecord.from_row(row)
        status = states.derive_run_status(run.counts)
        if status != run.status:
            finished = status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)
            conn.execute(
                sa.update(run_t)
                .where(run_t.c.id == run_id)
                .values(status=status, completed_at=now if finished else None)
            )

    def _require_run(self, conn: sa.Connection, run_id: str) -> None:
        if conn.execute(sa.select(run_t.c.id).where(run_t.c.id == run_id)).first() is None:
            raise NotFound(f"no run {run_id}")

    # --- reads ----------------------------------------------------------------------------

    async def get_task(self, task_id: str) -> TaskRecord:
        return await self._read(self._get_task_tx, task_id)

    def _get_task_tx(self, conn: sa.Connection, task_id: str) -> TaskRecord:
        row = conn.execute(sa.select(task_t).where(task_t.c.id == task_id)).mappings().first()
        if row is None:
            raise NotFound(f"no task {task_id}")
        return _task_record(row)

    async def get_run(self, run_id: str) -> RunRecord:
        return await self._read(self._get_run_tx, run_id)

    def _get_run_tx(self, conn: sa.Connection, run_id: str) -> RunRecord:
        row = conn.execute(sa.select(run_t).where(run_t.c.id == run_id)).mappings().first()
        if row is None:
            raise NotFound(f"no run {run_id}")
        return RunRecord.from_row(row)

    async def find(self, some_id: str) -> TaskRecord | RunRecord:
        """A task or a run by id (the CLI's commands take either)."""
        return await self._read(self._find_tx, some_id)

    def _find_tx(self, conn: sa.Connection, some_id: str) -> TaskRecord | RunRecord:
        try:
            return self._get_run_tx(conn, some_id)
        except NotFound:
            pass
        try:
            return self._get_task_tx(conn, some_id)
        except NotFound:
            raise NotFound(f"no task or run with id {some_id!r}") from None

    async def list_runs(self, limit: int = 1000) -> list[RunRecord]:
        return await self._read(self._list_runs_tx, limit)

    def _list_runs_tx(self, conn: sa.Connection, limit: int) -> list[RunRecord]:
        rows = conn.execute(
            sa.select(run_t).order_by(run_t.c.created_at.desc()).limit(limit)
        ).mappings()
        return [RunRecord.from_row(r) for r in rows]

    async def list_tasks(self, run_id: str) -> list[TaskRecord]:
        return await self._read(self._list_tasks_tx, run_id)

    def _list_tasks_tx(self, conn: sa.Connection, run_id: str) -> list[TaskRecord]:
        self._require_run(conn, run_id)
        rows = conn.execute(
            sa.select(task_t)
            .where(task_t.c.workflow_run_id == run_id)
            .order_by(task_t.c.created_at)
        ).mappings()
        return [_task_record(r) for r in rows]

    async def events(self, task_id: str) -> list[EventRecord]:
        return await self._read(self._events_tx, task_id)

    def _events_tx(self, conn: sa.Connection, task_id: str) -> list[EventRecord]:
        rows = conn.execute(
            sa.select(event_t).where(event_t.c.task_id == task_id).order_by(event_t.c.id)
        ).mappings()
        return [EventRecord.from_row(r) for r in rows]

    async def upstream_results(self, task_id: str) -> dict[str, dict[str, Any] | None]:
        """The results of the tasks ``task_id`` depends on, keyed by their spec key (or id)."""
        return await self._read(self._upstream_tx, task_id)

    def _upstream_tx(self, conn: sa.Connection, task_id: str) -> dict[str, dict[str, Any] | None]:
        rows = conn.execute(
            sa.select(task_t.c.id, task_t.c.key, task_t.c.result)
            .join(dep_t, dep_t.c.depends_on_id == task_t.c.id)
            .where(dep_t.c.task_id == task_id)
        ).all()
        return {r.key or r.id: r.result for r in rows}

    async def next_retry_at(self) -> float | None:
        """When the earliest waiting retry becomes due (the engine's timer)."""
        return await self._read(self._next_retry_tx)

    def _next_retry_tx(self, conn: sa.Connection) -> float | None:
        value = conn.execute(
            sa.select(sa.func.min(task_t.c.next_run_at)).where(
                task_t.c.status == S.PENDING, task_t.c.next_run_at.is_not(None)
            )
        ).scalar()
        return float(value) if value is not None else None


# --- row helpers ----------------------------------------------------------------------------


def _task_record(row: Mapping[Any, Any]) -> TaskRecord:
    return TaskRecord.from_row(row)


def _event(task: TaskRecord, kind: str, at: float, detail: dict[str, Any] | None) -> dict[str, Any]:
    return _event_row(task.id, task.workflow_run_id, kind, at, detail)


def _event_row(
    task_id: str, run_id: str | None, kind: str, at: float, detail: dict[str, Any] | None
) -> dict[str, Any]:
    return {"task_id": task_id, "workflow_run_id": run_id, "at": at, "kind": kind, "detail": detail}


def _insert_events(conn: sa.Connection, events: list[dict[str, Any]]) -> None:
    if events:
        conn.execute(sa.insert(event_t), events)
