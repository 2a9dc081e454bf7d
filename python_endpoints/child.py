"""The child process's side of a :class:`~python_endpoints.endpoint.ProcessEndpoint`.

Standard library only: a job's child imports this module and the job's own, nothing else, so
that it starts fast (pydantic alone adds ~0.2 s to a child's start on a small machine). The
params a child receives were validated by the server already.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any, Literal

Pausable = Literal["always", "never", "now", "not_now"]

SUBPROCESS_CRASHED = "SUBPROCESS_CRASHED"
EXECUTOR_ERROR = "EXECUTOR_ERROR"


class JobCancelled(BaseException):
    """Raised inside a loop job when it was cancelled."""


class JobFailed(Exception):
    """A job's own error, with the error type to report."""

    def __init__(self, message: str, error_type: str = EXECUTOR_ERROR) -> None:
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

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def progress(
        self, percent: float, status_text: str | None = None, pausable: Pausable | None = None
    ) -> None:
        self.status_queue.put(
            {
                "type": "progress",
                "percent": min(100.0, max(0.0, percent)),
                "status_text": status_text,
                "pausable": pausable,
            }
        )

    def segment(self, data: dict[str, Any]) -> None:
        self.status_queue.put({"type": "segment", "data": data})

    def wait_if_paused(self, timeout: float | None = None) -> bool:
        """Block while paused. False when ``timeout`` ran out first; raises SystemExit(0)…
        never: a cancelled child simply sees ``cancelled`` true afterwards."""
        return self.resume_event.wait(timeout)

    def request_pause(self, reason: str, resume_after: float | None = None) -> None:
        """Ask to be paused: clear ``resume_event``, then say so, then wait — in that order.
        With ``resume_after``, resume by itself after that many seconds."""
        self.resume_event.clear()
        self.status_queue.put({"type": "pause_request", "reason": reason})
        if not self.resume_event.wait(resume_after) and not self.cancelled:
            self.request_resume()

    def request_resume(self) -> None:
        self.resume_event.set()
        self.status_queue.put({"type": "resume_request"})


ChildTarget = Callable[[dict[str, Any], ChildContext], dict[str, Any] | None]


def _watch_parent(parent_pid: int) -> None:
    """Exit when the parent dies: a job never outlives its server."""
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)
        time.sleep(0.5)


def _child_main(
    module: str,
    jobs: Connection,
    conn: Connection,
    cancel_event: Event,
    resume_event: Event,
    parent_pid: int,
) -> None:
    """A job's child: import the job's module (the slow part of a start), then wait for the
    job itself. Started ahead of time, it is a warm spare that starts a job in milliseconds."""
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    importlib.import_module(module)
    try:
        target, params = jobs.recv()
    except (EOFError, OSError):
        os._exit(0)  # a spare that was not needed
    jobs.close()
    status_queue = StatusChannel(conn)
    ctx = ChildContext(status_queue, cancel_event, resume_event)
    code = 0
    try:
        result = target(params, ctx)
    except JobFailed as exc:
        status_queue.put({"type": "error", "error": str(exc), "error_type": exc.error_type})
        code = 1
    except Exception as exc:
        status_queue.put(
            {
                "type": "error",
                "error": f"{type(exc).__name__}: {exc}",
                "error_type": EXECUTOR_ERROR,
            }
        )
        code = 1
    else:
        if result is not None and not cancel_event.is_set():
            status_queue.put({"type": "result", "result": result})
    status_queue.close()
    # Everything was sent synchronously: skip the interpreter's shutdown (~0.1 s).
    os._exit(code)
