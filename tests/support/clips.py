"""Test media: sample clips made once per session, a job run in the test's own process, and a
look at the ffmpeg processes."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil

from python_endpoints.catalogue import CATALOGUE, load
from python_endpoints.jobs.avread import open_media
from python_endpoints.jobs.outputs import PART_ID
from python_endpoints.jobs.sample import make_sample
from python_endpoints.serving.endpoint import validated_params


class JobContext:
    """What a media job run in this process needs of its
    :class:`~python_endpoints.serving.child.ChildContext`: the progress it reports is kept,
    and each checkpoint as the queue would hand it back (through JSON)."""

    cancelled = False

    def __init__(self) -> None:
        self.reports: list[tuple[float, str | None]] = []
        self.checkpoints: list[dict[str, Any]] = []
        #: What a job waiting on something else (a model's answer) watches.
        self.cancel_event = threading.Event()
        #: How many reports came before the job said its heavy part was done (None: never).
        self.finishing_after: int | None = None

    def wait_if_paused(self, timeout: float | None = None, *, held: bool = False) -> bool:
        return True  # never paused here

    def finishing(self) -> None:
        assert self.finishing_after is None, "said twice"
        self.finishing_after = len(self.reports)

    def progress(
        self,
        percent: float,
        status_text: str | None = None,
        pausable: Any = None,
        extras: dict[str, Any] | None = None,
    ) -> None:
        self.reports.append((percent, status_text))
        if extras and "checkpoint" in extras:
            self.checkpoints.append(json.loads(json.dumps(extras["checkpoint"])))


def job_params(target: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as the endpoints server gives them to ``target``'s child: validated with the
    params model of the catalogue row whose target it is, every field there and defaults
    filled (a job reads ``params["crf"]`` and states no default of its own, so a test never
    hands it partial params). Invalid ones raise
    :class:`~python_endpoints.serving.child.JobFailed` (``PAYLOAD_ERROR``), as the server
    reports them. A ``part_id`` given is kept: the server adds one of its own after
    validation (a client cannot send it); a test names one to know its temporary files."""
    rows = [job for job in CATALOGUE if job.target and load(job.target) is target]
    assert len(rows) == 1, f"{target.__qualname__} is no catalogue row's target"
    job = rows[0]
    given = dict(params)
    part = given.pop(PART_ID, None)
    checked = validated_params(job.params, job.name, given)
    return checked if part is None else {**checked, PART_ID: part}


def run_job(
    target: Callable[..., Any], params: Mapping[str, Any], ctx: Any = None
) -> dict[str, Any] | None:
    """Run ``target`` (a catalogue row's job function) in this process with ``params`` as the
    server would give them (:func:`job_params`) and ``ctx`` (a :class:`JobContext` unless
    given): its result, or None (cancelled)."""
    result: dict[str, Any] | None = target(job_params(target, params), ctx or JobContext())
    return result


class SampleCache:
    """Sample clips (see :mod:`python_endpoints.jobs.sample`) made on first use and kept for
    the session: making one costs 0.1-0.6 s. Tests must not modify them — :meth:`copy`
    gives a test its own."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._made: dict[tuple[str, float, tuple[int, int]], Path] = {}

    def get(
        self, kind: str = "mkv", seconds: float = 4.0, size: tuple[int, int] = (320, 240)
    ) -> Path:
        key = (kind, seconds, size)
        if key not in self._made:
            suffix = {"mp4": ".mp4", "text": ".txt"}.get(kind, ".mkv")
            name = f"{kind}-{seconds:g}s-{size[0]}x{size[1]}{suffix}"
            self._made[key] = make_sample(self.directory / name, seconds, kind=kind, size=size)
        return self._made[key]

    def copy(self, to: Path, kind: str = "mkv", seconds: float = 4.0, **kw: object) -> Path:
        source = self.get(kind, seconds, **kw)  # type: ignore[arg-type]
        to.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(source, to / source.name))


def ffmpeg_processes(marker: str) -> list[psutil.Process]:
    """Every running ffmpeg whose command line mentions ``marker`` (a test's own folder),
    wherever it is in the process table: an orphan is no longer our descendant."""
    found = []
    for p in psutil.process_iter(["name", "cmdline", "status"]):
        try:
            cmd = p.info["cmdline"] or []
            if p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if cmd and "ffmpeg" in Path(cmd[0]).name and any(marker in c for c in cmd):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def media_summary(path: Path) -> dict[str, object]:
    """What PyAV sees in a file: duration and the codecs by stream type (tags read as the jobs
    read them)."""
    with open_media(path) as container:
        streams: dict[str, list[str]] = {}
        for s in container.streams:
            streams.setdefault(s.type, []).append(s.codec_context.codec.canonical_name)
        duration = container.duration / 1e6 if container.duration else None
        return {"duration": duration, "streams": streams, "format": container.format.name}
