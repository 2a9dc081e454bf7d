"""``/tasks/path_probe``: what an endpoint host's path map is checked with. It reads only probe
files, never through a link, and answers only inside the server's ``--allow-write`` folders."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from workers.executors.remote import PROBE_PREFIX, EndpointHost, PathMap, ProbeFailed, probe_paths
from workers.executors.websocket import EndpointsAddress, JobError, run_job

TOKEN = "probe-token"


@pytest.fixture
async def share(tmp_path: Path) -> AsyncIterator[tuple[EndpointsAddress, Path]]:
    """A server that may write in ``tmp_path/share`` only."""
    folder = tmp_path / "share"
    folder.mkdir()
    srv = EndpointServer(ENDPOINTS, TOKEN, write_roots=[folder])
    port = await srv.start()
    yield EndpointsAddress("127.0.0.1", port, TOKEN), folder
    await srv.close()


def probe_in(folder: Path, text: str) -> tuple[Path, Path]:
    name = PROBE_PREFIX + secrets.token_hex(16)
    (folder / name).write_text(text)
    return folder / name, folder / (name + ".reply")


async def ask(address: EndpointsAddress, probe: Path, answer: Path, expect: str) -> dict[str, Any]:
    params = {"input": str(probe), "output": str(answer), "expect": expect, "reply": "b" * 32}
    return await run_job(address, "path_probe", params, within=20)


async def test_a_probe_file_that_holds_what_is_said_is_answered_beside_it(
    share: tuple[EndpointsAddress, Path],
) -> None:
    address, folder = share
    probe, answer = probe_in(folder, "a" * 32)
    assert await ask(address, probe, answer, "a" * 32) == {"found": True, "matches": True}
    assert answer.read_text() == "b" * 32
    probe2, answer2 = probe_in(folder, "c" * 32)
    assert await ask(address, probe2, answer2, "a" * 32) == {"found": True, "matches": False}
    assert not answer2.exists()  # no answer for what does not match
    missing = folder / (PROBE_PREFIX + "d" * 32)
    result = await ask(address, missing, missing.with_name(missing.name + ".reply"), "a" * 32)
    assert result == {"found": False, "matches": False}


async def test_it_reads_no_other_file_and_no_link(
    share: tuple[EndpointsAddress, Path], tmp_path: Path
) -> None:
    address, folder = share
    secret = folder / "passwords.txt"
    secret.write_text("a" * 32)
    with pytest.raises(JobError) as refused:
        await ask(address, secret, folder / "passwords.txt.reply", "a" * 32)
    assert refused.value.error_type == "PAYLOAD_ERROR"
    assert "reads only a probe file" in str(refused.value)
    # A probe file's name on a link to another file: not read through it.
    link = folder / (PROBE_PREFIX + "e" * 32)
    link.symlink_to(secret)
    assert await ask(address, link, link.with_name(link.name + ".reply"), "a" * 32) == {
        "found": False,
        "matches": False,
    }


async def test_its_answer_is_confined_to_the_folders_it_may_write(
    share: tuple[EndpointsAddress, Path], tmp_path: Path
) -> None:
    address, _ = share
    outside = tmp_path / "outside"
    outside.mkdir()
    probe, answer = probe_in(outside, "a" * 32)
    with pytest.raises(JobError) as refused:
        await ask(address, probe, answer, "a" * 32)
    assert refused.value.error_type == "PAYLOAD_ERROR"
    assert "outside the folders this server may write to" in str(refused.value)
    assert not answer.exists()


async def test_probe_paths_checks_both_ways_and_leaves_nothing(
    share: tuple[EndpointsAddress, Path], tmp_path: Path
) -> None:
    address, folder = share
    there = tmp_path / "mounted-there"
    there.symlink_to(folder)
    good = EndpointHost("box", address, frozenset({"gpu"}), (PathMap(str(folder), str(there)),))
    await probe_paths(good, lambda a, e, p: run_job(a, e, p, within=20))
    assert list(folder.iterdir()) == []
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    wrong = EndpointHost("box", address, frozenset({"gpu"}), (PathMap(str(elsewhere), str(there)),))
    with pytest.raises(ProbeFailed, match=f"box does not see this machine's {elsewhere} at"):
        await probe_paths(wrong, lambda a, e, p: run_job(a, e, p, within=20))
    assert list(elsewhere.iterdir()) == [] and list(folder.iterdir()) == []
