"""The engine driving real task endpoints: SLEEP_SUBPROCESS through a real websockets server
(in this test's loop, on 127.0.0.1:0) and real child processes; and through the app's own
endpoints server process, killed mid-job."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable
from typing import Any

import psutil
import pytest

from fredica_app.endpoints import EndpointsProcess
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.support.process_table import assert_no_job_process_left, job_processes
from workers.engine import WorkerEngine
from workers.executors.diagnostic import SleepSubprocessExecutor
from workers.executors.websocket import EndpointsAddress
from workers.spec import parse_spec, prepare_run
from workers.states import BackoffPolicy, ErrorType, RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry

TOKEN = "engine-side-token"


@pytest.fixture
async def address() -> AsyncIterator[Callable[[], Any]]:
    server = EndpointServer(ENDPOINTS, TOKEN)
    port = await server.start()

    async def source() -> EndpointsAddress:
        return EndpointsAddress("127.0.0.1", port, TOKEN)

    yield source
    await server.close()
    await assert_no_job_process_left()


async def submit(store: TaskStore, registry: TaskTypeRegistry, **payload: Any) -> str:
    max_retries = payload.pop("max_retries", 0)
    spec = {
        "tasks": [
            {"key": "s", "type": "SLEEP_SUBPROCESS", "payload": payload, "max_retries": max_retries}
        ]
    }
    created = await store.create_run(prepare_run(parse_spec(spec), registry))
    return created.task_ids["s"]


def engine(store: TaskStore, source: Callable[[], Any], **kw: Any) -> WorkerEngine:
    kw.setdefault("cancel_grace", 5.0)
    return WorkerEngine(store, [SleepSubprocessExecutor(source)], **kw)


async def until(predicate: Callable[[], Any], within: float = 20.0) -> None:
    for _ in range(int(within / 0.05)):
        if await predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


async def test_happy_path(
    store: TaskStore, registry: TaskTypeRegistry, address: Callable[[], Any]
) -> None:
    task_id = await submit(store, registry, seconds=0.5)
    await asyncio.wait_for(engine(store, address).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert (task.status, task.result, task.progress) == (
        TaskStatus.COMPLETED,
        {"slept": 0.5},
        100.0,
    )


async def test_cancel_while_running(
    store: TaskStore, registry: TaskTypeRegistry, address: Callable[[], Any]
) -> None:
    task_id = await submit(store, registry, seconds=60)
    eng = engine(store, address)
    runner = asyncio.create_task(eng.run(until_idle=True))

    async def has_progress() -> bool:
        return (await store.get_task(task_id)).status_text is not None and bool(job_processes())

    await until(has_progress)
    await eng.cancel(task_id)
    await asyncio.wait_for(runner, 15)
    assert (await store.get_task(task_id)).status is TaskStatus.CANCELLED


async def test_pause_and_resume_from_the_engine(
    store: TaskStore, registry: TaskTypeRegistry, address: Callable[[], Any]
) -> None:
    task_id = await submit(store, registry, seconds=0.8)
    eng = engine(store, address)
    runner = asyncio.create_task(eng.run(until_idle=True))
    await until(lambda: _running(store, task_id))
    await eng.pause(task_id)
    await asyncio.sleep(1.5)  # longer than the whole job: paused, it cannot have finished
    assert (await store.get_task(task_id)).status is TaskStatus.RUNNING
    await eng.resume(task_id)
    await asyncio.wait_for(runner, 20)
    assert (await store.get_task(task_id)).status is TaskStatus.COMPLETED


async def test_pause_requested_by_the_child_then_resumed_by_the_user(
    store: TaskStore, registry: TaskTypeRegistry, address: Callable[[], Any]
) -> None:
    task_id = await submit(store, registry, seconds=0.5, pause_after=0.1)
    eng = engine(store, address)
    runner = asyncio.create_task(eng.run(until_idle=True))

    async def self_paused() -> bool:
        t = await store.get_task(task_id)
        return t.is_paused and t.status_text == "paused: requested"

    await until(self_paused)
    await asyncio.sleep(0.5)
    assert (await store.get_task(task_id)).status is TaskStatus.RUNNING  # waiting for the user
    await eng.resume(task_id)
    await asyncio.wait_for(runner, 20)
    task = await store.get_task(task_id)
    assert task.status is TaskStatus.COMPLETED and not task.is_paused
    kinds = [e.kind for e in await store.events(task_id)]
    assert kinds.index("paused") < kinds.index("resumed") < kinds.index("completed")


async def test_a_child_that_resumes_by_itself(
    store: TaskStore, registry: TaskTypeRegistry, address: Callable[[], Any]
) -> None:
    task_id = await submit(store, registry, seconds=0.4, pause_after=0.1, resume_after=0.3)
    await asyncio.wait_for(engine(store, address).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert task.status is TaskStatus.COMPLETED and not task.is_paused
    kinds = [e.kind for e in await store.events(task_id)]
    assert "paused" in kinds and "resumed" in kinds


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"crash_after": 0.1, "exit_code": 5}, "exited with code 5"),
        ({"crash_after": 0.1, "signal": "SIGKILL"}, "killed by SIGKILL"),
        ({"exit_silently": True}, "without a result"),
    ],
)
async def test_child_crashes_are_failed_attempts(
    store: TaskStore,
    registry: TaskTypeRegistry,
    address: Callable[[], Any],
    payload: dict[str, Any],
    message: str,
) -> None:
    task_id = await submit(store, registry, seconds=0.3, **payload)
    await asyncio.wait_for(engine(store, address).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert (task.status, task.error_type) == (TaskStatus.FAILED, ErrorType.SUBPROCESS_CRASHED)
    assert message in (task.error or "")


async def test_no_server_is_a_retryable_connection_loss(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    async def nowhere() -> EndpointsAddress:
        return EndpointsAddress("127.0.0.1", 9, TOKEN)  # the discard port: nobody listens

    store.backoff = BackoffPolicy(base=0.05, cap=0.1)
    task_id = await submit(store, registry, seconds=0.1, max_retries=1)
    await asyncio.wait_for(engine(store, nowhere).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert (task.status, task.error_type, task.retry_count) == (
        TaskStatus.FAILED,
        ErrorType.CONNECTION_LOST,
        1,
    )


async def test_wrong_token_is_not_retried(
    store: TaskStore, registry: TaskTypeRegistry, address: Callable[[], Any]
) -> None:
    async def wrong() -> EndpointsAddress:
        right = await address()
        return EndpointsAddress(right.host, right.port, "not-the-token")

    task_id = await submit(store, registry, seconds=0.1, max_retries=3)
    await asyncio.wait_for(engine(store, wrong).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert task.status is TaskStatus.FAILED and "HTTP 401" in (task.error or "")
    assert task.retry_count == 0


async def test_app_server_killed_mid_job_the_task_is_retried_and_completes(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    endpoints = EndpointsProcess()
    store.backoff = BackoffPolicy(base=0.05, cap=0.1)
    task_id = await submit(store, registry, seconds=1.5, max_retries=2)
    eng = engine(store, endpoints.address)
    runner = asyncio.create_task(eng.run(until_idle=True))
    try:
        await until(lambda: _running(store, task_id), within=60)
        assert endpoints.process is not None
        server = psutil.Process(endpoints.process.pid)
        await asyncio.sleep(0.3)
        children = server.children(recursive=True)
        os.kill(server.pid, signal.SIGKILL)
        await asyncio.wait_for(runner, 60)
        task = await store.get_task(task_id)
        assert task.status is TaskStatus.COMPLETED and task.attempt == 2
        kinds = [e.kind for e in await store.events(task_id)]
        assert "retry_scheduled" in kinds
        assert endpoints.starts == 2  # started again for the retry
        # The killed server's job child went with it: no orphan.
        for _ in range(100):
            if not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children):
                break
            await asyncio.sleep(0.1)
        assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
    finally:
        await endpoints.stop()
    run = await store.list_runs()
    assert run[0].status is RunStatus.COMPLETED


async def _running(store: TaskStore, task_id: str) -> bool:
    t = await store.get_task(task_id)
    return t.status is TaskStatus.RUNNING and t.status_text is not None
