"""Slots of paused attempts (docs/architecture.md): a paused task that holds nothing lends its
slot to other work, and on resume waits for a free slot before it goes on; one that holds its
resources, or does not stop for the pause, keeps it. Real engine, real SQLite file."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.engine.test_engine import engine_for, submit, wait_until
from workers.engine import WorkerEngine
from workers.events import EventBus, TaskChanged
from workers.executor import BaseExecutor, ExecuteResult, ExecutionContext
from workers.records import TaskRecord
from workers.states import ErrorType, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import NoopPayload, TaskType, TaskTypeRegistry

HOLD = TaskType("HOLD", NoopPayload, "gpu")
BUSY = TaskType("BUSY", NoopPayload, "gpu")
SLOW = TaskType("SLOW_TO_STOP", NoopPayload, "gpu")
FINISHING = TaskType("FINISHES_LIGHT", NoopPayload, "gpu")


class HoldingExecutor(BaseExecutor):
    """Stops for a pause but keeps its resources (a model left in GPU memory)."""

    task_type = HOLD

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        for _ in range(10):
            if ctx.paused:
                ctx.parked(held=True)
                await ctx.resume_event.wait()
            await ctx.sleep(0.05)
        return ExecuteResult(result={})


class BusyExecutor(BaseExecutor):
    """Works for ``seconds`` without ever looking at the pause channel."""

    task_type = BUSY

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        await ctx.sleep(self.seconds)
        return ExecuteResult(result={})


class SlowToStopExecutor(BaseExecutor):
    """Finishes the piece of work in hand (``seconds``, reporting half-way) before it stops
    for a pause — as a transcription finishes decoding its window."""

    task_type = SLOW

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        await ctx.report(10.0, "working", force=True)
        while not ctx.paused:
            await ctx.sleep(0.02)
        await ctx.sleep(self.seconds / 2)
        await ctx.report(20.0, "finishing a piece", force=True)
        await ctx.sleep(self.seconds / 2)
        await ctx.wait_if_paused()
        return ExecuteResult(result={})


def gpu_sleep(key: str, seconds: float) -> dict[str, Any]:
    return {"key": key, "type": "SLEEP", "payload": {"seconds": seconds}, "resource": "gpu"}


def gpu_registry(registry: TaskTypeRegistry) -> TaskTypeRegistry:
    for t in (HOLD, BUSY, SLOW, FINISHING):
        if t.name not in registry:
            registry.register(t)
    return registry


def gpu_engine(store: TaskStore, *executors: Any, bus: EventBus | None = None) -> WorkerEngine:
    return engine_for(store, *executors, max_workers=4, slots={"gpu": 1}, bus=bus)


async def text_of(store: TaskStore, task_id: str, prefix: str, within: float = 5.0) -> str:
    """Wait until the task's status_text starts with ``prefix``; return it."""
    deadline = time.monotonic() + within
    while True:
        text = (await store.get_task(task_id)).status_text or ""
        if text.startswith(prefix):
            return text
        assert time.monotonic() < deadline, f"status_text is {text!r}, not {prefix}…"
        await asyncio.sleep(0.05)


def recorded(bus: EventBus) -> list[tuple[str, str, float]]:
    events: list[tuple[str, str, float]] = []

    def note(event: object) -> None:
        if isinstance(event, TaskChanged):
            events.append((event.task_id, event.kind, time.monotonic()))

    bus.subscribe(note)
    return events


def first(events: list[tuple[str, str, float]], task_id: str, kind: str) -> float:
    return next(at for t, k, at in events if t == task_id and k == kind)


async def test_a_paused_task_lends_its_slot_and_waits_for_a_free_one_to_resume(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [gpu_sleep("a", 1.0), gpu_sleep("b", 0.8)])
    a, b = created.task_ids["a"], created.task_ids["b"]
    bus = EventBus()
    events = recorded(bus)
    engine = gpu_engine(store, bus=bus)
    runner = asyncio.create_task(engine.run(until_idle=True))
    await wait_until(lambda: engine.running_ids == [a])
    await asyncio.sleep(0.3)
    assert await engine.pause(a) == [a]
    # A stopped and holds nothing: B gets the one GPU slot while A is paused.
    await wait_until(lambda: b in engine.running_ids)
    assert (await store.get_task(a)).is_paused
    # Resumed while B holds the slot: A waits for it, still stopped, and says so.
    await engine.resume(a)
    assert await text_of(store, a, "waiting") == "waiting for a free GPU slot"
    waiting = await store.get_task(a)
    assert not waiting.is_paused and waiting.status is TaskStatus.RUNNING
    slept = (waiting.checkpoint or {})["slept"]
    await asyncio.sleep(0.3)
    assert (await store.get_task(b)).status is TaskStatus.RUNNING
    assert (await store.get_task(a)).checkpoint == waiting.checkpoint  # A does not move
    await asyncio.wait_for(runner, 15)
    done = {t: await store.get_task(t) for t in (a, b)}
    assert all(t.status is TaskStatus.COMPLETED for t in done.values())
    assert first(events, b, "started") > first(events, a, "paused")
    resumed = [at for t, k, at in events if t == a and k == "resumed"]
    assert resumed[-1] >= first(events, b, "completed")  # A went on once B had finished
    assert 0.2 < slept < 1.0


@pytest.mark.parametrize("kind", ["HOLD", "BUSY"])
async def test_a_paused_task_that_holds_its_resources_or_goes_on_keeps_its_slot(
    store: TaskStore, registry: TaskTypeRegistry, kind: str
) -> None:
    # HOLD stops for the pause but keeps its model in GPU memory; BUSY never looks at the
    # pause channel: lending either one's slot would put two tasks on one GPU.
    registry = gpu_registry(registry)
    created = await submit(store, registry, [{"key": "a", "type": kind}, gpu_sleep("b", 0.1)])
    a, b = created.task_ids["a"], created.task_ids["b"]
    bus = EventBus()
    events = recorded(bus)
    executor = HoldingExecutor() if kind == "HOLD" else BusyExecutor(1.5)
    engine = gpu_engine(store, executor, bus=bus)
    runner = asyncio.create_task(engine.run(until_idle=True))
    await wait_until(lambda: engine.running_ids == [a])
    await engine.pause(a)
    await asyncio.sleep(0.6)
    assert engine.running_ids == [a]
    assert (await store.get_task(b)).status is TaskStatus.PENDING
    await engine.resume(a)
    await asyncio.wait_for(runner, 10)
    assert first(events, b, "started") >= first(events, a, "completed")
    assert (await store.get_task(b)).status is TaskStatus.COMPLETED


async def test_a_running_task_is_pausing_until_it_has_stopped(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry = gpu_registry(registry)
    tasks = [
        {"key": "a", "type": "SLOW_TO_STOP"},
        {"key": "b", "type": "NOOP", "depends_on": ["a"]},
    ]
    created = await submit(store, registry, tasks)
    a, b = created.task_ids["a"], created.task_ids["b"]
    engine = gpu_engine(store, SlowToStopExecutor(1.0))
    runner = asyncio.create_task(engine.run(until_idle=True))
    await text_of(store, a, "working")
    await engine.pause(a)
    await engine.pause(b)
    # Held before it runs, B is paused at once; A is not, until its attempt has stopped.
    assert (await store.get_task(b)).status_text == "paused"
    assert (await store.get_task(a)).status_text == "pausing…"
    # What it reports meanwhile does not hide that it is still to stop.
    assert await text_of(store, a, "pausing… (") == "pausing… (finishing a piece)"
    assert await text_of(store, a, "paused", within=3) == "paused"
    task = await store.get_task(a)
    assert task.is_paused and task.status is TaskStatus.RUNNING and task.progress == 20.0
    await engine.resume(b)
    await engine.resume(a)
    await asyncio.wait_for(runner, 10)
    done = [(await store.get_task(t)).status for t in (a, b)]
    assert done == [TaskStatus.COMPLETED, TaskStatus.COMPLETED]


async def test_a_task_waiting_for_a_slot_can_be_cancelled(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [gpu_sleep("a", 5.0), gpu_sleep("b", 1.0)])
    a, b = created.task_ids["a"], created.task_ids["b"]
    engine = gpu_engine(store)
    runner = asyncio.create_task(engine.run(until_idle=True))
    await wait_until(lambda: engine.running_ids == [a])
    await engine.pause(a)
    await wait_until(lambda: b in engine.running_ids)
    await engine.resume(a)
    await text_of(store, a, "waiting for a free GPU slot")
    await engine.cancel(a)
    await wait_until(lambda: a not in engine.running_ids, within=3)
    assert (await store.get_task(b)).status is TaskStatus.RUNNING  # B is left alone
    await asyncio.wait_for(runner, 10)
    cancelled, finished = await store.get_task(a), await store.get_task(b)
    assert (cancelled.status, cancelled.error_type) == (TaskStatus.CANCELLED, ErrorType.CANCELLED)
    assert finished.status is TaskStatus.COMPLETED


# --- an attempt whose heavy part is done --------------------------------------------------


class FinishingExecutor(BaseExecutor):
    """Its heavy part, then ``ctx.finishing()`` and a light tail that lasts until another task
    has started (as a job checks and syncs its output while the next file's encode runs), or
    ``tail`` seconds."""

    task_type = FINISHING

    def __init__(self, tail: float) -> None:
        self.tail = tail
        self.started: list[str] = []
        self.overlapped: dict[str, bool] = {}
        self._another = asyncio.Event()

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        self.started.append(task.id)
        if len(self.started) > 1:
            self._another.set()
        await ctx.sleep(0.1)  # the heavy part
        ctx.finishing()
        try:
            await asyncio.wait_for(self._another.wait(), self.tail)
            self.overlapped[task.id] = True
        except TimeoutError:
            self.overlapped[task.id] = False
        return ExecuteResult(result={})


def finishing_task(key: str) -> dict[str, Any]:
    return {"key": key, "type": FINISHING.name, "payload": {}}


@pytest.mark.parametrize(
    ("max_workers", "overlaps"),
    [
        pytest.param(4, True, id="the next starts while the first checks its output"),
        pytest.param(1, False, id="max_workers 1: the first keeps its place to its end"),
    ],
)
async def test_a_finishing_task_gives_its_class_slot_to_the_next_one(
    store: TaskStore, registry: TaskTypeRegistry, max_workers: int, overlaps: bool
) -> None:
    """One gpu slot, two tasks: the first says its heavy part is done, then lingers."""
    gpu_registry(registry)
    created = await submit(store, registry, [finishing_task("a"), finishing_task("b")])
    executor = FinishingExecutor(tail=5.0 if overlaps else 0.5)
    engine = engine_for(store, executor, max_workers=max_workers, slots={"gpu": 1})
    await asyncio.wait_for(engine.run(until_idle=True), 20)
    first_id, second_id = executor.started
    assert executor.overlapped[first_id] is overlaps
    tasks = await store.list_tasks(created.run_id)
    assert all(t.status is TaskStatus.COMPLETED for t in tasks)
    by_id = {t.id: t for t in tasks}
    second_start, first_end = by_id[second_id].started_at, by_id[first_id].completed_at
    assert second_start is not None and first_end is not None
    assert (second_start < first_end) is overlaps
