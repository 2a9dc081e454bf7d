"""Looking at the process table from tests."""

from __future__ import annotations

import asyncio

import psutil


def job_processes() -> list[psutil.Process]:
    """Our spawned job children, warm spares included (multiprocessing's resource tracker is
    not a job)."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(p.cmdline())
        except psutil.NoSuchProcess:
            continue
        if "multiprocessing" in cmd and "resource_tracker" not in cmd:
            out.append(p)
    return out


async def assert_no_job_process_left(within: float = 5.0) -> None:
    for _ in range(int(within / 0.1)):
        if not job_processes():
            return
        await asyncio.sleep(0.1)
    assert job_processes() == [], "a job process outlived its test"
