"""What a viewer reads: a snapshot of runs and tasks, then the changes since — the GUI's table
of 10,000 rows, ``fredica watch``, ``fredica process`` following its run.

A viewer loads a snapshot once (pages of runs and tasks, and the stream's cursor when they were
read, in one read transaction) and then applies change sets: each holds the current state of
every run and task that changed since its cursor, once per row, and the ids deleted. Whoever
wrote the change — an engine in this process, a ``fredica worker`` beside it, a CLI command —
the database numbered it (workers.changes).

Following polls the stream's cheap indexed read every :data:`POLL` seconds (one read of a
counter's row when nothing changed), and wakes at once when this process's own store commits:
a change written here shows at once, one written by another process within :data:`POLL` and a
read.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Collection, Iterable

from workers.changes import ChangeSet, RunFilter, Snapshot, TaskFilter, Tombstone
from workers.records import RunRecord, TaskRecord
from workers.states import is_terminal
from workers.store import TaskStore

__all__ = [
    "POLL",
    "ChangeSet",
    "Queries",
    "RunFilter",
    "RunsFollower",
    "Snapshot",
    "TaskFilter",
]

#: Seconds between two reads of the stream while nothing wakes the follower.
POLL = 0.2
#: At least this long between two reads, however often this process commits: an engine
#: draining a queue commits hundreds of times a second, a viewer needs a few frames.
MIN_INTERVAL = 0.05
#: Up to this many runs, a follower's reads name them; past it, it tells them apart itself.
_RUNS_NAMED = 64
#: Entries per change set.
LIMIT = 1000
#: A snapshot's runs unless told: the 1,000 newest.
NEWEST_RUNS = RunFilter()


class Queries:
    """Snapshots and the change stream of one data directory's queue."""

    def __init__(self, store: TaskStore, *, poll: float = POLL, limit: int = LIMIT) -> None:
        self.store = store
        self.poll = poll
        self.limit = limit

    async def snapshot(
        self, runs: RunFilter | None = NEWEST_RUNS, tasks: TaskFilter | None = None
    ) -> Snapshot:
        """A page of runs (by default the 1,000 newest) and, when asked, a page of tasks,
        with the cursor to follow from: nothing that changes after them is missed."""
        return await self.store.snapshot(runs, tasks)

    async def cursor(self) -> int:
        """The stream's position now: following from it shows what changes from now on."""
        return await self.store.change_cursor()

    async def changes_since(
        self, cursor: int, run_id: str | Collection[str] | None = None
    ) -> ChangeSet:
        """What changed after ``cursor`` (one set, up to the limit: ``more`` says there is
        more already). :class:`~workers.errors.CursorExpired` when that can no longer be told:
        take a new snapshot."""
        return await self.store.changes_since(cursor, run_id, limit=self.limit)

    async def follow(
        self, cursor: int, run_id: str | Collection[str] | None = None
    ) -> AsyncGenerator[ChangeSet, None]:
        """Change sets after ``cursor``, as they come, for ever (stop iterating to stop);
        only non-empty ones. With ``run_id``, only those runs and their tasks."""
        async with self.commit_event() as wake:
            last = 0.0
            while True:
                wake.clear()
                await asyncio.sleep(max(0.0, last + MIN_INTERVAL - time.monotonic()))
                last = time.monotonic()
                changes = await self.changes_since(cursor, run_id)
                cursor = changes.cursor
                if changes.changes:
                    yield changes
                if not changes.more:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.poll):
                            await wake.wait()

    @contextlib.asynccontextmanager
    async def commit_event(self) -> AsyncIterator[asyncio.Event]:
        """Within it, an event set whenever this process's store commits (the store calls its
        listeners on its writer thread: the event is set on this loop)."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def on_commit() -> None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(wake.set)

        self.store.commit_listeners.append(on_commit)
        try:
            yield wake
        finally:
            self.store.commit_listeners.remove(on_commit)

    def follower(self, run_ids: Iterable[str]) -> RunsFollower:
        """Follow these runs and their tasks (call :meth:`RunsFollower.start` first)."""
        return RunsFollower(self, list(run_ids))


class RunsFollower:
    """Some runs and their tasks, kept current from the change stream (``fredica process``).

    :meth:`start` reads them (one snapshot); each :meth:`wait` applies what changed since,
    returning as soon as something did. Nothing runs between two calls: there is nothing to
    stop."""

    def __init__(self, queries: Queries, run_ids: list[str]) -> None:
        self.queries = queries
        self.run_ids = run_ids
        self.runs: dict[str, RunRecord] = {}
        #: The tasks the last :meth:`start` read or :meth:`wait` changed, in that order.
        self.changed: list[TaskRecord] = []
        self._followed = set(run_ids)
        self._tasks: dict[str, TaskRecord] = {}
        self._live: set[str] = set()  # the tasks not finished yet
        self._cursor = 0
        self._last_read = 0.0

    async def start(self) -> None:
        """Read the runs and their tasks (:class:`~workers.errors.NotFound` for a run that
        does not exist)."""
        snap = await self.queries.snapshot(
            RunFilter(ids=self.run_ids, limit=None), TaskFilter(run_ids=self.run_ids, limit=None)
        )
        self.runs = {r.id: r for r in snap.runs}
        self._tasks = {}
        self._live = set()
        for t in snap.tasks:
            self._upsert(t)
        self.changed = sorted(self._tasks.values(), key=lambda t: (t.created_at, t.id))
        self._cursor = snap.cursor

    @property
    def tasks(self) -> dict[str, list[TaskRecord]]:
        """Each run's tasks as they are now, in their run's order."""
        out: dict[str, list[TaskRecord]] = {rid: [] for rid in self.run_ids}
        for t in sorted(self._tasks.values(), key=lambda t: (t.created_at, t.id)):
            if t.workflow_run_id in out:
                out[t.workflow_run_id].append(t)
        return out

    @property
    def ended(self) -> bool:
        """Whether every task of the runs has finished."""
        return not self._live

    async def wait(self, within: float, also: asyncio.Event | None = None) -> bool:
        """Apply the changes that come within ``within`` seconds, returning as soon as some
        did (True), ``also`` is set, or the time is up (False)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        # Many runs (a folder of files) are told apart here rather than in SQL: naming each
        # in the query costs every read as much as the runs are many.
        named = self.run_ids if len(self.run_ids) <= _RUNS_NAMED else None
        self.changed = []
        async with self.queries.commit_event() as wake:
            while True:
                wake.clear()
                await asyncio.sleep(max(0.0, self._last_read + MIN_INTERVAL - loop.time()))
                self._last_read = loop.time()
                changes = await self.queries.changes_since(self._cursor, named)
                self.apply(changes)
                if changes.changes:
                    return True
                left = deadline - loop.time()
                if left <= 0 or (also is not None and also.is_set()):
                    return False
                waiters = [asyncio.ensure_future(wake.wait())]
                if also is not None:
                    waiters.append(asyncio.ensure_future(also.wait()))
                try:
                    await asyncio.wait(
                        waiters,
                        timeout=min(left, self.queries.poll),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    for waiter in waiters:
                        waiter.cancel()

    def apply(self, changes: ChangeSet) -> None:
        """Upsert the changed rows of the runs followed, drop the deleted ones."""
        for change in changes.changes:
            record = change.record
            if isinstance(record, RunRecord):
                if record.id in self._followed:
                    self.runs[record.id] = record
            elif isinstance(record, TaskRecord):
                if record.workflow_run_id in self._followed:
                    self._upsert(record)
                    self.changed.append(record)
            elif isinstance(record, Tombstone) and record.kind == "run":
                self.runs.pop(record.id, None)
            elif isinstance(record, Tombstone):
                self._tasks.pop(record.id, None)
                self._live.discard(record.id)
        self._cursor = changes.cursor

    def _upsert(self, task: TaskRecord) -> None:
        self._tasks[task.id] = task
        if is_terminal(task.status):
            self._live.discard(task.id)
        else:
            self._live.add(task.id)
