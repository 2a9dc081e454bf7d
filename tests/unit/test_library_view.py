"""What the library page shows of its materials (pure: records in, values out): how each
template's newest run stands, which batches mean a probe filled a material, how a fresh read
becomes row removals and appends, and the cells' formats."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from fredica_app.views.library_view import (
    WORDS,
    Output,
    OutputBoard,
    OutputState,
    RowPlan,
    file_size,
    media_length,
    plan_update,
    probed_materials,
    summary,
    urls_in,
)
from tests.support.records import task_record
from workers.changes import Change, Tombstone
from workers.records import RunRecord, TaskRecord
from workers.states import RunStatus, TaskStatus


def run(run_id: str = "r1", material: str | None = "m1", **fields: Any) -> RunRecord:
    base = RunRecord(
        id=run_id,
        material_id=material,
        template="transcode_mp4",
        status=RunStatus.PENDING,
        total_tasks=2,
        done_tasks=0,
        pending_tasks=2,
        claimed_tasks=0,
        running_tasks=0,
        failed_tasks=0,
        cancelled_tasks=0,
        created_at=100.0,
        completed_at=None,
    )
    return replace(base, **fields)


def task(task_id: str = "t1", run_id: str | None = "r1", **fields: Any) -> TaskRecord:
    return task_record(id=task_id, workflow_run_id=run_id, material_id="m1", **fields)


def one(board: OutputBoard, material: str = "m1") -> Output:
    (out,) = board.outputs(material)
    return out


def test_a_pending_run_with_nothing_working_is_queued() -> None:
    board = OutputBoard()
    board.load([run()], [task("t1"), task("t2")])
    assert one(board) == Output("transcode_mp4", OutputState.QUEUED, None, "r1", 100.0)


def test_a_run_whose_task_a_worker_took_is_running_with_its_progress() -> None:
    board = OutputBoard()
    board.load([run()], [task("t1", status=TaskStatus.CLAIMED)])
    assert one(board).state is OutputState.RUNNING and one(board).percent == 0.0
    # One of two tasks done, the other at 40 %: 70 % of the run.
    board.apply(
        [
            run(status=RunStatus.RUNNING, done_tasks=1, running_tasks=1),
            task("t1", status=TaskStatus.COMPLETED, progress=100.0),
            task("t2", status=TaskStatus.RUNNING, progress=40.0),
        ]
    )
    assert one(board).state is OutputState.RUNNING and one(board).percent == 70.0


def test_a_running_run_between_tasks_is_still_running() -> None:
    board = OutputBoard()
    board.load([run(status=RunStatus.RUNNING, done_tasks=1)], [task("t2")])
    assert (one(board).state, one(board).percent) == (OutputState.RUNNING, 50.0)


def test_a_run_whose_unfinished_tasks_are_all_held_is_paused() -> None:
    board = OutputBoard()
    held = task("t1", status=TaskStatus.RUNNING, progress=30.0, is_paused=True)
    board.load([run(status=RunStatus.RUNNING, running_tasks=1)], [held])
    assert (one(board).state, one(board).percent) == (OutputState.PAUSED, 15.0)
    # Another task working: the run is not paused.
    board.apply([task("t2", status=TaskStatus.RUNNING, progress=10.0)])
    assert (one(board).state, one(board).percent) == (OutputState.RUNNING, 20.0)


def test_a_run_without_tasks_has_no_percent() -> None:
    board = OutputBoard()
    board.load([run(status=RunStatus.RUNNING, total_tasks=0)], [])
    assert one(board).percent is None


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (RunStatus.COMPLETED, OutputState.DONE),
        (RunStatus.FAILED, OutputState.FAILED),
        (RunStatus.CANCELLED, OutputState.CANCELLED),
    ],
)
def test_a_finished_run_says_how_it_ended(status: RunStatus, state: OutputState) -> None:
    board = OutputBoard()
    board.load([run(status=status)], [])
    assert (one(board).state, one(board).percent) == (state, None)


def test_the_newest_run_of_each_template_counts_oldest_template_first() -> None:
    board = OutputBoard()
    board.load(
        [
            run("r1", status=RunStatus.FAILED, created_at=1.0),
            run("r2", template="subtitles", created_at=2.0),
            run("r3", status=RunStatus.COMPLETED, created_at=3.0),
            run("r0", status=RunStatus.CANCELLED, created_at=3.0),  # same time: the id decides
            run("r4", template=None, status=RunStatus.COMPLETED, created_at=0.5),
            run("r5", material="m2", created_at=9.0),
            run("r6", material=None),  # a run on no material: not the library's
        ],
        [],
    )
    outputs = board.outputs("m1")
    assert [(o.template, o.run_id) for o in outputs] == [
        ("spec", "r4"),
        ("subtitles", "r2"),
        ("transcode_mp4", "r3"),
    ]
    assert board.material_ids() == {"m1", "m2"}
    assert board.outputs("nothing") == []


def test_a_batch_says_which_materials_it_touched() -> None:
    board = OutputBoard()
    board.load([run("r1"), run("r2", material="m2")], [task("t1", status=TaskStatus.RUNNING)])
    assert board.apply([Change(1, run("r1", status=RunStatus.RUNNING))]) == {"m1"}
    # A task of a run the board does not hold: its own material_id says.
    assert board.apply([task("t9", run_id="elsewhere")]) == {"m1"}
    assert board.apply([task_record(id="t8", workflow_run_id="elsewhere")]) == set()
    # A task of no run at all.
    assert board.apply([task("t7", run_id=None)]) == set()
    # A task that finishes is no longer followed; its run's material is touched.
    board.apply([task("t3", status=TaskStatus.RUNNING)])
    assert board.apply([task("t1", status=TaskStatus.COMPLETED)]) == {"m1"}
    assert board.apply([task("t3", status=TaskStatus.COMPLETED)]) == {"m1"}
    assert board.apply([task("t2", run_id="r2", status=TaskStatus.FAILED)]) == {"m2"}


def test_tombstones_drop_runs_and_tasks() -> None:
    board = OutputBoard()
    board.load(
        [run("r1"), run("r2", created_at=5.0, template="x")],
        [task("t1", status=TaskStatus.RUNNING, progress=50.0), task("t2")],
    )
    # A task's tombstone: it is no longer counted; the second one empties the run's tasks.
    assert board.apply([Tombstone("task", "t1", "r1", 0.0)]) == {"m1"}
    assert board.apply([Change(2, Tombstone("task", "t2", "r1", 0.0))]) == {"m1"}
    # Tombstones of tasks the board does not follow change nothing.
    assert board.apply([Tombstone("task", "t1", "r1", 0.0)]) == set()
    assert board.apply([Tombstone("task", "tx", "r2", 0.0)]) == set()
    assert board.apply([Tombstone("task", "ty", None, 0.0)]) == set()
    # Runs go one by one; the material's last one takes the material off the board.
    assert board.apply([Tombstone("run", "r1", "r1", 0.0)]) == {"m1"}
    assert [o.run_id for o in board.outputs("m1")] == ["r2"]
    assert board.apply([Tombstone("run", "r2", "r2", 0.0)]) == {"m1"}
    assert board.material_ids() == set() and board.outputs("m1") == []
    assert board.apply([Tombstone("run", "r2", "r2", 0.0)]) == set()


def test_a_task_for_a_run_the_board_holds_without_a_material() -> None:
    board = OutputBoard()
    board.load([run("r1", material=None)], [])
    # The run was not kept (no material): the task's own material_id says.
    assert board.apply([task("t1", run_id="r1", status=TaskStatus.RUNNING)]) == {"m1"}


def test_loading_again_starts_from_scratch() -> None:
    board = OutputBoard()
    board.load([run("r1")], [task("t1", status=TaskStatus.RUNNING)])
    board.load([run("r2", material="m2")], [])
    assert board.material_ids() == {"m2"}


def test_summary() -> None:
    outputs = [
        Output("transcode_mp4", OutputState.DONE, None, "r1", 1.0),
        Output("subtitles", OutputState.RUNNING, 40.4, "r2", 2.0),
    ]
    assert summary(outputs) == "transcode_mp4: done · subtitles: running 40 %"
    words = {**WORDS, OutputState.DONE: "完成"}
    assert summary(outputs[:1], words) == "transcode_mp4: 完成"
    names = {"transcode_mp4": "制作 MP4"}  # a template without a name keeps its own
    assert summary(outputs, words, names) == "制作 MP4: 完成 · subtitles: running 40 %"
    assert summary([]) == ""


def test_probed_materials() -> None:
    probe = task("p", type="PROBE", status=TaskStatus.COMPLETED)
    assert probed_materials([probe]) == {"m1"}
    assert probed_materials([Change(1, replace(probe, material_id="m2"))]) == {"m2"}
    assert probed_materials([replace(probe, status=TaskStatus.RUNNING)]) == set()
    assert probed_materials([replace(probe, type="TRANSCODE_MP4")]) == set()
    assert probed_materials([replace(probe, material_id=None)]) == set()
    assert probed_materials([run(), Tombstone("task", "p", "r1", 0.0)]) == set()


@pytest.mark.parametrize(
    ("shown", "fresh", "plan"),
    [
        ([], [], RowPlan((), ())),
        (["a", "b"], ["a", "b"], RowPlan((), ())),
        (["a"], ["a", "b", "c"], RowPlan((), ("b", "c"))),
        (["a", "b", "c", "d", "e"], ["a", "d"], RowPlan(((4, 4), (1, 2)), ())),
        (["a", "b"], ["b", "c"], RowPlan(((0, 0),), ("c",))),
        (["a", "b"], [], RowPlan(((0, 1),), ())),
        (["a", "b"], ["b", "a"], None),
        (["a", "b"], ["c", "a", "b"], None),
    ],
)
def test_plan_update(shown: list[str], fresh: list[str], plan: RowPlan | None) -> None:
    assert plan_update(shown, fresh) == plan


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, ""), (-3.0, "0:00"), (7.4, "0:07"), (725.0, "12:05"), (3723.0, "1:02:03")],
)
def test_media_length(seconds: float | None, text: str) -> None:
    assert media_length(seconds) == text


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (None, ""),
        (512, "512 B"),
        (1536, "1.5 KB"),
        (150 * 1024, "150 KB"),
        (5 * 1024**3, "5.0 GB"),
        (2000 * 1024**4, "2000 TB"),
    ],
)
def test_file_size(size: int | None, text: str) -> None:
    assert file_size(size) == text


def test_urls_in() -> None:
    text = (
        "see https://example.org/a.mp4, and HTTP://Host/b?x=1.\n"
        "again https://example.org/a.mp4 or ftp://nope/c and www.example.org"
    )
    assert urls_in(text) == ["https://example.org/a.mp4", "HTTP://Host/b?x=1"]
    assert urls_in("") == []
