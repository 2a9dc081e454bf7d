"""Retention: what a prune deletes and what it keeps, in bounded batches; the idle engine's
prune."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.rawdb import RawDB
from workers.engine import WorkerEngine
from workers.executors.diagnostic import NoopExecutor
from workers.records import CreatedRun, WorkerInfo
from workers.retention import DAY, PruneReport, RetentionPolicy
from workers.spec import parse_spec, prepare_run
from workers.states import ErrorType, RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry

T0 = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def noop(key: str, *deps: str, **kw: Any) -> dict[str, Any]:
    return {"key": key, "type": "NOOP", "depends_on": list(deps), **kw}


def chain(n: int) -> list[dict[str, Any]]:
    return [noop("t0")] + [noop(f"t{i}", f"t{i - 1}") for i in range(1, n)]


async def submit(
    store: TaskStore, registry: TaskTypeRegistry, tasks: list[dict[str, Any]]
) -> CreatedRun:
    return await store.create_run(prepare_run(parse_spec({"tasks": tasks}), registry))


async def finish(store: TaskStore, created: CreatedRun) -> None:
    """Claim and complete every task of the run, in order."""
    for _ in created.task_ids:
        [c] = await store.claim("w", limit=1)
        assert c.task.workflow_run_id == created.run_id
        assert await store.complete(c.id, c.lease_token, {})


def count(db: RawDB, sql: str, *args: Any) -> int:
    return int(db.scalar(sql, *args))


def add_restart_log(db: RawDB, task_id: str, run_id: str, at: float) -> None:
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO restart_task_log (session_id, task_id, task_type, workflow_run_id, "
            "status_at_restart, progress, action, disposition, created_at, updated_at) "
            "VALUES ('s', ?, 'NOOP', ?, 'running', 0, 'requeued', 'pending_review', ?, ?)",
            (task_id, run_id, at, at),
        )


def assert_consistent(db: RawDB) -> None:
    """Nothing left pointing at a deleted row, and no task lost its run."""
    with db.connect() as conn:
        if db.dialect == "sqlite":  # (PostgreSQL refuses a dangling key outright)
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert (
            conn.execute("SELECT count(*) FROM task WHERE workflow_run_id IS NULL").fetchone()[0]
            == 0
        )
        dangling = conn.execute(
            "SELECT count(*) FROM task_event e LEFT JOIN task t ON t.id = e.task_id "
            "WHERE t.id IS NULL"
        ).fetchone()[0]
        assert dangling == 0
        # Every run's counters still match its tasks.
        bad = conn.execute(
            "SELECT count(*) FROM workflow_run r WHERE r.total_tasks != "
            "(SELECT count(*) FROM task t WHERE t.workflow_run_id = r.id)"
        ).fetchone()[0]
        assert bad == 0


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cstore(make_store: Callable[..., TaskStore], clock: Clock) -> TaskStore:
    return make_store(clock=clock)


async def test_old_finished_runs_go_with_everything_of_theirs(
    cstore: TaskStore, clock: Clock, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    store = cstore
    # 40 days ago: a completed run, a failed one, a cancelled one; and a failed run with a
    # task still running (a failed run may have one): it is not finished with.
    completed = await submit(store, registry, chain(3))
    await finish(store, completed)
    failed = await submit(store, registry, [noop("a"), noop("b", "a")])
    [a] = await store.claim("w")
    await store.fail(a.id, a.lease_token, "broken", ErrorType.PAYLOAD_ERROR)
    cancelled = await submit(store, registry, chain(2))
    await store.cancel_run(cancelled.run_id)
    busy = await submit(store, registry, [noop("x"), noop("y")])
    [x, _y] = await store.claim("w", limit=2, start=True)
    await store.fail(x.id, x.lease_token, "broken", ErrorType.PAYLOAD_ERROR)
    assert (await store.get_run(busy.run_id)).status is RunStatus.FAILED
    add_restart_log(raw, completed.task_ids["t1"], completed.run_id, clock.t)
    old = [completed, failed, cancelled]
    for created in old:
        assert (await store.get_run(created.run_id)).status in (
            RunStatus.COMPLETED,
            RunStatus.FAILED,
            RunStatus.CANCELLED,
        )
    # 40 days later: a recent completed run, an active one.
    clock.t += 40 * DAY
    recent = await submit(store, registry, chain(2))
    await finish(store, recent)
    active = await submit(store, registry, chain(2))
    add_restart_log(raw, recent.task_ids["t0"], recent.run_id, clock.t)
    events_before = count(raw, "SELECT count(*) FROM task_event")

    policy = RetentionPolicy(keep_runs=30 * DAY, keep_events=None)
    dry = await store.prune(policy, dry_run=True)
    assert count(raw, "SELECT count(*) FROM workflow_run") == 6  # nothing deleted yet
    report = await store.prune(policy)

    assert (report.runs, report.tasks, report.dependencies) == (3, 7, 4)
    assert report.restart_log == 1 and report.old_events == 0
    old_ids = [c.run_id for c in old]
    assert report.events == events_before - count(raw, "SELECT count(*) FROM task_event")
    assert report.events > 0
    # The dry run said exactly that.
    assert dry.as_json() == {
        **report.as_json(),
        "transactions": 0,
        "longest_transaction_ms": 0.0,
        "dry_run": True,
    }
    left = {r.id for r in await store.list_runs()}
    assert left == {recent.run_id, active.run_id, busy.run_id}
    for run_id in old_ids:
        assert count(raw, "SELECT count(*) FROM task WHERE workflow_run_id = ?", run_id) == 0
        assert count(raw, "SELECT count(*) FROM task_event WHERE workflow_run_id = ?", run_id) == 0
    assert count(raw, "SELECT count(*) FROM restart_task_log") == 1  # the recent one
    assert_consistent(raw)
    # The rest still works as before: the active run runs to its end.
    await finish(store, active)
    assert (await store.get_run(active.run_id)).status is RunStatus.COMPLETED
    # Nothing more to do.
    assert (await store.prune(policy)).removed == 0


async def test_a_run_another_run_depends_on_is_kept(
    cstore: TaskStore, clock: Clock, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    store = cstore
    old = await submit(store, registry, [noop("a")])
    await finish(store, old)
    clock.t += 40 * DAY
    kept = await submit(store, registry, [noop("b")])
    # An edge across runs (the queue does not make them, but a task that a run still refers
    # to must never be deleted).
    with raw.connect() as conn:
        conn.execute(
            "INSERT INTO task_dependency (task_id, depends_on_id) VALUES (?, ?)",
            (kept.task_ids["b"], old.task_ids["a"]),
        )
    report = await store.prune(RetentionPolicy(keep_runs=30 * DAY, keep_events=None))
    assert report.runs == 0
    assert (await store.get_run(old.run_id)).status is RunStatus.COMPLETED


async def test_old_events_are_trimmed_in_windows(
    cstore: TaskStore, clock: Clock, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    store = cstore
    # A long-lived run: its early events are older than the events' limit, its run is active.
    created = await submit(store, registry, [noop(f"t{i}") for i in range(10)])
    for key in ("t0", "t1", "t2", "t3"):
        assert await store.set_paused(created.task_ids[key], True)  # one "paused" event each
    clock.t += 100 * DAY
    for key in ("t0", "t1"):
        assert await store.set_paused(created.task_ids[key], False)  # two recent events
    deleted_per_tx: list[int] = []
    trim = store._prune_events_tx

    def spy(conn: Any, lo: int, hi: int, cutoff: float) -> int:
        deleted_per_tx.append(trim(conn, lo, hi, cutoff))
        return deleted_per_tx[-1]

    store._prune_events_tx = spy  # type: ignore[method-assign]
    report = await store.prune(
        RetentionPolicy(keep_runs=None, keep_events=90 * DAY), event_window=3
    )
    assert report.old_events == 4 and report.runs == 0
    assert deleted_per_tx == [3, 1] and report.transactions == 2
    kinds = [e.kind for e in await store.events(created.task_ids["t0"])]
    assert kinds == ["resumed"]
    assert count(raw, "SELECT count(*) FROM task_event") == 2
    assert (await store.get_run(created.run_id)).status is RunStatus.PENDING


async def test_runs_are_deleted_in_bounded_batches(
    cstore: TaskStore, clock: Clock, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    store = cstore
    small = [await submit(store, registry, chain(2)) for _ in range(5)]
    for created in small:
        await finish(store, created)
    big = await submit(store, registry, chain(6))  # larger than a batch: goes alone
    await finish(store, big)
    clock.t += 31 * DAY
    tasks_per_tx: list[int] = []
    delete = store._prune_runs_tx

    def spy(conn: Any, cutoff: float, batch_tasks: int) -> dict[str, int] | None:
        counts = delete(conn, cutoff, batch_tasks)
        if counts is not None:
            tasks_per_tx.append(counts["tasks"])
        return counts

    store._prune_runs_tx = spy  # type: ignore[method-assign]
    report = await store.prune(RetentionPolicy(keep_runs=30 * DAY, keep_events=None), batch_tasks=4)
    # Oldest first, whole runs, at most 4 tasks each; the run of 6 tasks alone.
    assert tasks_per_tx == [4, 4, 2, 6]
    # Four for the runs, one for the rows of engines gone (none here).
    assert (report.runs, report.tasks, report.transactions, report.workers) == (6, 16, 5, 0)
    assert count(raw, "SELECT count(*) FROM task") == 0
    assert_consistent(raw)


async def test_keep_forever_deletes_nothing(
    cstore: TaskStore, clock: Clock, registry: TaskTypeRegistry
) -> None:
    store = cstore
    created = await submit(store, registry, [noop("a")])
    await finish(store, created)
    clock.t += 10_000 * DAY
    policy = RetentionPolicy.from_days(0, None)
    assert policy.keeps_everything
    assert await store.prune(policy) == PruneReport()
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED
    with pytest.raises(ValueError, match="negative"):
        RetentionPolicy.from_days(-1, 3)


async def test_an_idle_engine_prunes_once_per_period(
    cstore: TaskStore, clock: Clock, registry: TaskTypeRegistry
) -> None:
    store = cstore
    old = await submit(store, registry, [noop("a")])
    await finish(store, old)
    clock.t += 31 * DAY
    new = await submit(store, registry, chain(3))
    calls: list[PruneReport] = []
    prune = store.prune

    async def counting(policy: RetentionPolicy, **kw: Any) -> PruneReport:
        calls.append(await prune(policy, **kw))
        return calls[-1]

    store.prune = counting  # type: ignore[method-assign]
    engine = WorkerEngine(
        store,
        [NoopExecutor()],
        retention=RetentionPolicy(keep_runs=30 * DAY, keep_events=90 * DAY),
    )
    try:
        await asyncio.wait_for(engine.run(until_idle=True), 30)
        # Idle once the new run is done: the old run is pruned, in the background.
        for _ in range(500):
            if engine.last_prune is not None:
                break
            await asyncio.sleep(0.01)
        assert engine.last_prune is not None and engine.last_prune.runs == 1
        assert {r.id for r in await store.list_runs()} == {new.run_id}
        assert (await store.get_run(new.run_id)).status is RunStatus.COMPLETED
        # Idle again within the hour: no second prune.
        await asyncio.wait_for(engine.run(until_idle=True), 30)
        assert len(calls) == 1
    finally:
        await engine.stop()
    task = (await store.list_tasks(new.run_id))[0]
    assert task.status is TaskStatus.COMPLETED


async def test_the_rows_of_engines_long_gone_go_and_a_holder_stays(
    cstore: TaskStore, clock: Clock, registry: TaskTypeRegistry
) -> None:
    """Each engine's start adds a row (``fredica hosts --all``): one ``process`` a file for
    years would keep them all. A prune removes those of engines gone — stopped, or silent
    since a crash — for as long as a finished run is kept, unless a task still names one as
    its holder (recovery or a lease's end will take it over: the row says whose it was)."""
    store = cstore

    async def engine(worker_id: str) -> None:
        await store.register_worker(
            WorkerInfo(worker_id, "host", "home", 1, "1.0", {"cpu": 2}, {"NOOP": 1})
        )

    for worker_id in ("stopped", "crashed", "holder", "recent"):
        await engine(worker_id)
    await store.worker_stopped("stopped")
    created = await submit(store, registry, [noop("a")])
    [held] = await store.claim("holder", limit=1)
    assert held.task.workflow_run_id == created.run_id
    clock.t += 31 * DAY
    await engine("new")
    await store.worker_stopped("recent")  # stopped now: kept
    policy = RetentionPolicy.from_days(30, None)
    assert (await store.prune(policy, dry_run=True)).workers == 2
    report = await store.prune(policy)
    assert report.workers == 2 and report.removed == 2
    left = {w.id for w in await store.list_workers(include_stopped=True)}
    assert left == {"holder", "recent", "new"}
    assert (await store.prune(policy)).workers == 0
    assert (await store.prune(RetentionPolicy.from_days(0, None))).workers == 0  # kept forever
