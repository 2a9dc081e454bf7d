"""Waiting on the application host, for tests (the GUI itself never waits)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def call(host: Any, work: Callable[[Any], Awaitable[T]], timeout: float = 30) -> T:
    """Run ``work(app)`` on the host's loop and wait for its result (tests only: the GUI
    never waits)."""
    result: T = host.call(work).result(timeout)
    return result
