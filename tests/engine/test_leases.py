"""Several engines on one shared queue (PostgreSQL): leases, their expiry, fencing, drains,
homes and builds. Each engine here has its own store (its own connections), as engines of
several hosts have; the network between them is in tests/engine/test_hosts.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.support import postgres
from workers.engine import WorkerEngine
from workers.errors import StoreUnavailable
from workers.executors.diagnostic import NoopExecutor, SleepExecutor
from workers.records import WorkerInfo
from workers.spec import parse_spec, prepare_run
from workers.states import TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


@pytest.fixture
async def stores(
    postgres_database: postgres.PostgresDatabase,
) -> AsyncIterator[Callable[..., TaskStore]]:
    """Stores on one shared PostgreSQL database, as on several hosts."""
    from workers.db import create_postgres_engine

    postgres_database.reset()
    opened: list[TaskStore] = []

    def make(**kw: Any) -> TaskStore:
        s = TaskStore(create_postgres_engine(postgres_database.url), **kw)
        opened.append(s)
        return s

    yield make
    for s in opened:
        await s.close()


async def submit(store: TaskStore, registry: TaskTypeRegistry, tasks: list[dict[str, Any]]) -> Any:
    return await store.create_run(prepare_run(parse_spec({"tasks": tasks}), registry))


def sleeping(key: str, seconds: float) -> dict[str, Any]:
    return {"key": key, "type": "SLEEP", "payload": {"seconds": seconds}}


async def until(predicate: Callable[[], Any], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not await _true(predicate):
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def _true(predicate: Callable[[], Any]) -> bool:
    value = predicate()
    if asyncio.iscoroutine(value):
        value = await value
    return bool(value)


async def test_a_lease_that_ran_out_is_taken_over_fenced_and_not_charged(
    stores: Callable[..., TaskStore], registry: TaskTypeRegistry
) -> None:
    a, b = stores(lease_seconds=1.0), stores(lease_seconds=1.0)
    created = await submit(a, registry, [sleeping("s", 5)])
    await a.register_worker(WorkerInfo("A", "host-a", "home-a", 1, "", {}, {}))
    [held] = await a.claim("A", start=True)
    await a.report_progress(held.id, held.lease_token, progress=40, checkpoint={"slept": 2})
    assert (await b.requeue_expired("b-session", ["SLEEP"])).total == 0  # still live
    await asyncio.sleep(1.2)  # host A went silent: its lease runs out
    report = await b.requeue_expired("b-session", ["SLEEP"])
    assert report.resumed == 1
    task = await b.get_task(held.id)
    # An interruption, not a failure, and not charged: the task did not make A go silent.
    assert (task.status, task.retry_count, task.interruptions, task.charged_interruptions) == (
        TaskStatus.PENDING,
        0,
        1,
        0,
    )
    assert task.checkpoint == {"slept": 2}  # resumed from there
    [entry] = await b.restart_log()
    assert entry.home_id == "home-a" and "not charged" in (entry.detail or "")
    assert "its engine elsewhere stopped answering" in (entry.detail or "")
    [again] = await b.claim("B", start=True)
    assert again.task.attempt == 2
    # Host A comes back: everything it writes late changes nothing.
    assert await a.report_progress(held.id, held.lease_token, progress=90) is False
    assert await a.complete(held.id, held.lease_token, {"late": True}) is False
    assert (await a.fail(held.id, held.lease_token, "late")).applied is False
    beat = await a.heartbeat("A", [held.id])
    assert beat.lost == {held.id}
    assert await b.complete(again.id, again.lease_token, {"ok": True})
    done = await b.get_task(held.id)
    assert (done.status, done.result) == (TaskStatus.COMPLETED, {"ok": True})
    assert (await b.get_run(created.run_id)).done_tasks == 1


async def test_the_lease_must_outlast_the_renewals(
    stores: Callable[..., TaskStore], registry: TaskTypeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why the lease outlasts a renewal by a margin: an engine whose renewals come slower
    than its lease loses a task it is still running — another engine takes it over and it
    runs again (PgQueuer's users met this): twice, or more on a slow machine, where the engine
    that lost it may claim it back and lose it again. With renewals every third of the lease
    (what the engine does), the same task runs once, however long it takes."""
    assert await _runs_of_a_task(stores, registry, monkeypatch, 1.5) >= 2
    assert await _runs_of_a_task(stores, registry, monkeypatch, None) == 1


async def _runs_of_a_task(
    stores: Callable[..., TaskStore],
    registry: TaskTypeRegistry,
    monkeypatch: pytest.MonkeyPatch,
    renewal: float | None,
) -> int:
    """How many attempts a 2.5 s task takes, run by an engine renewing its 1 s lease every
    ``renewal`` seconds (None: the engine's own rule) while another engine looks for leases
    that ran out every 0.2 s."""
    a, b = stores(lease_seconds=1.0), stores(lease_seconds=1.0)
    created = await submit(a, registry, [sleeping("s", 2.5)])
    task_id = created.task_ids["s"]
    slow = WorkerEngine(a, [SleepExecutor()], heartbeat_interval=5)
    if renewal is not None:
        monkeypatch.setattr(slow, "heartbeat_interval", renewal)
        monkeypatch.setattr(WorkerEngine, "lease_renewal", property(lambda e: e.heartbeat_interval))
    other = WorkerEngine(b, [SleepExecutor()], heartbeat_interval=0.2)
    await slow.start(recover=False)
    runner = asyncio.create_task(slow.run(until_idle=True))
    await until(lambda: slow.running_ids == [task_id])
    await other.start(recover=False)
    helper = asyncio.create_task(other.run())
    await until(lambda: _status(a, task_id, TaskStatus.COMPLETED), within=30)
    await asyncio.wait_for(runner, 10)
    await other.stop()
    await asyncio.wait_for(helper, 10)
    await slow.stop()
    monkeypatch.undo()
    return (await a.get_task(task_id)).attempt


async def test_an_engine_that_cannot_renew_its_leases_stops_its_attempts(
    stores: Callable[..., TaskStore], registry: TaskTypeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = stores(lease_seconds=1.5), stores(lease_seconds=1.5)
    created = await submit(a, registry, [sleeping("s", 60)])
    task_id = created.task_ids["s"]
    cut = WorkerEngine(a, [SleepExecutor()])
    await cut.start(recover=False)
    runner = asyncio.create_task(cut.run())
    await until(lambda: cut.running_ids == [task_id])

    async def unreachable(*_: Any, **__: Any) -> Any:
        raise StoreUnavailable("the database server cannot be reached", waitable=True)

    monkeypatch.setattr(a, "heartbeat", unreachable)
    started = time.monotonic()
    await until(lambda: not cut.running_ids, within=10)
    # Stopped once the lease, less one renewal, had gone by without a renewal: before
    # another engine could take the task, not long after.
    assert 0.9 <= time.monotonic() - started < 4
    # It wrote nothing: the task is still running, under the lease that runs out...
    task = await b.get_task(task_id)
    assert task.status is TaskStatus.RUNNING and task.worker_id == cut.worker_id
    # ...and another engine takes it over once it has.
    await until(lambda: _expired(b), within=5)
    other = WorkerEngine(b, [SleepExecutor()], heartbeat_interval=0.2)
    await other.start(recover=False)
    assert (await other.requeue_expired()).resumed == 1
    assert (await b.get_task(task_id)).status is TaskStatus.PENDING
    await other.stop()
    cut._stopping = True
    cut.wake()
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)


async def _expired(store: TaskStore) -> bool:
    return bool(await store._read(store._any_expired_tx))


async def test_a_starting_engine_takes_over_its_own_home_only(
    stores: Callable[..., TaskStore], registry: TaskTypeRegistry
) -> None:
    """At a start, an engine takes over what its own home's earlier engine left (it is gone:
    the data directory's lock), never another host's live work (DBOS's users met the
    opposite: a crashed node's work not taken over)."""
    here, there = stores(), stores()
    created = await submit(here, registry, [sleeping("mine", 1), sleeping("theirs", 1)])
    await here.register_worker(WorkerInfo("old-here", "h", "home-here", 1, "", {}, {}))
    await there.register_worker(WorkerInfo("live-there", "t", "home-there", 2, "", {}, {}))
    mine = (await here.claim("old-here", start=True))[0]
    theirs = (await there.claim("live-there", start=True))[0]
    assert {mine.task.key, theirs.task.key} == {"mine", "theirs"}
    engine = WorkerEngine(here, [SleepExecutor()], home_id="home-here")
    report = await engine.start()
    assert report is not None and report.total == 1
    assert (await here.get_task(mine.id)).status is TaskStatus.PENDING
    kept = await here.get_task(theirs.id)
    assert (kept.status, kept.worker_id) == (TaskStatus.RUNNING, "live-there")
    [entry] = await here.restart_log()
    assert entry.task_id == mine.id and entry.home_id == "home-here"
    await engine.stop()
    run = await here.get_run(created.run_id)  # recounted: one back in the queue, one running
    assert (run.pending_tasks, run.running_tasks) == (1, 1)


async def test_a_drained_engine_finishes_its_work_and_claims_no_more(
    stores: Callable[..., TaskStore], registry: TaskTypeRegistry
) -> None:
    a, cli = stores(), stores()
    created = await submit(a, registry, [sleeping("first", 1.0)])
    engine = WorkerEngine(a, [SleepExecutor()], heartbeat_interval=0.2, max_workers=1)
    await engine.start(recover=False)
    runner = asyncio.create_task(engine.run())
    first = created.task_ids["first"]
    await until(lambda: engine.running_ids == [first])
    [listed] = await cli.list_workers()
    assert (listed.id, listed.running, listed.draining) == (engine.worker_id, 1, False)
    assert await cli.drain(listed.host) == [engine.worker_id]  # by host name
    await until(lambda: engine.draining)
    more = await submit(cli, registry, [sleeping("second", 0.1)])
    await until(lambda: _status(cli, first, TaskStatus.COMPLETED), within=10)
    await asyncio.sleep(1.0)  # several heartbeats and polls: nothing new is claimed
    second = await cli.get_task(more.task_ids["second"])
    assert (second.status, second.attempt) == (TaskStatus.PENDING, 0)
    [listed] = await cli.list_workers()
    assert (listed.running, listed.draining) == (0, True)
    await cli.drain(engine.worker_id, undo=True)
    await until(lambda: _status(cli, second.id, TaskStatus.COMPLETED), within=10)
    await engine.stop()
    await asyncio.wait_for(runner, 5)
    assert await cli.list_workers() == []  # it said it stopped
    assert [w.id for w in await cli.list_workers(include_stopped=True)] == [engine.worker_id]


async def _status(store: TaskStore, task_id: str, status: TaskStatus) -> bool:
    return (await store.get_task(task_id)).status is status


async def test_a_host_claims_only_what_its_build_understands(
    stores: Callable[..., TaskStore], registry: TaskTypeRegistry
) -> None:
    """An older build (no SLEEP executor here; NOOP payloads up to version 1) leaves a task
    it cannot run for a host that can, never failing it."""
    old, new = stores(), stores()
    created = await submit(old, registry, [sleeping("sleep", 0.1), {"key": "noop", "type": "NOOP"}])
    with_v2 = await submit(old, registry, [{"key": "noop2", "type": "NOOP"}])
    from tests.support.rawdb import raw_of

    with raw_of(old).connect() as conn:  # as a newer build would write it
        conn.execute(
            "UPDATE task SET payload = '{\"schema_version\": 2}' WHERE id = ?",
            (with_v2.task_ids["noop2"],),
        )
    older = WorkerEngine(old, [NoopExecutor()], heartbeat_interval=0.2)
    await older.start(recover=False)
    await asyncio.wait_for(older.run(until_idle=True), 10)
    tasks = {t.key: t for t in await old.list_tasks(created.run_id)}
    assert tasks["noop"].status is TaskStatus.COMPLETED
    assert (tasks["sleep"].status, tasks["sleep"].attempt) == (TaskStatus.PENDING, 0)
    untouched = await old.get_task(with_v2.task_ids["noop2"])
    assert (untouched.status, untouched.attempt) == (TaskStatus.PENDING, 0)
    await older.stop()
    newer = WorkerEngine(new, [NoopExecutor(), SleepExecutor()], heartbeat_interval=0.2)
    await newer.start(recover=False)
    await asyncio.wait_for(newer.run(until_idle=True), 10)
    assert (await new.get_task(tasks["sleep"].id)).status is TaskStatus.COMPLETED
    await newer.stop()


async def test_a_notification_wakes_an_idle_engine_at_once(
    stores: Callable[..., TaskStore], registry: TaskTypeRegistry
) -> None:
    """Another host's submission wakes an idle engine through LISTEN/NOTIFY, long before
    its poll (30 s here) would have seen it."""
    here, other = stores(), stores()
    engine = WorkerEngine(here, [NoopExecutor()], watch_interval=30, poll_min=30, poll_max=30)
    await engine.start(recover=False)
    runner = asyncio.create_task(engine.run())
    listener = here._listener
    assert listener is not None
    await asyncio.to_thread(listener.connected.wait, 10)
    await asyncio.sleep(0.5)  # idle, waiting on its 30 s poll
    created = await submit(other, registry, [{"key": "n", "type": "NOOP"}])
    started = time.monotonic()
    await until(lambda: _status(other, created.task_ids["n"], TaskStatus.COMPLETED), within=10)
    assert time.monotonic() - started < 3
    await engine.stop()
    await asyncio.wait_for(runner, 10)


async def test_a_lost_notification_loses_no_work(
    stores: Callable[..., TaskStore], registry: TaskTypeRegistry
) -> None:
    """The listener's connection killed by the server: the engine's poll still finds the
    work, and the listener connects again."""
    here, other = stores(), stores()
    engine = WorkerEngine(here, [NoopExecutor()], watch_interval=0.5)
    await engine.start(recover=False)
    runner = asyncio.create_task(engine.run())
    listener = here._listener
    assert listener is not None
    await asyncio.to_thread(listener.connected.wait, 10)
    from tests.support.rawdb import raw_of
    from workers.store._listen import APPLICATION_NAME

    killed = raw_of(other).scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE application_name = ? AND datname = current_database()",
        APPLICATION_NAME,
    )
    assert killed >= 1
    created = await submit(other, registry, [{"key": "n", "type": "NOOP"}])
    await until(lambda: _status(other, created.task_ids["n"], TaskStatus.COMPLETED), within=10)
    await until(lambda: listener.connections >= 2 and listener.connected.is_set(), within=15)
    await engine.stop()
    await asyncio.wait_for(runner, 10)


async def test_a_stop_that_lands_as_a_lease_renewal_returns_ends_the_renewals(
    stores: Callable[..., TaskStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's stop cancels its renewal loop; the cancel may land just as a renewal
    comes back. Python 3.11's ``asyncio.wait_for`` then returns the renewal's result and
    loses the cancel: the loop went on, and a worker told to stop (SIGTERM) never ended. Here
    the cancel lands at that very moment every time: from inside the renewal, as it returns."""
    engine = WorkerEngine(stores(lease_seconds=3.0), [SleepExecutor()], heartbeat_interval=0.05)
    await engine.start(recover=False)
    renew = engine.heartbeat
    renewals = 0

    async def cancelled_as_it_returns() -> None:
        nonlocal renewals
        await renew()
        renewals += 1
        loop.cancel()

    monkeypatch.setattr(engine, "heartbeat", cancelled_as_it_returns)
    loop = asyncio.create_task(engine._heartbeat_loop())
    done, _ = await asyncio.wait({loop}, timeout=5)
    assert done == {loop} and loop.cancelled()
    assert renewals == 1
    await engine.stop()
