"""The engine's control channels: cancel, pause and resume of the attempts it runs, the
slots of paused attempts (the rules are :mod:`workers.slots`), and the queue's pause.

A mixin of :class:`~workers.engine.WorkerEngine`, kept apart so that each module holds one
concept: the engine's loop (claims, outcomes, heartbeats) there, what a user's or a job's
pause and cancel do to a running attempt here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from workers.events import EventBus, TaskChanged
from workers.records import RunRecord
from workers.running import RESOURCE_NAMES, Running
from workers.slots import Resume, SlotTable
from workers.store import TaskStore

log = logging.getLogger("workers.engine")


class ControlChannels:
    """Cancel, pause and resume of a task or a run, reaching the attempts this engine runs."""

    # What the engine provides (set in WorkerEngine.__init__).
    store: TaskStore
    bus: EventBus
    cancel_grace: float
    _slots: SlotTable
    _running: dict[str, Running]
    _current: dict[str, Running]
    _queue_paused: bool
    _stopping: bool

    def wake(self) -> None:
        raise NotImplementedError

    def _background_call(self, coro: Coroutine[Any, Any, Any]) -> None:
        raise NotImplementedError

    def _signal_cancel(self, r: Running) -> None:
        if r.job is None or r.job.done():
            return
        if r.ctx is None:
            # Not begun (it waits for its previous attempt to stop): nothing to wind down.
            r.forced = True
            r.job.cancel()
            return
        r.ctx.cancel_event.set()
        r.ctx.resume_event.set()
        asyncio.get_running_loop().call_later(self.cancel_grace, self._force_cancel, r)

    def _force_cancel(self, r: Running) -> None:
        if r.job is not None and not r.job.done():
            log.warning(
                "task %s ignored its cancel for %.0f s; forcing", r.claimed.id, self.cancel_grace
            )
            r.forced = True
            r.job.cancel()

    async def cancel(self, some_id: str) -> list[str]:
        """Cancel a task or a run; the running tasks this engine holds are signalled."""
        target = await self.store.find(some_id)
        if isinstance(target, RunRecord):
            outcome = await self.store.cancel_run(target.id)
        else:
            outcome = await self.store.cancel(target.id)
        for task_id in outcome.was_running:
            for r in self._attempts_of(task_id):
                self._signal_cancel(r)
        self.wake()
        return list(outcome.cancelled)

    async def pause(self, some_id: str) -> list[str]:
        return await self._set_paused(some_id, True)

    async def resume(self, some_id: str) -> list[str]:
        return await self._set_paused(some_id, False)

    async def _set_paused(self, some_id: str, paused: bool) -> list[str]:
        target = await self.store.find(some_id)
        if isinstance(target, RunRecord):
            changed = await self.store.set_run_paused(target.id, paused)
        else:
            changed = [target.id] if await self.store.set_paused(target.id, paused) else []
        for task_id in changed:
            r = self._current.get(task_id)
            if r is not None and r.ctx is not None:
                if paused:
                    self._pause_running(r)
                else:
                    self._resume_running(r)
            run_id = r.claimed.task.workflow_run_id if r else None
            self.bus.publish(TaskChanged(task_id, run_id, "paused" if paused else "resumed"))
        self.wake()
        return changed

    # --- slots of paused attempts (docs/architecture.md) ---------------------------------

    def _pause_running(self, r: Running) -> None:
        assert r.ctx is not None
        if not r.ctx.paused:  # a new pause, the user's: the attempt has not stopped for it
            r.parked, r.pause_reason = False, None
        r.ctx.resume_event.clear()
        self._slots.paused(r.token)

    def _pausing(self, r: Running) -> bool:
        """Asked to pause by the user, the attempt has not stopped for it yet."""
        ctx = r.ctx
        return (
            ctx is not None
            and ctx.paused
            and not ctx.cancelled
            and not r.parked
            and not r.seat.waiting
            and r.pause_reason is None
        )

    def _parked(self, r: Running, held: bool) -> None:
        """The attempt has stopped for its pause: say so ("pausing…" until now); unless it
        holds its resources, lend its slot to other work."""
        ctx = r.ctx
        if ctx is None or not ctx.paused or ctx.cancelled or r.seat.waiting:
            return
        if not r.parked and r.pause_reason is None and not self._stopping:
            # The job's own word for it when it has one ("paused; the model … is unloaded").
            last = r.last_text or ""
            text = last if last.startswith("paused") else "paused"
            self._background_call(ctx.report(status_text=text, force=True))
        r.parked = True
        # While stopping nothing is lent: nothing new would be claimed into the slot.
        if self._stopping or not self._slots.parked(r.token, keeps_resources=held):
            return
        task = r.claimed.task
        name = RESOURCE_NAMES.get(r.resource, r.resource)
        log.info("task %s paused: its %s slot is free meanwhile", task.id, name)
        self.bus.publish(
            TaskChanged(
                task.id, task.workflow_run_id, "paused", status_text=f"paused ({name} slot freed)"
            )
        )
        self.wake()

    def _finishing(self, r: Running) -> None:
        """The attempt's heavy part is done: the next task may take its class's slot now,
        while it checks and commits its output."""
        if self._slots.finishing(r.token) and not self._stopping:
            self.wake()

    def _resume_running(self, r: Running) -> None:
        """Resume at once when the attempt kept its slot or a slot is free; otherwise it stays
        stopped, waiting for a slot ("waiting for a free GPU slot"), ahead of new claims."""
        assert r.ctx is not None
        outcome = self._slots.resume(r.token, time.monotonic())
        if outcome is Resume.GRANTED:
            self._go_on(r)  # says so: it was "waiting for a free … slot"
            return
        if outcome is Resume.AT_ONCE:
            r.ctx.resume_event.set()
            return
        if outcome is Resume.WAITS:
            text = f"waiting for a free {RESOURCE_NAMES.get(r.resource, r.resource)} slot"
            self._background_call(r.ctx.report(status_text=text, force=True))
        self.wake()

    def _grant_waiting(self) -> list[Running]:
        """Free slots for resumed attempts that wait for one, longest waiting first; a
        cancelled one stops waiting."""
        given_up = {token for token, r in self._running.items() if r.ctx is None or r.ctx.cancelled}
        return [self._running[token] for token in self._slots.grant_waiting(given_up)]

    def _go_on(self, r: Running) -> None:
        """A resumed attempt got its slot back."""
        if r.ctx is None or r.ctx.cancelled or r.seat.waiting or not r.seat.held:
            return
        r.ctx.resume_event.set()
        task = r.claimed.task
        self.bus.publish(TaskChanged(task.id, task.workflow_run_id, "resumed"))
        self._background_call(r.ctx.report(status_text="resumed", force=True))

    def pause_queue(self) -> None:
        """Stop claiming; what runs goes on ("pause after current")."""
        self._queue_paused = True

    def resume_queue(self) -> None:
        self._queue_paused = False
        self.wake()

    @property
    def queue_paused(self) -> bool:
        return self._queue_paused

    @property
    def running_ids(self) -> list[str]:
        """The ids of the tasks this engine runs an attempt of."""
        return list(dict.fromkeys(r.claimed.id for r in self._running.values()))

    def _attempts_of(self, task_id: str) -> list[Running]:
        return [r for r in self._running.values() if r.claimed.id == task_id]
