"""The bridge: a change written to a real SQLite store reaches the model on the GUI thread
within a second; changes arrive in batches with one entry per row; an expired cursor brings
a new snapshot; and 10,000 signal emissions do not bring PySide6 down."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QObject, Signal

from fredica_app.gui.bridge import ChangeBridge
from fredica_app.gui.models import PROGRESS_ROLE, TaskTableModel
from fredica_app.services.queries import Queries
from tests.gui.factory import running
from tests.store.test_changes import submit
from workers.changes import Change, ChangeSet, RunFilter, Snapshot, TaskFilter
from workers.db import create_sqlite_engine
from workers.errors import CursorExpired
from workers.states import TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


@pytest.fixture
def sync_store(db_path: Path) -> Iterator[TaskStore]:
    """A store on a real file, driven from plain (non-async) tests: each call runs in its own
    short event loop — the store's work runs on its own threads, whatever loop awaits it."""
    store = TaskStore(create_sqlite_engine(db_path))
    yield store
    asyncio.run(store.close())


def test_a_change_written_to_the_store_reaches_the_model_within_a_second(
    qtbot: Any, sync_store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = asyncio.run(submit(sync_store, registry, n=3))
    model = TaskTableModel()
    bridge = ChangeBridge(Queries(sync_store), runs=None, tasks=TaskFilter())
    bridge.snapshot.connect(model.load)
    bridge.changes.connect(model.apply)
    try:
        with qtbot.waitSignal(bridge.snapshot, timeout=5000):
            bridge.start()
        assert model.rowCount() == 3
        first = created.task_ids["t0"]
        assert model.record_at(model.row_of(first)).status is TaskStatus.PENDING

        async def start_and_report() -> None:
            [claim] = await sync_store.claim("gui-test", start=True)
            await sync_store.report_progress(
                claim.id, claim.lease_token, progress=42.0, status_text="transcoding"
            )

        written = time.monotonic()
        asyncio.run(start_and_report())
        row = model.row_of(first)
        assert row is not None
        index = model.index(row, TaskTableModel.PROGRESS)
        qtbot.waitUntil(lambda: model.record_at(row).progress == 42.0, timeout=1000)
        assert time.monotonic() - written < 1.0
        assert model.record_at(row).status is TaskStatus.RUNNING
        assert model.data(index) == "42 % · transcoding"
        assert model.data(index, PROGRESS_ROLE).percent == 42.0
    finally:
        bridge.stop()


class FakeSource:
    """A change stream told what to hand out, from the test's thread."""

    def __init__(self) -> None:
        self.snapshots = 0
        self.sets: asyncio.Queue[ChangeSet | Exception] | None = None
        self.ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None

    async def snapshot(
        self, runs: RunFilter | None = None, tasks: TaskFilter | None = None
    ) -> Snapshot:
        self.snapshots += 1
        self.loop = asyncio.get_running_loop()
        self.sets = asyncio.Queue()
        self.ready.set()
        return Snapshot(cursor=self.snapshots * 100, tasks=(running(0, 1.0), running(1, 1.0)))

    async def follow(
        self, cursor: int, run_id: str | Collection[str] | None = None
    ) -> AsyncIterator[ChangeSet]:
        assert self.sets is not None
        while True:
            item = await self.sets.get()
            if isinstance(item, Exception):
                raise item
            yield item

    def put(self, item: ChangeSet | Exception) -> None:
        assert self.ready.wait(5) and self.loop is not None and self.sets is not None
        self.loop.call_soon_threadsafe(self.sets.put_nowait, item)


def test_changes_arrive_in_batches_one_entry_per_row(qtbot: Any) -> None:
    source = FakeSource()
    bridge = ChangeBridge(source, interval_ms=10_000)  # the test flushes by hand
    batches: list[list[Change]] = []
    bridge.changes.connect(batches.append)
    bridge.start()
    try:
        for n in range(1, 6):
            source.put(ChangeSet(cursor=100 + n, changes=(Change(100 + n, running(0, n * 10.0)),)))
        source.put(ChangeSet(cursor=106, changes=(Change(106, running(1, 5.0)),)))

        def delivered() -> bool:
            bridge.flush()
            return sum(len(b) for b in batches) > 0 and batches[-1][-1].record.id == "task-00001"

        qtbot.waitUntil(delivered, timeout=2000)
        latest = {c.record.id: c.record for b in batches for c in b}
        assert latest["task-00000"].progress == 50.0
        assert all(len({c.record.id for c in b}) == len(b) for b in batches)
    finally:
        bridge.stop()


def test_an_expired_cursor_brings_a_new_snapshot(qtbot: Any) -> None:
    source = FakeSource()
    bridge = ChangeBridge(source, interval_ms=20)
    snapshots: list[Snapshot] = []
    bridge.snapshot.connect(snapshots.append)
    bridge.start()
    try:
        qtbot.waitUntil(lambda: len(snapshots) == 1, timeout=2000)
        source.put(CursorExpired("behind the retention"))
        qtbot.waitUntil(lambda: len(snapshots) == 2, timeout=2000)
        assert snapshots[-1].cursor == 200
    finally:
        bridge.stop()
    assert source.snapshots == 2


def test_ten_thousand_signal_emissions(qtbot: Any) -> None:
    """PySide6 6.12.0 on Python 3.11 aborted the process after some thousands of emit()
    calls (hence the pin in pyproject): a crash here is that, back."""

    class Emitter(QObject):
        fired = Signal(object)

    emitter = Emitter()
    bridge = ChangeBridge(FakeSource())
    got: list[int] = []
    emitter.fired.connect(lambda value: got.append(value))
    bridge.changes.connect(lambda batch: got.append(len(batch)))
    for n in range(10_000):
        emitter.fired.emit(n)
        bridge.changes.emit([])
    assert len(got) == 20_000
    assert got[-2] == 9_999


def test_a_store_closed_under_a_read_as_the_bridge_stops_is_no_error(
    qtbot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The app closes its store as the window's bridge stops: a read caught in between fails
    (the store's threads are gone). That is the end, said nowhere, not a failure retried."""
    bridge: ChangeBridge

    class Closing:
        async def snapshot(self, runs: Any, tasks: Any) -> Snapshot:
            return Snapshot(cursor=1)

        async def follow(self, cursor: int, run_id: Any) -> AsyncIterator[ChangeSet]:
            bridge._stopping.set()  # stop() has begun, and the store closes meanwhile
            raise RuntimeError("cannot schedule new futures after shutdown")
            yield  # an async generator, as the real one

    bridge = ChangeBridge(Closing(), runs=None, tasks=TaskFilter())  # type: ignore[arg-type]
    bridge.start()
    assert bridge._thread is not None
    bridge._thread.join(5)
    assert not bridge._thread.is_alive()
    assert "reading the change stream failed" not in caplog.text
    bridge.stop()
