"""Retention benchmark: how long a prune's transactions hold the write lock, by batch size.

A database is filled (bulk ``sqlite3`` inserts, untimed) with ``--old-runs`` finished runs that
finished 60 days ago and ``--kept-runs`` that finished yesterday, each of ``--run-tasks`` tasks
(a chain: one ``task_dependency`` edge per task but the first; 3 timeline events per task;
a ``restart_task_log`` entry for the first task of each run), plus ``--old-events`` timeline
events from 100 days ago in one long-lived running run (what trimming events by age deletes).

For each batch size (tasks per transaction for runs, event ids per transaction for the
events), on its own copy of that database: the prune's batches, each timed on the store's
writer thread from ``BEGIN IMMEDIATE`` to the end of ``COMMIT`` (``synchronous=FULL``): how
long it held the write lock. Then the whole ``TaskStore.prune`` with the store's defaults,
checked against what must be left. A lane with foreign-key enforcement on shows why the
store turns it off for its run batches (``task_event.task_id`` has no index: each deleted task
makes SQLite scan the timeline).

    .venv/bin/python bench/prune.py [--quick] [--old-runs 20000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:  # run as a script (bench/ is on sys.path) or imported as bench.<name>
    from _common import Ids, fmt_int, inconsistent_runs, pct  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    from bench._common import Ids, fmt_int, inconsistent_runs, pct
from fredica_app.database import open_database
from workers.db import create_sqlite_engine
from workers.retention import DAY, RetentionPolicy
from workers.spec import parse_spec, prepare_run
from workers.store import TaskStore
from workers.store._retention import BATCH_TASKS, EVENT_WINDOW
from workers.tasktypes import builtin_registry

LOCK_TARGET_MS = 50.0

RUN_INSERT = (
    "INSERT INTO workflow_run (id, template, status, total_tasks, done_tasks, pending_tasks, "
    "claimed_tasks, running_tasks, failed_tasks, cancelled_tasks, created_at, completed_at) "
    "VALUES (?, 'bench', ?, ?, ?, 0, 0, ?, 0, 0, ?, ?)"
)
TASK_INSERT = (
    "INSERT INTO task (id, key, type, workflow_run_id, status, priority, depends_on, payload, "
    "result, retry_count, max_retries, progress, is_paused, is_pausable, created_at, "
    "claimed_at, started_at, completed_at, unmet_deps, attempt, resource, idempotency_key) "
    "VALUES (?, ?, 'NOOP', ?, ?, 0, ?, '{\"schema_version\": 1}', ?, 0, 0, 100.0, 0, 1, ?, ?, "
    "?, ?, 0, 1, 'cpu', ?)"
)
EDGE_INSERT = "INSERT INTO task_dependency (task_id, depends_on_id) VALUES (?, ?)"
EVENT_INSERT = (
    "INSERT INTO task_event (task_id, workflow_run_id, at, kind, detail) VALUES (?, ?, ?, ?, ?)"
)
LOG_INSERT = (
    "INSERT INTO restart_task_log (session_id, task_id, task_type, workflow_run_id, "
    "status_at_restart, progress, action, disposition, created_at, updated_at) "
    "VALUES ('s', ?, 'NOOP', ?, 'running', 50.0, 'resumed', 'pending_review', ?, ?)"
)


def add_runs(
    conn: sqlite3.Connection, ids: Ids, n: int, size: int, finished_at: float, key: str
) -> None:
    """``n`` completed runs of ``size`` chained tasks that finished at ``finished_at``."""
    runs, tasks, edges, events, logs = [], [], [], [], []
    for r in range(n):
        run_id = ids()
        t0 = finished_at - 60 + r * 1e-3
        runs.append((run_id, "completed", size, size, 0, t0, finished_at + r * 1e-3))
        previous = None
        for i in range(size):
            tid = ids()
            at = t0 + i * 1e-2
            deps = json.dumps([previous] if previous else [])
            tasks.append(
                (tid, f"t{i}", run_id, "completed", deps, "{}", at, at, at, at, f"{key}:{tid}")
            )
            if previous:
                edges.append((tid, previous))
            for kind in ("claimed", "started", "completed"):
                events.append((tid, run_id, at, kind, None))
            if i % 10 == 0:
                logs.append((tid, run_id, at, at))
            previous = tid
    conn.executemany(RUN_INSERT, runs)
    conn.executemany(TASK_INSERT, tasks)
    conn.executemany(EDGE_INSERT, edges)
    conn.executemany(EVENT_INSERT, events)
    conn.executemany(LOG_INSERT, logs)


def add_old_events(conn: sqlite3.Connection, ids: Ids, n: int, at: float) -> None:
    """One long-lived running run with a running task and ``n`` events from ``at`` on."""
    run_id, tid = ids(), ids()
    conn.execute(RUN_INSERT, (run_id, "running", 1, 0, 1, at, None))
    conn.execute(TASK_INSERT, (tid, "long", run_id, "running", "[]", None, at, at, at, None, None))
    conn.executemany(
        EVENT_INSERT,
        ((tid, run_id, at + i * 1e-3, "progress_note", None) for i in range(n)),
    )


def build(work: Path, args: argparse.Namespace) -> Path:
    path = work / "base.db"
    open_database(path).dispose()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")  # the fill only
    conn.execute("PRAGMA cache_size = -500000")
    ids, now = Ids("prune"), time.time()
    conn.execute("BEGIN")
    add_old_events(conn, ids, args.old_events, now - 100 * DAY)  # the oldest first, as in life
    # Old and kept runs interleaved, so that they share the indexes' pages.
    step = max(1, args.old_runs // 20)
    kept_step = max(1, args.kept_runs // 20)
    for i in range(20):
        add_runs(conn, ids, step, args.run_tasks, now - 60 * DAY + i, f"old{i}")
        add_runs(conn, ids, kept_step, args.run_tasks, now - DAY + i, f"kept{i}")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


async def timed_batches(
    path: Path,
    *,
    runs_batch: int | None,
    event_window: int | None,
    foreign_keys: bool = False,
    max_batches: int | None = None,
) -> dict[str, Any]:
    """Run one kind of batch to the end (or ``max_batches``); each transaction's time."""
    store = TaskStore(create_sqlite_engine(path))
    times: list[float] = []
    rows = 0
    scan = 0.0
    started = time.perf_counter()
    try:
        cutoff = store.now() - 30 * DAY
        if runs_batch is not None:
            while max_batches is None or len(times) < max_batches:
                counts, took = await store._timed_write(
                    foreign_keys, store._prune_runs_tx, cutoff, runs_batch
                )
                if counts is None:
                    break
                times.append(took)
                rows += counts["tasks"]
                await store._between_batches()
        if event_window is not None:
            cutoff = store.now() - 90 * DAY
            t = time.perf_counter()
            span = await store._read(store._old_event_ids_tx, cutoff)
            scan = time.perf_counter() - t
            lo, last = span if span is not None else (1, 0)
            while lo <= last:
                hi = min(lo + event_window, last + 1)
                deleted, took = await store._timed_write(
                    True, store._prune_events_tx, lo, hi, cutoff
                )
                times.append(took)
                rows += deleted
                lo = hi
                await store._between_batches()
    finally:
        await store.close()
    wall = time.perf_counter() - started
    return {
        "transactions": len(times),
        "rows": rows,
        "rows_per_s": rows / wall if wall else 0.0,
        "p50_ms": pct(times, 50) * 1e3 if times else 0.0,
        "p99_ms": pct(times, 99) * 1e3 if times else 0.0,
        "max_ms": max(times) * 1e3 if times else 0.0,
        "read_ms": scan * 1e3,
    }


async def big_run(path: Path, size: int) -> dict[str, float]:
    """A run larger than a batch goes alone in one transaction: its deletion against its
    creation (``create_run``, one transaction too), on the same database."""
    store = TaskStore(create_sqlite_engine(path))
    try:
        spec = parse_spec({"tasks": [{"key": f"t{i}", "type": "NOOP"} for i in range(size)]})
        prepared = prepare_run(spec, builtin_registry())
        t = time.perf_counter()
        created = await store.create_run(prepared)
        create_s = time.perf_counter() - t
        long_ago = store.now() - 200 * DAY  # older than every other run: the first to go
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute(
                "UPDATE task SET status = 'completed', completed_at = ? WHERE workflow_run_id = ?",
                (long_ago, created.run_id),
            )
            conn.execute(
                "UPDATE workflow_run SET status = 'completed', done_tasks = total_tasks, "
                "pending_tasks = 0, completed_at = ? WHERE id = ?",
                (long_ago, created.run_id),
            )
        finally:
            conn.close()
        await store._between_batches()
        counts, delete_s = await store._timed_write(
            False, store._prune_runs_tx, long_ago + 1, BATCH_TASKS
        )
        assert counts is not None and counts["tasks"] == size, counts
    finally:
        await store.close()
    return {"create_ms": create_s * 1e3, "delete_ms": delete_s * 1e3}


async def whole_prune(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    store = TaskStore(create_sqlite_engine(path))
    try:
        policy = RetentionPolicy.from_days(30, 90)
        dry = await store.prune(policy, dry_run=True)
        t = time.perf_counter()
        report = await store.prune(policy)
        wall = time.perf_counter() - t
        again = await store.prune(policy)
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    try:
        left = {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("workflow_run", "task", "task_dependency", "task_event", "restart_task_log")
        }
        fk = conn.execute("PRAGMA foreign_key_check").fetchall()
        bad_runs = inconsistent_runs(conn)
    finally:
        conn.close()
    kept_runs = (args.kept_runs // 20) * 20 + 1
    kept_tasks = (args.kept_runs // 20) * 20 * args.run_tasks + 1
    problems = []
    if dry.as_json() | {"dry_run": False, "transactions": 0, "longest_transaction_ms": 0} != (
        report.as_json() | {"transactions": 0, "longest_transaction_ms": 0}
    ):
        problems.append(f"the dry run said {dry}, the prune did {report}")
    if (left["workflow_run"], left["task"]) != (kept_runs, kept_tasks):
        problems.append(f"left {left}, expected {kept_runs} runs, {kept_tasks} tasks")
    if fk or bad_runs:
        problems.append(f"foreign_key_check: {len(fk)} rows; runs inconsistent: {bad_runs}")
    if again.removed:
        problems.append(f"a second prune removed more: {again}")
    return {
        "report": report.as_json(),
        "wall_s": wall,
        "left": left,
        "problems": problems,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="a smaller database")
    p.add_argument("--old-runs", type=int, help="finished runs to delete (default 20000)")
    p.add_argument("--kept-runs", type=int, help="recent runs to keep (default 20000)")
    p.add_argument("--run-tasks", type=int, default=5, help="tasks per run (default 5)")
    p.add_argument("--old-events", type=int, help="old events to trim (default 500000)")
    p.add_argument("--batches", default="50,100,200,500,1000", help="tasks per run batch")
    p.add_argument("--windows", default="2000,5000,10000,20000", help="event ids per batch")
    p.add_argument("--json", action="store_true")
    p.add_argument("--tmpdir", help="where to make the temporary directory")
    args = p.parse_args(argv)
    q = args.quick
    args.old_runs = args.old_runs or (2_000 if q else 20_000)
    args.kept_runs = args.kept_runs or (2_000 if q else 20_000)
    args.old_events = args.old_events or (50_000 if q else 500_000)
    args.batches = [int(b) for b in args.batches.split(",")]
    args.windows = [int(w) for w in args.windows.split(",")]
    return args


async def run_all(base: Path, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": {}, "events": {}}

    def copy(name: str) -> Path:
        path = work / f"{name}.db"
        shutil.copyfile(base, path)
        return path

    for b in args.batches:
        out["runs"][b] = await timed_batches(copy(f"runs-{b}"), runs_batch=b, event_window=None)
        print(f"# runs, batches of {b} tasks: {out['runs'][b]}", file=sys.stderr)
    out["fk_on"] = await timed_batches(
        copy("fk-on"), runs_batch=100, event_window=None, foreign_keys=True, max_batches=5
    )
    print(f"# runs with foreign keys enforced: {out['fk_on']}", file=sys.stderr)
    for w in args.windows:
        out["events"][w] = await timed_batches(copy(f"events-{w}"), runs_batch=None, event_window=w)
        print(f"# events, windows of {w} ids: {out['events'][w]}", file=sys.stderr)
    out["big"] = {n: await big_run(copy(f"big-{n}"), n) for n in (1_000, 5_000)}
    print(f"# one big run: {out['big']}", file=sys.stderr)
    out["whole"] = await whole_prune(copy("whole"), args)
    return out


def table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    out = [" | ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def lane_row(name: str, r: dict[str, Any]) -> tuple[str, ...]:
    return (
        name,
        fmt_int(r["transactions"]),
        f"{r['rows_per_s']:,.0f}",
        f"{r['p50_ms']:.1f}",
        f"{r['p99_ms']:.1f}",
        f"{r['max_ms']:.1f}",
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="fredica-prune-bench-", dir=args.tmpdir))
    try:
        t = time.perf_counter()
        base = build(work, args)
        build_s = time.perf_counter() - t
        print(f"# built in {build_s:.1f} s ({base.stat().st_size / 1e6:.0f} MB)", file=sys.stderr)
        out = asyncio.run(run_all(base, work, args))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = ("batch", "transactions", "rows/s", "p50 ms", "p99 ms", "max ms")
    print(
        f"Prune: {fmt_int(args.old_runs)} finished runs of {args.run_tasks} tasks to delete "
        f"among {fmt_int(args.kept_runs)} kept; {fmt_int(args.old_events)} old events to trim "
        f"(SQLite {sqlite3.sqlite_version}, synchronous=FULL); ms = write lock held per "
        "transaction"
    )
    print()
    rows = [lane_row(f"{b} tasks", r) for b, r in out["runs"].items()]
    rows.append(lane_row("100 tasks, FKs on", out["fk_on"]))
    print(table(("runs: " + head[0], *head[1:]), rows))
    print()
    rows = [lane_row(f"{w} ids", r) for w, r in out["events"].items()]
    print(table(("events: " + head[0], *head[1:]), rows))
    reads = [f"{r['read_ms']:.0f}" for r in out["events"].values()]
    print(f"finding the old events' ids (a read, no lock held): {', '.join(reads)} ms")
    big = ", ".join(
        f"{fmt_int(n)} tasks: deleted in {r['delete_ms']:.0f} ms, "
        f"created in {r['create_ms']:.0f} ms"
        for n, r in out["big"].items()
    )
    print(f"one run larger than a batch, in one transaction: {big}")
    print()
    whole = out["whole"]
    rep = whole["report"]
    print(
        f"TaskStore.prune with its defaults ({BATCH_TASKS} tasks, {EVENT_WINDOW} event ids): "
        f"{fmt_int(rep['runs'])} runs, {fmt_int(rep['tasks'])} tasks, "
        f"{fmt_int(rep['events'])} events with them, {fmt_int(rep['old_events'])} old events, "
        f"{fmt_int(rep['restart_log'])} restart-log rows in {fmt_int(rep['transactions'])} "
        f"transactions, {whole['wall_s']:.1f} s; longest transaction "
        f"{rep['longest_transaction_ms']:.1f} ms"
    )
    print("checks after it: " + ("ok" if not whole["problems"] else "; ".join(whole["problems"])))
    ok = rep["longest_transaction_ms"] <= LOCK_TARGET_MS
    print(
        f"{'PASS' if ok else 'FAIL'}  every prune transaction holds the write lock <= "
        f"{LOCK_TARGET_MS:g} ms: longest {rep['longest_transaction_ms']:.1f} ms"
    )
    if args.json:
        print(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
