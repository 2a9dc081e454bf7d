"""What an executor is, and what the engine hands it for one attempt.

An executor runs tasks of one type. It gets the task and an :class:`ExecutionContext`: the
cancel signal, the pause channel, a throttled progress reporter, a checkpoint saver and the
results of the tasks it depends on. It returns an :class:`ExecuteResult`; an exception it
raises is a failed attempt with the exception's text, never a dead engine.

Cancellation cannot be swallowed: :class:`Cancelled` derives from ``BaseException`` so that an
``except Exception`` in executor code does not catch it by accident.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from workers.records import TaskRecord
from workers.spec import TaskSpec
from workers.tasktypes import TaskPayload, TaskType


class Cancelled(BaseException):
    """Raised inside an executor when its task was cancelled."""


@dataclass(frozen=True, slots=True)
class ExecuteResult:
    result: dict[str, Any] | None = None
    error: str | None = None
    error_type: str | None = None
    #: False: fail for good whatever ``max_retries`` says (trying again cannot help).
    retryable: bool = True
    #: Dynamic fan-out: tasks to add to this task's run, atomically with its completion. Their
    #: ``depends_on`` name keys of tasks in the run (this one included) or of each other.
    new_tasks: tuple[TaskSpec, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class TaskExecutor(Protocol):
    """Runs the tasks of one type."""

    task_type: TaskType
    #: Whether an attempt interrupted by a crash can resume from its checkpoint.
    resumable: bool
    #: Seconds without any progress report after which the attempt counts as stalled.
    stall_timeout: float
    #: Whether the task's work runs in the engine's own process (so that it could take the
    #: engine down with it): only then is a crash of the engine charged to it.
    in_process: bool

    @property
    def resource(self) -> str: ...

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult: ...

    async def can_skip(self, task: TaskRecord) -> bool: ...

    def skipped_result(self, task: TaskRecord) -> dict[str, Any]: ...

    async def on_task_failed(self, task: TaskRecord, result: ExecuteResult) -> None: ...


class BaseExecutor:
    """Defaults for the optional parts of :class:`TaskExecutor`."""

    task_type: TaskType
    resumable = False
    stall_timeout = 3600.0
    in_process = True
    #: The executor's work is instantaneous and has nothing to report: the engine may run it
    #: inline (:meth:`execute_inline`, on the store's thread) inside the transaction that
    #: claims the task, and complete it in the same commit.
    inline = False

    def execute_inline(self, task: TaskRecord, payload: TaskPayload) -> dict[str, Any] | None:
        """The result of an inline executor's task, or None to run it the usual way. Must be
        quick, thread-safe and without side effects outside the task's result."""
        return None

    @property
    def resource(self) -> str:
        return self.task_type.resource

    async def can_skip(self, task: TaskRecord) -> bool:
        return False

    def skipped_result(self, task: TaskRecord) -> dict[str, Any]:
        """The result of a task that ``can_skip``: what it would have made is there."""
        return {"skipped": True}

    async def on_task_failed(self, task: TaskRecord, result: ExecuteResult) -> None:
        return None

    async def release(self) -> None:
        """Let go of what the executor keeps between tasks (open connections): the engine
        is stopping. Nothing by default."""
        return None


ProgressSink = Callable[..., Awaitable[bool]]
#: ``(paused, reason)``: the job itself asked for a pause (or resumed); the engine records it.
PauseSink = Callable[[bool, str | None], Awaitable[None]]


#: ``(held)``: the attempt has stopped for its pause (see :meth:`ExecutionContext.parked`).
ParkSink = Callable[[bool], None]


async def _no_pause_sink(paused: bool, reason: str | None) -> None:
    return None


def _no_park_sink(held: bool) -> None:
    return None


def _no_finish_sink() -> None:
    return None


@dataclass
class ExecutionContext:
    """One attempt's view of the engine. Created and torn down by the engine."""

    task: TaskRecord
    payload: TaskPayload
    upstream: dict[str, dict[str, Any] | None]
    _sink: ProgressSink
    _pause_sink: PauseSink = _no_pause_sink
    _park_sink: ParkSink = _no_park_sink
    _finish_sink: Callable[[], None] = _no_finish_sink
    cancel_event: asyncio.Event = field(default_factory=asyncio.Event)
    resume_event: asyncio.Event = field(default_factory=asyncio.Event)
    #: Minimum seconds between two progress writes to the database.
    progress_interval: float = 0.5
    checkpoint: dict[str, Any] | None = None
    last_report: float = field(default_factory=time.monotonic)
    #: The first throttled write comes ``progress_interval`` after the start, as every later
    #: one: at most ~2 writes a second per task, counting from the start.
    _last_write: float = field(default_factory=time.monotonic)
    _pending: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.checkpoint = self.task.checkpoint
        if not self.task.is_paused:
            self.resume_event.set()

    # --- signals ------------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    @property
    def paused(self) -> bool:
        return not self.resume_event.is_set()

    def check_cancelled(self) -> None:
        if self.cancel_event.is_set():
            raise Cancelled(self.task.id)

    def parked(self, held: bool = False) -> None:
        """The attempt has stopped for its pause. Unless ``held`` (it still holds its
        resources: a model in GPU memory), the engine lends its slot to other work until it is
        resumed — when it may have to wait for a free slot first (the rule: nothing holds a
        slot while paused unless its executor says its resources are still held)."""
        if self.paused:
            self._park_sink(held)

    def finishing(self) -> None:
        """The attempt's heavy part is done (its ffmpeg has exited; what is left is checking
        and committing the output): the engine gives its class's slot to the next task, and
        the attempt keeps its place in ``max_workers`` until it ends (see
        :meth:`workers.slots.SlotTable.finishing`)."""
        self._finish_sink()

    async def wait_if_paused(self) -> None:
        """Return at once when running; while paused, wait for resume (or raise on cancel).
        Waiting here holds nothing: the slot is lent meanwhile (:meth:`parked`)."""
        self.check_cancelled()
        if not self.resume_event.is_set():
            self.parked()
        while not self.resume_event.is_set():
            waiter = asyncio.ensure_future(self.resume_event.wait())
            canceller = asyncio.ensure_future(self.cancel_event.wait())
            try:
                await asyncio.wait({waiter, canceller}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                canceller.cancel()
            self.check_cancelled()

    async def sleep(self, seconds: float) -> None:
        """Sleep, waking early (with :class:`Cancelled`) when the task is cancelled."""
        try:
            async with asyncio.timeout(seconds):
                await self.cancel_event.wait()
        except TimeoutError:
            return
        raise Cancelled(self.task.id)

    async def request_pause(self, reason: str) -> None:
        """The job asks to be paused (GPU out of memory, disk nearly full): the task is marked
        paused with the reason, and stays so until the user (or the job) resumes it."""
        self.resume_event.clear()
        await self._pause_sink(True, reason)

    async def request_resume(self) -> None:
        """The job resumed by itself after its own pause request."""
        self.resume_event.set()
        await self._pause_sink(False, None)

    # --- reporting ----------------------------------------------------------------------

    async def report(
        self,
        progress: float | None = None,
        status_text: str | None = None,
        *,
        checkpoint: dict[str, Any] | None = None,
        is_pausable: bool | None = None,
        force: bool = False,
        status_parts: list[dict[str, Any]] | None = None,
    ) -> None:
        """Report progress and/or save a checkpoint; written at most every
        ``progress_interval`` seconds unless ``force`` (the latest values win).
        ``status_parts``: the status text as message ids and arguments, when the job said it
        so (a text without them is plain)."""
        self.last_report = time.monotonic()
        if progress is not None:
            self._pending["progress"] = progress
        if status_text is not None:
            self._pending["status_text"] = status_text
            self._pending["status_parts"] = status_parts
        if checkpoint is not None:
            self.checkpoint = checkpoint
            self._pending["checkpoint"] = checkpoint
        if is_pausable is not None and is_pausable != self.task.is_pausable:
            self._pending["is_pausable"] = is_pausable
        now = time.monotonic()
        if self._pending and (force or now - self._last_write >= self.progress_interval):
            values, self._pending = self._pending, {}
            self._last_write = now
            await self._sink(**values)

    async def flush(self) -> None:
        await self.report(force=True)
