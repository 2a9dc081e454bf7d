"""The endpoints server for real: a websockets server on 127.0.0.1:0, real child processes,
and after every test a look at the process table: no job process is left behind."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import trustme
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from python_endpoints.protocol import (
    Cancel,
    InitData,
    InitParamAndRun,
    Pause,
    Resume,
    Status,
    dump,
)
from python_endpoints.serving.endpoint import LoopContext, LoopEndpoint, ProcessEndpoint
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.support.process_table import assert_no_job_process_left, job_processes

TOKEN = "test-token-0123456789"


class Echo(LoopEndpoint):
    """An in-loop job: reports, honours pause and cancel, can ask for a pause itself."""

    name = "echo"

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        for i in range(int(params.get("steps", 3))):
            await ctx.wait_if_paused()
            await ctx.report_progress(100 * i / 3, f"step {i}")
            if params.get("self_pause") and i == 1:
                await ctx.request_pause("disk nearly full")
            await asyncio.sleep(float(params.get("delay", 0.01)))
        return {"echo": params.get("value")}


def running_child(server: EndpointServer) -> psutil.Process:
    """The child process of the one job the server runs (not its warm spare)."""
    [session] = server.sessions
    process = session.endpoint.process  # type: ignore[attr-defined]
    assert process is not None and process.pid
    return psutil.Process(process.pid)


@pytest.fixture
async def server() -> AsyncIterator[tuple[EndpointServer, int]]:
    srv = EndpointServer({**ENDPOINTS, "echo": Echo}, TOKEN, ping_interval=1, ping_timeout=2)
    port = await srv.start()
    yield srv, port
    await srv.close()
    await assert_no_job_process_left()


def open_task(port: int, name: str = "sleep", token: str = TOKEN) -> Any:
    return connect(
        f"ws://127.0.0.1:{port}/tasks/{name}",
        additional_headers={"Authorization": f"Bearer {token}"},
    )


async def server_process(
    folder: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int]:
    """``python -m python_endpoints`` as the app starts it (a token file in ``folder``, 0600;
    ``env``: its environment) and the port it announced. The caller ends it."""
    token_file = folder / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    server = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, "-m", "python_endpoints", "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert server.stdout is not None
    line = await asyncio.to_thread(server.stdout.readline)
    if not line:
        server.wait(10)
        raise AssertionError(f"the server exited {server.returncode} without a port")
    return server, json.loads(line)["port"]


async def start(ws: ClientConnection, **params: Any) -> None:
    await ws.send(dump(InitParamAndRun(data=InitData(params=params))))


async def frames_until(ws: ClientConnection, *types: str, within: float = 20) -> list[dict]:
    """Read frames until one whose type is in ``types``; return them all."""
    seen = []
    async with asyncio.timeout(within):
        while True:
            frame = json.loads(await ws.recv())
            seen.append(frame)
            if frame.get("type") in types:
                return seen


async def test_sleep_in_a_child_process_reports_and_returns(
    server: tuple[EndpointServer, int],
) -> None:
    async with open_task(server[1]) as ws:
        await start(ws, seconds=0.5)
        frames = await frames_until(ws, "result", "error")
    assert frames[-1] == {"type": "result", "result": {"slept": 0.5}}
    progress = [f["percent"] for f in frames if f["type"] == "progress"]
    assert progress[0] == 0 and progress[-1] == 100 and progress == sorted(progress)
    assert all(f["pausable"] == "always" for f in frames if f["type"] == "progress")


async def test_a_check_of_the_params_that_fails_ends_the_job_with_one_error_frame(
    server: tuple[EndpointServer, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault injected into the checks made before a job runs (the write roots, the
    policy): before, the job's task died with it and the client waited for ever for a final
    frame; now one ``PAYLOAD_ERROR`` says what failed, and the server serves on."""
    from python_endpoints.serving import policy

    def broken(self: Any, params: Any) -> str | None:
        raise RuntimeError("a check that cannot decide")

    monkeypatch.setattr(policy.JobPolicy, "refusal", broken)
    async with open_task(server[1]) as ws:
        await start(ws, seconds=0.1)
        frames = await frames_until(ws, "result", "error", "cancelled", within=10)
    assert frames[-1]["type"] == "error" and frames[-1]["error_type"] == "PAYLOAD_ERROR"
    assert "could not be checked (RuntimeError: a check that cannot decide)" in frames[-1]["error"]
    monkeypatch.undo()
    async with open_task(server[1]) as ws:
        await start(ws, seconds=0.1)
        frames = await frames_until(ws, "result", "error")
    assert frames[-1] == {"type": "result", "result": {"slept": 0.1}}


async def test_wrong_or_missing_token_is_refused_at_the_handshake(
    server: tuple[EndpointServer, int],
) -> None:
    with pytest.raises(InvalidStatus) as info:
        async with open_task(server[1], token="nope"):
            pass
    assert info.value.response.status_code == 401
    with pytest.raises(InvalidStatus) as info:
        async with connect(f"ws://127.0.0.1:{server[1]}/tasks/sleep"):
            pass
    assert info.value.response.status_code == 401


async def test_connections_are_not_compressed(server: tuple[EndpointServer, int]) -> None:
    """A client that offers permessage-deflate (the library's default) is not granted it:
    the frames are small JSON, mostly on loopback."""
    async with open_task(server[1]) as ws:
        assert "permessage-deflate" in ws.request.headers["Sec-WebSocket-Extensions"]
        assert "Sec-WebSocket-Extensions" not in ws.response.headers
        await start(ws, seconds=0.1)
        assert (await frames_until(ws, "result"))[-1]["type"] == "result"


async def test_unknown_endpoint_is_refused_with_a_reason(
    server: tuple[EndpointServer, int],
) -> None:
    with pytest.raises(InvalidStatus) as info:
        async with open_task(server[1], name="transmogrify"):
            pass
    assert info.value.response.status_code == 404
    assert b"unknown endpoint" in info.value.response.body


async def test_malformed_frames_get_an_error_frame_and_the_job_goes_on(
    server: tuple[EndpointServer, int],
) -> None:
    async with open_task(server[1]) as ws:
        await ws.send("{not json")
        assert json.loads(await ws.recv())["error_type"] == "PROTOCOL_ERROR"
        await ws.send(json.dumps({"command": "explode"}))
        assert json.loads(await ws.recv())["error_type"] == "PROTOCOL_ERROR"
        await start(ws, seconds=0.2)
        await start(ws, seconds=0.2)  # a second start is refused, the first goes on
        frames = await frames_until(ws, "result")
    assert any(f.get("error") == "the job was already started" for f in frames)


async def test_oversized_frame_closes_only_that_connection(
    server: tuple[EndpointServer, int],
) -> None:
    async with open_task(server[1]) as ws:
        await ws.send("x" * (2 << 20))
        with pytest.raises(ConnectionClosed) as info:
            await ws.recv()
        assert info.value.rcvd is not None and info.value.rcvd.code == 1009  # message too big
    async with open_task(server[1]) as ws:  # the server itself is fine
        await start(ws, seconds=0.1)
        assert (await frames_until(ws, "result"))[-1]["type"] == "result"


async def test_cancel_before_init_is_cancelled_at_once(
    server: tuple[EndpointServer, int],
) -> None:
    async with open_task(server[1]) as ws:
        await ws.send(dump(Cancel()))
        async with asyncio.timeout(5):
            assert json.loads(await ws.recv()) == {"type": "cancelled"}


async def test_a_kept_connection_runs_one_job_after_another(
    server: tuple[EndpointServer, int],
) -> None:
    """``keep_open``: after a job's final frame the connection stays for the next job, each
    with an endpoint of its own; a cancel, a pause and a status that come between two jobs
    belong to the one that ended — ignored (status: finished), the next job runs whole."""
    async with open_task(server[1], "echo") as ws:
        for value in ("first", "second"):
            await ws.send(
                dump(InitParamAndRun(data=InitData(params={"value": value}, keep_open=True)))
            )
            assert (await frames_until(ws, "result", "error"))[-1] == {
                "type": "result",
                "result": {"echo": value},
            }
            # What the client's control channel may still send for the job that just ended:
            await ws.send(dump(Pause()))
            await ws.send(dump(Cancel()))
            await ws.send(dump(Status()))
            assert (await frames_until(ws, "status"))[-1]["state"] == "finished"
        # A failed job ends with its error; the connection is still there for the next one.
        await ws.send(dump(InitParamAndRun(data=InitData(params={"steps": "x"}, keep_open=True))))
        assert (await frames_until(ws, "result", "error"))[-1]["type"] == "error"
        await start(ws, value="last")  # without keep_open: the server closes after it
        assert (await frames_until(ws, "result"))[-1]["result"] == {"echo": "last"}
        async with asyncio.timeout(5):
            await ws.wait_closed()
        for _ in range(500):  # the server's side of the session ends a moment after
            if not server[0].sessions:
                break
            await asyncio.sleep(0.01)
        assert not server[0].sessions


async def test_without_keep_open_a_second_job_on_the_connection_is_refused(
    server: tuple[EndpointServer, int],
) -> None:
    async with open_task(server[1], "echo") as ws:
        await start(ws, value=1, delay=0.5)
        await start(ws, value=2)
        frames = await frames_until(ws, "error")
        assert "already started" in frames[-1]["error"]
        assert (await frames_until(ws, "result"))[-1]["result"] == {"echo": 1}


async def test_cancel_while_running_kills_the_child(server: tuple[EndpointServer, int]) -> None:
    async with open_task(server[1]) as ws:
        await start(ws, seconds=60)
        await frames_until(ws, "progress")
        child = running_child(server[0])
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "error", within=10)
    assert frames[-1] == {"type": "cancelled"}
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE


async def test_cancel_while_the_child_starts_is_not_lost(
    server: tuple[EndpointServer, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel that arrives while the job's child process is still starting (no warm spare:
    a cold start, made slow here) stops the job: it is never handed to the child."""
    from python_endpoints.serving import endpoint

    await endpoint.close_spares()
    started = asyncio.Event()
    loop = asyncio.get_running_loop()
    real_start = endpoint._Child.start

    def slow_start(module: str, name: str, reuse: bool = False) -> Any:
        loop.call_soon_threadsafe(started.set)
        time.sleep(1.0)
        return real_start(module, name, reuse)

    monkeypatch.setattr(endpoint._Child, "start", staticmethod(slow_start))
    async with open_task(server[1]) as ws:
        await start(ws, seconds=5)
        await asyncio.wait_for(started.wait(), 5)
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "result", "error", within=4)
    assert frames[-1] == {"type": "cancelled"}
    await assert_no_job_process_left()


async def test_cancel_while_paused(server: tuple[EndpointServer, int]) -> None:
    async with open_task(server[1]) as ws:
        await start(ws, seconds=60)
        await frames_until(ws, "progress")
        await ws.send(dump(Pause()))
        await ws.send(dump(Status()))
        status = (await frames_until(ws, "status"))[-1]
        assert status["paused"] is True and status["state"] == "paused"
        await ws.send(dump(Cancel()))
        assert (await frames_until(ws, "cancelled", within=10))[-1] == {"type": "cancelled"}


async def test_pause_and_resume_from_the_client(server: tuple[EndpointServer, int]) -> None:
    async with open_task(server[1]) as ws:
        await start(ws, seconds=0.6)
        await frames_until(ws, "progress")
        await ws.send(dump(Pause()))
        await asyncio.sleep(0.3)
        # Drain what was in flight, then nothing moves while paused.
        with pytest.raises(TimeoutError):
            await frames_until(ws, "result", within=1.0)
        await ws.send(dump(Resume()))
        assert (await frames_until(ws, "result"))[-1]["result"] == {"slept": 0.6}


async def test_pause_requested_by_the_child_then_resumed_by_the_user(
    server: tuple[EndpointServer, int],
) -> None:
    async with open_task(server[1]) as ws:
        await start(ws, seconds=0.4, pause_after=0.1)
        frames = await frames_until(ws, "pause_request")
        assert frames[-1] == {"type": "pause_request", "reason": "requested"}
        await ws.send(dump(Status()))
        assert (await frames_until(ws, "status"))[-1]["paused"] is True
        with pytest.raises(TimeoutError):  # it waits for the user
            await frames_until(ws, "result", within=1.0)
        await ws.send(dump(Resume()))
        assert (await frames_until(ws, "result"))[-1]["result"] == {"slept": 0.4}


async def test_a_child_that_pauses_and_resumes_by_itself(
    server: tuple[EndpointServer, int],
) -> None:
    async with open_task(server[1]) as ws:
        await start(ws, seconds=0.4, pause_after=0.1, resume_after=0.3)
        frames = await frames_until(ws, "result")
    kinds = [f["type"] for f in frames if f["type"] != "progress"]
    # "paused": stopped, holding nothing (the engine may lend its slot meanwhile).
    assert kinds == ["pause_request", "paused", "resume_request", "result"]
    assert next(f for f in frames if f["type"] == "paused") == {"type": "paused", "held": False}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"crash_after": 0.1, "exit_code": 7}, "exited with code 7"),
        ({"crash_after": 0.1, "signal": "SIGKILL"}, "killed by SIGKILL"),
        ({"exit_silently": True}, "exited without a result"),
    ],
)
async def test_child_crashes_give_exactly_one_error_frame(
    server: tuple[EndpointServer, int], params: dict[str, Any], message: str
) -> None:
    async with open_task(server[1]) as ws:
        await start(ws, seconds=0.3, **params)
        frames = await frames_until(ws, "result", "error", "cancelled")
        with pytest.raises(ConnectionClosed):  # and nothing after it: the session is over
            await ws.recv()
    errors = [f for f in frames if f["type"] == "error"]
    assert len(errors) == 1 and errors[0]["error_type"] == "SUBPROCESS_CRASHED"
    assert message in errors[0]["error"]


async def test_invalid_params_are_a_payload_error(server: tuple[EndpointServer, int]) -> None:
    async with open_task(server[1]) as ws:
        await start(ws, seconds=-1)
        error = (await frames_until(ws, "error"))[-1]
    assert error["error_type"] == "PAYLOAD_ERROR" and "seconds" in error["error"]


async def test_client_disconnect_mid_job_cancels_and_reaps(
    server: tuple[EndpointServer, int],
) -> None:
    async with open_task(server[1]) as ws:
        await start(ws, seconds=60)
        await frames_until(ws, "progress")
        child = running_child(server[0])
    # The fixture checks that no job process is left; wait for this one explicitly too.
    for _ in range(100):
        gone = not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
        if gone and not server[0].sessions:
            break
        await asyncio.sleep(0.1)
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert not server[0].sessions


async def test_loop_endpoint_progress_pause_and_self_pause(
    server: tuple[EndpointServer, int],
) -> None:
    async with open_task(server[1], name="echo") as ws:
        await start(ws, value=42, self_pause=True, delay=0.05)
        frames = await frames_until(ws, "pause_request")
        assert frames[-1]["reason"] == "disk nearly full"
        await ws.send(dump(Resume()))
        frames = await frames_until(ws, "result")
    assert frames[-1]["result"] == {"echo": 42}


async def test_loop_endpoint_cancel(server: tuple[EndpointServer, int]) -> None:
    async with open_task(server[1], name="echo") as ws:
        await start(ws, steps=1000, delay=0.05)
        await frames_until(ws, "progress")
        await ws.send(dump(Cancel()))
        assert (await frames_until(ws, "cancelled"))[-1] == {"type": "cancelled"}


def test_the_server_process_prints_its_port_and_exits_with_its_parent(tmp_path: Any) -> None:
    """`python -m python_endpoints` under a parent that dies: it must go too."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)  # readable by others, it would be refused
    script = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-m', 'python_endpoints', '--token-file', "
        f"{str(token_file)!r}], stdout=subprocess.PIPE, text=True)\n"
        "print(p.pid, p.stdout.readline().strip(), flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline().split(" ", 1)
        server_pid, announced = int(line[0]), json.loads(line[1])
        assert announced["port"] > 0

        async def handshake() -> int:
            try:
                async with open_task(announced["port"], token="bad"):
                    return 0
            except InvalidStatus as exc:
                return exc.response.status_code

        assert asyncio.run(handshake()) == 401
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        server = psutil.Process(server_pid)
        server.wait(timeout=10)  # it noticed its parent died and exited
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.communicate(timeout=10)


def spawn_grandchild(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """A job whose child starts a process of its own (as a transcode starts ffmpeg)."""
    grandchild = subprocess.Popen(["sleep", "60"])
    ctx.progress(1.0, f"grandchild {grandchild.pid}")
    grandchild.wait()
    return {}


class Grandparent(ProcessEndpoint):
    name = "grandparent"
    target = staticmethod(spawn_grandchild)


async def test_cancel_kills_the_whole_process_tree() -> None:
    srv = EndpointServer({"grandparent": Grandparent}, TOKEN)
    port = await srv.start()
    try:
        async with open_task(port, name="grandparent") as ws:
            await start(ws)
            frames = await frames_until(ws, "progress")
            grandchild = psutil.Process(int(frames[-1]["status_text"].split()[-1]))
            assert grandchild.is_running()
            await ws.send(dump(Cancel()))
            assert (await frames_until(ws, "cancelled", within=15))[-1] == {"type": "cancelled"}
        grandchild.wait(timeout=10)  # gone too: no orphan
    finally:
        await srv.close()
    assert job_processes() == []


@pytest.fixture
def authority() -> trustme.CA:
    """A certificate authority of the test's own (trustme: no ``openssl`` command needed)."""
    return trustme.CA()


async def test_tls_for_remote_use(authority: trustme.CA) -> None:
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1", "localhost").configure_cert(server_ctx)
    client_ctx = ssl.create_default_context()
    authority.configure_trust(client_ctx)
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start(ssl_context=server_ctx)
    try:
        async with connect(
            f"wss://127.0.0.1:{port}/tasks/sleep",
            additional_headers={"Authorization": f"Bearer {TOKEN}"},
            ssl=client_ctx,
        ) as ws:
            await start(ws, seconds=0.1)
            assert (await frames_until(ws, "result"))[-1]["result"] == {"slept": 0.1}
        with pytest.raises(ssl.SSLError):  # a client that does not trust the certificate
            async with connect(
                f"wss://127.0.0.1:{port}/tasks/sleep",
                additional_headers={"Authorization": f"Bearer {TOKEN}"},
                ssl=ssl.create_default_context(),
            ):
                pass
    finally:
        await srv.close()


def _raw_client_start(port: int, params: dict[str, Any]) -> socket.socket:
    """A client that does the handshake, starts a job, then never reads or answers again (as
    a peer whose machine froze): no pong will come back."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /tasks/sleep HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {TOKEN}\r\n\r\n"
        ).encode()
    )
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(4096)
    assert response.startswith(b"HTTP/1.1 101")
    payload = dump(InitParamAndRun(data=InitData(params=params))).encode()
    mask = os.urandom(4)
    header = (
        bytes([0x81, 0x80 | len(payload)])
        if len(payload) < 126
        else bytes([0x81, 0x80 | 126]) + len(payload).to_bytes(2, "big")
    )
    sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    return sock


async def test_a_peer_that_stops_answering_is_treated_as_gone(
    server: tuple[EndpointServer, int],
) -> None:
    srv, port = server
    sock = await asyncio.to_thread(_raw_client_start, port, {"seconds": 60})
    try:
        for _ in range(50):
            if srv.sessions and next(iter(srv.sessions)).endpoint.process is not None:
                break
            await asyncio.sleep(0.1)
        child = running_child(srv)
        # Pings every second, 2 s to answer: the session must be gone well within 10 s.
        for _ in range(100):
            if not srv.sessions:
                break
            await asyncio.sleep(0.1)
        assert not srv.sessions
        child.wait(timeout=10)  # its job was cancelled and its child reaped
    finally:
        sock.close()


class Writer(LoopEndpoint):
    """Writes a partial output, then works until cancelled."""

    name = "writer"

    def __init__(self, emit: Any) -> None:
        super().__init__(emit)
        self.out: Any = None

    def partial_outputs(self) -> list[Any]:
        return [self.out] if self.out is not None else []

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        from pathlib import Path

        self.out = Path(params["path"])
        self.out.write_text("half a file")
        while True:
            await ctx.report_progress(50, "writing")
            await ctx.wait_if_paused()
            await asyncio.sleep(0.05)


async def test_cancel_removes_partial_outputs(tmp_path: Any) -> None:
    srv = EndpointServer({"writer": Writer}, TOKEN)
    port = await srv.start()
    target = tmp_path / "out.mp4.part"
    try:
        async with open_task(port, name="writer") as ws:
            await start(ws, path=str(target))
            await frames_until(ws, "progress")
            assert target.exists()
            await ws.send(dump(Cancel()))
            assert (await frames_until(ws, "cancelled"))[-1] == {"type": "cancelled"}
        assert not target.exists()
    finally:
        await srv.close()
