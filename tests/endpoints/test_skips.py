"""``check_skip`` is decided by the endpoints server, where the files are: a run whose output is
already there completes at once, skipped, without its job starting."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fredica_app import jobs
from python_endpoints.protocol import InitData, InitParamAndRun, dump
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task
from tests.support.clips import SampleCache
from tests.support.process_table import assert_no_job_process_left
from workers.engine import WorkerEngine
from workers.executors.websocket import EndpointsAddress
from workers.spec import parse_spec, prepare_run
from workers.store import TaskStore

#: The params of every run of a job that reached ``run`` (a run skipped never does: its child
#: is never started), by endpoint name.
STARTED: dict[str, list[dict[str, Any]]] = {}


def counted(name: str) -> type:
    """The real endpoint of ``name``, noting each run that starts."""

    class Counted(ENDPOINTS[name]):  # type: ignore[misc,valid-type]
        async def run(self, params: dict[str, Any]) -> dict[str, Any]:
            STARTED.setdefault(name, []).append(params)
            return await super().run(params)  # type: ignore[no-any-return]

    return Counted


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleCache:
    return SampleCache(tmp_path_factory.mktemp("samples"))


@pytest.fixture
async def server() -> AsyncIterator[int]:
    STARTED.clear()
    names = ("extract_audio", "download")
    srv = EndpointServer({**ENDPOINTS, **{n: counted(n) for n in names}}, TOKEN)
    port = await srv.start()
    yield port
    await srv.close()
    await assert_no_job_process_left()


async def run(port: int, name: str, *, check_skip: bool, **params: Any) -> list[dict[str, Any]]:
    async with open_task(port, name=name) as ws:
        init = InitParamAndRun(data=InitData(params=params, check_skip=check_skip))
        await ws.send(dump(init))
        return await frames_until(ws, "result", "error", "cancelled", within=60)


async def test_a_current_output_is_skipped_without_starting_the_job(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    source = samples.copy(tmp_path / "in")
    output = tmp_path / "out" / "in.16k.wav"
    job = {"input": str(source), "output": str(output)}
    skipped = {"type": "result", "result": {"skipped": True, "outputs": [str(output)]}}

    # Nothing there yet: it runs.
    first = await run(server, "extract_audio", check_skip=True, **job)
    assert first[-1]["type"] == "result" and "skipped" not in first[-1]["result"]
    assert len(STARTED["extract_audio"]) == 1
    made = output.stat().st_mtime_ns

    # The same input and params: done at once, nothing started, nothing rewritten.
    assert await run(server, "extract_audio", check_skip=True, **job) == [skipped]
    assert len(STARTED["extract_audio"]) == 1 and output.stat().st_mtime_ns == made

    # Not asked to check: it runs.
    await run(server, "extract_audio", check_skip=False, **job)
    assert len(STARTED["extract_audio"]) == 2

    # Other params that shape the output: it runs, and that output is current next.
    other = await run(server, "extract_audio", check_skip=True, sample_rate=8000, **job)
    assert other[-1]["result"]["sample_rate"] == 8000
    assert len(STARTED["extract_audio"]) == 3
    assert await run(server, "extract_audio", check_skip=True, sample_rate=8000, **job) == [skipped]
    # A param that does not shape the output changes nothing; a changed input does.
    again = await run(
        server, "extract_audio", check_skip=True, sample_rate=8000, keep_free_bytes=1, **job
    )
    assert again == [skipped] and len(STARTED["extract_audio"]) == 3
    source.write_bytes(source.read_bytes())  # same bytes, another mtime
    await run(server, "extract_audio", check_skip=True, sample_rate=8000, **job)
    assert len(STARTED["extract_audio"]) == 4


async def test_an_existing_download_is_skipped_without_a_request(
    server: int, tmp_path: Path
) -> None:
    output = tmp_path / "movie.mkv"
    output.write_bytes(b"downloaded before")
    # Nothing listens there: a run would fail; a skip makes no request at all.
    job = {"url": "http://127.0.0.1:9/movie.mkv", "output": str(output)}
    frames = await run(server, "download", check_skip=True, **job)
    assert frames == [{"type": "result", "result": {"skipped": True, "outputs": [str(output)]}}]
    assert "download" not in STARTED and output.read_bytes() == b"downloaded before"
    output.unlink()
    frames = await run(server, "download", check_skip=True, **job)
    assert frames[-1]["type"] == "error" and len(STARTED["download"]) == 1


async def test_the_engine_records_the_skip_the_server_decided(
    store: TaskStore, samples: SampleCache, tmp_path: Path
) -> None:
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()

    async def address() -> EndpointsAddress:
        return EndpointsAddress("127.0.0.1", port, TOKEN)

    source = samples.copy(tmp_path / "in")
    output = tmp_path / "in.16k.wav"
    payload = {"input": str(source), "output": str(output), "check_skip": True}
    registry = jobs.registry()
    try:
        results = []
        for _ in range(2):
            spec = {"tasks": [{"key": "audio", "type": "EXTRACT_AUDIO", "payload": payload}]}
            created = await store.create_run(prepare_run(parse_spec(spec), registry))
            engine = WorkerEngine(store, jobs.executors(address), registry=registry)
            await asyncio.wait_for(engine.run(until_idle=True), 60)
            task = await store.get_task(created.task_ids["audio"])
            results.append(task.result)
    finally:
        await srv.close()
    assert results[0] is not None and results[0]["outputs"] == [str(output)]
    assert "skipped" not in results[0]
    # What the engine wrote when it checked the sidecar itself: the same.
    assert results[1] == {"skipped": True, "outputs": [str(output)]}
