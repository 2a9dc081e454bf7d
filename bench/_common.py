"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import asyncio
import random
import re
import sqlite3
import time
from pathlib import Path

import psutil

from tests.support.invariants import RUN_COUNTERS

_VARIANT = "89ab"


def fmt_int(n: int) -> str:
    return f"{n:,}"


def pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


class Ids:
    """Reproducible uuid4-shaped strings (twice as fast as going through uuid.UUID)."""

    def __init__(self, seed: str) -> None:
        self._rng = random.Random(seed)

    def __call__(self) -> str:
        h = f"{self._rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def inconsistent_runs(conn: sqlite3.Connection) -> int:
    """How many runs have counters that disagree with their tasks."""
    return len(conn.execute(RUN_COUNTERS).fetchall())


def profile_location(key: tuple[str, int, str]) -> str:
    """A cProfile key as ``file:line(function)``, shortened to the package or repo path."""
    file, line, fn = key
    if file == "~":
        return fn
    file = re.sub(r"^.*/(site-packages|lib/python3\.\d+)/", "", file)
    file = file.removeprefix(f"{Path(__file__).resolve().parent.parent}/")
    return f"{file}:{line}({fn})"


def descendants(pid: int) -> set[int]:
    """Every process under ``pid`` (empty when it is gone)."""
    try:
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def alive(pids: set[int]) -> list[str]:
    """The processes among ``pids`` that still run (zombies count as gone)."""
    out = []
    for pid in sorted(pids):
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{pid} ({' '.join(p.cmdline())[:80]})")
        except psutil.NoSuchProcess:
            continue
    return out


async def wait_gone(pids: set[int], within: float = 5.0) -> list[str]:
    """Wait until none of ``pids`` runs, at most ``within`` seconds; the ones left."""
    left = alive(pids)
    deadline = time.monotonic() + within
    while left and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        left = alive(pids)
    return left
