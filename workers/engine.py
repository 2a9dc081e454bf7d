"""The WorkerEngine: takes slots, claims work, runs executors, records what became of them.

Pure asyncio, no Qt. Concurrency is bounded twice: ``max_workers`` for everything together and
slots per resource class (``gpu`` 1, ``cpu`` one per core, ``net`` 4, ``io`` 4 by default). The
engine counts its free slots *before* claiming and claims only what it can start at once. The
rules of the slots — who holds one, when a paused attempt lends its slot, who gets a freed one
— are :mod:`workers.slots`; this module wires them to the event loop.

One loop owns the engine's writes to the queue. Each turn is one transaction
(:meth:`TaskStore.tick`): the outcomes of every attempt that finished since the last turn
(group commit: one fsync for all of them) and the claim, started at once, of as many ready
tasks as there are free slots. A child task is therefore claimed in the very commit that
completes its parent.

Wake-ups are events: a finished attempt, a submission through :meth:`wake`, a resume or a
cancel wakes the loop at once; a timer wakes it when the next retry is due; polling (1 s
backing off to 5 s) only catches writes made by other processes.
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
from typing import Any

from workers.engine_control import ControlChannels
from workers.engine_shared import SharedQueue
from workers.errors import FredicaError, SpecError, StoreUnavailable
from workers.events import (
    EngineHeld,
    EventBus,
    Notification,
    RunChanged,
    TaskChanged,
    TaskEventKind,
)
from workers.executor import Cancelled, ExecuteResult, ExecutionContext, TaskExecutor
from workers.faults import crash_point
from workers.records import (
    ClaimedTask,
    Completion,
    FailOutcome,
    Failure,
    HeartbeatOutcome,
    ProgressWrite,
    RecoveryReport,
    TaskRecord,
)
from workers.retention import PruneReport, RetentionPolicy
from workers.running import EngineStats, Running, default_slots
from workers.slots import SlotTable
from workers.spec import PreparedTask, prepare_tasks
from workers.states import PAUSING, ErrorType, RunStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry

#: While the database cannot be written (a full disk, a lock kept by another program), a
#: write is tried again after this many seconds, doubling up to the longest.
HOLD_FIRST = 1.0
HOLD_LONGEST = 15.0

log = logging.getLogger(__name__)


class WorkerEngine(ControlChannels, SharedQueue):
    def __init__(
        self,
        store: TaskStore,
        executors: Iterable[TaskExecutor],
        *,
        worker_id: str | None = None,
        max_workers: int = 4,
        slots: Mapping[str, int] | None = None,
        bus: EventBus | None = None,
        registry: TaskTypeRegistry | None = None,
        heartbeat_interval: float = 5.0,
        cancel_grace: float = 5.0,
        poll_min: float = 1.0,
        poll_max: float = 5.0,
        watch_interval: float = 0.5,
        max_interruptions: int = 5,
        hold_interrupted: bool = False,
        retention: RetentionPolicy | None = None,
        home_id: str | None = None,
        build: str = "",
    ) -> None:
        self.store = store
        self.executors = {e.task_type.name: e for e in executors}
        self._has_inline = any(getattr(e, "inline", False) for e in self.executors.values())
        #: Task types new tasks may have (fan-out): the executors' and the registry's.
        self.registry = TaskTypeRegistry()
        for t in [*(registry or ()), *(e.task_type for e in self.executors.values())]:
            if t.name not in self.registry:
                self.registry.register(t)
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        #: This host's data directory as a stable id (a shared database: start-up recovery
        #: takes over what this home's earlier engines held, and nothing of another's). None:
        #: this engine alone is its home (it takes over only leases that ran out).
        self.home_id = home_id or self.worker_id
        #: The Fredica version this engine is part of (``fredica hosts``).
        self.build = build
        #: The slots of the attempts this engine runs, keyed by lease token.
        self._slots = SlotTable(max_workers, {**default_slots(), **(slots or {})})
        self.bus = bus or EventBus()
        self.heartbeat_interval = heartbeat_interval
        self.cancel_grace = cancel_grace
        self.poll_min = poll_min
        self.poll_max = poll_max
        self.watch_interval = watch_interval
        #: Recovery: crashes a task may live through before it fails ``INTERRUPTED``.
        self.max_interruptions = max_interruptions
        #: Recovery: hold interrupted work for the user's review instead of resuming it.
        self.hold_interrupted = hold_interrupted
        self.stats = EngineStats()
        self.session_id = str(uuid.uuid4())
        self.recovery: RecoveryReport | None = None
        #: Attempts this engine runs, by lease token: a task may have two at once (the one
        #: winding down after a stall or a cancel, and the next, which waits for it).
        self._running: dict[str, Running] = {}
        #: The latest attempt of each task, by task id.
        self._current: dict[str, Running] = {}
        self._finished: list[tuple[Running, ExecuteResult | None]] = []
        #: Attempts with progress to write at the next turn, by lease token.
        self._progress_due: dict[str, Running] = {}
        self._wake = asyncio.Event()
        self._notified = False  # woken by another host's commit: read what changed
        self._bound_loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._queue_paused = False
        self._claim_hint = True  # something may be claimable: try a claim on the next turn
        self._probe = False  # woken by the poll timer only: read before taking the write lock
        self._next_due: float | None = None  # the earliest retry due, as of our last write
        self._due_known = False
        self._background: set[asyncio.Task[None]] = set()
        self._started = False
        #: What the history keeps; None: the engine never prunes it.
        self.retention = retention
        self._pruned_at: float | None = None  # monotonic time of the last prune started
        self.last_prune: PruneReport | None = None
        #: Set when the database failed under the engine for a reason that does not pass by
        #: itself (read-only, an I/O error, the file replaced): the engine stops, and
        #: :meth:`run` raises it. A full disk or a lock holds it instead (:attr:`held`).
        self._fatal: StoreUnavailable | None = None
        #: Set while the database cannot be written for a reason that passes by itself (a
        #: full disk, a lock another program keeps): nothing new is claimed, what finished
        #: is kept to record, and a write is tried again at ``_held_until`` (monotonic).
        self.held: StoreUnavailable | None = None
        self._held_until = 0.0
        self._held_wait = HOLD_FIRST
        #: Asked to finish what it runs and claim nothing more (``fredica drain``).
        self.draining = False
        #: When our leases were last renewed (monotonic): an engine that cannot renew them
        #: stops its attempts before they run out (another engine then takes them over).
        self._renewed_at = time.monotonic()
        self._registered = False

    @property
    def max_workers(self) -> int:
        """How many attempts may hold a slot at once, whatever their class."""
        return self._slots.max_workers

    @property
    def slots(self) -> dict[str, int]:
        """Slots per resource class."""
        return self._slots.slots

    # --- life cycle ----------------------------------------------------------------------

    async def start(self, *, recover: bool = True) -> RecoveryReport | None:
        """Bind to the running loop and, with ``recover``, take over what a previous session
        left unfinished. Returns only once recovery is done. The caller must hold the data
        directory's lock (no other engine on this database)."""
        loop = asyncio.get_running_loop()
        self.bus.bind(loop)
        self._bound_loop = loop
        self.store.run_listeners.append(self._on_run_changes)
        self._started = True
        await self.store.data_changed()  # the baseline: later commits of others are seen
        self.store.add_wakeup(self._on_wakeup)  # a shared database: others' commits at once
        log.info(
            "engine %s started: max_workers %d, slots %s",
            self.session_id,
            self.max_workers,
            self.slots,
        )
        if self.store.shared:
            await self._register()
        if recover:
            resumable = [name for name, e in self.executors.items() if e.resumable]
            in_process = [name for name, e in self.executors.items() if e.in_process]
            self.recovery = await self.store.recover(
                self.session_id,
                resumable,
                in_process_types=in_process,
                max_interruptions=self.max_interruptions,
                hold=self.hold_interrupted,
                home=self.home_id if self.store.shared else None,
                worker_id=self.worker_id,
            )
            if self.recovery.total:
                log.info("recovery: %s", self.recovery)
                self.bus.publish(
                    Notification(
                        "Recovered unfinished work",
                        self.recovery.summary,
                        "warning" if self.recovery.failed or self.recovery.held else "info",
                    )
                )
        return self.recovery

    def _on_run_changes(self, changes: list[tuple[str, RunStatus]]) -> None:
        # Called on the store's writer thread.
        for run_id, status in changes:
            self.bus.publish_threadsafe(RunChanged(run_id, status.value))
            if status is RunStatus.COMPLETED:
                note = Notification("Run completed", f"run {run_id} completed", "info", run_id)
            elif status is RunStatus.FAILED:
                note = Notification("Run failed", f"run {run_id} failed", "error", run_id)
            elif status is RunStatus.CANCELLED:
                note = Notification("Run cancelled", f"run {run_id} cancelled", "warning", run_id)
            else:
                continue
            self.bus.publish_threadsafe(note)

    async def run(self, *, until_idle: bool = False) -> None:
        """Claim and run tasks until :meth:`stop` (or, with ``until_idle``, until nothing is
        running, claimable or waiting for a retry timer; held tasks do not count).

        Raises :class:`StoreUnavailable` when the database fails under it for a reason that
        does not pass by itself (no task's fault): its running attempts are stopped without
        writing anything, for recovery to resume at the next start. A full disk or a lock held
        by another program is waited out (:attr:`held`)."""
        if not self._started:
            await self.start(recover=False)
        self._claim_hint = True  # whatever happened since the last run, look first
        heartbeat = asyncio.create_task(self._heartbeat_loop(), name="fredica-heartbeat")
        try:
            while self._fatal is None:
                try:
                    await self._loop(until_idle)
                    break
                except StoreUnavailable as exc:
                    self._fail_engine(exc)  # held (and the loop goes on), or fatal
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        if self._fatal is not None:
            await self._abandon()
            raise self._fatal

    def _fail_engine(self, exc: StoreUnavailable) -> None:
        if exc.waitable and not self._stopping:
            self._hold(exc)
            return
        if self._fatal is None:
            # Raised to whoever runs the engine, which tells the user: the log keeps it, a
            # terminal gets it once.
            log.info("the database failed; stopping the engine: %s", exc)
            self._fatal = exc
        self._wake.set()

    def _hold(self, exc: StoreUnavailable) -> None:
        """The database cannot be written for now: claim nothing, keep what finished, try
        again later (backing off), and tell the user once."""
        if self.held is None:
            log.info("the database cannot be written; claiming nothing new: %s", exc)
            self.bus.publish(EngineHeld(str(exc)))
            self.bus.publish(
                Notification(
                    "Fredica is waiting",
                    f"{exc}. Running tasks go on; nothing new starts until it can be written.",
                    "warning",
                )
            )
            self._held_wait = HOLD_FIRST
        else:
            self._held_wait = min(HOLD_LONGEST, self._held_wait * 2)
        self.held = exc
        self._held_until = time.monotonic() + self._held_wait

    def _release_hold(self) -> None:
        if self.held is not None:
            log.info("the database can be written again; claiming again")
            self.bus.publish(EngineHeld(None))
            self.bus.publish(
                Notification("Fredica goes on", "The database can be written again.", "info")
            )
            self.held = None
            self._claim_hint = True

    async def _abandon(self) -> None:
        """After a database failure: stop every attempt without writing anything (what ran
        is left to recovery), bounded in time."""
        self._stopping = True
        self._finished.clear()
        jobs = []
        for r in list(self._running.values()):
            r.shutdown = True
            if r.job is not None and not r.job.done():
                r.job.cancel()
                jobs.append(r.job)
        if jobs:
            await asyncio.wait(jobs, timeout=5)
        self._running.clear()
        self._current.clear()
        self._slots.clear()
        self._progress_due.clear()

    async def _loop(self, until_idle: bool) -> None:
        poll = self.poll_min
        while self._fatal is None:
            self._wake.clear()
            progressed = await self._turn()
            if self._stopping and self.held is not None:
                self._finished.clear()  # not recorded: left to recovery, as after a crash
            if self._stopping and not self._running and not self._finished:
                return
            if self.held is not None:
                # Nothing is claimed until a write goes through again; what runs goes on.
                await self._wait(max(0.0, self._held_until - time.monotonic()))
                continue
            if progressed:
                poll = self.poll_min
                continue
            if not self._running and not self._finished:
                self._maybe_prune()
            due = None
            if not self._queue_paused and not self.draining:
                due = self._next_due if self._due_known else await self.store.next_retry_at()
            if until_idle and not self._running and not self._finished and due is None:
                return
            if due is not None and due <= self.store.now() and not self._slots.free()[1]:
                due = None  # due, but no slot to run it in: a finishing attempt wakes us
            timeout = poll
            if due is not None:
                timeout = max(0.0, min(timeout, due - self.store.now()))
            if await self._wait(timeout):
                poll = self.poll_min
            else:
                poll = min(self.poll_max, poll * 2)
                self._probe = not self._claim_hint
                self._due_known = False
            self._claim_hint = True

    async def _wait(self, seconds: float) -> bool:
        """Wait for a wake-up, at most ``seconds``. Meanwhile, every
        ``watch_interval`` look (cheaply) whether another process committed something, and
        if so return as woken: a submission from the CLI starts within a second. True when
        woken, False on timeout."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                async with asyncio.timeout(min(left, self.watch_interval)):
                    await self._wake.wait()
                if not self._notified:
                    return True
            except TimeoutError:
                pass
            self._notified = False
            if await self.store.data_changed():
                # Another process wrote: what is claimable or due may have changed, and a
                # pause, resume or cancel of a running task may have come (a read, no write).
                self._probe, self._due_known = True, False
                if self._running:
                    ids, asked = self._asked()
                    self._apply_control(await self.store.control_state(self.worker_id, ids), asked)
                return True

    def wake(self) -> None:
        """Something changed (a submission, a resume…): look for work now."""
        self._claim_hint = True
        self._wake.set()

    def _on_wakeup(self) -> None:
        """Another host committed a change of the queue (a notification, on the store's
        listener thread): look now, as the poll would have a moment later."""
        loop = self._bound_loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._notify)

    def _notify(self) -> None:
        self._notified = True
        self._wake.set()

    def _maybe_prune(self) -> None:
        """Idle: delete what the retention policy no longer keeps, at most once per
        ``retention.every`` seconds, in the background (short transactions: a claim waits
        for one batch at most)."""
        policy = self.retention
        if policy is None or policy.keeps_everything or self._stopping:
            return
        now = time.monotonic()
        if self._pruned_at is not None and now - self._pruned_at < policy.every:
            return
        self._pruned_at = now
        self._background_call(self._prune(policy))

    async def _prune(self, policy: RetentionPolicy) -> None:
        report = await self.store.prune(policy)
        self.last_prune = report
        if report.removed:
            log.info("pruned the history: %s", report)

    async def _turn(self) -> bool:
        """One transaction: record finished attempts, claim into free slots. True when it
        did anything."""
        finished, self._finished = self._finished, []
        for r, _ in finished:
            self._forget(r)  # their slots are free for this claim
        if finished:
            self._claim_hint = True  # a completion may have unblocked its dependents
        # Resumed attempts waiting for a slot take free ones before new claims; they go on
        # once what freed the slots is recorded.
        granted = self._grant_waiting()
        if self.held is not None and time.monotonic() < self._held_until:
            self._finished[:0] = finished  # recorded once the database can be written
            return bool(granted)
        ticks = self.stats.ticks
        try:
            done = await self._record_and_claim(finished)
        except StoreUnavailable as exc:
            if not exc.waitable or self._stopping:
                raise
            self._finished[:0] = finished
            self._hold(exc)
            return bool(granted)
        else:
            if self.stats.ticks > ticks:  # a write went through
                self._release_hold()
            return done or bool(granted)
        finally:
            for r in granted:
                self._go_on(r)

    def _take_progress(self) -> list[ProgressWrite]:
        """The progress reported since the last turn, to write with this one."""
        due, self._progress_due = self._progress_due, {}
        writes = []
        for r in due.values():
            values, r.progress_due = r.progress_due, {}
            if values:
                writes.append(ProgressWrite(r.claimed.id, r.claimed.lease_token, values))
        return writes

    async def _record_and_claim(self, finished: list[tuple[Running, ExecuteResult | None]]) -> bool:
        limit, slots = 0, dict[str, int]()
        progress = self._take_progress()
        if self._claim_hint and not self._queue_paused and not self._stopping and not self.draining:
            limit, slots = self._slots.free()
            if not slots:
                limit = 0
            elif self._probe and not finished and not progress:
                # Only the poll timer woke us: look before taking the write lock, so that an
                # idle engine costs a read every few seconds, not a write and an fsync.
                self._probe = False
                if not await self.store.has_claimable(slots):
                    self._claim_hint = False
                    return False
        completions = [
            Completion(r.claimed.id, r.claimed.lease_token, res.result, r.new_tasks)
            for r, res in finished
            if res is not None and res.ok
        ]
        failed_runs = [(r, res) for r, res in finished if res is not None and not res.ok]
        failures = [
            Failure(
                r.claimed.id,
                r.claimed.lease_token,
                res.error or "failed",
                res.error_type or ErrorType.EXECUTOR_ERROR,
                res.retryable,
            )
            for r, res in failed_runs
        ]
        if not completions and not failures and limit <= 0 and not progress:
            for r, _ in finished:  # cancelled attempts: nothing to write
                self._after_cancel(r)
            return bool(finished)
        if completions or failures:
            crash_point("before_commit")
        # The transaction runs to its end even if this coroutine is cancelled; shield it so
        # that what it claimed is always started.
        outcome = await asyncio.shield(
            self.store.tick(
                self.worker_id,
                completions=completions,
                failures=failures,
                slots=slots,
                limit=limit,
                inline=self._inline if self._has_inline else None,
                progress=progress,
            )
        )
        self.stats.ticks += 1
        self._next_due, self._due_known = outcome.next_retry_at, True
        if completions or failures:
            crash_point("after_commit")
        if outcome.claimed:
            crash_point("after_claim")
        self._report(finished, outcome.completed, failed_runs, outcome.failed)
        by_id = {r.claimed.id: r for r, _ in finished}
        for failure, failed_outcome in outcome.rejected:
            r = by_id[failure.task_id]
            res = ExecuteResult(error=failure.error, error_type=failure.error_type)
            self._report([(r, res)], (), [(r, res)], (failed_outcome,))
        for c in outcome.inline:
            task = c.task
            self.bus.publish(TaskChanged(task.id, task.workflow_run_id, "started", 0.0))
            self.bus.publish(
                TaskChanged(task.id, task.workflow_run_id, "completed", 100.0, task_type=task.type)
            )
        self.stats.claimed += len(outcome.inline)
        self.stats.completed += len(outcome.inline)
        self.stats.inline += len(outcome.inline)
        for c in outcome.claimed:
            self._start(c)
        self.stats.claimed += len(outcome.claimed)
        if limit > 0 and outcome.exhausted:
            self._claim_hint = False  # nothing more to claim until something changes
        return bool(finished or outcome.claimed or outcome.inline)

    def _inline(self, claimed: ClaimedTask) -> dict[str, Any] | None:
        """On the store's thread, inside the claiming transaction: the result of a task whose
        executor runs inline, or None to start it the usual way (any doubt — a skip to check,
        a payload to reject, an exception — goes the usual way, which reports it)."""
        task = claimed.task
        executor = self.executors.get(task.type)
        if executor is None or not getattr(executor, "inline", False):
            return None
        if task.payload.get("check_skip"):
            return None
        try:
            payload = executor.task_type.parse_payload(task.payload)
            result: dict[str, Any] | None = executor.execute_inline(task, payload)  # type: ignore[attr-defined]
        except Exception:
            return None
        return result

    def _report(
        self,
        finished: list[tuple[Running, ExecuteResult | None]],
        completed: tuple[bool, ...],
        failed_runs: list[tuple[Running, ExecuteResult]],
        failed: tuple[FailOutcome, ...],
    ) -> None:
        ok = iter(completed)
        for r, res in finished:
            task = r.claimed.task
            if res is None:
                self._after_cancel(r)
            elif res.ok and next(ok):
                self.stats.completed += 1
                self.bus.publish(
                    TaskChanged(
                        task.id,
                        task.workflow_run_id,
                        "completed",
                        100.0,
                        task_type=task.type,
                        material_id=task.material_id,
                        result=res.result,
                    )
                )
        for (r, res), outcome in zip(failed_runs, failed, strict=True):
            task = r.claimed.task
            if not outcome.applied:
                continue
            log.info(
                "task %s (%s) attempt %d failed%s: [%s] %s",
                task.id,
                task.type,
                task.attempt,
                ", to be retried" if outcome.retried else "",
                res.error_type,
                res.error,
            )
            if outcome.retried:
                self.stats.retried += 1
                self.bus.publish(
                    TaskChanged(
                        task.id,
                        task.workflow_run_id,
                        "retry",
                        error=res.error,
                        error_type=res.error_type,
                    )
                )
                continue
            self.stats.failed += 1
            self.bus.publish(
                TaskChanged(
                    task.id,
                    task.workflow_run_id,
                    "failed",
                    error=res.error,
                    error_type=res.error_type,
                )
            )
            if r.executor is not None:
                self._background_call(r.executor.on_task_failed(task, res))

    def _after_cancel(self, r: Running) -> None:
        if r.stalled:
            return  # recorded and reported as a failed attempt already
        self.stats.cancelled += 1
        task = r.claimed.task
        self.bus.publish(TaskChanged(task.id, task.workflow_run_id, "cancelled"))
        if r.executor is not None and not r.shutdown:
            self._background_call(
                r.executor.on_task_failed(
                    task, ExecuteResult(error="cancelled", error_type=ErrorType.CANCELLED)
                )
            )

    def _background_call(self, coro: object) -> None:
        async def guarded() -> None:
            try:
                await coro  # type: ignore[misc]
            except StoreUnavailable as exc:
                self._fail_engine(exc)
            except Exception:
                log.exception("background callback failed")

        job = asyncio.create_task(guarded())
        self._background.add(job)
        job.add_done_callback(self._background.discard)

    # --- one attempt ---------------------------------------------------------------------

    def _start(self, claimed: ClaimedTask) -> None:
        seat = self._slots.add(claimed.lease_token, claimed.task.resource)
        running = Running(claimed, self.executors.get(claimed.task.type), seat)
        previous = self._current.get(claimed.id)
        if previous is not None and previous.job is not None and not previous.job.done():
            running.previous = previous
        self._running[claimed.lease_token] = running
        self._current[claimed.id] = running
        running.job = asyncio.create_task(self._execute(running), name=f"task-{claimed.id}")
        running.job.add_done_callback(lambda _: self._ended(running, None))
        task = claimed.task
        self.bus.publish(TaskChanged(task.id, task.workflow_run_id, "started", task.progress))

    def _forget(self, r: Running) -> None:
        self._running.pop(r.token, None)
        self._slots.discard(r.token)
        if self._current.get(r.claimed.id) is r:
            del self._current[r.claimed.id]

    def _ended(self, r: Running, result: ExecuteResult | None) -> None:
        """Hand an attempt's end to the loop, once (also when its job was cancelled before
        it began to run, so that its ``finally`` never ran)."""
        if r.ended:
            return
        r.ended = True
        if r.shutdown:
            self._forget(r)  # nothing to write: recovery takes it over
        else:
            self._finished.append((r, result))
        self._wake.set()

    async def _execute(self, running: Running) -> None:
        claimed, executor = running.claimed, running.executor
        task, token = claimed.task, claimed.lease_token
        result: ExecuteResult | None = None
        try:
            if running.previous is not None and running.previous.job is not None:
                # The earlier attempt still winds down (a stall retry, a cancel then a retry):
                # it may still write its outputs. Start once it has stopped.
                log.info("task %s: waiting for its previous attempt to stop", task.id)
                await asyncio.wait({running.previous.job})
                running.previous = None
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
            upstream = claimed.upstream

            async def sink(**values: object) -> bool:
                progress = values.get("progress")
                text = values.get("status_text")
                if isinstance(text, str):
                    running.last_text = text
                    if self._pausing(running) and not text.startswith("paused"):
                        # Asked to pause, the job still works: it is not paused yet.
                        values["status_text"] = text = f"{PAUSING} ({text})"
                self.bus.publish(
                    TaskChanged(
                        task.id,
                        task.workflow_run_id,
                        "progress",
                        progress if isinstance(progress, float | int) else None,
                        text if isinstance(text, str) else None,
                    )
                )
                if "checkpoint" not in values:
                    # Written with the next turn, which this wakes: a task that reports and
                    # ends at once (and its neighbours) costs one commit, not two.
                    running.progress_due.update(values)
                    self._progress_due[token] = running
                    self._wake.set()
                    return True
                # A checkpoint is what a next attempt resumes from: written before the job
                # goes on, with what was waiting.
                values = {**running.progress_due, **values}
                running.progress_due.clear()
                self._progress_due.pop(token, None)
                try:
                    return await self.store.report_progress(task.id, token, **values)  # type: ignore[arg-type]
                except StoreUnavailable as exc:  # no fault of the task: the engine stops
                    self._fail_engine(exc)
                    return True

            async def pause_sink(paused: bool, reason: str | None) -> None:
                running.pause_reason = reason if paused else None
                running.parked = False  # a new pause (or none): not stopped for it yet
                if not paused:  # the job resumed by itself: it runs, so it holds its slot
                    self._slots.running(running.token)
                try:
                    await self.store.set_paused(task.id, paused, reason)
                except StoreUnavailable as exc:
                    self._fail_engine(exc)
                except FredicaError:  # finished meanwhile: nothing to mark
                    pass
                kind: TaskEventKind = "paused" if paused else "resumed"
                self.bus.publish(
                    TaskChanged(task.id, task.workflow_run_id, kind, status_text=reason)
                )

            ctx = running.ctx = ExecutionContext(
                task,
                payload,
                upstream,
                sink,
                pause_sink,
                _park_sink=lambda held: self._parked(running, held),
                _finish_sink=lambda: self._finishing(running),
            )
            if payload.check_skip and await executor.can_skip(task):
                result = ExecuteResult(result=executor.skipped_result(task))
                return
            result = await executor.execute(task, ctx)
            if not result.ok:
                # The retry resumes from the last checkpoint: write what is pending. A success
                # needs no such write (its completion sets the progress to 100).
                with contextlib.suppress(Exception):
                    await ctx.flush()
            if result.ok and result.new_tasks:
                running.new_tasks, result = self._prepare_fan_out(task, result)
        except Cancelled:
            result = None
        except asyncio.CancelledError:
            if running.shutdown or not running.forced:
                raise  # engine shutdown: what is unfinished is left to recovery
            result = None
        except Exception as exc:  # an executor that raises is a failed attempt
            log.exception("task %s (%s) raised", task.id, task.type)
            result = ExecuteResult(
                error=f"{type(exc).__name__}: {exc}", error_type=ErrorType.EXECUTOR_ERROR
            )
        finally:
            self._ended(running, result)

    def _prepare_fan_out(
        self, task: TaskRecord, result: ExecuteResult
    ) -> tuple[tuple[PreparedTask, ...], ExecuteResult]:
        new_keys = {t.key for t in result.new_tasks}
        outside = frozenset(d for t in result.new_tasks for d in t.depends_on) - new_keys
        try:
            prepared = prepare_tasks(
                list(result.new_tasks),
                self.registry,
                material_id=task.material_id,
                known=outside,
            )
        except SpecError as exc:
            return (), ExecuteResult(
                error=f"fan-out rejected: {exc}", error_type=ErrorType.BAD_RESULT, retryable=False
            )
        return prepared, result

    # --- heartbeats ----------------------------------------------------------------------

    def _asked(self) -> tuple[list[str], frozenset[str]]:
        """What to ask the queue about: the running tasks' ids, and the attempts (lease
        tokens) the answer will be about."""
        return self.running_ids, frozenset(self._running)

    def _apply_control(self, beat: HeartbeatOutcome, asked: frozenset[str]) -> None:
        """Bring running attempts in line with what the queue says of them. An attempt whose
        lease token is no longer the task's has lost it (cancelled by another process,
        perhaps retried and claimed again since: the task id alone would not tell).

        Only the attempts that ran when the question was asked (``asked``: their lease
        tokens) are judged: one claimed while the read or the heartbeat was on its way is not
        in the answer, and is not lost for that — taken for lost, it would be stopped and
        left ``running`` in the queue, written by nobody (a worker ``--until-idle`` then
        exited with it so)."""
        for r in list(self._running.values()):
            if r.token not in asked:
                continue
            task_id = r.claimed.id
            if task_id not in beat.held or beat.tokens.get(task_id, r.token) != r.token:
                if not (r.ctx is not None and r.ctx.cancelled):
                    self._signal_cancel(r)
            elif r.ctx is not None:
                # A change another process wrote (the engine's own are published where they
                # are made): said on the bus like those, once, for its subscribers.
                paused, was = task_id in beat.paused, r.ctx.paused
                if paused:
                    self._pause_running(r)
                else:
                    self._resume_running(r)
                if paused != was:
                    run_id = r.claimed.task.workflow_run_id
                    self.bus.publish(
                        TaskChanged(task_id, run_id, "paused" if paused else "resumed")
                    )

    def _check_stalls(self) -> None:
        now = time.monotonic()
        for r in list(self._running.values()):
            if r.ctx is None or r.executor is None or r.ctx.paused or r.ctx.cancelled:
                continue
            if now - r.ctx.last_report > r.executor.stall_timeout:
                log.warning("task %s stalled; failing the attempt", r.claimed.id)
                r.stalled = True
                r.ctx.cancel_event.set()
                self._background_call(self._fail_stalled(r))

    async def _fail_stalled(self, r: Running) -> None:
        """A stall is a failed attempt, recorded and reported as one (retried per policy);
        the executor is stopped like a cancel, but its end is not reported as a cancel."""
        timeout = r.executor.stall_timeout if r.executor else 0
        res = ExecuteResult(
            error=f"stalled: no progress for {timeout:.0f} s", error_type=ErrorType.STALLED
        )
        outcome = await self.store.fail(
            r.claimed.id, r.token, res.error or "stalled", ErrorType.STALLED
        )
        self._signal_cancel(r)
        self._report([], (), [(r, res)], (outcome,))
        self.wake()

    # --- control -------------------------------------------------------------------------

    async def stop(self, drain_timeout: float = 10.0) -> None:
        """Stop claiming; let running tasks checkpoint and finish for ``drain_timeout`` (paused
        ones are not waited for); stop the rest without writing anything, for recovery to
        resume at the next start. Never writes a cancel: a shutdown is not the user's
        decision."""
        if not self._stopping:
            log.info("stopping: %d task(s) running", len(self._running))
        self._stopping = True
        self.wake()
        for r in list(self._running.values()):
            if r.ctx is not None:
                with contextlib.suppress(Exception):
                    await r.ctx.flush()
        jobs = [r.job for r in self._running.values() if r.job is not None and not r.job.done()]
        # A paused attempt will not finish while paused: do not wait for it.
        drained = [
            r.job
            for r in self._running.values()
            if r.job is not None and not r.job.done() and not (r.ctx is not None and r.ctx.paused)
        ]
        if jobs:
            if drained:
                await asyncio.wait(drained, timeout=drain_timeout)
            pending = {job for job in jobs if not job.done()}
            left: list[tuple[str, str]] = []  # (task id, lease token): left to recovery
            for r in list(self._running.values()):
                if r.job in pending:
                    r.shutdown = True
                    r.job.cancel()
                    left.append((r.claimed.id, r.token))
            if pending:
                await asyncio.wait(pending, timeout=5)
            if left and self._fatal is None:
                # A graceful stop, not a crash: recovery counts no interruption for these.
                try:
                    await self.store.release_for_shutdown(
                        left,
                        requeue=self.store.shared,
                        session_id=self.session_id,
                        resumable_types=[n for n, e in self.executors.items() if e.resumable],
                    )
                except StoreUnavailable as exc:
                    self._fail_engine(exc)  # then the next start counts one: no harm
        if self._finished and self._fatal is None:  # record what finished during the drain
            self._claim_hint = False
            try:
                await self._turn()
            except StoreUnavailable as exc:
                self._fail_engine(exc)  # what finished is left to recovery
        for job in list(self._background):
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await job
        for executor in self.executors.values():
            release = getattr(executor, "release", None)  # optional: BaseExecutor's
            if release is not None:
                with contextlib.suppress(Exception):
                    await release()
        if self._registered and self._fatal is None:
            self._registered = False
            with contextlib.suppress(StoreUnavailable):
                await self.store.worker_stopped(self.worker_id)
        self.store.remove_wakeup(self._on_wakeup)
        with contextlib.suppress(ValueError):
            self.store.run_listeners.remove(self._on_run_changes)
