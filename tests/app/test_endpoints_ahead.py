"""``engine_session(start_endpoints=True)``: the endpoints server starts beside the engine, not
when the first job asks for it — and is stopped with the session, started or not."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from fredica_app.endpoints import EndpointsProcess, _drain
from fredica_app.services import Fredica
from tests.endpoints.test_endpoints import frames_until, open_task, start
from tests.support.process_table import job_processes, process_gone


async def _until(check: object, within: float = 60) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():  # type: ignore[operator]
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_the_server_is_up_before_any_job_and_gone_after(tmp_path: Path) -> None:
    app = Fredica.open(tmp_path / "data")
    try:
        async with app.engine_session(start_endpoints=True):
            await _until(lambda: app.endpoints.starts == 1)
            process = app.endpoints.process
            assert process is not None and process.returncode is None
            pid = process.pid
            assert psutil.pid_exists(pid)
        assert app.endpoints.process is None
        await _until(lambda: process_gone(pid))
    finally:
        await app.close()


async def test_the_app_s_close_waits_for_the_server_the_session_stopped(tmp_path: Path) -> None:
    """The session tells the server to stop and goes on (its exit overlaps the app's last
    steps); the app's close is what waits for it: nothing outlives the app."""
    app = Fredica.open(tmp_path / "data")
    closed = False
    try:
        async with app.engine_session(start_endpoints=True):
            await _until(lambda: app.endpoints.starts == 1)
            assert app.endpoints.process is not None
            server = psutil.Process(app.endpoints.process.pid)
        assert app.endpoints.process is None  # no longer the app's to use
        await app.close()
        closed = True
        assert not server.is_running()  # reaped by the close, not later
    finally:
        if not closed:
            await app.close()


def _alive_children() -> set[int]:
    alive = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.add(child.pid)
        except psutil.NoSuchProcess:
            pass
    return alive


async def test_a_server_that_cannot_start_ahead_leaves_the_session_working(tmp_path: Path) -> None:
    before = _alive_children()  # an earlier test's processes still winding down are not ours
    app = Fredica.open(tmp_path / "data")
    app.endpoints.start_timeout = 0.0  # it cannot answer in no time: the early start fails
    try:
        async with app.engine_session(start_endpoints=True) as engine:
            assert engine is app.running_engine
        assert app.endpoints.process is None
        assert app.endpoints.starts == 0
    finally:
        await app.close()
    await _until(lambda: not (_alive_children() - before), within=5)


async def test_without_it_the_server_waits_for_a_job(tmp_path: Path) -> None:
    app = Fredica.open(tmp_path / "data")
    try:
        async with app.engine_session():
            await asyncio.sleep(0.5)
            assert app.endpoints.process is None
    finally:
        await app.close()


async def test_the_endpoints_of_queued_work_start_their_child_with_the_server(
    tmp_path: Path,
) -> None:
    app = Fredica.open(tmp_path / "data")
    spec = {"tasks": [{"key": "s", "type": "SLEEP_SUBPROCESS", "payload": {"seconds": 0.1}}]}
    await app.submit(spec)
    app.queue_flag.write_text("paused\n")  # nothing is claimed: no job starts a child
    try:
        async with app.engine_session(start_endpoints=True):
            assert app.endpoints.warm == ["sleep"]
            await _until(lambda: app.endpoints.process is not None, within=30)
            assert app.endpoints.process is not None
            server = psutil.Process(app.endpoints.process.pid)
            await _until(lambda: job_processes(server), within=30)
    finally:
        await app.close()


async def test_a_server_started_before_the_settings_are_read_gets_them_at_its_first_use(
    tmp_path: Path,
) -> None:
    """``prestart`` (what ``process`` and ``worker`` do first): the server starts with no
    options, waits for them on stdin, and enforces what the settings say once they come."""
    data = tmp_path / "data"
    early = EndpointsProcess(log_file=tmp_path / "endpoints.log")
    await early.prestart()
    assert early.process is not None and early.process.returncode is None
    server = psutil.Process(early.process.pid)
    assert "--allow-write" not in server.cmdline()  # not known yet
    app = Fredica.open(data, endpoints=early)
    assert app.endpoints is early
    media = tmp_path / "in.mkv"
    media.write_bytes(b"not read: the output is refused first")
    try:
        address = await app.endpoints.address()
        assert app.endpoints.starts == 1 and app.endpoints.process is early.process
        async with open_task(address.port, "extract_audio", token=address.token) as ws:
            await start(ws, input=str(media), output=str(tmp_path / "outside.wav"))
            frames = await frames_until(ws, "result", "error")
        assert frames[-1]["type"] == "error" and "outside the folders" in frames[-1]["error"]
        assert not (tmp_path / "outside.wav").exists()
        assert "serving the task endpoints" in (tmp_path / "endpoints.log").read_text()
    finally:
        await app.close()
    await _until(lambda: not server.is_running() or server.status() == "zombie", within=10)


async def test_process_s_early_start_sends_a_server_started_ahead_its_options_at_once(
    tmp_path: Path,
) -> None:
    """What ``process`` does once the app is open: the server started ahead gets its options
    and warms the template's endpoints, before anything is submitted."""
    early = EndpointsProcess()
    await early.prestart()
    app = Fredica.open(tmp_path / "data", endpoints=early)
    try:
        app.start_endpoints_early({"EXTRACT_AUDIO", "TRANSCODE_MP4"})
        await _until(lambda: app.endpoints.serving, within=60)
        assert app.endpoints.starts == 1
        assert app.endpoints.warm == ["extract_audio", "transcode_mp4"]
        assert early.process is not None
        server = psutil.Process(early.process.pid)
        await _until(lambda: len(job_processes(server)) == 2, within=60)  # one spare each
    finally:
        await app.close()


async def test_a_server_started_ahead_that_died_is_replaced_at_its_first_use(
    tmp_path: Path,
) -> None:
    early = EndpointsProcess()
    await early.prestart()
    assert early.process is not None
    dead = early.process
    dead.kill()
    await dead.wait()
    app = Fredica.open(tmp_path / "data", endpoints=early)
    try:
        address = await app.endpoints.address()
        assert app.endpoints.process is not None and app.endpoints.process is not dead
        assert app.endpoints.starts == 1 and app.endpoints.serving
        async with open_task(address.port, "sleep", token=address.token) as ws:
            await start(ws, seconds=0)
            assert (await frames_until(ws, "result", "error"))[-1]["type"] == "result"
    finally:
        await app.close()


async def test_a_server_started_ahead_and_never_used_goes_with_the_app(tmp_path: Path) -> None:
    before = _alive_children()
    early = EndpointsProcess()
    await early.prestart()
    app = Fredica.open(tmp_path / "data", endpoints=early)
    await asyncio.sleep(0.5)  # its imports done, its fork server started: waiting for options
    await app.close()
    assert app.endpoints.process is None and app.endpoints.starts == 0
    await _until(lambda: not (_alive_children() - before), within=10)


@pytest.mark.parametrize(
    ("given", "code", "said"),
    [
        ("", 0, ""),  # stdin closed: the parent no longer wants a server
        ('{"allow_write": 3}\n', 1, "invalid options on stdin"),
        ('{"unknown": []}\n', 1, "invalid options on stdin"),
        ('{"warm": []}\n', 1, "no token"),  # the token comes with the options, or not at all
    ],
)
def test_the_server_s_options_on_stdin_are_validated(given: str, code: int, said: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "python_endpoints", "--options-on-stdin"],
        input=given,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (code, "")
    assert said in done.stderr


async def test_the_server_s_output_is_read_to_its_end_and_its_first_lines_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What follows the port on the server's standard output (the pipe itself: the CLI's
    flood test): a line longer than a read, split across reads, is logged by its beginning;
    control characters escaped; 20 lines logged, the rest read and dropped, to the end."""
    out = asyncio.StreamReader()
    long_line = b"head " + b"x" * 100_000 + b" tail\n"
    for at in range(0, len(long_line), 30_000):
        out.feed_data(long_line[at : at + 30_000])
    out.feed_data(b"bell\x07 and \xff\r\n")
    out.feed_data(b"".join(b"line %d\n" % i for i in range(100)))
    out.feed_eof()
    caplog.set_level("INFO", logger="fredica_app.endpoints")
    async with asyncio.timeout(10):
        await _drain(out, 42)
    assert out.at_eof()
    said = [r.getMessage() for r in caplog.records]
    prefix = "endpoints server (pid 42) output: "
    assert said[0] == prefix + "head " + "x" * 195
    assert said[1] == prefix + "bell\\x07 and \ufffd"
    assert said[2:20] == [prefix + f"line {i}" for i in range(18)]
    assert said[20:] == ["endpoints server (pid 42): its further output is not logged"]
