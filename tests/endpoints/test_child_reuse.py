"""Children kept for the next job: a batch of short jobs pays one child start per core, not
one per job. A child is kept only after a job that ended with a result and was never paused
or cancelled; anything else lets it go. Real server, real children, and the process table
looked at after each test."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import types
from collections.abc import AsyncIterator
from typing import Any

import pytest

from python_endpoints.protocol import Cancel, Pause, Resume, dump
from python_endpoints.serving import child, endpoint
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, running_child, start
from tests.support.process_table import assert_no_job_process_left, job_processes, process_gone


@pytest.fixture
async def server() -> AsyncIterator[tuple[EndpointServer, int]]:
    srv = EndpointServer(dict(ENDPOINTS), TOKEN, ping_interval=1, ping_timeout=2)
    port = await srv.start()
    yield srv, port
    await srv.close()
    await assert_no_job_process_left()


async def one_job(srv: tuple[EndpointServer, int], **params: Any) -> tuple[int, dict[str, Any]]:
    """Run one sleep job (the server's only one); the pid of the child it ran in, and its last
    frame."""
    async with open_task(srv[1]) as ws:
        await start(ws, **params)
        await frames_until(ws, "progress")
        pid = running_child(srv[0]).pid
        frames = await frames_until(ws, "result", "error", "cancelled")
    return pid, frames[-1]


async def job_beside_others(srv: tuple[EndpointServer, int], seconds: float) -> dict[str, Any]:
    async with open_task(srv[1]) as ws:
        await start(ws, seconds=seconds)
        frames = await frames_until(ws, "result", "error", "cancelled")
    return frames[-1]


async def gone(pid: int, within: float = 5.0) -> bool:
    for _ in range(int(within / 0.05)):
        if process_gone(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def assert_the_next_job_gets_another_child(
    srv: tuple[EndpointServer, int], first: int
) -> None:
    """``first`` (a child's pid) is gone, and the next job runs to its result in another."""
    assert await gone(first)
    second, last = await one_job(srv, seconds=0.2)
    assert second != first and last["type"] == "result"


async def test_a_child_whose_job_ended_with_a_result_runs_the_next_job(
    server: tuple[EndpointServer, int],
) -> None:
    first, last = await one_job(server, seconds=0.3)
    assert last == {"type": "result", "result": {"slept": 0.3}}
    assert endpoint.idle_children() == {"sleep": 1}
    second, last = await one_job(server, seconds=0.3)
    assert second == first
    # The events it shares with the server were reset: the job ran to its end.
    assert last == {"type": "result", "result": {"slept": 0.3}}
    assert len(job_processes()) == 1  # the one child, idle again; no spare beside it


@pytest.mark.parametrize(
    "params",
    [
        {"exit_silently": True},  # ended without a result: an error
        {"crash_after": 0.1, "exit_code": 4},  # its process died
    ],
    ids=["no-result", "crashed"],
)
async def test_after_an_error_the_child_goes_and_the_next_job_gets_another(
    server: tuple[EndpointServer, int], params: dict[str, Any]
) -> None:
    first, last = await one_job(server, seconds=0.3, **params)
    assert last["type"] == "error"
    await assert_the_next_job_gets_another_child(server, first)


async def test_a_cancelled_job_s_child_is_not_kept(server: tuple[EndpointServer, int]) -> None:
    first, _ = await one_job(server, seconds=0.2)
    async with open_task(server[1]) as ws:
        await start(ws, seconds=30)
        await frames_until(ws, "progress")
        assert running_child(server[0]).pid == first  # the kept child took it
        await ws.send(dump(Cancel()))
        assert (await frames_until(ws, "cancelled", "error"))[-1] == {"type": "cancelled"}
    await assert_the_next_job_gets_another_child(server, first)


async def test_a_job_paused_on_the_way_leaves_its_child_to_go(
    server: tuple[EndpointServer, int],
) -> None:
    """A pause may leave a child stopped or its resume event cleared: never reused."""
    async with open_task(server[1]) as ws:
        await start(ws, seconds=0.6)
        await frames_until(ws, "progress")
        first = running_child(server[0]).pid
        await ws.send(dump(Pause()))
        await asyncio.sleep(0.2)
        await ws.send(dump(Resume()))
        assert (await frames_until(ws, "result", "error"))[-1]["type"] == "result"
    await assert_the_next_job_gets_another_child(server, first)


async def test_a_job_module_can_say_its_child_takes_no_other_job(
    server: tuple[EndpointServer, int],
) -> None:
    """``reusable()`` false after the job (a transcription that used a GPU): the result
    arrives as usual, then the child exits; the next job gets another."""
    first, last = await one_job(server, seconds=0.2, not_reusable=True)
    assert last == {"type": "result", "result": {"slept": 0.2}}
    await assert_the_next_job_gets_another_child(server, first)


async def test_an_idle_child_that_died_is_replaced_without_an_error(
    server: tuple[EndpointServer, int],
) -> None:
    first, _ = await one_job(server, seconds=0.2)
    os.kill(first, signal.SIGKILL)
    assert await gone(first)
    second, last = await one_job(server, seconds=0.2)
    assert second != first
    assert last == {"type": "result", "result": {"slept": 0.2}}


async def test_a_child_is_let_go_after_its_share_of_jobs(
    server: tuple[EndpointServer, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(endpoint, "MAX_JOBS_PER_CHILD", 2)
    pids = [(await one_job(server, seconds=0.2))[0] for _ in range(3)]
    assert pids[0] == pids[1] != pids[2]
    assert await gone(pids[0])


async def test_a_batch_s_extra_children_go_when_idle_the_last_stays(
    server: tuple[EndpointServer, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(endpoint, "IDLE_TTL", 0.5)
    monkeypatch.setattr(endpoint, "MAX_IDLE", 2)
    results = await asyncio.gather(*(job_beside_others(server, 0.4) for _ in range(3)))
    assert all(last["type"] == "result" for last in results)
    assert endpoint.idle_children() == {"sleep": 2}  # the third went at once: two are kept
    for _ in range(60):
        if endpoint.idle_children() == {"sleep": 1}:
            break
        await asyncio.sleep(0.05)
    assert endpoint.idle_children() == {"sleep": 1}
    assert len(job_processes()) == 1


async def test_an_endpoint_whose_library_keeps_state_never_reuses_its_child() -> None:
    assert ENDPOINTS["download_site"].reuse_child is False  # type: ignore[attr-defined]
    assert ENDPOINTS["transcribe"].reuse_child is True  # type: ignore[attr-defined]
    assert ENDPOINTS["transcode_mp4"].reuse_child is True  # type: ignore[attr-defined]
    assert ENDPOINTS["probe"].reuse_child is True  # type: ignore[attr-defined]


async def test_warm_starts_a_child_for_an_endpoint_before_its_first_job(
    server: tuple[EndpointServer, int],
) -> None:
    """What ``--warm`` does: the client names the endpoints it is about to use."""
    assert server[0].warm(["sleep", "download", "transmogrify"]) == ["sleep"]
    for _ in range(200):
        if endpoint.idle_children() == {"sleep": 1}:
            break
        await asyncio.sleep(0.05)
    assert endpoint.idle_children() == {"sleep": 1}  # the in-loop download has no child
    [spare] = job_processes()
    pid, last = await one_job(server, seconds=0.2)
    assert pid == spare.pid and last["type"] == "result"


def _jobs_module(reusable: Any = None) -> types.ModuleType:
    module = types.ModuleType("some_jobs")
    if reusable is not None:
        module.reusable = reusable  # type: ignore[attr-defined]
    return module


def test_a_child_stays_only_when_its_jobs_module_says_it_may(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``reusable()`` of the job's module decides; a module without one stays; one whose
    ``reusable()`` fails lets its child go (a process in a state nobody knows takes no other
    job), with a warning in the log."""
    assert child._stays(_jobs_module()) is True
    assert child._stays(_jobs_module(lambda: True)) is True
    assert child._stays(_jobs_module(lambda: False)) is False

    def broken() -> bool:
        raise RuntimeError("the card's state cannot be read")

    with caplog.at_level(logging.WARNING):
        assert child._stays(_jobs_module(broken)) is False
    assert "reusable() of some_jobs failed" in caplog.text
    assert "the card's state cannot be read" in caplog.text
