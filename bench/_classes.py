"""Claims for a free slot of one class behind other classes' queued work (part of claim.py).

Two tables, measured interleaved in blocks taken in a shuffled order:

- *empty*: no task at all;
- *loaded*: ``cpu`` claimable ``cpu`` tasks (priorities 0-9) and ``backoff`` tasks waiting for a
  retry timer a day away (``io`` and ``gpu``, ranked ahead of everything).

On each, through :meth:`TaskStore.claim` (``start=True``, one ``BEGIN IMMEDIATE`` transaction,
as the engine claims), a claim for a free ``io`` slot, a free ``gpu`` slot, and free ``gpu`` +
``io`` + ``net`` slots (what the engine asks for while its ``cpu`` slots are busy):

- that finds nothing;
- that finds the one ready task of the class (inserted, untimed, before each claim, in a run
  of its own; completed, untimed, after it).

The loaded table keeps its size: these claims never take a ``cpu`` task, and the waiting
retries never come due. Each case's p50 on the loaded table is compared with the same case on
the empty table measured in the same run (target: within 2x).
"""

from __future__ import annotations

import random
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # run as a script (bench/ is on sys.path) or imported as bench.<name>
    from _common import Ids, fmt_int, pct  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    from bench._common import Ids, fmt_int, pct
from workers.db import BUSY_TIMEOUT_MS, create_sqlite_engine
from workers.store import TaskStore

WORKER = "bench-classes"
RUN_SIZE = 1_000
BLOCK = 25  # claims per block; blocks of every lane are interleaved
RATIO_LIMIT = 2.0

#: case name → the slots the claim asks for, and the class of the task that "finds one" adds
CASES: dict[str, tuple[dict[str, int], str]] = {
    "io": ({"io": 1}, "io"),
    "gpu": ({"gpu": 1}, "gpu"),
    "gpu+io+net": ({"gpu": 1, "io": 4, "net": 4}, "net"),
}

RUN_INSERT = (
    "INSERT INTO workflow_run (id, template, status, total_tasks, done_tasks, pending_tasks, "
    "claimed_tasks, running_tasks, failed_tasks, cancelled_tasks, created_at) "
    "VALUES (?, 'bench', 'pending', ?, 0, ?, 0, 0, 0, 0, ?)"
)
TASK_INSERT = (
    "INSERT INTO task (id, key, type, workflow_run_id, status, priority, depends_on, payload, "
    "retry_count, max_retries, progress, is_paused, is_pausable, created_at, unmet_deps, attempt, "
    "resource, next_run_at) VALUES (?, ?, 'NOOP', ?, 'pending', ?, '[]', "
    "'{\"schema_version\": 1}', ?, ?, 0.0, 0, 1, ?, 0, ?, ?, ?)"
)


def _insert(
    conn: sqlite3.Connection,
    ids: Ids,
    rng: random.Random,
    n: int,
    resources: list[str],
    t0: float,
    *,
    retry_at: float | None = None,
) -> None:
    """``n`` pending tasks in runs of ``RUN_SIZE`` with consistent counters, inside the caller's
    transaction. With ``retry_at``: waiting for a retry timer (attempt 1, retry 1 of 3),
    ranked ahead of every other task."""
    for start in range(0, n, RUN_SIZE):
        k = min(RUN_SIZE, n - start)
        run_id = ids()
        conn.execute(RUN_INSERT, (run_id, k, k, t0 + start * 1e-6))
        conn.executemany(
            TASK_INSERT,
            (
                (
                    ids(),
                    f"t{j}",
                    run_id,
                    100 if retry_at else rng.randrange(10),
                    1 if retry_at else 0,
                    3 if retry_at else 0,
                    t0 + (start + j) * 1e-6,
                    1 if retry_at else 0,
                    resources[(start + j) % len(resources)],
                    retry_at,
                )
                for j in range(k)
            ),
        )


def fill(path: Path, cpu: int, backoff: int, seed: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")  # the fill only
    conn.execute("BEGIN")
    ids, rng = Ids(f"classes-{seed}"), random.Random(seed)
    now = time.time()
    _insert(conn, ids, rng, cpu, ["cpu"], now - 3600)
    _insert(conn, ids, rng, backoff, ["io", "gpu"], now - 7200, retry_at=now + 86_400)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


@dataclass
class Lane:
    table: str  # "empty" or "loaded"
    case: str
    finds: bool
    samples: list[float] = field(default_factory=list)


class Table:
    """One database: the store that claims, and a connection that adds the ready tasks."""

    def __init__(self, path: Path, seed: str) -> None:
        self.store = TaskStore(create_sqlite_engine(path))
        self._conn = sqlite3.connect(path, isolation_level=None)
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA synchronous = OFF")
        self._ids = Ids(seed)
        self._rng = random.Random(seed)

    def add_ready(self, resource: str) -> None:
        self._conn.execute("BEGIN IMMEDIATE")
        _insert(self._conn, self._ids, self._rng, 1, [resource], time.time())
        self._conn.execute("COMMIT")

    async def close(self) -> None:
        self._conn.close()
        await self.store.close()


async def _block(table: Table, lane: Lane, n: int) -> None:
    slots, resource = CASES[lane.case]
    clock = time.perf_counter
    for _ in range(n):
        if lane.finds:
            table.add_ready(resource)
        t0 = clock()
        claimed = await table.store.claim(WORKER, slots=slots, limit=1, start=True)
        lane.samples.append(clock() - t0)
        if len(claimed) != int(lane.finds) or (claimed and claimed[0].task.resource != resource):
            raise RuntimeError(f"{lane.table} {lane.case}: claimed {claimed!r}")
        for c in claimed:
            if not await table.store.complete(c.id, c.lease_token, {}):
                raise RuntimeError("the store refused a completion")


def _plan(path: Path) -> list[str]:
    """EXPLAIN QUERY PLAN of the store's claim for three classes (when the store has it)."""
    try:
        from workers.store import _hot

        sql = _hot.claim_sql(3)
    except (ImportError, AttributeError, TypeError):
        return ["(the store's claim for several classes is not available)"]
    now = time.time()
    params = {
        "new_status": "running",
        "now": now,
        "started_at": now,
        "token": "x",
        "worker_id": WORKER,
        "lease_until": now,
        "r0": "gpu",
        "r1": "io",
        "r2": "net",
    }
    conn = sqlite3.connect(path)
    try:
        return [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
    finally:
        conn.close()


async def measure_classes(
    work: Path, template: Path, cpu: int, backoff: int, claims: int, seed: int
) -> dict[str, Any]:
    """Build both tables from the migrated ``template`` and measure every lane."""
    import shutil

    paths = {"empty": work / "classes-empty.db", "loaded": work / "classes-loaded.db"}
    for p in paths.values():
        shutil.copyfile(template, p)
    t = time.perf_counter()
    fill(paths["loaded"], cpu, backoff, seed)
    fill_s = time.perf_counter() - t
    print(
        f"# classes: filled {fmt_int(cpu)} cpu + {fmt_int(backoff)} waiting in {fill_s:.1f} s",
        file=sys.stderr,
    )
    plan = _plan(paths["loaded"])
    tables = {name: Table(p, f"classes-ready-{seed}-{name}") for name, p in paths.items()}
    lanes = [
        Lane(table, case, finds) for table in tables for case in CASES for finds in (False, True)
    ]
    rng = random.Random(seed)
    warmup = max(5, claims // 10)
    try:
        done, total = 0, warmup + claims
        while done < total:
            k = min(BLOCK, total - done)
            rng.shuffle(lanes)
            for lane in lanes:
                await _block(tables[lane.table], lane, k)
            done += k
            print(f"# classes: {done}/{total} claims per lane", end="\r", file=sys.stderr)
        print(file=sys.stderr)
    finally:
        for table in tables.values():
            await table.close()
    rows = []
    by = {(lane.table, lane.case, lane.finds): lane.samples[warmup:] for lane in lanes}
    for case in CASES:
        for finds in (False, True):
            empty, loaded = by[("empty", case, finds)], by[("loaded", case, finds)]
            rows.append(
                {
                    "case": case,
                    "finds": "one task" if finds else "nothing",
                    "empty_p50_ms": pct(empty, 50) * 1e3,
                    "empty_p99_ms": pct(empty, 99) * 1e3,
                    "loaded_p50_ms": pct(loaded, 50) * 1e3,
                    "loaded_p99_ms": pct(loaded, 99) * 1e3,
                    "ratio_p50": pct(loaded, 50) / pct(empty, 50),
                }
            )
    return {"cpu": cpu, "backoff": backoff, "claims": claims, "rows": rows, "plan": plan}


def report(result: dict[str, Any]) -> str:
    head = ("slots free", "finds", "empty p50", "empty p99", "loaded p50", "loaded p99", "ratio")
    rows = [
        (
            r["case"],
            r["finds"],
            f"{r['empty_p50_ms']:.3f}",
            f"{r['empty_p99_ms']:.3f}",
            f"{r['loaded_p50_ms']:.3f}",
            f"{r['loaded_p99_ms']:.3f}",
            f"{r['ratio_p50']:.2f}x",
        )
        for r in result["rows"]
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    out = [
        f"Claims for a free class (ms, TaskStore.claim with start=True, one transaction each): "
        f"an empty queue vs {fmt_int(result['cpu'])} claimable cpu tasks + "
        f"{fmt_int(result['backoff'])} io/gpu tasks waiting for a retry timer; "
        f"{result['claims']} claims per lane",
        "",
        " | ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)),
        "-+-".join("-" * w for w in widths),
    ]
    out += [" | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    out += ["", "plan of the claim for gpu+io+net: " + " / ".join(result["plan"])]
    return "\n".join(out)


def checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    worst = max(result["rows"], key=lambda r: r["ratio_p50"])
    return [
        {
            "name": f"claim p50 for a free class with {fmt_int(result['cpu'])} cpu tasks + "
            f"{fmt_int(result['backoff'])} waiting retries within {RATIO_LIMIT:g}x of the empty "
            "queue's",
            "ok": worst["ratio_p50"] <= RATIO_LIMIT,
            "detail": f"worst {worst['ratio_p50']:.2f}x ({worst['case']}, finds "
            f"{worst['finds']}: {worst['empty_p50_ms']:.3f} -> {worst['loaded_p50_ms']:.3f} ms)",
        }
    ]
