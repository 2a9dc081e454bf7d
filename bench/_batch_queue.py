"""The queue parts of ``bench/batch.py``: a drain by the ``fredica worker`` process against
Huey, and the start-up of the ``fredica`` command."""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from bench import engine as engine_bench
from bench._batch_lanes import COMMAND_TIMEOUT, FREDICA, ROOT, clips, fredica, read_only, run
from bench._common import inconsistent_runs

#: The drain's task types: NOOP runs inline (claimed, run and completed inside the engine's
#: transaction, many per commit); SLEEP of 0 s takes the usual path (an asyncio task per
#: attempt, its forced first progress report, its outcome in a later commit).
DRAIN_TYPES: dict[str, Callable[[int], dict[str, int]]] = {
    "NOOP": lambda i: {"n": i},
    "SLEEP": lambda i: {"seconds": 0},
}
DRAIN_WORKERS = 2


# --- the drain --------------------------------------------------------------------------------


def fredica_drain(
    work: Path, n: int, task_type: str, tag: str, synchronous: str | None = None
) -> dict[str, Any]:
    """``n`` tasks of ``task_type`` in one run, submitted with ``fredica submit SPEC``
    (untimed), drained by ``fredica worker --until-idle --max-workers 2``; the figure is the
    task table's first ``claimed_at`` to last ``completed_at``. ``synchronous``: the
    setting ``sqlite_synchronous`` of the data directory (default: the default, FULL)."""
    data_dir = work / f"drain-{task_type}-{synchronous or 'default'}-{tag}"
    spec = work / f"drain-{task_type}.json"
    payload = DRAIN_TYPES[task_type]
    tasks = [{"key": f"t{i}", "type": task_type, "payload": payload(i)} for i in range(n)]
    spec.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    problems = []
    try:
        if synchronous is not None:
            setting = ("settings", "set", "sqlite_synchronous", synchronous)
            run(fredica(data_dir, *setting), "fredica settings set")
        t0 = time.perf_counter()
        run(fredica(data_dir, "submit", str(spec)), "fredica submit")
        submit_s = time.perf_counter() - t0
        began, t0 = time.time(), time.perf_counter()
        worker = subprocess.run(
            fredica(data_dir, "worker", "--until-idle", "--max-workers", str(DRAIN_WORKERS)),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        wall, ended = time.perf_counter() - t0, time.time()
        if worker.returncode:
            problems.append(f"fredica worker exited {worker.returncode}: {worker.stderr[-500:]}")
        conn = read_only(data_dir / "fredica.db")
        try:
            done, first, last = conn.execute(
                "SELECT COUNT(*), MIN(claimed_at), MAX(completed_at) FROM task "
                "WHERE status = 'completed'"
            ).fetchone()
            statuses = [s for (s,) in conn.execute("SELECT status FROM workflow_run")]
            bad = inconsistent_runs(conn)
        finally:
            conn.close()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    if done != n:
        problems.append(f"{task_type}: {done} of {n} tasks completed")
    if statuses != ["completed"]:
        problems.append(f"{task_type}: run statuses {statuses}")
    if bad:
        problems.append(f"{task_type}: the run's counters disagree with its tasks")
    span = (last - first) if done else float("nan")
    return {
        "tasks": done,
        "span_s": span,
        "tasks_per_s": n / span if span > 0 else float("nan"),
        "submit_s": submit_s,
        "worker_wall_s": wall,
        "start_to_first_claim_s": (first - began) if done else float("nan"),
        "last_completed_to_exit_s": (ended - last) if done else float("nan"),
        "problems": problems,
    }


def huey_drain(work: Path, n: int, tag: str) -> dict[str, Any]:
    """``bench/engine.py``'s Huey lane (SqliteHuey, a Consumer with 2 worker threads, results
    stored), with its round made ``n`` tasks long: enqueued untimed, timed from
    ``consumer.start()`` to the last ``SIGNAL_COMPLETE``."""
    lane = engine_bench.Lane("Huey", "huey")
    lane.path = work / f"huey-{tag}.db"
    lane.huey = engine_bench.make_huey(lane.path)
    try:
        with mock.patch.object(engine_bench, "RUN_SIZE", n):
            engine_bench.huey_round(lane, 0)
        left, results = len(lane.huey), lane.huey.storage.result_store_size()
    finally:
        lane.huey.storage.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{lane.path}{suffix}").unlink(missing_ok=True)
    problems = list(lane.problems)
    if left:
        problems.append(f"Huey: {left} messages left in the queue")
    if results != n:
        problems.append(f"Huey: {results} results stored, expected {n}")
    span = lane.intervals[0]
    return {"tasks": n, "span_s": span, "tasks_per_s": n / span, "problems": problems}


#: The lanes: Fredica's NOOP and SLEEP (default settings); SLEEP with ``sqlite_synchronous``
#: NORMAL (a setting: no fsync at each commit, as Huey's SQLite runs), to show what the fsync
#: costs; Huey.
DRAIN_LANES = ("NOOP", "SLEEP", "SLEEP_NORMAL", "huey")


def measure_drain(work: Path, n: int, rounds: int, rng: random.Random) -> dict[str, Any]:
    load = os.getloadavg()
    rows: dict[str, list[dict[str, Any]]] = {lane: [] for lane in DRAIN_LANES}
    for r in range(rounds):
        order = list(DRAIN_LANES)
        rng.shuffle(order)
        for lane in order:
            if lane == "huey":
                rows[lane].append(huey_drain(work, n, str(r)))
            elif lane == "SLEEP_NORMAL":
                rows[lane].append(fredica_drain(work, n, "SLEEP", str(r), "NORMAL"))
            else:
                rows[lane].append(fredica_drain(work, n, lane, str(r)))
        print(f"# drain: round {r + 1}/{rounds}", file=sys.stderr)
    rates = {lane: statistics.median(x["tasks_per_s"] for x in rows[lane]) for lane in rows}

    def fredica_median(key: str) -> dict[str, float]:
        return {t: statistics.median(x[key] for x in rows[t]) for t in ("NOOP", "SLEEP")}

    return {
        "tasks": n,
        "rounds": rounds,
        "load_average": load,
        "tasks_per_s": rates,
        "rounds_tasks_per_s": {lane: [x["tasks_per_s"] for x in rows[lane]] for lane in rows},
        "ratio": {t: rates[t] / rates["huey"] for t in ("NOOP", "SLEEP", "SLEEP_NORMAL")},
        "submit_s": fredica_median("submit_s"),
        "worker_wall_s": fredica_median("worker_wall_s"),
        "start_to_first_claim_s": fredica_median("start_to_first_claim_s"),
        "last_completed_to_exit_s": fredica_median("last_completed_to_exit_s"),
        "problems": [p for lane in rows.values() for x in lane for p in x["problems"]],
    }


# --- start-up ---------------------------------------------------------------------------------

STARTUP = ("python -c pass", "--version", "runs", "process")
#: Seconds each ``fredica`` command should take at most (``process``: to its first task).
STARTUP_TARGETS = {"--version": 0.3, "runs": 0.3, "process": 1.0}
#: Runs in the data directory ``runs`` lists.
STARTUP_RUNS = 3


def _prepare_startup(work: Path) -> tuple[Path, Path, Path]:
    """A data directory with a few finished runs (for ``runs``), a migrated empty one (copied
    for each ``process``), and a 5 s mkv clip."""
    with_runs, empty = work / "startup-runs", work / "startup-empty"
    spec = work / "startup-spec.json"
    spec.write_text(json.dumps({"tasks": [{"key": "a", "type": "NOOP"}]}), encoding="utf-8")
    run(fredica(empty, "runs"), "fredica runs")  # creates and migrates the database
    shutil.copytree(empty, with_runs)
    submits = [  # at once: SQLite's busy timeout lines the writers up
        subprocess.Popen(
            fredica(with_runs, "submit", str(spec)), cwd=ROOT, stdout=subprocess.DEVNULL
        )
        for _ in range(STARTUP_RUNS)
    ]
    if any(p.wait(COMMAND_TIMEOUT) for p in submits):
        raise RuntimeError("fredica submit failed (its error is above)")
    run(fredica(with_runs, "worker", "--until-idle"), "fredica worker")
    return with_runs, empty, clips("mkv", 5, 1)[0]


def _command(
    name: str, work: Path, with_runs: Path, empty: Path, clip: Path, n: int
) -> tuple[list[str], Path | None]:
    """The argv of a start-up command, and the data directory it runs on (None: none)."""
    if name == "python -c pass":
        return [sys.executable, "-c", "pass"], None
    if name == "--version":
        return [*FREDICA, "--version"], None
    if name == "runs":
        return fredica(with_runs, "runs"), with_runs
    data_dir = work / f"startup-process-{n}"
    shutil.copytree(empty, data_dir)
    return fredica(data_dir, "process", str(clip), "--template", "transcode_mp4"), data_dir


def _time_command(
    name: str, argv: list[str], data_dir: Path | None, python: list[str] | None = None
) -> dict[str, Any]:
    """Seconds from just before the start to the end (``process``: to its first task's
    ``started_at`` too); ``python`` replaces the interpreter (``-X importtime``)."""
    if python is not None:
        argv = [*python, *argv[1:]]
    began, t0 = time.time(), time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    row: dict[str, Any] = {"wall_s": time.perf_counter() - t0, "stderr": done.stderr}
    row["problems"] = [f"{name} exited {done.returncode}"] if done.returncode else []
    if name == "process" and data_dir is not None:
        conn = read_only(data_dir / "fredica.db")
        try:
            (first,) = conn.execute("SELECT MIN(started_at) FROM task").fetchone()
            statuses = [s for (s,) in conn.execute("SELECT status FROM workflow_run")]
        finally:
            conn.close()
        shutil.rmtree(data_dir, ignore_errors=True)
        row["whole_s"] = row["wall_s"]
        row["wall_s"] = (first - began) if first is not None else float("nan")
        if statuses != ["completed"]:
            row["problems"].append(f"process: run statuses {statuses}")
    return row


def importtime_top(stderr: str, top: int = 15) -> dict[str, Any]:
    """The ``-X importtime`` report: the ``top`` imports by cumulative time, and the sum of
    the top-level ones' (all the imports' time)."""
    rows: list[dict[str, Any]] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        own, cumulative, raw = line.removeprefix("import time:").split("|", 2)
        try:
            self_us, cum_us = int(own), int(cumulative)
        except ValueError:  # the header
            continue
        depth = (len(raw) - len(raw.lstrip()) - 1) // 2
        rows.append(
            {
                "module": raw.strip(),
                "depth": depth,
                "self_ms": self_us / 1e3,
                "cumulative_ms": cum_us / 1e3,
            }
        )
    total = sum(r["cumulative_ms"] for r in rows if r["depth"] == 0)
    ranked = sorted(rows, key=lambda r: -r["cumulative_ms"])[:top]
    return {"total_ms": total, "modules": len(rows), "top": ranked}


def measure_startup(work: Path, rounds: int, warmup: bool, rng: random.Random) -> dict[str, Any]:
    load = os.getloadavg()
    with_runs, empty, clip = _prepare_startup(work)
    times: dict[str, list[float]] = {name: [] for name in STARTUP}
    whole: list[float] = []
    problems: list[str] = []
    n = 0
    for r in range(-1 if warmup else 0, rounds):
        order = list(STARTUP)
        rng.shuffle(order)
        for name in order:
            n += 1
            row = _time_command(name, *_command(name, work, with_runs, empty, clip, n))
            problems += row["problems"]
            if r >= 0:
                times[name].append(row["wall_s"])
                if "whole_s" in row:
                    whole.append(row["whole_s"])
        print(f"# startup: {'warm-up' if r < 0 else f'round {r + 1}/{rounds}'}", file=sys.stderr)
    medians = {name: statistics.median(v) for name, v in times.items()}
    # The slowest first; then (not with --quick) every other one that misses its target.
    slowest = max(STARTUP_TARGETS, key=lambda name: medians[name])
    profiled = [slowest]
    if warmup:
        profiled += [c for c, t in STARTUP_TARGETS.items() if c != slowest and medians[c] >= t]
    profiles = []
    for name in profiled:
        n += 1
        row = _time_command(
            name,
            *_command(name, work, with_runs, empty, clip, n),
            python=[sys.executable, "-X", "importtime"],
        )
        problems += row["problems"]
        profiles.append(
            {"command": name, "wall_s": row["wall_s"], "importtime": importtime_top(row["stderr"])}
        )
    return {
        "rounds": rounds,
        "load_average": load,
        "times_s": times,
        "median_s": medians,
        "process_whole_s": statistics.median(whole),
        "profiles": profiles,
        "problems": problems,
    }
