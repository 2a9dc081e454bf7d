"""The WorkerEngine with real executors on a real SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.rawdb import RawDB, raw_of
from workers.engine import WorkerEngine
from workers.events import EventBus, Notification, RunChanged, TaskChanged
from workers.executor import BaseExecutor, ExecuteResult, ExecutionContext
from workers.executors.diagnostic import NoopExecutor, SleepExecutor
from workers.records import TaskRecord
from workers.spec import TaskSpec, parse_spec, prepare_run
from workers.states import BackoffPolicy, ErrorType, RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import NoopPayload, TaskType, TaskTypeRegistry

FLAKY = TaskType("FLAKY", NoopPayload, "cpu")


class FlakyExecutor(BaseExecutor):
    """Raises on its first ``fail_times`` attempts, then succeeds."""

    task_type = FLAKY

    def __init__(self, fail_times: int) -> None:
        self.fail_times = fail_times
        self.attempts = 0
        self.failed_calls: list[str] = []

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        self.attempts += 1
        if self.attempts <= self.fail_times:
            raise RuntimeError(f"flaky attempt {self.attempts}")
        return ExecuteResult(result={"attempts": self.attempts})

    async def on_task_failed(self, task: TaskRecord, result: ExecuteResult) -> None:
        self.failed_calls.append(task.id)


async def submit(store: TaskStore, registry: TaskTypeRegistry, tasks: list[dict[str, Any]]) -> Any:
    return await store.create_run(prepare_run(parse_spec({"tasks": tasks}), registry))


async def wait_until(predicate: Callable[[], bool], within: float = 10.0) -> None:
    for _ in range(int(within / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


def engine_for(store: TaskStore, *executors: Any, **kw: Any) -> WorkerEngine:
    kw.setdefault("cancel_grace", 1.0)
    # One data directory on one host: an engine started after another (on a shared database
    # too) takes over what the earlier one left, as after a restart.
    kw.setdefault("home_id", "this-host")
    return WorkerEngine(store, [NoopExecutor(), SleepExecutor(), *executors], **kw)


async def test_runs_a_fan_out_fan_in_dag_to_completion(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    tasks = [{"key": "root", "type": "NOOP"}]
    tasks += [{"key": f"f{i}", "type": "NOOP", "depends_on": ["root"]} for i in range(100)]
    tasks += [{"key": "join", "type": "NOOP", "depends_on": [f"f{i}" for i in range(100)]}]
    created = await submit(store, registry, tasks)
    engine = engine_for(store, max_workers=4)
    await asyncio.wait_for(engine.run(until_idle=True), 60)
    run = await store.get_run(created.run_id)
    assert (run.status, run.done_tasks) == (RunStatus.COMPLETED, 102)
    by_key = {t.key: t for t in await store.list_tasks(created.run_id)}
    join_start = by_key["join"].started_at
    assert join_start is not None
    assert all((by_key[f"f{i}"].completed_at or 0) <= join_start for i in range(100))


async def test_a_raising_executor_is_retried_then_succeeds(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry.register(FLAKY)
    store.backoff = BackoffPolicy(base=0.05, cap=0.1)
    flaky = FlakyExecutor(fail_times=2)
    created = await submit(store, registry, [{"key": "f", "type": "FLAKY", "max_retries": 3}])
    await asyncio.wait_for(engine_for(store, flaky).run(until_idle=True), 30)
    task = (await store.list_tasks(created.run_id))[0]
    assert (task.status, task.retry_count, task.attempt) == (TaskStatus.COMPLETED, 2, 3)
    assert flaky.failed_calls == []


async def test_permanent_failure_calls_on_task_failed_once_and_cascades(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry.register(FLAKY)
    store.backoff = BackoffPolicy(base=0.05, cap=0.1)
    flaky = FlakyExecutor(fail_times=10)
    created = await submit(
        store,
        registry,
        [
            {"key": "f", "type": "FLAKY", "max_retries": 1},
            {"key": "after", "type": "NOOP", "depends_on": ["f"]},
        ],
    )
    await asyncio.wait_for(engine_for(store, flaky).run(until_idle=True), 30)
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    assert tasks["f"].status is TaskStatus.FAILED
    assert tasks["f"].error == "RuntimeError: flaky attempt 2"
    assert tasks["after"].error_type == ErrorType.DEPENDENCY_FAILED
    assert flaky.failed_calls == [tasks["f"].id]
    assert (await store.get_run(created.run_id)).status is RunStatus.FAILED


async def test_no_executor_and_bad_payload_version_are_not_retried(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry.register(FLAKY)
    created = await submit(
        store,
        registry,
        [
            {"key": "orphan", "type": "FLAKY", "max_retries": 5},
            {"key": "future", "type": "NOOP", "max_retries": 5},
        ],
    )
    # As if written by a newer Fredica: submission itself would refuse version 9.
    with raw_of(store).connect() as conn:
        conn.execute(
            "UPDATE task SET payload = '{\"schema_version\": 9}' WHERE id = ?",
            (created.task_ids["future"],),
        )
    await asyncio.wait_for(engine_for(store).run(until_idle=True), 30)
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    if store.shared:
        # Several hosts, perhaps several builds: a task this build cannot run waits for one
        # that can, never failed by the wrong host.
        assert [(t.status, t.attempt) for t in tasks.values()] == [(TaskStatus.PENDING, 0)] * 2
        return
    assert (tasks["orphan"].status, tasks["orphan"].error_type) == (
        TaskStatus.FAILED,
        ErrorType.NO_EXECUTOR,
    )
    assert tasks["future"].error_type == ErrorType.PAYLOAD_ERROR
    assert "schema_version 9 is not supported" in (tasks["future"].error or "")
    assert tasks["orphan"].retry_count == 0 and tasks["future"].retry_count == 0


async def test_cancel_a_running_sleep(store: TaskStore, registry: TaskTypeRegistry) -> None:
    created = await submit(
        store, registry, [{"key": "s", "type": "SLEEP", "payload": {"seconds": 30}}]
    )
    task_id = created.task_ids["s"]
    engine = engine_for(store)
    runner = asyncio.create_task(engine.run(until_idle=True))
    await wait_until(lambda: engine.running_ids == [task_id])
    await asyncio.sleep(0.8)  # progress and checkpoints are written every 0.5 s
    assert await engine.cancel(task_id) == [task_id]
    await asyncio.wait_for(runner, 5)  # stops well before the 30 s sleep would end
    task = await store.get_task(task_id)
    assert (task.status, task.error_type) == (TaskStatus.CANCELLED, ErrorType.CANCELLED)
    assert (task.checkpoint or {}).get("slept", 0) > 0.1


async def test_pause_and_resume_a_running_sleep_keeps_its_progress(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(
        store, registry, [{"key": "s", "type": "SLEEP", "payload": {"seconds": 0.6}}]
    )
    task_id = created.task_ids["s"]
    engine = engine_for(store)
    runner = asyncio.create_task(engine.run(until_idle=True))
    await wait_until(lambda: engine.running_ids == [task_id])
    await asyncio.sleep(0.25)
    assert await engine.pause(task_id) == [task_id]
    await asyncio.sleep(0.2)
    paused = await store.get_task(task_id)
    assert paused.is_paused and paused.status is TaskStatus.RUNNING
    progress = paused.progress
    await asyncio.sleep(0.6)  # longer than the whole sleep: it must not have finished
    assert (await store.get_task(task_id)).status is TaskStatus.RUNNING
    assert (await store.get_task(task_id)).progress == pytest.approx(progress, abs=20)
    await engine.resume(task_id)
    await asyncio.wait_for(runner, 10)
    assert (await store.get_task(task_id)).status is TaskStatus.COMPLETED


async def test_resource_slots_bound_concurrency(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(
        store,
        registry,
        [{"key": f"s{i}", "type": "SLEEP", "payload": {"seconds": 0.3}} for i in range(4)],
    )
    engine = engine_for(store, max_workers=8, slots={"io": 2})
    seen: list[int] = []
    runner = asyncio.create_task(engine.run(until_idle=True))
    while not runner.done():
        seen.append(len(engine.running_ids))
        await asyncio.sleep(0.02)
    assert max(seen) == 2
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED


async def test_pause_queue_stops_claiming(store: TaskStore, registry: TaskTypeRegistry) -> None:
    created = await submit(store, registry, [{"key": "a", "type": "NOOP"}])
    engine = engine_for(store)
    engine.pause_queue()
    await asyncio.wait_for(engine.run(until_idle=True), 5)
    assert (await store.get_task(created.task_ids["a"])).status is TaskStatus.PENDING
    engine.resume_queue()
    await asyncio.wait_for(engine.run(until_idle=True), 5)
    assert (await store.get_task(created.task_ids["a"])).status is TaskStatus.COMPLETED


SPLIT = TaskType("SPLIT", NoopPayload, "cpu")


class SplitExecutor(BaseExecutor):
    """Fans out: three chunk tasks depending on it and a merge depending on them."""

    task_type = SPLIT

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        chunks = [
            TaskSpec(key=f"chunk{i}", type="NOOP", payload={"i": i}, depends_on=[task.key or ""])
            for i in range(3)
        ]
        merge = TaskSpec(key="merge", type="NOOP", depends_on=[c.key for c in chunks])
        bad = getattr(ctx.payload, "bad", False)
        if bad:
            merge = TaskSpec(key="merge", type="NOOP", depends_on=["nowhere"])
        return ExecuteResult(result={"chunks": 3}, new_tasks=(*chunks, merge))


async def test_dynamic_fan_out_from_an_executor(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry.register(SPLIT)
    created = await submit(store, registry, [{"key": "split", "type": "SPLIT"}])
    await asyncio.wait_for(engine_for(store, SplitExecutor()).run(until_idle=True), 20)
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    assert set(tasks) == {"split", "chunk0", "chunk1", "chunk2", "merge"}
    assert all(t.status is TaskStatus.COMPLETED for t in tasks.values())
    merge_start = tasks["merge"].started_at or 0
    assert all((tasks[f"chunk{i}"].completed_at or 1e99) <= merge_start for i in range(3))
    run = await store.get_run(created.run_id)
    assert (run.status, run.total_tasks, run.done_tasks) == (RunStatus.COMPLETED, 5, 5)


async def test_a_bad_fan_out_fails_its_task_and_nothing_is_added(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    registry.register(SPLIT)
    created = await submit(
        store, registry, [{"key": "split", "type": "SPLIT", "payload": {"bad": True}}]
    )
    await asyncio.wait_for(engine_for(store, SplitExecutor()).run(until_idle=True), 20)
    tasks = await store.list_tasks(created.run_id)
    assert [t.key for t in tasks] == ["split"]
    assert tasks[0].status is TaskStatus.FAILED and "fan-out rejected" in (tasks[0].error or "")
    assert "nowhere" in (tasks[0].error or "")


async def test_a_chain_never_waits_for_a_poll(store: TaskStore, registry: TaskTypeRegistry) -> None:
    tasks = [{"key": "n0", "type": "NOOP"}]
    tasks += [{"key": f"n{i}", "type": "NOOP", "depends_on": [f"n{i - 1}"]} for i in range(1, 30)]
    created = await submit(store, registry, tasks)
    # A poll interval of a minute: if any link waited for a poll, this would time out.
    engine = engine_for(store, poll_min=60, poll_max=60)
    await asyncio.wait_for(engine.run(until_idle=True), 15)
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED
    # Each child was claimed in the transaction that completed its parent.
    assert engine.stats.ticks <= 31


async def test_check_skip_completes_without_running(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    class SkippingSleep(SleepExecutor):
        async def can_skip(self, task: TaskRecord) -> bool:
            return True

    created = await submit(
        store,
        registry,
        [{"key": "s", "type": "SLEEP", "payload": {"seconds": 60, "check_skip": True}}],
    )
    engine = WorkerEngine(store, [SkippingSleep()])
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    task = await store.get_task(created.task_ids["s"])
    assert (task.status, task.result) == (TaskStatus.COMPLETED, {"skipped": True})


async def test_events_are_published_and_progress_coalesced(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(
        store, registry, [{"key": "s", "type": "SLEEP", "payload": {"seconds": 1.2}}]
    )
    bus = EventBus(max_rate=5)
    seen: list[Any] = []
    bus.subscribe(seen.append)
    engine = engine_for(store, bus=bus)
    await engine.start(recover=False)
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    await engine.stop()
    task_events = [e for e in seen if isinstance(e, TaskChanged)]
    kinds = [e.kind for e in task_events]
    assert kinds[0] == "started" and kinds[-1] == "completed"
    progress = [e for e in task_events if e.kind == "progress"]
    assert 2 <= len(progress) <= 10  # ~12 reports at 0.1 s ticks, at most 5 a second delivered
    runs = [e for e in seen if isinstance(e, RunChanged)]
    assert [r.status for r in runs] == ["running", "completed"]
    notes = [e for e in seen if isinstance(e, Notification)]
    assert notes and notes[-1].title == "Run completed" and notes[-1].run_id == created.run_id


async def test_stalled_attempt_is_failed_and_retried(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    class Stuck(SleepExecutor):
        stall_timeout = 0.3

        async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
            if task.attempt == 1:
                await ctx.sleep(60)  # reports nothing: stalls
            return ExecuteResult(result={"attempt": task.attempt})

    store.backoff = BackoffPolicy(base=0.05, cap=0.1)
    created = await submit(
        store,
        registry,
        [{"key": "s", "type": "SLEEP", "payload": {"seconds": 1}, "max_retries": 1}],
    )
    engine = WorkerEngine(store, [Stuck()], heartbeat_interval=0.1, cancel_grace=0.5)
    await asyncio.wait_for(engine.run(until_idle=True), 15)
    task = await store.get_task(created.task_ids["s"])
    assert (task.status, task.result, task.retry_count) == (
        TaskStatus.COMPLETED,
        {"attempt": 2},
        1,
    )
    kinds = [e.kind for e in await store.events(task.id)]
    assert "retry_scheduled" in kinds
    retry = next(e for e in await store.events(task.id) if e.kind == "retry_scheduled")
    assert retry.detail is not None and retry.detail["error_type"] == "STALLED"


async def test_a_cancel_written_by_another_process_reaches_the_executor(
    store: TaskStore, registry: TaskTypeRegistry, make_store: Callable[..., TaskStore]
) -> None:
    created = await submit(
        store, registry, [{"key": "s", "type": "SLEEP", "payload": {"seconds": 60}}]
    )
    engine = engine_for(store, heartbeat_interval=0.1)
    runner = asyncio.create_task(engine.run(until_idle=True))
    await wait_until(lambda: bool(engine.running_ids))
    other = make_store()  # as the CLI would, on its own connection
    await other.cancel(created.task_ids["s"])
    await other.close()
    await asyncio.wait_for(runner, 5)
    assert (await store.get_task(created.task_ids["s"])).status is TaskStatus.CANCELLED


@pytest.mark.parametrize("action", ["pause", "cancel"])
async def test_another_process_reaches_a_running_task_before_the_next_heartbeat(
    store: TaskStore, registry: TaskTypeRegistry, make_store: Callable[..., TaskStore], action: str
) -> None:
    # The engine sees another connection's commit within its watch interval (0.5 s) and reads
    # the state of its running tasks then: no waiting for the heartbeat (an hour here).
    created = await submit(
        store, registry, [{"key": "s", "type": "SLEEP", "payload": {"seconds": 60}}]
    )
    task_id = created.task_ids["s"]
    engine = engine_for(store, heartbeat_interval=3600)
    runner = asyncio.create_task(engine.run(until_idle=True))
    await wait_until(lambda: bool(engine.running_ids))
    other = make_store()  # as the CLI would, on its own connection
    said: list[str] = []
    engine.bus.subscribe(
        lambda e: (
            said.append(e.kind) if isinstance(e, TaskChanged) and e.task_id == task_id else None
        )
    )
    if action == "pause":
        await other.set_paused(task_id, True)
        ctx = engine._current[task_id].ctx
        assert ctx is not None
        await wait_until(lambda: ctx.paused, within=2)
        await other.set_paused(task_id, False)
        await wait_until(lambda: not ctx.paused, within=2)
        # Said on the bus, as a pause made through the engine is (the keep-awake hold
        # follows the bus).
        await wait_until(lambda: "resumed" in said, within=2)
        told = [k for k in said if k in ("paused", "resumed")]
        assert [k for i, k in enumerate(told) if not i or told[i - 1] != k] == [
            "paused",
            "resumed",
        ]
    await other.cancel(task_id)
    await other.close()
    await asyncio.wait_for(runner, 3)
    assert (await store.get_task(task_id)).status is TaskStatus.CANCELLED


async def test_priority_then_fifo_through_the_engine(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    await submit(store, registry, [{"key": "low", "type": "NOOP"}])
    await submit(store, registry, [{"key": "high", "type": "NOOP", "priority": 9}])
    await submit(store, registry, [{"key": "low2", "type": "NOOP"}])
    seen: list[str] = []
    bus = EventBus()
    bus.subscribe(
        lambda e: (
            seen.append(e.task_id) if isinstance(e, TaskChanged) and e.kind == "started" else None
        )
    )
    engine = engine_for(store, max_workers=1, bus=bus)
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    keys = [(await store.get_task(t)).key for t in seen]
    assert keys == ["high", "low", "low2"]


async def test_cancel_and_pause_pending_tasks_through_the_engine(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(
        store,
        registry,
        [
            {"key": "a", "type": "NOOP"},
            {"key": "b", "type": "NOOP", "depends_on": ["a"]},
            {"key": "held", "type": "NOOP"},
        ],
    )
    engine = engine_for(store)
    assert set(await engine.cancel(created.task_ids["a"])) == {
        created.task_ids["a"],
        created.task_ids["b"],
    }
    assert await engine.pause(created.task_ids["held"]) == [created.task_ids["held"]]
    await asyncio.wait_for(engine.run(until_idle=True), 10)  # held: nothing runs, it returns
    held = await store.get_task(created.task_ids["held"])
    assert held.status is TaskStatus.PENDING and held.is_paused
    assert await engine.resume(created.run_id) == [created.task_ids["held"]]
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    assert (await store.get_task(created.task_ids["held"])).status is TaskStatus.COMPLETED
    run = await store.get_run(created.run_id)
    assert (run.status, run.cancelled_tasks, run.done_tasks) == (RunStatus.CANCELLED, 2, 1)


async def test_an_executor_that_ignores_cancel_is_forced_after_the_grace_period(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    class Deaf(SleepExecutor):
        async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
            await asyncio.sleep(60)  # never looks at its cancel signal
            return ExecuteResult(result={})

    failed_calls: list[str] = []

    class DeafReporting(Deaf):
        async def on_task_failed(self, task: TaskRecord, result: ExecuteResult) -> None:
            failed_calls.append(str(result.error_type))

    created = await submit(
        store, registry, [{"key": "s", "type": "SLEEP", "payload": {"seconds": 60}}]
    )
    engine = WorkerEngine(store, [DeafReporting()], cancel_grace=0.3)
    runner = asyncio.create_task(engine.run(until_idle=True))
    await wait_until(lambda: bool(engine.running_ids))
    loop = asyncio.get_running_loop()
    began = loop.time()
    await engine.cancel(created.task_ids["s"])
    await asyncio.wait_for(runner, 5)
    assert 0.25 < loop.time() - began < 3
    assert (await store.get_task(created.task_ids["s"])).status is TaskStatus.CANCELLED
    await engine.stop()
    assert failed_calls == ["CANCELLED"]  # on_task_failed once, for the cancel


async def test_run_status_is_published_once_per_real_change(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(
        store,
        registry,
        [{"key": f"n{i}", "type": "SLEEP", "payload": {"seconds": 0}} for i in range(8)],
    )
    bus = EventBus()
    statuses: list[str] = []
    bus.subscribe(lambda e: statuses.append(e.status) if isinstance(e, RunChanged) else None)
    engine = engine_for(store, max_workers=2, bus=bus)
    await engine.start(recover=False)
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    await engine.stop()
    # Completions and the claims they free a slot for share a transaction: the run never
    # shows "pending" half-way through it.
    assert statuses == ["running", "completed"]
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED


async def test_run_until_idle_again_sees_new_work(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    engine = engine_for(store)
    await submit(store, registry, [{"key": "a", "type": "NOOP"}])
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    later = await submit(store, registry, [{"key": "b", "type": "NOOP"}])  # no wake() call
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    assert (await store.get_task(later.task_ids["b"])).status is TaskStatus.COMPLETED


async def test_instant_tasks_are_claimed_run_and_completed_in_one_commit(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    """NOOP runs inline: a chain of ten and eight independent ones complete in one engine
    transaction, with the same events as the usual way, and never more at once than the
    slots allow."""
    chain = [{"key": "c0", "type": "NOOP", "payload": {"i": 0}}]
    chain += [{"key": f"c{i}", "type": "NOOP", "depends_on": [f"c{i - 1}"]} for i in range(1, 10)]
    created = await submit(
        store, registry, chain + [{"key": f"n{i}", "type": "NOOP"} for i in range(8)]
    )
    bus = EventBus()
    seen: list[tuple[str, str]] = []
    bus.subscribe(
        lambda e: seen.append((e.task_id, e.kind)) if isinstance(e, TaskChanged) else None
    )
    statuses: list[str] = []
    bus.subscribe(lambda e: statuses.append(e.status) if isinstance(e, RunChanged) else None)
    engine = engine_for(store, max_workers=2, bus=bus)
    await engine.start(recover=False)
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    await engine.stop()
    assert engine.stats.inline == engine.stats.completed == 18
    assert engine.stats.ticks == 1  # one transaction, one commit
    assert statuses == ["completed"]  # pending -> completed: nothing in between was visible
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    assert all(t.status is TaskStatus.COMPLETED and t.attempt == 1 for t in tasks.values())
    assert tasks["c0"].result == {"i": 0, "schema_version": 1}
    for i in range(1, 10):  # the chain ran in order
        assert tasks[f"c{i}"].started_at >= tasks[f"c{i - 1}"].completed_at  # type: ignore[operator]
    assert sorted(k for _, k in seen) == ["completed"] * 18 + ["started"] * 18
    with raw.connect() as conn:
        kinds = conn.execute("SELECT kind, COUNT(*) FROM task_event GROUP BY kind").fetchall()
    assert sorted(kinds) == [("completed", 18), ("started", 18)]


async def test_inline_is_only_for_what_needs_no_check(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    """A NOOP with ``check_skip`` or with a payload version this Fredica does not support
    goes the usual way (which asks ``can_skip``, or fails it with PAYLOAD_ERROR)."""
    created = await submit(
        store,
        registry,
        [
            {"key": "skip", "type": "NOOP", "payload": {"check_skip": True}},
            {"key": "future", "type": "NOOP", "payload": {"schema_version": 1}},
        ],
    )
    with raw.connect() as conn:
        conn.execute(
            "UPDATE task SET payload = '{\"schema_version\": 99}' WHERE key = ?",
            ("future",),
        )
    engine = engine_for(store, max_workers=2)
    await engine.start(recover=False)
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    await engine.stop()
    assert engine.stats.inline == 0
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    assert tasks["skip"].status is TaskStatus.COMPLETED
    if store.shared:  # a payload version this build does not know waits for one that does
        assert (tasks["future"].status, tasks["future"].attempt) == (TaskStatus.PENDING, 0)
        return
    assert tasks["future"].status is TaskStatus.FAILED
    assert tasks["future"].error_type == "PAYLOAD_ERROR"
