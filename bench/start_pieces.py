"""Pieces of a command's start and of a batch's first jobs, each against what it replaced.

1. ``import fredica_app.services`` in a new interpreter, with the garbage collector on and
   off (what :func:`fredica_app.cli.imports_without_collection` does), interleaved; median
   seconds of each.
2. The hardware encoder test of every encoder the bundled ffmpeg lists, whether or not a
   device for it is here: one after another, and side by side
   (:func:`python_endpoints.jobs.media.first_working`); median seconds of each. What the
   server runs now is neither where no driver has a device: nothing.
3. With ``--against REV``: ``fredica --data-dir COPY process CLIP --template transcode_mp4``
   (a 5 s clip of the batch bench's) from a checkout of REV and from this one, alternately;
   median seconds from the command's start to its first task's ``started_at``, to its end,
   and of its first PROBE task.

    python -m bench.start_pieces [--rounds N] [--against REV]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._batch_lanes import FREDICA, ROOT, clips
from bench.batch import byte_compile
from bench.engine import table

IMPORT = (
    "import gc, time\n"
    "{off}"
    "t = time.perf_counter()\n"
    "import fredica_app.services\n"
    "print(time.perf_counter() - t)\n"
)


def import_seconds(collector_off: bool) -> float:
    code = IMPORT.format(off="gc.disable()\n" if collector_off else "")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip())


def encoder_tests(rounds: int) -> dict[str, float]:
    from python_endpoints.jobs import ffmpeg as ff
    from python_endpoints.jobs import media

    binary = media.ffmpeg_binary({})
    listed = ff.hardware_candidates(media.list_encoders(binary))

    def one_after_another() -> None:
        for encoder in listed:
            media.encoder_works(binary, encoder)

    def side_by_side() -> None:
        media.first_working(listed, lambda e: media.encoder_works(binary, e))

    out: dict[str, list[float]] = {"one after another": [], "side by side": []}
    ways: dict[str, Callable[[], None]] = {
        "one after another": one_after_another,
        "side by side": side_by_side,
    }
    for _ in range(rounds):
        for name, way in ways.items():
            t0 = time.perf_counter()
            way()
            out[name].append(time.perf_counter() - t0)
    return {f"{k} ({len(listed)} listed)": statistics.median(v) for k, v in out.items()}


def process_once(tree: Path, clip: Path, base: Path, work: Path) -> tuple[float, float, float]:
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(base, data)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    began, t0 = time.time(), time.perf_counter()
    subprocess.run(
        [*FREDICA, "--data-dir", str(data), "process", str(clip), "--template", "transcode_mp4"],
        cwd=tree,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        timeout=300,
    )
    whole = time.perf_counter() - t0
    conn = sqlite3.connect(f"{(data / 'fredica.db').as_uri()}?mode=ro", uri=True)
    try:
        first = conn.execute("SELECT MIN(started_at) FROM task").fetchone()[0]
        row = conn.execute(
            "SELECT completed_at - started_at FROM task WHERE type = 'PROBE'"
        ).fetchone()
        probe = float("nan") if row is None or row[0] is None else row[0]  # none any more
    finally:
        conn.close()
    return first - began, whole, probe


def against(rev: str, rounds: int) -> dict[str, dict[str, float]]:
    clip = clips("mkv", 5.0, 1)[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        other = work / "checkout"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(other), rev],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            bases: dict[Path, Path] = {}
            for n, tree in enumerate((other, ROOT)):
                # A migrated, empty data directory, by each tree's own code: the two may be
                # at different schema revisions (a newer database is refused by older code).
                bases[tree] = work / f"base-{n}"
                subprocess.run(
                    [*FREDICA, "--data-dir", str(bases[tree]), "runs"],
                    cwd=tree,
                    check=True,
                    capture_output=True,
                )
            for tree in (other, ROOT):
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "compileall",
                        "-q",
                        "fredica_app",
                        "python_endpoints",
                        "workers",
                    ],
                    cwd=tree,
                    capture_output=True,
                )
            trees = {rev: other, "this checkout": ROOT}
            seen: dict[str, list[tuple[float, float, float]]] = {k: [] for k in trees}
            for i in range(rounds):
                order = list(trees.items())
                for name, tree in order if i % 2 else order[::-1]:
                    seen[name].append(process_once(tree, clip, bases[tree], work))
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, capture_output=True
            )
    return {
        name: {
            "start -> first task": statistics.median(r[0] for r in runs),
            "whole run": statistics.median(r[1] for r in runs),
            "first PROBE task": statistics.median(r[2] for r in runs),
        }
        for name, runs in seen.items()
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.start_pieces", description=__doc__)
    p.add_argument("--rounds", type=int, default=8, help="runs of each way (default 8)")
    p.add_argument("--against", metavar="REV", help="also time `process` against this commit")
    args = p.parse_args(argv)
    byte_compile()
    imports: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.rounds):
        for off in (False, True):
            imports[off].append(import_seconds(off))
    rows = [
        (
            f"import fredica_app.services, collector {'off' if off else 'on'}",
            f"{statistics.median(v):.3f} s",
            f"median of {len(v)}; min {min(v):.3f} s",
            "",
        )
        for off, v in imports.items()
    ]
    for name, seconds in encoder_tests(max(3, args.rounds // 2)).items():
        rows.append((f"hardware encoder tests, {name}", f"{seconds * 1000:.0f} ms", "median", ""))
    if args.against:
        for name, figures in against(args.against, args.rounds).items():
            for what, seconds in figures.items():
                rows.append((f"process CLIP, {name}: {what}", f"{seconds:.3f} s", "median", ""))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
