"""The one way in for controlling work: pause, resume, cancel or retry a task or a whole run,
and pause or resume the queue. The CLI, ``fredica process`` and the GUI all come here.

Where the change goes depends on where the engine runs, not on the caller:

- an engine runs in this process (`Fredica.engine_session`): through its methods, so a
  task it runs is signalled at once (its executor's cancel or pause channel), without waiting
  for the engine to notice a database write;
- otherwise through the store: the engine of another process on the data directory (a
  ``fredica worker``, the app) reads the change within half a second (it watches the
  database's change counter; its heartbeat, every 5 s, is the fallback), and with no engine at
  all the change simply waits in the database.

Either way the results and the errors are the same: :class:`NotFound` for an id that is neither
a task nor a run, :class:`InvalidState` for an action that does not apply (pausing or
cancelling a task that has ended, retrying one that has not failed or been cancelled, retrying
a run with nothing to retry). Resuming what is not held, or pausing what already is, changes
nothing and is not an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, get_args

from workers.engine import WorkerEngine
from workers.records import RunRecord
from workers.store import TaskStore


class Controlled(Protocol):
    """What control needs of the application (``services.app.Fredica`` is one): named here
    rather than imported, so that the application and its control do not import each other."""

    @property
    def running_engine(self) -> WorkerEngine | None: ...
    @property
    def store(self) -> TaskStore: ...
    @property
    def queue_flag(self) -> Path: ...
    def set_queue_paused(self, paused: bool) -> None: ...


Action = Literal["pause", "resume", "cancel", "retry"]
#: The actions on a task or a run, in the order the CLI lists them.
ACTIONS: tuple[Action, ...] = get_args(Action)


@dataclass(frozen=True, slots=True)
class ControlResult:
    """What an action did."""

    #: The task's or the run's id.
    id: str
    action: Action
    #: Whether ``id`` named a task or a run.
    target: Literal["task", "run"]
    #: The tasks it changed (empty when there was nothing to change: a resume of what was not
    #: held). A cancel lists the tasks cancelled with it downstream; a retry the tasks made
    #: pending again, those cancelled because of it included.
    changed: tuple[str, ...]


class Control:
    """Controls the work of one application (see the module's docstring). Holds no state: the
    engine is looked up at each call, so one instance serves before, during and after an
    engine session."""

    def __init__(self, app: Controlled) -> None:
        self._app = app

    @property
    def engine(self) -> WorkerEngine | None:
        """The engine running in this process, told directly; None: the store is written."""
        return self._app.running_engine

    async def pause(self, some_id: str) -> ControlResult:
        """Hold a task, or every unfinished task of a run. A held pending task is not claimed;
        a running one is asked to pause ("pausing…" until its attempt has stopped)."""
        return await self.apply("pause", some_id)

    async def resume(self, some_id: str) -> ControlResult:
        """Release a held task, or every held unfinished task of a run."""
        return await self.apply("resume", some_id)

    async def cancel(self, some_id: str) -> ControlResult:
        """Cancel an unfinished task and everything downstream of it, or a whole run."""
        return await self.apply("cancel", some_id)

    async def retry(self, some_id: str) -> ControlResult:
        """Run a failed or cancelled task again (with the tasks cancelled because of it), or
        every failed or cancelled task of a run."""
        return await self.apply("retry", some_id)

    async def apply(self, action: Action, some_id: str) -> ControlResult:
        """Do ``action`` to the task or run ``some_id``."""
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
        store = self._app.store
        target = await store.find(some_id)  # NotFound: neither a task nor a run
        is_run = isinstance(target, RunRecord)
        engine = self.engine
        changed: list[str]
        if action == "retry":
            # Nothing runs yet to be told: the store makes the tasks pending, and an engine of
            # ours looks for work at once rather than at its next poll.
            changed = await (store.retry_run(target.id) if is_run else store.retry(target.id))
            if engine is not None:
                engine.wake()
        elif engine is not None:
            if action == "cancel":
                changed = await engine.cancel(target.id)
            else:
                changed = await (engine.pause if action == "pause" else engine.resume)(target.id)
        elif action == "cancel":
            outcome = await (store.cancel_run(target.id) if is_run else store.cancel(target.id))
            changed = list(outcome.cancelled)
        elif is_run:
            changed = await store.set_run_paused(target.id, action == "pause")
        else:
            changed = [target.id] if await store.set_paused(target.id, action == "pause") else []
        return ControlResult(target.id, action, "run" if is_run else "task", tuple(changed))

    # --- the queue ----------------------------------------------------------------------

    @property
    def queue_paused(self) -> bool:
        """Whether the queue is paused (no new task is claimed; running ones go on)."""
        return self._app.queue_flag.exists()

    async def pause_queue(self) -> None:
        """Stop claiming new tasks; running ones go on ("pause after current"). Kept across
        restarts until :meth:`resume_queue`. (A coroutine like the other actions, although a
        flag file is written today: callers need not change if it moves to the database.)"""
        # The flag first: an engine of ours re-reads it every half second and would undo a
        # pause it does not find there.
        self._app.set_queue_paused(True)
        if self.engine is not None:
            self.engine.pause_queue()

    async def resume_queue(self) -> None:
        """Claim tasks again."""
        self._app.set_queue_paused(False)
        if self.engine is not None:
            self.engine.resume_queue()
