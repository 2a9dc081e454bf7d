"""The media jobs for real: real sample clips, the bundled ffmpeg, PyAV, and the jobs run in
child processes behind a real endpoints server on 127.0.0.1:0. After every server test: no job
process and no ffmpeg is left behind."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import av
import psutil
import pytest
from websockets.asyncio.client import ClientConnection

from python_endpoints.catalogue import CATALOGUE
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs import media, outputs
from python_endpoints.jobs.sample import make_sample, sample_cues
from python_endpoints.params import TranscodeParams
from python_endpoints.protocol import (
    Cancel,
    InitData,
    InitParamAndRun,
    Pause,
    Resume,
    Status,
    dump,
)
from python_endpoints.serving import child, jobendpoints, outputlocks
from python_endpoints.serving.registry import ENDPOINTS, TranscodeEndpoint
from python_endpoints.serving.server import EndpointServer
from python_endpoints.status import render
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, server_process, start
from tests.support import clips
from tests.support.clips import JobContext, SampleCache, ffmpeg_processes, media_summary
from tests.support.host import fill, small_disk
from tests.support.process_table import assert_no_job_process_left, job_processes

BIG = (640, 480)  # with preset "slow", a 10 s clip takes about 5 s on 2 cores


@pytest.fixture(scope="session")
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


async def run_job(port: int, name: str, within: float = 60, **params: Any) -> list[dict]:
    """Run one job to its end; return every frame."""
    async with open_task(port, name=name) as ws:
        await start(ws, **params)
        return await frames_until(ws, "result", "error", "cancelled", within=within)


async def result_of(port: int, name: str, **params: Any) -> dict[str, Any]:
    frames = await run_job(port, name, **params)
    assert frames[-1]["type"] == "result", frames[-1]
    result: dict[str, Any] = frames[-1]["result"]
    return result


async def error_of(port: int, name: str, **params: Any) -> dict[str, Any]:
    frames = await run_job(port, name, **params)
    assert frames[-1]["type"] == "error", frames[-1]
    return frames[-1]


async def frames_for(ws: ClientConnection, seconds: float) -> list[dict]:
    """Every frame that arrives within ``seconds``."""
    seen: list[dict] = []
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(seconds):
            while True:
                seen.append(json.loads(await ws.recv()))
    return seen


async def until_percent(ws: ClientConnection, above: float, within: float = 60) -> list[dict]:
    async with asyncio.timeout(within):
        seen = []
        while True:
            frame = json.loads(await ws.recv())
            seen.append(frame)
            assert frame["type"] == "progress", frame
            if frame["percent"] > above:
                return seen


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def percents(frames: list[dict]) -> list[float]:
    return [f["percent"] for f in frames if f["type"] == "progress"]


def temporaries(final: Path) -> list[str]:
    """The temporary files of ``final`` in its folder, whatever their part id."""
    return sorted(
        p.name
        for p in final.parent.iterdir()
        if (outputs.parse_temp(p.name) or ("",))[0] == final.name
    )


# --- PROBE ------------------------------------------------------------------------------------


async def test_probe_an_mkv(server: int, samples: SampleCache) -> None:
    result = await result_of(server, "probe", input=str(samples.get("mkv")))
    assert result["outputs"] == []
    assert result["format"] == "matroska,webm" and result["kind"] == "video"
    assert result["duration"] == pytest.approx(4.0, abs=0.1)
    assert result["size"] == samples.get("mkv").stat().st_size
    assert result["subtitles"] == 1
    video, audio, subtitle = result["streams"]
    assert video == {
        "index": 0,
        "type": "video",
        "codec": "h264",
        "language": None,
        "title": None,
        "width": 320,
        "height": 240,
        "fps": 25.0,
    }
    assert audio["codec"] == "opus" and audio["sample_rate"] == 48000 and audio["channels"] == 2
    assert subtitle == {
        "index": 2,
        "type": "subtitle",
        "codec": "subrip",
        "language": "eng",
        "title": "English",
        "text": True,
    }


def ffmpeg_run(*args: str | Path) -> None:
    """Run the bundled ffmpeg quietly with ``args``; raise if it fails."""
    subprocess.run([media.ffmpeg_binary({}), "-v", "error", *map(str, args)], check=True)


async def test_probe_reads_a_files_chapters(server: int, tmp_path: Path) -> None:
    """Chapters written by ffmpeg from a metadata file come back in seconds with their
    titles (non-ASCII kept); a file without chapters says none."""
    meta = tmp_path / "chapters.txt"
    meta.write_text(
        ";FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=Opening\n"
        "[CHAPTER]\nTIMEBASE=1/1000\nSTART=1000\nEND=2000\ntitle=Ende ü\n",
        encoding="utf-8",
    )
    clip = tmp_path / "chapters.mkv"
    chapters = ["-i", str(meta), "-map_metadata", "1", "-map_chapters", "1"]
    await asyncio.to_thread(
        ffmpeg_run, "-f", "lavfi", "-i", "testsrc=d=2:s=64x48", *chapters, "-c:v", "mpeg4", clip
    )
    result = await result_of(server, "probe", input=str(clip))
    assert result["chapters"] == [
        {"start": 0.0, "end": 1.0, "title": "Opening"},
        {"start": 1.0, "end": 2.0, "title": "Ende ü"},
    ]
    plain = tmp_path / "plain.mkv"
    await asyncio.to_thread(
        ffmpeg_run, "-f", "lavfi", "-i", "testsrc=d=1:s=64x48", "-c:v", "mpeg4", plain
    )
    assert (await result_of(server, "probe", input=str(plain)))["chapters"] == []


async def test_probe_errors(server: int, samples: SampleCache, tmp_path: Path) -> None:
    error = await error_of(server, "probe", input=str(samples.get("text")))
    assert error["error_type"] == "NOT_MEDIA" and "not a media file" in error["error"]
    error = await error_of(server, "probe", input=str(tmp_path / "gone.mkv"))
    assert error["error_type"] == "INPUT_MISSING" and "does not exist" in error["error"]
    error = await error_of(server, "probe", input="relative.mkv")
    assert error["error_type"] == "PAYLOAD_ERROR"


# --- TRANSCODE_MP4 ----------------------------------------------------------------------------


async def test_remux_an_mp4_then_skip_it_while_it_is_current(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    source = samples.copy(tmp_path / "in", "mp4")
    output = tmp_path / "out" / "movie.mp4"
    params = {"input": str(source), "output": str(output)}
    frames = await run_job(server, "transcode_mp4", **params)
    result = frames[-1]["result"]
    assert result["mode"] == "remux" and result["video_encoder"] == "copy"
    assert result["outputs"] == [str(output)] and result["bytes"] == output.stat().st_size
    assert result["duration"] == pytest.approx(4.0, abs=0.1) and result["dropped"] == []
    assert media_summary(output)["streams"] == {"video": ["h264"], "audio": ["aac"]}
    assert percents(frames)[-1] == 100 and percents(frames) == sorted(percents(frames))
    assert names(output.parent) == [
        ".movie.mp4.fredica.json",
        "movie.mp4",
    ]
    # The skip check (check_skip): current while nothing changed; not once the input did.
    checked = TranscodeParams(**params).model_dump()  # as the server gives them to the check
    assert outputs.output_is_current(output, source, "TRANSCODE_MP4", checked)
    assert not outputs.output_is_current(output, source, "TRANSCODE_MP4", {**checked, "crf": 30})
    # Another profile or option is another output (it was made as the default, compatible).
    named = TranscodeParams(**params, profile="compatible").model_dump()
    assert outputs.output_is_current(output, source, "TRANSCODE_MP4", named)
    for other in ({"profile": "modern"}, {"max_height": 720}, {"loudness": True}):
        assert not outputs.output_is_current(output, source, "TRANSCODE_MP4", {**checked, **other})
    os.utime(source, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert not outputs.output_is_current(output, source, "TRANSCODE_MP4", checked)


async def test_auto_remuxes_the_mkv_with_its_subtitles_as_mov_text(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    output = tmp_path / "movie.mp4"
    result = await result_of(
        server,
        "transcode_mp4",
        input=str(samples.get("mkv")),
        output=str(output),
        profile="modern",
    )
    assert result["mode"] == "remux" and result["video_encoder"] == "copy"
    assert media_summary(output)["streams"] == {
        "video": ["h264"],
        "audio": ["opus"],
        "subtitle": ["mov_text"],
    }


async def test_reencode_falls_back_to_libx264_and_reports_progress(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    output = tmp_path / "movie.mp4"
    frames = await run_job(
        server,
        "transcode_mp4",
        input=str(samples.get("mkv")),
        output=str(output),
        mode="reencode",
        hardware=True,  # listed here, but none passes the test encode: the CPU it is
    )
    result = frames[-1]["result"]
    expected = media.hardware_encoder(media.ffmpeg_binary({})) or "libx264"
    assert result["mode"] == "reencode" and result["video_encoder"] == expected
    summary = media_summary(output)
    assert summary["streams"] == {"video": ["h264"], "audio": ["aac"], "subtitle": ["mov_text"]}
    assert summary["duration"] == pytest.approx(4.0, abs=0.5)
    progress = percents(frames)
    assert progress[-1] == 100 and progress == sorted(progress)
    texts = [f["status_text"] or "" for f in frames if f["type"] == "progress"]
    assert any(t.startswith("transcoding ") and " %" in t for t in texts)
    # The server tested the encoders once and told the child: it did not test them again.
    assert "looking for a hardware encoder" not in texts
    assert_said_in_messages(frames)


async def test_a_transcode_says_finishing_once_its_ffmpeg_has_exited(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    """To a client that asks (``say_finishing``), a transcode says ``finishing`` once its
    ffmpeg has exited and before it checks and commits the output — the engine starts the
    next file's encode meanwhile; to a client that does not ask, it never does."""
    params = {"input": str(samples.get("mkv")), "mode": "reencode"}
    async with open_task(server, name="transcode_mp4") as ws:
        data = InitData(params={**params, "output": str(tmp_path / "a.mp4")}, say_finishing=True)
        await ws.send(dump(InitParamAndRun(data=data)))
        before = await frames_until(ws, "finishing", "result", "error", within=60)
        assert before[-1]["type"] == "finishing", before[-1]
        assert ffmpeg_processes(str(tmp_path)) == []  # its ffmpeg has exited
        after = await frames_until(ws, "result", "error", within=60)
    # What follows: the output checked, committed, its sidecar written, then the last report.
    assert [f["type"] for f in after] == ["progress", "result"]
    assert after[0]["percent"] == 100 and media_summary(tmp_path / "a.mp4")["streams"]
    frames = await run_job(server, "transcode_mp4", **params, output=str(tmp_path / "b.mp4"))
    assert frames[-1]["type"] == "result"
    assert "finishing" not in [f["type"] for f in frames]


def assert_said_in_messages(frames: list[dict[str, Any]]) -> None:
    """Every status the job reported comes as messages (``status``) whose English is its
    ``status_text``: the window can say each in its own language."""
    progress = [f for f in frames if f["type"] == "progress" and f["status_text"]]
    assert progress
    for frame in progress:
        assert frame["status"], frame
        assert render(frame["status"], lambda english: english) == frame["status_text"]
    ids = {part["id"] for f in progress for part in f["status"]}
    assert ids & {"done", "probed"}, ids  # it said how it ended, too


@pytest.mark.parametrize(
    ("job", "extra"),
    [
        ("probe", {}),
        ("extract_audio", {"output": "out.wav"}),
        ("extract_subtitles", {"output_dir": "subs", "stem": "clip"}),
        ("transcode_mp4", {"output": "out.mp4", "profile": "modern"}),
        ("thumbnail", {"output": "sheet.jpg", "frames": 4}),
    ],
)
async def test_every_media_job_says_its_status_in_messages(
    server: int, samples: SampleCache, tmp_path: Path, job: str, extra: dict[str, str]
) -> None:
    params: dict[str, Any] = {"input": str(samples.get("mkv"))}
    for key, value in extra.items():
        params[key] = str(tmp_path / value) if key.startswith("output") else value
    frames = await run_job(server, job, **params)
    assert frames[-1]["type"] == "result", frames[-1]
    assert_said_in_messages(frames)


async def test_warming_transcode_starts_the_encoder_test_that_the_first_jobs_share(
    samples: SampleCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``warm`` starts the hardware encoder test before any job; jobs that arrive while it
    runs wait for that same test (one test per binary for the server's life)."""
    tested: list[str] = []
    real_test = jobendpoints.hardware_encoder

    def counted(binary: str) -> str | None:
        tested.append(binary)
        time.sleep(0.5)  # a test slower than a job's start: the jobs wait for it
        return real_test(binary)

    monkeypatch.setattr(jobendpoints, "_hardware_tests", {})
    monkeypatch.setattr(jobendpoints, "hardware_encoder", counted)
    # A machine with a device a hardware encoder could use (this one may have none).
    monkeypatch.setattr(jobendpoints, "possible_hardware_encoders", lambda: ["h264_vaapi"])
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()
    try:
        assert srv.warm(["transcode_mp4"]) == ["transcode_mp4"]
        for _ in range(100):
            if tested:
                break
            await asyncio.sleep(0.01)
        assert tested == [media.ffmpeg_binary({})]  # started ahead, before any job
        clip = str(samples.get("mkv"))
        results = await asyncio.gather(
            *(
                result_of(
                    port,
                    "transcode_mp4",
                    input=clip,
                    output=str(tmp_path / f"{i}.mp4"),
                    hardware=True,
                )
                for i in range(2)
            )
        )
    finally:
        await srv.close()
    assert len(tested) == 1
    assert {r["video_encoder"] for r in results} == {"copy"}  # h264 fits: the video is copied
    await assert_no_job_process_left()


async def test_where_no_hardware_encoder_could_work_nothing_is_tested_nor_looked_up(
    samples: SampleCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No device for any hardware encoder's driver (most servers and virtual machines): the
    server's warm-up and its jobs test nothing and look no ffmpeg up — no ``ffmpeg -version``
    in front of the first jobs —, and a job asking for hardware gets the CPU's encoder."""
    looked_up: list[str] = []

    def lookup(params: Any) -> str:
        looked_up.append("ffmpeg")
        return media.ffmpeg_binary(params)

    monkeypatch.setattr(jobendpoints, "_hardware_tests", {})
    monkeypatch.setattr(jobendpoints, "possible_hardware_encoders", lambda: [])
    monkeypatch.setattr(jobendpoints, "ffmpeg_binary", lookup)
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()
    try:
        assert srv.warm(["transcode_mp4"]) == ["transcode_mp4"]
        result = await result_of(
            port,
            "transcode_mp4",
            input=str(samples.get("legacy")),
            output=str(tmp_path / "out.mp4"),
            hardware=True,
        )
    finally:
        await srv.close()
    assert result["video_encoder"] == "libx264"
    assert looked_up == [] and jobendpoints._hardware_tests == {}
    await assert_no_job_process_left()


async def test_a_known_hardware_encoder_is_used_without_testing_and_none_means_the_cpu(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    """``hardware_encoder`` says what works here. Given "none", the CPU encodes; given one that
    does not work on this machine, the encode fails and is run again on the CPU."""
    clip = str(samples.get("mkv"))
    result = await result_of(
        server,
        "transcode_mp4",
        input=clip,
        output=str(tmp_path / "cpu.mp4"),
        mode="reencode",
        hardware_encoder="none",
    )
    assert result["video_encoder"] == "libx264"
    if media.hardware_encoder(media.ffmpeg_binary({})) is None:  # no working one here
        frames = await run_job(
            server,
            "transcode_mp4",
            input=clip,
            output=str(tmp_path / "nvenc.mp4"),
            mode="reencode",
            hardware_encoder="h264_nvenc",
        )
        assert frames[-1]["result"]["video_encoder"] == "libx264"
        texts = [f["status_text"] or "" for f in frames if f["type"] == "progress"]
        assert any("hardware encoder failed, using the CPU" in t for t in texts)
    error = await error_of(
        server, "transcode_mp4", input=clip, output=str(tmp_path / "x.mp4"), hardware_encoder="$(x)"
    )
    assert error["error_type"] == "PAYLOAD_ERROR"


async def test_a_truncated_input_keeps_what_it_holds_and_says_so(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    # Its header says 4 s, it holds 2 s: the output has all there is, and the result says so.
    output = tmp_path / "movie.mp4"
    result = await result_of(
        server, "transcode_mp4", input=str(samples.get("corrupt")), output=str(output)
    )
    assert result["duration"] == pytest.approx(2.0, abs=0.3)
    assert result["declared_duration"] == pytest.approx(4.0, abs=0.1)
    assert result["note"].startswith("the input is shorter than its header claims")
    assert names(tmp_path) == [".movie.mp4.fredica.json", "movie.mp4"]


async def test_no_video_and_an_unusable_ffmpeg(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    audio = tmp_path / "audio.wav"
    await result_of(server, "extract_audio", input=str(samples.get("mkv")), output=str(audio))
    error = await error_of(
        server, "transcode_mp4", input=str(audio), output=str(tmp_path / "a.mp4")
    )
    assert error["error_type"] == "UNSUPPORTED_MEDIA" and "no video stream" in error["error"]
    # The ffmpeg is the server's to choose (a job cannot name one): a server started with
    # one that does not exist.
    srv = EndpointServer(ENDPOINTS, TOKEN, ffmpeg=str(tmp_path / "no-such-ffmpeg"))
    port = await srv.start()
    try:
        error = await error_of(
            port, "transcode_mp4", input=str(samples.get("mkv")), output=str(tmp_path / "b.mp4")
        )
    finally:
        await srv.close()
    assert error["error_type"] == "EXECUTOR_ERROR" and "ffmpeg path" in error["error"]
    assert not (tmp_path / "b.mp4").exists()


async def test_no_space_is_refused_before_starting(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    # A real full disk needs root (a tiny tmpfs): the check is exercised through the reserve.
    output = tmp_path / "movie.mp4"
    error = await error_of(
        server,
        "transcode_mp4",
        input=str(samples.get("mp4")),
        output=str(output),
        keep_free_bytes=1 << 60,
    )
    assert error["error_type"] == "NO_SPACE" and "free some space" in error["error"]
    assert names(tmp_path) == []


async def long_transcode(
    ws: ClientConnection, samples: SampleCache, output: Path
) -> tuple[list[dict], psutil.Process]:
    """Start a re-encode that lasts several seconds; return once it is under way, with its
    ffmpeg."""
    source = samples.get("mkv", 10.0, BIG)
    await start(
        ws,
        input=str(source),
        output=str(output),
        mode="reencode",
        preset="slow",
        hardware=False,
    )
    frames = await until_percent(ws, 0.0)
    return frames, ffmpeg_processes(str(output.parent))[0]


@pytest.mark.slow
async def test_pause_suspends_ffmpeg_and_resume_completes(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    output = tmp_path / "movie.mp4"
    async with open_task(server, name="transcode_mp4") as ws:
        frames, ffmpeg = await long_transcode(ws, samples, output)
        await ws.send(dump(Pause()))
        frames += await frames_for(ws, 0.5)  # what was in flight
        assert ffmpeg.status() == psutil.STATUS_STOPPED
        paused_at = percents(frames)[-1]
        assert await frames_for(ws, 1.5) == []  # nothing moves while paused
        assert paused_at < 100
        await ws.send(dump(Resume()))
        frames += await frames_until(ws, "result", "error", within=120)
    assert frames[-1]["type"] == "result", frames[-1]
    assert percents(frames)[-1] == 100 and percents(frames) == sorted(percents(frames))
    assert media_summary(output)["duration"] == pytest.approx(10.0, abs=0.5)


@pytest.mark.slow
async def test_cancel_mid_transcode_leaves_no_file_and_no_ffmpeg(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    output = tmp_path / "movie.mp4"
    async with open_task(server, name="transcode_mp4") as ws:
        _, ffmpeg = await long_transcode(ws, samples, output)
        assert temporaries(output)
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "error", "result", within=20)
    assert frames[-1] == {"type": "cancelled"}
    ffmpeg.wait(timeout=5)
    assert names(tmp_path) == []


@pytest.mark.slow
async def test_a_killed_child_takes_its_ffmpeg_along(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    output = tmp_path / "movie.mp4"
    async with open_task(server, name="transcode_mp4") as ws:
        _, ffmpeg = await long_transcode(ws, samples, output)
        child_process = psutil.Process(ffmpeg.ppid())  # the job's child, ffmpeg's parent
        assert child_process in job_processes()
        assert temporaries(output)
        child_process.kill()
        frames = await frames_until(ws, "error", "result", "cancelled", within=20)
    assert frames[-1]["error_type"] == "SUBPROCESS_CRASHED"
    assert "SIGKILL" in frames[-1]["error"]
    # Killed by the kernel with its parent (PR_SET_PDEATHSIG): no orphan goes on writing.
    gone, _ = psutil.wait_procs([ffmpeg], timeout=5)
    assert gone or ffmpeg.status() == psutil.STATUS_ZOMBIE
    assert names(tmp_path) == []  # and the endpoint removed the temporary file


# --- two tasks, one output -------------------------------------------------------------------


def waiting(frames: list[dict]) -> list[dict]:
    return [
        f
        for f in frames
        if f["type"] == "progress" and (f["status_text"] or "").startswith("waiting: ")
    ]


def long_params(samples: SampleCache, output: Path, **more: Any) -> dict[str, Any]:
    # 60 s (about 9 s of encoding on 2 cores): the first encode must outlast the waiters' 1.2 s
    # of checks with a wide margin on fast machines too (10 s took 1.6 s on one).
    source = samples.get("mkv", 60.0, BIG)
    slow = {"mode": "reencode", "preset": "slow", "hardware": False}
    return {"input": str(source), "output": str(output), **slow, **more}


@pytest.mark.slow
async def test_two_transcodes_to_one_output_the_second_waits_then_skips_or_runs(
    server: int, samples: SampleCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outputlocks, "REPORT_EVERY", 0.3)
    output = tmp_path / "movie.mp4"
    async with (
        open_task(server, name="transcode_mp4") as first,
        open_task(server, name="transcode_mp4") as same,
        open_task(server, name="transcode_mp4") as other,
    ):
        await start(first, **long_params(samples, output))
        await until_percent(first, 0.0)  # its ffmpeg writes
        await start(same, **long_params(samples, output))  # another template, same file
        await start(other, **long_params(samples, output, preset="veryfast", crf=30))
        seen_same = await frames_for(same, 1.0)
        seen_other = await frames_for(other, 0.2)
        # They wait, saying why, again and again (the engine's stall watchdog sees them), and
        # start nothing meanwhile.
        assert len(waiting(seen_same)) >= 3 and seen_same == waiting(seen_same)
        assert seen_same[0]["status_text"] == "waiting: another task is writing movie.mp4"
        assert seen_same[0]["percent"] == 0 and waiting(seen_other)
        assert len(ffmpeg_processes(str(tmp_path))) == 1
        done = await frames_until(first, "result", "error", within=120)
        assert done[-1]["type"] == "result", done[-1]
        made = output.stat()
        # Its output was made meanwhile from the same input with the same params: a skip.
        seen_same += await frames_until(same, "result", "error", within=30)
        assert seen_same[-1] == {
            "type": "result",
            "result": {"skipped": True, "outputs": [str(output)]},
        }
        assert "made meanwhile by another task" in seen_same[-2]["status_text"]
        # Other params: it runs once the first is done, and its output replaces the first's.
        seen_other += await frames_until(other, "result", "error", within=120)
        assert seen_other[-1]["type"] == "result", seen_other[-1]
        assert seen_other[-1]["result"]["mode"] == "reencode"
    assert output.stat().st_mtime_ns > made.st_mtime_ns
    assert media_summary(output)["duration"] == pytest.approx(60.0, abs=0.5)
    other_params = long_params(samples, output, preset="veryfast", crf=30)
    checked = TranscodeParams(**other_params).model_dump()
    assert outputs.output_is_current(output, other_params["input"], "TRANSCODE_MP4", checked)
    assert names(tmp_path) == [".movie.mp4.fredica.json", "movie.mp4"]  # no temporary left


@pytest.mark.slow
async def test_a_waiting_transcode_pauses_and_cancels_at_once(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    output = tmp_path / "movie.mp4"
    async with (
        open_task(server, name="transcode_mp4") as first,
        open_task(server, name="transcode_mp4") as paused,
        open_task(server, name="transcode_mp4") as cancelled,
    ):
        await start(first, **long_params(samples, output))
        await until_percent(first, 0.0)
        await start(paused, **long_params(samples, output))
        await start(cancelled, **long_params(samples, output, crf=30))
        assert waiting(await frames_until(paused, "progress"))
        assert waiting(await frames_until(cancelled, "progress"))
        await cancelled.send(dump(Status()))
        assert (await frames_until(cancelled, "status"))[-1]["state"] == "waiting"
        began = time.monotonic()
        await cancelled.send(dump(Cancel()))
        assert (await frames_until(cancelled, "cancelled", "error", "result"))[-1] == {
            "type": "cancelled"
        }
        assert time.monotonic() - began < 1.0  # prompt: nothing to stop but a wait
        await paused.send(dump(Pause()))
        assert (await frames_until(paused, "paused"))[-1] == {"type": "paused", "held": False}
        done = await frames_until(first, "result", "error", within=120)
        assert done[-1]["type"] == "result", done[-1]
        # Its turn came while paused: it holds back until resumed.
        assert await frames_for(paused, 1.0) == []
        assert ffmpeg_processes(str(tmp_path)) == []
        await paused.send(dump(Resume()))
        end = await frames_until(paused, "result", "error", within=30)
    assert end[-1]["result"] == {"skipped": True, "outputs": [str(output)]}
    assert names(tmp_path) == [".movie.mp4.fredica.json", "movie.mp4"]


async def test_what_a_crashed_attempt_left_is_removed_by_the_next_run(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    source = samples.copy(tmp_path / "in", "mp4")
    output = tmp_path / "out" / "movie.mp4"
    output.parent.mkdir()
    # A crashed attempt (its server killed with it) left its temporary files behind.
    left = [
        outputs.temp_path(output, "deadbeef"),
        outputs.temp_path(outputs.sidecar_path(output), "deadbeef"),
    ]
    for path in left:
        path.write_text("what a crashed attempt left")
    keep = output.parent / ".movie.mp4.fredica-part.mp4.part"  # not a temporary of this job's
    keep.write_text("a site download's .part")
    result = await result_of(server, "transcode_mp4", input=str(source), output=str(output))
    assert result["mode"] == "remux"
    assert names(output.parent) == [keep.name, ".movie.mp4.fredica.json", "movie.mp4"]


@pytest.mark.slow
async def test_a_cancelled_attempt_removes_only_its_own_temporary_file(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    output = tmp_path / "movie.mp4"
    async with open_task(server, name="transcode_mp4") as ws:
        await long_transcode(ws, samples, output)
        assert len(temporaries(output)) == 1  # its own
        # Another attempt at the same output writes meanwhile (another server, an overlap).
        other = outputs.temp_path(output, "89abcdef")
        other.write_text("another attempt's file")
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "error", "result", within=20)
    assert frames[-1] == {"type": "cancelled"}
    assert names(tmp_path) == [other.name]


# --- EXTRACT_AUDIO ----------------------------------------------------------------------------


async def test_extract_audio_to_16k_mono_wav(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    output = tmp_path / "speech.wav"
    result = await result_of(
        server, "extract_audio", input=str(samples.get("mkv")), output=str(output)
    )
    probed = result.pop("probe")  # the input's probe, which fills the material
    assert probed["kind"] == "video" and [s["type"] for s in probed["streams"]][1] == "audio"
    assert result == {
        "outputs": [str(output)],
        "duration": pytest.approx(4.0, abs=0.1),
        "bytes": output.stat().st_size,
        "format": "wav",
        "sample_rate": 16000,
        "channels": 1,
        "stream": 1,
        "tool": "pyav",  # a 4 s clip: taken out in the job's process
    }
    with av.open(str(output)) as container:
        [audio] = container.streams.audio
        assert audio.codec_context.codec.canonical_name == "pcm_s16le"
        assert audio.codec_context.sample_rate == 16000
        assert audio.codec_context.layout.nb_channels == 1
    assert output.stat().st_size == pytest.approx(4.0 * 16000 * 2, rel=0.05)
    assert outputs.output_is_current(
        output,
        samples.get("mkv"),
        "EXTRACT_AUDIO",
        {"format": "wav", "sample_rate": 16000, "channels": 1},
    )


async def test_extract_audio_to_flac_and_no_audio(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    output = tmp_path / "speech.flac"
    result = await result_of(
        server,
        "extract_audio",
        input=str(samples.get("mp4")),
        output=str(output),
        format="flac",
        sample_rate=22050,
        channels=2,
    )
    assert result["format"] == "flac" and result["sample_rate"] == 22050
    assert media_summary(output)["streams"] == {"audio": ["flac"]}
    error = await error_of(
        server,
        "extract_audio",
        input=str(samples.get("noaudio")),
        output=str(tmp_path / "none.wav"),
    )
    assert error["error_type"] == "NO_AUDIO" and "no audio stream" in error["error"]
    assert not (tmp_path / "none.wav").exists()


# --- EXTRACT_SUBTITLES ------------------------------------------------------------------------


def srt_clock(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"00:00:{ms // 1000:02d},{ms % 1000:03d}"


async def test_extract_subtitles_to_srt_and_vtt_with_exact_timestamps(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    result = await result_of(
        server,
        "extract_subtitles",
        input=str(samples.get("mkv")),
        output_dir=str(tmp_path),
        stem="movie",
    )
    srt, vtt = tmp_path / "movie.2.eng.srt", tmp_path / "movie.2.eng.vtt"
    assert result == {
        "outputs": [str(srt), str(vtt)],
        "streams": [
            {
                "index": 2,
                "codec": "subrip",
                "language": "eng",
                "files": [str(srt), str(vtt)],
                "cues": 2,
            }
        ],
        "skipped": [],
    }
    cues = sample_cues(4.0)
    srt_text, vtt_text = srt.read_text(encoding="utf-8"), vtt.read_text(encoding="utf-8")
    for start_s, end_s, text in cues:
        assert f"{srt_clock(start_s)} --> {srt_clock(end_s)}\n{text}" in srt_text
        vtt_clock = srt_clock(start_s)[3:].replace(",", "."), srt_clock(end_s)[3:].replace(",", ".")
        assert f"{vtt_clock[0]} --> {vtt_clock[1]}\n{text}" in vtt_text
    assert vtt_text.startswith("WEBVTT")
    assert outputs.output_is_current(srt, samples.get("mkv"), "EXTRACT_SUBTITLES", {})
    assert [name for name in names(tmp_path) if name.startswith(".")] == [
        ".movie.2.eng.srt.fredica.json",
        ".movie.2.eng.vtt.fredica.json",
    ]


async def test_no_text_subtitles_is_an_empty_success(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    result = await result_of(
        server,
        "extract_subtitles",
        input=str(samples.get("mp4")),
        output_dir=str(tmp_path),
        stem="movie",
        formats=["srt"],
    )
    assert result == {"outputs": [], "streams": [], "skipped": []}
    assert names(tmp_path) == []


# --- the pieces, without the server -----------------------------------------------------------


def test_encoders_are_verified_with_a_one_frame_encode() -> None:
    binary = media.ffmpeg_binary({})
    encoders = media.list_encoders(binary)
    assert encoders["libx264"] == "V" and encoders["aac"] == "A"
    assert media.encoder_works(binary, "libx264")
    if not Path("/dev/nvidia0").exists():  # listed in the bundled build, but no GPU to use
        assert not media.encoder_works(binary, "h264_nvenc")
    found = media.hardware_encoder(binary)
    assert found is None or media.encoder_works(binary, found)
    assert media._hardware[binary] == found  # cached for the life of the process
    assert not media.encoder_works(binary, "no_such_encoder")


def test_the_hardware_encoders_are_tested_side_by_side_and_the_best_working_one_wins() -> None:
    candidates = ["h264_nvenc", "h264_qsv", "h264_amf", "h264_vaapi"]
    together = threading.Barrier(len(candidates), timeout=10)  # broken unless all run at once

    def works(encoder: str) -> bool:  # a fake: no GPU here to test a real encoder on
        together.wait()
        return encoder in ("h264_amf", "h264_qsv")

    assert media.first_working(candidates, works) == "h264_qsv"
    assert media.first_working(candidates, lambda e: False) is None
    assert media.first_working([], works) is None


def test_no_encoder_is_tested_where_no_driver_has_a_device(monkeypatch: pytest.MonkeyPatch) -> None:
    if any(Path(d).exists() for ds in ff.LINUX_DEVICES.values() for d in ds):
        pytest.skip("this machine has a GPU's device")
    if not sys.platform.startswith("linux"):
        pytest.skip("the devices are Linux's")

    def no_listing(binary: str) -> dict[str, str]:
        raise AssertionError("ffmpeg was asked for its encoders")

    monkeypatch.setattr(media, "list_encoders", no_listing)
    monkeypatch.setattr(media, "_hardware", {})
    assert media.hardware_encoder(media.ffmpeg_binary({})) is None


def test_probe_reads_what_make_sample_wrote(samples: SampleCache) -> None:
    info = media.probe(str(samples.get("noaudio")))
    assert info.kind == "video" and info.main_audio() is None
    assert [s.type for s in info.streams] == ["video", "subtitle"]
    with pytest.raises(ValueError, match="unknown sample kind"):
        make_sample(Path("unused.mkv"), kind="avi")


def test_temporary_and_sidecar_names(tmp_path: Path) -> None:
    final = tmp_path / "movie.mp4"
    assert outputs.temp_path(final, "0123abcd") == tmp_path / ".movie.0123abcd.fredica-part.mp4"
    assert outputs.parse_temp(".movie.0123abcd.fredica-part.mp4") == ("movie.mp4", "0123abcd")
    assert outputs.parse_temp(".a.b.0123abcd.fredica-part") == ("a.b", "0123abcd")
    for name in ("movie.mp4", ".movie.fredica-part.mp4", ".movie.mp4.fredica-part.mp4.part"):
        assert outputs.parse_temp(name) is None  # a download's own temporaries are not these
    # Unique per run: each run gets its own part id (the server's, or a fresh one).
    ids = {outputs.part_id({}) for _ in range(100)}
    assert len(ids) == 100 and all(outputs.parse_temp(f".m.{i}.fredica-part") for i in ids)
    assert outputs.part_id({"part_id": "0123abcd"}) == "0123abcd"
    assert outputs.part_id({"part_id": "../../x"}) != "../../x"  # never a path
    assert outputs.sidecar_path(final) == tmp_path / ".movie.mp4.fredica.json"
    assert outputs.subtitle_path(tmp_path, "m", 2, "eng", "srt") == tmp_path / "m.2.eng.srt"
    assert outputs.subtitle_path(tmp_path, "m", 3, "und", "vtt") == tmp_path / "m.3.vtt"
    assert outputs.subtitle_path(tmp_path, "m", 3, "../x", "vtt") == tmp_path / "m.3.vtt"
    assert outputs.subtitle_path(tmp_path, "m", 4, "pt-BR", "srt") == tmp_path / "m.4.pt-BR.srt"


def test_partial_outputs_are_this_runs_own(tmp_path: Path) -> None:
    out = tmp_path / "a.mp4"
    mine, theirs = "0123abcd", "89abcdef"
    files = [
        outputs.temp_path(out, mine),
        outputs.temp_path(outputs.sidecar_path(out), mine),
        outputs.temp_path(out, theirs),  # another attempt at the same output
        outputs.temp_path(tmp_path / "b.mp4", mine),  # another output
    ]
    for path in files:
        path.write_text("x")
    params = {"output": str(out), "part_id": mine}
    assert outputs.partial_outputs("TRANSCODE_MP4", params) == sorted(files[:2])
    assert outputs.leftover_parts("TRANSCODE_MP4", params) == [files[2]]
    assert outputs.leftover_parts("TRANSCODE_MP4", {"output": str(out)}) == sorted(files[:3])
    assert outputs.partial_outputs("TRANSCODE_MP4", {"output": str(out)}) == []  # no id
    assert outputs.partial_outputs("PROBE", {"input": str(out), "part_id": mine}) == []
    assert outputs.partial_outputs("EXTRACT_AUDIO", {"part_id": mine}) == []  # invalid params
    names = [
        f".m.2.eng.{mine}.fredica-part.srt",
        f".m.3.{mine}.fredica-part.vtt",
        f"..m.3.vtt.fredica.{mine}.fredica-part.json",  # its sidecar's
        f".m.3.{theirs}.fredica-part.vtt",
        ".m.2.eng.srt.fredica.json",
        "m.2.eng.srt",
        f".other.2.{mine}.fredica-part.srt",
        f".m.srt.{mine}.fredica-part.x",
    ]
    for name in names:
        (tmp_path / name).write_text("x")
    params = {"output_dir": str(tmp_path), "stem": "m", "part_id": mine}
    assert [p.name for p in outputs.partial_outputs("EXTRACT_SUBTITLES", params)] == [
        f"..m.3.vtt.fredica.{mine}.fredica-part.json",
        f".m.2.eng.{mine}.fredica-part.srt",
        f".m.3.{mine}.fredica-part.vtt",
    ]
    assert [p.name for p in outputs.leftover_parts("EXTRACT_SUBTITLES", params)] == [
        f".m.3.{theirs}.fredica-part.vtt"
    ]


def test_two_endpoints_at_one_output_clean_up_only_their_own(tmp_path: Path) -> None:
    out = tmp_path / "movie.mp4"
    params = {"input": str(tmp_path / "in.mkv"), "output": str(out)}

    async def emit(frame: Any) -> None:
        pass

    first, second = TranscodeEndpoint(emit), TranscodeEndpoint(emit)
    for endpoint in (first, second):
        endpoint._params = endpoint.child_params(TranscodeParams(**params).model_dump())
    temps = [outputs.temp_path(out, e.part_id) for e in (first, second)]
    assert temps[0] != temps[1]
    for temp in temps:
        temp.write_text("being written")
    first.remove_partial_outputs()  # cancelled: the other attempt's file stays
    assert not temps[0].exists() and temps[1].exists()


def test_what_each_job_locks(tmp_path: Path) -> None:
    out = str(tmp_path / "m.mp4")
    one_output = ("TRANSCODE_MP4", "extract_audio", "ANALYZE", "TRANSCRIBE", "DOWNLOAD")
    for job in (*one_output, "BURN_SUBTITLES", "ADD_SUBTITLE_TRACK", "DIARIZE"):
        assert outputs.locked_paths(job, {"output": out}) == [Path(out)], job
    assert outputs.locked_paths("DOWNLOAD_SITE", {"url": "https://x", "output": out}) == [Path(out)]
    folder = {"output_dir": str(tmp_path), "stem": "m"}
    assert outputs.locked_paths("EXPORT_SUBTITLES", folder) == [
        tmp_path / n
        for n in ("m.srt", "m.vtt", "m.transcript.txt", "m.segments.json", "m.transcript.md")
    ]
    assert outputs.locked_paths("EXTRACT_SUBTITLES", folder) == [tmp_path / "m.*"]
    model = {"name": "small", "models_dir": str(tmp_path)}
    assert outputs.locked_paths("DOWNLOAD_MODEL", model) == [tmp_path / "small"]
    assert outputs.locked_paths("PROBE", {"input": out}) == []
    assert outputs.locked_paths("TRANSCODE_MP4", {"output": "rel.mp4"}) == []  # refused later
    assert outputs.locked_paths("EXPORT_SUBTITLES", {**folder, "stem": "../m"}) == []


def test_output_is_current_needs_an_intact_sidecar(tmp_path: Path) -> None:
    source, out = tmp_path / "in.mkv", tmp_path / "out.wav"
    source.write_bytes(b"input")
    out.write_bytes(b"output")
    params = {"format": "wav", "sample_rate": 16000, "channels": 1, "ffmpeg": "a"}
    assert not outputs.output_is_current(out, source, "EXTRACT_AUDIO", params)  # no sidecar
    outputs.write_sidecar(out, source, "EXTRACT_AUDIO", params)
    assert outputs.output_is_current(out, source, "EXTRACT_AUDIO", {**params, "ffmpeg": "b"})
    assert outputs.output_is_current(out, source, "extract_audio", params)  # the endpoint's name
    assert not outputs.output_is_current(out, source, "TRANSCODE_MP4", params)
    assert not outputs.output_is_current(out, tmp_path / "other.mkv", "EXTRACT_AUDIO", params)
    out.write_bytes(b"changed")
    assert not outputs.output_is_current(out, source, "EXTRACT_AUDIO", params)
    outputs.sidecar_path(out).write_text("{not json")
    assert not outputs.output_is_current(out, source, "EXTRACT_AUDIO", params)


def test_the_params_a_sidecar_records_are_fields_of_the_params_model() -> None:
    models = {job.task_type: job.params for job in CATALOGUE}
    for job, names in outputs.RELEVANT_PARAMS.items():
        assert set(names) <= set(models[job].model_fields), job
        assert "output" not in names and "input" not in names, job  # recorded on their own


def test_a_sidecar_written_before_is_current_for_the_same_validated_params(
    tmp_path: Path,
) -> None:
    """What an earlier version recorded (the params that shape the output, defaults filled in)
    is what is recorded now for the same validated params: its outputs are still skipped."""
    source, out = tmp_path / "in.mkv", tmp_path / "out.mp4"
    source.write_bytes(b"input")
    out.write_bytes(b"output")
    stat = {"size": 6, "mtime_ns": out.stat().st_mtime_ns}
    recorded = {
        "mode": "auto",
        "hardware": True,
        "crf": 23,
        "preset": "veryfast",
        "profile": "compatible",
        "max_height": None,
        "max_fps": None,
        "loudness": False,
    }
    record = {
        "version": 1,
        "job": "TRANSCODE_MP4",
        "output": {"name": "out.mp4", **stat},
        "input": {
            "path": os.path.normcase(os.path.abspath(source)),
            "size": 5,
            "mtime_ns": source.stat().st_mtime_ns,
        },
        "params": recorded,
    }
    outputs.sidecar_path(out).write_text(json.dumps(record, indent=1, sort_keys=True))
    payload = {"input": str(source), "output": str(out)}
    validated = TranscodeParams(**payload).model_dump()
    assert outputs.relevant_params("TRANSCODE_MP4", validated) == recorded
    assert outputs.output_is_current(out, source, "TRANSCODE_MP4", validated)
    crf = TranscodeParams(**payload, crf=30).model_dump()
    assert not outputs.output_is_current(out, source, "TRANSCODE_MP4", crf)
    # Written now for the same params: the same record.
    outputs.write_sidecar(out, source, "TRANSCODE_MP4", validated)
    assert json.loads(outputs.sidecar_path(out).read_text()) == record


def test_tracked_processes_are_killed_when_the_child_exits() -> None:
    process = child.start_process([sys.executable, "-c", "import time; time.sleep(60)"])
    with process:
        child.kill_tracked_processes()
        assert process.wait(10) != 0
    child.untrack_process(process)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
@pytest.mark.parametrize("setpriv", [True, False], ids=["through setpriv", "preexec hook"])
def test_a_started_process_dies_with_the_process_that_started_it(setpriv: bool) -> None:
    script = (
        "import sys, time\n"
        "from python_endpoints.serving import child\n"
        f"if not {setpriv}: child._setpriv_path = None\n"
        "assert (child.setpriv() is not None) == " + str(setpriv) + "\n"
        "p = child.start_process([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE) as parent:
        assert parent.stdout is not None
        grandchild = psutil.Process(int(parent.stdout.readline()))
        # Through setpriv, the signal is armed once setpriv runs, before it execs the program:
        # killed before that, the child leaves an orphan — the server's reaper's case (below).
        deadline = time.monotonic() + 10
        while grandchild.name() == "setpriv" and time.monotonic() < deadline:
            time.sleep(0.01)
        parent.kill()
        parent.wait(10)
    gone, _ = psutil.wait_procs([grandchild], timeout=5)
    assert gone or grandchild.status() == psutil.STATUS_ZOMBIE


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux")
async def test_the_server_kills_and_reaps_what_a_killed_child_left_running(
    samples: SampleCache, tmp_path: Path
) -> None:
    # ffmpeg started with no death signal (as when its child dies before setpriv armed it):
    # the server, the subreaper of its tree, adopts it when the child dies and kills it.
    server, port = await server_process(tmp_path, {**os.environ, child.NO_DEATH_SIGNAL_ENV: "1"})
    try:
        async with open_task(port, name="transcode_mp4") as ws:
            _, ffmpeg = await long_transcode(ws, samples, tmp_path / "movie.mp4")
            assert ffmpeg.ppid() != server.pid  # the job's child started it
            psutil.Process(ffmpeg.ppid()).kill()
            frames = await frames_until(ws, "error", "result", "cancelled", within=20)
        assert frames[-1]["error_type"] == "SUBPROCESS_CRASHED"
        # Gone, reaped: not running on, not a zombie of the server's.
        gone, alive = psutil.wait_procs([ffmpeg], timeout=10)
        assert gone, [p.status() for p in alive]
    finally:
        server.terminate()
        await asyncio.to_thread(server.wait, 10)
        server.stdout.close()


# --- a job run in this process: paths the real machine does not take by itself -----------------


@pytest.mark.skipif(Path("/dev/nvidia0").exists(), reason="NVENC may work here")
def test_a_hardware_encoder_that_fails_for_real_is_retried_on_the_cpu(
    samples: SampleCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if h264_nvenc had passed its one-frame test: the real encode fails, libx264 follows.
    monkeypatch.setattr(media, "hardware_encoder", lambda binary: "h264_nvenc")
    ctx = JobContext()
    output = tmp_path / "movie.mp4"
    params = {"input": str(samples.get("mp4", 2.0)), "output": str(output), "mode": "reencode"}
    result = clips.run_job(media.transcode_job, params, ctx)
    assert result is not None and result["video_encoder"] == "libx264"
    assert any("hardware encoder failed" in (text or "") for _, text in ctx.reports)
    assert names(tmp_path) == [".movie.mp4.fredica.json", "movie.mp4"]


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for ffmpeg")
@pytest.mark.parametrize(
    ("stderr", "error_type"),
    [
        ("Error muxing a packet\\nConversion failed!", "FFMPEG_FAILED"),
        ("av_interleaved_write_frame(): No space left on device", "NO_SPACE"),
    ],
)
def test_a_failing_ffmpeg_is_reported_with_the_end_of_its_stderr(
    samples: SampleCache, tmp_path: Path, stderr: str, error_type: str
) -> None:
    fake = tmp_path / "ffmpeg"
    fake.write_text(f"#!/bin/sh\nprintf 'warming up\\n{stderr}\\n' >&2\nexit 1\n")
    fake.chmod(0o755)
    output = tmp_path / "out" / "movie.mp4"
    params = {"input": str(samples.get("mp4", 2.0)), "output": str(output), "ffmpeg": str(fake)}
    with pytest.raises(child.JobFailed) as info:
        clips.run_job(media.transcode_job, params)
    assert info.value.error_type == error_type
    message = str(info.value)
    assert "exit code 1" in message and stderr.split("\\n")[-1] in message
    assert names(output.parent) == []


@pytest.mark.slow
async def test_a_disk_that_fills_mid_transcode_fails_it_no_space_leaving_nothing(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    """The output on a small filesystem of its own (tmpfs; root writes past no size), filled
    by another file while ffmpeg writes: a re-encode in one piece has nothing to resume from,
    so it fails ``NO_SPACE`` with what to do, and its partial output is gone; no ffmpeg is
    left."""
    with small_disk(tmp_path / "disk", "8m") as disk:
        output = disk / "movie.mp4"
        async with open_task(server, name="transcode_mp4") as ws:
            await start(
                ws,
                input=str(samples.get("mkv", 10.0, BIG)),
                output=str(output),
                mode="reencode",
                preset="slow",
                hardware=False,
                keep_free_bytes=0,
            )
            await until_percent(ws, 0.0)
            ffmpeg = ffmpeg_processes(str(disk))[0]
            await asyncio.to_thread(fill, disk)
            frames = await frames_until(ws, "result", "error", within=60)
        assert frames[-1]["type"] == "error", frames[-1]
        assert frames[-1]["error_type"] == "NO_SPACE", frames[-1]
        assert "free some space" in frames[-1]["error"]
        ffmpeg.wait(timeout=10)
        assert names(disk) == ["ballast"]


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(
            media._read_here,
            id="in this thread",
            marks=pytest.mark.skipif(os.name != "posix", reason="pipes are waited on on POSIX"),
        ),
        pytest.param(media._read_in_threads, id="in threads"),
    ],
)
def test_a_process_is_read_line_by_line_from_both_pipes(read: Any) -> None:
    script = (
        "import sys, time\n"
        "for i in range(3):\n"
        "    print(f'out {i}', flush=True); print(f'err {i}', file=sys.stderr, flush=True)\n"
        "    time.sleep(0.05)\n"
        "sys.stdout.write('no newline\\r')\n"
    )
    out: list[str] = []
    err: list[str] = []
    process = child.start_process([sys.executable, "-c", script], stdout=-1, stderr=-1)
    with process:
        assert read(process, out.append, err.append, lambda: False) is False
        process.wait(10)
    child.untrack_process(process)
    assert out == ["out 0", "out 1", "out 2", "no newline"]
    assert err == ["err 0", "err 1", "err 2"]
    # Cancelled: it returns soon after, the process still running or stopped.
    slow = child.start_process(
        [sys.executable, "-c", "import time; print('x', flush=True); time.sleep(60)"],
        stdout=-1,
        stderr=-1,
    )
    with slow:
        seen: list[str] = []
        t0 = time.monotonic()
        assert read(slow, seen.append, seen.append, lambda: bool(seen)) is True
        assert time.monotonic() - t0 < 10 and seen == ["x"]
        slow.kill()
        slow.wait(10)
    child.untrack_process(slow)
