"""Process trees: suspend, resume, terminate, kill — the job's child and everything it started
(ffmpeg…). psutil makes it work the same on POSIX and Windows; it is imported where used, so
that the job catalogue (which the app imports for every command) does not import it through
the endpoint classes."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil


def tree(pid: int) -> list[psutil.Process]:
    """The process and all its descendants (descendants first), those still alive."""
    import psutil

    try:
        root = psutil.Process(pid)
        return [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        return []


def running(pid: int) -> bool:
    """Whether ``pid`` runs: not gone, not a zombie (dead, not yet reaped — which a child
    forked by a fork server stays until that server gets to it)."""
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def suspend_tree(pid: int) -> None:
    import psutil

    for p in tree(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            p.suspend()


def tree_stopped(pid: int) -> bool:
    """Whether every process of the tree has stopped by now. A suspension is a signal (on
    POSIX): a process waiting for a CPU stops only once it is scheduled."""
    import psutil

    for p in tree(pid):
        try:
            if p.status() not in (psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE):
                return False
        except psutil.NoSuchProcess:
            continue
    return True


def resume_tree(pid: int) -> None:
    import psutil

    for p in reversed(tree(pid)):
        with contextlib.suppress(psutil.NoSuchProcess):
            p.resume()


def kill_tree(pid: int, *, grace: float = 2.0) -> None:
    """Terminate the tree, wait ``grace`` seconds, then kill what is left. Suspended processes
    are resumed first so that they can act on the termination."""
    import psutil

    procs = tree(pid)
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.resume()
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(alive, timeout=grace)
