"""Task endpoints: a job behind one websocket connection.

Two kinds of job:

- :class:`LoopEndpoint` — runs in the server's event loop (I/O-bound work). It gets a
  :class:`LoopContext`: ``report_progress``, cooperative ``wait_if_paused``,
  ``request_pause(reason)`` / ``request_resume()``, a cancel signal.
- :class:`ProcessEndpoint` — runs a top-level function in a child process (CPU/GPU-bound
  work), forked by a fork server or spawned (:mod:`python_endpoints.serving.starting`).
  The child gets a :class:`ChildContext` over a ``status_queue``, a ``cancel_event`` and a
  ``resume_event``. To ask for a pause itself the child clears ``resume_event``, then puts
  ``pause_request``, then waits — in that order, so a resume can never be lost between the
  request and the wait.

Cancel: set the cancel event and the resume event, wait a grace period, then terminate and kill
the whole process tree, remove partial outputs, send ``cancelled``. A child that exits with a
non-zero code or by a signal yields exactly one ``error`` frame naming it; one that exits 0
without a result yields an ``error`` too. No orphan: the child exits when its parent dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import multiprocessing.synchronize
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from python_endpoints.errorcodes import ErrorType
from python_endpoints.protocol import (
    Error,
    JobFrame,
    Pausable,
    Paused,
    PauseRequest,
    Progress,
    Result,
    ResumeRequest,
)
from python_endpoints.serving import logfile, procs, reaper, starting
from python_endpoints.serving.child import (
    ChildContext,
    ChildTarget,
    JobCancelled,
    JobFailed,
    _child_main,
)
from python_endpoints.status import parts_of

log = logging.getLogger(__name__)

#: Waits before starting a job's child again when the fork server was found dead.
FORK_SERVER_WAITS = (0.05, 0.2, 0.5)

Emit = Callable[[JobFrame], Awaitable[None]]


class TaskEndpoint:
    """What the server needs of an endpoint: a name, and a way to start one run of it."""

    name: ClassVar[str]
    pausable: ClassVar[Pausable] = "always"
    #: When a run asked for it (``check_skip``) completes at once, as skipped, without
    #: starting: its catalogue row's rule (:mod:`python_endpoints.serving.skips`).
    skip: ClassVar[str | None] = None
    #: Seconds a cancelled job gets to stop by itself before its processes are terminated.
    cancel_grace: ClassVar[float] = 3.0

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.paused = False
        #: Set before :meth:`cancel` when the job is stopped without the user's cancel (the
        #: client went away, the server is shutting down): what a next attempt can resume
        #: from (a download's .part) is kept.
        self.interrupted = False

    async def run(self, params: dict[str, Any]) -> dict[str, Any]:
        """Run the job to its end; return its result. Raise :class:`JobFailed` for an error."""
        raise NotImplementedError

    @classmethod
    def prepare_early(cls, ffmpeg: str | None) -> None:
        """Start, in the background, what the server finds for this endpoint's jobs before
        they start (``ffmpeg``: the binary the server runs, None for the bundled one): a
        client is about to use the endpoint (``warm``). Nothing by default."""

    async def pause(self) -> None:
        raise NotImplementedError

    async def resume(self) -> None:
        raise NotImplementedError

    async def cancel(self) -> None:
        """Stop the job and everything it started; remove partial outputs."""
        raise NotImplementedError

    def partial_outputs(self) -> list[Path]:
        """Files a cancelled or failed run must not leave behind."""
        return []

    def remove_partial_outputs(self) -> None:
        for path in self.partial_outputs():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


# --- in the event loop ----------------------------------------------------------------------


class LoopContext:
    def __init__(self, endpoint: LoopEndpoint) -> None:
        self._endpoint = endpoint
        self.cancel_event = asyncio.Event()
        self.resume_event = asyncio.Event()
        self.resume_event.set()

    async def report_progress(
        self,
        percent: float,
        status_text: str | None = None,
        pausable: Pausable | None = None,
        extras: dict[str, Any] | None = None,
    ) -> None:
        """Send a ``progress`` frame. ``extras`` are job-specific values (a download's bytes and
        speed…); ``extras["checkpoint"]``, when present, is saved by the engine as the task's
        checkpoint."""
        await self._endpoint.emit(
            Progress(
                percent=min(100.0, max(0.0, percent)),
                status_text=None if status_text is None else str(status_text),
                status=parts_of(status_text),
                pausable=pausable or self._endpoint.pausable,
                extras=extras or {},
            )
        )

    async def wait_if_paused(self) -> None:
        """Return at once when running; while paused, say so (a ``paused`` frame: nothing is
        held) and wait for resume (JobCancelled on cancel)."""
        if not self.resume_event.is_set() and not self.cancel_event.is_set():
            await self._endpoint.emit(Paused(held=False))
        while not self.resume_event.is_set():
            if self.cancel_event.is_set():
                raise JobCancelled
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):
                    await self.resume_event.wait()
        if self.cancel_event.is_set():
            raise JobCancelled

    async def request_pause(self, reason: str) -> None:
        """Ask the engine to pause this task (and wait until it is resumed)."""
        self.resume_event.clear()
        self._endpoint.paused = True
        await self._endpoint.emit(PauseRequest(reason=reason))
        await self.wait_if_paused()

    async def request_resume(self) -> None:
        self.resume_event.set()
        self._endpoint.paused = False
        await self._endpoint.emit(ResumeRequest())


class LoopEndpoint(TaskEndpoint):
    """A job run as a coroutine in the server's event loop."""

    def __init__(self, emit: Emit) -> None:
        super().__init__(emit)
        self.ctx = LoopContext(self)

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        raise NotImplementedError

    async def run(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self.job(params, self.ctx)

    async def pause(self) -> None:
        self.paused = True
        self.ctx.resume_event.clear()

    async def resume(self) -> None:
        self.paused = False
        self.ctx.resume_event.set()

    async def cancel(self) -> None:
        self.ctx.cancel_event.set()
        self.ctx.resume_event.set()
        self.remove_partial_outputs()


# --- in a child process ---------------------------------------------------------------------


@dataclass
class _Child:
    """A started child and its channels: a warm spare until it is given a job."""

    process: multiprocessing.process.BaseProcess
    reader: Connection  # the child's status messages
    jobs: Connection  # where its jobs are sent
    cancel: multiprocessing.synchronize.Event
    resume: multiprocessing.synchronize.Event
    #: Jobs given to it so far.
    jobs_done: int = 0
    #: When it was last put back among the idle (the event loop's clock).
    idle_since: float = 0.0

    @classmethod
    def start(cls, module: str, name: str, reuse: bool = False) -> _Child:
        mp = starting.context()
        # The child logs to the server's file (safe to share: see python_endpoints.serving.logfile).
        current = logfile.current_file()
        log_file = None if current is None else str(current)
        reader, writer = mp.Pipe(duplex=False)
        job_reader, job_writer = mp.Pipe(duplex=False)
        cancel, resume = mp.Event(), mp.Event()
        resume.set()
        process = mp.Process(
            target=_child_main,
            args=(
                module,
                name,
                job_reader,
                writer,
                cancel,
                resume,
                os.getpid(),
                log_file,
                reuse,
                starting.child_environment() if starting.uses_forkserver() else None,
            ),
            daemon=True,
            name=f"fredica-{name}",
        )
        for pause in (*FORK_SERVER_WAITS, None):
            try:
                process.start()
                break
            except (EOFError, ConnectionError) as exc:
                # The fork server died (killed, or the machine short of memory): once its
                # death is seen (a moment after), the next start makes a new one. A job is
                # not failed for what happened to the fork server.
                if pause is None:
                    raise
                log.warning("the children's fork server was gone (%r): starting another", exc)
                time.sleep(pause)
        writer.close()  # the child holds the only writer: its death is the reader's EOF
        job_reader.close()
        return cls(process, reader, job_writer, cancel, resume)

    def discard(self) -> None:
        """Let it go: closing its jobs pipe tells an idle child to exit (it releases what it
        holds, as a normal exit does); one that does not exit at once is killed, its tree
        with it."""
        self.jobs.close()
        self.process.join(0.5)
        if self.process.is_alive() and self.process.pid:
            procs.kill_tree(self.process.pid, grace=0.5)
        self.process.join(2)
        self.reader.close()


#: Idle children per endpoint class, the most recently used last: warm spares started ahead
#: of a job, and children that finished a job and wait for the next one (``reuse_child``).
_idle: dict[type[ProcessEndpoint], list[_Child]] = {}
_idle_lock = threading.Lock()
_preparing: set[asyncio.Future[None]] = set()
#: Most children an endpoint class keeps idle: enough for a batch to run one job per core
#: it may use (its affinity: a container's or a ``taskset``'s limit) without a start between
#: jobs.
MAX_IDLE = max(
    2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 2
)
#: A child idle this long goes, but the last one of its class (the warm spare): a batch's
#: extra children do not stay in memory for hours (seconds).
IDLE_TTL = 30.0
#: Jobs one child runs before it is let go (and a fresh one started): what a library leaks
#: per job cannot grow without end.
MAX_JOBS_PER_CHILD = 200


def _take_spare(cls: type[ProcessEndpoint]) -> _Child | None:
    """An idle child of ``cls`` that is still alive, the most recently used first."""
    dead: list[_Child] = []
    child = None
    with _idle_lock:
        idle = _idle.get(cls, [])
        while idle:
            candidate = idle.pop()
            pid = candidate.process.pid
            if candidate.process.is_alive() and pid is not None and procs.running(pid):
                child = candidate
                break
            dead.append(candidate)
    for gone in dead:
        gone.discard()
    return child


def _keep_idle(cls: type[ProcessEndpoint], child: _Child, now: float) -> bool:
    """Put ``child`` among ``cls``'s idle children; False (the caller discards it) when the
    class has as many as it keeps."""
    child.idle_since = now
    with _idle_lock:
        idle = _idle.setdefault(cls, [])
        if len(idle) >= MAX_IDLE:
            return False
        idle.append(child)
    return True


def _expire_idle(cls: type[ProcessEndpoint], now: float) -> None:
    """Let go, in the background, ``cls``'s children idle for :data:`IDLE_TTL` or more, but
    the last one."""
    with _idle_lock:
        idle = _idle.get(cls, [])
        expired = [c for c in idle[:-1] if now - c.idle_since >= IDLE_TTL]
        _idle[cls] = [c for c in idle if c not in expired]
    for child in expired:
        _in_background(child.discard)


def _prepare_spare(cls: type[ProcessEndpoint], now: float) -> None:
    """Start a warm spare for ``cls`` unless one is idle already."""
    with _idle_lock:
        if _idle.get(cls):
            return
    child = _Child.start(cls.target.__module__, cls.name, cls.reuse_child)
    if not _keep_idle(cls, child, now):
        child.discard()


def warm(cls: type[TaskEndpoint]) -> bool:
    """Start a warm spare for ``cls`` in the background, unless one is idle already or its
    jobs do not run in a child (False then): for an endpoint a client is about to use, so
    that even its first job finds its child started."""
    if not (issubclass(cls, ProcessEndpoint) and (cls.keep_spare or cls.reuse_child)):
        return False
    now = asyncio.get_running_loop().time()
    _in_background(lambda: _prepare_spare(cls, now))
    return True


def idle_children() -> dict[str, int]:
    """How many children wait idle, per endpoint name (the server's status, the tests)."""
    with _idle_lock:
        return {cls.name: len(idle) for cls, idle in _idle.items() if idle}


async def close_spares() -> None:
    """Stop every idle child, the spares being started included (the server is closing)."""
    while _preparing:
        await asyncio.gather(*list(_preparing), return_exceptions=True)
    await asyncio.get_running_loop().run_in_executor(None, _discard_spares)


def _discard_spares() -> None:
    with _idle_lock:
        children = [child for idle in _idle.values() for child in idle]
        _idle.clear()
    for child in children:
        child.jobs.close()  # all told at once: they exit side by side, not one after another
    for child in children:
        child.discard()


def _in_background(work: Callable[[], None]) -> None:
    """Run blocking ``work`` (a child's start or exit) off the event loop; the server's close
    waits for it."""
    future = asyncio.get_running_loop().run_in_executor(None, work)
    _preparing.add(future)
    future.add_done_callback(_preparing.discard)


class _Suspendable(BaseModel):
    """The child's word to its server alone (never sent on): whether a pause may suspend its
    process now (:meth:`~python_endpoints.serving.child.ChildContext.allow_suspend`)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["suspendable"]
    allowed: bool


class _Stays(BaseModel):
    """The child's word to its server alone: it waits for another job after the result that
    follows (a child started with ``reuse``)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["stays"]


class _Started(BaseModel):
    """The child's word to its server alone: it started this process (ffmpeg…), which the
    server reaps should the child die first (:mod:`~python_endpoints.serving.reaper`)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["started"]
    pid: int


async def _ready(loop: asyncio.AbstractEventLoop, watched: list[Any], within: float) -> list[Any]:
    """Those of ``watched`` (a child's pipe, its sentinel) that are ready, waiting up to
    ``within`` seconds for one. On POSIX the event loop watches their descriptors: a job
    sends a few messages, and a thread of the pool woken for each cost more than the message
    (a short job's server spent a third of its time handing waits to threads and back)."""
    ready: list[Any] = wait(watched, 0)
    if ready or os.name != "posix":
        return ready or await loop.run_in_executor(None, wait, watched, within)
    woken = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    fds = [w if isinstance(w, int) else w.fileno() for w in watched]
    for fd in fds:
        loop.add_reader(fd, wake)
    timer = loop.call_later(within, wake)
    try:
        await woken
    finally:
        timer.cancel()
        for fd in fds:
            loop.remove_reader(fd)
    return list(wait(watched, 0))


_child_message: TypeAdapter[Any] = TypeAdapter(
    JobFrame | Result | Error | _Suspendable | _Stays | _Started
)
#: After a suspension, how long the job's processes may take to stop and the frames the child
#: sent before to be passed on (milliseconds, mostly), before ``paused`` goes out after them.
DRAIN_TIMEOUT = 2.0


def validated_params(model: type[BaseModel], name: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as job ``name``'s child gets them: validated with its params ``model``, every
    field there and defaults filled — a job reads ``params["crf"]``, each default stated once,
    in the model. Raises :class:`JobFailed` (``PAYLOAD_ERROR``) naming the first invalid one."""
    try:
        return model.model_validate(params).model_dump()
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "params"
        raise JobFailed(
            f"invalid {name} params: {where}: {err['msg']}", ErrorType.PAYLOAD_ERROR
        ) from None


class ProcessEndpoint(TaskEndpoint):
    """A job run by a top-level function in a child process."""

    @staticmethod
    def target(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
        """What the child runs: a top-level (picklable) function ``(params, ctx) -> result``.
        Returning None means exiting without a result (an error for the client)."""
        raise NotImplementedError

    #: Also suspend the child's process tree while paused (for jobs that cannot check a flag,
    #: like an ffmpeg child); cooperative jobs leave it False. A cooperative job may still
    #: say, while it runs, that a suspension is how to pause it now (``allow_suspend``): it
    #: is then suspended at once, holding its memory (``paused`` with ``held: true``).
    suspend_on_pause: ClassVar[bool] = False

    #: The params' model: validated here, in the server, so that the child need not import
    #: pydantic (a plain dict of the validated values is sent).
    params_model: ClassVar[type[BaseModel] | None] = None
    #: Keep a warm spare child ready (its imports done) so that the next job starts in
    #: milliseconds instead of the ~0.5 s an interpreter and the job's imports take. The
    #: spare is started when a job ends (the first job of an endpoint starts cold).
    keep_spare: ClassVar[bool] = True
    #: A child whose job ended with a result stays for the endpoint's next job instead of
    #: exiting: a batch of short jobs pays one start per core, not one per job. Off for a job
    #: that keeps much in memory (a speech model) or leaves its process in an unknown state.
    reuse_child: ClassVar[bool] = False

    def __init__(self, emit: Emit) -> None:
        super().__init__(emit)
        self.child: _Child | None = None
        self._cancelling = False
        #: The child allows a pause to suspend it now (it said so last).
        self._suspendable = False
        #: Its process tree is suspended for a pause it allowed (not by ``suspend_on_pause``).
        self._suspended = False
        self._ended = False  # its end (result, error or exit) was read
        #: It was paused at some point: its child may be left stopped; never reused.
        self._was_paused = False
        #: Its child said it waits for another job (``stays``, before its result).
        self._stays = False
        #: The pids its child said it started (this job's processes).
        self._started: list[int] = []

    @property
    def process(self) -> multiprocessing.process.BaseProcess | None:
        return None if self.child is None else self.child.process

    async def run(self, params: dict[str, Any]) -> dict[str, Any]:
        cls = type(self)
        target: ChildTarget = cls.target
        if cls.params_model is not None:
            params = validated_params(cls.params_model, cls.name, params)
        params = self.child_params(await self.prepare(params))
        loop = asyncio.get_running_loop()
        child = _take_spare(cls) if cls.keep_spare or cls.reuse_child else None
        if child is None:
            child = await loop.run_in_executor(
                None, _Child.start, target.__module__, cls.name, cls.reuse_child
            )
        if self._cancelling:  # cancelled while the child started (or params were prepared)
            await loop.run_in_executor(None, child.discard)
            raise JobCancelled
        self.child = child
        if self.paused:  # paused meanwhile: the job starts paused
            self._was_paused = True
            child.resume.clear()
        child.jobs.send((target, params))
        child.jobs_done += 1
        kept = False
        try:
            result = await self._pump()
            kept = self._keep_child(loop.time())
            return result
        finally:
            if kept:
                loop.call_later(IDLE_TTL + 0.1, lambda: _expire_idle(cls, loop.time()))
            else:
                await self._reap()
            if not kept and cls.keep_spare:
                # The next spare is started once this job is over, not beside it: its start
                # (an interpreter, PyAV, the job's imports and warm-up: ~0.3 s of CPU) would
                # take that CPU from the job — ffmpeg — on a small machine.
                now = loop.time()
                _in_background(lambda: _prepare_spare(cls, now))

    def _keep_child(self, now: float) -> bool:
        """After a result: keep the child for the next job when it waits for one and nothing
        about this job could have left it stopped or cancelled."""
        child = self.child
        if (
            child is None
            or not self._stays
            or self._cancelling
            or self._was_paused
            or child.jobs_done >= MAX_JOBS_PER_CHILD
            or not child.process.is_alive()
        ):
            return False
        child.cancel.clear()
        child.resume.set()
        if not _keep_idle(type(self), child, now):
            return False
        # Its process is another job's from now on: a late pause or cancel of this one
        # must not reach it.
        self.child = None
        return True

    async def prepare(self, params: dict[str, Any]) -> dict[str, Any]:
        """The validated params once the server has found what it finds for the job before
        its child starts (a subclass: the hardware encoder that works here)."""
        return params

    def child_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The validated params as the child gets them: a subclass adds what the server
        decides for this run (its temporary files' part id)."""
        return params

    async def _pump(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        assert self.child is not None
        reader, process = self.child.reader, self.child.process
        result: dict[str, Any] | None = None
        error: Error | None = None
        watched: list[Any] = [reader, process.sentinel]
        while result is None and error is None:
            ready: list[Any] = await _ready(loop, watched, 1.0)
            if reader in ready:
                try:
                    message = reader.recv()
                except EOFError:
                    message = None
                if message is not None:
                    result, error = await self._handle(message, result, error)
                    continue
            if process.sentinel in ready or not process.is_alive():
                # The child is gone: read what it left in the pipe, then judge.
                for message in self._drain(reader):
                    result, error = await self._handle(message, result, error)
                await loop.run_in_executor(None, process.join, 5)
                if self._started:  # what it started, should the death signal have missed
                    await asyncio.to_thread(reaper.reap, self._started)
                break
        self._ended = True
        if self._cancelling:
            raise JobCancelled
        if error is not None:
            raise JobFailed(error.error, error.error_type)
        if result is not None:
            return result
        code = process.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            raise JobFailed(f"the job's process was killed by {name}", ErrorType.SUBPROCESS_CRASHED)
        if code:
            raise JobFailed(
                f"the job's process exited with code {code}", ErrorType.SUBPROCESS_CRASHED
            )
        raise JobFailed("the job's process exited without a result", ErrorType.SUBPROCESS_CRASHED)

    @staticmethod
    def _drain(reader: Connection) -> list[dict[str, Any]]:
        out = []
        with contextlib.suppress(EOFError, OSError):
            while reader.poll():
                out.append(reader.recv())
        return out

    async def _handle(
        self, raw: dict[str, Any], result: dict[str, Any] | None, error: Error | None
    ) -> tuple[dict[str, Any] | None, Error | None]:
        try:
            message = _child_message.validate_python(raw)
        except ValidationError:
            return result, error  # a malformed child message is ignored, never fatal
        if isinstance(message, _Suspendable):
            self._suspendable = message.allowed
            return result, error
        if isinstance(message, _Stays):
            self._stays = True
            return result, error
        if isinstance(message, _Started):
            self._started.append(message.pid)
            return result, error
        if isinstance(message, Result):
            return message.result, error
        if isinstance(message, Error):
            return result, error or message
        if isinstance(message, PauseRequest):
            self.paused = True
        elif isinstance(message, ResumeRequest):
            self.paused = False
        elif isinstance(message, Progress) and message.pausable is None:
            message = message.model_copy(update={"pausable": self.pausable})
        if not self._cancelling:
            await self.emit(message)
        return result, error

    async def pause(self) -> None:
        self.paused = True
        self._was_paused = True
        pid = None if self.process is None else self.process.pid
        if self._suspendable and not self.suspend_on_pause and pid and not self._ended:
            await self._suspend(pid)
            return
        if self.child is not None:
            self.child.resume.clear()
        if self.suspend_on_pause and pid:
            procs.suspend_tree(pid)
            await self.emit(Paused(held=False))  # stopped: it uses no CPU until resumed

    async def _suspend(self, pid: int) -> None:
        """Pause a job that allowed it by stopping its process tree where it is — in the
        middle of a long call it cannot leave (a window's decode), which a cooperative pause
        would wait out. Its resume event is left alone: a stopped process may hold that
        event's lock. It keeps its memory: the ``paused`` frame says ``held``."""
        procs.suspend_tree(pid)
        self._suspended = True
        # ``paused`` once it has stopped, and after what it sent before: nothing follows it.
        reader = None if self.child is None else self.child.reader
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_TIMEOUT
        with contextlib.suppress(OSError, ValueError):  # closed: the job has ended
            while not self._ended and loop.time() < deadline:
                if not (reader is not None and reader.poll()) and procs.tree_stopped(pid):
                    break
                await asyncio.sleep(0.005)
        if self.paused and self._suspended and not self._ended and not self._cancelling:
            await self.emit(Paused(held=True))

    async def resume(self) -> None:
        self.paused = False
        pid = None if self.process is None else self.process.pid
        if (self.suspend_on_pause or self._suspended) and pid:
            procs.resume_tree(pid)
        self._suspended = False
        if self.child is not None:
            self.child.resume.set()

    async def cancel(self) -> None:
        self._cancelling = True
        process = self.process
        if self._suspended and process is not None and process.pid:
            # First: a stopped process may hold the lock of the events set below.
            procs.resume_tree(process.pid)
            self._suspended = False
        if self.child is not None:
            self.child.cancel.set()
            self.child.resume.set()
        if process is not None and process.pid:
            procs.resume_tree(process.pid)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, process.join, self.cancel_grace)
            if process.is_alive():
                await loop.run_in_executor(None, procs.kill_tree, process.pid)
        self.remove_partial_outputs()

    async def _reap(self) -> None:
        process = self.process
        if process is None:
            return
        loop = asyncio.get_running_loop()
        if self.child is not None:
            # A child that waits for a job exits on this; one that sent its last message is
            # exiting: either is left a moment to end by itself.
            self.child.jobs.close()
            if process.is_alive() and not self._cancelling:
                await loop.run_in_executor(None, process.join, 0.5)
        if process.is_alive() and process.pid:
            await loop.run_in_executor(None, procs.kill_tree, process.pid)
        await loop.run_in_executor(None, process.join, 5)
        if self.child is not None:
            self.child.reader.close()
