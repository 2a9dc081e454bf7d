"""PROBE runs in the engine's own process (``fredica_app.probing``): real clips made by the
bundled ffmpeg, the app's executors, a real engine on a real SQLite file — and no endpoints
server: asking for its address fails the test."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fredica_app import jobs
from python_endpoints.jobs.sample import make_sample
from workers.engine import WorkerEngine
from workers.executors.websocket import EndpointsAddress
from workers.spec import parse_spec, prepare_run
from workers.states import TaskStatus
from workers.store import TaskStore


async def no_server() -> EndpointsAddress:
    raise AssertionError("a probe asked for the endpoints server")


async def probe(store: TaskStore, path: Path, **task: Any) -> Any:
    spec = {"tasks": [{"key": "p", "type": "PROBE", "payload": {"input": str(path)}, **task}]}
    created = await store.create_run(prepare_run(parse_spec(spec), jobs.registry()))
    engine = WorkerEngine(store, jobs.executors(no_server), registry=jobs.registry())
    await asyncio.wait_for(engine.run(until_idle=True), 60)
    return await store.get_task(created.task_ids["p"])


async def test_a_probe_reads_the_clip_in_the_engines_process(
    store: TaskStore, tmp_path: Path
) -> None:
    clip = make_sample(tmp_path / "clip.mkv", 2.0)
    task = await probe(store, clip)
    assert task.status is TaskStatus.COMPLETED, task.error
    result = task.result
    assert result is not None and result["outputs"] == []
    assert result["format"] == "matroska,webm"
    assert result["duration"] == pytest.approx(2.0, abs=0.1)
    assert result["size"] == clip.stat().st_size
    assert (result["kind"], result["subtitles"]) == ("video", 1)
    assert [(s["type"], s["codec"]) for s in result["streams"]] == [
        ("video", "h264"),
        ("audio", "opus"),
        ("subtitle", "subrip"),
    ]
    [executor] = [e for e in jobs.executors(no_server) if e.task_type.name == "PROBE"]
    assert executor.in_process  # a crash of FFmpeg's here is charged to it at the next start


@pytest.mark.parametrize(
    ("kind", "error_type", "says"),
    [
        ("text", "NOT_MEDIA", "is not a media file FFmpeg can read"),
        ("missing", "INPUT_MISSING", "does not exist"),
        ("folder", "NOT_MEDIA", "is not a file"),
    ],
)
async def test_a_probe_that_cannot_read_says_why_and_is_not_retried(
    store: TaskStore, tmp_path: Path, kind: str, error_type: str, says: str
) -> None:
    path = tmp_path / "input.mkv"
    if kind == "text":
        make_sample(path, kind="text")
    elif kind == "folder":
        path.mkdir()
    task = await probe(store, path, max_retries=3)
    assert (task.status, task.error_type, task.retry_count) == (
        TaskStatus.FAILED,
        error_type,
        0,
    )
    assert task.error is not None and says in task.error


async def test_a_relative_input_is_refused_when_the_run_is_made(
    store: TaskStore, tmp_path: Path
) -> None:
    """PROBE's payload is checked before anything is written (the executor then takes it as
    the engine parsed it)."""
    spec = {"tasks": [{"key": "p", "type": "PROBE", "payload": {"input": "clip.mkv"}}]}
    with pytest.raises(ValueError, match="absolute"):
        prepare_run(parse_spec(spec), jobs.registry())


async def test_a_probe_that_keeps_taking_the_app_down_fails_interrupted(
    store: TaskStore, tmp_path: Path
) -> None:
    """Its work runs in the engine's process: a crash while it ran is charged to it (as the
    engine's start-up recovery is told by the app's executors), and past the limit it fails
    ``INTERRUPTED`` — a file whose probe crashes FFmpeg cannot stop the queue for good."""
    clip = make_sample(tmp_path / "clip.mkv", 1.0)
    spec = {"tasks": [{"key": "p", "type": "PROBE", "payload": {"input": str(clip)}}]}
    created = await store.create_run(prepare_run(parse_spec(spec), jobs.registry()))
    executors = jobs.executors(no_server)
    resumable = [e.task_type.name for e in executors if e.resumable]
    in_process = [e.task_type.name for e in executors if e.in_process]
    assert "PROBE" in in_process and "EXTRACT_AUDIO" not in in_process
    seen = []
    for n in range(2):
        await store.claim("crashed", start=True)  # the app died while it probed
        await store.recover(f"s{n}", resumable, in_process_types=in_process, max_interruptions=1)
        task = await store.get_task(created.task_ids["p"])
        seen.append((task.status, task.charged_interruptions, task.error_type))
    assert seen == [(TaskStatus.PENDING, 1, None), (TaskStatus.FAILED, 2, "INTERRUPTED")]
