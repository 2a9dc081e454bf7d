"""Pieces of a command's start and of a batch's first jobs, each against what it replaced.

1. ``import fredica_app.services.app`` (what every command that opens the data directory
   imports) in a new interpreter, with the garbage collector on and off (what
   :func:`fredica_app.cli.imports_without_collection` does), interleaved; median seconds of
   each.
2. The hardware encoder test of every encoder the bundled ffmpeg lists, whether or not a
   device for it is here: one after another, and side by side
   (:func:`python_endpoints.jobs.media.first_working`); median seconds of each. What the
   server runs now is neither where no driver has a device: nothing.
3. With ``--against REV``: from a checkout of REV and from this one, alternately, on a copy
   of a migrated data directory each time and a 5 s clip of the batch bench's: ``fredica add
   CLIP --template transcode_mp4`` then ``fredica worker --until-idle`` (the batch bench's
   second lane), and ``fredica process CLIP --template transcode_mp4`` (its first); median
   seconds of ``add``, of the worker's start to its first claim (``claimed_at``) and to its
   end, and of ``process``'s start to its first task's ``started_at`` and to its end.

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
    "import fredica_app.services.app\n"
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


def timed(tree: Path, data: Path, *args: str) -> tuple[float, float]:
    """Run ``fredica --data-dir DATA ARGS`` from ``tree``: its start (UNIX time) and seconds."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    began, t0 = time.time(), time.perf_counter()
    subprocess.run(
        [*FREDICA, "--data-dir", str(data), *args],
        cwd=tree,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        timeout=300,
    )
    return began, time.perf_counter() - t0


def first_task(data: Path, column: str) -> float:
    """The earliest ``column`` (``claimed_at``, ``started_at``) of the data directory's tasks."""
    conn = sqlite3.connect(f"{(data / 'fredica.db').as_uri()}?mode=ro", uri=True)
    try:
        return float(conn.execute(f"SELECT MIN({column}) FROM task").fetchone()[0])
    finally:
        conn.close()


def commands_once(tree: Path, clip: Path, base: Path, work: Path) -> dict[str, float]:
    """Both of the batch bench's Fredica lanes on ``clip``, each on a fresh copy of ``base``."""
    data = work / "data"
    figures: dict[str, float] = {}
    template = ("--template", "transcode_mp4")
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(base, data)
    figures["add CLIP"] = timed(tree, data, "add", str(clip), *template)[1]
    began, whole = timed(tree, data, "worker", "--until-idle")
    figures["worker: start -> first claim"] = first_task(data, "claimed_at") - began
    figures["worker: whole run"] = whole
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(base, data)
    began, whole = timed(tree, data, "process", str(clip), *template)
    figures["process CLIP: start -> first task"] = first_task(data, "started_at") - began
    figures["process CLIP: whole run"] = whole
    return figures


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
            seen: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
            for i in range(rounds):
                order = list(trees.items())
                for name, tree in order if i % 2 else order[::-1]:
                    seen[name].append(commands_once(tree, clip, bases[tree], work))
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, capture_output=True
            )
    return {
        name: {what: statistics.median(r[what] for r in runs) for what in runs[0]}
        for name, runs in seen.items()
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.start_pieces", description=__doc__)
    p.add_argument("--rounds", type=int, default=8, help="runs of each way (default 8)")
    p.add_argument(
        "--against", metavar="REV", help="also time add, worker and process against this commit"
    )
    args = p.parse_args(argv)
    byte_compile()
    imports: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.rounds):
        for off in (False, True):
            imports[off].append(import_seconds(off))
    rows = [
        (
            f"import fredica_app.services.app, collector {'off' if off else 'on'}",
            f"{statistics.median(v):.3f} s",
            f"median of {len(v)}; min {min(v):.3f} s",
            "",
        )
        for off, v in imports.items()
    ]
    for name, seconds in encoder_tests(max(3, args.rounds // 2)).items():
        rows.append((f"hardware encoder tests, {name}", f"{seconds * 1000:.0f} ms", "median", ""))
    if args.against:
        by_tree = against(args.against, args.rounds)
        for what in next(iter(by_tree.values())):
            for name, figures in by_tree.items():
                rows.append((f"{what}, {name}", f"{figures[what]:.3f} s", "median", ""))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
