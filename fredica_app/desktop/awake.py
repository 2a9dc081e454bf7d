"""Keep the computer awake while tasks run, and let it sleep again when none does.

One small interface, :class:`KeepAwake` (``hold``, ``release``, both idempotent), with a
backend per system:

- :class:`SystemdInhibit` (Linux): a ``systemd-inhibit --what=sleep:idle --mode=block`` child
  for as long as the hold lasts. logind refuses to suspend (the desktop's idle timer or another
  unprivileged program) while it runs; ``systemd-inhibit --list`` shows it. The program it
  wraps is ``cat`` reading a pipe from us: when Fredica dies, however it dies, the pipe closes,
  ``cat`` ends and the inhibitor with it — nothing is left holding the computer awake.
- :class:`Caffeinate` (macOS): ``caffeinate -i -w <our pid>``, which ends by itself when we do.
- :class:`WindowsExecutionState` (Windows): ``SetThreadExecutionState(ES_CONTINUOUS |
  ES_SYSTEM_REQUIRED)``, undone with ``ES_CONTINUOUS``. The state belongs to the calling
  thread, so hold and release must come from the same one (:class:`AwakeWhileBusy` makes all
  its calls from one thread of its own).
- :class:`NoKeepAwake`: says once, in the log, why nothing is done, and does nothing.

A backend never raises into its caller: a command that cannot start, or an inhibitor that
ends early, logs a warning once and the tasks go on (the computer may then sleep).

:class:`AwakeWhileBusy` drives a backend from an engine's events: held while at least one task
runs and is not paused, released once none has for a few seconds (a chain of tasks leaves
gaps of milliseconds between one task and the next, which must not start and stop a process
each time), and on close.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Protocol

from workers.events import Event, EventBus, TaskChanged

log = logging.getLogger(__name__)

#: What the inhibitor says holds the computer awake (``systemd-inhibit --list``).
REASON = "Fredica is running tasks"
#: Seconds the queue must stay without running tasks before the computer may sleep again.
SETTLE_SECONDS = 3.0
#: Seconds an inhibitor child gets to end after its pipe closes and it is terminated.
STOP_GRACE = 5.0

ES_CONTINUOUS = 0x80000000
ES_SYSTEM_REQUIRED = 0x00000001


class KeepAwake(Protocol):
    """Keeps the computer from sleeping between :meth:`hold` and :meth:`release`. Both are
    idempotent, quick, and never raise."""

    def hold(self, reason: str) -> None: ...

    def release(self) -> None: ...


# --- a child process that holds the computer awake -----------------------------------------


class _HoldingChild:
    """A child process that keeps the computer awake while it lives: started by ``hold``,
    ended by ``release`` (its input closed, then terminated; killed if it lingers; always
    reaped). In a session of its own, so that a terminal's Ctrl-C does not end it first."""

    #: The command's name, for the log.
    program = "?"

    def __init__(self, argv: Sequence[str] | None = None) -> None:
        #: The whole command, instead of the one :meth:`command` builds (a test runs a
        #: harmless child in its place).
        self.argv = list(argv) if argv is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._warned = False

    def command(self, reason: str) -> list[str]:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        """The child's pid while it holds, None otherwise."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def hold(self, reason: str) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                return
            self._reap()  # it ended by itself: say why once, then try again
        argv = self.argv or self.command(reason)
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            self._warn(f"{argv[0]} could not start ({exc})")
            return
        log.info("keeping the computer awake: %s (pid %d)", self.program, self._proc.pid)

    def release(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            _close(proc.stdin)
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            _close(proc.stderr)
            self._proc = None
            log.info("the computer may sleep again (%s ended)", self.program)
            return
        self._reap()

    def _reap(self) -> None:
        """The child ended by itself (it could not hold): its reason, once."""
        proc = self._proc
        assert proc is not None
        self._proc = None
        _close(proc.stdin)
        code = proc.wait()
        said = _available(proc.stderr).decode(errors="replace")
        _close(proc.stderr)
        why = " ".join(said.split())[:300] or "no reason given"
        self._warn(f"{self.program} exited {code} ({why})")

    def _warn(self, what: str) -> None:
        if self._warned:
            log.info("could not keep the computer awake: %s", what)
            return
        self._warned = True
        log.warning(
            "could not keep the computer awake: %s; tasks go on, but the computer may sleep "
            "meanwhile (turn keep_awake off in the settings to stop trying)",
            what,
        )


def _available(stream: IO[bytes] | None) -> bytes:
    """What the pipe holds now, without waiting for its end (a grandchild may hold it open)."""
    if stream is None:
        return b""
    try:
        os.set_blocking(stream.fileno(), False)
        return stream.read() or b""
    except (OSError, ValueError):
        return b""


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.close()


class SystemdInhibit(_HoldingChild):
    """Linux: a ``systemd-inhibit`` block on sleep and idle, for as long as it runs."""

    program = "systemd-inhibit"

    def command(self, reason: str) -> list[str]:
        return inhibit_argv(reason)


def inhibit_argv(reason: str) -> list[str]:
    """The systemd-inhibit command: it holds while ``cat`` runs, and ``cat`` runs until the
    pipe it reads from us closes (we release, or we die)."""
    return [
        "systemd-inhibit",
        "--what=sleep:idle",
        "--who=Fredica",
        f"--why={reason}",
        "--mode=block",
        "cat",
    ]


class Caffeinate(_HoldingChild):
    """macOS: ``caffeinate -i`` (no idle sleep) until it is ended or our process exits."""

    program = "caffeinate"

    def command(self, reason: str) -> list[str]:
        return ["caffeinate", "-i", "-w", str(os.getpid())]


# --- Windows --------------------------------------------------------------------------------


def _kernel32_set_state() -> Callable[[int], int]:
    """``kernel32.SetThreadExecutionState``; OSError where there is none (not Windows)."""
    windll = getattr(ctypes, "windll", None)  # ctypes has it on Windows only
    if windll is None:
        raise OSError("SetThreadExecutionState exists on Windows only")
    function = windll.kernel32.SetThreadExecutionState
    function.argtypes = [ctypes.c_uint32]  # the flags do not fit a signed int
    function.restype = ctypes.c_uint32
    set_state: Callable[[int], int] = function
    return set_state


class WindowsExecutionState:
    """Windows: tell the system it is required while held. ``set_state`` is
    ``SetThreadExecutionState`` (returns the previous state, 0 on failure); a test passes a
    recorder. Call :meth:`hold` and :meth:`release` from one thread: the state is that
    thread's."""

    def __init__(self, set_state: Callable[[int], int] | None = None) -> None:
        self._set_state = set_state
        self._held = False
        self._warned = False

    def hold(self, reason: str) -> None:
        if not self._held and self._call(ES_CONTINUOUS | ES_SYSTEM_REQUIRED):
            self._held = True
            log.info("keeping the computer awake: SetThreadExecutionState")

    def release(self) -> None:
        if self._held:
            self._held = False
            self._call(ES_CONTINUOUS)
            log.info("the computer may sleep again")

    def _call(self, flags: int) -> bool:
        try:
            if self._set_state is None:
                self._set_state = _kernel32_set_state()
            if self._set_state(flags) != 0:
                return True
            problem = "SetThreadExecutionState failed"
        except (OSError, AttributeError) as exc:
            problem = f"SetThreadExecutionState is not available ({exc})"
        if not self._warned:
            self._warned = True
            log.warning(
                "could not keep the computer awake: %s; the computer may sleep meanwhile",
                problem,
            )
        return False


# --- nothing -------------------------------------------------------------------------------


class NoKeepAwake:
    """Nowhere to ask: says why once, in the log, and does nothing."""

    def __init__(self, why: str) -> None:
        self.why = why
        self._said = False

    def hold(self, reason: str) -> None:
        if not self._said:
            self._said = True
            log.info("cannot keep the computer awake here: %s", self.why)

    def release(self) -> None:
        pass


def keep_awake_for_platform(
    platform: str = sys.platform,
    *,
    which: Callable[[str], str | None] = shutil.which,
    has_system_bus: Callable[[], bool] | None = None,
) -> KeepAwake:
    """The backend for ``platform``. On Linux systemd-inhibit only when it is installed and a
    system bus runs to reach logind (a container or a bare server has neither, and would
    warn on every run for nothing)."""
    if platform.startswith("linux"):
        if which("systemd-inhibit") is None:
            return NoKeepAwake("systemd-inhibit is not installed (no systemd)")
        if not (has_system_bus or _has_system_bus)():
            return NoKeepAwake("no system D-Bus to reach logind")
        return SystemdInhibit()
    if platform == "darwin":
        if which("caffeinate") is None:
            return NoKeepAwake("caffeinate is not installed")
        return Caffeinate()
    if platform == "win32":
        return WindowsExecutionState()
    return NoKeepAwake(f"no way to keep {platform} awake is known")


def _has_system_bus() -> bool:
    if os.environ.get("DBUS_SYSTEM_BUS_ADDRESS"):
        return True
    return any(
        Path(p).exists() for p in ("/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket")
    )


# --- driven by the engine ----------------------------------------------------------------------


class AwakeWhileBusy:
    """Holds ``backend`` while at least one of the engine's tasks runs and is not paused.

    Subscribes to ``bus``: a task *started* runs; *paused* (while it ran) stops counting,
    *resumed* counts again; *completed*, *failed*, *retry* and *cancelled* end it. A pause of a
    task that was not running (a held pending one) changes nothing.

    The event loop never waits on the backend: every hold and release runs, in order, on one
    thread of this object's own (starting or ending a process takes milliseconds, but ending
    one may wait for it; and Windows ties the state to the thread that set it). Events are
    looked at once the loop has delivered all that came together (an inline task starts and
    completes in one go: nothing is started for it); the release waits ``settle`` seconds
    without a running task.
    """

    def __init__(
        self,
        bus: EventBus,
        backend: KeepAwake,
        *,
        settle: float | None = None,
        reason: str = REASON,
    ) -> None:
        """Made on the engine's event loop (its events are delivered there). ``settle``:
        seconds without a running task before the release (default :data:`SETTLE_SECONDS`)."""
        self.backend = backend
        self.settle = SETTLE_SECONDS if settle is None else settle
        self.reason = reason
        self._running: set[str] = set()
        self._paused: set[str] = set()
        self._held = False
        self._closed = False
        self._check: asyncio.Handle | None = None
        self._release_at: asyncio.TimerHandle | None = None
        self._last: concurrent.futures.Future[None] | None = None
        self._loop = asyncio.get_running_loop()
        self._thread = concurrent.futures.ThreadPoolExecutor(1, "fredica-keep-awake")
        self._unsubscribe = bus.subscribe(self)

    @property
    def busy(self) -> bool:
        """Whether a task runs, not paused, as the events tell."""
        return bool(self._running)

    @property
    def held(self) -> bool:
        """Whether the backend was asked to hold (and not to release since)."""
        return self._held

    def __call__(self, event: Event) -> None:
        if self._closed or not isinstance(event, TaskChanged):
            return
        task_id, kind = event.task_id, event.kind
        if kind == "started":
            self._paused.discard(task_id)
            self._running.add(task_id)
        elif kind == "paused":
            if task_id in self._running:
                self._running.discard(task_id)
                self._paused.add(task_id)
        elif kind == "resumed":
            if task_id in self._paused:
                self._paused.discard(task_id)
                self._running.add(task_id)
        elif kind != "progress":  # completed, failed, retry, cancelled: the attempt ended
            self._running.discard(task_id)
            self._paused.discard(task_id)
        else:
            return
        if self._check is None:
            self._check = self._loop.call_soon(self._apply)

    def _apply(self) -> None:
        self._check = None
        if self._closed:
            return
        if self.busy:
            if self._release_at is not None:
                self._release_at.cancel()
                self._release_at = None
            if not self._held:
                self._held = True
                self._submit(self.backend.hold, self.reason)
        elif self._held and self._release_at is None:
            self._release_at = self._loop.call_later(self.settle, self._release)

    def _release(self) -> None:
        self._release_at = None
        if self._held and not self.busy and not self._closed:
            self._held = False
            self._submit(self.backend.release)

    def _submit(self, call: Callable[..., None], *args: str) -> None:
        self._last = self._thread.submit(_guarded, call, *args)

    async def close(self) -> None:
        """Stop following the engine and release (waiting for it, off the loop)."""
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        for handle in (self._check, self._release_at):
            if handle is not None:
                handle.cancel()
        self._check = self._release_at = None
        # Released even when nothing was held: a hold still queued on the thread is undone.
        self._held = False
        self._submit(self.backend.release)
        if self._last is not None:
            await asyncio.wrap_future(self._last)
        self._thread.shutdown(wait=False)


def _guarded(call: Callable[..., None], *args: str) -> None:
    try:
        call(*args)
    except Exception:  # a backend must not raise; if one does, the engine goes on anyway
        log.exception("keeping the computer awake failed")
