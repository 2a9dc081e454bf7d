"""The ``jobs`` part of ``bench/batch.py``: what a job adds to its own work, per endpoint,
under a batch.

The app's endpoints server (``EndpointsProcess``: ``python -m python_endpoints``, started
once, untimed) gets, per endpoint, a warm-up of two jobs at once (not counted: the first job
of an endpoint in a server's life starts its child cold), then ``n`` jobs two at a time, as
the engine sends them in a batch. Per job: the start message (``init_param_and_run`` sent on
an open connection, which is what the engine's executor does) → the job's first
``progress`` frame (or its ``result`` when it sends none first). Inputs are made here
(``python_endpoints.jobs.sample``); a local HTTP server serves the download's file.
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import json
import os
import shutil
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import imageio_ffmpeg
from websockets.asyncio.client import connect

from bench._common import pct
from fredica_app.endpoints import EndpointsProcess
from python_endpoints.jobs.sample import make_sample
from python_endpoints.protocol import InitData, InitParamAndRun, dump

LANES = 2
#: p50 and p99 of the start message → first frame, seconds (issue's targets).
TARGET_P50, TARGET_P99 = 0.050, 0.200

Params = Callable[[int], dict[str, Any]]


@contextmanager
def file_server(folder: Path) -> Iterator[str]:
    """A local HTTP server of ``folder`` (for the download endpoint); its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def inputs(work: Path) -> dict[str, Path]:
    """The media the jobs read: a 3 s H.264/Opus/SRT Matroska clip, a 3 s MPEG-2 one, a
    spoken clip, and a 4 MB file to download."""
    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    folder = work / "inputs"
    folder.mkdir(parents=True, exist_ok=True)
    out = {
        "mkv": make_sample(folder / "clip.mkv", 3.0, ffmpeg=ffmpeg, kind="mkv"),
        "legacy": make_sample(folder / "legacy.mkv", 3.0, ffmpeg=ffmpeg, kind="legacy"),
        "speech": make_sample(folder / "speech.mkv", 4.0, ffmpeg=ffmpeg, speech=True),
    }
    out["transcript"] = folder / "transcript.json"  # written by a transcription, below
    blob = folder / "served" / "blob.bin"
    blob.parent.mkdir(exist_ok=True)
    blob.write_bytes(bytes(4 << 20))
    out["blob"] = blob
    return out


def job_params(work: Path, media: dict[str, Path], base_url: str) -> dict[str, tuple[str, Params]]:
    """Per lane name: the endpoint and the params of its ``i``-th job."""
    out = work / "out"
    out.mkdir(exist_ok=True)
    mkv, legacy, speech = str(media["mkv"]), str(media["legacy"]), str(media["speech"])
    transcript = str(media["transcript"])
    return {
        "sleep (0.1 s)": ("sleep", lambda i: {"seconds": 0.1}),
        "probe": ("probe", lambda i: {"input": mkv}),
        "transcode_mp4 remux": (
            "transcode_mp4",
            # The video copied, the Opus audio made AAC (what ``auto`` does with this clip).
            lambda i: {"input": mkv, "output": str(out / f"remux{i}.mp4"), "mode": "auto"},
        ),
        "transcode_mp4 re-encode": (
            "transcode_mp4",
            lambda i: {
                "input": legacy,
                "output": str(out / f"reencode{i}.mp4"),
                "mode": "reencode",
                "hardware": False,
                "preset": "ultrafast",
            },
        ),
        "extract_audio": (
            "extract_audio",
            lambda i: {"input": mkv, "output": str(out / f"audio{i}.wav")},
        ),
        "extract_subtitles": (
            "extract_subtitles",
            lambda i: {"input": mkv, "output_dir": str(out), "stem": f"subs{i}"},
        ),
        "thumbnail": (
            "thumbnail",
            lambda i: {"input": mkv, "output": str(out / f"sheet{i}.jpg"), "frames": 4},
        ),
        "transcribe (tiny.en)": (
            "transcribe",
            lambda i: {"input": speech, "output": str(out / f"words{i}.json")},
        ),
        "export_subtitles": (
            "export_subtitles",
            lambda i: {"transcript": transcript, "output_dir": str(out), "stem": f"cues{i}"},
        ),
        "analyze (offline)": (
            "analyze",
            lambda i: {"transcript": transcript, "output": str(out / f"analysis{i}.json")},
        ),
        "download (local HTTP)": (
            "download",
            lambda i: {"url": f"{base_url}/blob.bin", "output": str(out / f"blob{i}.bin")},
        ),
    }


async def one_job(url: str, token: str, params: dict[str, Any]) -> dict[str, Any]:
    """One job on an open connection: seconds from the start message to the first frame and
    to the end, and how it ended."""
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        t0 = time.perf_counter()
        await ws.send(dump(InitParamAndRun(data=InitData(params=params))))
        first: float | None = None
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 300))
            kind = frame.get("type")
            if first is None and kind in ("progress", "result"):
                first = time.perf_counter() - t0
            if kind in ("result", "error", "cancelled"):
                return {
                    "first_s": first,
                    "total_s": time.perf_counter() - t0,
                    "end": kind,
                    "error": frame.get("error"),
                }


async def lane(url: str, token: str, params: Params, start: int, n: int) -> list[dict[str, Any]]:
    """``n`` jobs, ``LANES`` at a time."""
    queue = list(range(start, start + n))
    done: list[dict[str, Any]] = []

    async def worker() -> None:
        while queue:
            done.append(await one_job(url, token, params(queue.pop(0))))

    await asyncio.gather(*(worker() for _ in range(LANES)))
    return done


async def _measure(work: Path, n: int) -> dict[str, Any]:
    media = inputs(work)
    server = EndpointsProcess(write_roots=[work / "out", work / "inputs"])
    results: dict[str, Any] = {}
    try:
        t0 = time.perf_counter()
        address = await server.address()
        results["server_start_s"] = time.perf_counter() - t0
        transcribed = await one_job(
            address.url("transcribe"),
            address.token,
            {"input": str(media["speech"]), "output": str(media["transcript"])},
        )
        if transcribed["end"] != "result":
            raise RuntimeError(f"the transcript was not made: {transcribed['error']}")
        with file_server(media["blob"].parent) as base_url:
            for name, (endpoint, params) in job_params(work, media, base_url).items():
                url = address.url(endpoint)
                await lane(url, address.token, params, 0, LANES)  # warm-up: not counted
                rows = await lane(url, address.token, params, LANES, n)
                failed = [r for r in rows if r["end"] != "result"]
                firsts = [r["first_s"] for r in rows if r["first_s"] is not None]
                results.setdefault("endpoints", {})[name] = {
                    "endpoint": endpoint,
                    "jobs": len(rows),
                    "failed": [f"{r['end']}: {r['error']}" for r in failed][:3],
                    "first_p50_s": statistics.median(firsts) if firsts else None,
                    "first_p99_s": pct(firsts, 99) if firsts else None,
                    "total_p50_s": statistics.median(r["total_s"] for r in rows),
                }
                shutil.rmtree(work / "out", ignore_errors=True)
                (work / "out").mkdir()
    finally:
        await server.stop()
    return results


def measure_jobs(work: Path, n: int) -> dict[str, Any]:
    load = os.getloadavg()
    return {"lanes": LANES, "n": n, "load_average": load, **asyncio.run(_measure(work / "jobs", n))}
