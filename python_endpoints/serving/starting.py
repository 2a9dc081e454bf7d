"""How a job's child process starts.

On Linux (not in a frozen bundle) children are forked by ``multiprocessing``'s *fork server*:
a small process of its own, started once per server, that imports the child's side and the
media jobs' modules (PyAV included) ahead of time, and then forks a child for each request —
a start of a few milliseconds instead of a new interpreter and its imports (0.1 to 0.5 s, more
while a batch's first children all start at once on a busy machine). The fork server is
started from a clean exec, single-threaded, so forking it is safe, unlike forking the
server, whose event loop and threads a child would inherit half-copied.

Elsewhere children are spawned: on Windows there is no fork; on macOS system frameworks that
a media library may load do not survive a fork; a frozen bundle's executable is not a Python
that runs the fork server's command line.

What a forked child does not get from the server, it is sent (:func:`child_environment`): the
environment and working folder at its start, as a spawned child inherits them. Its parent is
the fork server, which exits when the server dies, so a child that watches its parent still
ends with the server.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.context
import os
import sys
import threading
from typing import Any, TypeAlias

__all__ = ["FORKSERVER_PRELOAD", "child_environment", "context", "start_early", "uses_forkserver"]

#: What the fork server imports once for all its children: the child's side, the job modules
#: that are light to import and start no thread (not the speech model's libraries, which start
#: thread pools; not yt-dlp, whose jobs never reuse a process), then what each child would
#: otherwise do at its start (:mod:`.preload`).
FORKSERVER_PRELOAD = [
    "python_endpoints.serving.child",
    "python_endpoints.jobs.media",
    "python_endpoints.jobs.thumbnail",
    "python_endpoints.jobs.export",
    "python_endpoints.jobs.analyze",
    "python_endpoints.jobs.sleep",
    "av",
    "python_endpoints.serving.preload",
]

if sys.platform == "win32":
    StartContext: TypeAlias = multiprocessing.context.SpawnContext
else:
    StartContext: TypeAlias = (
        multiprocessing.context.SpawnContext | multiprocessing.context.ForkServerContext
    )

_lock = threading.Lock()
_context: StartContext | None = None


def uses_forkserver() -> bool:
    """Whether children are forked by the fork server here (see the module's docstring)."""
    return sys.platform.startswith("linux") and not getattr(sys, "frozen", False)


def context() -> StartContext:
    """The ``multiprocessing`` context children start with."""
    global _context
    with _lock:
        if _context is None:
            if uses_forkserver() and sys.platform != "win32":
                forkserver = multiprocessing.get_context("forkserver")
                forkserver.set_forkserver_preload(FORKSERVER_PRELOAD)
                _context = forkserver
            else:
                _context = multiprocessing.get_context("spawn")
        return _context


def start_early() -> None:
    """Start the fork server now (when children are forked), so that its imports run while
    the server starts, not in front of the first job. Returns at once: the fork server
    imports in its own process."""
    if uses_forkserver():
        context()
        from multiprocessing import forkserver

        forkserver.ensure_running()


def child_environment() -> dict[str, Any]:
    """What a child applies at its start to be where a spawned child would be: the server's
    environment and working folder now (a forked child has the fork server's, from its
    start)."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # the folder was removed
        cwd = None
    return {"environ": dict(os.environ), "cwd": cwd}


def apply_environment(given: dict[str, Any]) -> None:
    """In the child: take the environment and working folder the server sent."""
    environ: dict[str, str] = given["environ"]
    if dict(os.environ) != environ:
        os.environ.clear()
        os.environ.update(environ)
    if given["cwd"] is not None:
        with contextlib.suppress(OSError):
            if os.getcwd() != given["cwd"]:
                os.chdir(given["cwd"])
