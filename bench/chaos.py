"""``python -m bench.chaos``: kill Fredica's processes at random, many times, and check from
outside that no work was lost.

A data directory gets DAG runs of NOOP, SLEEP (in the engine's process, checkpointing) and
SLEEP_SUBPROCESS (in a child of the endpoints server), and remuxes of small real clips
(TRANSCODE_MP4, verified outputs). Then, cycle after cycle, ``fredica worker`` is started and
one fault is dealt at a seeded random moment:

- ``worker``: ``kill -9`` of the worker;
- ``server``: ``kill -9`` of its endpoints server (the worker goes on, and starts another);
- ``child``: ``kill -9`` of a job's child process or of an ffmpeg it runs;
- ``stop``: SIGSTOP of the worker past its heartbeat, then SIGCONT;
- ``quit``: a graceful stop (SIGTERM);
- ``power``: the worker's whole process group and session killed at once (power loss).

After each cycle, from outside (the database file, the process table, the files): no process
of the data directory left, ``PRAGMA integrity_check`` ok, no task gone. After the last one,
``fredica worker --until-idle`` finishes the work and the end state is checked: every run
completed, every task completed exactly once (one ``completed`` event), every MP4 there and
readable with its streams, no temporary file left beside the outputs. The table gives each
fault's count, the violations, and the work redone per kill (seconds of SLEEP since its last
saved checkpoint when the kill came, the median).

    python -m bench.chaos --seed 1 --cycles 400      # the long run docs/reliability.md reports
    python -m bench.chaos --seed 7 --cycles 8        # a short one (the test suite's)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import psutil

from python_endpoints.jobs.outputs import parse_temp

FAULTS = ("worker", "server", "child", "stop", "quit", "power")
#: How often each fault is dealt (weights): the kills of the worker most.
WEIGHTS = (6, 2, 2, 1, 1, 1)
EXE = str(Path(sys.executable).parent / "fredica")


@dataclass
class Tally:
    dealt: Counter[str] = field(default_factory=Counter)
    #: A fault asked for but not dealt (no server or child alive at that moment).
    missed: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    redone: list[float] = field(default_factory=list)
    runs: int = 0
    tasks: int = 0


def fredica(data: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [EXE, "--data-dir", str(data), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own session: "power" kills it whole
    )


def query(data: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(data / "fredica.db", timeout=60)) as conn:
        return conn.execute(sql, args).fetchall()


#: Retries of the tasks whose work runs in a child: a killed child is a failed attempt
#: (``SUBPROCESS_CRASHED``), retried under the task's retries, as the templates' media jobs
#: are (the chaos kills children far more often than a machine does: more retries here).
CHILD_RETRIES = 8


def dag(rng: random.Random) -> dict[str, Any]:
    """A DAG run of 8 tasks: a NOOP root, six sleeps (in the engine's process, or in a child
    of the endpoints server), some chained, and a NOOP join."""
    tasks: list[dict[str, Any]] = [{"key": "root", "type": "NOOP"}]
    for i in range(6):
        kind = rng.choice(["SLEEP", "SLEEP", "SLEEP_SUBPROCESS"])
        seconds = round(rng.uniform(0.5, 3.0), 2)
        deps = ["root"] + ([f"t{i - 1}"] if i and rng.random() < 0.5 else [])
        task = {"key": f"t{i}", "type": kind, "payload": {"seconds": seconds}, "depends_on": deps}
        if kind == "SLEEP_SUBPROCESS":
            task["max_retries"] = CHILD_RETRIES
        tasks.append(task)
    tasks.append({"key": "join", "type": "NOOP", "depends_on": [f"t{i}" for i in range(6)]})
    return {"tasks": tasks}


def remux(clip: Path, n: int) -> dict[str, Any]:
    """A remux of ``clip`` into an MP4 of its own (``n``: its number)."""
    out = clip.with_name(f"{clip.stem}.out{n}.mp4")
    payload = {"input": str(clip), "output": str(out)}
    return {
        "tasks": [{"key": "mp4", "type": "TRANSCODE_MP4", "payload": payload, "max_retries": 8}],
        "output": out,
    }


def submit(data: Path, spec: dict[str, Any]) -> str:
    path = data.parent / "spec.json"
    path.write_text(json.dumps({"tasks": spec["tasks"]}))
    done = subprocess.run(
        [EXE, "--data-dir", str(data), "submit", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise SystemExit(f"submit failed: {done.stderr}")
    return str(json.loads(done.stdout)["run_id"])


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def is_server(p: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return any("endpoints.log" in part for part in p.cmdline())
    return False


def running_sleeps(data: Path) -> list[float]:
    """Seconds since each running SLEEP's last saved progress: what a kill now makes it redo."""
    now = time.time()
    rows = query(data, "SELECT heartbeat_at FROM task WHERE status = 'running' AND type = 'SLEEP'")
    return [max(0.0, now - at) for (at,) in rows if at is not None]


def left_processes(data: Path) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            if p.info["status"] != psutil.STATUS_ZOMBIE and any(
                str(data) in part for part in p.info["cmdline"] or ()
            ):
                found.append(p)
    return found


def wait_gone(data: Path, within: float = 20.0) -> list[psutil.Process]:
    deadline = time.monotonic() + within
    while True:
        left = left_processes(data)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def deal(
    fault: str, worker: subprocess.Popen[str], data: Path, tally: Tally, rng: random.Random
) -> None:
    """Deal ``fault`` to ``worker`` (running); it has ended when this returns. ``rng`` picks
    the process a ``server`` or ``child`` fault kills (the run's seed decides it)."""
    if fault in ("worker", "power"):
        tally.redone += running_sleeps(data)
    if fault == "worker":
        worker.send_signal(signal.SIGKILL)
    elif fault == "power":
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGKILL)  # the session: the worker, server, children
        for p in descendants(worker.pid):  # a job's ffmpeg in a session of its own
            with contextlib.suppress(psutil.Error):
                p.kill()
    elif fault == "quit":
        worker.send_signal(signal.SIGTERM)
    elif fault == "stop":
        worker.send_signal(signal.SIGSTOP)
        time.sleep(6.0)  # past a heartbeat (every few seconds)
        worker.send_signal(signal.SIGCONT)
        time.sleep(0.5)
        worker.send_signal(signal.SIGTERM)
    else:
        below = descendants(worker.pid)
        servers = [p for p in below if is_server(p)]
        if fault == "server":
            targets = servers
        else:
            jobs = [p for s in servers for p in descendants(s.pid)]
            targets = [p for p in jobs if "resource_tracker" not in " ".join(_cmdline(p))]
        if not targets:
            tally.missed[fault] += 1
            worker.send_signal(signal.SIGKILL)
            worker.wait(30)
            return
        with contextlib.suppress(psutil.Error):
            rng.choice(targets).kill()
        time.sleep(1.5)  # the worker notices, and goes on; then it is let go gracefully
        worker.send_signal(signal.SIGTERM)
    tally.dealt[fault] += 1
    try:
        worker.wait(60)
    except subprocess.TimeoutExpired:
        tally.violations.append(f"the worker did not end after {fault}")
        worker.kill()
        worker.wait(30)


def _cmdline(p: psutil.Process) -> list[str]:
    with contextlib.suppress(psutil.Error):
        return p.cmdline()
    return []


def check_cycle(data: Path, tasks: int, tally: Tally, cycle: int) -> None:
    left = wait_gone(data)
    if left:
        tally.violations.append(f"cycle {cycle}: processes left: {[p.pid for p in left]}")
        for p in left:
            with contextlib.suppress(psutil.Error):
                p.kill()
    (ok,) = query(data, "PRAGMA integrity_check")[0]
    if ok != "ok":
        tally.violations.append(f"cycle {cycle}: integrity_check: {ok}")
    (count,) = query(data, "SELECT count(*) FROM task")[0]
    if count != tasks:
        tally.violations.append(f"cycle {cycle}: {count} tasks, {tasks} submitted")


def check_end(data: Path, run_ids: list[str], outputs: list[Path], tally: Tally) -> None:
    statuses = dict(query(data, "SELECT id, status FROM workflow_run"))
    for run_id in run_ids:
        if statuses.get(run_id) != "completed":
            tally.violations.append(f"run {run_id} ended {statuses.get(run_id)}")
    twice = query(
        data,
        "SELECT task_id, count(*) FROM task_event WHERE kind = 'completed' "
        "GROUP BY task_id HAVING count(*) != 1",
    )
    tally.violations += [f"task {t} completed {n} times" for t, n in twice]
    unfinished = query(
        data,
        "SELECT id, type, status, error_type, interruptions, charged_interruptions FROM task "
        "WHERE status != 'completed'",
    )
    tally.violations += [
        f"task {t} ({kind}) {s} ({e}; {n} interruptions, {c} charged)"
        for t, kind, s, e, n, c in unfinished
    ]
    for out in outputs:
        if not out.exists():
            tally.violations.append(f"{out.name} missing")
            continue
        with av.open(str(out), metadata_errors="replace") as container:
            kinds = {s.type for s in container.streams}
        if not {"video", "audio"} <= kinds:
            tally.violations.append(f"{out.name} holds {sorted(kinds)}")
    # What an attempt writes before its output is verified: none left once all is done.
    temporaries = [
        p.name
        for folder in {o.parent for o in outputs}
        for p in folder.iterdir()
        if parse_temp(p.name)
    ]
    tally.violations += [f"temporary file left: {name}" for name in temporaries]


def make_clips(folder: Path, n: int) -> list[Path]:
    from python_endpoints.jobs.sample import make_sample

    return [
        make_sample(folder / f"clip{i}.mkv", 2.0, kind="mkv", size=(160, 120)) for i in range(n)
    ]


def run(seed: int, cycles: int, runs: int, clips: int, work: Path) -> Tally:
    """Keep ``runs`` runs unfinished (DAGs, and a remux every few), deal ``cycles`` faults,
    then finish and check everything."""
    rng = random.Random(seed)
    data = work / "data"
    media = data / "library" / "chaos"  # inside the library: where the server may write
    media.mkdir(parents=True)
    sources = make_clips(media, clips)
    run_ids: list[str] = []
    outputs: list[Path] = []
    tasks = 0

    def top_up() -> None:
        nonlocal tasks
        open_runs = 0
        if run_ids:
            sql = "SELECT count(*) FROM workflow_run WHERE status IN ('pending', 'running')"
            (open_runs,) = query(data, sql)[0]
        for _ in range(runs - open_runs):
            if sources and len(run_ids) % 4 == 3:
                spec = remux(sources[len(outputs) % len(sources)], len(outputs))
                outputs.append(spec["output"])
            else:
                spec = dag(rng)
            run_ids.append(submit(data, spec))
            tasks += len(spec["tasks"])

    tally = Tally()
    for cycle in range(cycles):
        top_up()
        fault = rng.choices(FAULTS, WEIGHTS)[0]
        worker = fredica(data, "worker", "--max-workers", "3")
        time.sleep(rng.uniform(0.3, 2.5))
        if worker.poll() is not None:  # it failed: say how
            _, err = worker.communicate()
            tally.violations.append(
                f"cycle {cycle}: worker exited {worker.returncode}: {err[-300:]}"
            )
            continue
        deal(fault, worker, data, tally, rng)
        check_cycle(data, tasks, tally, cycle)
    final = subprocess.run(
        [EXE, "--data-dir", str(data), "worker", "--until-idle", "--max-workers", "3"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if final.returncode != 0:
        tally.violations.append(f"the last worker exited {final.returncode}: {final.stderr[-300:]}")
    check_cycle(data, tasks, tally, cycles)
    check_end(data, run_ids, outputs, tally)
    tally.runs, tally.tasks = len(run_ids), tasks
    return tally


def report(tally: Tally, seconds: float) -> list[str]:
    lines = ["fault | dealt | not dealt (nothing to kill then)"]
    for fault in FAULTS:
        lines.append(f"{fault} | {tally.dealt[fault]} | {tally.missed[fault]}")
    redone = statistics.median(tally.redone) if tally.redone else 0.0
    lines += [
        f"runs (tasks) | {tally.runs} ({tally.tasks})",
        f"violations | {len(tally.violations)}",
        f"work redone per kill (median s) | {redone:.2f}",
        f"time (s) | {seconds:.0f}",
    ]
    lines += [f"violation: {v}" for v in tally.violations[:50]]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cycles", type=int, default=40, help="faults dealt (one per worker start)")
    p.add_argument("--runs", type=int, default=6, help="runs kept unfinished at each fault")
    p.add_argument("--clips", type=int, default=2, help="real clips the remuxes are made of")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fredica-chaos-") as work:
        tally = run(args.seed, args.cycles, args.runs, args.clips, Path(work))
    seconds = time.monotonic() - started
    print("\n".join(report(tally, seconds)))
    if args.json:
        print(
            json.dumps(
                {
                    "dealt": dict(tally.dealt),
                    "missed": dict(tally.missed),
                    "violations": tally.violations,
                    "redone_median_s": statistics.median(tally.redone) if tally.redone else 0,
                    "runs": tally.runs,
                    "tasks": tally.tasks,
                }
            )
        )
    return 1 if tally.violations else 0


if __name__ == "__main__":
    sys.exit(main())
