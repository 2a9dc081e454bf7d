"""The engine driving real task endpoints: SLEEP_SUBPROCESS through a real websockets server
(in this test's loop, on 127.0.0.1:0) and real child processes; and through the app's own
endpoints server process, killed mid-job."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar

import psutil
import pytest

from fredica_app.endpoints import EndpointsProcess
from python_endpoints.protocol import MAX_FRAME_BYTES
from python_endpoints.serving.endpoint import LoopContext, LoopEndpoint
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from python_endpoints.status import render
from tests.support.process_table import assert_no_job_process_left, job_processes
from workers.engine import WorkerEngine
from workers.executor import ExecutionContext
from workers.executors.diagnostic import SleepSubprocessExecutor
from workers.executors.websocket import EndpointExecutor, EndpointsAddress
from workers.records import TaskRecord
from workers.spec import parse_spec, prepare_run
from workers.states import BackoffPolicy, ErrorType, RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskPayload, TaskType, TaskTypeRegistry

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


async def test_the_status_is_kept_as_the_job_said_it(
    store: TaskStore, registry: TaskTypeRegistry, address: Callable[[], Any]
) -> None:
    """A job's status text comes with its messages (ids and arguments): the task keeps both,
    so that a window can say it in its own language."""
    task_id = await submit(store, registry, seconds=3.0)
    runner = asyncio.create_task(engine(store, address).run(until_idle=True))

    async def counting_down() -> bool:
        return (await store.get_task(task_id)).status_text not in (None, "sleeping 3.0 s")

    await until(counting_down)
    task = await store.get_task(task_id)
    assert task.status_text is not None and task.status_text.endswith(" s left")
    assert task.status_parts is not None
    assert [p["id"] for p in task.status_parts] == ["seconds_left"]
    assert render(task.status_parts, lambda english: english) == task.status_text
    await asyncio.wait_for(runner, 30)


async def test_a_proxy_in_the_environment_is_not_used_for_the_servers_own_connections(
    store: TaskStore,
    registry: TaskTypeRegistry,
    address: Callable[[], Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A user with a proxy set (an office network): the app's connections to its own
    server on this machine go straight to it; through the proxy (port 9: nothing listens)
    every task failed with "cannot reach the endpoints server"."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    task_id = await submit(store, registry, seconds=0.1)
    await asyncio.wait_for(engine(store, address).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert (task.status, task.error) == (TaskStatus.COMPLETED, None)


@pytest.mark.parametrize(
    ("host", "proxy"),
    [
        ("127.0.0.1", None),
        ("127.0.0.2", None),
        ("::1", None),
        ("[::1]", None),
        ("localhost", None),
        ("192.168.1.20", True),
        ("gpu-box.example", True),
    ],
)
def test_only_another_host_is_reached_through_the_environments_proxy(
    host: str, proxy: bool | None
) -> None:
    assert EndpointsAddress(host, 1, TOKEN).proxy is proxy


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
    # Long enough that the pause reaches the child before the job ends on a loaded machine;
    # the test then waits for the child to say it has stopped, not for the job's length.
    task_id = await submit(store, registry, seconds=4.0)
    eng = engine(store, address)
    runner = asyncio.create_task(eng.run(until_idle=True))
    await until(lambda: _running(store, task_id))
    await eng.pause(task_id)

    async def stopped() -> bool:
        return ((await store.get_task(task_id)).status_text or "").startswith("paused")

    await until(stopped)
    held = await store.get_task(task_id)
    await asyncio.sleep(1.0)  # paused: no progress, no end
    task = await store.get_task(task_id)
    assert task.status is TaskStatus.RUNNING and task.progress == held.progress < 100
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
    store: TaskStore, registry: TaskTypeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = 0

    async def nowhere() -> EndpointsAddress:
        nonlocal asked
        asked += 1
        return EndpointsAddress("127.0.0.1", 9, TOKEN)  # the discard port: nobody listens

    monkeypatch.setattr(SleepSubprocessExecutor, "reconnect_waits", (0.01, 0.01))
    store.backoff = BackoffPolicy(base=0.05, cap=0.1)
    task_id = await submit(store, registry, seconds=0.1, max_retries=1)
    await asyncio.wait_for(engine(store, nowhere).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert (task.status, task.error_type, task.retry_count) == (
        TaskStatus.FAILED,
        ErrorType.CONNECTION_LOST,
        1,
    )
    assert asked == 2 * 3  # each attempt tried three times, the address asked each time


async def test_a_server_that_just_died_is_asked_for_again_and_no_retry_is_used(
    store: TaskStore,
    registry: TaskTypeRegistry,
    address: Callable[[], Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The app's server was killed a moment before the task connected: the address it had
    refuses; the next ask finds the new server (the app starts one), and the attempt goes on."""
    answers = [EndpointsAddress("127.0.0.1", 9, TOKEN)]

    async def restarting() -> EndpointsAddress:
        return answers.pop() if answers else await address()

    monkeypatch.setattr(SleepSubprocessExecutor, "reconnect_waits", (0.05,))
    task_id = await submit(store, registry, seconds=0.2, max_retries=0)
    await asyncio.wait_for(engine(store, restarting).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert (task.status, task.attempt, task.retry_count) == (TaskStatus.COMPLETED, 1, 0)


async def test_a_server_killed_while_it_starts_is_started_again_within_the_attempt(
    store: TaskStore, registry: TaskTypeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's server dies before it says its port (killed as it starts): the start is
    told with its exit code, and the attempt asks again — a new server — using no retry."""
    import fredica_app.endpoints as app_endpoints

    real = app_endpoints.endpoints_server_argv
    spawned: list[str] = []

    def dies_first() -> list[str]:
        spawned.append("server")
        if len(spawned) == 1:
            return [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), 9)"]
        return real()

    monkeypatch.setattr(app_endpoints, "endpoints_server_argv", dies_first)
    monkeypatch.setattr(SleepSubprocessExecutor, "reconnect_waits", (0.05,))
    endpoints = EndpointsProcess()
    task_id = await submit(store, registry, seconds=0.2, max_retries=0)
    try:
        with pytest.raises(OSError, match=r"exited \(code -9\) before saying its port"):
            await endpoints.address()
        spawned.clear()
        await asyncio.wait_for(engine(store, endpoints.address).run(until_idle=True), 60)
    finally:
        await endpoints.stop()
    task = await store.get_task(task_id)
    assert (task.status, task.attempt, task.retry_count) == (TaskStatus.COMPLETED, 1, 0)
    assert len(spawned) == 2 and endpoints.starts == 1


async def test_a_server_dying_during_the_handshake_is_a_connection_lost_not_a_crash(
    store: TaskStore, registry: TaskTypeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server killed while it answers the opening handshake: the connection ends before
    its response. Tried again, then a retryable CONNECTION_LOST — not the executor raising
    (which the engine would record as EXECUTOR_ERROR, a bug's mark)."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # the request, whole
        writer.close()

    dying = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = dying.sockets[0].getsockname()[1]

    async def source() -> EndpointsAddress:
        return EndpointsAddress("127.0.0.1", port, TOKEN)

    monkeypatch.setattr(SleepSubprocessExecutor, "reconnect_waits", (0.01,))
    async with dying:
        task_id = await submit(store, registry, seconds=0.1, max_retries=0)
        await asyncio.wait_for(engine(store, source).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert (task.status, task.error_type) == (TaskStatus.FAILED, ErrorType.CONNECTION_LOST)
    assert "cannot reach the endpoints server" in (task.error or "")


@pytest.mark.parametrize("host", ["", "[::1"])
async def test_an_address_that_is_no_uri_is_not_tried_again(
    store: TaskStore, registry: TaskTypeRegistry, host: str
) -> None:
    """An address no websocket URI can be made of (no host, an IPv6 host not closed): asking
    again gives the same, so the attempt fails at once, using no wait and no retry."""
    asked = 0

    async def broken() -> EndpointsAddress:
        nonlocal asked
        asked += 1
        return EndpointsAddress(host, 9, TOKEN)

    task_id = await submit(store, registry, seconds=0.1, max_retries=3)
    started = time.monotonic()
    await asyncio.wait_for(engine(store, broken).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert (task.status, task.error_type, task.retry_count) == (
        TaskStatus.FAILED,
        ErrorType.CONNECTION_LOST,
        0,
    )
    assert "cannot reach the endpoints server" in (task.error or "") and asked == 1
    assert time.monotonic() - started < 10  # no reconnect wait (0.2 + 1 + 3 s) was spent


async def test_a_cancel_while_waiting_to_connect_again_ends_the_wait(
    store: TaskStore, registry: TaskTypeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No server answers and the executor waits before trying again: the user's cancel ends
    the wait at once, and the task is cancelled, not failed."""
    asked = asyncio.Event()

    async def nowhere() -> EndpointsAddress:
        asked.set()
        return EndpointsAddress("127.0.0.1", 9, TOKEN)

    monkeypatch.setattr(SleepSubprocessExecutor, "reconnect_waits", (60.0,))
    task_id = await submit(store, registry, seconds=0.1, max_retries=0)
    eng = engine(store, nowhere, cancel_grace=60.0)  # the executor must see it, not the engine
    runner = asyncio.create_task(eng.run(until_idle=True))
    await asyncio.wait_for(asked.wait(), 20)
    await asyncio.sleep(0.2)  # in the wait
    started = time.monotonic()
    await eng.cancel(task_id)
    await asyncio.wait_for(runner, 20)
    assert time.monotonic() - started < 10
    assert (await store.get_task(task_id)).status is TaskStatus.CANCELLED


async def test_a_server_that_hangs_up_after_the_handshake_interrupts_the_task(
    store: TaskStore,
    registry: TaskTypeRegistry,
    address: Callable[[], Any],
) -> None:
    """This machine's server accepts the connection and dies before the task's first frame
    is read: the attempt is interrupted (queued again, no retry used), never the executor
    raising; the next attempt reaches a working server and completes."""
    from websockets.asyncio.server import ServerConnection, serve

    async def dies(ws: ServerConnection) -> None:
        ws.transport.abort()

    async with serve(dies, "127.0.0.1", 0) as dying:
        port = dying.sockets[0].getsockname()[1]
        answers = [EndpointsAddress("127.0.0.1", port, TOKEN)]

        async def first_dying() -> EndpointsAddress:
            return answers.pop() if answers else await address()

        task_id = await submit(store, registry, seconds=0.1, max_retries=0)
        await asyncio.wait_for(engine(store, first_dying).run(until_idle=True), 30)
    task = await store.get_task(task_id)
    assert (task.status, task.retry_count, task.interruptions) == (TaskStatus.COMPLETED, 0, 1)


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


async def test_app_server_killed_mid_job_the_task_is_interrupted_and_completes(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """The server, not the job, died: an interruption (queued again at once, no retry used:
    the task has none), not a failed attempt."""
    endpoints = EndpointsProcess()
    task_id = await submit(store, registry, seconds=1.5, max_retries=0)
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
        assert (task.retry_count, task.interruptions, task.charged_interruptions) == (0, 1, 0)
        events = await store.events(task_id)
        kinds = [e.kind for e in events]
        assert "retry_scheduled" not in kinds and kinds.count("interrupted") == 1
        interrupted = next(e for e in events if e.kind == "interrupted")
        assert interrupted.detail is not None
        assert interrupted.detail["error"] == "the endpoints server stopped while the task ran"
        assert endpoints.starts == 2  # started again for the next attempt
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


class ResumeEcho(LoopEndpoint):
    """Says what it was given to resume from: the size of ``params["resume"]``, or None."""

    name: ClassVar[str] = "resume_echo"

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        resume = params.get("resume")  # absent: the attempt starts over
        return {"value": params["value"], "resume": None if resume is None else len(resume["pad"])}


def attempt_of(payload: dict[str, Any], checkpoint: dict[str, Any] | None) -> ExecutionContext:
    """An attempt of a RESUME_ECHO task whose stored checkpoint is ``checkpoint``."""
    now = time.time()
    task = TaskRecord(
        id="t-big", key="e", type="RESUME_ECHO", workflow_run_id=None, material_id=None,
        status=TaskStatus.RUNNING, priority=0, depends_on=[], payload=payload, result=None,
        error=None, error_type=None, idempotency_key=None, retry_count=2, max_retries=5,
        progress=0.0, is_paused=False, is_pausable=True, created_at=now, claimed_at=now,
        started_at=now, completed_at=None, heartbeat_at=now, unmet_deps=0, attempt=3,
        interruptions=0, charged_interruptions=0, lease_token=None, worker_id=None,
        lease_until=None, next_run_at=None,
        resource="io", status_text=None, checkpoint=checkpoint,
    )  # fmt: skip

    async def sink(**_: Any) -> bool:
        return True

    return ExecutionContext(task, TaskPayload(), {}, sink)


async def test_a_checkpoint_too_big_to_send_back_is_left_out_and_the_attempt_starts_over(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A checkpoint stored by an older version of a job may make ``init_param_and_run``
    larger than a frame may be: sent, the server would close the connection at every retry.
    The attempt is sent without it (and starts over), with a warning naming the task."""
    server = EndpointServer({**ENDPOINTS, ResumeEcho.name: ResumeEcho}, TOKEN)
    port = await server.start()

    async def source() -> EndpointsAddress:
        return EndpointsAddress("127.0.0.1", port, TOKEN)

    echo = TaskType("RESUME_ECHO", TaskPayload, "io")
    executor = EndpointExecutor(source, echo, ResumeEcho.name, resumes=True)
    payload = {"value": "kept", "schema_version": 1}
    try:
        small = attempt_of(payload, {"pad": "x" * 1000})
        resumed = await executor.execute(small.task, small)
        assert resumed.result == {"value": "kept", "resume": 1000}
        big = attempt_of(payload, {"pad": "é" * (MAX_FRAME_BYTES // 2)})  # 2 bytes a letter
        # Too big in bytes (what the server counts), not in characters.
        assert len(json.dumps(big.checkpoint, ensure_ascii=False)) < MAX_FRAME_BYTES
        with caplog.at_level(logging.WARNING, logger="workers.executors.websocket"):
            result = await executor.execute(big.task, big)
        assert result.ok and result.result == {"value": "kept", "resume": None}
        [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert "t-big" in warning.getMessage() and "starts over" in warning.getMessage()
        # Without ``resumes`` the checkpoint is never sent: nothing to leave out.
        plain = EndpointExecutor(source, echo, ResumeEcho.name)
        assert (await plain.execute(big.task, big)).result == {"value": "kept", "resume": None}
    finally:
        await server.close()


class CountingServer(EndpointServer):
    """The real server, counting the connections it was opened."""

    opened = 0

    async def _handle(self, connection: Any) -> None:
        self.opened += 1
        await super()._handle(connection)


async def test_tasks_one_after_another_share_one_connection_and_a_closed_one_is_replaced() -> None:
    """The executor keeps its connection to this machine's server for the next task
    (``keep_open``): three tasks, one handshake. One the server closed while it was idle, or
    one to a server that is no longer the address's, is not used: a new one is opened. The
    idle ones are closed when the engine lets go of them (``release``), or once idle for
    ``keep_idle_for``."""
    server = CountingServer({**ENDPOINTS, ResumeEcho.name: ResumeEcho}, TOKEN)
    port = await server.start()
    other = CountingServer({**ENDPOINTS, ResumeEcho.name: ResumeEcho}, TOKEN)
    other_port = await other.start()
    where = [port]

    async def source() -> EndpointsAddress:
        return EndpointsAddress("127.0.0.1", where[0], TOKEN)

    echo = TaskType("RESUME_ECHO", TaskPayload, "io")
    executor = EndpointExecutor(source, echo, ResumeEcho.name)
    try:
        for value in ("a", "b", "c"):
            attempt = attempt_of({"value": value, "schema_version": 1}, None)
            assert (await executor.execute(attempt.task, attempt)).result == {
                "value": value,
                "resume": None,
            }
        assert server.opened == 1
        [session] = server.sessions
        await session.connection.close()  # the server lets it go while it is idle
        attempt = attempt_of({"value": "d", "schema_version": 1}, None)
        assert (await executor.execute(attempt.task, attempt)).result["value"] == "d"
        assert server.opened == 2
        where[0] = other_port  # the server was started again elsewhere
        assert (await executor.execute(attempt.task, attempt)).result["value"] == "d"
        assert (server.opened, other.opened) == (2, 1)
        assert len(other.sessions) == 1
        await executor.release()
        await until(lambda: _none_left(server, other), within=5)
        # Idle past keep_idle_for: closed by the executor itself.
        executor.keep_idle_for = 0.2  # type: ignore[misc]
        assert (await executor.execute(attempt.task, attempt)).ok
        assert len(other.sessions) == 1
        await until(lambda: _none_left(other), within=5)
    finally:
        await server.close()
        await other.close()


async def _none_left(*servers: EndpointServer) -> bool:
    return not any(server.sessions for server in servers)


async def test_a_job_that_says_finishing_lets_the_next_task_start_on_its_slot(
    store: TaskStore, registry: TaskTypeRegistry, address: Callable[[], Any]
) -> None:
    """The whole chain: the child's word, the server's ``finishing`` frame, the executor, the
    engine's slots. One ``io`` slot: the second task runs (and ends) while the first, which
    said its heavy part was done, sleeps on."""
    first = await submit(store, registry, seconds=3.0, finishing_after=0.2)
    second = await submit(store, registry, seconds=0.2)
    await asyncio.wait_for(
        engine(store, address, max_workers=2, slots={"io": 1}).run(until_idle=True), 30
    )
    a, b = await store.get_task(first), await store.get_task(second)
    assert a.status is TaskStatus.COMPLETED and b.status is TaskStatus.COMPLETED
    assert a.completed_at is not None and b.started_at is not None and b.completed_at is not None
    assert b.started_at < a.completed_at and b.completed_at < a.completed_at
