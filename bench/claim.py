"""Claim+complete benchmark of the task queue on SQLite.

For tables of 1k, 100k and 1M claimable tasks, each with 0 and with 100k blocked tasks ranked
ahead of them (a higher priority, but ``unmet_deps = 1`` on a parent task that never completes),
it measures:

- the cycle ``await store.claim("bench", limit=1)`` + ``await store.complete(id, token, {})``
  through :class:`workers.store.TaskStore`: cycles per second and the claim's p50/p99 latency;
- the same cycle with raw ``sqlite3`` on a copy of the same database - same pragmas (WAL,
  ``synchronous=FULL``), ``BEGIN IMMEDIATE``, the same statements as ``_claim_tx`` /
  ``_complete_tx`` / ``_apply_run_delta`` - as the physical reference, and the store/raw ratio;
- whether the claim's query plan uses the partial index ``ix_task_claimable``;
- then claims for a free slot of one class behind 200k queued ``cpu`` tasks and 10k waiting
  retries, against the same claims on an empty queue (``bench/_classes.py``).

The tables are filled with bulk INSERTs through ``sqlite3`` (``synchronous=OFF`` during the fill
only), in runs of 1,000 tasks with consistent counters; the fill is not measured. All the
configurations are then cycled together, in blocks of 100 cycles taken round after round in a
shuffled order, so that whatever else the machine is doing hits them alike. After each block as
many new pending tasks are inserted (untimed), so each table keeps its size. Throughput is
cycles / time spent inside the cycles.

The targets are printed as PASS/FAIL lines; a miss does not change the exit status.

    .venv/bin/python bench/claim.py [--sizes 1000,100000,1000000] [--cycles 2000] [--quick]
                                    [--class-claims 300] [--json] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib
import json
import pstats
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

try:  # run as a script (bench/ is on sys.path) or imported as bench.<name>
    import _classes  # type: ignore[import-not-found]
    from _common import Ids, fmt_int, inconsistent_runs, pct, profile_location  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    from bench import _classes
    from bench._common import Ids, fmt_int, inconsistent_runs, pct, profile_location
from fredica_app.database import open_database
from workers.db import BUSY_TIMEOUT_MS, create_sqlite_engine
from workers.store import TaskStore

WORKER = "bench"
RUN_SIZE = 1_000  # tasks per workflow_run
REFILL = 100  # cycles per block; as many new tasks are inserted after each block
CLAIMABLE_PRIORITIES = 10  # claimable tasks get a priority in 0..9
BLOCKED_PRIORITY = 1_000  # blocked tasks rank ahead of every claimable one

# Targets.
FLAT_LIMIT = 2.0
RATIO_TARGET = 0.25

# The store's claim (workers/store/_hot.py, claim_sql(None): no resource filter), for the raw
# reference; it runs after PROMOTE_DUE_SQL, as the store's.
CLAIM_SQL = """
UPDATE task SET status = :new_status, claimed_at = :now, started_at = :started_at,
       heartbeat_at = :now, lease_token = :token, attempt = attempt + 1,
       worker_id = :worker_id, lease_until = :lease_until, next_run_at = NULL
WHERE id = (
    SELECT id FROM task INDEXED BY ix_task_claimable
    WHERE status = 'pending' AND unmet_deps = 0 AND NOT is_paused AND next_run_at IS NULL
    ORDER BY priority DESC, created_at
    LIMIT 1
)
RETURNING *
"""
PROMOTE_DUE_SQL = (
    "UPDATE task INDEXED BY ix_task_retry_due SET next_run_at = NULL "
    "WHERE status = 'pending' AND next_run_at IS NOT NULL AND next_run_at <= :now"
)

# The same inner SELECT without the INDEXED BY hint: would the planner pick the index anyway?
UNHINTED_SELECT = """
SELECT id FROM task
WHERE status = 'pending' AND unmet_deps = 0 AND NOT is_paused AND next_run_at IS NULL
ORDER BY priority DESC, created_at
LIMIT 1
"""

# _complete_tx, as SQLAlchemy renders it.
COMPLETE_SQL = (
    "UPDATE task SET status = 'completed', result = ?, error = NULL, error_type = NULL, "
    "progress = 100.0, completed_at = ?, lease_token = NULL, lease_until = NULL "
    "WHERE id = ? AND lease_token = ? AND status IN ('claimed', 'running') "
    "RETURNING workflow_run_id, started_at"
)
DEPENDENTS_SQL = (
    "UPDATE task SET unmet_deps = unmet_deps - 1 "
    "WHERE id IN (SELECT task_id FROM task_dependency WHERE depends_on_id = ?)"
)
EVENT_SQL = (
    "INSERT INTO task_event (task_id, workflow_run_id, at, kind, detail) VALUES (?, ?, ?, ?, ?)"
)
RUN_STATUS_SQL = "UPDATE workflow_run SET status = ?, completed_at = ? WHERE id = ?"

# Bulk fill.
RUN_INSERT = (
    "INSERT INTO workflow_run (id, template, status, total_tasks, done_tasks, pending_tasks, "
    "claimed_tasks, running_tasks, failed_tasks, cancelled_tasks, created_at) "
    "VALUES (?, 'bench', ?, ?, 0, ?, 0, ?, 0, 0, ?)"
)
TASK_INSERT = (
    "INSERT INTO task (id, key, type, workflow_run_id, status, priority, depends_on, payload, "
    "retry_count, max_retries, progress, is_paused, is_pausable, created_at, unmet_deps, attempt, "
    "resource) VALUES (?, ?, 'NOOP', ?, 'pending', ?, ?, ?, 0, 0, 0.0, 0, 1, ?, ?, 0, 'cpu')"
)
EDGE_INSERT = "INSERT INTO task_dependency (task_id, depends_on_id) VALUES (?, ?)"


# --- building the databases -------------------------------------------------------------------


def _fill_connection(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")  # the fill only; the measured connections use FULL
    conn.execute("PRAGMA cache_size = -1000000")  # 1 GB: random uuid keys into big indexes
    return conn


def _close_filled(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def insert_pending(
    conn: sqlite3.Connection,
    n: int,
    ids: Ids,
    rng: random.Random,
    t0: float,
    *,
    parent: str | None = None,
) -> None:
    """Insert ``n`` pending tasks in new runs of ``RUN_SIZE``, inside the caller's transaction.

    Without ``parent`` they are claimable, with a priority in ``0..CLAIMABLE_PRIORITIES-1``;
    with it, they depend on ``parent`` (``unmet_deps = 1``, an edge in ``task_dependency``)
    and rank ahead of every claimable task."""
    runs = []
    plan: list[tuple[str, int, int]] = []  # run id, first index, size
    for start in range(0, n, RUN_SIZE):
        k = min(RUN_SIZE, n - start)
        run_id = ids()
        runs.append((run_id, "pending", k, k, 0, t0 + start * 1e-6))
        plan.append((run_id, start, k))
    depends_on = json.dumps([parent]) if parent else "[]"
    unmet = 1 if parent else 0
    edges: list[tuple[str, str]] = []

    def rows() -> Iterator[tuple[Any, ...]]:
        for run_id, start, k in plan:
            for j in range(k):
                i = start + j
                tid = ids()
                prio = BLOCKED_PRIORITY if parent else rng.randrange(CLAIMABLE_PRIORITIES)
                payload = f'{{"schema_version": 1, "n": {i}}}'
                if parent:
                    edges.append((tid, parent))
                yield (tid, f"t{j}", run_id, prio, depends_on, payload, t0 + i * 1e-6, unmet)

    conn.executemany(RUN_INSERT, runs)
    conn.executemany(TASK_INSERT, rows())
    if edges:
        conn.executemany(EDGE_INSERT, edges)


def fill_claimable(path: Path, n: int, seed: int) -> None:
    conn = _fill_connection(path)
    conn.execute("BEGIN")
    insert_pending(conn, n, Ids(f"fill-{seed}"), random.Random(seed), time.time() - 3600)
    conn.execute("COMMIT")
    _close_filled(conn)


def add_blocked(path: Path, n: int, seed: int) -> None:
    """``n`` tasks ranked ahead that can never be claimed: each depends on one parent task held
    ``running`` by another worker with a lease that never ends (in a run of its own)."""
    ids = Ids(f"blocked-{seed}")
    now = time.time()
    t0 = now - 86_400  # older than the claimable tasks too
    conn = _fill_connection(path)
    conn.execute("BEGIN")
    parent_run, parent = ids(), ids()
    conn.execute(RUN_INSERT, (parent_run, "running", 1, 0, 1, t0))
    conn.execute(
        "INSERT INTO task (id, key, type, workflow_run_id, status, priority, depends_on, payload, "
        "created_at, claimed_at, started_at, heartbeat_at, attempt, lease_token, worker_id, "
        "lease_until, resource) VALUES (?, 'parent', 'NOOP', ?, 'running', ?, '[]', "
        "'{\"schema_version\": 1}', ?, ?, ?, ?, 1, ?, 'blocker', ?, 'cpu')",
        (parent, parent_run, BLOCKED_PRIORITY, t0, now, now, now, ids(), now + 10 * 365 * 86_400),
    )
    insert_pending(conn, n, ids, random.Random(seed), t0 + 1, parent=parent)
    conn.execute("COMMIT")
    _close_filled(conn)


def remove_db(path: Path) -> None:
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)


class Refiller:
    """Keeps a table at its size: inserts new claimable tasks between blocks (untimed)."""

    def __init__(self, path: Path, seed: str) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None)
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA synchronous = OFF")
        self._ids = Ids(seed)
        self._rng = random.Random(seed)

    def __call__(self, n: int) -> None:
        self._conn.execute("BEGIN IMMEDIATE")
        insert_pending(self._conn, n, self._ids, self._rng, time.time())
        self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()


# --- the raw reference ------------------------------------------------------------------------


def _derive_run_status(
    pending: int, claimed: int, running: int, failed: int, cancelled: int
) -> str:
    """workers.states.derive_run_status on plain counts."""
    if failed > 0:
        return "failed"
    if pending + claimed + running == 0:
        return "cancelled" if cancelled > 0 else "completed"
    if claimed + running > 0:
        return "running"
    return "pending"


class RawQueue:
    """The store's claim and completion, statement for statement, on a bare sqlite3
    connection with the same pragmas (workers.db.configure_sqlite_connection)."""

    def __init__(self, path: Path) -> None:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        self.conn = conn
        self._last = 0.0
        self._cols: dict[str, int] | None = None
        self._run_cols: dict[str, int] | None = None

    def now(self) -> float:
        now = time.time()
        if now <= self._last:
            now = self._last + 1e-6
        self._last = now
        return now

    def claim(self, lease_seconds: float = 60.0) -> tuple[str, str] | None:
        conn = self.conn
        now = self.now()
        token = str(uuid.uuid4())
        params = {
            "new_status": "claimed",
            "now": now,
            "started_at": None,
            "token": token,
            "worker_id": WORKER,
            "lease_until": now + lease_seconds,
        }
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(PROMOTE_DUE_SQL, {"now": now})
            cur = conn.execute(CLAIM_SQL, params)
            rows = cur.fetchall()
            if not rows:
                conn.execute("COMMIT")
                return None
            if self._cols is None:
                self._cols = {d[0]: i for i, d in enumerate(cur.description)}
            row = rows[0]
            task_id = row[self._cols["id"]]
            run_id = row[self._cols["workflow_run_id"]]
            detail = {"worker_id": WORKER, "attempt": row[self._cols["attempt"]]}
            if run_id:
                self._run_delta(run_id, {"pending_tasks": -1, "claimed_tasks": 1}, now)
            conn.execute(EVENT_SQL, (task_id, run_id, now, "claimed", json.dumps(detail)))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return task_id, token

    def complete(self, task_id: str, token: str, result: dict[str, Any]) -> bool:
        conn = self.conn
        now = self.now()
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows = conn.execute(COMPLETE_SQL, (json.dumps(result), now, task_id, token)).fetchall()
            if not rows:
                conn.execute("COMMIT")
                return False
            run_id, started_at = rows[0]
            was = "running_tasks" if started_at is not None else "claimed_tasks"
            conn.execute(DEPENDENTS_SQL, (task_id,))
            if run_id:
                self._run_delta(run_id, {was: -1, "done_tasks": 1}, now)
            # SQLAlchemy's JSON type stores None as the JSON text 'null'.
            conn.execute(EVENT_SQL, (task_id, run_id, now, "completed", "null"))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return True

    def _run_delta(self, run_id: str, delta: dict[str, int], now: float) -> None:
        sets = ", ".join(f"{c} = {c} + ?" for c in delta)
        cur = self.conn.execute(
            f"UPDATE workflow_run SET {sets} WHERE id = ? RETURNING *", (*delta.values(), run_id)
        )
        row = cur.fetchall()[0]
        if self._run_cols is None:
            self._run_cols = {d[0]: i for i, d in enumerate(cur.description)}
        c = self._run_cols
        status = _derive_run_status(
            row[c["pending_tasks"]],
            row[c["claimed_tasks"]],
            row[c["running_tasks"]],
            row[c["failed_tasks"]],
            row[c["cancelled_tasks"]],
        )
        if status != row[c["status"]]:
            finished = status in ("completed", "failed", "cancelled")
            self.conn.execute(RUN_STATUS_SQL, (status, now if finished else None, run_id))

    def close(self) -> None:
        self.conn.close()


# --- query plan and consistency ---------------------------------------------------------------


def store_claim_sql() -> tuple[str, str]:
    """The claim statement the store runs (a private constant, looked up where it has lived),
    or else the bench's copy; and where it came from."""
    for name in ("workers.store", "workers.store._hot"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        build = getattr(module, "claim_sql", None)
        if callable(build):
            try:
                return build(None), name
            except TypeError:
                pass
        sql = getattr(module, "CLAIM_SQL", None)
        if isinstance(sql, str) and "{resource_filter}" in sql:
            return sql.format(resource_filter=""), name
    return CLAIM_SQL, "bench copy"


def claim_plan(path: Path) -> dict[str, Any]:
    """EXPLAIN QUERY PLAN of the store's claim statement (its inner SELECT is in the plan) and
    of the same SELECT without the INDEXED BY hint."""
    sql, source = store_claim_sql()
    now = time.time()
    params = {
        "new_status": "claimed",
        "now": now,
        "started_at": None,
        "token": "x",
        "worker_id": WORKER,
        "lease_until": now,
    }
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        hinted = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
        bare = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + UNHINTED_SELECT, {"now": now})]
    finally:
        conn.close()
    return {
        "sql_from": source,
        "raw_sql_matches_store": " ".join(sql.split()) == " ".join(CLAIM_SQL.split()),
        "plan": hinted,
        "uses_index": any("ix_task_claimable" in d for d in hinted),
        "sorts": any("TEMP B-TREE" in d for d in hinted),
        "unhinted_plan": bare,
        "unhinted_uses_index": any("ix_task_claimable" in d for d in bare),
    }


def check_consistency(path: Path, expected_events: int) -> list[str]:
    """Problems found: every run's counters against its tasks, the event count, leftovers."""
    conn = sqlite3.connect(path)
    try:
        bad_runs = inconsistent_runs(conn)
        events = conn.execute("SELECT COUNT(*) FROM task_event").fetchone()[0]
        held = conn.execute(
            "SELECT COUNT(*) FROM task WHERE status IN ('claimed', 'running') AND worker_id = ?",
            (WORKER,),
        ).fetchone()[0]
    finally:
        conn.close()
    problems = []
    if bad_runs:
        problems.append(f"{bad_runs} runs whose counters disagree with their tasks")
    if events != expected_events:
        problems.append(f"{events} events, expected {expected_events}")
    if held:
        problems.append(f"{held} tasks still held by the bench")
    return problems


# --- measuring --------------------------------------------------------------------------------


@dataclass
class Samples:
    claim: list[float] = field(default_factory=list)
    cycle: list[float] = field(default_factory=list)


async def store_block(store: TaskStore, n: int, out: Samples) -> None:
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        claimed = await store.claim(WORKER, limit=1)
        t1 = clock()
        if not claimed:
            raise RuntimeError("the store found nothing to claim")
        task = claimed[0]
        if not await store.complete(task.id, task.lease_token, {}):
            raise RuntimeError("the store refused a completion")
        out.claim.append(t1 - t0)
        out.cycle.append(clock() - t0)


def raw_block(raw: RawQueue, n: int, out: Samples) -> None:
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        claimed = raw.claim()
        t1 = clock()
        if claimed is None:
            raise RuntimeError("raw sqlite3 found nothing to claim")
        if not raw.complete(claimed[0], claimed[1], {}):
            raise RuntimeError("raw sqlite3 refused a completion")
        out.claim.append(t1 - t0)
        out.cycle.append(clock() - t0)


def summary(samples: Samples, warmup: int) -> dict[str, float]:
    claim, cycle = samples.claim[warmup:], samples.cycle[warmup:]
    return {
        "cycles": len(cycle),
        "cycles_per_s": len(cycle) / sum(cycle),
        "claim_p50_ms": pct(claim, 50) * 1e3,
        "claim_p99_ms": pct(claim, 99) * 1e3,
        "cycle_p50_ms": pct(cycle, 50) * 1e3,
    }


@dataclass
class Config:
    """One table: ``size`` claimable tasks and ``blocked`` blocked ones ranked ahead; a copy of
    the database for the store and one for raw sqlite3."""

    size: int
    blocked: int
    store_path: Path
    raw_path: Path
    plan: dict[str, Any] = field(default_factory=dict)
    store_samples: Samples = field(default_factory=Samples)
    raw_samples: Samples = field(default_factory=Samples)
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{fmt_int(self.size)} tasks + {fmt_int(self.blocked)} blocked"


@dataclass
class Result:
    size: int
    blocked: int
    store: dict[str, float]
    raw: dict[str, float]
    ratio: float
    plan: dict[str, Any]
    problems: list[str]


async def measure_all(configs: list[Config], cycles: int, warmup: int, seed: int) -> None:
    """Every configuration's store and raw cycles, in blocks of ``REFILL`` cycles taken round
    after round in a shuffled order."""
    stores: list[TaskStore] = []
    raws: list[RawQueue] = []
    refills: list[Refiller] = []
    rng = random.Random(seed)
    try:
        for i, cfg in enumerate(configs):
            stores.append(TaskStore(create_sqlite_engine(cfg.store_path)))
            raws.append(RawQueue(cfg.raw_path))
            # The same seed for both copies: they get the same new tasks.
            refills += [
                Refiller(cfg.store_path, f"refill-{seed}-{i}"),
                Refiller(cfg.raw_path, f"refill-{seed}-{i}"),
            ]
        lanes = [(i, side) for i in range(len(configs)) for side in (0, 1)]
        done, total = 0, warmup + cycles
        while done < total:
            k = min(REFILL, total - done)
            rng.shuffle(lanes)
            for i, side in lanes:
                if side == 0:
                    await store_block(stores[i], k, configs[i].store_samples)
                else:
                    raw_block(raws[i], k, configs[i].raw_samples)
                refills[2 * i + side](k)
            done += k
            print(f"# {done}/{total} cycles per configuration", end="\r", file=sys.stderr)
        print(file=sys.stderr)
    finally:
        for refill in refills:
            refill.close()
        for raw in raws:
            raw.close()
        for store in stores:
            await store.close()


def result_of(cfg: Config, warmup: int) -> Result:
    store_sum, raw_sum = summary(cfg.store_samples, warmup), summary(cfg.raw_samples, warmup)
    return Result(
        size=cfg.size,
        blocked=cfg.blocked,
        store=store_sum,
        raw=raw_sum,
        ratio=store_sum["cycles_per_s"] / raw_sum["cycles_per_s"],
        plan=cfg.plan,
        problems=cfg.problems,
    )


# --- profiling --------------------------------------------------------------------------------


IDLE = ("'get' of '_queue.SimpleQueue'", "'poll' of 'select.epoll'")  # waiting, not working


def _idle(fn: str) -> bool:
    return any(i in fn for i in IDLE)


_where = profile_location


def _kind(key: tuple[str, int, str]) -> str:
    file, _line, fn = key
    if _idle(fn):
        return "idle: waiting for work"
    if "sqlite3.Connection' objects" in fn and "commit" in fn:
        return "sqlite3 COMMIT (WAL write + fsync)"
    if "sqlite3" in fn:
        return "sqlite3 execute/fetch (the SQL itself)"
    if "sqlalchemy/sql/" in file:
        return "SQLAlchemy sql/: building statements, cache keys, compiling"
    if "sqlalchemy/engine/" in file:
        return "SQLAlchemy engine/: executing, result rows, transactions"
    if "sqlalchemy/" in file:
        return "SQLAlchemy other: pool, events, util"
    if "/workers/" in file:
        return "workers/: store, records, states"
    return "other: stdlib (uuid, json, threads, asyncio, ...)"


def _profile_report(name: str, prof: cProfile.Profile, cycles: int) -> str:
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    per = 1e3 / cycles
    kinds: dict[str, float] = {}
    for key, row in stats.items():
        kinds[_kind(key)] = kinds.get(_kind(key), 0.0) + row[2]
    idle = kinds.pop("idle: waiting for work", 0.0)
    busy = sum(kinds.values())
    lines = [
        f"{name}: busy {busy * per:.2f} ms per cycle (idle {idle * per:.2f} ms not counted)",
        "  own time by kind, ms per cycle:",
    ]
    for kind, tt in sorted(kinds.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {tt * per:8.3f}  {tt / busy:4.0%}  {kind}")
    lines.append("  top functions by own time: own ms, cumulative ms, calls (per cycle)")
    busy_rows = [(k, r) for k, r in stats.items() if not _idle(k[2])]
    for key, row in sorted(busy_rows, key=lambda kr: -kr[1][2])[:12]:
        lines.append(
            f"  {row[2] * per:8.3f} {row[3] * per:8.3f} {row[1] / cycles:6.1f}  {_where(key)}"
        )
    store_rows = [(k, r) for k, r in stats.items() if "/workers/" in k[0]]
    if store_rows:
        lines.append("  the store's functions by cumulative time: cumulative ms, calls (per cycle)")
        for key, row in sorted(store_rows, key=lambda kr: -kr[1][3])[:8]:
            lines.append(f"  {row[3] * per:8.3f} {row[1] / cycles:6.1f}  {_where(key)}")
    return "\n".join(lines)


async def profile_store(path: Path, cycles: int, warmup: int, seed: int) -> str:
    """cProfile of the store cycle, inside the store's writer thread (where each transaction
    runs whole) and in the event-loop thread."""
    store = TaskStore(create_sqlite_engine(path))
    refill = Refiller(path, f"profile-{seed}")
    loop = asyncio.get_running_loop()
    writer = store._writer  # the store's one writer thread: the profiler must run inside it
    w_prof, m_prof = cProfile.Profile(), cProfile.Profile()
    samples = Samples()
    try:
        await store_block(store, warmup, Samples())
        refill(warmup)
        await loop.run_in_executor(writer, w_prof.enable)
        done = 0
        while done < cycles:
            k = min(REFILL, cycles - done)
            m_prof.enable()
            await store_block(store, k, samples)
            m_prof.disable()
            refill(k)
            done += k
        await loop.run_in_executor(writer, w_prof.disable)
    finally:
        refill.close()
        await store.close()
    return "\n".join(
        [
            f"=== cProfile of the store cycle: {cycles} cycles on one table; a profiled cycle "
            f"takes {sum(samples.cycle) * 1e3 / cycles:.2f} ms (profiling slows Python code) ===",
            _profile_report("writer thread (each transaction runs whole here)", w_prof, cycles),
            _profile_report("event-loop thread (awaits, thread hops)", m_prof, cycles),
        ]
    )


# --- report -----------------------------------------------------------------------------------


def table(results: list[Result]) -> str:
    head = (
        "claimable",
        "blocked ahead",
        "store cyc/s",
        "claim p50 ms",
        "claim p99 ms",
        "raw cyc/s",
        "raw p50 ms",
        "raw p99 ms",
        "store/raw",
        "ix_task_claimable",
    )
    rows = [
        (
            fmt_int(r.size),
            fmt_int(r.blocked),
            f"{r.store['cycles_per_s']:.0f}",
            f"{r.store['claim_p50_ms']:.3f}",
            f"{r.store['claim_p99_ms']:.3f}",
            f"{r.raw['cycles_per_s']:.0f}",
            f"{r.raw['claim_p50_ms']:.3f}",
            f"{r.raw['claim_p99_ms']:.3f}",
            f"{r.ratio:.1%}",
            ("yes" if r.plan["uses_index"] else "NO") + (" (sorts!)" if r.plan["sorts"] else ""),
        )
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    out = [" | ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(out)


def checks(results: list[Result], blocked: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    by = {(r.size, r.blocked): r for r in results}
    sizes = sorted({r.size for r in results})
    variants = sorted({r.blocked for r in results})

    def p50(size: int, b: int) -> float:
        return by[(size, b)].store["claim_p50_ms"]

    if len(sizes) > 1:
        for b in variants:
            vals = [p50(s, b) for s in sizes]
            spread = max(vals) / min(vals)
            listed = ", ".join(
                f"{fmt_int(s)}: {v:.3f} ms" for s, v in zip(sizes, vals, strict=True)
            )
            found.append(
                {
                    "name": f"claim p50 flat from {fmt_int(sizes[0])} to {fmt_int(sizes[-1])} "
                    f"tasks, {fmt_int(b)} blocked",
                    "ok": spread <= FLAT_LIMIT,
                    "detail": f"{listed}; max/min {spread:.2f}x (limit {FLAT_LIMIT:g}x)",
                }
            )
    if blocked and len(variants) == 2:
        worst, worst_size, parts = 0.0, sizes[0], []
        for s in sizes:
            a, b = p50(s, 0), p50(s, blocked)
            spread = max(a, b) / min(a, b)
            parts.append(f"{fmt_int(s)}: {a:.3f} -> {b:.3f} ms")
            if spread > worst:
                worst, worst_size = spread, s
        found.append(
            {
                "name": f"claim p50 flat with {fmt_int(blocked)} blocked ahead vs 0 blocked",
                "ok": worst <= FLAT_LIMIT,
                "detail": "; ".join(parts)
                + f"; worst {worst:.2f}x at {fmt_int(worst_size)} (limit {FLAT_LIMIT:g}x)",
            }
        )
    worst_r = min(results, key=lambda r: r.ratio)
    misses = [f"{fmt_int(r.size)}/{fmt_int(r.blocked)}" for r in results if r.ratio < RATIO_TARGET]
    found.append(
        {
            "name": f"store throughput >= {RATIO_TARGET:.0%} of raw sqlite3 in every configuration",
            "ok": not misses,
            "detail": f"worst {worst_r.ratio:.1%} at {fmt_int(worst_r.size)} tasks + "
            f"{fmt_int(worst_r.blocked)} blocked"
            + (f"; misses (tasks/blocked): {', '.join(misses)}" if misses else ""),
        }
    )
    no_index = [
        f"{fmt_int(r.size)}/{fmt_int(r.blocked)}" for r in results if not r.plan["uses_index"]
    ]
    found.append(
        {
            "name": "the claim's plan uses ix_task_claimable",
            "ok": not no_index,
            "detail": f"not in (tasks/blocked): {', '.join(no_index)}"
            if no_index
            else "in every configuration",
        }
    )
    return found


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--sizes",
        help="claimable tasks per table, comma-separated "
        "(default 1000,100000,1000000; --quick: 1000,100000)",
    )
    p.add_argument(
        "--cycles", type=int, help="measured cycles per configuration (default 2000; --quick: 500)"
    )
    p.add_argument("--warmup", type=int, help="unmeasured cycles first (default cycles/10)")
    p.add_argument(
        "--blocked",
        type=int,
        default=100_000,
        help="blocked tasks ranked ahead in the second variant (default 100000; 0: no variant)",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer cycles")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    p.add_argument(
        "--profile",
        action="store_true",
        help="then cProfile the store cycle on the first table",
    )
    p.add_argument(
        "--class-claims",
        type=int,
        help="claims per lane of the free-class case (default 300; --quick: 100; 0: skip it)",
    )
    p.add_argument(
        "--class-cpu",
        type=int,
        default=200_000,
        help="claimable cpu tasks in the free-class case (default 200000)",
    )
    p.add_argument(
        "--class-backoff",
        type=int,
        default=10_000,
        help="tasks waiting for a retry timer in the free-class case (default 10000)",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tmpdir", help="where to make the temporary directory")
    args = p.parse_args(argv)
    if args.sizes:
        args.sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    else:
        args.sizes = [1_000, 100_000] if args.quick else [1_000, 100_000, 1_000_000]
    if args.cycles is None:
        args.cycles = 500 if args.quick else 2_000
    if args.warmup is None:
        args.warmup = max(50, args.cycles // 10)
    if args.class_claims is None:
        args.class_claims = 100 if args.quick else 300
    return args


def build(work: Path, sizes: list[int], blocked: int, seed: int) -> tuple[list[Config], str]:
    """Every configuration's two database files, and a note on how long the fills took."""
    template = work / "template.db"
    open_database(template).dispose()
    _close_filled(sqlite3.connect(template))  # checkpoint: the copies need only the main file
    configs: list[Config] = []
    notes = []
    for size in sizes:
        t = time.perf_counter()
        base = work / f"base-{size}.db"
        shutil.copyfile(template, base)
        fill_claimable(base, size, seed)
        note = f"{fmt_int(size)} tasks {time.perf_counter() - t:.1f} s"
        for b in [0, blocked] if blocked else [0]:
            t = time.perf_counter()
            cfg = Config(size, b, work / f"store-{size}-{b}.db", work / f"raw-{size}-{b}.db")
            shutil.copyfile(base, cfg.store_path)
            if b:
                add_blocked(cfg.store_path, b, seed)
                note += f" (+{fmt_int(b)} blocked {time.perf_counter() - t:.1f} s)"
            shutil.copyfile(cfg.store_path, cfg.raw_path)
            cfg.plan = claim_plan(cfg.raw_path)
            configs.append(cfg)
        remove_db(base)
        notes.append(note)
        print(f"# built {note}", file=sys.stderr)
    return configs, ", ".join(notes)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="fredica-bench-", dir=args.tmpdir))
    profile = ""
    classes: dict[str, Any] | None = None
    try:
        configs, build_note = build(work, args.sizes, args.blocked, args.seed)
        build_s = time.perf_counter() - started
        t = time.perf_counter()
        asyncio.run(measure_all(configs, args.cycles, args.warmup, args.seed))
        measure_s = time.perf_counter() - t
        events = 2 * (args.cycles + args.warmup)
        for cfg in configs:
            cfg.problems += [f"store: {p}" for p in check_consistency(cfg.store_path, events)]
            cfg.problems += [f"raw: {p}" for p in check_consistency(cfg.raw_path, events)]
        if args.class_claims > 0:
            classes = asyncio.run(
                _classes.measure_classes(
                    work,
                    work / "template.db",
                    args.class_cpu,
                    args.class_backoff,
                    args.class_claims,
                    args.seed,
                )
            )
        if args.profile:
            cfg = configs[0]
            print(f"# profiling the store on {cfg.label}", file=sys.stderr)
            profile = asyncio.run(
                profile_store(cfg.store_path, args.cycles, args.warmup, args.seed)
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results = [result_of(cfg, args.warmup) for cfg in configs]
    elapsed = time.perf_counter() - started

    print(
        "Claim+complete cycle: TaskStore vs raw sqlite3 (WAL, synchronous=FULL, BEGIN IMMEDIATE)\n"
        f"{args.cycles} cycles per configuration after {args.warmup} warm-up; configurations "
        f"interleaved in blocks of {REFILL} cycles,\neach table refilled to its size after each "
        f"block (untimed); cyc/s = cycles / time inside the cycles; SQLite "
        f"{sqlite3.sqlite_version}"
    )
    print()
    print(table(results))
    print()
    plan = results[-1].plan
    print(
        f"claim plan (the store's statement, from {plan['sql_from']}): {' / '.join(plan['plan'])}"
    )
    if not plan["raw_sql_matches_store"]:
        print("WARNING: the store's claim SQL differs from the raw reference's copy")
    picks = "picks it too" if plan["unhinted_uses_index"] else "does NOT pick it"
    print(f"without INDEXED BY the planner {picks}: {' / '.join(plan['unhinted_plan'])}")
    print(
        f"fill (bulk INSERT, not measured): {build_note}\n"
        f"time: build {build_s:.0f} s, cycles {measure_s:.0f} s, total {elapsed:.0f} s"
    )
    problems = [f"{fmt_int(r.size)}/{fmt_int(r.blocked)}: {p}" for r in results for p in r.problems]
    print("consistency after the cycles: " + ("ok" if not problems else "; ".join(problems)))
    print()
    if classes is not None:
        print(_classes.report(classes))
        print()
    found = checks(results, args.blocked) + (_classes.checks(classes) if classes else [])
    for c in found:
        print(f"{'PASS' if c['ok'] else 'FAIL'}  {c['name']}: {c['detail']}")
    if profile:
        print()
        print(profile)
    if args.json:
        print(
            json.dumps(
                {
                    "sqlite_version": sqlite3.sqlite_version,
                    "cycles": args.cycles,
                    "warmup": args.warmup,
                    "results": [asdict(r) for r in results],
                    "classes": classes,
                    "checks": found,
                    "elapsed_s": elapsed,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
