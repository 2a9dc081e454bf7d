"""What a token holder cannot make the endpoints server do, for real: servers started as the app
starts them (and as ``fredica endpoints`` / ``python -m python_endpoints``), real job children,
a stand-in ffmpeg that reports what it was given.

- the token does not reach a job's processes (its child, ffmpeg);
- a job cannot choose the binary it runs (``ffmpeg`` is the server's);
- ANALYZE's ``api_key_env`` is refused unless the server was told of it
  (``test_export_analyze.py``);
- the standalone server refuses to start unsafely, and confines writes with ``--allow-write``.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import psutil
import pytest
from websockets.asyncio.client import connect

from fredica_app.endpoints import EndpointsProcess
from fredica_app.services import Fredica
from python_endpoints.jobs.media import ffmpeg_binary
from python_endpoints.serving.child import ChildContext
from python_endpoints.serving.endpoint import ProcessEndpoint
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, start
from tests.endpoints.test_export_analyze import TALK, transcript_file
from tests.support.clips import SampleCache
from tests.support.process_table import assert_no_job_process_left

FREDICA = str(Path(sys.executable).parent / "fredica")
#: Every endpoint whose params name a binary.
WITH_FFMPEG = ("transcode_mp4", "extract_audio", "extract_subtitles", "download_site")


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleCache:
    return SampleCache(tmp_path_factory.mktemp("samples"))


def fake_ffmpeg(path: Path, report: Path) -> Path:
    """A stand-in ffmpeg that writes its environment to ``report``, then fails."""
    path.write_text(f"#!/bin/sh\nenv > '{report}'\necho 'a stand-in ffmpeg' >&2\nexit 1\n")
    path.chmod(0o755)
    return path


async def job(url: str, token: str, **params: Any) -> list[dict[str, Any]]:
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        await start(ws, **params)
        return await frames_until(ws, "result", "error", "cancelled", within=60)


# --- the token stays with the server ---------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/environ")
async def test_the_token_does_not_reach_a_jobs_processes(
    tmp_path: Path, samples: SampleCache
) -> None:
    report = tmp_path / "ffmpeg-env.txt"
    ffmpeg = fake_ffmpeg(tmp_path / "ffmpeg", report)
    endpoints = EndpointsProcess(write_roots=[tmp_path / "out"], ffmpeg=ffmpeg)
    try:
        address = await endpoints.address()
        assert endpoints.process is not None
        server = psutil.Process(endpoints.process.pid)
        # Not in the server's environment, which /proc shows for as long as it runs (it came
        # on its standard input)…
        assert address.token not in "\n".join(server.environ().values())
        headers = {"Authorization": f"Bearer {address.token}"}
        async with connect(address.url("sleep"), additional_headers=headers) as ws:
            await start(ws, seconds=30)
            await frames_until(ws, "progress")
            children = [
                p
                for p in server.children(recursive=True)
                if "resource_tracker" not in " ".join(p.cmdline())
            ]
            assert children  # the job's child
            for child in children:
                environ = child.environ()
                assert address.token not in "\n".join(environ.values())
        # …and ffmpeg, started by a media job's child, has neither.
        frames = await job(
            address.url("extract_audio"),
            address.token,
            input=str(samples.get("mkv", 2.0)),
            output=str(tmp_path / "out" / "audio.wav"),
        )
        assert frames[-1]["type"] == "error" and "a stand-in ffmpeg" in frames[-1]["error"]
        environ = report.read_text()
        assert address.token not in environ
    finally:
        await endpoints.stop()


# --- the binary is the server's ---------------------------------------------------------------


@pytest.fixture
async def server() -> AsyncIterator[int]:
    srv = EndpointServer(ENDPOINTS, TOKEN)  # the bundled ffmpeg
    port = await srv.start()
    yield port
    await srv.close()
    await assert_no_job_process_left()


@pytest.mark.parametrize("endpoint", WITH_FFMPEG)
async def test_a_job_cannot_name_another_binary(
    server: int, tmp_path: Path, samples: SampleCache, endpoint: str
) -> None:
    report = tmp_path / "ran.txt"
    binary = fake_ffmpeg(tmp_path / "evil", report)
    params: dict[str, Any] = {"ffmpeg": str(binary)}
    if endpoint == "download_site":
        params |= {"url": "https://example.com/v", "output": str(tmp_path / "v.mp4")}
    elif endpoint == "extract_subtitles":
        params |= {"input": str(samples.get()), "output_dir": str(tmp_path), "stem": "s"}
    else:
        suffix = ".mp4" if endpoint == "transcode_mp4" else ".wav"
        params |= {"input": str(samples.get()), "output": str(tmp_path / f"out{suffix}")}
    async with open_task(server, endpoint) as ws:
        await start(ws, **params)
        frames = await frames_until(ws, "result", "error", "cancelled", within=60)
    error = frames[-1]
    assert error["type"] == "error" and error["error_type"] == "PAYLOAD_ERROR", error
    assert f"ffmpeg {str(binary)!r} is not the ffmpeg this server runs" in error["error"]
    assert ffmpeg_binary({}) in error["error"] and "ffmpeg_path" in error["error"]
    assert len(frames) == 1 and not report.exists()  # refused before anything ran
    assert os.listdir(tmp_path) == ["evil"]


async def test_the_servers_own_ffmpeg_is_filled_in_and_may_be_named(
    tmp_path: Path, samples: SampleCache
) -> None:
    report = tmp_path / "ran.txt"
    binary = fake_ffmpeg(tmp_path / "my-ffmpeg", report)
    (tmp_path / "link").symlink_to(binary)
    srv = EndpointServer(ENDPOINTS, TOKEN, ffmpeg=str(binary))
    port = await srv.start()
    try:
        # Not named (the server's is filled in), named, named through a symbolic link.
        for named in (None, str(binary), str(tmp_path / "link")):
            report.unlink(missing_ok=True)
            params = {"input": str(samples.get()), "output": str(tmp_path / "a.wav")}
            async with open_task(port, "extract_audio") as ws:
                await start(ws, **params, **({"ffmpeg": named} if named else {}))
                frames = await frames_until(ws, "result", "error", within=60)
            assert "a stand-in ffmpeg" in frames[-1]["error"], frames[-1]
            assert report.exists()  # it ran
    finally:
        await srv.close()
    await assert_no_job_process_left()


async def test_a_link_to_the_servers_ffmpeg_re_pointed_while_the_job_waits_runs_nothing_else(
    tmp_path: Path, samples: SampleCache
) -> None:
    """The job names the server's ffmpeg through a link (accepted), then waits for its output,
    which another job holds; meanwhile the link is pointed at another program. The job runs
    the server's ffmpeg all the same (before: it ran the path as given, so the other program)."""
    report, evil_report = tmp_path / "ran.txt", tmp_path / "evil-ran.txt"
    binary = fake_ffmpeg(tmp_path / "my-ffmpeg", report)
    evil = fake_ffmpeg(tmp_path / "evil", evil_report)
    link = tmp_path / "link"
    link.symlink_to(binary)
    srv = EndpointServer(ENDPOINTS, TOKEN, ffmpeg=str(binary))
    port = await srv.start()
    output = tmp_path / "a.wav"
    holder = srv.output_locks.claim([output])  # another job writes it now
    try:
        params = {"input": str(samples.get()), "output": str(output), "ffmpeg": str(link)}
        async with open_task(port, "extract_audio") as ws:
            await start(ws, **params)
            await asyncio.sleep(0.5)  # accepted, and waiting for its output
            link.unlink()
            link.symlink_to(evil)
            srv.output_locks.release(holder)
            frames = await frames_until(ws, "result", "error", within=60)
        assert "a stand-in ffmpeg" in frames[-1]["error"], frames[-1]
        assert report.exists() and not evil_report.exists()
    finally:
        await srv.close()
    await assert_no_job_process_left()


async def test_an_output_folder_swapped_for_a_link_while_the_job_waits_is_refused(
    tmp_path: Path, samples: SampleCache
) -> None:
    """The output folder is inside the server's write root when the job is accepted; while
    the job waits for its output (another job holds it), the folder is replaced by a link
    leading out of the root. The job is refused at its turn, and nothing is written outside
    (before: checked once, before the wait, it wrote through the link)."""
    root, outside = tmp_path / "library", tmp_path / "outside"
    (root / "talk").mkdir(parents=True)
    outside.mkdir()
    srv = EndpointServer(ENDPOINTS, TOKEN, write_roots=[root])
    port = await srv.start()
    output = root / "talk" / "audio.wav"
    holder = srv.output_locks.claim([output])
    try:
        async with open_task(port, "extract_audio") as ws:
            await start(ws, input=str(samples.get("mkv", 2.0)), output=str(output))
            await asyncio.sleep(0.5)  # accepted, and waiting for its output
            (root / "talk").rmdir()
            (root / "talk").symlink_to(outside)
            srv.output_locks.release(holder)
            frames = await frames_until(ws, "result", "error", within=60)
        error = frames[-1]
        assert error["type"] == "error" and error["error_type"] == "PAYLOAD_ERROR", error
        assert "outside the folders this server may write to" in error["error"]
        assert "changed while the job waited" in error["error"]
        assert os.listdir(outside) == []
    finally:
        await srv.close()
    await assert_no_job_process_left()


# --- what the app allows, from its settings -----------------------------------------------------


async def test_the_app_starts_its_server_with_its_ffmpeg_and_key_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    settings = {"ffmpeg_path": str(tmp_path / "my-ffmpeg"), "llm_api_key_env": "FREDICA_TEST_KEY"}
    (data / "settings.json").write_text(json.dumps(settings))
    monkeypatch.setenv("FREDICA_TEST_OTHER_SECRET", "do-not-send")
    monkeypatch.delenv("FREDICA_TEST_KEY", raising=False)
    app = Fredica.open(data, thorough=False)
    try:
        assert app.endpoints.ffmpeg == tmp_path / "my-ffmpeg"
        assert app.endpoints.api_key_envs == ["FREDICA_TEST_KEY"]
        address = await app.endpoints.address()
        transcript = transcript_file(app.library_dir / "t.transcript.json", TALK)
        errors = {}
        for name in ("FREDICA_TEST_KEY", "FREDICA_TEST_OTHER_SECRET"):
            llm = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": name}
            frames = await job(
                address.url("analyze"),
                address.token,
                transcript=str(transcript),
                output=str(app.library_dir / f"{name}.json"),
                llm=llm,
            )
            errors[name] = frames[-1]
    finally:
        await app.close()
    # The variable the settings name may be read (it is not set: said so, nothing sent)…
    assert errors["FREDICA_TEST_KEY"]["error_type"] == "AWAITING_CREDENTIAL"
    # …any other is refused before the job starts.
    refusal = errors["FREDICA_TEST_OTHER_SECRET"]
    assert refusal["error_type"] == "PAYLOAD_ERROR", refusal
    assert "(allowed: FREDICA_TEST_KEY)" in refusal["error"]


# --- semaphores a job's library creates -----------------------------------------------------


_KEPT: list[Any] = []


def make_a_lock(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any]:
    """What tqdm does under faster-whisper: a ``multiprocessing`` lock, left for the exit."""
    lock = multiprocessing.RLock()
    _KEPT.append(lock)
    return {"name": lock._semlock.name}


def semaphore_exists(name: str) -> bool:
    return Path(f"/dev/shm/sem.{name.lstrip('/')}").exists()


class LockMaker(ProcessEndpoint):
    name: ClassVar[str] = "lock_maker"
    keep_spare = False
    target = staticmethod(make_a_lock)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="named semaphores in /dev/shm")
async def test_a_semaphore_a_job_leaves_is_unlinked_when_its_child_ends() -> None:
    srv = EndpointServer({"lock_maker": LockMaker}, TOKEN)
    port = await srv.start()
    try:
        async with open_task(port, "lock_maker") as ws:
            await start(ws)
            frames = await frames_until(ws, "result", "error", within=60)
    finally:
        await srv.close()
    name = frames[-1]["result"]["name"]
    assert name  # a named semaphore (the child's start method is spawn)…
    assert not semaphore_exists(name)  # …unlinked at its exit
    await assert_no_job_process_left()


# --- the standalone server's command ---------------------------------------------------------


def token_file(tmp_path: Path, mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    path.write_text("secret-token-0123")
    path.chmod(mode)
    return path


def refused(*argv: str) -> tuple[int, list[str]]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stderr.splitlines()


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = token_file(tmp_path, 0o644)
    for argv, prog in (
        ([FREDICA, "endpoints"], "fredica"),
        ([sys.executable, "-m", "python_endpoints"], "python -m python_endpoints"),
    ):
        code, lines = refused(*argv, "--token-file", str(path))
        assert code == 1 and len(lines) == 1, lines
        assert lines[0].startswith(f"{prog}: error: the token file {path} can be read by other")
        assert f"chmod 600 {path}" in lines[0]
    code, lines = refused(FREDICA, "endpoints", "--token-file", str(tmp_path / "none"))
    assert code == 1 and len(lines) == 1, lines
    assert f"the token file {tmp_path / 'none'} cannot be read" in lines[0]


def test_a_network_address_without_tls_is_refused(tmp_path: Path) -> None:
    path = token_file(tmp_path)
    for host in ("0.0.0.0", "192.0.2.1", "::", "example.com"):
        code, lines = refused(FREDICA, "endpoints", "--host", host, "--token-file", str(path))
        assert code == 1 and len(lines) == 1, lines
        assert lines[0].startswith(f"fredica: error: refusing to serve on {host} without TLS")
        assert "--certfile" in lines[0]


def test_allow_write_confines_the_standalone_servers_jobs(tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    path = token_file(tmp_path)
    server = subprocess.Popen(
        [FREDICA, "endpoints", "--token-file", str(path), "--allow-write", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = json.loads(server.stdout.readline())["port"]
        url = f"ws://127.0.0.1:{port}/tasks/transcode_mp4"
        missing = str(tmp_path / "missing.mkv")

        async def both() -> tuple[dict[str, Any], dict[str, Any]]:
            elsewhere = str(tmp_path / "elsewhere" / "x.mp4")
            outside = await job(url, "secret-token-0123", input=missing, output=elsewhere)
            inside = await job(url, "secret-token-0123", input=missing, output=str(root / "x.mp4"))
            return outside[-1], inside[-1]

        outside, inside = asyncio.run(both())
        assert outside["error_type"] == "PAYLOAD_ERROR", outside
        assert "outside the folders this server may write to" in outside["error"]
        assert inside["error_type"] == "INPUT_MISSING", inside  # allowed: the job ran
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=20)
    assert server.returncode == 0, stderr
