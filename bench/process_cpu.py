"""Where a batch's CPU goes, and what a job's child costs to start.

1. Child start: a child process that imports the media jobs' module and says so, started
   8 times one after another with ``spawn`` and with the fork server Fredica uses on
   Linux (``python_endpoints.serving.starting``: its modules preloaded, the fork server
   started and given a second to import first). Median milliseconds from ``start()`` to the
   child's word.
2. CPU per process: one ``fredica --data-dir NEW process DIR --template transcode_mp4`` of the
   batch bench's remux clips (50 of 5 s; ``--batch reencode``: its 8 re-encode clips of
   30 s; ``--quick``: 2) — or, with ``--command worker``, the same folder added (``fredica
   add``, untimed) and run by ``fredica worker --until-idle`` — every process of its tree
   sampled with psutil every 20 ms; the CPU time (user + system) each had when last seen,
   summed by kind: the app's process, the endpoints server with its fork server and job
   children, ffmpeg; over the whole run, and at the first sample that saw a job's ffmpeg
   (one given an input: the start's share, before it). A process that ends between two
   samples loses up to 20 ms of its time; ffmpeg's short runs are undercounted most.
3. CPU per job: the app's endpoints server (started once, untimed), three jobs of each kind
   to warm it, then 50 (``--quick``: 3) PROBE jobs and 50 remux TRANSCODE_MP4 jobs of the
   batch bench's clips, one at a time, each on its own connection as the engine sends them;
   milliseconds of CPU per job of the server's process, of its job children (their own
   time), of the ffmpeg they ran (reaped: exact), and of this client (a connection, its
   frames); wall milliseconds per job. What a job costs beside its ffmpeg, without a batch's
   contention.
4. Inside a remux job (:mod:`bench._job_phases`): the job function run in this process on 20
   (``--quick``: 2) clips, its CPU beside its ffmpeg and the share of its phases; and what
   starting a process costs a job's child with and without the hook that makes it die with
   the child, and what a fork of this process costs by itself.

    python -m bench.process_cpu [--quick] [--batch reencode] [--command worker]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench._batch_jobs import one_job
from bench._batch_lanes import FREDICA, ROOT, clips
from bench._job_phases import fork_ms, job_phases, spawn_ms
from bench.batch import byte_compile
from bench.engine import table
from fredica_app.endpoints import EndpointsProcess
from python_endpoints.serving import starting


def child_start_ms(method: str) -> float:
    """Median ms from ``Process.start()`` to the child's first word, with ``method`` (in a
    process of its own: :mod:`bench._child_start`)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench._child_start", method],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return float(done.stdout.strip())


def _kind(process: psutil.Process, root: int) -> str:
    if process.pid == root:
        return "the app's process"
    command = process.cmdline()
    name = Path(command[0]).name if command else process.name()  # none as it ends
    if "ffmpeg" in name:
        return "ffmpeg"
    if "resource_tracker" in " ".join(command):
        return "multiprocessing's resource tracker"
    return "endpoints server, fork server, job children"


#: What :func:`cpu_by_kind` gives per kind of process: CPU seconds and how many processes.
ByKind = dict[str, tuple[float, int]]


def _summed(seen: dict[int, tuple[str, float]]) -> ByKind:
    by_kind: dict[str, list[float]] = collections.defaultdict(list)
    for kind, cpu in seen.values():
        by_kind[kind].append(cpu)
    return {k: (sum(v), len(v)) for k, v in by_kind.items()}


def cpu_by_kind(
    count: int, batch: str = "remux", command: str = "process"
) -> tuple[float, ByKind, ByKind]:
    """One ``process DIR`` of ``count`` clips of the batch bench's part ``batch`` (remux: 5 s
    mkv; reencode: 30 s legacy), or (``command`` "worker") the folder added, then run by
    ``worker --until-idle``: the command's wall time, and per kind of process its CPU over
    the whole run and before the first ffmpeg."""
    kind, seconds = ("mkv", 5.0) if batch == "remux" else ("legacy", 30.0)
    source = clips(kind, seconds, count)[0].parent
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "clips"
        folder.mkdir()
        for clip in source.iterdir():
            (folder / clip.name).symlink_to(clip)
        data = Path(work) / "data"
        subprocess.run(
            [*FREDICA, "--data-dir", str(data), "runs"], check=True, cwd=ROOT, capture_output=True
        )  # the database made first, untimed
        items = [str(folder), "--template", "transcode_mp4"]
        words = ["process", *items]
        if command == "worker":
            subprocess.run(
                [*FREDICA, "--data-dir", str(data), "add", *items],
                check=True,
                cwd=ROOT,
                capture_output=True,
            )
            words = ["worker", "--until-idle"]
        t0 = time.perf_counter()
        running = subprocess.Popen(
            [*FREDICA, "--data-dir", str(data), *words],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        root = psutil.Process(running.pid)
        seen: dict[int, tuple[str, float]] = {}
        start: ByKind | None = None
        while running.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                break
            for p in tree:
                try:
                    cpu = p.cpu_times()
                    # Asked until it says ffmpeg: a child forked to run ffmpeg has its
                    # parent's command line until its exec, and an ffmpeg that is ending has
                    # none; either would count as a Python process.
                    kind = seen[p.pid][0] if p.pid in seen else ""
                    if kind != "ffmpeg":
                        kind = _kind(p, root.pid)
                        # A job's (an input to read), not a `-version` of the server's start.
                        if start is None and kind == "ffmpeg" and "-i" in p.cmdline():
                            start = _summed(seen)
                    seen[p.pid] = (kind, cpu.user + cpu.system)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        if running.returncode:
            raise RuntimeError(f"fredica {words[0]} exited {running.returncode}")
    return wall, _summed(seen), start or {}


def _server_cpu(server: psutil.Process) -> dict[str, float]:
    """CPU seconds so far: the server's own, its children's own (not ffmpeg), and what the
    children reaped (their ffmpeg runs)."""
    out = {"server": 0.0, "children": 0.0, "ffmpeg": 0.0}
    for p in [server, *server.children(recursive=True)]:
        try:
            cpu = p.cpu_times()
            command = p.cmdline()
        except psutil.NoSuchProcess:
            continue
        if p.pid == server.pid:
            out["server"] += cpu.user + cpu.system
        elif not (command and "ffmpeg" in Path(command[0]).name):
            out["children"] += cpu.user + cpu.system
            out["ffmpeg"] += cpu.children_user + cpu.children_system
    return out


async def _cpu_per_job(count: int) -> dict[str, dict[str, float]]:
    sources = clips("mkv", 5.0, 50)
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "out"
        folder.mkdir()
        server = EndpointsProcess(write_roots=[folder])
        try:
            address = await server.address()
            assert server.process is not None
            tree = psutil.Process(server.process.pid)
            jobs = {
                "PROBE": ("probe", lambda i: {"input": str(sources[i % len(sources)])}),
                "TRANSCODE_MP4 remux": (
                    "transcode_mp4",
                    lambda i: {
                        "input": str(sources[i % len(sources)]),
                        "output": str(folder / f"r{i}.mp4"),
                        "mode": "auto",
                    },
                ),
            }
            for name, (endpoint, params) in jobs.items():
                url = address.url(endpoint)
                for i in range(3):  # warm: the endpoint's child started, its modules loaded
                    await one_job(url, address.token, params(i))
                before, mine, t0 = _server_cpu(tree), time.process_time(), time.perf_counter()
                for i in range(count):
                    done = await one_job(url, address.token, params(3 + i))
                    if done["end"] != "result":
                        raise RuntimeError(f"{name}: {done['end']}: {done['error']}")
                wall, mine = time.perf_counter() - t0, time.process_time() - mine
                after = _server_cpu(tree)
                out[name] = {k: (after[k] - before[k]) * 1000 / count for k in after}
                out[name] |= {"client": mine * 1000 / count, "wall": wall * 1000 / count}
        finally:
            await server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.process_cpu", description=__doc__)
    p.add_argument("--quick", action="store_true", help="2 clips, not 50 (or 8)")
    p.add_argument(
        "--batch",
        choices=("remux", "reencode"),
        default="remux",
        help="the clips of part 2: the batch bench's remux (50 of 5 s) or reencode (8 of 30 s)",
    )
    p.add_argument(
        "--command",
        choices=("process", "worker"),
        default="process",
        help="part 2 runs `process DIR`, or `add DIR` (untimed) then `worker --until-idle`",
    )
    args = p.parse_args(argv)
    byte_compile()
    rows = [
        ("child start, spawn", f"{child_start_ms('spawn'):.1f} ms", "median of 8", ""),
    ]
    if starting.uses_forkserver():
        rows.append(
            (
                "child start, fork server",
                f"{child_start_ms('forkserver'):.1f} ms",
                "median of 8",
                "",
            )
        )
    count = 2 if args.quick else 50 if args.batch == "remux" else 8
    wall, by_kind, start = cpu_by_kind(count, args.batch, args.command)
    for kind, (cpu, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        rows.append((f"CPU: {kind}", f"{cpu:.2f} s", f"{n} processes", ""))
    # Every kind of the whole run, 0 where none was seen before the first job's ffmpeg (the
    # server's `ffmpeg -version` at its start is caught by the 20 ms samples only at times).
    before = {kind: start.get(kind, (0.0, 0)) for kind in by_kind}
    for kind, (cpu, n) in sorted(before.items(), key=lambda kv: -kv[1][0]):
        rows.append((f"CPU before the first ffmpeg: {kind}", f"{cpu:.2f} s", f"{n} processes", ""))
    what = "remux clips of 5 s" if args.batch == "remux" else "re-encode clips of 30 s"
    label = "process DIR" if args.command == "process" else "worker --until-idle"
    rows.append((f"{label}, wall", f"{wall:.2f} s", f"{count} {what}", ""))
    jobs = 3 if args.quick else 50
    for name, ms in asyncio.run(_cpu_per_job(jobs)).items():
        for key, what in (
            ("server", "the server's process"),
            ("children", "its job children"),
            ("ffmpeg", "ffmpeg"),
            ("client", "the client"),
            ("wall", "wall"),
        ):
            rows.append(
                (
                    f"per {name} job: {what}",
                    f"{ms[key]:.1f} ms",
                    f"mean of {jobs}, one at a time",
                    "",
                )
            )
    phases = 2 if args.quick else 20
    for name, ms in job_phases(phases).items():
        rows.append((f"inside a remux job: {name}", f"{ms:.1f} ms", f"per job, {phases} jobs", ""))
    if sys.platform.startswith("linux"):
        rows.append(
            (
                "fork this process (its child exits at once)",
                f"{fork_ms():.2f} ms",
                "median of 40",
                "",
            )
        )
        for hook in (True, False):
            rows.append(
                (
                    f"start a process from a job's child, {'with' if hook else 'without'} the "
                    "die-with-it hook",
                    f"{spawn_ms(hook):.2f} ms",
                    "median of 40",
                    "",
                )
            )
    print(f"load average {' '.join(f'{x:.2f}' for x in psutil.getloadavg())}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
