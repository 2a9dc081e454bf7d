"""Looking at the process table from tests."""

from __future__ import annotations

import asyncio

import psutil


def _multiprocessing_tree(of: psutil.Process | None = None) -> list[tuple[psutil.Process, bool]]:
    """``multiprocessing``'s processes among our descendants (or ``of``'s), the resource
    tracker left out, each with whether it is a fork server itself."""
    out = []
    for p in (of or psutil.Process()).children(recursive=True):
        try:
            cmd = " ".join(p.cmdline())
            parent = p.parent()
            parent_cmd = "" if parent is None else " ".join(parent.cmdline())
        except psutil.NoSuchProcess:
            continue
        if "multiprocessing" in cmd and "resource_tracker" not in cmd:
            # A fork server's children have its command line; it alone has another parent.
            out.append((p, FORK_SERVER in cmd and FORK_SERVER not in parent_cmd))
    return out


def job_processes(of: psutil.Process | None = None) -> list[psutil.Process]:
    """Our job children (or ``of``'s), warm spares included: spawned, or forked by a fork
    server (which is not a job, nor is multiprocessing's resource tracker)."""
    return [p for p, fork_server in _multiprocessing_tree(of) if not fork_server]


#: In the command line of a fork server, and of each child it forked.
FORK_SERVER = "multiprocessing.forkserver"


async def assert_no_job_process_left(within: float = 5.0) -> None:
    for _ in range(int(within / 0.1)):
        if not job_processes():
            return
        await asyncio.sleep(0.1)
    assert job_processes() == [], "a job process outlived its test"


def process_gone(pid: int) -> bool:
    """Whether ``pid`` has exited: no such process, or a zombie not yet reaped. The process
    may be reaped between two looks; that counts as gone, never as an error."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
