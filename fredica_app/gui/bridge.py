"""The change stream, read off the GUI thread and handed to it in batches.

A thread of the bridge's own runs an asyncio loop that reads a snapshot and then follows the
stream (``Queries.follow``: at once after a commit of this process, every 0.2 s otherwise).
It only puts what it reads into a pending batch, under a lock held for a dictionary update. A
QTimer on the GUI thread takes the pending batch every :data:`INTERVAL_MS` and emits it as
one signal: the GUI thread never touches SQLite, and a burst of a thousand changes costs it a
dozen slots, not a thousand. Within a batch a row appears once, with its latest state (a
task's progress reported five times in 80 ms is drawn once).

When the stream can no longer say what changed since the cursor (``CursorExpired``: the
viewer fell behind the retention of deletions), the bridge reads a new snapshot and emits it
again; the models load it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Collection, Iterable
from typing import Protocol

from PySide6.QtCore import QObject, QTimer, Signal

from workers.changes import Change, ChangeSet, RunFilter, Snapshot, TaskFilter
from workers.errors import CursorExpired

log = logging.getLogger(__name__)

#: Between two batches handed to the GUI thread: a few frames, well under what a person sees
#: as lag.
INTERVAL_MS = 80
#: After an unexpected error of the stream, try again after this many seconds.
RETRY = 1.0


class ChangeSource(Protocol):
    """What the bridge reads (``fredica_app.services.queries.Queries``)."""

    async def snapshot(
        self, runs: RunFilter | None = ..., tasks: TaskFilter | None = ...
    ) -> Snapshot: ...

    def follow(
        self, cursor: int, run_id: str | Collection[str] | None = ...
    ) -> AsyncIterator[ChangeSet]: ...


class ChangeBridge(QObject):
    """Delivers a snapshot, then batches of changes, on the GUI thread.

    ``runs`` and ``tasks`` choose the snapshot's pages (None: none of that kind); ``run_id``
    limits the stream to some runs and their tasks. Connect :attr:`snapshot` to the models'
    ``load`` and :attr:`changes` to their ``apply``, then :meth:`start`; :meth:`stop` when the
    window closes."""

    #: A :class:`~workers.changes.Snapshot`: (re)load the models from it.
    snapshot = Signal(object)
    #: A list of :class:`~workers.changes.Change`, one per row, in the order of their last
    #: change: apply it to the models.
    changes = Signal(object)

    def __init__(
        self,
        source: ChangeSource,
        *,
        runs: RunFilter | None = None,
        tasks: TaskFilter | None = None,
        run_id: str | Collection[str] | None = None,
        interval_ms: int = INTERVAL_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._source = source
        self._runs = runs
        self._tasks = tasks
        self._run_id = run_id
        self._lock = threading.Lock()
        self._pending: dict[str, Change] = {}
        self._pending_snapshot: Snapshot | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.flush)

    def start(self, cursor: int | None = None) -> None:
        """Start reading: a snapshot first, or, given the ``cursor`` of one already loaded,
        the changes after it."""
        if self._thread is not None:
            raise RuntimeError("the bridge has already started")
        self._thread = threading.Thread(
            target=self._run, args=(cursor,), name="fredica-changes", daemon=True
        )
        self._thread.start()
        self._timer.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop reading and delivering. Waits up to ``timeout`` for the reading thread (a read
        in progress finishes first; it is one indexed query)."""
        self._timer.stop()
        self._stopping.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # its loop has already closed
                loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout)

    def flush(self) -> None:
        """Hand over what is pending now (the timer calls it; a test may too)."""
        with self._lock:
            snapshot, self._pending_snapshot = self._pending_snapshot, None
            if not self._pending and snapshot is None:
                return
            batch = list(self._pending.values())
            self._pending = {}
        if snapshot is not None:
            self.snapshot.emit(snapshot)
        if batch:
            self.changes.emit(batch)

    # --- the reading thread ----------------------------------------------------------------

    def _run(self, cursor: int | None) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(self._follow(cursor))

    async def _follow(self, cursor: int | None) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        # stop() sets the flag before it looks for the task: one of the two sees the other.
        while not self._stopping.is_set():
            try:
                if cursor is None:
                    snap = await self._source.snapshot(self._runs, self._tasks)
                    self._post_snapshot(snap)
                    cursor = snap.cursor
                async for change_set in self._source.follow(cursor, self._run_id):
                    self._post(change_set.changes)
                    cursor = change_set.cursor
            except CursorExpired:
                log.info("the change stream's cursor expired: reading a new snapshot")
                cursor = None
            except Exception:
                if self._stopping.is_set():  # the store closed under a read as it stopped
                    return
                log.exception("reading the change stream failed; trying again")
                await asyncio.sleep(RETRY)

    def _post_snapshot(self, snap: Snapshot) -> None:
        with self._lock:
            self._pending_snapshot = snap
            self._pending = {}  # older than the snapshot, which holds them

    def _post(self, changes: Iterable[Change]) -> None:
        with self._lock:
            pending = self._pending
            for change in changes:
                # Last change wins, and moves to the end: rows are inserted in that order.
                pending.pop(change.record.id, None)
                pending[change.record.id] = change
