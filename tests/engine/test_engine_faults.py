"""Errors inside the engine's transactions: a task's bad data fails that task, never the engine;
a full disk or a lock another program keeps is waited out (nothing new claimed meanwhile); any
other failing database stops the engine cleanly, leaves the store consistent, and the next
start finishes everything exactly once."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from tests.engine.test_engine import engine_for, submit
from tests.support.invariants import completed_events, queue_problems
from tests.support.rawdb import RawDB
from workers.errors import StoreUnavailable
from workers.events import EngineHeld, Event
from workers.executor import BaseExecutor, ExecuteResult, ExecutionContext
from workers.records import TaskRecord
from workers.spec import TaskSpec
from workers.states import ErrorType, RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import NoopPayload, TaskType, TaskTypeRegistry

SPAWN = TaskType("SPAWN", NoopPayload, "cpu")
ODD = TaskType("ODD", NoopPayload, "cpu")


class Spawner(BaseExecutor):
    """Fans out one NOOP whose idempotency key is ``key``."""

    task_type = SPAWN

    def __init__(self, key: str) -> None:
        self.key = key

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        child = TaskSpec(key="child", type="NOOP", idempotency_key=self.key)
        return ExecuteResult(result={"spawned": 1}, new_tasks=(child,))


class OddResult(BaseExecutor):
    """Returns a result that is not JSON."""

    task_type = ODD

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        return ExecuteResult(result={"when": object()})


async def test_a_fan_out_whose_key_collides_fails_its_task_alone(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry.register(SPAWN)
    # An active task holds the key: a held (paused) task of another run.
    holder = await submit(store, registry, [{"key": "h", "type": "NOOP", "idempotency_key": "k"}])
    await store.set_paused(holder.task_ids["h"], True)
    created = await submit(
        store,
        registry,
        [
            {"key": "p", "type": "SPAWN"},
            {"key": "other", "type": "SLEEP", "payload": {"seconds": 0.1}},
        ],
    )
    engine = engine_for(store, Spawner("k"))
    await asyncio.wait_for(engine.run(until_idle=True), 20)  # returns: the engine lives
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    assert tasks["p"].status is TaskStatus.FAILED
    assert tasks["p"].error_type == ErrorType.BAD_RESULT
    assert "idempotency key is held by an active task" in (tasks["p"].error or "")
    assert tasks["other"].status is TaskStatus.COMPLETED  # unrelated work ran
    assert "child" not in tasks  # nothing of the fan-out was added
    assert (await store.get_run(created.run_id)).status is RunStatus.FAILED
    # Not retried: a second start does not run it again and crash on it.
    again = engine_for(store, Spawner("k"))
    await again.start()
    await asyncio.wait_for(again.run(until_idle=True), 10)
    assert (await store.get_task(tasks["p"].id)).attempt == 1


async def test_a_result_that_is_not_json_fails_its_task_alone(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    tasks = await beside_a_sleep(store, registry, ODD, OddResult())
    assert (tasks["odd"].status, tasks["odd"].error_type) == (TaskStatus.FAILED, "BAD_RESULT")
    assert "not JSON" in (tasks["odd"].error or "")
    assert tasks["fine"].status is TaskStatus.COMPLETED
    assert queue_problems(raw) == []


LONE = TaskType("LONE", NoopPayload, "cpu")
#: A file name's byte that is not UTF-8, as Python holds it (``caf\\xe9.avi``), and a lone
#: surrogate no byte makes: text SQLite refuses to encode.
UNDECODABLE = "caf\udce9.avi"
BROKEN = "half a pair: \ud800"


class LoneSurrogates(BaseExecutor):
    """Says unencodable things: a status line, a pause reason, then fails with an error."""

    task_type = LONE

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        await ctx.report(10, f"reading {UNDECODABLE}", force=True)
        await ctx.request_pause(f"no space for {UNDECODABLE}")
        await ctx.request_resume()
        return ExecuteResult(error=f"cannot open {UNDECODABLE} ({BROKEN})", error_type="IO_ERROR")


async def test_unencodable_texts_are_stored_cleaned_and_the_engine_lives(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    """An error, a status line and a pause reason holding lone surrogates (a file name that is
    not UTF-8): stored with U+FFFD where the bad bytes were, the other task of the turn
    unharmed, and the engine goes on (before: ``engine.run()`` raised UnicodeEncodeError and
    left its tasks ``running``)."""
    tasks = await beside_a_sleep(store, registry, LONE, LoneSurrogates())
    lone = tasks["lone"]
    assert (lone.status, lone.error_type) == (TaskStatus.FAILED, ErrorType.IO_ERROR)
    assert lone.error == "cannot open caf\ufffd.avi (half a pair: \ufffd)"
    assert tasks["fine"].status is TaskStatus.COMPLETED
    paused = [e for e in await store.events(lone.id) if e.kind == "paused"]
    assert paused and paused[0].detail == {"reason": "no space for caf\ufffd.avi"}
    assert queue_problems(raw) == []


async def test_a_failure_that_cannot_be_written_fails_its_task_alone(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the store cannot write of one failure (here: the write raises), the task is
    failed with the reason and the turn's other outcomes are kept."""
    original = type(store)._fail_tx
    refused = []

    def refuse_io_errors(
        self: Any, conn: Any, task_id: str, token: str, error: str, *a: Any
    ) -> Any:
        if a[0] == ErrorType.IO_ERROR:
            refused.append(task_id)
            raise sqlite3.IntegrityError("CHECK constraint failed")
        return original(self, conn, task_id, token, error, *a)

    monkeypatch.setattr(type(store), "_fail_tx", refuse_io_errors)
    tasks = await beside_a_sleep(store, registry, LONE, LoneSurrogates())
    assert refused == [tasks["lone"].id]
    assert (tasks["lone"].status, tasks["lone"].error_type) == (TaskStatus.FAILED, "BAD_RESULT")
    assert "its outcome could not be recorded (IntegrityError" in (tasks["lone"].error or "")
    assert tasks["fine"].status is TaskStatus.COMPLETED
    assert queue_problems(raw) == []


async def beside_a_sleep(
    store: TaskStore, registry: TaskTypeRegistry, kind: TaskType, executor: BaseExecutor
) -> dict[str, TaskRecord]:
    """Run a task of ``kind`` (key: its name in lower case) beside a short SLEEP ("fine") in
    one run until idle; their tasks by key."""
    registry.register(kind)
    key = kind.name.lower()
    created = await submit(
        store,
        registry,
        [
            {"key": key, "type": kind.name},
            {"key": "fine", "type": "SLEEP", "payload": {"seconds": 0.1}},
        ],
    )
    await asyncio.wait_for(engine_for(store, executor).run(until_idle=True), 20)
    return {t.key: t for t in await store.list_tasks(created.run_id)}


def fail_write(store: TaskStore, nth: int, message: str) -> Callable[[], int]:
    """Make the ``nth`` write transaction from now fail as SQLite does (after its statements,
    before its commit: rolled back). Returns a counter of the writes seen."""
    original = store._tx
    seen = 0

    def tx(fn: Callable[..., Any], *args: Any) -> Any:
        nonlocal seen
        seen += 1
        if seen != nth:
            return original(fn, *args)

        def then_fail(conn: sa.Connection, *a: Any) -> Any:
            fn(conn, *a)
            raise sa.exc.OperationalError("COMMIT", {}, sqlite3.OperationalError(message))

        return original(then_fail, *args)

    store._tx = tx  # type: ignore[method-assign]
    return lambda: seen


DAG = [
    {"key": "a", "type": "NOOP"},
    {"key": "s1", "type": "SLEEP", "payload": {"seconds": 0.3}, "depends_on": ["a"]},
    {"key": "s2", "type": "SLEEP", "payload": {"seconds": 0.2}, "depends_on": ["a"]},
    {"key": "b", "type": "NOOP", "depends_on": ["s1", "s2"]},
    {"key": "s3", "type": "SLEEP", "payload": {"seconds": 0.2}, "depends_on": ["b"]},
]


@pytest.mark.parametrize("nth", range(1, 13))
async def test_a_database_error_at_any_commit_stops_the_engine_cleanly(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB, nth: int
) -> None:
    """Each of the first dozen write transactions of a run (claims, progress, checkpoints,
    completions) fails in turn with an I/O error: nothing to wait for."""
    created = await submit(store, registry, DAG)
    engine = engine_for(store, heartbeat_interval=0.05)
    await engine.start()
    writes = fail_write(store, nth, "disk I/O error")
    run = asyncio.create_task(engine.run(until_idle=True))
    with pytest.raises(StoreUnavailable, match="I/O error"):
        await asyncio.wait_for(run, 20)
    assert writes() >= nth
    assert not engine.running_ids
    assert queue_problems(raw) == []  # the failed transaction left nothing half-written
    await engine.stop()  # writes nothing more, raises nothing

    # The next start (recovery first) finishes every task, each exactly once.
    restarted = engine_for(store)
    await restarted.start()
    await asyncio.wait_for(restarted.run(until_idle=True), 30)
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED
    counts = completed_events(raw)
    assert sorted(counts.values()) == [1] * len(DAG)
    assert queue_problems(raw) == []


@pytest.mark.parametrize(
    "message", ["database or disk is full", "database is locked"], ids=["full", "locked"]
)
@pytest.mark.parametrize("nth", range(1, 13))
async def test_a_full_disk_or_a_lock_at_any_commit_is_waited_out(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB, nth: int, message: str
) -> None:
    """Each of the first dozen write transactions fails in turn as when the disk is full (or
    another program keeps the database locked): the engine does not stop. It claims nothing
    while it cannot write, says so once, and when the write goes through again it goes on in
    the same run: every task completed, each exactly once, nothing half-written."""
    created = await submit(store, registry, DAG)
    engine = engine_for(store, heartbeat_interval=0.05)
    events: list[Event] = []
    engine.bus.subscribe(events.append)
    await engine.start()
    writes = fail_write(store, nth, message)
    await asyncio.wait_for(engine.run(until_idle=True), 30)
    assert writes() >= nth
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED
    assert sorted(completed_events(raw).values()) == [1] * len(DAG)
    assert queue_problems(raw) == []
    held = [e.reason for e in events if isinstance(e, EngineHeld)]
    assert len(held) == 2 and held[1] is None, held  # told once, then told it is over
    assert held[0] is not None and ("full" in held[0] or "locked" in held[0])
    assert engine.held is None


async def test_the_engine_claims_nothing_while_it_cannot_write_and_goes_on_after(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    """Every write fails "full" for a while: what runs finishes (its end kept in memory),
    nothing new is claimed; once writes go through, the ends are recorded and the rest runs."""
    chain = [{"key": "s1", "type": "SLEEP", "payload": {"seconds": 0.3}}] + [
        {"key": f"n{i}", "type": "NOOP", "depends_on": ["s1"]} for i in range(3)
    ]
    created = await submit(store, registry, chain)
    engine = engine_for(store)
    await engine.start()
    original = store._tx
    failing = True

    def tx(fn: Callable[..., Any], *args: Any) -> Any:
        if not failing or (engine.held is None and not engine.running_ids):
            return original(fn, *args)  # the first claim goes through

        def then_fail(conn: sa.Connection, *a: Any) -> Any:
            fn(conn, *a)
            raise sa.exc.OperationalError("COMMIT", {}, sqlite3.OperationalError("disk is full"))

        return original(then_fail, *args)

    store._tx = tx  # type: ignore[method-assign]
    run = asyncio.create_task(engine.run(until_idle=True))
    for _ in range(200):
        await asyncio.sleep(0.05)
        if engine.held is not None and not engine.running_ids:
            break
    assert engine.held is not None and "full" in str(engine.held)
    await asyncio.sleep(1.0)  # held: the sleep ended, its end is not written, nothing claimed
    assert not run.done()
    statuses = {t.id: t.status for t in await store.list_tasks(created.run_id)}
    assert statuses[created.task_ids["s1"]] is TaskStatus.RUNNING
    assert [statuses[created.task_ids[f"n{i}"]] for i in range(3)] == [TaskStatus.PENDING] * 3
    failing = False
    await asyncio.wait_for(run, 30)
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED
    assert sorted(completed_events(raw).values()) == [1] * len(chain)
    assert queue_problems(raw) == []


async def test_a_read_only_database_stops_the_engine_with_one_clear_error(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    """Read-only as the database reports it (``PRAGMA query_only`` on the store's SQLite
    connections: this test runs as root, for whom file permissions do not make a file
    read-only; on PostgreSQL, read-only transactions, as on a standby server)."""
    await submit(store, registry, DAG)

    @sa.event.listens_for(store.engine, "connect")
    def read_only(dbapi_conn: Any, _: Any) -> None:
        if store.dialect == "sqlite":
            dbapi_conn.execute("PRAGMA query_only = ON")
        else:
            dbapi_conn.execute("SET default_transaction_read_only = on")
            dbapi_conn.commit()

    store._close_write_conn()
    store.engine.pool.dispose()
    engine = engine_for(store)
    with pytest.raises(StoreUnavailable, match="cannot be written"):
        await engine.start()  # recovery is the first write
    with pytest.raises(StoreUnavailable, match="cannot be written"):
        await asyncio.wait_for(engine.run(until_idle=True), 10)
    assert queue_problems(raw) == []
