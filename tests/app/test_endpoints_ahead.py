"""``engine_session(start_endpoints=True)``: the endpoints server starts beside the engine, not
when the first job asks for it — and is stopped with the session, started or not."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil

from fredica_app.services import Fredica


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
        await _until(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie")
    finally:
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

            def spare() -> bool:
                return any(
                    "multiprocessing" in " ".join(c.cmdline())
                    and "resource_tracker" not in " ".join(c.cmdline())
                    for c in server.children()
                )

            await _until(spare, within=30)
    finally:
        await app.close()
