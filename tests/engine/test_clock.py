"""The host's wall clock jumping back an hour or forward a day under the queue: no task runs
twice, none is stranded. The store keeps one clock for the times several processes read
(leases, retry timers): it never goes back, and a timer set before the clock went back is
due, not an hour late. Stall timers and ETAs use the monotonic clock (test_engine.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.engine.test_engine import FLAKY, FlakyExecutor, engine_for, submit, wait_until
from tests.support.invariants import completed_events, queue_problems
from workers.db import create_sqlite_engine
from workers.states import BackoffPolicy, RunStatus, TaskStatus
from workers.store import TaskStore
from workers.store._base import _Clock
from workers.tasktypes import TaskTypeRegistry

HOUR, DAY = 3600.0, 86400.0


class Wall:
    """A wall clock the test moves: real time plus a shift."""

    def __init__(self) -> None:
        self.shift = 0.0

    def __call__(self) -> float:
        return time.time() + self.shift


def test_the_store_clock_never_goes_back_and_follows_a_jump_forward() -> None:
    wall, mono = [1_000_000.0], [50.0]
    clock = _Clock(lambda: wall[0], lambda: mono[0])
    first = clock()
    wall[0] -= HOUR  # the wall clock jumps back an hour; 2 s pass
    mono[0] += 2.0
    assert clock() == first + 2.0  # on from where it was, at the monotonic clock's rate
    mono[0] += 3.0
    wall[0] += 3.0
    assert clock() == first + 5.0
    wall[0] += DAY  # forward a day (or the machine slept: the monotonic clock did not move)
    assert clock() == wall[0]
    before = clock()
    assert clock() > before  # strictly increasing, whatever the sources say


async def test_a_retry_timer_runs_out_on_time_when_the_clock_goes_back_an_hour(
    db_path: Path, registry: TaskTypeRegistry
) -> None:
    """The attempt fails, its retry is set 0.3 s ahead; then the wall clock goes back an hour.
    Before: the store's clock stood still until the wall clock caught up, and the retry
    waited the hour. Now it runs after its 0.3 s."""
    registry.register(FLAKY)
    wall = Wall()
    store = TaskStore(create_sqlite_engine(db_path), clock=wall, monotonic=time.monotonic)
    store.backoff = BackoffPolicy(base=0.3, cap=0.3, jitter=0.0)
    try:
        flaky = FlakyExecutor(fail_times=1)
        created = await submit(store, registry, [{"key": "f", "type": "FLAKY", "max_retries": 2}])
        engine = engine_for(store, flaky, poll_min=0.05, poll_max=0.2)
        run = asyncio.create_task(engine.run(until_idle=True))
        await wait_until(lambda: flaky.attempts >= 1)
        wall.shift = -HOUR
        await asyncio.wait_for(run, 10)
        [task] = await store.list_tasks(created.run_id)
        assert (task.status, task.attempt) == (TaskStatus.COMPLETED, 2)
    finally:
        await store.close()


async def test_a_retry_timer_set_before_the_clock_went_back_is_due_at_the_next_start(
    db_path: Path, registry: TaskTypeRegistry
) -> None:
    """A process set the timer, then the machine restarted with its clock an hour behind: the
    new process's clock is behind the stored timer by more than any backoff, so the timer
    was set before the clock went back: due (before: stranded for the hour)."""
    registry.register(FLAKY)
    store = TaskStore(create_sqlite_engine(db_path))
    store.backoff = BackoffPolicy(base=2.0, cap=2.0, jitter=0.0)
    flaky = FlakyExecutor(fail_times=1)
    created = await submit(store, registry, [{"key": "f", "type": "FLAKY", "max_retries": 2}])
    engine = engine_for(store, flaky)
    await engine.start()
    run = asyncio.create_task(engine.run())
    await wait_until(lambda: flaky.attempts >= 1)
    await asyncio.sleep(0.2)  # its failure recorded, the retry two seconds ahead
    await engine.stop()
    await run
    await store.close()
    [task] = await TaskStore(create_sqlite_engine(db_path)).list_tasks(created.run_id)
    assert task.status is TaskStatus.PENDING and task.next_run_at is not None

    wall = Wall()
    wall.shift = -HOUR
    later = TaskStore(create_sqlite_engine(db_path), clock=wall, monotonic=time.monotonic)
    later.backoff = store.backoff
    try:
        restarted = engine_for(later, flaky)
        started = time.monotonic()
        await asyncio.wait_for(restarted.run(until_idle=True), 20)
        assert time.monotonic() - started < 10
        [task] = await later.list_tasks(created.run_id)
        assert (task.status, task.attempt) == (TaskStatus.COMPLETED, 2)
    finally:
        await later.close()


async def test_a_jump_forward_a_day_under_running_work_runs_nothing_twice(
    db_path: Path, registry: TaskTypeRegistry
) -> None:
    """Leases and heartbeats written under a clock that jumps a day ahead mid-run: every task
    completes exactly once, nothing left running or pending."""
    wall = Wall()
    store = TaskStore(create_sqlite_engine(db_path), clock=wall, monotonic=time.monotonic)
    try:
        tasks = [{"key": f"s{i}", "type": "SLEEP", "payload": {"seconds": 0.6}} for i in range(6)]
        created = await submit(store, registry, tasks)
        engine = engine_for(store, max_workers=3, heartbeat_interval=0.1)
        run = asyncio.create_task(engine.run(until_idle=True))
        await asyncio.sleep(0.3)
        wall.shift = DAY
        await asyncio.sleep(0.3)
        wall.shift = DAY - HOUR  # and back an hour, for good measure
        await asyncio.wait_for(run, 20)
        assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED
        assert sorted(completed_events(db_path).values()) == [1] * len(tasks)
        assert queue_problems(db_path) == []
    finally:
        await store.close()
