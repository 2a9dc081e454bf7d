"""The store under real concurrency: several connections (threads, then processes) on one SQLite
file, each worker with its own :class:`TaskStore` and engine.

What is proven, on a DAG workload with fan-out/fan-in and diamonds:

- every task is claimed exactly once and completed by the worker that claimed it;
- no claim ever hands out a task with an unfinished dependency — checked by each worker right
  after its claim (a separate read of the dependencies) and, definitively, afterwards on the
  ``task_event`` timeline: writes are serialized, so event ids follow commit order, and each
  dependency's ``completed`` event must come before the dependent's ``claimed`` event;
- the runs' counters end consistent (``done_tasks == total_tasks``, status ``completed``);
- idempotent submissions racing on one key create exactly one run;
- a worker whose lease was revoked by another connection changes nothing.
"""

from __future__ import annotations

import asyncio
import functools
import json
import multiprocessing
import os
import random
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa

from workers.db import READ_ONLY, create_sqlite_engine
from workers.records import ClaimedTask, CreatedRun, TaskRecord
from workers.spec import PreparedRun, parse_spec, prepare_run
from workers.states import RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry

T = TypeVar("T")

#: A worker that has not drained the queue by then is stuck (normal runs take a few seconds).
DRAIN_TIMEOUT = 90.0
#: How long the test waits for its threads or processes before declaring them hung.
JOIN_TIMEOUT = 120.0

ACTIVE_SQL = "SELECT count(*) FROM task WHERE status IN ('pending', 'claimed', 'running')"


# --- the workload ---------------------------------------------------------------------------


def _fan_run(r: int, width: int = 12) -> dict[str, Any]:
    """src → m0..m11 → join → tail (15 tasks). Downstream tasks have a higher priority than
    upstream ones, so only the dependency gate keeps them from being claimed first."""
    tasks: list[dict[str, Any]] = [{"key": "src", "type": "NOOP", "payload": {"run": r}}]
    tasks += [
        {"key": f"m{i}", "type": "NOOP", "depends_on": ["src"], "priority": i % 3}
        for i in range(width)
    ]
    tasks.append(
        {
            "key": "join",
            "type": "NOOP",
            "depends_on": [f"m{i}" for i in range(width)],
            "priority": 50,
        }
    )
    tasks.append({"key": "tail", "type": "NOOP", "depends_on": ["join"], "priority": 100})
    return {"template": "fan", "tasks": tasks}


def _diamond_run(r: int) -> dict[str, Any]:
    """Layers of overlapping diamonds (15 tasks): a → b0..b3 → c0..c3 → d0..d3 → z → y, each
    c and d waiting for two tasks of the layer above; y also waits for a (already done)."""
    tasks: list[dict[str, Any]] = [{"key": "a", "type": "NOOP", "payload": {"run": r}}]
    tasks += [{"key": f"b{i}", "type": "NOOP", "depends_on": ["a"]} for i in range(4)]
    tasks += [
        {"key": f"c{i}", "type": "NOOP", "depends_on": [f"b{i}", f"b{(i + 1) % 4}"], "priority": 5}
        for i in range(4)
    ]
    tasks += [
        {"key": f"d{i}", "type": "NOOP", "depends_on": [f"c{i}", f"c{(i + 2) % 4}"], "priority": 9}
        for i in range(4)
    ]
    tasks.append({"key": "z", "type": "NOOP", "depends_on": [f"d{i}" for i in range(4)]})
    tasks.append({"key": "y", "type": "NOOP", "depends_on": ["z", "a"], "priority": 20})
    return {"template": "diamond", "tasks": tasks}


def _independent_run(n: int = 24) -> dict[str, Any]:
    return {
        "template": "independent",
        "tasks": [{"key": f"i{i}", "type": "NOOP", "priority": i % 4} for i in range(n)],
    }


def _workload(registry: TaskTypeRegistry, runs: int = 20) -> list[PreparedRun]:
    """20 DAG runs of 15 tasks and one run of 24 independent tasks: 324 tasks."""
    specs = [_fan_run(r) if r % 2 == 0 else _diamond_run(r) for r in range(runs)]
    specs.append(_independent_run())
    return [prepare_run(parse_spec(s), registry) for s in specs]


async def _submit(db_path: Path, prepared: Sequence[PreparedRun]) -> list[CreatedRun]:
    store = TaskStore(create_sqlite_engine(db_path))
    try:
        return [await store.create_run(p) for p in prepared]
    finally:
        await store.close()


# --- a worker: claim, check, complete until the queue is drained ----------------------------


@dataclass
class _Report:
    worker: str
    # (task id, worker, claimed_at as the claim returned it)
    claims: list[tuple[str, str, float]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)


def _active_count(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.exec_driver_sql(ACTIVE_SQL).scalar_one())


UNFINISHED_DEPS_SQL = """
SELECT d.task_id, p.id, p.key, p.status
FROM task_dependency d JOIN task p ON p.id = d.depends_on_id
WHERE d.task_id IN :ids AND p.status != 'completed'
"""


def _unfinished_dependencies(
    engine: sa.Engine, worker: str, batch: Sequence[ClaimedTask]
) -> list[str]:
    """Read, right after a claim and on another connection, the claimed tasks' dependencies
    (the ``task_dependency`` edges). A completed task never changes status again, so one not
    completed now was not completed at the claim either."""
    problems = [
        f"{worker} claimed {c.id} with unmet_deps={c.task.unmet_deps}"
        for c in batch
        if c.task.unmet_deps != 0
    ]
    stmt = sa.text(UNFINISHED_DEPS_SQL).bindparams(sa.bindparam("ids", expanding=True))
    with engine.connect() as conn:
        rows = conn.execute(stmt, {"ids": [c.id for c in batch]}).all()
    problems += [
        f"{worker} claimed {child} while its dependency {dep} ({key}) was {status}"
        for child, dep, key, status in rows
    ]
    return problems


async def _drain(
    db_path: Path, worker: str, seed: int, ready: Callable[[], object] | None = None
) -> _Report:
    """Claim (1 or 3 at a time), check, and complete, until nothing is left to do.

    Claims vary: claim-and-start in one commit, claim then ``mark_running``, or complete a
    merely claimed task; completions go one by one or in a group commit.
    """
    rng = random.Random(seed)
    store = TaskStore(create_sqlite_engine(db_path))
    reader = store.engine.execution_options(**{READ_ONLY: True})
    report = _Report(worker)
    try:
        if ready is not None:
            await asyncio.to_thread(ready)
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{worker} did not drain the queue in {DRAIN_TIMEOUT} s")
            mode = rng.randrange(3)
            batch = await store.claim(worker, limit=rng.choice((1, 3)), start=mode == 0)
            if not batch:
                # Idle: done when nothing is active, else others hold what unlocks the rest.
                if await asyncio.to_thread(_active_count, reader) == 0:
                    return report
                await asyncio.sleep(0.005)
                continue
            for c in batch:
                assert c.task.claimed_at is not None
                report.claims.append((c.id, worker, c.task.claimed_at))
            report.violations += await asyncio.to_thread(
                _unfinished_dependencies, reader, worker, batch
            )
            if mode == 1:
                for c in batch:
                    if not await store.mark_running(c.id, c.lease_token):
                        report.lost.append(c.id)
            result = {"worker": worker}
            if len(batch) > 1 and rng.random() < 0.5:
                done = await store.complete_many([(c.id, c.lease_token, result) for c in batch])
            else:
                done = [await store.complete(c.id, c.lease_token, result) for c in batch]
            report.lost += [c.id for c, ok in zip(batch, done, strict=True) if not ok]
    finally:
        await store.close()


def _process_worker(
    db_path: str, worker: str, seed: int, barrier: Any, out_path: str
) -> None:  # pragma: no cover - runs in a child process
    """A worker process: drains the queue with its own store, and writes what it claimed (or
    its traceback) to ``out_path``."""
    out = Path(out_path)
    tmp = out.with_suffix(".tmp")
    try:
        report = asyncio.run(
            _drain(Path(db_path), worker, seed, functools.partial(barrier.wait, 60))
        )
        data: dict[str, Any] = {
            "pid": os.getpid(),
            "claims": report.claims,
            "violations": report.violations,
            "lost": report.lost,
        }
    except BaseException:
        tmp.write_text(json.dumps({"pid": os.getpid(), "error": traceback.format_exc()}))
        tmp.replace(out)
        raise
    tmp.write_text(json.dumps(data))
    tmp.replace(out)


def _run_threads(target: Callable[[int], T], n: int, timeout: float = JOIN_TIMEOUT) -> list[T]:
    """Run ``target(i)`` for i in 0..n-1 on n threads; their results, or their first error."""
    results: dict[int, T] = {}
    errors: list[BaseException] = []

    def wrapper(i: int) -> None:
        try:
            results[i] = target(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=wrapper, args=(i,), name=f"test-worker-{i}", daemon=True)
        for i in range(n)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    hung = [t.name for t in threads if t.is_alive()]
    if hung:
        pytest.fail(f"threads still running after {timeout} s: {hung}")
    if errors:
        raise errors[0]
    return [results[i] for i in range(n)]


# --- the final checks -----------------------------------------------------------------------


async def _verify_drained(
    db_path: Path, created: Sequence[CreatedRun], claims: Sequence[tuple[str, str, float]]
) -> None:
    store = TaskStore(create_sqlite_engine(db_path))
    try:
        tasks: dict[str, TaskRecord] = {}
        for c in created:
            run_tasks = await store.list_tasks(c.run_id)
            assert {t.id for t in run_tasks} == set(c.task_ids.values())
            tasks.update({t.id: t for t in run_tasks})
            run = await store.get_run(c.run_id)
            assert run.status == RunStatus.COMPLETED, run
            assert run.total_tasks == len(run_tasks)
            assert run.done_tasks == run.total_tasks, run
            assert (
                run.pending_tasks,
                run.claimed_tasks,
                run.running_tasks,
                run.failed_tasks,
                run.cancelled_tasks,
            ) == (0, 0, 0, 0, 0), run
            assert run.completed_at is not None

        # Every task claimed exactly once, by one worker, and completed by that worker.
        times_claimed = Counter(tid for tid, _w, _t in claims)
        duplicates = {tid: n for tid, n in times_claimed.items() if n > 1}
        assert not duplicates, f"tasks claimed more than once: {duplicates}"
        assert set(times_claimed) == set(tasks)
        claimer = {tid: w for tid, w, _t in claims}
        claimed_at = {tid: t for tid, _w, t in claims}
        for t in tasks.values():
            assert t.status == TaskStatus.COMPLETED, t
            assert t.result == {"worker": claimer[t.id]}, t
            assert t.worker_id == claimer[t.id]
            assert t.attempt == 1
            assert t.lease_token is None
            assert t.unmet_deps == 0
            assert t.claimed_at == claimed_at[t.id]  # not claimed again after that
            assert t.completed_at is not None
            assert t.claimed_at <= t.completed_at  # one store's strictly increasing clock

        # The timeline: one claim, one completion, in order, by the claimer.
        timelines = await asyncio.gather(*(store.events(tid) for tid in tasks))
        claimed_event: dict[str, int] = {}
        completed_event: dict[str, int] = {}
        for tid, events in zip(tasks, timelines, strict=True):
            kinds = [e.kind for e in events]
            assert kinds in (
                ["claimed", "completed"],
                ["claimed", "started", "completed"],
                ["started", "completed"],  # claimed and started in one commit
            ), (tid, kinds)
            assert events[0].detail == {"worker_id": claimer[tid], "attempt": 1}
            claimed_event[tid] = events[0].id
            completed_event[tid] = events[-1].id

        # No claim before its dependencies' completions, on the serialized commit order.
        with store.engine.execution_options(**{READ_ONLY: True}).connect() as conn:
            edges = conn.exec_driver_sql("SELECT task_id, depends_on_id FROM task_dependency").all()
        deps_of: dict[str, set[str]] = defaultdict(set)
        for child, parent in edges:
            deps_of[child].add(parent)
        assert {tid: set(t.depends_on) for tid, t in tasks.items() if t.depends_on} == deps_of
        early = [
            (child, parent)
            for child, parent in edges
            if not completed_event[parent] < claimed_event[child]
        ]
        assert not early, f"claimed before a dependency completed: {early[:5]}"
    finally:
        await store.close()


def _check_reports(reports: Sequence[_Report], total: int) -> list[tuple[str, str, float]]:
    """What the workers saw: no task claimed twice, no claim with an unfinished dependency, no
    lease lost; returns all the claims."""
    claims = [c for r in reports for c in r.claims]
    times_claimed = Counter(tid for tid, _w, _t in claims)
    duplicates = {
        tid: sorted(w for t, w, _ in claims if t == tid)
        for tid, n in times_claimed.items()
        if n > 1
    }
    assert not duplicates, f"tasks claimed more than once: {duplicates}"
    violations = [v for r in reports for v in r.violations]
    assert not violations, violations[:10]
    assert not [tid for r in reports for tid in r.lost], "a worker lost a lease it held"
    assert len(claims) == total
    return claims


# --- 1. threads -----------------------------------------------------------------------------


@pytest.mark.timeout(180)
def test_threads_drain_dag_each_task_claimed_once(
    db_path: Path, registry: TaskTypeRegistry
) -> None:
    prepared = _workload(registry)
    total = sum(len(p.tasks) for p in prepared)
    assert total == 324
    created = asyncio.run(_submit(db_path, prepared))

    n = 4
    barrier = threading.Barrier(n, timeout=60)
    reports = _run_threads(
        lambda i: asyncio.run(_drain(db_path, f"thread-{i}", seed=1000 + i, ready=barrier.wait)),
        n,
    )

    claims = _check_reports(reports, total)
    asyncio.run(_verify_drained(db_path, created, claims))


# --- 2. processes ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_processes_drain_dag_each_task_claimed_once(
    db_path: Path, registry: TaskTypeRegistry, tmp_path: Path
) -> None:
    prepared = _workload(registry)
    total = sum(len(p.tasks) for p in prepared)
    created = asyncio.run(_submit(db_path, prepared))

    ctx = multiprocessing.get_context("spawn")
    n = 3
    barrier = ctx.Barrier(n)
    outputs = [tmp_path / f"worker-{i}.json" for i in range(n)]
    procs = [
        ctx.Process(
            target=_process_worker,
            args=(str(db_path), f"proc-{i}", 2000 + i, barrier, str(outputs[i])),
            name=f"fredica-test-worker-{i}",
        )
        for i in range(n)
    ]
    try:
        for p in procs:
            p.start()
        deadline = time.monotonic() + JOIN_TIMEOUT
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        hung = [p.name for p in procs if p.is_alive()]
        assert not hung, f"worker processes still running after {JOIN_TIMEOUT} s: {hung}"
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(10)
            if p.is_alive():  # pragma: no cover - terminate ignored
                p.kill()
                p.join(10)
    assert not [p.name for p in procs if p.is_alive()], "a worker process survived"
    assert [p.exitcode for p in procs] == [0] * n, [
        json.loads(o.read_text()).get("error") if o.exists() else None for o in outputs
    ]

    results = [json.loads(o.read_text()) for o in outputs]
    assert len({r["pid"] for r in results} | {os.getpid()}) == n + 1  # really n other processes
    reports = [
        _Report(
            f"proc-{i}",
            claims=[(tid, w, t) for tid, w, t in r["claims"]],
            violations=r["violations"],
            lost=r["lost"],
        )
        for i, r in enumerate(results)
    ]
    claims = _check_reports(reports, total)
    asyncio.run(_verify_drained(db_path, created, claims))


# --- 3. idempotent submitters ---------------------------------------------------------------


def _count(db_path: Path, sql: str, **params: Any) -> int:
    engine = create_sqlite_engine(db_path)
    try:
        with engine.execution_options(**{READ_ONLY: True}).connect() as conn:
            return int(conn.execute(sa.text(sql), params).scalar_one())
    finally:
        engine.dispose()


def _submit_concurrently(db_path: Path, prepared: PreparedRun, n: int) -> list[CreatedRun]:
    """n threads, each with its own store, submit ``prepared`` at the same moment."""
    barrier = threading.Barrier(n, timeout=60)

    async def submit() -> CreatedRun:
        store = TaskStore(create_sqlite_engine(db_path))
        try:
            await asyncio.to_thread(barrier.wait)
            return await store.create_run(prepared)
        finally:
            await store.close()

    return _run_threads(lambda _i: asyncio.run(submit()), n)


def _assert_one_created(results: Sequence[CreatedRun]) -> CreatedRun:
    fresh = [r for r in results if not r.deduplicated]
    assert len(fresh) == 1, results
    (created,) = fresh
    for r in results:
        assert r.run_id == created.run_id
        assert r.task_ids == created.task_ids
    return created


async def _claim_and_complete(db_path: Path, task_id: str) -> None:
    store = TaskStore(create_sqlite_engine(db_path))
    try:
        (claimed,) = await store.claim("finisher", limit=5)
        assert claimed.id == task_id  # the only claimable task: "b" waits for it
        assert await store.complete(claimed.id, claimed.lease_token, {"ok": True})
    finally:
        await store.close()


@pytest.mark.timeout(120)
def test_concurrent_idempotent_submitters_create_one_run(
    db_path: Path, registry: TaskTypeRegistry
) -> None:
    spec = {
        "template": "keyed",
        "tasks": [
            {"key": "a", "type": "NOOP", "idempotency_key": "media:42:transcode"},
            {"key": "b", "type": "NOOP", "depends_on": ["a"]},
        ],
    }
    prepared = prepare_run(parse_spec(spec), registry)
    n = 6
    active_keyed = (
        "SELECT count(*) FROM task WHERE idempotency_key = :k "
        "AND status IN ('pending', 'claimed', 'running')"
    )
    key = "media:42:transcode"

    first = _assert_one_created(_submit_concurrently(db_path, prepared, n))
    assert sum(r.deduplicated for r in _submit_concurrently(db_path, prepared, 2)) == 2
    assert _count(db_path, "SELECT count(*) FROM workflow_run") == 1
    assert _count(db_path, "SELECT count(*) FROM task") == 2  # no duplicate left half-inserted
    assert _count(db_path, active_keyed, k=key) == 1

    # Once the keyed task has finished, its key is free: the next submission is a new run.
    asyncio.run(_claim_and_complete(db_path, first.task_ids["a"]))
    assert _count(db_path, active_keyed, k=key) == 0
    second = _assert_one_created(_submit_concurrently(db_path, prepared, n))
    assert second.run_id != first.run_id
    assert set(second.task_ids.values()).isdisjoint(first.task_ids.values())
    assert _count(db_path, "SELECT count(*) FROM workflow_run") == 2
    assert _count(db_path, "SELECT count(*) FROM task") == 4
    assert _count(db_path, active_keyed, k=key) == 1
    assert (
        _count(
            db_path,
            "SELECT count(*) FROM task WHERE idempotency_key = :k AND status = 'completed'",
            k=key,
        )
        == 1
    )


# --- 4. lease fencing -----------------------------------------------------------------------


async def test_revoked_lease_fences_the_old_worker(
    make_store: Callable[..., TaskStore], registry: TaskTypeRegistry, store: TaskStore
) -> None:
    spec = {"tasks": [{"key": "x", "type": "NOOP"}, {"key": "y", "type": "NOOP"}]}
    created = await store.create_run(prepare_run(parse_spec(spec), registry))
    worker_a = make_store()
    try:
        claimed = await worker_a.claim("A", limit=2)
        assert {c.id for c in claimed} == set(created.task_ids.values())
        running, held = claimed
        assert await worker_a.mark_running(running.id, running.lease_token)

        # A's leases are lost: another connection (the UI, the CLI) cancels both tasks.
        outcome = await store.cancel(running.id)
        assert outcome.cancelled == (running.id,)
        assert outcome.was_running == (running.id,)
        assert (await store.cancel(held.id)).cancelled == (held.id,)
        before = {c.id: await store.get_task(c.id) for c in claimed}

        for c in claimed:
            assert await worker_a.complete(c.id, c.lease_token, {"late": True}) is False
            assert (await worker_a.fail(c.id, c.lease_token, "late")).applied is False
            assert await worker_a.report_progress(c.id, c.lease_token, progress=50) is False
        assert await worker_a.mark_running(held.id, held.lease_token) is False
        assert await worker_a.complete_many(
            [(c.id, c.lease_token, {"late": True}) for c in claimed]
        ) == [False, False]
        heartbeat = await worker_a.heartbeat("A", [c.id for c in claimed])
        assert heartbeat.held == frozenset()
        assert heartbeat.lost == {c.id for c in claimed}

        for c in claimed:
            after = await store.get_task(c.id)
            assert after == before[c.id]  # not a column changed
            assert after.status == TaskStatus.CANCELLED
            assert after.result is None
            assert after.lease_token is None
        assert [e.kind for e in await store.events(running.id)] == [
            "claimed",
            "started",
            "cancelled",
        ]
        assert [e.kind for e in await store.events(held.id)] == ["claimed", "cancelled"]
        run = await store.get_run(created.run_id)
        assert run.status == RunStatus.CANCELLED
        assert (run.cancelled_tasks, run.done_tasks, run.running_tasks, run.claimed_tasks) == (
            2,
            0,
            0,
            0,
        )
    finally:
        await worker_a.close()


# --- the pragmas ----------------------------------------------------------------------------


def test_store_connections_use_wal_and_full_synchronous(db_path: Path) -> None:
    async def check() -> list[tuple[str, int, int]]:
        store = TaskStore(create_sqlite_engine(db_path))
        try:
            # Two connections checked out at once (read transactions, so that they can run side
            # by side): every pooled connection is configured, not just the first.
            engine = store.engine.execution_options(**{READ_ONLY: True})
            with engine.connect() as c1, engine.connect() as c2:
                return [
                    (
                        str(c.exec_driver_sql("PRAGMA journal_mode").scalar_one()),
                        int(c.exec_driver_sql("PRAGMA synchronous").scalar_one()),
                        int(c.exec_driver_sql("PRAGMA busy_timeout").scalar_one()),
                    )
                    for c in (c1, c2)
                ]
        finally:
            await store.close()

    assert asyncio.run(check()) == [("wal", 2, 30_000)] * 2
