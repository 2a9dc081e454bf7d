"""Claiming, running and finishing attempts: every write a worker makes."""

from __future__ import annotations

import copy
import dataclasses
import logging
import uuid
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from python_endpoints.text import clean_text
from workers import states
from workers.errors import FredicaError, InvalidState
from workers.models import run_t, task_t
from workers.records import (
    ClaimedTask,
    Completion,
    FailOutcome,
    Failure,
    HeartbeatOutcome,
    InlineRunner,
    ProgressWrite,
    TickOutcome,
)
from workers.spec import PreparedTask
from workers.states import ErrorType, TaskStatus
from workers.store import _hot
from workers.store._base import (
    HELD,
    MARK_RUNNING_STMT,
    MAX_TOTAL_INTERRUPTIONS,
    S,
    StoreBase,
    _event,
    _event_row,
)
from workers.store._dialect import driver_errors

log = logging.getLogger(__name__)

#: How long a task whose endpoints server stopped waits before it is claimed again: the next
#: attempt starts a new server (a moment), and a server that dies at once is not hammered.
INTERRUPTED_REQUEUE_DELAY = 1.0


def _held_row(
    conn: sa.Connection, task_id: str, lease_token: str, *columns: sa.Column[Any]
) -> sa.Row[Any] | None:
    """The task's status, run and ``columns`` while the attempt ``lease_token`` holds it."""
    return conn.execute(
        sa.select(task_t.c.status, task_t.c.workflow_run_id, *columns).where(
            task_t.c.id == task_id,
            task_t.c.lease_token == lease_token,
            task_t.c.status.in_(HELD),
        )
    ).first()


def _bad_result(c: Completion, error: str) -> Failure:
    return Failure(c.task_id, c.lease_token, error, ErrorType.BAD_RESULT, retryable=False)


def _why(exc: Exception) -> str:
    if isinstance(exc, sa.exc.IntegrityError):
        if "idempotency_key" in str(exc.orig):
            return "a new task's idempotency key is held by an active task"
        return f"a new task breaks a constraint ({exc.orig})"
    return str(exc)


def progress_values(
    progress: float | None = None,
    status_text: str | None = None,
    is_pausable: bool | None = None,
    checkpoint: dict[str, Any] | None = None,
    status_parts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The task columns a progress report sets: progress clamped to 0 to 100, the status text
    cut to its column with its parts (none: the text is plain), only what was given."""
    values: dict[str, Any] = {}
    if progress is not None:
        values["progress"] = min(100.0, max(0.0, float(progress)))
    if status_text is not None:
        values["status_text"] = clean_text(status_text)[:512]
        values["status_parts"] = status_parts
    if is_pausable is not None:
        values["is_pausable"] = is_pausable
    if checkpoint is not None:
        values["checkpoint"] = checkpoint
    return values


class AttemptsMixin(StoreBase):
    # --- the engine's transaction ---------------------------------------------------------

    async def tick(
        self,
        worker_id: str,
        *,
        completions: Sequence[Completion] = (),
        failures: Sequence[Failure] = (),
        slots: Mapping[str, int] | None = None,
        limit: int = 0,
        lease_seconds: float | None = None,
        inline: InlineRunner | None = None,
        inline_budget: int = 256,
        progress: Sequence[ProgressWrite] = (),
    ) -> TickOutcome:
        """Record finished attempts and claim (and start) new work, all in one commit.

        Group commit: the completions of tasks that finished together cost one fsync, and the
        claim of what they unblocked rides on the same commit, so a child starts without
        waiting for another transaction. Each outcome is fenced by its own lease token.

        ``inline`` folds instantaneous tasks (NOOP, a merge step) into the same commit: it is
        called, on the store's thread, with each task just claimed; a dict it returns is the
        task's result, and the task is completed in this transaction, its slot claimed again
        (up to ``inline_budget`` tasks). None: the task is started the usual way. Nothing
        outside the transaction can observe the steps in between, and a crash before the
        commit leaves the tasks pending, as if never claimed.

        ``progress``: running attempts' progress written first, each fenced by its lease
        (a lost lease changes nothing), so that the progress of tasks that report and finish
        together costs no commit of its own.
        """
        return await self._write(
            self._tick_tx,
            worker_id,
            completions,
            failures,
            slots,
            limit,
            lease_seconds or self.lease_seconds,
            inline,
            inline_budget,
            progress,
            quiet=True,
        )

    def _tick_tx(
        self,
        conn: sa.Connection,
        worker_id: str,
        completions: Sequence[Completion],
        failures: Sequence[Failure],
        slots: Mapping[str, int] | None,
        limit: int,
        lease_seconds: float,
        inline: InlineRunner | None = None,
        inline_budget: int = 0,
        progress: Sequence[ProgressWrite] = (),
    ) -> TickOutcome:
        self._begin_batch()
        if progress:
            now, cur = self.now(), _hot.cursor(conn)
            bad_report: tuple[type[Exception], ...] = (*driver_errors(), TypeError, ValueError)
            try:
                for write in progress:
                    values = progress_values(**write.values)
                    if not values:
                        continue
                    try:
                        if self.dialect == "sqlite":
                            _hot.write_progress(cur, write.task_id, write.lease_token, values, now)
                        else:  # an error ends a PostgreSQL transaction: a savepoint keeps it
                            with conn.begin_nested():
                                _hot.write_progress(
                                    cur, write.task_id, write.lease_token, values, now
                                )
                    except bad_report as exc:
                        # One task's report (a checkpoint that is not JSON) costs that report
                        # alone: the turn and the other tasks' outcomes go on.
                        log.warning(
                            "task %s: a progress report was dropped: %s", write.task_id, exc
                        )
            finally:
                cur.close()
        done: list[bool] = []
        late_failures: list[Failure] = []
        for c in completions:
            # What one task returned can fail only that task, never the whole turn.
            if not c.new_tasks:
                try:
                    done.append(self._complete_tx(conn, c.task_id, c.lease_token, c.result, ()))
                except (TypeError, ValueError) as exc:  # raised before any write
                    done.append(False)
                    late_failures.append(_bad_result(c, f"its result is not JSON: {exc}"))
                continue
            saved = copy.deepcopy(self._batch)
            try:
                with conn.begin_nested():
                    done.append(
                        self._complete_tx(conn, c.task_id, c.lease_token, c.result, c.new_tasks)
                    )
            except (FredicaError, sa.exc.IntegrityError, TypeError, ValueError) as exc:
                self._batch = saved
                done.append(False)
                late_failures.append(_bad_result(c, f"fan-out rejected: {_why(exc)}"))
        failed = tuple(self._fail_guarded(conn, f) for f in failures)
        rejected = tuple(
            (f, self._fail_tx(conn, f.task_id, f.lease_token, f.error, f.error_type, False))
            for f in late_failures
        )
        claimed: list[ClaimedTask] = []
        folded: list[ClaimedTask] = []
        exhausted = True
        free = None if slots is None else {k: v for k, v in slots.items() if v > 0}
        left = limit
        while left > 0 and (free is None or free):
            asked = left
            batch = self._claim_tx(conn, worker_id, free, asked, True, lease_seconds)
            freed = False
            for claim in batch:
                result = None
                if inline is not None and len(folded) < inline_budget:
                    result = inline(claim)
                if result is not None and self._complete_inline(conn, claim, result):
                    folded.append(claim)
                    freed = True
                    continue
                claimed.append(claim)
                left -= 1
                if free is not None:
                    free[claim.task.resource] -= 1
                    if free[claim.task.resource] <= 0:
                        del free[claim.task.resource]
            # A task completed inline may have released its dependents: claim again.
            exhausted = len(batch) < asked and not freed
            if not freed or len(folded) >= inline_budget:
                break
        self._flush_batch(conn, self.now())
        cur = _hot.cursor(conn)
        try:
            next_due = cur.execute(_hot.NEXT_RETRY_SQL).fetchone()[0]
        finally:
            cur.close()
        return TickOutcome(
            tuple(done),
            failed,
            tuple(claimed),
            rejected,
            next_retry_at=float(next_due) if next_due is not None else None,
            inline=tuple(folded),
            exhausted=exhausted,
        )

    def _fail_guarded(self, conn: sa.Connection, f: Failure) -> FailOutcome:
        """Record a failed attempt; when its outcome cannot be written as it is (a text SQLite
        refuses, a value out of range), record it with the reason instead: what one task
        returned can fail only that task, never the whole turn."""
        saved = copy.deepcopy(self._batch)
        try:
            with conn.begin_nested():
                return self._fail_tx(
                    conn, f.task_id, f.lease_token, f.error, f.error_type, f.retryable
                )
        except (sa.exc.SQLAlchemyError, *driver_errors(), ValueError) as exc:  # type: ignore[misc]
            self._batch = saved
            log.warning("task %s: its failure could not be recorded as it was: %s", f.task_id, exc)
            why = f"its outcome could not be recorded ({type(exc).__name__}: {exc})"
            return self._fail_tx(conn, f.task_id, f.lease_token, why, ErrorType.BAD_RESULT, False)

    def _complete_inline(
        self, conn: sa.Connection, claim: ClaimedTask, result: dict[str, Any]
    ) -> bool:
        """Complete a task run inline; False (it then starts the usual way, which reports what
        is wrong) when its result cannot be recorded."""
        try:
            return self._complete_tx(conn, claim.id, claim.lease_token, result, ())
        except (TypeError, ValueError):  # raised before any write
            return False

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
            self._claim_tx,
            worker_id,
            slots,
            limit,
            start,
            lease_seconds or self.lease_seconds,
            quiet=True,
        )

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
        cur = _hot.cursor(conn)
        if limit > 0 and (free is None or free):
            cur.execute(_hot.PROMOTE_DUE_SQL, {"now": now, "horizon": self.retry_horizon(now)})
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
            types = 0
            if self.shared and self.claim_types:
                for i, (name, version) in enumerate(sorted(self.claim_types.items())):
                    params[f"ty{i}"], params[f"tv{i}"] = name, version
                types = len(self.claim_types)
            sql = _hot.claim_sql(None if resources is None else len(resources), self.dialect, types)
            row = cur.execute(sql, params).fetchone()
            if row is None:
                break
            task = _hot.task_from_row(cur, row)
            upstream = self._upstream(conn, task.id) if task.depends_on else {}
            claimed.append(ClaimedTask(task, params["token"], upstream))
            if free is not None:
                free[task.resource] -= 1
                if free[task.resource] <= 0:
                    del free[task.resource]
            if task.workflow_run_id:
                delta = run_deltas.setdefault(task.workflow_run_id, Counter())
                delta[S.PENDING] -= 1
                delta[new_status] += 1
            detail = {"worker_id": worker_id, "attempt": task.attempt}
            # Claimed and started in one commit: one "started" event says both.
            events.append(_event(task, "started" if start else "claimed", now, detail))
        cur.close()
        for run_id, delta in run_deltas.items():
            self._apply_run_delta(conn, run_id, delta, now)
        self._insert_events(conn, events)
        return claimed

    async def mark_running(self, task_id: str, lease_token: str) -> bool:
        """claimed → running. False when the lease is no longer ours."""
        return await self._write(self._mark_running_tx, task_id, lease_token, quiet=True)

    def _mark_running_tx(self, conn: sa.Connection, task_id: str, lease_token: str) -> bool:
        now = self.now()
        row = conn.execute(
            MARK_RUNNING_STMT, {"task_id": task_id, "token": lease_token, "now": now}
        ).first()
        if row is None:
            return False
        if row.workflow_run_id:
            self._apply_run_delta(
                conn, row.workflow_run_id, Counter({S.CLAIMED: -1, S.RUNNING: 1}), now
            )
        self._insert_events(conn, [_event_row(task_id, row.workflow_run_id, "started", now, None)])
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
        status_parts: list[dict[str, Any]] | None = None,
    ) -> bool:
        """Record progress (0 to 100), the one-line status (and its parts), pausability and/or
        a checkpoint.

        No event: progress ticks are not part of the timeline. False when the lease is lost.
        """
        values = progress_values(progress, status_text, is_pausable, checkpoint, status_parts)
        if not values:
            return True
        return await self._write(self._fenced_update_tx, task_id, lease_token, values, quiet=True)

    def _fenced_update_tx(
        self, conn: sa.Connection, task_id: str, lease_token: str, values: dict[str, Any]
    ) -> bool:
        values["heartbeat_at"] = self.now()
        if "checkpoint" in values:  # each checkpoint saved counts (recovery compares counts)
            values["checkpoint_seq"] = task_t.c.checkpoint_seq + 1
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
        if not task_ids and not self.shared:
            return HeartbeatOutcome(frozenset(), frozenset(), frozenset())
        return await self._write(
            self._heartbeat_tx,
            worker_id,
            list(task_ids),
            lease_seconds or self.lease_seconds,
            quiet=True,
        )

    def _heartbeat_tx(
        self, conn: sa.Connection, worker_id: str, task_ids: list[str], lease_seconds: float
    ) -> HeartbeatOutcome:
        now = self.now()
        rows: Sequence[Any] = ()
        if task_ids:
            rows = conn.execute(
                sa.update(task_t)
                .where(
                    task_t.c.id.in_(task_ids),
                    task_t.c.worker_id == worker_id,
                    task_t.c.status.in_(HELD),
                )
                .values(heartbeat_at=now, lease_until=now + lease_seconds)
                .returning(task_t.c.id, task_t.c.is_paused, task_t.c.lease_token)
            ).all()
        # The engine's own row too (several hosts: `fredica hosts`, and drain requests).
        draining = self._renew_worker(conn, worker_id, now) if self.shared else False
        beat = HeartbeatOutcome.of(
            task_ids, ((r.id, bool(r.is_paused), r.lease_token) for r in rows)
        )
        return dataclasses.replace(beat, draining=draining) if draining else beat

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
        return await self._write(
            self._complete_tx, task_id, lease_token, result, new_tasks, quiet=True
        )

    async def complete_many(
        self, items: Sequence[tuple[str, str, dict[str, Any] | None]]
    ) -> list[bool]:
        """Group commit: complete several attempts ``(task_id, lease_token, result)`` in one
        transaction. Each is fenced on its own."""
        return await self._write(self._complete_many_tx, items, quiet=True)

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
        cur = _hot.cursor(conn)
        try:
            row = cur.execute(
                _hot.COMPLETE_SQL,
                {
                    "task_id": task_id,
                    "token": lease_token,
                    "result": _hot.to_json(result, cur),
                    "now": now,
                },
            ).fetchone()
            if row is None:
                return False
            run_id, started_at = row
            cur.execute(_hot.RELEASE_DEPENDENTS_SQL, {"task_id": task_id})
        finally:
            cur.close()
        # The old status was claimed or running. A claimed task that completes never started
        # (a skip): its started_at is still empty.
        was = S.RUNNING if started_at is not None else S.CLAIMED
        events = [_event_row(task_id, run_id, "completed", now, None)]
        delta: Counter[TaskStatus] = Counter({was: -1, S.COMPLETED: 1})
        if new_tasks and run_id:
            delta[S.PENDING] += len(new_tasks)
            self._add_tasks(conn, run_id, new_tasks, now, events, delta)
            conn.execute(
                sa.update(run_t)
                .where(run_t.c.id == run_id)
                .values(total_tasks=run_t.c.total_tasks + len(new_tasks))
            )
        if run_id:
            self._apply_run_delta(conn, run_id, delta, now)
        self._insert_events(conn, events)
        return True

    def _add_tasks(
        self,
        conn: sa.Connection,
        run_id: str,
        tasks: Sequence[PreparedTask],
        now: float,
        events: list[dict[str, Any]],
        delta: Counter[TaskStatus],
    ) -> None:
        """Add fan-out tasks to a run. Those that depend on a task of the run that failed or
        was cancelled can never run: they are cancelled ``DEPENDENCY_FAILED`` at once, as the
        cascade would have (and come back with it when it is retried)."""
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
        unknown = sorted({d for t in tasks for d in t.depends_on} - set(ids))
        if unknown:
            raise InvalidState(f"new tasks depend on keys the run does not have: {unknown}")
        done = frozenset(r.id for r in existing if r.status == S.COMPLETED)
        self._insert_tasks(conn, run_id, tasks, ids, completed=done, now=now)
        dead = {r.key for r in existing if r.status in (S.FAILED, S.CANCELLED)}
        blocked = sorted({ids[d] for t in tasks for d in t.depends_on if d in dead})
        if blocked:
            self._cascade(conn, blocked, now, events, delta)

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
            self._fail_tx, task_id, lease_token, error, str(error_type), retryable, quiet=True
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
        # What an executor or a job said is stored and shown: it must be text SQLite takes.
        error, error_type = clean_text(error), clean_text(error_type)
        if error_type == ErrorType.SERVER_STOPPED:
            return self._interrupt_tx(conn, task_id, lease_token, error)
        now = self.now()
        cur = _held_row(conn, task_id, lease_token, task_t.c.retry_count, task_t.c.max_retries)
        if cur is None:
            return FailOutcome(applied=False)
        max_retries = cur.max_retries if retryable else 0
        decision = states.retry_decision(
            error_type, cur.retry_count, max_retries, self._rng.random(), self.backoff
        )
        common = {
            "error": error[:10_000],
            "error_type": error_type,
            "lease_token": None,
            "lease_until": None,
            "status_text": states.failure_status(
                decision, error_type, cur.retry_count, max_retries
            ),
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
                    **common,
                )
            )
            if run_id:
                self._apply_run_delta(conn, run_id, Counter({cur.status: -1, S.PENDING: 1}), now)
            self._insert_events(
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
        self._insert_events(conn, events)
        return FailOutcome(applied=True, retried=False, cascaded=tuple(cascaded))

    def _interrupt_tx(
        self, conn: sa.Connection, task_id: str, lease_token: str, error: str
    ) -> FailOutcome:
        """An attempt interrupted by what ran it (the endpoints server stopped), not failed:
        the task is queued again (from its checkpoint, which it keeps) using no retry and no
        charged interruption — no job's code runs in the server. It counts in the task's
        interruptions in all; at :data:`MAX_TOTAL_INTERRUPTIONS` it is held for review."""
        now = self.now()
        row = _held_row(conn, task_id, lease_token, task_t.c.interruptions)
        if row is None:
            return FailOutcome(applied=False)
        total = row.interruptions + 1
        held = total >= MAX_TOTAL_INTERRUPTIONS
        next_run_at = now + INTERRUPTED_REQUEUE_DELAY
        status_text = (
            f"held: interrupted {total} times in all; resume it to try again"
            if held
            else "interrupted (the job server stopped): queued again"
        )
        conn.execute(
            sa.update(task_t)
            .where(task_t.c.id == task_id)
            .values(
                status=S.PENDING,
                interruptions=total,
                checkpoint_seq_at_interruption=task_t.c.checkpoint_seq,
                is_paused=task_t.c.is_paused | held,
                next_run_at=next_run_at,
                lease_token=None,
                lease_until=None,
                worker_id=None,
                status_text=status_text,
            )
        )
        run_id = row.workflow_run_id
        if run_id:
            self._apply_run_delta(conn, run_id, Counter({row.status: -1, S.PENDING: 1}), now)
        detail = {"error": error[:500], "interruptions": total, "charged": False, "held": held}
        self._insert_events(conn, [_event_row(task_id, run_id, "interrupted", now, detail)])
        return FailOutcome(applied=True, retried=True, next_run_at=next_run_at)
