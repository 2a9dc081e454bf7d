"""Progress rides the engine's turn: a report without a checkpoint is written with the next
turn (which it wakes), in the same commit as the outcomes and claims of that turn; a
checkpoint is written before the report returns. Real engine, real SQLite file."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.engine.test_engine import engine_for, submit
from workers.executor import BaseExecutor, ExecuteResult, ExecutionContext
from workers.records import ProgressWrite, TaskRecord
from workers.states import TaskStatus
from workers.store import TaskStore
from workers.tasktypes import NoopPayload, TaskType, TaskTypeRegistry

REPORTER = TaskType("REPORTER", NoopPayload, "cpu")


class Reporter(BaseExecutor):
    """Reports, then waits to be let go; or reports a checkpoint and reads it back."""

    task_type = REPORTER

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.go = asyncio.Event()
        self.reported = asyncio.Event()
        self.checkpoint_seen: Any = None
        #: The engine's turns when the first report was made (set by a test that asks).
        self.engine: Any = None
        self.ticks_at_report: int | None = None

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        mode = task.payload.get("n")
        if mode == 1:  # a checkpoint: durable once report returns
            await ctx.report(40.0, "saved", checkpoint={"done": 2}, force=True)
            self.checkpoint_seen = (await self.store.get_task(task.id)).checkpoint
            return ExecuteResult(result={})
        if self.engine is not None:  # read here: the turn the report wakes comes after it
            self.ticks_at_report = self.engine.stats.ticks
        await ctx.report(25.0, "a quarter", force=True)
        self.reported.set()
        await self.go.wait()
        await ctx.report(90.0, "last words", force=True)
        return ExecuteResult(result={})


def registry_with_reporter(registry: TaskTypeRegistry) -> TaskTypeRegistry:
    registry.register(REPORTER)
    return registry


async def test_progress_is_written_with_the_turn_it_wakes(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry = registry_with_reporter(registry)
    created = await submit(store, registry, [{"key": "r", "type": "REPORTER", "payload": {}}])
    task_id = created.task_ids["r"]
    executor = Reporter(store)
    engine = engine_for(store, executor, registry=registry)
    executor.engine = engine
    runner = asyncio.create_task(engine.run(until_idle=True))
    await asyncio.wait_for(executor.reported.wait(), 10)
    ticks = executor.ticks_at_report
    assert ticks is not None
    # Nothing else happens in the engine: the report alone brings the write, promptly. (The
    # commit is visible a moment before the engine counts its turn: wait for both.)
    for _ in range(100):
        task = await store.get_task(task_id)
        if task.progress == 25.0 and engine.stats.ticks > ticks:
            break
        await asyncio.sleep(0.01)
    assert (task.status, task.progress, task.status_text) == (
        TaskStatus.RUNNING,
        25.0,
        "a quarter",
    )
    assert engine.stats.ticks == ticks + 1
    # Reported just before the end: written in the commit that completes the task.
    ticks = engine.stats.ticks
    executor.go.set()
    await asyncio.wait_for(runner, 10)
    task = await store.get_task(task_id)
    assert (task.status, task.progress, task.status_text) == (
        TaskStatus.COMPLETED,
        100.0,
        "last words",
    )
    assert engine.stats.ticks == ticks + 1


async def test_a_checkpoint_is_written_before_the_report_returns(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry = registry_with_reporter(registry)
    await submit(store, registry, [{"key": "r", "type": "REPORTER", "payload": {"n": 1}}])
    executor = Reporter(store)
    engine = engine_for(store, executor, registry=registry)
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    assert executor.checkpoint_seen == {"done": 2}


async def test_progress_of_a_lost_lease_is_not_written(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """The write is fenced by the lease, like every write of an attempt."""
    created = await submit(
        store, registry, [{"key": "s", "type": "SLEEP", "payload": {"seconds": 1}}]
    )
    task_id = created.task_ids["s"]
    outcome = await store.tick("w1", limit=1)
    [claimed] = outcome.claimed
    stale = ProgressWrite(task_id, "not-the-lease", {"progress": 70.0, "status_text": "stale"})
    await store.tick("w1", progress=[stale])
    task = await store.get_task(task_id)
    assert (task.progress, task.status_text) != (70.0, "stale")
    ours = ProgressWrite(task_id, claimed.lease_token, {"progress": 70.0, "status_text": "ours"})
    await store.tick("w1", progress=[ours])
    task = await store.get_task(task_id)
    assert (task.progress, task.status_text) == (70.0, "ours")
