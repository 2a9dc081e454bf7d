"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import random

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
