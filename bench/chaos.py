"""``python -m bench.chaos``: kill Fredica's processes at random, many times, and check from
outside that no work was lost.

A data directory is kept busy with real work of every kind (``bench/_chaos_work.py``): DAG
runs of NOOP, SLEEP and SLEEP_SUBPROCESS, remuxes, segmented re-encodes, audio extraction,
downloads from a local HTTP server that drops connections and stalls, transcriptions into
subtitles, and a watch folder being filled. Then, cycle after cycle, ``fredica worker`` (or,
one cycle in five, ``fredica watch-folders`` while a file is written into its folder, or one
in seven the desktop app, offscreen, its engine in the window) is started and one fault is
dealt at a seeded random moment:

- ``worker``: ``kill -9`` of the worker;
- ``server``: ``kill -9`` of its endpoints server (the worker goes on, and starts another);
- ``child``: ``kill -9`` of a job's child process (mid-job, or idle between two) or of an
  ffmpeg it runs — not the fork server that forks the children (see ``_targets``);
- ``stop``: SIGSTOP of the worker past its heartbeat, then SIGCONT;
- ``quit``: a graceful stop (SIGTERM);
- ``power``: the worker's whole process group and session killed at once (power loss).

After each cycle, from outside (the database file, the process table, the files): no process
left, ``PRAGMA integrity_check`` ok, no task, run or material gone. After the last one,
``watch-folders`` takes in what is left of the folder and ``worker --until-idle`` finishes the
work; a run of a template whose job failed because its child was killed more often than its
one retry allows (or its download failed on the flaky server) is retried by hand, as its user
would, and counted. Then the end state is checked (``bench/_chaos_checks.py``): every run
completed, every task completed exactly once (one ``completed`` event), every output there
and right (streams, and a length matching its input's; downloads identical to what was
served; transcripts with segments), every watched file submitted once, no temporary file
left. The table gives each fault's count, the violations, and the work redone per kill
(seconds of SLEEP since its last saved checkpoint when the kill came, the median).

    python -m bench.chaos --seed 1 --cycles 760     # the long run docs/reliability.md reports
    python -m bench.chaos --seed 7 --cycles 8       # a short one (the test suite's)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench._chaos_checks import Seen, check_cycle, check_end, query
from bench._chaos_work import EXE, FlakyServer, Workload

FAULTS = ("worker", "server", "child", "stop", "quit", "power")
#: How often each fault is dealt (weights): enough of each kind in one long run for the
#: figures docs/reliability.md asks (300 worker, 100 server, 100 child kills, 20 power losses
#: in 760 cycles).
WEIGHTS = (6.0, 2.4, 3.0, 0.5, 0.4, 1.0)
#: One cycle in this many runs ``watch-folders`` instead of ``worker``…
WATCH_EVERY = 5
#: …and one in this many the desktop app (offscreen), whose engine runs in the window.
GUI_EVERY = 7
#: How long a ``server`` or ``child`` fault waits for something to kill when there is none
#: at its moment (the worker still starting, only in-engine tasks running), seconds.
FIND_TARGET_FOR = 4.0
#: Error types the chaos itself causes to a template's job (one retry): retried by hand.
CAUSED = ("SUBPROCESS_CRASHED", "NETWORK_ERROR", "HTTP_ERROR", "TIMEOUT")


@dataclass
class Tally:
    dealt: Counter[str] = field(default_factory=Counter)
    #: Of the ``child`` faults: which process was killed (``ffmpeg``, ``child``).
    children: Counter[str] = field(default_factory=Counter)
    #: A fault asked for but not dealt (no server or child alive at that moment).
    missed: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    redone: list[float] = field(default_factory=list)
    watch_cycles: int = 0
    gui_cycles: int = 0
    retried_by_hand: int = 0
    runs: int = 0
    tasks: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    verified: dict[str, int] = field(default_factory=dict)
    http: dict[str, int] = field(default_factory=dict)


def start(data: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [EXE, "--data-dir", str(data), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own session: "power" kills it whole
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},  # for the desktop app's cycles
    )


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def is_server(p: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return any("endpoints.log" in part for part in p.cmdline())
    return False


def deal(
    fault: str,
    worker: subprocess.Popen[str],
    data: Path,
    tally: Tally,
    rng: random.Random,
    since: float,
) -> None:
    """Deal ``fault`` to ``worker`` (running); it has ended when this returns. ``rng`` picks
    the process a ``server`` or ``child`` fault kills (the run's seed decides it)."""
    if fault in ("worker", "power"):
        tally.redone += running_sleeps(data, since)
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
        # At the moment dealt, or as soon after as there is one (at most a few seconds).
        deadline = time.monotonic() + FIND_TARGET_FOR
        while not (targets := _targets(fault, worker)) and time.monotonic() < deadline:
            if worker.poll() is not None:
                break
            time.sleep(0.05)
        ffmpegs = [p for p in targets if "ffmpeg" in Path((_cmdline(p) or ["?"])[0]).name]
        if ffmpegs and rng.random() < 0.5:
            targets = ffmpegs  # short-lived on these clips: taken when there is one
        if not targets:
            tally.missed[fault] += 1
            worker.send_signal(signal.SIGKILL)
            worker.wait(30)
            return
        target = rng.choice(targets)
        if fault == "child":
            tally.children[_kind_of_child(target)] += 1
        with contextlib.suppress(psutil.Error):
            target.kill()
        time.sleep(1.5)  # the worker notices, and goes on; then it is let go gracefully
        worker.send_signal(signal.SIGTERM)
    tally.dealt[fault] += 1
    try:
        worker.wait(60)
    except subprocess.TimeoutExpired:
        tally.violations.append(f"the worker did not end after {fault}")
        worker.kill()
        worker.wait(30)


def _kind_of_child(p: psutil.Process) -> str:
    """``ffmpeg``, or ``child`` (a job's)."""
    return "ffmpeg" if "ffmpeg" in Path((_cmdline(p) or ["?"])[0]).name else "child"


def _targets(fault: str, worker: subprocess.Popen[str]) -> list[psutil.Process]:
    """What a ``server`` fault kills (the worker's endpoints server), or a ``child`` fault: a
    job's child (running a job, or idle between two) or an ffmpeg one runs. Not the fork
    server, the server's own helper that forks the children (a forked child has its command
    line, but the fork server is the server's child, the jobs' children are its own): killing
    it ends the children it forked (``tests/endpoints/test_starting.py``), and counted as a
    child it hid how few jobs' children were killed."""
    servers = [p for p in descendants(worker.pid) if is_server(p)]
    if fault == "server":
        return servers
    targets = []
    for server in servers:
        for p in descendants(server.pid):
            line = " ".join(_cmdline(p))
            helper = "resource_tracker" in line or (
                "multiprocessing.forkserver" in line and _parent(p) == server.pid
            )
            if not helper:
                targets.append(p)
    return targets


def _parent(p: psutil.Process) -> int | None:
    with contextlib.suppress(psutil.Error):
        return p.ppid()
    return None


def running_sleeps(data: Path, since: float) -> list[float]:
    """Seconds since each SLEEP the worker started at ``since`` runs saved its progress: what
    a kill now makes it redo. (A row left ``running`` by an earlier kill, not yet recovered,
    is not this kill's doing.)"""
    now = time.time()
    rows = query(
        data,
        "SELECT heartbeat_at FROM task WHERE status = 'running' AND type = 'SLEEP' "
        "AND claimed_at >= ?",
        since,
    )
    return [max(0.0, now - at) for (at,) in rows if at is not None]


def _cmdline(p: psutil.Process) -> list[str]:
    with contextlib.suppress(psutil.Error):
        return p.cmdline()
    return []


def open_runs(data: Path) -> int:
    sql = "SELECT count(*) FROM workflow_run WHERE status IN ('pending', 'running')"
    return int(query(data, sql)[0][0])


def take_in_the_rest(work: Workload, tally: Tally) -> None:
    """``watch-folders`` until every file written into the folder has its material."""
    if not work.watch_files:
        return
    watcher = start(work.data, *_watch_args(work))
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            sql = "SELECT count(*) FROM watched_file WHERE material_id IS NOT NULL"
            with contextlib.suppress(Exception):
                if query(work.data, sql)[0][0] >= len(work.watch_files):
                    break
            if watcher.poll() is not None:
                tally.violations.append(f"the last watch-folders exited {watcher.returncode}")
                return
            time.sleep(0.5)
        else:
            tally.violations.append("the watch folder's files were not all taken in")
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(120)


def finish(data: Path, tally: Tally) -> None:
    """``worker --until-idle``; then the runs failed by what the chaos did to a template's
    jobs are retried by hand (counted), until none is left (three rounds at most)."""
    for _ in range(4):
        final = subprocess.run(
            [EXE, "--data-dir", str(data), "worker", "--until-idle", "--max-workers", "3"],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if final.returncode not in (0, 1):  # 1: some run failed (looked at below)
            tally.violations.append(
                f"the last worker exited {final.returncode}: {final.stderr[-300:]}"
            )
        marks = ", ".join("?" * len(CAUSED))
        failed = query(
            data,
            "SELECT DISTINCT workflow_run_id FROM task WHERE status = 'failed' "
            f"AND error_type IN ({marks})",
            *CAUSED,
        )
        if not failed:
            return
        for (run_id,) in failed:
            tally.retried_by_hand += 1
            subprocess.run(
                [EXE, "--data-dir", str(data), "retry", run_id],
                capture_output=True,
                timeout=120,
                check=True,
            )


def _watch_args(work: Workload) -> tuple[str, ...]:
    return ("watch-folders", str(work.watch), "--template", "extract_audio", "--settle", "1")


def run(seed: int, cycles: int, runs: int, clips: int, root: Path) -> Tally:
    """Keep ``runs`` runs unfinished, deal ``cycles`` faults, then finish and check it all."""
    rng = random.Random(seed)
    data = root / "data"
    tally = Tally()
    work = Workload(data, rng, clips)
    seen = Seen()
    with FlakyServer(work.served, seed) as server:
        work.server = server
        for cycle in range(cycles):
            work.top_up(runs, open_runs(data) if work.run_ids else 0)
            fault = rng.choices(FAULTS, WEIGHTS)[0]
            filling = None
            if cycle % WATCH_EVERY == WATCH_EVERY - 1:
                tally.watch_cycles += 1
                process = start(data, *_watch_args(work))
                filling = work.fill_watch(1.2)
            elif cycle % GUI_EVERY == GUI_EVERY - 1:
                tally.gui_cycles += 1
                process = start(data, "gui")
            else:
                process = start(data, "worker", "--max-workers", "3")
            since = time.time()
            time.sleep(rng.uniform(0.3, 2.5))
            if process.poll() is not None:  # it failed: say how
                _, err = process.communicate()
                tally.violations.append(
                    f"cycle {cycle}: {process.args[3]} exited {process.returncode}: {err[-300:]}"
                )
            else:
                deal(fault, process, data, tally, rng, since)
            if filling is not None:
                filling.join()
            check_cycle(data, seen, cycle, tally.violations)
        take_in_the_rest(work, tally)
        finish(data, tally)
        tally.http = dict(server.tally)
    check_cycle(data, seen, cycles, tally.violations)
    tally.verified = check_end(data, work.run_ids, work.watch_files, work.served, tally.violations)
    tally.runs = len(query(data, "SELECT id FROM workflow_run"))
    tally.tasks = len(seen.tasks)
    tally.kinds = dict(work.kinds, watched=len(work.watch_files))
    return tally


def report(tally: Tally, seconds: float) -> list[str]:
    lines = ["fault | dealt | not dealt (nothing to kill then)"]
    for fault in FAULTS:
        lines.append(f"{fault} | {tally.dealt[fault]} | {tally.missed[fault]}")
    redone = statistics.median(tally.redone) if tally.redone else 0.0
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(tally.kinds.items()))
    children = ", ".join(f"{k} {n}" for k, n in sorted(tally.children.items()))
    verified = ", ".join(f"{k} {n}" for k, n in sorted(tally.verified.items()))
    http = ", ".join(f"{k} {n}" for k, n in sorted(tally.http.items()))
    lines += [
        f"child kills by process | {children or '-'}",
        f"cycles under watch-folders | {tally.watch_cycles}",
        f"cycles under the desktop app | {tally.gui_cycles}",
        f"runs (tasks) | {tally.runs} ({tally.tasks})",
        f"runs by kind | {kinds}",
        f"outputs verified | {verified or '-'}",
        f"HTTP requests | {http or '-'}",
        f"runs retried by hand | {tally.retried_by_hand}",
        f"violations | {len(tally.violations)}",
        f"work redone per kill (median s) | {redone:.2f}",
        f"time (s) | {seconds:.0f}",
    ]
    lines += [f"violation: {v}" for v in tally.violations[:50]]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cycles", type=int, default=40, help="faults dealt (one per start)")
    p.add_argument("--runs", type=int, default=6, help="runs kept unfinished at each fault")
    p.add_argument("--clips", type=int, default=2, help="real clips the media runs are made of")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="fredica-chaos-"))
    tally = run(args.seed, args.cycles, args.runs, args.clips, root)
    if tally.violations:  # kept, to be looked into: the database, the logs, the files
        print(f"kept for a look: {root}", file=sys.stderr)
    else:
        shutil.rmtree(root, ignore_errors=True)
    seconds = time.monotonic() - started
    print("\n".join(report(tally, seconds)))
    if args.json:
        figures: dict[str, Any] = {
            "dealt": dict(tally.dealt),
            "children": dict(tally.children),
            "missed": dict(tally.missed),
            "violations": tally.violations,
            "redone_median_s": statistics.median(tally.redone) if tally.redone else 0,
            "runs": tally.runs,
            "tasks": tally.tasks,
            "kinds": tally.kinds,
            "verified": tally.verified,
            "http": tally.http,
            "watch_cycles": tally.watch_cycles,
            "gui_cycles": tally.gui_cycles,
            "retried_by_hand": tally.retried_by_hand,
        }
        print(json.dumps(figures))
    return 1 if tally.violations else 0


if __name__ == "__main__":
    sys.exit(main())
