"""What the CLI shows a person (pure: records in, lines out)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from rich.cells import cell_len

from fredica_app.cli.display import run_elapsed, run_eta, run_lines, runs_lines, table
from fredica_app.views.records import clock, duration, task_state
from tests.support.records import task_record
from workers.records import RunProgress, RunRecord, TaskRecord
from workers.states import RunStatus, TaskStatus

NOW = 1_700_000_000.0


def task(**kw: Any) -> TaskRecord:
    running = {
        "status": TaskStatus.RUNNING,
        "progress": 85.3,
        "created_at": NOW - 100,
        "attempt": 1,
        "status_text": "transcribing 4:16 of 5:00",
    }
    return task_record(**{**running, **kw})


def run(**kw: Any) -> RunRecord:
    base: dict[str, Any] = {
        "id": "r-1",
        "material_id": None,
        "template": "subtitles",
        "status": RunStatus.RUNNING,
        "total_tasks": 4,
        "done_tasks": 1,
        "pending_tasks": 2,
        "claimed_tasks": 0,
        "running_tasks": 1,
        "failed_tasks": 0,
        "cancelled_tasks": 0,
        "created_at": NOW - 100,
        "completed_at": None,
    }
    base.update(kw)
    return RunRecord(**base)


def test_a_finished_task_shows_how_it_ended_not_its_last_status_line() -> None:
    running = task(started_at=NOW - 60)
    assert task_state(running) == "running: transcribing 4:16 of 5:00"
    done = dataclasses.replace(running, status=TaskStatus.COMPLETED, completed_at=NOW - 10)
    assert task_state(done) == "done in 50.0 s"
    failed = dataclasses.replace(
        running, status=TaskStatus.FAILED, error="boom", error_type="VERIFY_FAILED"
    )
    assert task_state(failed) == "failed: [VERIFY_FAILED] boom"
    # Cancelled while held: "held" is said of unfinished tasks only.
    cancelled = dataclasses.replace(
        running,
        status=TaskStatus.CANCELLED,
        is_paused=True,
        status_text="paused",
        error="cancelled by the user",
    )
    assert task_state(cancelled) == "cancelled: cancelled by the user"
    held = dataclasses.replace(
        running, status=TaskStatus.PENDING, is_paused=True, status_text="paused"
    )
    assert task_state(held) == "pending (held)"
    skipped = dataclasses.replace(done, result={"skipped": True, "outputs": ["/o/a.mp4"]})
    assert task_state(skipped) == "skipped: its output is already up to date"
    no_video = dataclasses.replace(done, result={"skipped": True, "reason": "no video stream"})
    assert task_state(no_video) == "skipped: no video stream"
    retrying = dataclasses.replace(
        running,
        status=TaskStatus.PENDING,
        status_text="retrying in 4 s",
        error="reset",
        error_type="NETWORK_ERROR",
    )
    assert task_state(retrying) == "pending: retrying in 4 s (after [NETWORK_ERROR] reset)"
    assert task_state(
        dataclasses.replace(held, is_paused=False, status_text=None), "waiting for GPU"
    ) == ("pending: waiting for GPU")


def test_columns_are_as_wide_as_their_content() -> None:
    lines = table(["KEY", "N"], [["a", "1"], ["一段很长的名字", "22"]], right={1})
    assert lines == ["KEY" + " " * 14 + "N", "a" + " " * 16 + "1", "一段很长的名字  22"]
    assert len({cell_len(line) for line in lines}) == 1


def test_a_skipped_task_shows_its_outputs_and_columns_line_up() -> None:
    tasks = [
        task(key="probe", type="PROBE", status=TaskStatus.COMPLETED, progress=100.0),
        task(
            key="a_very_long_task_key_indeed",
            type="TRANSCODE_MP4",
            status=TaskStatus.COMPLETED,
            progress=100.0,
            result={"skipped": True, "outputs": ["/lib/clip-1/clip.mp4"]},
        ),
    ]
    lines = run_lines(run(status=RunStatus.COMPLETED, completed_at=NOW), tasks, title="clip")
    assert lines[0].startswith("run r-1  subtitles · clip  completed")
    header, first, second, output = lines[1:]
    assert output == "      → /lib/clip-1/clip.mp4"
    assert first.index("PROBE") == second.index("TRANSCODE_MP4") == header.index("TYPE")
    assert first.index("done") == second.index("skipped") == header.index("STATE")


def test_elapsed_and_eta_from_the_first_start_and_the_progress() -> None:
    active = run()
    half = RunProgress(started_at=NOW - 30, live_tasks=4, progress_sum=200.0)
    assert run_elapsed(active, half, NOW) == 30
    assert run_eta(active, half, NOW, queue_paused=False) == 30
    # No guess when it cannot move, has hardly begun, or never started.
    assert run_eta(active, half, NOW, queue_paused=True) is None
    assert run_eta(active, dataclasses.replace(half, held=1), NOW, queue_paused=False) is None
    barely = dataclasses.replace(half, progress_sum=2.0)
    assert run_eta(active, barely, NOW, queue_paused=False) is None
    assert run_elapsed(active, RunProgress(), NOW) is None
    finished = run(status=RunStatus.COMPLETED, completed_at=NOW - 5)
    assert run_elapsed(finished, half, NOW) == 25
    assert run_eta(finished, half, NOW, queue_paused=False) is None


def test_the_runs_table_has_a_header_times_and_says_the_queue_is_paused() -> None:
    runs = [run(material_id="m-1"), run(id="r-2", status=RunStatus.COMPLETED, completed_at=NOW)]
    progress = {
        "r-1": RunProgress(started_at=NOW - 30, live_tasks=4, progress_sum=200.0),
        "r-2": RunProgress(started_at=NOW - 90, live_tasks=4, progress_sum=400.0),
    }
    lines = runs_lines(runs, progress, {"m-1": "My talk"}, NOW, queue_paused=False)
    assert lines[0].split() == [
        "RUN", "STATUS", "TASKS", "PROGRESS", "TEMPLATE", "MATERIAL", "STARTED", "ELAPSED", "ETA"
    ]  # fmt: skip
    assert "My talk" in lines[1] and "50 %" in lines[1] and "~30.0 s" in lines[1]
    assert "1 min 30 s" in lines[2] and "100 %" in lines[2]
    assert lines[1].index("subtitles") == lines[2].index("subtitles") == lines[0].index("TEMPLATE")
    paused = runs_lines(runs, progress, {}, NOW, queue_paused=True)
    assert paused[0].startswith("the queue is paused") and "resume-queue" in paused[0]
    assert "~" not in paused[2]  # no ETA while nothing can start
    assert runs_lines([], {}, {}, NOW) == ["no runs yet"]


def test_durations_read_naturally() -> None:
    assert [duration(s) for s in (0.04, 59.94, 61, 3599, 3725)] == [
        "0.0 s",
        "59.9 s",
        "1 min 01 s",
        "59 min 59 s",
        "1 h 02 min",
    ]


def test_a_clock_time_is_the_time_today_and_the_date_another_day() -> None:
    noon = time.mktime((2026, 3, 1, 12, 0, 0, 0, 0, -1))
    assert clock(noon + 3 * 3600 + 27, noon) == "15:00:27"
    assert clock(noon - 86_400, noon) == "2026-02-28 12:00"
    assert clock(None, noon) == "-"
