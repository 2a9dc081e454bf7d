"""Inside a remux job: where the CPU a TRANSCODE_MP4 job spends beside its ffmpeg goes.

The job function runs in this process (no server, no child, no connection) on the batch
bench's remux clips, one after another: first unprofiled (wall, this process's CPU, the CPU
of the ffmpeg runs it reaped, per job), then under ``cProfile`` for the share of its phases
(cumulative wall milliseconds per job, the profiler's overhead included: a guide to the
proportions, not a figure to compare with the first pass). And what starting a process costs
a job's child, with and without the hook that makes it die with the child (``preexec_fn``:
Python then forks instead of using ``vfork``).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._batch_lanes import clips
from python_endpoints.catalogue import CATALOGUE
from python_endpoints.jobs import media
from python_endpoints.serving.child import _die_with_parent_hook
from python_endpoints.serving.endpoint import validated_params

#: The phases of a remux job shown, by the function that is the phase.
PHASES = {
    "probe the input (PyAV)": ("avread.py", "probe"),
    "start ffmpeg": ("child.py", "start_process"),
    "read the output back (PyAV)": ("avread.py", "verify_media"),
    "flush and rename the output": ("outputs.py", "commit"),
    "write the sidecar": ("outputs.py", "write_sidecar"),
}


class _Context:
    """What the job needs of its child's context: progress is dropped."""

    cancelled = False

    def progress(
        self, percent: float, status_text: str | None = None, pausable: Any = None
    ) -> None:
        pass

    def finishing(self) -> None:
        pass


def _params(source: Path, output: Path) -> dict[str, Any]:
    row = next(job for job in CATALOGUE if job.name == "transcode_mp4")
    given = {"input": str(source), "output": str(output), "profile": "compatible"}
    return validated_params(row.params, row.name, given | {"hardware_encoder": "none"})


def job_phases(count: int) -> dict[str, float]:
    """Per remux job, in milliseconds: ``wall``, ``own CPU``, ``ffmpeg CPU``, then each of
    :data:`PHASES` (profiled)."""
    sources = clips("mkv", 5.0, 50)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)

        def one(i: int) -> None:
            source = sources[i % len(sources)]
            media.transcode_job(_params(source, folder / f"r{i}.mp4"), _Context())  # type: ignore[arg-type]

        one(0)  # warm: PyAV's first open, the modules' first use
        before, t0 = os.times(), time.perf_counter()
        for i in range(1, count + 1):
            one(i)
        wall, after = time.perf_counter() - t0, os.times()
        out["wall"] = wall * 1000 / count
        out["own CPU"] = (after.user + after.system - before.user - before.system) * 1000 / count
        out["ffmpeg CPU"] = (
            (
                (after.children_user + after.children_system)
                - (before.children_user + before.children_system)
            )
            * 1000
            / count
        )
        profile = cProfile.Profile()
        profile.enable()
        for i in range(count + 1, 2 * count + 1):
            one(i)
        profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    for phase, (file, function) in PHASES.items():
        cumulative = sum(
            entry[3]
            for (path, _line, name), entry in stats.items()
            if name == function and path.endswith(file)
        )
        out[phase] = cumulative * 1000 / count
    return out


def fork_ms(times: int = 40) -> float:
    """Median milliseconds of ``os.fork()`` in this process, the child exiting at once, until
    it is reaped: what the hook's way of starting a process costs before any of its work."""
    taken = []
    for _ in range(times):
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        taken.append(time.perf_counter() - t0)
    return statistics.median(taken) * 1000


def spawn_ms(with_hook: bool, times: int = 40) -> float:
    """Median milliseconds of ``Popen`` of ``true`` (until it returns), in this process (with
    PyAV and the media jobs loaded, as a job's child has them)."""
    hook = _die_with_parent_hook() if with_hook else None
    taken = []
    for _ in range(times):
        t0 = time.perf_counter()
        process = subprocess.Popen(["true"], stdin=subprocess.DEVNULL, preexec_fn=hook)
        taken.append(time.perf_counter() - t0)
        process.wait()
    return statistics.median(taken) * 1000
