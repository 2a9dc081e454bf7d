"""The WorkerEngine: takes slots, claims work, runs executors, records what became of them.

Pure asyncio, no Qt. Concurrency is bounded twice: ``max_workers`` for everything together and
a number of slots per resource class (``gpu`` 1, ``cpu`` cores - 1, ``net`` 4 by default). The
engine computes its free slots *before* claiming and claims only what it can start at once,
several tasks in one transaction, claim and start folded into one commit.

Wake-ups are events: a submission, a completion, a resume or a cancel wakes the claim loop at
once; a timer wakes it when the next retry is due; polling (1 s backing off to 5 s) only
catches writes made by other processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from workers.executor import Cancelled, ExecuteResult, ExecutionContext, TaskExecutor
from workers.records import ClaimedTask, RunRecord
from workers.states import ErrorType
from workers.store import TaskStore

log = logging.getLogger(__name__)


def default_slots() -> dict[str, int]:
    cores = os.cpu_count() or 2
    return {"gpu": 1, "cpu": max(1, cores - 1), "net": 4, "io": 4}


@dataclass
class _Running:
    claimed: ClaimedTask
    executor: TaskExecutor | None
    ctx: ExecutionContext | None = None
    job: asyncio.Task[None] | None = None
    forced: bool = False  # cancelled from outside after the grace period
    shutdown: bool = False  # stopped by an engine shutdown: leave it to recovery

    @property
    def resource(self) -> str:
        return self.claimed.task.resource


@dataclass
class EngineStats:
    completed: int = 0
    failed: int = 0
    retried: int = 0
    cancelled: int = 0
    started_at: float = field(default_factory=time.monotonic)


class WorkerEngine:
    def __init__(
        self,
        store: TaskStore,
        executors: Iterable[TaskExecutor],
        *,
        worker_id: str | None = None,
        max_workers: int = 4,
        slots: Mapping[str, int] | None = None,
        heartbeat_interval: float = 5.0,
        cancel_grace: float = 5.0,
        poll_min: float = 1.0,
        poll_max: float = 5.0,
    ) -> None:
        self.store = store
        self.executors = {e.task_type.name: e for e in executors}
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.max_workers = max_workers
        self.slots = {**default_slots(), **(slots or {})}
        self.heartbeat_interval = heartbeat_interval
        self.cancel_grace = cancel_grace
        self.poll_min = poll_min
        self.poll_max = poll_max
        self.stats = EngineStats()
        self._running: dict[str, _Running] = {}
        self._wake = asyncio.Event()
        self._stopping = False
        self._queue_paused = False
        self._background: set[asyncio.Task[None]] = set()

    # --- the loop ------------------------------------------------------------------------

    async def run(self, *, until_idle: bool = False) -> None:
        """Claim and run tasks until :meth:`stop` (or, with ``until_idle``, until nothing is
        running, claimable or waiting for a retry timer)."""
        heartbeat = asyncio.create_task(self._heartbeat_loop(), name="fredica-heartbeat")
        poll = self.poll_min
        try:
            while not self._stopping:
                self._wake.clear()
                claimed = await self._claim_free_slots()
                if claimed:
                    poll = self.poll_min
                    continue
                if until_idle and not self._running:
                    if self._queue_paused or await self.store.next_retry_at() is None:
                        return
                timeout = poll
                due = await self.store.next_retry_at()
                if due is not None:
                    timeout = max(0.0, min(timeout, due - self.store.now()))
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=timeout)
                    poll = self.poll_min
                except TimeoutError:
                    poll = min(self.poll_max, poll * 2)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat

    def wake(self) -> None:
        self._wake.set()

    def _free_slots(self) -> tuple[int, dict[str, int]]:
        free_total = self.max_workers - len(self._running)
        used: dict[str, int] = {}
        for r in self._running.values():
            used[r.resource] = used.get(r.resource, 0) + 1
        per_class = {k: min(v - used.get(k, 0), free_total) for k, v in self.slots.items()}
        return free_total, per_class

    async def _claim_free_slots(self) -> list[ClaimedTask]:
        if self._queue_paused or self._stopping:
            return []
        free_total, per_class = self._free_slots()
        if free_total <= 0 or not any(v > 0 for v in per_class.values()):
            return []
        # The claim runs to its end even if this coroutine is cancelled (it is on the store's
        # writer thread); shield it so that what was claimed is always started.
        claimed = await asyncio.shield(
            self.store.claim(self.worker_id, slots=per_class, limit=free_total, start=True)
        )
        for c in claimed:
            self._start(c)
        return claimed

    def _start(self, claimed: ClaimedTask) -> None:
        running = _Running(claimed, self.executors.get(claimed.task.type))
        self._running[claimed.id] = running
        running.job = asyncio.create_task(self._execute(running), name=f"task-{claimed.id}")

    async def _execute(self, running: _Running) -> None:
        claimed, executor = running.claimed, running.executor
        task, token = claimed.task, claimed.lease_token
        result: ExecuteResult | None = None
        try:
            if executor is None:
                result = ExecuteResult(
                    error=f"no executor for task type {task.type!r} in this worker",
                    error_type=ErrorType.NO_EXECUTOR,
                )
                return
            try:
                payload = executor.task_type.parse_payload(task.payload)
            except ValueError as exc:
                result = ExecuteResult(error=str(exc), error_type=ErrorType.PAYLOAD_ERROR)
                return
            upstream = await self.store.upstream_results(task.id) if task.depends_on else {}

            async def sink(**values: object) -> bool:
                return await self.store.report_progress(task.id, token, **values)  # type: ignore[arg-type]

            ctx = running.ctx = ExecutionContext(task, payload, upstream, sink)
            if payload.check_skip and await executor.can_skip(task):
                result = ExecuteResult(result={"skipped": True})
                return
            result = await executor.execute(task, ctx)
            with contextlib.suppress(Exception):
                await ctx.flush()
        except Cancelled:
            result = None
            self.stats.cancelled += 1
        except asyncio.CancelledError:
            if running.shutdown:
                raise  # engine shutdown: what is unfinished is left to recovery
            if not running.forced:
                raise
            result = None
            self.stats.cancelled += 1
        except Exception as exc:  # an executor that raises is a failed attempt
            log.exception("task %s (%s) raised", task.id, task.type)
            result = ExecuteResult(
                error=f"{type(exc).__name__}: {exc}", error_type=ErrorType.EXECUTOR_ERROR
            )
        finally:
            try:
                if result is not None:
                    await asyncio.shield(self._record(running, result))
                elif executor is not None and not running.shutdown:
                    await executor.on_task_failed(
                        task, ExecuteResult(error="cancelled", error_type=ErrorType.CANCELLED)
                    )
            finally:
                self._running.pop(task.id, None)
                self.wake()

    async def _record(self, running: _Running, result: ExecuteResult) -> None:
        task, token = running.claimed.task, running.claimed.lease_token
        if result.ok:
            if await self.store.complete(task.id, token, result.result):
                self.stats.completed += 1
            return
        outcome = await self.store.fail(
            task.id, token, result.error or "failed", result.error_type or "EXECUTOR_ERROR"
        )
        if not outcome.applied:
            return
        if outcome.retried:
            self.stats.retried += 1
            return
        self.stats.failed += 1
        if running.executor is not None:
            try:
                await running.executor.on_task_failed(task, result)
            except Exception:
                log.exception("on_task_failed of %s raised", task.id)

    # --- heartbeats ----------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            if not self._running:
                continue
            try:
                beat = await self.store.heartbeat(self.worker_id, list(self._running))
            except Exception:
                log.exception("heartbeat failed")
                continue
            for task_id in beat.lost:  # cancelled by another process, or taken over
                if (r := self._running.get(task_id)) is not None:
                    self._signal_cancel(r)
            for task_id in beat.held:
                r = self._running.get(task_id)
                if r is None or r.ctx is None:
                    continue
                if task_id in beat.paused:
                    r.ctx.resume_event.clear()
                else:
                    r.ctx.resume_event.set()
            self._check_stalls()

    def _check_stalls(self) -> None:
        now = time.monotonic()
        for r in list(self._running.values()):
            if r.ctx is None or r.executor is None or r.ctx.paused:
                continue
            if now - r.ctx.last_report > r.executor.stall_timeout:
                log.warning("task %s stalled; failing the attempt", r.claimed.id)
                job = asyncio.create_task(self._fail_stalled(r))
                self._background.add(job)
                job.add_done_callback(self._background.discard)

    async def _fail_stalled(self, r: _Running) -> None:
        timeout = r.executor.stall_timeout if r.executor else 0
        await self.store.fail(
            r.claimed.id,
            r.claimed.lease_token,
            f"no progress for {timeout:.0f} s",
            ErrorType.STALLED,
        )
        self._signal_cancel(r)

    # --- control -------------------------------------------------------------------------

    def _signal_cancel(self, r: _Running) -> None:
        if r.ctx is not None:
            r.ctx.cancel_event.set()
            r.ctx.resume_event.set()
        if r.job is not None and not r.job.done():
            loop = asyncio.get_running_loop()
            loop.call_later(self.cancel_grace, self._force_cancel, r)

    def _force_cancel(self, r: _Running) -> None:
        if r.job is not None and not r.job.done():
            log.warning(
                "task %s ignored its cancel for %.0f s; forcing", r.claimed.id, self.cancel_grace
            )
            r.forced = True
            r.job.cancel()

    async def cancel(self, some_id: str) -> list[str]:
        """Cancel a task or a run; the running tasks this engine holds are signalled."""
        target = await self.store.find(some_id)
        if isinstance(target, RunRecord):
            outcome = await self.store.cancel_run(target.id)
        else:
            outcome = await self.store.cancel(target.id)
        for task_id in outcome.was_running:
            if (r := self._running.get(task_id)) is not None:
                self._signal_cancel(r)
        self.wake()
        return list(outcome.cancelled)

    async def pause(self, some_id: str) -> list[str]:
        return await self._set_paused(some_id, True)

    async def resume(self, some_id: str) -> list[str]:
        return await self._set_paused(some_id, False)

    async def _set_paused(self, some_id: str, paused: bool) -> list[str]:
        target = await self.store.find(some_id)
        if isinstance(target, RunRecord):
            changed = await self.store.set_run_paused(target.id, paused)
        else:
            changed = [target.id] if await self.store.set_paused(target.id, paused) else []
        for task_id in changed:
            r = self._running.get(task_id)
            if r is not None and r.ctx is not None:
                if paused:
                    r.ctx.resume_event.clear()
                else:
                    r.ctx.resume_event.set()
        self.wake()
        return changed

    def pause_queue(self) -> None:
        """Stop claiming; what runs goes on ("pause after current")."""
        self._queue_paused = True

    def resume_queue(self) -> None:
        self._queue_paused = False
        self.wake()

    @property
    def running_ids(self) -> list[str]:
        return list(self._running)

    async def stop(self, drain_timeout: float = 10.0) -> None:
        """Stop claiming, let running tasks checkpoint and finish for ``drain_timeout``, then
        stop the rest without writing anything: recovery picks them up at the next start."""
        self._stopping = True
        self.wake()
        for r in self._running.values():
            if r.ctx is not None:
                with contextlib.suppress(Exception):
                    await r.ctx.flush()
        jobs = [r.job for r in self._running.values() if r.job is not None]
        if jobs:
            _, pending = await asyncio.wait(jobs, timeout=drain_timeout)
            for r in list(self._running.values()):
                if r.job in pending:
                    r.shutdown = True
                    r.job.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5)
