"""The endpoints server as the subreaper of its jobs' processes (Linux).

A process a job starts (ffmpeg…) is armed to die with the job's child (child.py), and the
child tells the server its pid. When a child dies, what it started is re-parented to the
nearest subreaper among its ancestors — the server, once :func:`become_subreaper` ran — instead
of init: the server then kills those still running (one that escaped the death signal, in
the instant before it was armed) and reaps them, so that none is left running or a zombie.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterable
from typing import Any

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def become_subreaper(on: bool = True) -> bool:
    """Make this process adopt its descendants' orphans (Linux 3.4 and later), or no longer
    (``on=False``). Whether it did."""
    prctl = _prctl()
    return prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


def is_subreaper() -> bool:
    """Whether this process adopts its descendants' orphans (False off Linux)."""
    prctl = _prctl()
    if prctl is None:
        return False
    import ctypes

    flag = ctypes.c_int(0)
    return prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and bool(flag.value)


def _prctl() -> Any:
    """The C library's ``prctl`` (None off Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def reap(pids: Iterable[int]) -> list[int]:
    """Kill and reap each of ``pids`` that is this process's child now — adopted from a dead
    job child: a pid that is not ours (reaped by its parent already, maybe reused since) is
    left alone. The pids reaped."""
    if not sys.platform.startswith("linux"):
        return []
    me, out = os.getpid(), []
    for pid in pids:
        if _parent(pid) != me:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
            out.append(pid)
    return out


def _parent(pid: int) -> int | None:
    """``pid``'s parent from ``/proc`` (a zombie's too), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields follow its last ")".
    return int(stat[stat.rindex(b")") + 2 :].split()[1])
