"""A mutational corpus of media through the real jobs: small clips made here, cut at several
points, bit-flipped (seeded), empty, declaring sizes no file has, made of thousands of streams,
still being written while they are read — each given to PROBE and TRANSCODE_MP4 (and
EXTRACT_AUDIO where it is audio) on a real endpoints server, with real children and the
bundled ffmpeg.

Every job ends well within its bound, with a verified output or one clear error of a media
type (the input is not media, is damaged, holds nothing usable, or ffmpeg lost part of it) that
names the file — never the job's own exception, a crash, a traceback, or a process left over.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs.sample import make_sample
from python_endpoints.protocol import InitData, InitParamAndRun, dump
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.fuzz import corpus
from tests.support.clips import ffmpeg_processes, media_summary
from tests.support.process_table import assert_no_job_process_left

pytestmark = pytest.mark.slow

TOKEN = "fuzz-media-token-0123456789"
#: A job's bound: one on these clips takes a second or two; a hang is caught long before the
#: suite's own timeout, and "well within" is half of it.
BOUND = 60.0
#: What a hostile input may fail with: all of them the input's doing, none retried.
MEDIA_ERRORS = {
    ErrorType.NOT_MEDIA,
    ErrorType.INPUT_DAMAGED,
    ErrorType.UNSUPPORTED_MEDIA,
    ErrorType.FFMPEG_FAILED,
    ErrorType.NO_AUDIO,
}


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The clips the corpus is made from: H.264 + Opus + subtitles in Matroska, H.264 + AAC
    in MP4 (two seconds, 160x120)."""
    folder = tmp_path_factory.mktemp("clips")
    return {
        kind: make_sample(folder / f"clip.{kind}", 2.0, kind=kind, size=(160, 120)).read_bytes()
        for kind in ("mkv", "mp4")
    }


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[int]:
    """A real endpoints server that may write only under the test's folder; after the test,
    no job process and no ffmpeg of it is left."""
    srv = EndpointServer(ENDPOINTS, TOKEN, write_roots=[tmp_path])
    port = await srv.start()
    yield port
    await srv.close()
    await assert_no_job_process_left()
    assert ffmpeg_processes(str(tmp_path)) == []


async def run_job(port: int, endpoint: str, **params: Any) -> dict[str, Any]:
    """Run one job to its final frame; assert it came well within :data:`BOUND`."""
    started = time.monotonic()
    async with (
        asyncio.timeout(BOUND),
        connect(
            f"ws://127.0.0.1:{port}/tasks/{endpoint}",
            additional_headers={"Authorization": f"Bearer {TOKEN}"},
        ) as ws,
    ):
        await ws.send(dump(InitParamAndRun(data=InitData(params=params))))
        while (frame := json.loads(await ws.recv()))["type"] == "progress":
            pass
    took = time.monotonic() - started
    assert took < BOUND / 2, f"{endpoint} of {params['input']} took {took:.1f} s"
    frame_: dict[str, Any] = frame
    return frame_


def check(endpoint: str, source: Path, frame: dict[str, Any], output: Path | None) -> str:
    """A verified result, or one clear media error naming the file; what it was."""
    if frame["type"] == "error":
        message = frame["error"]
        assert frame["error_type"] in MEDIA_ERRORS, (endpoint, source.name, frame)
        assert source.name in message or (output is not None and output.name in message), frame
        assert "Traceback" not in message and "@ 0x" not in message and "\n" not in message
        assert output is None or not output.exists()
        return frame["error_type"]
    assert frame["type"] == "result", frame
    result = frame["result"]
    if endpoint == "probe":
        assert result["kind"] in ("video", "audio", "other") and isinstance(result["streams"], list)
    else:
        assert output is not None and result["outputs"] == [str(output)]
        summary = media_summary(output)  # it opens, and holds what the job made
        wanted = "video" if endpoint == "transcode_mp4" else "audio"
        assert summary["streams"].get(wanted), summary  # type: ignore[union-attr]
    return "result"


def write_all(folder: Path, inputs: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in inputs.items():
        (folder / name).write_bytes(data)


async def through_the_jobs(
    port: int, folder: Path, inputs: dict[str, bytes], *, audio: bool = False
) -> dict[str, dict[str, str]]:
    """Write each input (its name's extension from the clip it came from) and run PROBE and
    TRANSCODE_MP4 on it — and EXTRACT_AUDIO, with ``audio`` — two jobs at a time (two cores).
    What each job ended with, by input and job."""
    await asyncio.to_thread(write_all, folder, inputs)
    slots = asyncio.Semaphore(2)
    outcomes: dict[str, dict[str, str]] = {name: {} for name in inputs}

    async def one(name: str, endpoint: str) -> None:
        source = folder / name
        output = {"transcode_mp4": source.with_suffix(".out.mp4"), "probe": None}.get(
            endpoint, source.with_suffix(".out.wav")
        )
        params: dict[str, Any] = {"input": str(source)}
        if output is not None:
            params["output"] = str(output)
        if endpoint == "transcode_mp4":
            params["hardware"] = False
        async with slots:
            frame = await run_job(port, endpoint, **params)
        outcomes[name][endpoint] = check(endpoint, source, frame, output)

    endpoints = ["probe", "transcode_mp4", *(["extract_audio"] if audio else [])]
    await asyncio.gather(*(one(name, e) for name in inputs for e in endpoints))
    return outcomes


def named(inputs: dict[str, bytes], extension: str) -> dict[str, bytes]:
    return {f"{name}.{extension}": data for name, data in inputs.items()}


# --- the corpus ------------------------------------------------------------------------------


async def test_empty_and_truncated_clips(
    server: int, tmp_path: Path, clips: dict[str, bytes]
) -> None:
    """An empty file, and each clip cut after 1 and 16 bytes, 1, 10, 50 and 90 % of it, and
    all but its last byte. The MP4 (its index at the end) is no media once cut; the Matroska
    cut late still is, and its transcode keeps what it holds."""
    inputs = {"empty.mkv": b""}
    for kind, clip in clips.items():
        inputs |= named(corpus.truncations(kind, clip), kind)
    outcomes = await through_the_jobs(server, tmp_path / "cut", inputs)
    assert outcomes["empty.mkv"] == {"probe": "NOT_MEDIA", "transcode_mp4": "NOT_MEDIA"}
    assert outcomes["mp4-cut0.5.mp4"]["probe"] == "NOT_MEDIA"
    assert outcomes["mkv-cut0.9.mkv"]["transcode_mp4"] == "result"


async def test_clips_with_flipped_bits(
    server: int, tmp_path: Path, clips: dict[str, bytes]
) -> None:
    """Each clip with one byte in 200 changed (four seeds), and with bytes of its header
    changed (two seeds)."""
    inputs = {}
    for kind, clip in clips.items():
        for seed in range(4):
            inputs[f"{kind}-flip{seed}.{kind}"] = corpus.flipped(clip, seed)
        for seed in range(2):
            inputs[f"{kind}-head{seed}.{kind}"] = corpus.flipped(clip, seed, share=0.05, within=512)
    outcomes = await through_the_jobs(server, tmp_path / "flipped", inputs)
    assert len(outcomes) == 12


async def test_sizes_no_file_has(server: int, tmp_path: Path, clips: dict[str, bytes]) -> None:
    """A Matroska Segment of 2^56 bytes, an MP4 media box of 2^62 and movie box of 2^31,
    a WAV whose sizes say 4 GiB (a recorder's, before it knows): read as far as they go."""
    inputs = {
        "segment.mkv": corpus.huge_matroska_segment(clips["mkv"]),
        "mdat.mp4": corpus.huge_mp4_mdat(clips["mp4"]),
        "moov.mp4": corpus.huge_mp4_moov(clips["mp4"]),
        "streaming.wav": corpus.streaming_wav(),
        "tracks.mkv": corpus.matroska_of_tracks(3, segment_size=(1 << 56) - 2),
    }
    outcomes = await through_the_jobs(server, tmp_path / "sizes", inputs, audio=True)
    assert outcomes["segment.mkv"]["transcode_mp4"] == "result"
    assert outcomes["streaming.wav"] == {
        "probe": "result",
        "transcode_mp4": "UNSUPPORTED_MEDIA",  # no picture to make an MP4 video of
        "extract_audio": "result",
    }


async def test_thousands_of_streams(server: int, tmp_path: Path) -> None:
    """Matroska of 2000 and of 999 audio tracks (ffmpeg reads at most 1000 streams of a
    file): probed, refused as an MP4 video (none is a picture), their first track's sound
    extracted."""
    inputs = {
        "tracks2000.mkv": corpus.matroska_of_tracks(2000),
        "tracks999.mkv": corpus.matroska_of_tracks(999),
    }
    outcomes = await through_the_jobs(server, tmp_path / "tracks", inputs, audio=True)
    for name in inputs:
        assert outcomes[name] == {
            "probe": "result",
            "transcode_mp4": "UNSUPPORTED_MEDIA",
            "extract_audio": "result",
        }


class Grower(threading.Thread):
    """Writes ``data`` to ``path`` a tenth at a time, ``every`` seconds apart (a download or
    a recording still going)."""

    def __init__(self, path: Path, data: bytes, every: float = 0.3) -> None:
        super().__init__(daemon=True)
        self.path, self.data, self.every = path, data, every
        #: Set once the first tenth is written.
        self.begun = threading.Event()

    def run(self) -> None:
        step = -(-len(self.data) // 10)
        with self.path.open("wb") as f:
            for at in range(0, len(self.data), step):
                f.write(self.data[at : at + step])
                f.flush()
                self.begun.set()
                time.sleep(self.every)


async def test_a_file_still_growing_while_it_is_read(
    server: int, tmp_path: Path, clips: dict[str, bytes]
) -> None:
    """A clip written a tenth at a time while PROBE and TRANSCODE_MP4 read it: each ends
    with what was there (the transcode says the input holds less than its header says) or
    one clear error — it does not wait for the rest."""
    for endpoint in ("probe", "transcode_mp4"):
        source = tmp_path / f"growing-{endpoint}.mkv"
        writer = Grower(source, clips["mkv"])
        writer.start()
        assert await asyncio.to_thread(writer.begun.wait, 10)
        output = source.with_suffix(".out.mp4") if endpoint == "transcode_mp4" else None
        params: dict[str, Any] = {"input": str(source)}
        if output is not None:
            params |= {"output": str(output), "hardware": False}
        frame = await run_job(server, endpoint, **params)
        check(endpoint, source, frame, output)
        await asyncio.to_thread(writer.join, 10)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
async def test_a_named_pipe_is_not_waited_on(server: int, tmp_path: Path) -> None:
    """A named pipe with a media name and nobody writing: refused at once, not opened (an
    open would wait for a writer for ever)."""
    fifo = tmp_path / "pipe.mkv"
    os.mkfifo(fifo)
    for endpoint in ("probe", "transcode_mp4"):
        output = tmp_path / "pipe.mp4"
        params: dict[str, Any] = {"input": str(fifo)}
        if endpoint == "transcode_mp4":
            params |= {"output": str(output), "hardware": False}
        frame = await run_job(server, endpoint, **params)
        assert frame["type"] == "error" and frame["error_type"] == ErrorType.NOT_MEDIA, frame
