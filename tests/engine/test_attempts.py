"""Attempts of one task in one engine: never two at once, each outcome recorded once.

A new attempt of a task can be claimed while the previous one still winds down: the stall
watchdog retries a task whose executor is slow to stop, or a user cancels and at once retries.
The engine keys its attempts by lease token and starts the new one only once the old one has
stopped; the old one's late outcome is fenced out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from tests.engine.test_engine import submit, wait_until
from workers.engine import WorkerEngine
from workers.events import EventBus, TaskChanged
from workers.executor import BaseExecutor, Cancelled, ExecuteResult, ExecutionContext
from workers.records import TaskRecord
from workers.states import BackoffPolicy, TaskStatus, is_terminal
from workers.store import TaskStore
from workers.tasktypes import NoopPayload, TaskType, TaskTypeRegistry

SLOW_STOP = TaskType("SLOW_STOP", NoopPayload, "cpu")
#: Room for both attempts: what keeps them apart must be the engine, not a lack of slots.
SLOTS = {"cpu": 4}


class SlowToStop(BaseExecutor):
    """Attempt 1 reports nothing until cancelled, then takes ``wind_down`` seconds to stop
    (within the cancel grace) and returns a result anyway; later attempts finish at once.
    Records each attempt's running interval."""

    task_type = SLOW_STOP
    stall_timeout = 0.3

    def __init__(self, wind_down: float) -> None:
        self.wind_down = wind_down
        self.intervals: dict[int, tuple[float, float]] = {}
        self.failed: list[str] = []

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        began = time.monotonic()
        try:
            if task.attempt == 1:
                try:
                    await ctx.sleep(60)
                except Cancelled:
                    await asyncio.sleep(self.wind_down)  # still writing its outputs
                return ExecuteResult(result={"attempt": task.attempt})
            await ctx.report(50, "working", force=True)
            await asyncio.sleep(0.05)
            return ExecuteResult(result={"attempt": task.attempt})
        finally:
            self.intervals[task.attempt] = (began, time.monotonic())

    async def on_task_failed(self, task: TaskRecord, result: ExecuteResult) -> None:
        self.failed.append(str(result.error_type))


def watched_engine(
    store: TaskStore, executor: SlowToStop
) -> tuple[WorkerEngine, list[TaskChanged]]:
    """An engine with room for both attempts, and the task events it publishes."""
    bus = EventBus()
    seen: list[TaskChanged] = []
    bus.subscribe(lambda e: seen.append(e) if isinstance(e, TaskChanged) else None)
    engine = WorkerEngine(
        store, [executor], heartbeat_interval=0.1, cancel_grace=3.0, bus=bus, slots=SLOTS
    )
    return engine, seen


async def settled(store: TaskStore, task_id: str, within: float = 15) -> TaskRecord:
    """The task once its outcome is in the store.

    Not ``engine.running_ids`` going empty: an attempt leaves it at the start of the loop turn
    that commits its outcome (its slot serves that turn's claim), so the store has the outcome
    a moment later, longer on a loaded machine.
    """
    deadline = time.monotonic() + within
    task = await store.get_task(task_id)
    while not is_terminal(task.status) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        task = await store.get_task(task_id)
    return task


def assert_one_after_the_other(executor: SlowToStop) -> None:
    assert sorted(executor.intervals) == [1, 2]
    first_end = executor.intervals[1][1]
    second_start = executor.intervals[2][0]
    assert second_start >= first_end, "attempt 2 ran while attempt 1 still ran"


async def test_a_stall_retry_waits_for_the_stalled_attempt_and_commits_once(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry.register(SLOW_STOP)
    store.backoff = BackoffPolicy(base=0.01, cap=0.01)
    created = await submit(store, registry, [{"key": "s", "type": "SLOW_STOP", "max_retries": 1}])
    executor = SlowToStop(wind_down=1.0)
    engine, seen = watched_engine(store, executor)
    await asyncio.wait_for(engine.run(until_idle=True), 20)
    task = await store.get_task(created.task_ids["s"])
    assert (task.status, task.result, task.attempt) == (TaskStatus.COMPLETED, {"attempt": 2}, 2)
    assert_one_after_the_other(executor)
    events = [e.kind for e in await store.events(task.id)]
    assert events.count("completed") == 1
    # A stall is a failed attempt, reported as one: a retry, not a cancel.
    kinds = [e.kind for e in seen]
    assert "retry" in kinds and "cancelled" not in kinds
    assert engine.stats.cancelled == 0 and engine.stats.retried == 1
    assert executor.failed == []
    assert not engine.running_ids


async def test_a_stall_without_retries_left_fails_once_and_is_not_a_cancel(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry.register(SLOW_STOP)
    created = await submit(store, registry, [{"key": "s", "type": "SLOW_STOP"}])
    executor = SlowToStop(wind_down=0.2)
    engine, seen = watched_engine(store, executor)
    await asyncio.wait_for(engine.run(until_idle=True), 20)
    task = await store.get_task(created.task_ids["s"])
    assert (task.status, task.error_type) == (TaskStatus.FAILED, "STALLED")
    assert [e.kind for e in seen if e.kind in ("failed", "cancelled")] == ["failed"]
    assert executor.failed == ["STALLED"]  # on_task_failed once, with the stall
    assert (engine.stats.failed, engine.stats.cancelled) == (1, 0)


async def test_cancel_then_retry_at_once_runs_the_attempts_one_after_the_other(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry.register(SLOW_STOP)

    class NoStall(SlowToStop):
        stall_timeout = 3600.0

    executor = NoStall(wind_down=1.0)
    created = await submit(store, registry, [{"key": "s", "type": "SLOW_STOP"}])
    task_id = created.task_ids["s"]
    engine = WorkerEngine(store, [executor], heartbeat_interval=0.1, cancel_grace=3.0, slots=SLOTS)
    runner = asyncio.create_task(engine.run())
    try:
        await wait_until(lambda: 1 in executor.intervals or bool(engine.running_ids))
        await asyncio.sleep(0.1)
        await engine.cancel(task_id)
        await store.retry(task_id)
        engine.wake()
        await wait_until(lambda: 2 in executor.intervals, within=15)
        task = await settled(store, task_id)
        assert (task.status, task.result, task.attempt) == (
            TaskStatus.COMPLETED,
            {"attempt": 2},
            2,
        )
        assert_one_after_the_other(executor)
        assert [e.kind for e in await store.events(task_id)].count("completed") == 1
    finally:
        await engine.stop()
        await runner


async def test_a_cancel_and_retry_by_another_process_between_heartbeats_stops_the_old_attempt(
    store: TaskStore, registry: TaskTypeRegistry, make_store: Callable[..., TaskStore]
) -> None:
    """The task id is held by this engine again (the new attempt), but the old attempt's token
    is not the task's any more: it has lost its lease and is stopped."""

    registry.register(SLOW_STOP)

    class NoStall(SlowToStop):
        stall_timeout = 3600.0

    executor = NoStall(wind_down=0.2)
    created = await submit(store, registry, [{"key": "s", "type": "SLOW_STOP"}])
    task_id = created.task_ids["s"]
    engine = WorkerEngine(
        store,
        [executor],
        heartbeat_interval=0.2,
        cancel_grace=3.0,
        watch_interval=3600,
        slots=SLOTS,
    )
    runner = asyncio.create_task(engine.run())
    try:
        await wait_until(lambda: bool(engine.running_ids))
        other = make_store()
        await other.cancel(task_id)
        await other.retry(task_id)
        await other.close()
        engine.wake()  # claims the retried task while attempt 1 still runs
        await wait_until(lambda: 2 in executor.intervals, within=15)
        assert_one_after_the_other(executor)
        task = await settled(store, task_id)
        assert (task.status, task.result) == (TaskStatus.COMPLETED, {"attempt": 2})
    finally:
        await engine.stop()
        await runner
