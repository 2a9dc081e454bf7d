"""Start-up recovery on a real database: what a dead session left behind is taken over."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fredica_app.errors import DatabaseLocked
from fredica_app.lock import DataDirLock
from workers.engine import WorkerEngine
from workers.executors.diagnostic import NoopExecutor, SleepExecutor
from workers.spec import parse_spec, prepare_run
from workers.states import ErrorType, RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


async def submit(store: TaskStore, registry: TaskTypeRegistry, tasks: list[dict[str, Any]]) -> Any:
    return await store.create_run(prepare_run(parse_spec({"tasks": tasks}), registry))


def sleep(key: str, seconds: float, *deps: str, **kw: Any) -> dict[str, Any]:
    return {
        "key": key,
        "type": "SLEEP",
        "payload": {"seconds": seconds},
        "depends_on": list(deps),
        **kw,
    }


async def test_recovery_of_each_kind_of_unfinished_task(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(
        store,
        registry,
        [
            sleep("claimed", 1),
            sleep("resumable", 1, max_retries=1),
            sleep("no_retries_left", 1),
            sleep("paused", 1),
            sleep("after_failed", 1, "no_retries_left"),
            sleep("waiting", 1, "resumable"),
        ],
    )
    ids = created.task_ids
    held = {c.task.key: c for c in await store.claim("dead-worker", limit=4)}
    assert set(held) == {"claimed", "resumable", "no_retries_left", "paused"}
    for key in ("resumable", "no_retries_left", "paused"):
        await store.mark_running(held[key].id, held[key].lease_token)
    await store.report_progress(
        ids["resumable"], held["resumable"].lease_token, progress=40, checkpoint={"slept": 0.4}
    )
    await store.set_paused(ids["paused"], True)

    report = await store.recover("session-2", resumable_types=["SLEEP"])
    assert (report.requeued, report.kept_paused, report.failed, report.orphaned) == (2, 1, 1, 0)

    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    assert tasks["claimed"].status is TaskStatus.PENDING and tasks["claimed"].retry_count == 0
    resumed = tasks["resumable"]
    assert (resumed.status, resumed.retry_count, resumed.checkpoint) == (
        TaskStatus.PENDING,
        1,
        {"slept": 0.4},
    )
    assert resumed.lease_token is None and resumed.worker_id is None
    assert tasks["paused"].status is TaskStatus.PENDING and tasks["paused"].is_paused
    assert (tasks["no_retries_left"].status, tasks["no_retries_left"].error_type) == (
        TaskStatus.FAILED,
        ErrorType.INTERRUPTED,
    )
    assert tasks["after_failed"].error_type == ErrorType.DEPENDENCY_FAILED
    assert tasks["waiting"].status is TaskStatus.PENDING
    run = await store.get_run(created.run_id)
    assert (run.status, run.pending_tasks, run.running_tasks, run.claimed_tasks) == (
        RunStatus.FAILED,
        4,
        0,
        0,
    )
    assert (run.failed_tasks, run.cancelled_tasks) == (1, 1)

    log = {e.task_id: e for e in await store.restart_log()}
    assert set(log) == {ids[k] for k in ("claimed", "resumable", "no_retries_left", "paused")}
    entry = log[ids["resumable"]]
    assert (entry.action, entry.status_at_restart, entry.progress, entry.disposition) == (
        "requeued",
        "running",
        40.0,
        "pending_review",
    )
    assert log[ids["no_retries_left"]].action == "failed"
    assert log[ids["paused"]].action == "kept_paused"
    assert "recovered" in [e.kind for e in await store.events(ids["resumable"])]

    # A second recovery finds nothing to do.
    again = await store.recover("session-3", resumable_types=["SLEEP"])
    assert again.total == 0

    # The user acts on the log: retrying settles the entry, dismissing the rest.
    await store.retry(ids["no_retries_left"])
    log = {e.task_id: e for e in await store.restart_log()}
    assert log[ids["no_retries_left"]].disposition == "retried"
    assert await store.set_disposition(None, "dismissed") == 3
    assert await store.restart_log(only_pending=True) == []


async def test_orphans_fail(store: TaskStore, registry: TaskTypeRegistry) -> None:
    created = await submit(store, registry, [sleep("a", 1)])
    with store.engine.begin() as conn:  # a run deleted by hand, leaving its task behind
        conn.exec_driver_sql("DELETE FROM workflow_run WHERE id = ?", (created.run_id,))
    report = await store.recover("s", resumable_types=["SLEEP"])
    assert report.orphaned == 1
    task = await store.get_task(created.task_ids["a"])
    assert (task.status, task.error_type) == (TaskStatus.FAILED, ErrorType.ORPHANED)


async def test_engine_start_recovers_and_resumes_a_sleep_from_its_checkpoint(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [sleep("s", 1.0, max_retries=2)])
    [held] = await store.claim("dead", start=True)
    await store.report_progress(held.id, held.lease_token, checkpoint={"slept": 0.9})
    engine = WorkerEngine(store, [NoopExecutor(), SleepExecutor()])
    report = await engine.start()
    assert report is not None and report.requeued == 1
    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    took = loop.time() - began
    await engine.stop()
    task = await store.get_task(created.task_ids["s"])
    assert task.status is TaskStatus.COMPLETED and task.attempt == 2
    assert took < 0.8  # slept only the 0.1 s that was left, not the whole second


async def test_shutdown_leaves_running_work_to_recovery(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [sleep("long", 30, max_retries=1)])
    engine = WorkerEngine(store, [SleepExecutor()])
    await engine.start()
    runner = asyncio.create_task(engine.run())
    for _ in range(200):
        if engine.running_ids:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.7)
    await engine.stop(drain_timeout=0.2)
    await asyncio.wait_for(runner, 5)
    task = await store.get_task(created.task_ids["long"])
    # Not cancelled, not failed: still running in the database, with a checkpoint.
    assert task.status is TaskStatus.RUNNING and task.error_type is None
    assert (task.checkpoint or {}).get("slept", 0) > 0.3
    second = WorkerEngine(store, [SleepExecutor()])
    report = await second.start()
    assert report is not None and report.requeued == 1
    assert (await store.get_task(task.id)).status is TaskStatus.PENDING


async def test_shutdown_does_not_wait_for_a_paused_attempt(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """A paused attempt cannot finish: the drain does not wait for it; it stays paused and
    running in the database, for recovery to keep it held."""
    created = await submit(store, registry, [sleep("held", 30, max_retries=1)])
    engine = WorkerEngine(store, [SleepExecutor()])
    await engine.start()
    runner = asyncio.create_task(engine.run())
    for _ in range(200):
        if engine.running_ids:
            break
        await asyncio.sleep(0.02)
    await engine.pause(created.task_ids["held"])
    loop = asyncio.get_running_loop()
    began = loop.time()
    await engine.stop(drain_timeout=20)
    await asyncio.wait_for(runner, 5)
    assert loop.time() - began < 5
    task = await store.get_task(created.task_ids["held"])
    assert task.status is TaskStatus.RUNNING and task.is_paused and task.error_type is None
    report = await WorkerEngine(store, [SleepExecutor()]).start()
    assert report is not None and report.kept_paused == 1


def test_data_dir_lock_is_exclusive(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path / "engine.lock").acquire()
    assert DataDirLock(tmp_path / "engine.lock").is_held_elsewhere()
    with pytest.raises(DatabaseLocked, match=r"already running .*pid"):
        DataDirLock(tmp_path / "engine.lock").acquire()
    first.release()
    with DataDirLock(tmp_path / "engine.lock"):
        pass
    assert not DataDirLock(tmp_path / "engine.lock").is_held_elsewhere()
