"""The child process's side of a :class:`~python_endpoints.serving.endpoint.ProcessEndpoint`.

Standard library only: a job's child imports this module and the job's own, nothing else, so
that it starts fast (pydantic alone adds ~0.2 s to a child's start on a small machine). The
params a child receives were validated by the server already.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any, Literal

from python_endpoints.errorcodes import ErrorType
from python_endpoints.serving import logfile
from python_endpoints.serving.starting import apply_environment
from python_endpoints.status import parts_of

Pausable = Literal["always", "never", "now", "not_now"]

log = logging.getLogger("python_endpoints.serving.child")


class JobCancelled(BaseException):
    """Raised inside a loop job when it was cancelled."""


class JobFailed(Exception):
    """A job's own error, with the error type to report."""

    def __init__(self, message: str, error_type: str = ErrorType.EXECUTOR_ERROR) -> None:
        super().__init__(message)
        self.error_type = error_type


class StatusChannel:
    """The child's end of its one-way status pipe (the ``status_queue`` of the design):
    ``put`` sends a message to the parent at once. A pipe rather than a ``multiprocessing``
    queue: the parent can wait on it and on the child's exit together, without polling."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def put(self, message: dict[str, Any]) -> None:
        self._conn.send(message)

    def close(self) -> None:
        self._conn.close()


class ChildContext:
    """The child's side: report, stream, ask for a pause, honour pause and cancel."""

    def __init__(
        self,
        status_queue: StatusChannel,
        cancel_event: Event,
        resume_event: Event,
    ) -> None:
        self.status_queue = status_queue
        self.cancel_event = cancel_event
        self.resume_event = resume_event
        self._said_paused = False  # a ``paused`` frame was sent for the current pause
        self._said_finishing = False

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def progress(
        self,
        percent: float,
        status_text: str | None = None,
        pausable: Pausable | None = None,
        extras: dict[str, Any] | None = None,
    ) -> None:
        """Send a ``progress`` frame; ``extras`` are job-specific values (a transcription's
        ``position`` and ``languages``, which the engine keeps in the task's checkpoint)."""
        self.status_queue.put(
            {
                "type": "progress",
                "percent": min(100.0, max(0.0, percent)),
                "status_text": None if status_text is None else str(status_text),
                "status": parts_of(status_text),
                "pausable": pausable,
                "extras": extras or {},
            }
        )

    def segment(self, data: dict[str, Any]) -> None:
        self.status_queue.put({"type": "segment", "data": data})

    def finishing(self) -> None:
        """Say that the job's heavy part is done — its ffmpeg has exited with the output
        written; what is left is checking it and committing it — so that the engine may start
        its next task on the slot meanwhile. Once a job; call it only when no heavy work can
        follow (not before a retry on another encoder)."""
        if not self._said_finishing:
            self._said_finishing = True
            self.status_queue.put({"type": "finishing"})

    def allow_suspend(self, allowed: bool) -> None:
        """Tell the server whether a pause may suspend this process now, rather than wait
        for the job's next :meth:`wait_if_paused`: for a job in a long call it cannot leave,
        holding nothing another job waits for (a model in GPU memory is; its own memory is
        not). A suspended job is resumed where it stopped; it never sees the pause."""
        self.status_queue.put({"type": "suspendable", "allowed": allowed})

    def wait_if_paused(self, timeout: float | None = None, *, held: bool = False) -> bool:
        """Block while paused. False when ``timeout`` ran out first; a cancelled child simply
        sees ``cancelled`` true afterwards. The first wait of a pause sends a ``paused``
        frame: the job has stopped; ``held``: it still holds its resources (a model kept in
        GPU memory), otherwise the engine may give its slot to other work meanwhile."""
        if self.resume_event.is_set():
            self._said_paused = False
            return True
        if not self._said_paused and not self.cancelled:
            self._said_paused = True
            self.status_queue.put({"type": "paused", "held": held})
        resumed = self.resume_event.wait(timeout)
        if resumed:
            self._said_paused = False
        return resumed

    def request_pause(
        self, reason: str, resume_after: float | None = None, *, held: bool = False
    ) -> None:
        """Ask to be paused: clear ``resume_event``, then say so, then wait — in that order.
        With ``resume_after``, resume by itself after that many seconds. ``held``: as for
        :meth:`wait_if_paused`."""
        self.resume_event.clear()
        self.status_queue.put({"type": "pause_request", "reason": reason})
        if not self.wait_if_paused(resume_after, held=held) and not self.cancelled:
            self.request_resume()

    def request_resume(self) -> None:
        self.resume_event.set()
        self.status_queue.put({"type": "resume_request"})


ChildTarget = Callable[[dict[str, Any], ChildContext], dict[str, Any] | None]


# --- processes a job starts (ffmpeg…) -------------------------------------------------------
#
# A job's own processes must not outlive it. Three ways they could: the server cancels the
# job (it kills the whole tree: nothing to do here), the server dies (the parent-watch thread
# below kills the tracked processes before exiting), or the child itself is killed outright
# (SIGKILL, the OOM killer): then nothing in the child runs, so on Linux the process is
# started with PR_SET_PDEATHSIG and the kernel kills it when the child dies.
#
# How the death signal is armed costs more than it seems. A hook run between fork and exec
# (``preexec_fn``) makes Python fork() the whole child — ~55 MB of page tables with the job's
# libraries loaded, 8 ms a start here —, where without a hook it uses vfork (under 1 ms).
# So the process is started through util-linux's ``setpriv --pdeathsig KILL``, which arms the
# signal and execs it (one small exec more, ~1.5 ms); the hook remains the way where setpriv
# is missing or too old. Either way the child tells its server the pid of each process it
# starts, and the server — the subreaper of its tree — kills and reaps those it adopts when
# a child dies (reaper.py): that covers the instant between setpriv's start and its prctl,
# where a dying child would leave its process running, and reaps what the signal killed.

#: Tells the server a pid this child started (set in a job's child; None elsewhere).
_announce: Callable[[int], None] | None = None
#: Fault injection, for the reaper's test alone: processes start with no death signal, as if
#: the child died before the signal was armed.
NO_DEATH_SIGNAL_ENV = "FREDICA_NO_DEATH_SIGNAL"

_tracked: set[subprocess.Popen[bytes]] = set()
_tracked_lock = threading.Lock()
_PR_SET_PDEATHSIG = 1


def track_process(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process`` if this child exits before it (see :func:`untrack_process`)."""
    with _tracked_lock:
        _tracked.add(process)


def untrack_process(process: subprocess.Popen[bytes]) -> None:
    """Forget a process once it has been reaped."""
    with _tracked_lock:
        _tracked.discard(process)


def kill_tracked_processes() -> None:
    """Kill every tracked process that is still running (the child is about to exit)."""
    with _tracked_lock:
        processes = list(_tracked)
        _tracked.clear()
    for process in processes:
        try:
            if process.poll() is None:
                process.kill()
        except OSError:
            pass


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the new process die by SIGKILL when this one dies (Linux).

    The death signal belongs to the *thread* that forks: start the process from a thread that
    lives as long as the process (the job's own thread does)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import signal

    # Resolved before the fork: the hook runs between fork and exec, where little is safe.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()
    sigkill = int(signal.SIGKILL)

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, sigkill, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)

    return hook


def start_process(
    args: Sequence[str],
    *,
    stdout: int | None = None,
    stderr: int | None = None,
    cwd: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start a job's helper process (argv, never a shell) that cannot outlive this child:
    tracked, and on Linux killed by the kernel when the child dies. Untrack it once it is
    reaped. Its stdin is closed; ``cwd``: the folder it runs in."""
    argv, hook = list(args), None
    wrapper = setpriv()
    if os.environ.get(NO_DEATH_SIGNAL_ENV):
        pass
    elif wrapper is not None and _plain_executable(argv[0]):
        argv = [wrapper, "--pdeathsig", "KILL", "--", *argv]
    else:
        hook = _die_with_parent_hook()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        preexec_fn=hook,
        # No console window flashing up for each ffmpeg under a windowed app (Windows).
        creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
    )
    process.args = list(args)  # what was run, for messages: not the wrapper
    track_process(process)
    if _announce is not None:
        _announce(process.pid)
    return process


_setpriv_path: str | bool | None = False  # False: not looked for yet


def setpriv() -> str | None:
    """util-linux's ``setpriv`` where it arms a death signal (2.33 and later; Linux only),
    found once per process — in the fork server (:mod:`.preload`), whose children inherit
    what it found."""
    global _setpriv_path
    if _setpriv_path is False:
        _setpriv_path = None
        found = shutil.which("setpriv") if sys.platform.startswith("linux") else None
        true = shutil.which("true")
        if found and true:
            try:
                done = subprocess.run(
                    [found, "--pdeathsig", "KILL", "--", true],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=10,
                    check=False,
                )
                if done.returncode == 0:
                    _setpriv_path = found
            except (OSError, subprocess.SubprocessError):
                pass
    return _setpriv_path if isinstance(_setpriv_path, str) else None


def _plain_executable(path: str) -> bool:
    """Whether ``path`` names a file this process may execute by its absolute name: started
    through setpriv, a missing program is setpriv's exit code 127, not the OSError that a
    direct start raises and the job reports; such a start is made directly."""
    return os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def release_semaphores() -> None:
    """Unlink the named semaphores this process created, as a normal exit would (``os._exit``
    skips it). A library may create one in the job (tqdm's lock, under faster-whisper): left
    registered, the server's resource tracker reports it "leaked" on the user's terminal when
    the server exits. These are ``multiprocessing``'s own exit finalizers (the semaphores of
    the events shared with the server are the server's: not registered here)."""
    from multiprocessing import util

    run_finalizers = getattr(util, "_run_finalizers", None)
    if callable(run_finalizers):
        run_finalizers(0)


def _watch_parent(parent_pid: int) -> None:
    """Exit when the parent dies: a job never outlives its server, nor do its processes.

    The parent is the server (``parent_pid``), or the fork server that forked this child,
    which exits when the server dies (:mod:`python_endpoints.serving.starting`)."""
    parent = os.getppid()
    if parent != parent_pid and not _alive(parent_pid):  # the server died before we started
        # (parents differ only where children are forked: never on Windows, whose os.kill
        # would end the process)
        os._exit(1)
    while True:
        if os.getppid() != parent:
            kill_tracked_processes()
            os._exit(1)
        time.sleep(0.5)


def _alive(pid: int) -> bool:
    """Whether ``pid`` exists (POSIX)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, and is not ours to signal
        return True
    return True


def _child_main(
    module: str,
    endpoint: str,
    jobs: Connection,
    conn: Connection,
    cancel_event: Event,
    resume_event: Event,
    parent_pid: int,
    log_file: str | None = None,
    reuse: bool = False,
    environment: dict[str, Any] | None = None,
) -> None:
    """A job's child: import the job's module (the slow part of a start) and call its
    ``warm_up(endpoint)`` if it has one, then wait for the job itself. Started ahead of time,
    it is a warm spare that starts a job in milliseconds. ``log_file``: the server's log, which
    the child writes too (a job's traceback, its libraries' warnings); never its stderr.

    ``reuse``: after a job that ended with a result, say ``stays``, send the result and wait
    for another job instead of exiting (the server keeps the child for the endpoint's next
    job, or closes ``jobs``: then it exits). After an error it always exits: a job that failed
    may have left its process in any state. So does a child whose job module says it may not
    be reused now (its ``reusable()``). ``environment``: the server's environment and
    working folder, for a child forked by the fork server."""
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    if environment is not None:
        apply_environment(environment)
    if log_file is not None:
        logfile.log_to_file(Path(log_file))
    else:
        logging.getLogger().addHandler(logging.NullHandler())  # not Python's stderr fallback
    job_module = importlib.import_module(module)
    warm_up = getattr(job_module, "warm_up", None)
    if callable(warm_up):
        # Pay ahead, while a spare waits, what the job's first use costs (yt-dlp's extractors,
        # the hardware encoders' test encodes). A warm-up must never break a spare.
        try:
            warm_up(endpoint)
        except Exception:
            log.warning("the warm-up of %s failed", endpoint, exc_info=True)
    status_queue = StatusChannel(conn)
    global _announce
    _announce = lambda pid: status_queue.put({"type": "started", "pid": pid})  # noqa: E731
    while True:
        try:
            target, params = jobs.recv()
        except (EOFError, OSError):
            release_semaphores()
            os._exit(0)  # a spare that was not needed, or a reused child let go
        last = _run_one(
            endpoint, target, params, ChildContext(status_queue, cancel_event, resume_event)
        )
        kill_tracked_processes()  # a job that returned without reaping what it started
        if reuse and last is not None and last["type"] == "result" and _stays(job_module):
            # Said before the result, so the server knows with it that this process waits
            # for the next job; it may send that job as soon as it has the result.
            status_queue.put({"type": "stays"})
            status_queue.put(last)
            continue
        jobs.close()
        # Before the last message: once the server has it, it may kill this process at any
        # time.
        release_semaphores()
        if last is not None:
            status_queue.put(last)
        status_queue.close()
        # Everything was sent synchronously: skip the interpreter's shutdown (~0.1 s).
        os._exit(1 if last is not None and last["type"] == "error" else 0)


def _stays(job_module: Any) -> bool:
    """Whether this child may take another job: yes, unless the job's module says otherwise
    (its ``reusable()``: a transcription that used a GPU holds the card's memory until its
    process ends)."""
    reusable = getattr(job_module, "reusable", None)
    if not callable(reusable):
        return True
    try:
        return bool(reusable())
    except Exception:
        log.warning("reusable() of %s failed", job_module.__name__, exc_info=True)
        return False


def _run_one(
    endpoint: str, target: ChildTarget, params: dict[str, Any], ctx: ChildContext
) -> dict[str, Any] | None:
    """One job in this child: its last message (``result`` or ``error``), or None when it
    returned nothing or was cancelled."""
    try:
        result = target(params, ctx)
    except JobFailed as exc:
        return {"type": "error", "error": str(exc), "error_type": exc.error_type}
    except Exception as exc:
        log.exception("the %s job raised", endpoint)
        return {
            "type": "error",
            "error": f"{type(exc).__name__}: {exc}",
            "error_type": ErrorType.EXECUTOR_ERROR,
        }
    if result is not None and not ctx.cancelled:
        return {"type": "result", "result": result}
    return None
