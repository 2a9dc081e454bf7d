"""The engine's event bus: what the GUI and the CLI watch.

Subscribers are plain callables run on the engine's event loop; they must be quick (the GUI's
bridge re-emits each event as a queued Qt signal, the CLI redraws a line). Progress is
coalesced: a subscriber sees at most ``max_rate`` progress events a second per task, and always
the latest one; every other event is delivered at once and in order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

log = logging.getLogger(__name__)

TaskEventKind = Literal[
    "started", "progress", "paused", "resumed", "completed", "failed", "retry", "cancelled"
]


@dataclass(frozen=True, slots=True)
class TaskChanged:
    task_id: str
    run_id: str | None
    kind: TaskEventKind
    progress: float | None = None
    status_text: str | None = None
    error: str | None = None
    error_type: str | None = None
    #: The task's type, where the publisher has it at hand (a subscriber that cares about one
    #: type need not read each task back); None: not said.
    task_type: str | None = None
    #: A completion's material and result, where the publisher has them at hand (so that a
    #: subscriber need not read the task back); None: not said.
    material_id: str | None = None
    result: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RunChanged:
    run_id: str
    status: str


@dataclass(frozen=True, slots=True)
class Notification:
    """Something to tell the user (the GUI shows it in the tray)."""

    title: str
    text: str
    level: Literal["info", "warning", "error"] = "info"
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class EngineHeld:
    """The engine claims nothing new because the database cannot be written for now
    (``reason``: why, and what to do), or, with ``reason`` None, it can be written again."""

    reason: str | None


Event = TaskChanged | RunChanged | Notification | EngineHeld
Subscriber = Callable[[Event], None]


class EventBus:
    def __init__(self, max_rate: float = 10.0) -> None:
        self._subscribers: list[Subscriber] = []
        self._min_interval = 1.0 / max_rate
        self._last_progress: dict[str, float] = {}
        self._held: dict[str, TaskChanged] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns the function that removes it."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def publish(self, event: Event) -> None:
        if isinstance(event, TaskChanged):
            if event.kind == "progress":
                self._publish_progress(event)
                return
            # A status change supersedes any progress still held back for the task.
            self._held.pop(event.task_id, None)
            self._last_progress.pop(event.task_id, None)
        self._deliver(event)

    def publish_threadsafe(self, event: Event) -> None:
        """Publish from another thread (the store's writer thread)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.publish, event)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def _publish_progress(self, event: TaskChanged) -> None:
        now = time.monotonic()
        last = self._last_progress.get(event.task_id, 0.0)
        if now - last >= self._min_interval:
            self._last_progress[event.task_id] = now
            self._deliver(event)
            return
        first_held = event.task_id not in self._held
        self._held[event.task_id] = event
        if first_held:
            loop = self._loop or asyncio.get_running_loop()
            loop.call_later(last + self._min_interval - now, self._flush, event.task_id)

    def _flush(self, task_id: str) -> None:
        event = self._held.pop(task_id, None)
        if event is not None:
            self._last_progress[task_id] = time.monotonic()
            self._deliver(event)

    def _deliver(self, event: Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                log.exception("event subscriber %r failed", subscriber)
