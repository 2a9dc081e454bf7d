"""How children start: on Linux a fork server forks them from a process that imported the
jobs' modules once. A forked child must still be where a spawned one would be (the server's
environment and folder at its start), and must still end with its server. Real server, real
fork server, real children."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import psutil
import pytest

from python_endpoints.serving import starting
from python_endpoints.serving.endpoint import ProcessEndpoint
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, start
from tests.support.process_table import FORK_SERVER, assert_no_job_process_left

forked_only = pytest.mark.skipif(
    not starting.uses_forkserver(), reason="children are spawned here, not forked"
)
ENV_NAME = "FREDICA_TEST_CHILD_SEES"


def where_am_i(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    parent = psutil.Process(os.getppid())
    return {
        "env": os.environ.get(ENV_NAME),
        "cwd": os.getcwd(),
        "parent": " ".join(parent.cmdline()),
    }


class WhereAmI(ProcessEndpoint):
    name = "where"
    target = staticmethod(where_am_i)


async def one_job(port: int, name: str = "where") -> dict[str, Any]:
    async with open_task(port, name=name) as ws:
        await start(ws)
        frames = await frames_until(ws, "result", "error")
    assert frames[-1]["type"] == "result", frames[-1]
    result: dict[str, Any] = frames[-1]["result"]
    return result


@forked_only
async def test_a_forked_child_has_the_server_s_environment_and_folder_of_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starting.start_early()  # the fork server's environment and folder are those of before
    monkeypatch.setenv(ENV_NAME, "set after the fork server started")
    monkeypatch.chdir(tmp_path)
    srv = EndpointServer({"where": WhereAmI}, TOKEN)
    port = await srv.start()
    try:
        seen = await one_job(port)
    finally:
        await srv.close()
    await assert_no_job_process_left()
    assert seen["env"] == "set after the fork server started"
    assert seen["cwd"] == str(tmp_path)
    assert FORK_SERVER in seen["parent"]  # forked, not spawned


def ffmpeg_looked_up(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    from imageio_ffmpeg import _utils  # the cache of its lookup: private, pinned version

    return {"cached": _utils._get_ffmpeg_exe.cache_info().currsize}


class FfmpegLookedUp(ProcessEndpoint):
    name = "looked_up"
    target = staticmethod(ffmpeg_looked_up)


def frozen_objects(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    import gc

    return {"frozen": gc.get_freeze_count()}


class FrozenObjects(ProcessEndpoint):
    name = "frozen"
    target = staticmethod(frozen_objects)


@forked_only
async def test_a_forked_child_starts_with_the_preload_s_objects_frozen() -> None:
    """What the fork server's imports made is frozen before it forks: a child's collections
    leave those objects (and their memory pages, shared with the fork server) alone."""
    srv = EndpointServer({"frozen": FrozenObjects}, TOKEN)
    port = await srv.start()
    try:
        result = await one_job(port, "frozen")
    finally:
        await srv.close()
    await assert_no_job_process_left()
    assert result["frozen"] > 10_000  # the job modules', PyAV's, pydantic's objects


@forked_only
async def test_a_forked_child_finds_the_bundled_ffmpeg_looked_up_already() -> None:
    """The fork server looks the bundled ffmpeg up once (imageio-ffmpeg runs ``ffmpeg
    -version`` to check it); a child forked from it does not run that again."""
    if os.environ.get("IMAGEIO_FFMPEG_EXE"):
        pytest.skip("the ffmpeg is named by the environment: nothing is looked up")
    assert "python_endpoints.serving.preload" in starting.FORKSERVER_PRELOAD
    srv = EndpointServer({"looked_up": FfmpegLookedUp}, TOKEN)
    port = await srv.start()
    try:
        async with open_task(port, name="looked_up") as ws:
            await start(ws)
            frames = await frames_until(ws, "result", "error")
    finally:
        await srv.close()
    await assert_no_job_process_left()
    assert frames[-1] == {**frames[-1], "type": "result", "result": {"cached": 1}}


@forked_only
def test_the_fork_server_and_its_children_end_with_a_killed_server(tmp_path: Path) -> None:
    """SIGKILL of the server: the fork server sees its pipe close and exits, and an idle
    child forked by it sees its parent go, and exits too."""
    script = textwrap.dedent(
        """
        import asyncio, os, sys
        from python_endpoints.serving import endpoint
        from python_endpoints.serving.registry import ENDPOINTS

        async def main():
            endpoint.warm(ENDPOINTS["probe"])
            while not endpoint.idle_children():
                await asyncio.sleep(0.05)
            print("ready", flush=True)
            await asyncio.sleep(60)

        asyncio.run(main())
        """
    )
    server = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "ready"
        tree = psutil.Process(server.pid).children(recursive=True)
        forked = [p for p in tree if FORK_SERVER in " ".join(p.cmdline())]
        assert len(forked) == 2  # the fork server and the probe's spare
        server.kill()
        server.wait(10)
        _gone, alive = psutil.wait_procs(forked, timeout=10)
        assert alive == []
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
        assert server.stdout is not None
        server.stdout.close()


def test_children_are_spawned_where_they_cannot_be_forked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert not starting.uses_forkserver()
    monkeypatch.setattr(sys, "frozen", False, raising=False)
    monkeypatch.setattr(sys, "platform", "win32")
    assert not starting.uses_forkserver()
    monkeypatch.setattr(sys, "platform", "linux")
    assert starting.uses_forkserver()


def test_a_child_applies_the_environment_it_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_NAME, "before")
    sent = starting.child_environment()
    monkeypatch.setenv(ENV_NAME, "changed in the fork server")
    monkeypatch.setenv("FREDICA_TEST_ONLY_IN_FORK_SERVER", "1")
    monkeypatch.chdir(tmp_path)
    starting.apply_environment(sent)
    assert os.environ[ENV_NAME] == "before"
    assert "FREDICA_TEST_ONLY_IN_FORK_SERVER" not in os.environ
    assert os.getcwd() == sent["cwd"] != str(tmp_path)


class FreshWhereAmI(WhereAmI):
    """A child of its own for each job: none kept idle (whose reuse would start nothing)."""

    name = "fresh"
    reuse_child = False
    keep_spare = False


@forked_only
async def test_a_fork_server_that_dies_as_a_job_starts_is_replaced_and_the_job_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The fork server killed (by hand, or by the kernel short of memory) while it forks a
    job's child: the start reads EOF where the child's pid should be. It starts another
    fork server and the job runs — not a failed job (``EOFError``) for what the fork server
    went through."""
    from multiprocessing import forkserver

    starting.start_early()
    srv = EndpointServer({"fresh": FreshWhereAmI}, TOKEN)
    port = await srv.start()
    try:
        await one_job(port, "fresh")  # the fork server runs
        pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)  # alive to the check, deaf to the request
        job = asyncio.create_task(one_job(port, "fresh"))
        for _ in range(300):  # until the second job is starting its child
            if caplog.text.count("fresh: job started") >= 2:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the start waits for the child's pid
        os.kill(pid, signal.SIGKILL)
        seen = await asyncio.wait_for(job, 30)
    finally:
        await srv.close()
    await assert_no_job_process_left()
    assert FORK_SERVER in seen["parent"]
    assert forkserver._forkserver._forkserver_pid not in (None, pid)  # type: ignore[attr-defined]
    assert "fork server was gone" in caplog.text
