"""Slots: how many attempts may run, and which paused attempt lends or gets back its slot.

Pure: plain values in, plain values out; no clock, no event loop. The engine keeps one
:class:`SlotTable`, tells it when an attempt starts, stops, pauses, parks or resumes, and does
what the answers say (wake the attempt, say it waits, claim new work into free slots).

Concurrency is bounded twice: ``max_workers`` for everything together, and a number of slots
per resource class (``gpu``, ``cpu``, ``net``, ``io``…). An attempt *holds* a slot of its class
from its start to its end, except while it is paused with nothing held:

- a paused attempt that has stopped for its pause (*parked*) lends its slot to other work,
  unless it says its resources are still held (a model kept in GPU memory) — so a pause never
  puts two tasks on one GPU;
- on resume, an attempt whose slot was lent takes a free one at once, or waits for one, still
  stopped; waiting attempts get freed slots before new claims, longest waiting first;
- an attempt that goes on by itself (its job resumed without being asked) holds its slot again
  at once, whatever the count says: it is running;
- an attempt whose heavy part is done (*finishing*: its ffmpeg has exited, what is left is
  checking and committing the output) gives its class's slot to the next claim at once, and
  keeps its place in ``max_workers`` until it ends — the next file's encode starts while the
  last one's output is verified and synced, and no more attempts run than ``max_workers``.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from enum import Enum


@dataclass(slots=True)
class Seat:
    """One attempt's place in the slots. Read it; change it through its :class:`SlotTable`."""

    #: The attempt's resource class (``gpu``, ``cpu``…).
    resource: str
    #: Counts against the slots. False while paused with nothing held (the slot is lent).
    held: bool = True
    #: Resumed while its slot was lent: waits (still paused) for a free slot since then (the
    #: caller's clock). None when it does not wait.
    waiting_since: float | None = None
    #: Its heavy part is done: it no longer counts against its class's slots, only against
    #: ``max_workers`` (while held).
    finishing: bool = False

    @property
    def waiting(self) -> bool:
        return self.waiting_since is not None


class Resume(Enum):
    """What a resumed attempt does (:meth:`SlotTable.resume`)."""

    #: It kept its slot, or took a free one before it ever waited: it goes on.
    AT_ONCE = "at_once"
    #: It waited for a slot and got one: it goes on, and says it was resumed.
    GRANTED = "granted"
    #: No slot is free: it starts waiting for one, still stopped (and says so).
    WAITS = "waits"
    #: No slot is free, and it already waits for one: nothing changes.
    STILL_WAITS = "still_waits"


class SlotTable:
    """The slots of one engine: each attempt it runs, by key (the engine uses lease tokens).

    ``slots`` maps each resource class to its number of slots; an attempt of a class not in
    it counts against ``max_workers`` but can never take a slot back once it lent its own.
    A pause, a park or a resume of an attempt no longer in the table (it has ended) changes
    nothing: it holds no slot any more.
    """

    def __init__(self, max_workers: int, slots: Mapping[str, int]) -> None:
        self.max_workers = max_workers
        self.slots = dict(slots)
        self._seats: dict[str, Seat] = {}

    def __len__(self) -> int:
        return len(self._seats)

    def __contains__(self, key: object) -> bool:
        return key in self._seats

    def seat(self, key: str) -> Seat:
        return self._seats[key]

    # --- attempts come and go -------------------------------------------------------------

    def add(self, key: str, resource: str) -> Seat:
        """A started attempt: it holds a slot of ``resource``. The caller claimed it into a
        free slot (:meth:`free`), so the limits hold."""
        seat = self._seats[key] = Seat(resource)
        return seat

    def discard(self, key: str) -> None:
        """The attempt ended (or was dropped): its slot, if it held one, is free."""
        self._seats.pop(key, None)

    def clear(self) -> None:
        self._seats.clear()

    # --- counting -------------------------------------------------------------------------

    def free(self) -> tuple[int, dict[str, int]]:
        """``(free in total, free per class)``: what a claim may take now. The per-class
        counts are capped by the total, and only classes with a free slot are listed."""
        holding = [s for s in self._seats.values() if s.held]
        free_total = self.max_workers - len(holding)
        used: dict[str, int] = {}
        for s in holding:
            if not s.finishing:
                used[s.resource] = used.get(s.resource, 0) + 1
        per_class = {k: min(v - used.get(k, 0), free_total) for k, v in self.slots.items()}
        return free_total, {k: v for k, v in per_class.items() if v > 0}

    def _take(self, seat: Seat) -> bool:
        free_total, per_class = self.free()
        if free_total > 0 and (seat.finishing or per_class.get(seat.resource, 0) > 0):
            seat.held = True
            return True
        return False

    def finishing(self, key: str) -> bool:
        """The attempt's heavy part is done: its class's slot is free for the next claim (it
        still counts against ``max_workers`` while it holds its place). True when that freed
        a slot of its class now (it held one, and had not said so before)."""
        seat = self._seats.get(key)
        if seat is None or seat.finishing:
            return False
        seat.finishing = True
        return seat.held

    # --- pause and resume -----------------------------------------------------------------

    def paused(self, key: str) -> None:
        """The attempt was asked to pause (again): whatever wait for a slot it had is over;
        its slot stays held or lent as it was."""
        seat = self._seats.get(key)
        if seat is not None:
            seat.waiting_since = None

    def parked(self, key: str, *, keeps_resources: bool) -> bool:
        """The paused attempt has stopped for its pause. Unless it keeps its resources (or
        already lent its slot), it lends its slot to other work. True when it lent it now."""
        seat = self._seats.get(key)
        if seat is None or keeps_resources or not seat.held:
            return False
        seat.held = False
        return True

    def running(self, key: str) -> None:
        """The attempt goes on by itself (its job resumed): it runs, so it holds its slot."""
        seat = self._seats.get(key)
        if seat is not None:
            seat.held, seat.waiting_since = True, None

    def resume(self, key: str, now: float) -> Resume:
        """The attempt is asked to resume at ``now``: it goes on if it kept its slot or one is
        free for it; otherwise it waits (from ``now``, or from when it began waiting)."""
        seat = self._seats.get(key)
        if seat is None:
            return Resume.AT_ONCE  # it has ended: nothing to wait for
        if seat.held or self._take(seat):
            waited, seat.waiting_since = seat.waiting, None
            return Resume.GRANTED if waited else Resume.AT_ONCE
        if seat.waiting:
            return Resume.STILL_WAITS
        seat.waiting_since = now
        return Resume.WAITS

    def grant_waiting(self, given_up: Container[str] = ()) -> list[str]:
        """Free slots to the attempts that wait for one, longest waiting first (in the order
        they were added on a tie). Those in ``given_up`` (cancelled) stop waiting without a
        slot. Returns the keys of the attempts that got one: they may go on."""
        waiting = [
            (since, key, seat)
            for key, seat in self._seats.items()
            if (since := seat.waiting_since) is not None
        ]
        granted = []
        for _, key, seat in sorted(waiting, key=lambda item: item[0]):
            if key in given_up:
                seat.waiting_since = None
            elif self._take(seat):
                seat.waiting_since = None
                granted.append(key)
        return granted
