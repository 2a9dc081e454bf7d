"""Segmented re-encodes that resume (python_endpoints/jobs/segments.py): the pure planning,
the sweep that spares a checkpoint's pieces, and real encodes compared with a one-pass encode,
cancelled, killed and resumed."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import av
import psutil
import pytest

from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs import media, outputs, segments
from python_endpoints.jobs.segments import Segment
from python_endpoints.protocol import Resume, dump
from python_endpoints.serving import outputlocks
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, open_task, start
from tests.endpoints.test_media_jobs import result_of
from tests.support.clips import JobContext, SampleCache, ffmpeg_processes, run_job
from tests.support.host import fill, small_disk
from tests.support.process_table import assert_no_job_process_left


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleCache:
    return SampleCache(tmp_path_factory.mktemp("samples"))


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[int]:
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()
    yield port
    await srv.close()
    await assert_no_job_process_left()
    assert ffmpeg_processes(str(tmp_path)) == []


# --- pure ---------------------------------------------------------------------------------------


def test_cuts_are_keyframes_at_least_a_target_apart_and_no_tiny_last_segment() -> None:
    keyframes = [0.0, 1.0, 2.0, 3.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    assert segments.cut_points(keyframes, 12.0, 3.0) == [3.0, 6.0, 9.0]
    # 10.4 - 9.0 < 1.5: the last piece joins the one before it.
    assert segments.cut_points(keyframes, 10.4, 3.0) == [3.0, 6.0]
    assert segments.cut_points([0.0], 12.0, 3.0) == []
    assert segments.plan_segments([3.0, 6.0]) == [
        Segment(0, 0.0, 3.0),
        Segment(1, 3.0, 6.0),
        Segment(2, 6.0, None),
    ]
    assert not segments.worth_segmenting(5.0, 3.0)
    assert segments.worth_segmenting(6.0, 3.0)
    assert not segments.worth_segmenting(None, 3.0)


def test_a_segment_starts_at_its_keyframe_and_stops_half_a_frame_before_the_next() -> None:
    video = ff.StreamPlan(0, "video", "encode", "h264")
    args = segments.segment_args(
        "ffmpeg",
        "in.mkv",
        "seg.mp4",
        Segment(1, 3.0030033, 6.0060066),
        video=video,
        frame=1 / 29.97,
        encoder="libx264",
        crf=23,
        preset="veryfast",
    )
    # Rounded down: the keyframe at 3.0030033 is never trimmed.
    assert args[args.index("-ss") + 1] == "3.003003"
    assert args.index("-ss") < args.index("-i")
    assert float(args[args.index("-t") + 1]) == pytest.approx(3.0030033 - 0.5 / 29.97, abs=1e-6)
    assert "-an" in args and args[-1] == "seg.mp4"
    first = segments.segment_args(
        "ffmpeg",
        "in.mkv",
        "seg.mp4",
        Segment(0, 0.0, None),
        video=video,
        frame=0.04,
        encoder="libx264",
        crf=23,
        preset="veryfast",
    )
    assert "-ss" not in first and "-t" not in first


def test_the_concat_list_quotes_names() -> None:
    text = segments.concat_list([".a.seg00000.0123abcd.fredica-part.mp4", "it's.mp4"])
    assert text.splitlines() == [
        "ffconcat version 1.0",
        "file '.a.seg00000.0123abcd.fredica-part.mp4'",
        "file 'it'\\''s.mp4'",
    ]


def test_a_checkpoint_is_reused_only_for_the_same_key_after_a_trip_through_json() -> None:
    plan = ff.TranscodePlan((ff.StreamPlan(0, "video", "encode", "h264", ("fps=25",)),))
    stat = {"size": 10, "mtime_ns": 5}
    key = segments.checkpoint_key(stat, plan, encoder="libx264", crf=23, preset="fast", target=3)
    checkpoint = segments.new_checkpoint(key, [3.0, 6.0], 0.04, 12.0)
    checkpoint = segments.with_segment(checkpoint, 1, "b", 20)
    checkpoint = segments.with_segment(checkpoint, 0, "a", 10)
    checkpoint = segments.with_rest(checkpoint, "r", 5)
    back = json.loads(json.dumps(checkpoint))
    assert segments.matches(back, key)
    assert [s["index"] for s in back["segments"]] == [0, 1]
    assert segments.listed_files(back) == ["a", "b", "r"]
    other = segments.checkpoint_key(
        stat, plan, encoder="h264_nvenc", crf=23, preset="fast", target=3
    )
    assert not segments.matches(back, other)
    assert not segments.matches({**back, "version": 0}, key)
    assert not segments.matches(None, key)


# --- the sweep ---------------------------------------------------------------------------------


def test_the_sweep_spares_the_pieces_the_checkpoint_lists_and_a_cancel_keeps_pieces(
    tmp_path: Path,
) -> None:
    output = tmp_path / "movie.mp4"
    old, new = "0000aaaa", "0000bbbb"
    listed = outputs.piece_path(output, old, "seg00000.mp4")
    unlisted = outputs.piece_path(output, old, "seg00001.mp4")  # killed while being written
    rest = outputs.piece_path(output, old, "rest.mp4")
    whole = outputs.temp_path(output, old)
    mine = outputs.piece_path(output, new, "seg00002.mp4")
    other = outputs.piece_path(tmp_path / "other.mp4", old, "seg00000.mp4")
    for path in (listed, unlisted, rest, whole, mine, other):
        path.write_bytes(b"x")
    assert outputs.is_piece_of(output, listed.name)
    assert not outputs.is_piece_of(output, whole.name)
    resume = {"segments": [{"index": 0, "file": listed.name, "bytes": 1}], "rest": None}
    params = {"input": str(tmp_path / "in.mkv"), "output": str(output), "part_id": new}
    swept = outputs.leftover_parts("TRANSCODE_MP4", {**params, "resume": resume})
    assert swept == sorted([unlisted, rest, whole])
    # Without a checkpoint the pieces are leftovers like any other.
    assert listed in outputs.leftover_parts("TRANSCODE_MP4", params)
    # After a cancel or a crash of run `new`, its pieces stay for the next attempt.
    whole_new = outputs.temp_path(output, new)
    whole_new.write_bytes(b"x")
    assert outputs.partial_outputs("TRANSCODE_MP4", params) == [whole_new]
    # After the user's cancel nothing will resume: its pieces go, and those it took over from
    # its checkpoint; another output's pieces and unlisted ones of another run stay.
    dropped = outputs.partial_outputs(
        "TRANSCODE_MP4", {**params, "resume": resume}, keep_pieces=False
    )
    assert sorted(dropped) == sorted([whole_new, mine, listed])


# --- real encodes ------------------------------------------------------------------------------


class Context(JobContext):
    """A job's context in this process (it keeps the checkpoints), cancelled once
    ``cancel_after`` segments are checkpointed."""

    def __init__(self, cancel_after: int | None = None) -> None:
        super().__init__()
        self.cancel_after = cancel_after

    @property  # type: ignore[override]
    def cancelled(self) -> bool:
        done = len(self.checkpoints[-1]["segments"]) if self.checkpoints else 0
        return self.cancel_after is not None and done >= self.cancel_after


def segment_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The segments ffmpeg encodes from now on (their file names)."""
    runs: list[str] = []
    real = media.run_ffmpeg

    def counting(args: list[str], *a: Any, **kw: Any) -> media.FfmpegRun:
        if re.search(r"\.seg\d{5}\.", Path(args[-1]).name):
            runs.append(Path(args[-1]).name)
        return real(args, *a, **kw)

    monkeypatch.setattr(media, "run_ffmpeg", counting)
    return runs


def video_packets(path: Path) -> tuple[list[int], float, float]:
    """A file's video packet pts (in presentation order), its time base, its audio's length."""
    with av.open(str(path)) as container:
        video, audio = container.streams.video[0], container.streams.audio[0]
        pts = sorted(p.pts for p in container.demux(video) if p.pts is not None)
        assert video.time_base is not None and audio.time_base is not None
        assert audio.duration is not None
        return pts, float(video.time_base), float(audio.duration * audio.time_base)


def params_for(source: Path, output: Path, **more: Any) -> dict[str, Any]:
    return {
        "input": str(source),
        "output": str(output),
        "mode": "reencode",
        "hardware": False,
        **more,
    }


FRAME = 1 / 25  # the samples' frame rate


def assert_like_one_pass(segmented: Path, one_pass: Path) -> None:
    pts, base, audio = video_packets(segmented)
    pts1, base1, audio1 = video_packets(one_pass)
    assert len(pts) == len(pts1)  # the same frames
    step = round(FRAME / base)
    # No frame lost, doubled or shifted at a joint: one frame after another, from 0.
    assert [b - a for a, b in itertools.pairwise(pts)] == [step] * (len(pts) - 1)
    assert [p * base for p in pts] == pytest.approx([p * base1 for p in pts1], abs=1e-6)
    duration = (pts[-1] + step) * base
    assert duration == pytest.approx((pts1[-1] + step) * base1, abs=FRAME)
    # The audio, encoded whole, lasts what the one-pass encode's does: in sync at every joint.
    assert audio == pytest.approx(audio1, abs=FRAME)
    assert audio == pytest.approx(duration, abs=FRAME)
    assert segmented.stat().st_size == pytest.approx(one_pass.stat().st_size, rel=0.02)


def test_a_segmented_encode_matches_a_one_pass_encode(
    samples: SampleCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = samples.get("mkv", 12.0)
    one = run_job(media.transcode_job, params_for(source, tmp_path / "one.mp4"), Context())
    assert one is not None and "segments" not in one  # 12 s is not two default segments
    runs = segment_runs(monkeypatch)
    ctx = Context()
    result = run_job(
        media.transcode_job, params_for(source, tmp_path / "seg.mp4", segment_seconds=3.0), ctx
    )
    assert result is not None
    assert result["segments"] == 4 and result["segments_encoded"] == 4 and len(runs) == 4
    assert ctx.checkpoints[-1]["cuts"] == [3.0, 6.0, 9.0]
    assert_like_one_pass(tmp_path / "seg.mp4", tmp_path / "one.mp4")
    # The pieces are gone once the output is in place.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".one.mp4.fredica.json",
        ".seg.mp4.fredica.json",
        "one.mp4",
        "seg.mp4",
    ]


def test_a_cancelled_encode_resumes_with_only_the_missing_segments(
    samples: SampleCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = samples.get("mkv", 12.0)
    run_job(media.transcode_job, params_for(source, tmp_path / "one.mp4"), Context())
    output = tmp_path / "out" / "movie.mp4"
    runs = segment_runs(monkeypatch)
    first = Context(cancel_after=2)
    params = params_for(source, output, segment_seconds=3.0, part_id="0000aaaa")
    assert run_job(media.transcode_job, params, first) is None
    checkpoint = first.checkpoints[-1]
    assert len(checkpoint["segments"]) == 2 and checkpoint["rest"] is not None
    # The third was under way when the cancel came: stopped, and its file removed.
    assert len(runs) == 3
    assert not (output.parent / runs[2]).exists()
    # The next attempt: the server's sweep first (it spares what the checkpoint lists).
    again = {**params, "part_id": "0000bbbb", "resume": checkpoint}
    outputlocks.remove_leftovers("TRANSCODE_MP4", again)
    runs.clear()
    second = Context()
    result = run_job(media.transcode_job, again, second)
    assert result is not None
    assert result["segments_reused"] == 2 and result["segments_encoded"] == 2
    assert runs == [
        ".movie.seg00002.0000bbbb.fredica-part.mp4",
        ".movie.seg00003.0000bbbb.fredica-part.mp4",
    ]
    assert_like_one_pass(output, tmp_path / "one.mp4")
    assert sorted(p.name for p in output.parent.iterdir()) == [
        ".movie.mp4.fredica.json",
        "movie.mp4",
    ]


def test_a_checkpoint_of_another_encode_or_with_a_missing_piece_is_not_trusted(
    samples: SampleCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = samples.get("mkv", 12.0)
    output = tmp_path / "movie.mp4"
    first = Context(cancel_after=3)
    params = params_for(source, output, segment_seconds=3.0)
    assert run_job(media.transcode_job, params, first) is None
    checkpoint = first.checkpoints[-1]
    (output.parent / checkpoint["segments"][1]["file"]).unlink()  # lost
    runs = segment_runs(monkeypatch)
    result = run_job(media.transcode_job, {**params, "resume": checkpoint}, Context())
    assert result is not None and result["segments_reused"] == 2 and len(runs) == 2
    # Another quality: its segments are of no use; they are removed, all is encoded anew.
    first = Context(cancel_after=2)
    assert run_job(media.transcode_job, params, first) is None
    runs.clear()
    other = {**params, "crf": 30, "resume": first.checkpoints[-1]}
    result = run_job(media.transcode_job, other, Context())
    assert result is not None and result["segments_reused"] == 0 and len(runs) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == [".movie.mp4.fredica.json", "movie.mp4"]


async def first_segment_done(ws: Any) -> dict[str, Any]:
    """Read progress frames until one's checkpoint lists a finished segment; that checkpoint."""
    async with asyncio.timeout(60):
        while True:
            frame = json.loads(await ws.recv())
            assert frame["type"] == "progress", frame
            found = frame.get("extras", {}).get("checkpoint")
            if found and len(found["segments"]) >= 1:
                return dict(found)


@pytest.mark.slow
async def test_a_killed_child_resumes_from_its_checkpoint_through_the_server(
    server: int,
    samples: SampleCache,
    tmp_path: Path,
) -> None:
    source = samples.get("mkv", 12.0, (640, 480))
    output = tmp_path / "out" / "movie.mp4"
    params = params_for(source, output, segment_seconds=3.0, preset="slow")
    checkpoint: dict[str, Any] | None = None
    async with open_task(server, name="transcode_mp4") as ws:
        await start(ws, **params)
        checkpoint = await first_segment_done(ws)
        async with asyncio.timeout(60):
            for _ in range(1000):
                running = ffmpeg_processes(str(output.parent))
                if running:
                    break
                await asyncio.sleep(0.01)
        psutil.Process(running[0].ppid()).kill()  # the job's child, in the next segment
        while (frame := json.loads(await ws.recv()))["type"] == "progress":
            if frame.get("extras", {}).get("checkpoint"):
                checkpoint = frame["extras"]["checkpoint"]
    assert frame["error_type"] == "SUBPROCESS_CRASHED"
    assert checkpoint is not None
    done = len(checkpoint["segments"])
    # What it listed survived the crash's cleanup.
    assert all((output.parent / s["file"]).exists() for s in checkpoint["segments"])
    result = await result_of(server, "transcode_mp4", **params, resume=checkpoint)
    assert result["segments_reused"] == done
    assert result["segments_encoded"] == result["segments"] - done
    assert sorted(p.name for p in output.parent.iterdir()) == [
        ".movie.mp4.fredica.json",
        "movie.mp4",
    ]
    with av.open(str(output)) as container:
        assert sum(1 for p in container.demux(container.streams.video[0]) if p.size) == 300


def test_the_queue_hands_a_transcode_its_checkpoint_back() -> None:
    from types import SimpleNamespace

    from fredica_app.jobs import executors

    async def nowhere() -> None:
        return None

    by_type = {e.task_type.name: e for e in executors(nowhere)}
    executor = by_type["TRANSCODE_MP4"]
    task = SimpleNamespace(payload={"input": "/m/in.mkv", "output": "/m/out.mp4"})
    checkpoint = {"version": 1, "segments": []}
    params = executor.params(task, SimpleNamespace(checkpoint=checkpoint))  # type: ignore[arg-type]
    assert params["resume"] == checkpoint
    assert "resume" not in executor.params(task, SimpleNamespace(checkpoint=None))  # type: ignore[arg-type]


async def test_a_disk_that_fills_mid_encode_pauses_it_keeping_the_segments_done(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    """The output's folder on a small filesystem of its own (a tmpfs, mounted as root),
    filled by another file after the first segment: the job asks for a pause saying why,
    the segments done stay on disk as the checkpoint lists them, and once space is back and
    it is resumed it makes the segment it was making again and finishes — one attempt, none
    of the finished segments encoded twice (before: it failed ``NO_SPACE``)."""
    source = samples.get("mkv", 12.0, (640, 480))
    with small_disk(tmp_path / "disk", "24m") as disk:
        output = disk / "movie.mp4"
        params = params_for(source, output, segment_seconds=3.0, preset="slow", keep_free_bytes=0)
        checkpoint: dict[str, Any] | None = None
        async with open_task(server, name="transcode_mp4") as ws:
            await start(ws, **params)
            checkpoint = await first_segment_done(ws)
            ballast = await asyncio.to_thread(fill, disk)
            async with asyncio.timeout(60):
                while (frame := json.loads(await ws.recv()))["type"] == "progress":
                    if frame.get("extras", {}).get("checkpoint"):
                        checkpoint = frame["extras"]["checkpoint"]
            assert frame["type"] == "pause_request", frame
            assert "is full" in frame["reason"] and "resume" in frame["reason"]
            assert checkpoint is not None
            kept = {s["file"] for s in checkpoint["segments"]}
            assert kept and all((disk / name).exists() for name in kept)
            assert ffmpeg_processes(str(disk)) == []  # nothing runs while it waits
            ballast.unlink()
            await ws.send(dump(Resume()))
            async with asyncio.timeout(120):
                while (frame := json.loads(await ws.recv()))["type"] not in ("result", "error"):
                    pass
        assert frame["type"] == "result", frame
        result = frame["result"]
        # Each segment encoded once in this one attempt (the one cut by the full disk, made
        # again, counts once: only a finished segment counts).
        assert result["segments_encoded"] == result["segments"] > len(kept)
        assert result["segments_reused"] == 0
        assert sorted(p.name for p in disk.iterdir()) == [".movie.mp4.fredica.json", "movie.mp4"]
        with av.open(str(output)) as container:
            assert sum(1 for p in container.demux(container.streams.video[0]) if p.size) == 300
