"""WorkerEngine benchmark: drain throughput against Huey, chain latency, start-up recovery and
the idle engine's CPU.

1. Drain: NOOP tasks, independent, in runs of 1,000, drained by a ``WorkerEngine`` with
   ``max_workers=2`` on a fresh migrated database (WAL, ``synchronous=FULL``). Throughput is
   tasks / the wall time of ``engine.run(until_idle=True)`` (it returns after the last
   commit; the task table's timestamps are stamped inside transactions, before their commit,
   so they would leave out the last fsync). NOOP runs inline (claimed, run and completed in
   one transaction, many tasks per commit); a lane whose NOOP executor opts out shows the
   usual path (an asyncio task per attempt, one commit per turn). The same
   with Huey's ``SqliteHuey`` (a temp file, ``immediate=False``, its default pragmas): 1,000
   no-op tasks enqueued (untimed), then consumed by a real ``Consumer`` with 2 worker threads
   (``dequeue`` + ``execute`` + the result write), timed from ``consumer.start()`` to the last
   ``SIGNAL_COMPLETE``. The machine may be shared, so the lanes are interleaved: each round
   drains 1,000 tasks in every lane, in a shuffled order, and the lanes' intervals are summed.
   Besides the requested configuration (default slots: ``cpu`` = cores - 1), a lane with
   ``slots={"cpu": 2}`` shows what the engine does when both workers may run NOOPs at once.
   Huey is at-most-once (a task is deleted from the queue before it runs); Fredica is
   at-least-once (a lease, a fenced completion, one group commit per engine turn).
2. Chain: NOOP tasks each depending on the previous one. From the task table, each link's
   child ``started_at`` - parent ``completed_at``: both are stamped inside the same engine
   transaction (the parent's completion, then the claim of its child), so this is the time
   between the two statements, not the hand-off a user waits for. The observed hand-off is
   measured too, with a timing NOOP executor: the parent's ``execute`` returning -> the
   child's ``execute`` being entered (the engine waking up, its transaction and commit, the
   child's start: payload parse and the read of its upstream results).
3. Recovery: a database filled with bulk ``sqlite3`` inserts (untimed) in which SLEEP tasks, in
   runs of 1,000 (``max_retries=1``, a checkpoint each, every tenth with a pending NOOP
   downstream), are ``running`` under a worker that died, with their claimed/started events
   and consistent run counters. Timed: ``await engine.start()`` (start-up recovery), and
   apart from it ``open_database`` (the start-up checks, quick_check included).
4. Idle: ``engine.run()`` on an empty queue for ``--idle-seconds``; the process's CPU time
   (every thread: ``time.process_time``) over that period, per minute.

The targets are printed as PASS/FAIL lines; a miss does not change the exit status.

    .venv/bin/python bench/engine.py [--quick] [--json] [--idle-seconds 20] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import json
import os
import pstats
import random
import resource
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # run as a script (bench/ is on sys.path) or imported as bench.<name>
    from _common import Ids, fmt_int, inconsistent_runs, pct, profile_location  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    from bench._common import Ids, fmt_int, inconsistent_runs, pct, profile_location
from fredica_app.database import open_database
from workers.engine import WorkerEngine
from workers.events import Event, RunChanged
from workers.executor import ExecuteResult, ExecutionContext
from workers.executors.diagnostic import NoopExecutor, SleepExecutor
from workers.records import TaskRecord
from workers.running import default_slots
from workers.spec import parse_spec, prepare_run
from workers.store import TaskStore
from workers.tasktypes import builtin_registry

RUN_SIZE = 1_000  # tasks per workflow_run, and per drain round
MAX_WORKERS = 2
DEPENDENT_EVERY = 10  # recovery: every tenth interrupted SLEEP has a NOOP downstream

# Targets.
DRAIN_RATIO_TARGET = 1.0  # Fredica tasks/s >= Huey tasks/s
CHAIN_P50_MS = 2.0
CHAIN_P99_MS = 10.0
RECOVERY_S = 2.0
IDLE_CPU_PER_MIN = 1.0


def cpu_seconds() -> float:
    """CPU time of the whole process (every thread), user + system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def submit_noops(store: TaskStore, n: int, offset: int = 0) -> str:
    registry = builtin_registry()
    tasks = [{"key": f"t{i}", "type": "NOOP", "payload": {"n": offset + i}} for i in range(n)]
    created = await store.create_run(prepare_run(parse_spec({"tasks": tasks}), registry))
    return created.run_id


def run_consistency(path: Path) -> int:
    """How many runs have counters that disagree with their tasks."""
    conn = sqlite3.connect(path)
    try:
        return inconsistent_runs(conn)
    finally:
        conn.close()


# --- 1. drain throughput ----------------------------------------------------------------------


@dataclass
class Lane:
    """One drain configuration and what its rounds measured."""

    name: str
    kind: str  # "fredica" or "huey"
    slots: dict[str, int] | None = None
    inline: bool = True
    intervals: list[float] = field(default_factory=list)  # the timed span of each round
    claim_spans: list[float] = field(default_factory=list)  # first claim -> last completion
    walls: list[float] = field(default_factory=list)  # around engine.run / the consumer
    cpu: list[float] = field(default_factory=list)  # process CPU during the round
    tasks: int = 0
    ticks: int = 0
    run_changes: int = 0
    runs: int = 0
    problems: list[str] = field(default_factory=list)
    # live objects (not reported)
    store: Any = None
    engine: Any = None
    huey: Any = None
    path: Path | None = None

    def summary(self) -> dict[str, Any]:
        busy = sum(self.intervals)
        return {
            "name": self.name,
            "tasks": self.tasks,
            "tasks_per_s": self.tasks / busy if busy else 0.0,
            "interval_s": busy,
            "wall_s": sum(self.walls),
            "cpu_ms_per_task": 1e3 * sum(self.cpu) / self.tasks if self.tasks else 0.0,
            "rounds_tasks_per_s": [RUN_SIZE / i for i in self.intervals],
            "tasks_per_commit": self.tasks / self.ticks if self.ticks else None,
            "run_changes_per_run": self.run_changes / self.runs if self.runs else None,
            "problems": self.problems,
        }


class UsualNoop(NoopExecutor):
    """NOOP the usual way: an asyncio task per attempt, its outcome in the next commit."""

    inline = False


async def fredica_round(lane: Lane, offset: int) -> None:
    run_id = await submit_noops(lane.store, RUN_SIZE, offset)  # untimed
    engine: WorkerEngine = lane.engine
    engine.wake()  # a submission: look for work (run(until_idle) returns at once otherwise)
    ticks = engine.stats.ticks
    c0, t0 = cpu_seconds(), time.perf_counter()
    await asyncio.wait_for(engine.run(until_idle=True), 300)
    lane.walls.append(time.perf_counter() - t0)
    lane.cpu.append(cpu_seconds() - c0)
    lane.ticks += engine.stats.ticks - ticks
    lane.runs += 1
    conn = sqlite3.connect(lane.path)  # type: ignore[arg-type]
    try:
        n, first, last = conn.execute(
            "SELECT COUNT(*), MIN(claimed_at), MAX(completed_at) FROM task "
            "WHERE workflow_run_id = ? AND status = 'completed'",
            (run_id,),
        ).fetchone()
        status = conn.execute("SELECT status FROM workflow_run WHERE id = ?", (run_id,)).fetchone()
    finally:
        conn.close()
    if n != RUN_SIZE:
        lane.problems.append(f"run {run_id}: {n} of {RUN_SIZE} tasks completed")
    if status[0] != "completed":
        lane.problems.append(f"run {run_id} is {status[0]}")
    lane.intervals.append(lane.walls[-1])
    lane.claim_spans.append(last - first)
    lane.tasks += n


def make_huey(path: Path) -> Any:
    from huey import SqliteHuey
    from huey import signals as hs

    huey = SqliteHuey("bench", filename=str(path), immediate=False)

    def noop(n: int) -> dict[str, int]:
        return {"n": n}  # a result, as NOOP's: Huey stores it (put_result)

    huey.bench_noop = huey.task(name="noop")(noop)
    huey.bench_done = threading.Event()
    huey.bench_state = {"count": 0, "target": 0, "last": 0.0}
    lock = threading.Lock()

    @huey.signal(hs.SIGNAL_COMPLETE)
    def _completed(_signal: str, _task: Any) -> None:
        with lock:
            state = huey.bench_state
            state["count"] += 1
            if state["count"] >= state["target"]:
                state["last"] = time.time()
                huey.bench_done.set()

    return huey


def huey_round(lane: Lane, offset: int) -> None:
    huey = lane.huey
    for i in range(RUN_SIZE):  # enqueue, untimed (one commit each)
        huey.bench_noop(offset + i)
    state = huey.bench_state
    state["target"] = state["count"] + RUN_SIZE
    huey.bench_done.clear()
    consumer = huey.create_consumer(workers=MAX_WORKERS, worker_type="thread", periodic=False)
    consumer._set_signal_handlers = lambda: None  # leave this process's signals alone
    c0, t0 = cpu_seconds(), time.perf_counter()
    start = time.time()
    consumer.start()
    finished = huey.bench_done.wait(300)
    lane.walls.append(time.perf_counter() - t0)
    lane.cpu.append(cpu_seconds() - c0)
    consumer.stop(graceful=True)
    if not finished:
        lane.problems.append(f"round at {offset}: timed out, {state['count']} completed")
    lane.intervals.append(state["last"] - start)
    lane.tasks += RUN_SIZE
    lane.runs += 1


async def measure_drain(work: Path, n: int, seed: int) -> tuple[list[Lane], dict[str, Any]]:
    cores_cpu = default_slots()["cpu"]
    lanes = [
        Lane(f"Fredica, max_workers=2, default slots (cpu={cores_cpu})", "fredica"),
        Lane("Fredica, max_workers=2, NOOP not inline (info)", "fredica", inline=False),
        Lane("Huey SqliteHuey, Consumer 2 threads", "huey"),
    ]
    info: dict[str, Any] = {}
    for i, lane in enumerate(lanes):
        if lane.kind == "fredica":
            lane.path = work / f"drain-{i}.db"
            lane.store = TaskStore(open_database(lane.path))
            lane.engine = WorkerEngine(
                lane.store,
                [NoopExecutor() if lane.inline else UsualNoop()],
                max_workers=MAX_WORKERS,
                slots=lane.slots,
            )
            await lane.engine.start(recover=False)

            def count_runs(event: Event, lane: Lane = lane) -> None:
                if isinstance(event, RunChanged):
                    lane.run_changes += 1

            lane.engine.bus.subscribe(count_runs)
        else:
            lane.path = work / "huey.db"
            lane.huey = make_huey(lane.path)
    conn = lanes[-1].huey.storage.conn
    info["huey_pragmas"] = {
        p: conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("journal_mode", "synchronous")
    }
    rng = random.Random(seed)
    rounds = max(1, n // RUN_SIZE)
    order = list(range(len(lanes)))
    try:
        for r in range(rounds):
            rng.shuffle(order)
            for i in order:
                lane = lanes[i]
                if lane.kind == "fredica":
                    await fredica_round(lane, r * RUN_SIZE)
                else:
                    huey_round(lane, r * RUN_SIZE)  # blocks the loop on purpose: nothing else runs
            print(f"# drain round {r + 1}/{rounds}", end="\r", file=sys.stderr)
        print(file=sys.stderr)
    finally:
        for lane in lanes:
            if lane.engine is not None:
                await lane.engine.stop()
            if lane.store is not None:
                await lane.store.close()
    for lane in lanes:
        if lane.kind == "fredica":
            bad = run_consistency(lane.path)  # type: ignore[arg-type]
            if bad:
                lane.problems.append(f"{bad} runs whose counters disagree with their tasks")
            conn2 = sqlite3.connect(lane.path)  # type: ignore[arg-type]
            left = conn2.execute("SELECT COUNT(*) FROM task WHERE status != 'completed'").fetchone()
            events = conn2.execute("SELECT COUNT(*) FROM task_event").fetchone()[0]
            conn2.close()
            if left[0]:
                lane.problems.append(f"{left[0]} tasks not completed")
            # "started" (claimed and started in one commit) and "completed" per task.
            if events != 2 * lane.tasks:
                lane.problems.append(f"{events} events, expected {2 * lane.tasks}")
        else:
            left = len(lane.huey)
            results = lane.huey.storage.result_store_size()
            if left:
                lane.problems.append(f"{left} messages left in the queue")
            if results != lane.tasks:
                lane.problems.append(f"{results} results stored, expected {lane.tasks}")
    return lanes, info


# --- 2. chain latency -------------------------------------------------------------------------


class TimedNoop(NoopExecutor):
    """NOOP that records when its ``execute`` is entered and when it returns (time.time, the
    store's clock). Not inline: the chain measures the hand-off every real task goes through
    (inline, a chain of NOOPs completes hundreds of links per commit)."""

    inline = False

    def __init__(self) -> None:
        self.entered: dict[str, float] = {}
        self.returned: dict[str, float] = {}

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        self.entered[task.id] = time.time()
        result = await super().execute(task, ctx)
        self.returned[task.id] = time.time()
        return result


async def measure_chain(work: Path, n: int) -> dict[str, Any]:
    path = work / "chain.db"
    store = TaskStore(open_database(path))
    tasks = [{"key": "c0", "type": "NOOP"}]
    tasks += [{"key": f"c{i}", "type": "NOOP", "depends_on": [f"c{i - 1}"]} for i in range(1, n)]
    created = await store.create_run(prepare_run(parse_spec({"tasks": tasks}), builtin_registry()))
    timed = TimedNoop()
    engine = WorkerEngine(store, [timed], max_workers=MAX_WORKERS)
    t0 = time.perf_counter()
    await asyncio.wait_for(engine.run(until_idle=True), 300)
    wall = time.perf_counter() - t0
    await engine.stop()
    rows = await store.list_tasks(created.run_id)
    await store.close()
    by_key = {t.key: t for t in rows}
    chain = [by_key[f"c{i}"] for i in range(n)]
    problems = []
    not_done = [t.key for t in chain if t.status != "completed"]
    if not_done:
        problems.append(f"{len(not_done)} tasks not completed (first: {not_done[0]})")
    table_ms, observed_ms, notice_ms, start_ms, period_ms = [], [], [], [], []
    for parent, child in itertools.pairwise(chain):
        if None in (parent.completed_at, child.started_at, parent.started_at):
            continue
        table_ms.append((child.started_at - parent.completed_at) * 1e3)  # type: ignore[operator]
        period_ms.append((child.started_at - parent.started_at) * 1e3)  # type: ignore[operator]
        if parent.id in timed.returned and child.id in timed.entered:
            observed_ms.append((timed.entered[child.id] - timed.returned[parent.id]) * 1e3)
            notice_ms.append((parent.completed_at - timed.returned[parent.id]) * 1e3)  # type: ignore[operator]
            start_ms.append((timed.entered[child.id] - child.started_at) * 1e3)  # type: ignore[operator]
    negative = sum(1 for v in table_ms if v < 0)
    if negative:
        problems.append(f"{negative} links whose child started before its parent completed")
    backwards = [
        t.key
        for t in chain
        if t.completed_at is not None and t.started_at is not None and t.completed_at < t.started_at
    ]
    if backwards:
        problems.append(f"{len(backwards)} tasks completed before they started")

    def stats(values: list[float]) -> dict[str, float]:
        if not values:
            return {"p50": float("nan"), "p99": float("nan"), "max": float("nan")}
        return {"p50": pct(values, 50), "p99": pct(values, 99), "max": max(values)}

    return {
        "tasks": n,
        "links": len(table_ms),
        "wall_s": wall,
        "table_ms": stats(table_ms),  # child started_at - parent completed_at
        "observed_ms": stats(observed_ms),  # parent execute returned -> child execute entered
        "notice_ms": stats(notice_ms),  # parent execute returned -> parent completed_at
        "start_ms": stats(start_ms),  # child started_at -> child execute entered
        "period_ms": stats(period_ms),  # parent started_at -> child started_at
        "problems": problems,
    }


# --- 3. start-up recovery ---------------------------------------------------------------------


RUN_INSERT = (
    "INSERT INTO workflow_run (id, template, status, total_tasks, done_tasks, pending_tasks, "
    "claimed_tasks, running_tasks, failed_tasks, cancelled_tasks, created_at) "
    "VALUES (?, 'bench-recovery', 'running', ?, 0, ?, 0, ?, 0, 0, ?)"
)
RUNNING_INSERT = (
    "INSERT INTO task (id, key, type, workflow_run_id, status, priority, depends_on, payload, "
    "retry_count, max_retries, progress, is_paused, is_pausable, created_at, claimed_at, "
    "started_at, heartbeat_at, unmet_deps, attempt, lease_token, worker_id, lease_until, "
    "resource, status_text, checkpoint) VALUES (?, ?, 'SLEEP', ?, 'running', 0, '[]', "
    '\'{"seconds": 30.0, "schema_version": 1}\', 0, 1, ?, 0, 1, ?, ?, ?, ?, 0, 1, ?, ?, ?, '
    "'io', ?, ?)"
)
DEPENDENT_INSERT = (
    "INSERT INTO task (id, key, type, workflow_run_id, status, priority, depends_on, payload, "
    "retry_count, max_retries, progress, is_paused, is_pausable, created_at, unmet_deps, "
    "attempt, resource) VALUES (?, ?, 'NOOP', ?, 'pending', 0, ?, '{\"schema_version\": 1}', "
    "0, 0, 0.0, 0, 1, ?, 1, 0, 'cpu')"
)
EDGE_INSERT = "INSERT INTO task_dependency (task_id, depends_on_id) VALUES (?, ?)"
EVENT_INSERT = (
    "INSERT INTO task_event (task_id, workflow_run_id, at, kind, detail) VALUES (?, ?, ?, ?, ?)"
)
DEAD_WORKER = "dead-host:4242:deadbeef"


def fill_interrupted(path: Path, n: int, seed: int) -> int:
    """``n`` SLEEP tasks running under a dead worker, in runs of ``RUN_SIZE``; every
    ``DEPENDENT_EVERY``-th has a pending NOOP downstream. Returns how many tasks in all."""
    ids = Ids(f"recovery-{seed}")
    rng = random.Random(seed)
    now = time.time()
    t0 = now - 3600
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")  # the fill only
    conn.execute("PRAGMA cache_size = -1000000")
    runs, running, dependents, edges, events = [], [], [], [], []
    total = 0
    for start in range(0, n, RUN_SIZE):
        k = min(RUN_SIZE, n - start)
        deps = len(range(0, k, DEPENDENT_EVERY))
        run_id = ids()
        runs.append((run_id, k + deps, deps, k, t0 + start * 1e-6))
        total += k + deps
        for j in range(k):
            i = start + j
            tid = ids()
            slept = round(rng.uniform(0, 29), 3)
            claimed = now - 60 + rng.random() * 30
            running.append(
                (
                    tid,
                    f"s{j}",
                    run_id,
                    round(100 * slept / 30, 3),
                    t0 + i * 1e-6,
                    claimed,
                    claimed,
                    claimed + 25,
                    ids(),
                    DEAD_WORKER,
                    claimed + 60,
                    f"{30 - slept:.1f} s left",
                    json.dumps({"slept": slept}),
                )
            )
            detail = json.dumps({"worker_id": DEAD_WORKER, "attempt": 1})
            events.append((tid, run_id, claimed, "claimed", detail))
            events.append((tid, run_id, claimed, "started", "null"))
            if j % DEPENDENT_EVERY == 0:
                did = ids()
                dependents.append((did, f"d{j}", run_id, json.dumps([tid]), t0 + i * 1e-6 + 5e-7))
                edges.append((did, tid))
    conn.execute("BEGIN")
    conn.executemany(RUN_INSERT, runs)
    conn.executemany(RUNNING_INSERT, running)
    conn.executemany(DEPENDENT_INSERT, dependents)
    conn.executemany(EDGE_INSERT, edges)
    conn.executemany(EVENT_INSERT, events)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return total


async def measure_recovery(work: Path, n: int, seed: int) -> dict[str, Any]:
    path = work / "recovery.db"
    open_database(path).dispose()
    t = time.perf_counter()
    total = fill_interrupted(path, n, seed)
    fill_s = time.perf_counter() - t
    bad_before = run_consistency(path)
    t = time.perf_counter()
    db = open_database(path)
    open_s = time.perf_counter() - t
    store = TaskStore(db)
    engine = WorkerEngine(store, [NoopExecutor(), SleepExecutor()], max_workers=MAX_WORKERS)
    t = time.perf_counter()
    report = await engine.start(recover=True)
    recover_s = time.perf_counter() - t
    await store.close()
    problems = []
    if bad_before:
        problems.append(f"the fill left {bad_before} runs with inconsistent counters")
    if report is None or report.resumed != n or report.total != n:
        problems.append(f"recovery report {report}, expected {n} resumed")
    conn = sqlite3.connect(path)
    try:
        statuses = dict(
            conn.execute("SELECT status, COUNT(*) FROM task GROUP BY status").fetchall()
        )
        log_rows = conn.execute(
            "SELECT COUNT(*) FROM restart_task_log WHERE session_id = ? AND action = 'resumed'",
            (engine.session_id,),
        ).fetchone()[0]
        log_all = conn.execute("SELECT COUNT(*) FROM restart_task_log").fetchone()[0]
        still_leased = conn.execute(
            "SELECT COUNT(*) FROM task WHERE lease_token IS NOT NULL OR worker_id IS NOT NULL"
        ).fetchone()[0]
        interrupted = conn.execute(
            "SELECT COUNT(*) FROM task WHERE type = 'SLEEP' AND retry_count = 0 "
            "AND interruptions = 1 AND checkpoint IS NOT NULL"
        ).fetchone()[0]
        claimable = conn.execute(
            "SELECT COUNT(*) FROM task INDEXED BY ix_task_claimable "
            "WHERE status = 'pending' AND unmet_deps = 0 AND NOT is_paused AND next_run_at IS NULL"
        ).fetchone()[0]
        run_status = dict(
            conn.execute("SELECT status, COUNT(*) FROM workflow_run GROUP BY status").fetchall()
        )
    finally:
        conn.close()
    bad_after = run_consistency(path)
    if statuses != {"pending": total}:
        problems.append(f"task statuses after recovery: {statuses}, expected all {total} pending")
    if log_rows != n or log_all != n:
        problems.append(f"restart_task_log has {log_all} rows ({log_rows} resumed), expected {n}")
    if still_leased:
        problems.append(f"{still_leased} tasks still carry a lease or a worker id")
    if interrupted != n:
        problems.append(
            f"{interrupted} SLEEP tasks with a checkpoint, one interruption and no retry used, "
            f"expected {n}"
        )
    if claimable != n:
        problems.append(f"{claimable} claimable tasks, expected {n} (dependents stay blocked)")
    if bad_after:
        problems.append(f"{bad_after} runs whose counters disagree with their tasks")
    if run_status != {"pending": len(range(0, n, RUN_SIZE))}:
        problems.append(f"run statuses after recovery: {run_status}")
    return {
        "interrupted": n,
        "tasks": total,
        "fill_s": fill_s,
        "open_s": open_s,
        "recover_s": recover_s,
        "resumed": report.resumed if report else None,
        "restart_log_rows": log_all,
        "statuses_after": statuses,
        "problems": problems,
    }


# --- 4. idle engine ---------------------------------------------------------------------------


async def measure_idle(work: Path, seconds: float) -> dict[str, Any]:
    store = TaskStore(open_database(work / "idle.db"))
    # Count the store's transactions (its two entry points), on this instance only.
    counts = {"read": 0, "write": 0}
    read, write = store._read, store._write

    async def counted_read(fn: Any, *args: Any) -> Any:
        counts["read"] += 1
        return await read(fn, *args)

    async def counted_write(fn: Any, *args: Any) -> Any:
        counts["write"] += 1
        return await write(fn, *args)

    store._read, store._write = counted_read, counted_write  # type: ignore[method-assign]
    engine = WorkerEngine(store, [NoopExecutor(), SleepExecutor()], max_workers=MAX_WORKERS)
    await engine.start()
    runner = asyncio.create_task(engine.run())
    await asyncio.sleep(0.2)  # past the first turn
    before = dict(counts)
    c0, p0, t0 = cpu_seconds(), time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    cpu, proc, elapsed = cpu_seconds() - c0, time.process_time() - p0, time.perf_counter() - t0
    reads, writes = counts["read"] - before["read"], counts["write"] - before["write"]
    await engine.stop()
    await asyncio.wait_for(runner, 10)
    await store.close()
    return {
        "seconds": elapsed,
        "cpu_s": proc,
        "cpu_s_rusage": cpu,
        "cpu_s_per_min": proc / elapsed * 60,
        "read_transactions": reads,
        "write_transactions": writes,
    }


# --- profiling --------------------------------------------------------------------------------

IDLE_FNS = ("'get' of '_queue.SimpleQueue'", "'poll' of 'select.epoll'", "acquire' of '_thread")


_where = profile_location


def _profile_lines(name: str, prof: cProfile.Profile, tasks: int) -> list[str]:
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    per = 1e3 / tasks
    busy = [(k, r) for k, r in stats.items() if not any(i in k[2] for i in IDLE_FNS)]
    idle = sum(r[2] for k, r in stats.items() if any(i in k[2] for i in IDLE_FNS))
    lines = [
        f"{name}: busy {sum(r[2] for _, r in busy) * per:.2f} ms per task "
        f"(waiting {idle * per:.2f} ms not counted)",
        "  top functions by own time: own ms, cumulative ms, calls (per task)",
    ]
    for key, row in sorted(busy, key=lambda kr: -kr[1][2])[:10]:
        own, cum, calls = row[2] * per, row[3] * per, row[1] / tasks
        lines.append(f"  {own:7.3f} {cum:7.3f} {calls:6.2f}  {_where(key)}")
    lines.append("  workers/ functions by cumulative time: cumulative ms, calls (per task)")
    mine = [(k, r) for k, r in stats.items() if "/workers/" in k[0]]
    for key, row in sorted(mine, key=lambda kr: -kr[1][3])[:10]:
        lines.append(f"  {row[3] * per:7.3f} {row[1] / tasks:6.2f}  {_where(key)}")
    return lines


async def profile_drain(work: Path) -> str:
    """cProfile of one engine drain of RUN_SIZE NOOPs (default slots): in the store's writer
    thread, where each transaction runs whole, and in the event-loop thread."""
    store = TaskStore(open_database(work / "profile.db"))
    await submit_noops(store, RUN_SIZE)
    engine = WorkerEngine(store, [NoopExecutor()], max_workers=MAX_WORKERS)
    loop = asyncio.get_running_loop()
    w_prof, m_prof = cProfile.Profile(), cProfile.Profile()
    await loop.run_in_executor(store._writer, w_prof.enable)
    m_prof.enable()
    t0 = time.perf_counter()
    await engine.run(until_idle=True)
    wall = time.perf_counter() - t0
    m_prof.disable()
    await loop.run_in_executor(store._writer, w_prof.disable)
    ticks = engine.stats.ticks
    await engine.stop()
    await store.close()
    lines = [
        f"=== cProfile of one drain of {RUN_SIZE} NOOPs (default slots): {wall:.2f} s, "
        f"{ticks} transactions; profiling slows Python code ===",
        *_profile_lines("writer thread (each transaction runs whole here)", w_prof, RUN_SIZE),
        *_profile_lines("event-loop thread (the engine, executors, thread hops)", m_prof, RUN_SIZE),
    ]
    return "\n".join(lines)


# --- report -----------------------------------------------------------------------------------


def table(rows: list[tuple[str, str, str, str]]) -> str:
    head = ("measure", "value", "detail", "target")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    out = [" | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def report_rows(
    drain: list[dict[str, Any]], chain: dict[str, Any], rec: dict[str, Any], idle: dict[str, Any]
) -> list[tuple[str, str, str, str]]:
    rows = []
    fred, huey = drain[0], drain[-1]
    for d in drain:
        detail = f"CPU {d['cpu_ms_per_task']:.2f} ms/task"
        if d["tasks_per_commit"]:
            detail += f", {d['tasks_per_commit']:.2f} tasks/commit"
        if d["run_changes_per_run"] is not None and d is not huey:
            detail += f", {d['run_changes_per_run']:.0f} RunChanged/run"
        spread = d["rounds_tasks_per_s"]
        if len(spread) > 1:
            detail += f", rounds {min(spread):.0f}-{max(spread):.0f}/s"
        rows.append(
            (
                f"drain {fmt_int(d['tasks'])}: {d['name']}",
                f"{d['tasks_per_s']:.0f} tasks/s",
                detail,
                ">= Huey" if d is fred else "",
            )
        )
    ratio = fred["tasks_per_s"] / huey["tasks_per_s"] if huey["tasks_per_s"] else 0.0
    rows.append(("drain: Fredica (default slots) / Huey", f"{ratio:.2f}x", "", ">= 1.00x"))
    if len(drain) > 2:
        r2 = drain[1]["tasks_per_s"] / huey["tasks_per_s"] if huey["tasks_per_s"] else 0.0
        rows.append(("drain: Fredica (NOOP not inline) / Huey", f"{r2:.2f}x", "info", ""))
    t, o = chain["table_ms"], chain["observed_ms"]
    rows.append(
        (
            f"chain {chain['tasks']}: child started_at - parent completed_at",
            f"p50 {t['p50']:.3f} ms, p99 {t['p99']:.3f} ms",
            f"max {t['max']:.3f} ms; both stamped in one transaction",
            f"p50 < {CHAIN_P50_MS:g}, p99 < {CHAIN_P99_MS:g} ms",
        )
    )
    rows.append(
        (
            "chain: observed hand-off (parent execute returned -> child execute entered)",
            f"p50 {o['p50']:.3f} ms, p99 {o['p99']:.3f} ms",
            f"max {o['max']:.3f} ms; returned -> completed_at p50 {chain['notice_ms']['p50']:.3f},"
            f" started_at -> entered p50 {chain['start_ms']['p50']:.3f} ms",
            f"p50 < {CHAIN_P50_MS:g}, p99 < {CHAIN_P99_MS:g} ms",
        )
    )
    rows.append(
        (
            "chain: link period (parent started_at -> child started_at)",
            f"p50 {chain['period_ms']['p50']:.3f} ms",
            f"p99 {chain['period_ms']['p99']:.3f} ms; chain wall {chain['wall_s']:.2f} s",
            "",
        )
    )
    rows.append(
        (
            f"recovery of {fmt_int(rec['interrupted'])} interrupted tasks (engine.start)",
            f"{rec['recover_s']:.3f} s",
            f"{fmt_int(rec['tasks'])} tasks in db; open_database {rec['open_s']:.2f} s, "
            f"fill {rec['fill_s']:.1f} s (untimed)",
            f"< {RECOVERY_S:g} s",
        )
    )
    rows.append(
        (
            f"idle engine.run() for {idle['seconds']:.0f} s",
            f"{idle['cpu_s_per_min']:.3f} CPU s/min",
            f"{idle['cpu_s']:.3f} CPU s; store transactions: {idle['read_transactions']} "
            f"read, {idle['write_transactions']} write",
            f"< {IDLE_CPU_PER_MIN:g} s/min",
        )
    )
    return rows


def checks(
    drain: list[dict[str, Any]], chain: dict[str, Any], rec: dict[str, Any], idle: dict[str, Any]
) -> list[dict[str, Any]]:
    fred, huey = drain[0], drain[-1]
    ratio = fred["tasks_per_s"] / huey["tasks_per_s"] if huey["tasks_per_s"] else 0.0
    drain_problems = [f"{d['name']}: {p}" for d in drain for p in d["problems"]]
    t, o = chain["table_ms"], chain["observed_ms"]
    found = [
        {
            "name": "drain throughput: Fredica (max_workers=2, default slots) >= Huey",
            "ok": ratio >= DRAIN_RATIO_TARGET,
            "detail": f"{fred['tasks_per_s']:.0f} vs {huey['tasks_per_s']:.0f} tasks/s "
            f"({ratio:.2f}x)",
        },
        {
            "name": "drain: every task done exactly as expected (both systems)",
            "ok": not drain_problems,
            "detail": "; ".join(drain_problems) or "all tasks completed, counters consistent",
        },
        {
            "name": "drain: at most 2 RunChanged events per run (running, completed; inline: "
            "pending -> completed)",
            "ok": all(1 <= d["run_changes_per_run"] <= 2 for d in drain if d is not huey),
            "detail": "; ".join(
                f"{d['name']}: {d['run_changes_per_run']:.0f} per run of {fmt_int(RUN_SIZE)}"
                for d in drain
                if d is not huey
            ),
        },
        {
            "name": f"chain latency from the task table: p50 < {CHAIN_P50_MS:g} ms and "
            f"p99 < {CHAIN_P99_MS:g} ms",
            "ok": t["p50"] < CHAIN_P50_MS and t["p99"] < CHAIN_P99_MS,
            "detail": f"p50 {t['p50']:.3f} ms, p99 {t['p99']:.3f} ms over {chain['links']} links",
        },
        {
            "name": "chain latency observed by the executors (same targets)",
            "ok": o["p50"] < CHAIN_P50_MS and o["p99"] < CHAIN_P99_MS,
            "detail": f"p50 {o['p50']:.3f} ms, p99 {o['p99']:.3f} ms",
        },
        {
            "name": "chain: every task completed, timestamps in order",
            "ok": not chain["problems"],
            "detail": "; ".join(chain["problems"]) or "ok",
        },
        {
            "name": f"start-up recovery of {fmt_int(rec['interrupted'])} tasks < {RECOVERY_S:g} s",
            "ok": rec["recover_s"] < RECOVERY_S,
            "detail": f"{rec['recover_s']:.3f} s",
        },
        {
            "name": "recovery: every task pending again, one restart_task_log row per task",
            "ok": not rec["problems"],
            "detail": "; ".join(rec["problems"])
            or f"{fmt_int(rec['tasks'])} pending, {fmt_int(rec['restart_log_rows'])} log rows",
        },
        {
            "name": f"idle engine CPU < {IDLE_CPU_PER_MIN:g} s per minute",
            "ok": idle["cpu_s_per_min"] < IDLE_CPU_PER_MIN,
            "detail": f"{idle['cpu_s_per_min']:.3f} s/min",
        },
    ]
    return found


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="1,000 drain, 100 chain, 10,000 recovery")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    p.add_argument(
        "--idle-seconds", type=float, help="idle measurement length (default 20; --quick: 5)"
    )
    p.add_argument("--drain", type=int, help="tasks per drain lane (default 5000; --quick: 1000)")
    p.add_argument("--chain", type=int, help="chain length (default 500; --quick: 100)")
    p.add_argument(
        "--recovery", type=int, help="interrupted tasks (default 100000; --quick: 10000)"
    )
    p.add_argument("--profile", action="store_true", help="then cProfile one engine drain")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tmpdir", help="where to make the temporary directory")
    args = p.parse_args(argv)
    q = args.quick
    args.drain = args.drain or (1_000 if q else 5_000)
    args.chain = args.chain or (100 if q else 500)
    args.recovery = args.recovery or (10_000 if q else 100_000)
    if args.idle_seconds is None:
        args.idle_seconds = 5.0 if q else 20.0
    return args


async def run_all(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    print("# drain", file=sys.stderr)
    lanes, out["drain_info"] = await measure_drain(work, args.drain, args.seed)
    out["drain"] = [lane.summary() for lane in lanes]
    print("# chain", file=sys.stderr)
    out["chain"] = await measure_chain(work, args.chain)
    print("# recovery", file=sys.stderr)
    out["recovery"] = await measure_recovery(work, args.recovery, args.seed)
    print(f"# idle {args.idle_seconds:g} s", file=sys.stderr)
    out["idle"] = await measure_idle(work, args.idle_seconds)
    if args.profile:
        print("# profile", file=sys.stderr)
        out["profile"] = await profile_drain(work)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="fredica-engine-bench-", dir=args.tmpdir))
    try:
        out = asyncio.run(run_all(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.perf_counter() - started
    load_after = os.getloadavg()
    import huey

    pragmas = out["drain_info"]["huey_pragmas"]
    print(
        "WorkerEngine benchmark (SQLite WAL, synchronous=FULL; max_workers=2)\n"
        f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}, huey "
        f"{huey.__version__} (journal_mode={pragmas['journal_mode']}, synchronous="
        f"{pragmas['synchronous']}), {os.cpu_count()} cores; load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after\n"
        f"drain lanes interleaved in rounds of {fmt_int(RUN_SIZE)} tasks (shuffled order); "
        "tasks/s = tasks / sum of each round's time (Fredica: engine.run(until_idle) "
        "returning after its last commit; Huey: consumer start -> last SIGNAL_COMPLETE)"
    )
    print()
    print(table(report_rows(out["drain"], out["chain"], out["recovery"], out["idle"])))
    print()
    print(
        "Huey is at-most-once (the message is deleted before the task runs); Fredica is "
        "at-least-once\n(leased claim, fenced completion, events and run counters, one group "
        "commit per engine turn)."
    )
    print(f"time: total {elapsed:.0f} s")
    print()
    found = checks(out["drain"], out["chain"], out["recovery"], out["idle"])
    for c in found:
        print(f"{'PASS' if c['ok'] else 'FAIL'}  {c['name']}: {c['detail']}")
    if "profile" in out:
        print()
        print(out["profile"])
    if args.json:
        print(
            json.dumps(
                {
                    "sqlite_version": sqlite3.sqlite_version,
                    "huey_version": huey.__version__,
                    "cores": os.cpu_count(),
                    "load_average": [load_before, load_after],
                    **{k: v for k, v in out.items() if k != "profile"},
                    "checks": found,
                    "elapsed_s": elapsed,
                },
                indent=2,
                default=str,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
