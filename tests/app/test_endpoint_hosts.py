"""Endpoint hosts: tasks of a resource class run on another host's endpoints server.

Each "host" here is a real endpoints server process (``python -m python_endpoints``) with TLS
from a CA of the test's own, a token file and ``--allow-write``, on 127.0.0.1. Its view of the
shared storage is another path — a symbolic link to the test's "NAS" folder, as a mount of the
same share is on another machine — so that every path a task sends or gets back must go
through the path map to work.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from fredica_app.services import Fredica
from python_endpoints.jobs.sample import make_sample
from tests.support.apps import opened_app
from tests.support.endpoint_hosts import Lab, make_lab
from workers.executors.remote import PROBE_PREFIX

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with make_lab(tmp_path) as made:
        yield made


async def run_until_idle(app: Fredica) -> None:
    async with app.engine_session() as engine:
        await asyncio.wait_for(engine.run(until_idle=True), 150)


async def sleeps(app: Fredica, n: int, seconds: float = 0.1, retries: int = 0) -> str:
    spec = {
        "tasks": [
            {
                "key": f"s{i}",
                "type": "SLEEP_SUBPROCESS",
                "resource": "gpu",
                "payload": {"seconds": seconds},
                "max_retries": retries,
            }
            for i in range(n)
        ]
    }
    return (await app.submit(spec)).run_id


def sizes(paths: list[str]) -> list[int]:
    return [os.path.getsize(p) for p in paths]


def leftover_probes(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(PROBE_PREFIX)]


# --- real work on another host -------------------------------------------------------------


async def test_a_file_on_shared_storage_is_processed_there_in_its_paths(lab: Lab) -> None:
    gpu_box = lab.start("gpu-box")
    data = lab.tmp / "data"
    lab.settings(data, [lab.entry(gpu_box, ["cpu", "io"])])
    clip = lab.nas / "media" / "Talk, part 1.mkv"
    clip.parent.mkdir()
    make_sample(clip, 2.0, kind="mkv")
    async with opened_app(data) as app:
        report = await app.import_items([str(clip)])
        submitted = await app.submit_for_material(report.materials[0], "extract_audio")
        await run_until_idle(app)
        run = await app.store.get_run(submitted.run_id)
        tasks = await app.store.list_tasks(submitted.run_id)
        assert app.router is not None
        state = app.router.states()[0]
    assert run.status.value == "completed", [(t.type, t.error) for t in tasks]
    extract = next(t for t in tasks if t.type == "EXTRACT_AUDIO")
    # Sent in the host's terms, given back in this machine's.
    assert extract.payload["input"] == str(clip)
    assert extract.result is not None
    outputs = extract.result["outputs"]
    assert outputs and all(o.startswith(str(lab.nas) + os.sep) for o in outputs), outputs
    assert min(sizes(outputs)) > 10_000
    # The work ran there (its log says so), every task on the host, each once.
    assert gpu_box.jobs_started("extract_audio") == 1
    assert gpu_box.jobs_started("probe") == 0  # the job probes its input itself
    assert gpu_box.jobs_started("path_probe") == 1  # the shared folder checked once
    assert state["verified"] and state["problem"] is None and state["running"] == 0
    local_log = data / "logs" / "endpoints.log"
    assert not local_log.exists() or "extract_audio: job started" not in local_log.read_text()
    assert leftover_probes(lab.nas) == []


async def test_a_file_off_shared_storage_is_refused_with_what_the_host_sees(lab: Lab) -> None:
    gpu_box = lab.start("gpu-box")
    data = lab.tmp / "data"
    lab.settings(data, [lab.entry(gpu_box, ["cpu", "io"])])
    clip = lab.tmp / "desktop" / "holiday.mkv"  # on this machine's own disk
    clip.parent.mkdir()
    make_sample(clip, 1.0, kind="mkv")
    async with opened_app(data) as app:
        report = await app.import_items([str(clip)])
        submitted = await app.submit_for_material(report.materials[0], "extract_audio")
        await run_until_idle(app)
        tasks = await app.store.list_tasks(submitted.run_id)
    failed = [t for t in tasks if t.status.value == "failed"]
    assert len(failed) == 1 and failed[0].error_type == "PAYLOAD_ERROR"
    assert failed[0].attempt == 1  # never retried: it cannot help
    error = failed[0].error or ""
    assert "holiday.mkv" in error and "not on shared storage" in error
    assert "gpu-box" in error and str(lab.nas) in error
    assert gpu_box.jobs_started("extract_audio") == 0


# --- which host, and when one is down --------------------------------------------------------


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    return port


async def test_tasks_fail_over_to_a_host_that_answers(lab: Lab) -> None:
    alive = lab.start("alive")
    down = {
        **lab.entry(alive, ["gpu"]),
        "name": "down",
        "url": f"wss://127.0.0.1:{_closed_port()}",
    }
    data = lab.tmp / "data"
    lab.settings(data, [down, lab.entry(alive, ["gpu"])])
    async with opened_app(data) as app:
        run_id = await sleeps(app, 3)
        await run_until_idle(app)
        tasks = await app.store.list_tasks(run_id)
        assert app.router is not None
        states = {s["name"]: s for s in app.router.states()}
    assert {t.status.value for t in tasks} == {"completed"}
    assert all(t.attempt == 1 for t in tasks)  # failing over within the attempt
    assert alive.jobs_started("sleep") == 3
    assert "down cannot be reached" in (states["down"]["problem"] or "")
    assert states["alive"]["problem"] is None


async def test_a_host_killed_mid_task_its_task_finishes_on_another(lab: Lab) -> None:
    first, second = lab.start("first"), lab.start("second")
    data = lab.tmp / "data"
    lab.settings(data, [lab.entry(first, ["gpu"]), lab.entry(second, ["gpu"])])
    async with opened_app(data) as app:
        run_id = await sleeps(app, 1, seconds=3.0, retries=2)
        async with app.engine_session() as engine:
            runner = asyncio.create_task(engine.run(until_idle=True))
            for _ in range(300):
                if first.jobs_started("sleep"):
                    break
                await asyncio.sleep(0.05)
            first.process.send_signal(signal.SIGKILL)  # the host's power goes
            await asyncio.wait_for(runner, 60)
        (task,) = await app.store.list_tasks(run_id)
    assert task.status.value == "completed", task.error
    assert task.attempt == 2  # a lost connection to a host: an attempt used
    assert second.jobs_started("sleep") == 1


# --- entries that cannot be used --------------------------------------------------------------


async def test_a_path_map_that_leads_elsewhere_takes_the_host_out(lab: Lab) -> None:
    elsewhere = lab.tmp / "another-share"
    elsewhere.mkdir()
    gpu_box = lab.start("gpu-box", allow_write=elsewhere)
    entry = lab.entry(gpu_box, ["gpu"])
    entry["path_map"] = [{"local": str(lab.nas), "remote": str(elsewhere)}]
    data = lab.tmp / "data"
    lab.settings(data, [entry])
    async with opened_app(data) as app:
        run_id = await sleeps(app, 1)
        await run_until_idle(app)
        (task,) = await app.store.list_tasks(run_id)
    assert task.status.value == "failed"
    assert task.error_type == "CONNECTION_LOST"
    assert f"gpu-box does not see this machine's {lab.nas} at {elsewhere}" in (task.error or "")
    assert gpu_box.jobs_started("sleep") == 0
    assert leftover_probes(lab.nas) == [] and leftover_probes(elsewhere) == []


async def test_a_token_file_others_can_read_is_refused_in_one_line(lab: Lab) -> None:
    gpu_box = lab.start("gpu-box")
    gpu_box.token_file.chmod(0o644)
    data = lab.tmp / "data"
    lab.settings(data, [lab.entry(gpu_box, ["gpu"])])
    async with opened_app(data) as app:
        run_id = await sleeps(app, 1, retries=3)
        await run_until_idle(app)
        (task,) = await app.store.list_tasks(run_id)
    assert task.status.value == "failed" and task.attempt == 1, task.error  # the settings' to fix
    assert f"chmod 600 {gpu_box.token_file}" in (task.error or "")
    assert gpu_box.jobs_started("sleep") == 0


async def test_a_certificate_from_another_authority_is_refused(lab: Lab) -> None:
    gpu_box = lab.start("gpu-box")
    stranger = lab.tmp / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(stranger))
    data = lab.tmp / "data"
    lab.settings(data, [lab.entry(gpu_box, ["gpu"], ca_file=str(stranger), path_map=[])])
    async with opened_app(data) as app:
        run_id = await sleeps(app, 1)
        await run_until_idle(app)
        (task,) = await app.store.list_tasks(run_id)
    assert task.status.value == "failed"
    assert "certificate verify failed" in (task.error or "")
    assert gpu_box.jobs_started("sleep") == 0


# --- what the user is told --------------------------------------------------------------------


def test_hosts_and_doctor_check_each_endpoint_host_now(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    from fredica_app.cli import main

    good = lab.start("gpu-box")
    gone = {**lab.entry(good, ["gpu"]), "name": "old-box", "url": "wss://127.0.0.1:1"}
    data = lab.tmp / "data"
    lab.settings(data, [lab.entry(good, ["gpu", "cpu"]), gone])

    code = main(["--data-dir", str(data), "hosts", "--endpoints", "--json"])
    states = {s["name"]: s for s in json.loads(capsys.readouterr().out)}
    assert code == 1  # one cannot be used
    assert states["gpu-box"]["problem"] is None and states["gpu-box"]["verified"]
    assert states["gpu-box"]["classes"] == ["cpu", "gpu"]
    assert states["gpu-box"]["url"] == f"wss://127.0.0.1:{good.port}"
    assert "cannot be reached at 127.0.0.1:1" in states["old-box"]["problem"]
    assert "connection refused: is its endpoints server running" in states["old-box"]["problem"]

    main(["--data-dir", str(data), "hosts"])
    table = capsys.readouterr().out
    assert "ENDPOINT HOST" in table
    assert any(line.startswith("gpu-box") and line.endswith("ok") for line in table.splitlines())

    code = main(["--data-dir", str(data), "doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert checks["endpoint host gpu-box"]["ok"]
    assert str(lab.nas) in checks["endpoint host gpu-box"]["detail"]
    assert not checks["endpoint host old-box"]["ok"]
    assert "endpoint_hosts" in checks["endpoint host old-box"]["fix"]
    assert leftover_probes(lab.nas) == []
