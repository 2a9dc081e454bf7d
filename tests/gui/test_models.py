"""The queue's table models: Qt's model tester after a load and after random batches, what
the cells say, and that a batch touches only the rows it changes (no reset, no full scan)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex, Qt

from fredica_app.gui.models import (
    PROGRESS_ROLE,
    RECORD_ROLE,
    ProgressCell,
    RunTableModel,
    TaskTableModel,
)
from fredica_app.gui.table import BatchItem
from tests.gui.factory import make_run, make_task, running
from workers.changes import Change, Snapshot, Tombstone
from workers.records import TaskRecord
from workers.states import ErrorType, RunStatus, TaskStatus

DISPLAY = Qt.ItemDataRole.DisplayRole


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def cell(model: TaskTableModel | RunTableModel, row: int, column: int, role: int = DISPLAY) -> Any:
    return model.data(model.index(row, column), role)


def random_batch(
    rng: random.Random, known: dict[str, TaskRecord], next_id: list[int]
) -> list[BatchItem]:
    """Progress, status changes, new tasks and deletions, the same row sometimes twice."""
    batch: list[BatchItem] = []
    seq = 0
    for _ in range(rng.randint(1, 30)):
        seq += 1
        roll = rng.random()
        ids = sorted(known)
        if roll < 0.15 or not ids:
            task = make_task(next_id[0])
            next_id[0] += 1
        elif roll < 0.25:
            gone = known.pop(rng.choice(ids))
            batch.append(Change(seq, Tombstone("task", gone.id, gone.workflow_run_id, 0.0)))
            continue
        else:
            old = known[rng.choice(ids)]
            task = replace(
                old,
                status=rng.choice(list(TaskStatus)),
                progress=float(rng.randint(0, 100)),
                is_paused=rng.random() < 0.2,
                status_text=rng.choice([None, "transcoding", "reading"]),
            )
        known[task.id] = task
        batch.append(Change(seq, task) if rng.random() < 0.5 else task)
    return batch


def test_task_model_passes_the_model_tester_after_load_and_random_batches(
    qtmodeltester: Any,
) -> None:
    rng = random.Random(7)
    tasks = [make_task(n) for n in range(40)]
    model = TaskTableModel(clock=Clock())
    model.load(Snapshot(cursor=1, tasks=tuple(tasks), runs=(make_run(1),)))
    qtmodeltester.check(model)  # stays attached: it checks every signal of the batches below
    known = {t.id: t for t in tasks}
    next_id = [100]
    resets: list[int] = []
    model.modelReset.connect(lambda: resets.append(1))
    for _ in range(25):
        model.apply(random_batch(rng, known, next_id))
        assert {r.id: r for r in model.records} == known
    for row, record in enumerate(model.records):
        assert model.row_of(record.id) == row
    assert resets == []
    qtmodeltester.check(model)


def test_run_model_passes_the_model_tester(qtmodeltester: Any) -> None:
    model = RunTableModel()
    model.load([make_run(n) for n in range(5)])
    qtmodeltester.check(model)
    model.apply(
        [
            replace(
                make_run(2),
                status=RunStatus.COMPLETED,
                done_tasks=4,
                pending_tasks=0,
                running_tasks=0,
            ),
            make_run(9),
            Tombstone("run", "run-0000", "run-0000", 0.0),
            Tombstone("task", "run-0001", None, 0.0),  # a task's: not this model's
            running(1, 50.0),  # a task: ignored
        ]
    )
    assert [r.id for r in model.records] == [
        "run-0001",
        "run-0002",
        "run-0003",
        "run-0004",
        "run-0009",
    ]
    assert cell(model, 1, RunTableModel.STATE) == "completed"
    assert cell(model, 1, RunTableModel.TASKS) == "all done"
    progress = cell(model, 0, RunTableModel.PROGRESS, PROGRESS_ROLE)
    assert progress == ProgressCell(25.0, "1 / 4", True)
    assert cell(model, 0, RunTableModel.TASKS) == "1 running · 2 pending"
    qtmodeltester.check(model)


def test_cells_say_what_the_task_is_doing(qtmodeltester: Any) -> None:
    clock = Clock()
    model = TaskTableModel(clock=clock)
    model.load(
        [
            running(0, 40.0, "transcoding", max_retries=2),
            make_task(1, status=TaskStatus.RUNNING, is_paused=True, progress=10.0, attempt=1),
            make_task(
                2, status=TaskStatus.FAILED, error_type="TIMEOUT", error="too slow", attempt=1
            ),
            make_task(3, status=TaskStatus.COMPLETED, progress=100.0, attempt=1),
            make_task(4, unmet_deps=1),
            running(5, 0.0),
            make_task(6, status=TaskStatus.FAILED, error_type=ErrorType.INTERRUPTED),
        ]
    )
    qtmodeltester.check(model)
    T = TaskTableModel
    assert [cell(model, r, T.STATE) for r in range(7)] == [
        "running", "paused", "failed", "done", "waiting", "running", "interrupted",
    ]  # fmt: skip
    assert cell(model, 0, T.ATTEMPT) == "1 / 3"
    assert cell(model, 0, T.ETA) == "—"  # one sample: no speed yet
    assert cell(model, 0, T.PROGRESS, PROGRESS_ROLE) == ProgressCell(40.0, "40 % · transcoding")
    assert cell(model, 1, T.PROGRESS, PROGRESS_ROLE) == ProgressCell(10.0, "10 % · paused", False)
    assert cell(model, 2, T.PROGRESS, PROGRESS_ROLE).active is False
    assert cell(model, 3, T.PROGRESS, PROGRESS_ROLE) == ProgressCell(100.0, "100 % · done")
    assert cell(model, 5, T.PROGRESS, PROGRESS_ROLE).percent is None  # busy
    assert cell(model, 0, T.NAME, PROGRESS_ROLE) is None
    assert "TIMEOUT" in cell(model, 2, T.STATE, Qt.ItemDataRole.ToolTipRole)
    assert cell(model, 2, T.STATE, Qt.ItemDataRole.ForegroundRole) is not None
    assert cell(model, 4, T.NAME, RECORD_ROLE).id == "task-00004"

    clock.now = 10.0
    model.apply([running(0, 42.0, "transcoding", max_retries=2)])
    assert cell(model, 0, T.PROGRESS) == "42 % · transcoding"
    assert cell(model, 0, T.ETA) == "4 min 50 s"  # 0.2 %/s, 58 % to go
    # A pause is not slowness: the window starts again when it goes on.
    model.apply([make_task(0, status=TaskStatus.RUNNING, is_paused=True, progress=42.0)])
    assert cell(model, 0, T.ETA) == ""
    clock.now = 500.0
    model.apply([running(0, 43.0)])
    assert cell(model, 0, T.ETA) == "—"


def test_a_task_that_finished_with_a_note_is_marked_and_says_it(
    qtmodeltester: Any, qapp: Any
) -> None:
    """A job's note (an input shorter than its header said): the state says to see it, a
    warning icon marks it, the tooltip holds it; a task without one has neither."""
    model = TaskTableModel()
    note = "the input is shorter than its header claims: it holds 1.87 s"
    model.load(
        [
            make_task(0, status=TaskStatus.COMPLETED, progress=100.0, result={"note": note}),
            make_task(1, status=TaskStatus.COMPLETED, progress=100.0, result={"note": None}),
        ]
    )
    qtmodeltester.check(model)
    T = TaskTableModel
    assert cell(model, 0, T.STATE) == "done · see the note"
    assert cell(model, 1, T.STATE) == "done"
    assert not cell(model, 0, T.STATE, Qt.ItemDataRole.DecorationRole).isNull()
    assert cell(model, 1, T.STATE, Qt.ItemDataRole.DecorationRole) is None
    assert note in cell(model, 0, T.STATE, Qt.ItemDataRole.ToolTipRole)
    assert "⚠" not in cell(model, 1, T.STATE, Qt.ItemDataRole.ToolTipRole)


def test_a_restart_under_a_task_is_not_an_attempt_spent(qtmodeltester: Any) -> None:
    """After Fredica was killed under it and restarted, a task claimed twice has spent one
    attempt of its two (before: "Attempt 2 / 2", as if its retry were gone), and says it was
    resumed after a restart; a failure does spend one."""
    model = TaskTableModel()
    model.load(
        [
            running(0, 30.0, max_retries=1, attempt=2, retry_count=0, interruptions=1),
            running(1, 30.0, max_retries=1, attempt=2, retry_count=1),
            make_task(2, status=TaskStatus.FAILED, error_type=ErrorType.INTERRUPTED,
                      attempt=6, interruptions=6),
        ]
    )  # fmt: skip
    qtmodeltester.check(model)
    T = TaskTableModel
    assert [cell(model, r, T.ATTEMPT) for r in range(3)] == ["1 / 2", "2 / 2", "1 / 1"]
    assert cell(model, 0, T.STATE) == "running · resumed"
    tip = str(model.index(0, T.STATE).data(Qt.ItemDataRole.ToolTipRole))
    assert "Resumed after a restart of Fredica" in tip and "not an attempt it spent" in tip
    assert "Resumed" not in str(model.index(1, T.STATE).data(Qt.ItemDataRole.ToolTipRole))
    assert cell(model, 1, T.STATE) == "running"
    assert cell(model, 2, T.STATE) == "interrupted"
    # Once it has ended well, how is what counts: no word of the restart.
    model.apply([make_task(0, status=TaskStatus.COMPLETED, progress=100.0, interruptions=1)])
    assert cell(model, 0, T.STATE) == "done"


def test_a_batch_changes_only_its_rows_once_each() -> None:
    model = TaskTableModel()
    model.load([make_task(n) for n in range(100)])
    changed: list[tuple[int, int, int, int]] = []
    inserted: list[tuple[int, int]] = []
    removed: list[tuple[int, int]] = []
    model.dataChanged.connect(
        lambda a, b, _roles: changed.append((a.row(), a.column(), b.row(), b.column()))
    )
    model.rowsInserted.connect(lambda _p, first, last: inserted.append((first, last)))
    model.rowsRemoved.connect(lambda _p, first, last: removed.append((first, last)))
    model.apply(
        [running(5, 10.0), running(6, 20.0), running(5, 30.0), running(50, 1.0)]
        + [make_task(n) for n in range(200, 203)]
    )
    assert changed == [(5, 0, 6, 6), (50, 0, 50, 6)]  # consecutive rows: one signal
    assert inserted == [(100, 102)]  # all new rows in one insert
    assert cell(model, 5, TaskTableModel.PROGRESS) == "30 %"
    assert model.record_at(5).progress == 30.0
    model.apply([Tombstone("task", f"task-{n:05d}", "run-0001", 0.0) for n in (3, 4, 7, 99, 500)])
    assert removed == [(99, 99), (7, 7), (3, 4)]  # bottom up, a range at a time
    assert model.rowCount() == 99
    assert model.row_of("task-00005") == 3
    assert model.row_of("task-00202") == 98
    assert model.data(model.index(0, 0), PROGRESS_ROLE) is None
    assert model.data(QModelIndex()) is None


def test_new_rows_come_in_the_order_they_were_made() -> None:
    """A folder's runs arrive in one batch; the engine has already started the first few, so
    their later versions come last in it. The rows still read in the files' order."""
    model = RunTableModel()
    made = [make_run(n, status=RunStatus.PENDING) for n in range(10)]
    started = [make_run(n, status=RunStatus.RUNNING) for n in range(4)]
    model.apply(made + started)
    assert [r.id for r in model.records] == [f"run-{n:04d}" for n in range(10)]
    assert [r.status for r in model.records[:5]] == [RunStatus.RUNNING] * 4 + [RunStatus.PENDING]


def test_display_strings_are_built_once_per_change(monkeypatch: pytest.MonkeyPatch) -> None:
    model = TaskTableModel()
    model.load([running(0, 5.0)])
    calls: list[str] = []
    render = model.render

    def counting(row: Any) -> tuple[str, ...]:
        calls.append(row.id)
        return render(row)

    monkeypatch.setattr(model, "render", counting)
    for _ in range(3):
        for column in range(model.columnCount()):
            cell(model, 0, column)
    assert calls == ["task-00000"]
    model.apply([running(0, 6.0)])
    cell(model, 0, 0)
    assert calls == ["task-00000", "task-00000"]


def test_ten_thousand_rows_take_a_burst_of_progress_in_batches() -> None:
    """Timing is the bench's (bench/gui.py); here only the outcome."""
    rng = random.Random(3)
    tasks = {t.id: t for t in (running(n, 0.0) for n in range(10_000))}
    model = TaskTableModel()
    model.load(tasks.values())
    events = []
    for _ in range(1000):
        old = tasks[f"task-{rng.randrange(10_000):05d}"]
        new = replace(old, progress=min(100.0, old.progress + rng.randint(1, 10)))
        tasks[new.id] = new
        events.append(new)
    for start in range(0, len(events), 80):
        model.apply(events[start : start + 80])
    assert model.rowCount() == 10_000
    assert model.records == list(tasks.values())
    row = model.row_of(events[-1].id)
    assert row is not None
    assert model.data(model.index(row, TaskTableModel.PROGRESS), PROGRESS_ROLE).percent == (
        events[-1].progress
    )
