"""What the engine keeps of each attempt it runs, its counters, and the default slots.

An attempt is keyed by its lease token, never by its task's id: a task may have two at once
(the one winding down after a stall or a cancel, and the next, which waits for it).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Any

from workers.executor import ExecutionContext, TaskExecutor
from workers.records import ClaimedTask
from workers.slots import Seat
from workers.spec import PreparedTask

RESOURCE_NAMES = {"gpu": "GPU", "cpu": "CPU", "net": "network", "io": "disk"}


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity, where the system says: a container's
    or a ``taskset``'s limit), else the machine's."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return max(1, len(affinity(0)))
    return os.cpu_count() or 2


def default_slots() -> dict[str, int]:
    """The slots per resource class when settings name none.

    ``cpu``: one per core. A job of this class (an x264 encode, a CPU transcription) runs
    several threads, yet one at a time leaves cores idle through each job's serial parts
    (opening and probing its input, the muxer, the output's verification); one per core is
    what ``xargs -P<cores>`` does, and measured with the batch bench it keeps the machine
    as busy. ``io`` (a probe, a subtitle extract, an export) and ``net`` wait on the disk or
    the network more than on a core: four each. ``gpu``: one — two models in
    one card's memory is how jobs run out of it."""
    return {"gpu": 1, "cpu": usable_cores(), "net": 4, "io": 4}


@dataclass
class Running:
    """One attempt this engine runs: its claim, executor, place in the slots, context and
    job, and where it stands in a pause or a cancel."""

    claimed: ClaimedTask
    executor: TaskExecutor | None
    #: Its place in the slots (held, lent, waiting for one): the engine's SlotTable changes it.
    seat: Seat
    ctx: ExecutionContext | None = None
    job: asyncio.Task[None] | None = None
    new_tasks: tuple[PreparedTask, ...] = ()  # validated fan-out to add with the completion
    forced: bool = False  # cancelled from outside after the grace period
    shutdown: bool = False  # stopped by an engine shutdown: left to recovery
    #: An earlier attempt of the same task that still winds down in this engine: this one
    #: starts only once that one has stopped (two attempts of a task never run at once).
    previous: Running | None = None
    #: Failed by the stall watchdog (already recorded): its end is not a cancel.
    stalled: bool = False
    #: Its end has been handed to the loop (``_finished``, or dropped for recovery).
    ended: bool = False
    #: It has stopped for the current pause (a ``paused`` frame, ``wait_if_paused``): until
    #: then a user's pause shows as "pausing…".
    parked: bool = False
    #: Why its job asked for the current pause itself (None: a user's pause).
    pause_reason: str | None = None
    #: Progress reported but not written yet: it goes with the engine's next turn.
    progress_due: dict[str, Any] = field(default_factory=dict)
    #: The last status text reported for it.
    last_text: str | None = None

    @property
    def resource(self) -> str:
        return self.claimed.task.resource

    @property
    def token(self) -> str:
        return self.claimed.lease_token


@dataclass
class EngineStats:
    claimed: int = 0
    completed: int = 0
    failed: int = 0
    retried: int = 0
    cancelled: int = 0
    #: Of ``completed``: run inline, claimed and completed in one transaction.
    inline: int = 0
    ticks: int = 0
    started_at: float = field(default_factory=time.monotonic)
