"""GUI benchmark: the queue's task model under a 10,000-row queue (``fredica_app.gui``).

Loads 10,000 running tasks into ``TaskTableModel`` shown in a ``QTableView`` with the progress
delegate (offscreen), then sends bursts of 1,000 progress events over those rows through a real
``ChangeBridge`` (its thread, its lock, its 80 ms timer), from a stand-in change stream: spread
over one second in change sets of 50 every 50 ms (how ``Queries.follow`` reads a busy engine),
or all in one set. Each batch the GUI thread receives is applied and the visible rows
repainted at once; that time is the stall a person would feel. A tenth of the events hit the
visible rows, so that there is something to repaint.

Target: per batch, max < 50 ms and p99 < 20 ms. Last, the time of a header click's sort, by
each column (the model orders its own rows once).

    .venv/bin/python bench/gui.py [--rows 10000] [--events 1000] [--rounds 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from collections.abc import AsyncIterator, Collection
from dataclasses import replace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, Qt, QTimer
from PySide6.QtWidgets import QApplication, QTableView

from fredica_app.gui.bridge import INTERVAL_MS, ChangeBridge
from fredica_app.gui.delegates import ProgressDelegate
from fredica_app.gui.models import TaskTableModel
from tests.support.records import task_record
from workers.changes import Change, ChangeSet, RunFilter, Snapshot, TaskFilter
from workers.records import TaskRecord
from workers.states import TaskStatus


class Burst:
    """A stand-in change stream: hands out prepared change sets, ``period`` seconds apart."""

    def __init__(self, sets: list[ChangeSet], period: float) -> None:
        self.sets = sets
        self.period = period

    async def snapshot(
        self, runs: RunFilter | None = None, tasks: TaskFilter | None = None
    ) -> Snapshot:
        raise NotImplementedError  # the bench loads the model itself and follows a cursor

    async def follow(
        self, cursor: int, run_id: str | Collection[str] | None = None
    ) -> AsyncIterator[ChangeSet]:
        for change_set in self.sets:
            await asyncio.sleep(self.period)
            yield change_set
        await asyncio.Event().wait()  # then nothing, until stopped


def make_tasks(n: int) -> list[TaskRecord]:
    """``n`` transcodes running at 1 %."""
    return [
        task_record(
            id=f"task-{i:06d}",
            key=f"task {i}",
            type="TRANSCODE_MP4",
            status=TaskStatus.RUNNING,
            progress=1.0,
            attempt=1,
            status_text="transcoding",
        )
        for i in range(n)
    ]


def burst(
    rng: random.Random, tasks: dict[str, TaskRecord], events: int, visible: int, seq: int
) -> list[Change]:
    ids = list(tasks)
    out = []
    for _ in range(events):
        task_id = ids[rng.randrange(visible)] if rng.random() < 0.1 else rng.choice(ids)
        old = tasks[task_id]
        new = tasks[task_id] = replace(old, progress=min(100.0, old.progress + rng.random()))
        seq += 1
        out.append(Change(seq, new))
    return out


def run_burst(
    app: QApplication, model: TaskTableModel, view: QTableView, sets: list[ChangeSet], period: float
) -> list[float]:
    stalls: list[float] = []

    def on_changes(batch: list[Change]) -> None:
        started = time.perf_counter()
        model.apply(batch)
        view.viewport().repaint()  # paint now, inside the measured time
        stalls.append(time.perf_counter() - started)

    bridge = ChangeBridge(Burst(sets, period))
    bridge.changes.connect(on_changes)
    bridge.start(cursor=0)
    loop = QEventLoop()
    QTimer.singleShot(round((period * len(sets) + 0.4) * 1000), loop.quit)
    loop.exec()
    bridge.stop()
    return stalls


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    app.setStyle("Fusion")
    rng = random.Random(args.seed)
    tasks = make_tasks(args.rows)

    model = TaskTableModel()
    view = QTableView()
    view.setItemDelegateForColumn(TaskTableModel.PROGRESS, ProgressDelegate(view))
    view.resize(1000, 900)
    started = time.perf_counter()
    model.load(tasks)
    loaded = time.perf_counter() - started
    view.setModel(model)
    view.show()
    app.processEvents()
    started = time.perf_counter()
    view.viewport().repaint()
    painted = time.perf_counter() - started
    visible = view.rowAt(view.viewport().height() - 1) + 1
    print(f"{args.rows:,} tasks: load {loaded * 1000:.1f} ms, "
          f"first paint of {visible} visible rows {painted * 1000:.1f} ms")  # fmt: skip

    by_id = {t.id: t for t in tasks}
    seq = 0
    scenarios = {"over 1 s, sets of 50": (50, 0.05), "all in one set": (args.events, 0.0)}
    print(f"{'burst of ' + format(args.events, ','):<28} {'batches':>8} {'rows/batch':>11} "
          f"{'median ms':>10} {'p99 ms':>7} {'max ms':>7}")  # fmt: skip
    for name, (per_set, period) in scenarios.items():
        stalls: list[float] = []
        rows = 0
        for _ in range(args.rounds):
            changes = burst(rng, by_id, args.events, visible, seq)
            seq += len(changes)
            sets = [
                ChangeSet(cursor=seq, changes=tuple(changes[i : i + per_set]))
                for i in range(0, len(changes), per_set)
            ]
            stalls += run_burst(app, model, view, sets, period)
            rows += len({c.record.id for c in changes})
        assert model.records == list(by_id.values())  # every row ended where it should
        print(
            f"{name:<28} {len(stalls):>8} {rows / len(stalls):>11.0f} "
            f"{statistics.median(stalls) * 1000:>10.1f} {p99(stalls) * 1000:>7.1f} "
            f"{max(stalls) * 1000:>7.1f}"
        )
    print(f"(batches every {INTERVAL_MS} ms; {args.rounds} bursts per line)")

    # A header click: the model orders its own rows once, by a key read from the records.
    print(f"{'sort on demand (a header click)':<36} {'median ms':>10} {'max ms':>7}")
    for column, header in enumerate(TaskTableModel.HEADERS):
        times = []
        for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder) * 3:
            started = time.perf_counter()
            model.sort(column, order)
            times.append(time.perf_counter() - started)
        print(
            f"{'by ' + header:<36} {statistics.median(times) * 1000:>10.1f} "
            f"{max(times) * 1000:>7.1f}"
        )


if __name__ == "__main__":
    main()
