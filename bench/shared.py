"""Several engines on one queue: PostgreSQL against SQLite, and against procrastinate.

Three figures, side by side in one run (docs/performance.md, *Several hosts*):

1. **Claims per second** with 1, 2 and 4 worker processes, each with its own store, each
   looping ``claim(limit=1, start=True)`` + ``complete`` until the queue is empty — on a fresh
   PostgreSQL database and on a fresh SQLite file.
2. **A drain of N SLEEP-0 tasks** by 1, 2 and 4 ``WorkerEngine`` processes (``max_workers``
   4 each) on PostgreSQL, against procrastinate's workers (concurrency 4 each) draining N
   no-op jobs on the same server, in the same run.
3. **The time from a host's death to its task running elsewhere**: an engine in a child
   process runs a long SLEEP and is killed (SIGKILL); an engine here, looking for leases that
   ran out every heartbeat, starts the task again. The target is the lease plus one
   heartbeat (plus a claim's latency).

The PostgreSQL server is ``FREDICA_TEST_PG_URL`` (default: 127.0.0.1:5432, trust auth); each
part makes a database of its own and drops it.

    python -m bench.shared [--tasks 5000] [--claims 3000] [--workers 1,2,4]
                           [--lease 3 --heartbeat 0.5] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from fredica_app.database import migrate, open_database
from tests.support import postgres
from workers.db import create_engine_for_url, create_postgres_engine, sqlite_url
from workers.engine import WorkerEngine
from workers.executors.diagnostic import NoopExecutor, SleepExecutor
from workers.spec import parse_spec, prepare_run
from workers.states import TaskStatus
from workers.store import TaskStore
from workers.tasktypes import builtin_registry

RUN_SIZE = 1_000


# --- databases ------------------------------------------------------------------------------


@contextmanager
def pg_database(tag: str) -> Iterator[str]:
    """A new PostgreSQL database with Fredica's schema; its URL. Dropped at the end."""
    admin = sa.create_engine(postgres.server_url(), isolation_level="AUTOCOMMIT")
    name = f"fredica_bench_{tag}_{os.getpid()}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = sa.make_url(postgres.server_url()).set(database=name)
    text = url.render_as_string(hide_password=False)
    engine = create_postgres_engine(text)
    migrate(engine)
    engine.dispose()
    try:
        yield text
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@contextmanager
def sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fredica.db"
        open_database(path).dispose()
        yield sqlite_url(path)


async def fill(url: str, n: int, task: dict[str, Any]) -> None:
    """``n`` tasks like ``task``, in runs of RUN_SIZE."""
    store = TaskStore(create_engine_for_url(url))
    registry = builtin_registry()
    try:
        for start in range(0, n, RUN_SIZE):
            count = min(RUN_SIZE, n - start)
            tasks = [{**task, "key": f"t{start + i}"} for i in range(count)]
            await store.create_run(prepare_run(parse_spec({"tasks": tasks}), registry))
    finally:
        await store.close()


def completed(url: str) -> int:
    engine = create_engine_for_url(url)
    with engine.connect() as conn:
        n = conn.exec_driver_sql("SELECT count(*) FROM task WHERE status = 'completed'").scalar()
    engine.dispose()
    return int(n or 0)


# --- 1. claims per second -------------------------------------------------------------------


def _claim_loop(url: str, worker: str, start_at: float, out: Any) -> None:
    async def loop() -> int:
        store = TaskStore(create_engine_for_url(url))
        done = 0
        try:
            await asyncio.sleep(max(0.0, start_at - time.time()))
            while True:
                claims = await store.claim(worker, limit=1, start=True)
                if not claims:
                    return done
                await store.complete(claims[0].id, claims[0].lease_token, {})
                done += 1
        finally:
            await store.close()

    began = time.time()
    n = asyncio.run(loop())
    out.put((n, max(began, start_at), time.time()))


def processes(
    target: Callable[..., None], n: int, args: Callable[[int, Any], tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """Run ``target`` in ``n`` spawned processes; what each put on its queue."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=args(i, out)) for i in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=900) for _ in procs]
    for p in procs:
        p.join(60)
    return results


def claims_per_second(url: str, n_tasks: int, workers: int) -> float:
    asyncio.run(fill(url, n_tasks, {"type": "NOOP"}))
    start_at = time.time() + 3.0  # every process started and connected
    results = processes(_claim_loop, workers, lambda i, out: (url, f"w{i}", start_at, out))
    assert sum(r[0] for r in results) == n_tasks, results
    took = max(r[2] for r in results) - start_at
    return n_tasks / took


# --- 2. drains: Fredica's engines, procrastinate's workers ------------------------------------


def _engine_drain(url: str, start_at: float, out: Any) -> None:
    async def drain() -> None:
        store = TaskStore(create_engine_for_url(url))
        engine = WorkerEngine(store, [NoopExecutor(), SleepExecutor()], max_workers=4)
        await engine.start(recover=False)
        await asyncio.sleep(max(0.0, start_at - time.time()))
        await engine.run(until_idle=True)
        await engine.stop()
        await store.close()

    asyncio.run(drain())
    out.put((time.time(),))


def fredica_drain(url: str, n_tasks: int, workers: int) -> float:
    asyncio.run(fill(url, n_tasks, {"type": "SLEEP", "payload": {"seconds": 0}}))
    start_at = time.time() + 4.0
    results = processes(_engine_drain, workers, lambda i, out: (url, start_at, out))
    assert completed(url) == n_tasks
    return max(r[0] for r in results) - start_at


def _procrastinate_app(url: str) -> Any:
    import logging

    import procrastinate

    # (It warns that the app is made in __main__: harmless here, where each process makes it.)
    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    conninfo = sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo))

    @app.task(name="sleep0")
    async def sleep0() -> None:
        await asyncio.sleep(0)

    return app


def _procrastinate_worker(url: str, start_at: float, out: Any) -> None:
    async def drain() -> None:
        app = _procrastinate_app(url)
        async with app.open_async():
            await asyncio.sleep(max(0.0, start_at - time.time()))
            await app.run_worker_async(concurrency=4, wait=False, install_signal_handlers=False)

    asyncio.run(drain())
    out.put((time.time(),))


def procrastinate_drain(url: str, n_tasks: int, workers: int) -> float:
    async def setup() -> None:
        app = _procrastinate_app(url)
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
            task = app.tasks["sleep0"]
            for start in range(0, n_tasks, RUN_SIZE):
                count = min(RUN_SIZE, n_tasks - start)
                await task.batch_defer_async(*({} for _ in range(count)))

    asyncio.run(setup())
    start_at = time.time() + 4.0
    results = processes(_procrastinate_worker, workers, lambda i, out: (url, start_at, out))
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        done = conn.exec_driver_sql(
            "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
        ).scalar()
    engine.dispose()
    assert done == n_tasks, done
    return max(r[0] for r in results) - start_at


# --- 3. a host's death to its task running elsewhere ------------------------------------------


def _doomed_engine(url: str, lease: float, heartbeat: float, out: Any) -> None:
    async def run() -> None:
        store = TaskStore(create_engine_for_url(url), lease_seconds=lease)
        engine = WorkerEngine(store, [SleepExecutor()], heartbeat_interval=heartbeat)
        await engine.start(recover=False)
        task = asyncio.create_task(engine.run())
        while not engine.running_ids:  # noqa: ASYNC110 - a poll of the engine's state
            await asyncio.sleep(0.01)
        out.put(("running", os.getpid()))
        await task

    asyncio.run(run())


async def failover(url: str, lease: float, heartbeat: float) -> float:
    await fill(url, 1, {"type": "SLEEP", "payload": {"seconds": 3600}})
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    doomed = ctx.Process(target=_doomed_engine, args=(url, lease, heartbeat, out))
    doomed.start()
    _, pid = await asyncio.to_thread(out.get, True, 120)
    store = TaskStore(create_engine_for_url(url), lease_seconds=lease)
    engine = WorkerEngine(store, [SleepExecutor()], heartbeat_interval=heartbeat)
    await engine.start(recover=False)
    runner = asyncio.create_task(engine.run())
    await asyncio.sleep(heartbeat * 2)  # both engines settled, the lease renewed
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    doomed.join(30)
    while not engine.running_ids:  # noqa: ASYNC110 - a poll of the engine's state
        await asyncio.sleep(0.01)
    took = time.monotonic() - killed
    [task_id] = engine.running_ids
    task = await store.get_task(task_id)
    assert task.attempt == 2 and task.status is TaskStatus.RUNNING
    await engine.stop(drain_timeout=0.1)
    await asyncio.wait_for(runner, 30)
    await store.close()
    return took


# --- the run ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=5000, help="tasks per drain")
    p.add_argument("--claims", type=int, default=3000, help="tasks per claims-per-second run")
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--lease", type=float, default=3.0, help="the failover's lease, s")
    p.add_argument("--heartbeat", type=float, default=0.5, help="the failover's heartbeat, s")
    p.add_argument("--quick", action="store_true", help="small runs (a smoke test)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.tasks, args.claims, args.workers = 300, 300, "1,2"
    counts = [int(w) for w in args.workers.split(",")]
    why = postgres.unavailable()
    if why is not None:
        print(f"bench.shared: {why}", file=sys.stderr)
        return 2
    out: dict[str, Any] = {"claims_per_second": {}, "drain_seconds": {}}
    print(f"claims per second ({args.claims} NOOP tasks, claim+start then complete, one by one)")
    print(f"{'workers':>8} {'SQLite':>10} {'PostgreSQL':>12} {'PG/SQLite':>10}")
    for n in counts:
        with sqlite_database() as url:
            lite = claims_per_second(url, args.claims, n)
        with pg_database("claims") as url:
            pg = claims_per_second(url, args.claims, n)
        out["claims_per_second"][n] = {"sqlite": lite, "postgresql": pg}
        print(f"{n:>8} {lite:>10,.0f} {pg:>12,.0f} {pg / lite:>10.2f}")
    print(f"\ndrain of {args.tasks} SLEEP-0 tasks on PostgreSQL (max_workers / concurrency 4)")
    print(f"{'workers':>8} {'Fredica s':>10} {'procrastinate s':>16} {'ratio':>7}")
    for n in counts:
        with pg_database("drain") as url:
            ours = fredica_drain(url, args.tasks, n)
        with pg_database("procrastinate") as url:
            theirs = procrastinate_drain(url, args.tasks, n)
        out["drain_seconds"][n] = {"fredica": ours, "procrastinate": theirs}
        print(f"{n:>8} {ours:>10.2f} {theirs:>16.2f} {ours / theirs:>7.2f}")
    with pg_database("failover") as url:
        took = asyncio.run(failover(url, args.lease, args.heartbeat))
    target = args.lease + args.heartbeat
    out["failover"] = {"lease": args.lease, "heartbeat": args.heartbeat, "seconds": took}
    verdict = "PASS" if took <= target + 0.5 else "FAIL"
    print(
        f"\na host killed → its task running elsewhere: {took:.2f} s "
        f"(lease {args.lease:g} s + heartbeat {args.heartbeat:g} s = {target:g} s) {verdict}"
    )
    if args.json:
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
