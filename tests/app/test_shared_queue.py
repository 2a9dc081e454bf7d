"""The application on a shared queue (PostgreSQL, ``--db-url``): the commands, two hosts'
workers (two data directories, two processes each with its own home) on one database, a
worker killed while its task runs, the restart log per host, credentials never shown, and a
database newer than this build."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.support import postgres
from tests.support.rawdb import RawDB

EXE = str(Path(sys.executable).parent / "fredica")


@pytest.fixture
def pg(postgres_database: postgres.PostgresDatabase) -> str:
    postgres_database.reset()
    return postgres_database.url


def fredica(
    data: Path, url: str, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, "--data-dir", str(data), "--db-url", url, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "FREDICA_DATA_DIR": str(data)},
    )


def settle(data: Path, **values: Any) -> None:
    data.mkdir(parents=True, exist_ok=True)
    (data / "settings.json").write_text(json.dumps(values))


def spec(tmp_path: Path, tasks: list[dict[str, Any]]) -> str:
    path = tmp_path / f"spec-{time.monotonic_ns()}.json"
    path.write_text(json.dumps({"tasks": tasks}))
    return str(path)


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=30)


def start_worker(data: Path, url: str, procs: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [EXE, "--data-dir", str(data), "--db-url", url, "worker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    procs.append(p)
    return p


def logs_of(data: Path) -> str:
    """The end of a data directory's logs (the engine's and the endpoints server's)."""
    return "".join(p.read_text() for p in sorted((data / "logs").glob("*.log")))[-6000:]


def wait_for(predicate: Any, within: float = 30.0) -> Any:
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_the_commands_work_on_a_shared_queue(tmp_path: Path, pg: str) -> None:
    data = tmp_path / "host-a"
    done = fredica(data, pg, "process", "--sample", "--template", "extract_audio", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["status"] == "completed"
    assert not (data / "fredica.db").exists()  # the queue is the shared one, not a file here
    listed = fredica(data, pg, "runs", "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [run["id"]]
    # Another host (another data directory) sees the same queue.
    other = fredica(tmp_path / "host-b", pg, "run", run["id"][:8], "--json")
    assert json.loads(other.stdout)["status"] == "completed"
    hosts = json.loads(fredica(data, pg, "hosts", "--all", "--json").stdout)
    assert [h["stopped_at"] is not None for h in hosts] == [True]  # process's engine stopped
    assert hosts[0]["task_types"]["EXTRACT_AUDIO"] >= 1


def test_credentials_are_never_shown(tmp_path: Path, pg: str) -> None:
    data = tmp_path / "host"
    u = sa.make_url(pg)
    wrong = u.set(password="hunter2", port=1).render_as_string(hide_password=False)
    failed = fredica(data, wrong, "runs")
    assert failed.returncode == 1
    assert "hunter2" not in failed.stdout + failed.stderr
    assert "cannot be reached" in failed.stderr and "***" in failed.stderr
    assert failed.stderr.count("\n") == 1  # one line
    logs = "".join(p.read_text() for p in (data / "logs").glob("*.log"))
    assert "hunter2" not in logs
    refused = subprocess.run(
        [EXE, "--data-dir", str(data), "settings", "set", "database_url", wrong],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1 and "keep the password out of the URL" in refused.stderr
    doctor = fredica(data, pg, "doctor", "--json", timeout=300)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)}
    assert "PostgreSQL, shared" in checks["database"]["detail"]


def test_a_database_newer_than_this_build_is_refused_with_one_line(tmp_path: Path) -> None:
    why = postgres.unavailable()
    if why is not None:
        pytest.skip(why)
    db = postgres.create_database()
    try:
        with RawDB(db.url).connect() as conn:
            conn.execute("UPDATE alembic_version SET version_num = '9999'")
        got = fredica(tmp_path / "old-host", db.url, "runs")
        assert got.returncode == 1
        assert got.stderr.count("\n") == 1
        assert "upgraded by a newer Fredica (schema 9999" in got.stderr
        assert "install that version or newer" in got.stderr
    finally:
        db.drop()


@pytest.mark.slow
def test_two_hosts_share_the_work_and_a_killed_one_loses_nothing(
    tmp_path: Path, pg: str, workers: list[subprocess.Popen[str]]
) -> None:
    """Two workers, each with its own data directory (its own home), on one database; the
    one running the long task is killed (kill -9): the other takes the task over once its
    lease has run out, from its checkpoint; every task completes once; the killed host's
    restart log says what happened to what it ran, the other host's does not."""
    homes = [tmp_path / "a", tmp_path / "b"]
    for d in homes:
        settle(d, lease_seconds=3, heartbeat_seconds=0.5, max_workers=2)
    raw = RawDB(pg)
    procs = [start_worker(d, pg, workers) for d in homes]
    # Both running before there is work: whichever claims the long task is the one killed,
    # as soon as the task has a checkpoint (on a loaded machine a command or a start takes
    # seconds: the long task must still be running when its host dies).
    wait_for(lambda: raw.scalar("SELECT count(*) FROM worker WHERE stopped_at IS NULL") == 2)
    long_task = [{"key": "long", "type": "SLEEP", "payload": {"seconds": 8}}]
    first = json.loads(fredica(homes[0], pg, "submit", spec(tmp_path, long_task), "--json").stdout)

    def slept() -> float:
        return float(
            raw.scalar("SELECT checkpoint ->> 'slept' FROM task WHERE key = 'long'") or 0.0
        )

    wait_for(lambda: slept() >= 4.0)  # half done
    holder = raw.scalar("SELECT worker_id FROM task WHERE key = 'long'")
    pids = [p.pid for p in procs]
    killed = pids.index(int(holder.rsplit(":", 2)[1]))
    os.killpg(procs[killed].pid, signal.SIGKILL)  # the host of the long task dies, its children too
    killed_at = time.monotonic()
    procs[killed].communicate(timeout=30)
    assert raw.scalar("SELECT status FROM task WHERE key = 'long'") == "running"
    dead, alive = homes[killed], homes[1 - killed]
    short = [{"key": f"n{i}", "type": "SLEEP", "payload": {"seconds": 0.3}} for i in range(6)]
    second = json.loads(fredica(alive, pg, "submit", spec(tmp_path, short), "--json").stdout)
    wait_for(
        lambda: raw.scalar("SELECT count(*) FROM task WHERE status = 'completed'") == 7,
        within=60,
    )
    # Quiet, it takes a lease, a renewal and what was left of the task (about 8 s); the
    # bound is for a loaded machine. That it resumed, not restarted, the restart log says.
    assert time.monotonic() - killed_at < 40
    hosts = json.loads(fredica(dead, pg, "hosts", "--json").stdout)
    assert len(hosts) >= 1
    rows = raw.rows(
        "SELECT key, attempt, interruptions, charged_interruptions, retry_count FROM task"
    )
    by_key = {r[0]: r[1:] for r in rows}
    assert by_key["long"] == (2, 1, 0, 0)
    assert all(by_key[f"n{i}"] == (1, 0, 0, 0) for i in range(6))
    completed = raw.rows(
        "SELECT task_id, count(*) FROM task_event WHERE kind = 'completed' GROUP BY task_id"
    )
    assert sorted(n for _, n in completed) == [1] * 7
    log_dead = json.loads(fredica(dead, pg, "restart-log", "--json").stdout)
    log_alive = json.loads(fredica(alive, pg, "restart-log", "--json").stdout)
    # What the killed host was running when it died is in its restart log, and is what the
    # other host ran again.
    assert [(e["task_id"], e["action"]) for e in log_dead] == [
        (first["task_ids"]["long"], "resumed")
    ]
    assert log_dead[0]["progress"] >= 50  # from its checkpoint, half done
    assert log_alive == []
    assert raw.scalar("SELECT status FROM workflow_run WHERE id = ?", second["run_id"]) == (
        "completed"
    )
    survivor = procs[1 - killed]
    survivor.send_signal(signal.SIGTERM)
    _, err = survivor.communicate(timeout=30)
    assert survivor.returncode == 0, err


@pytest.mark.slow
def test_a_worker_stopped_past_its_lease_is_taken_over_and_its_late_result_refused(
    tmp_path: Path, pg: str, workers: list[subprocess.Popen[str]]
) -> None:
    """SIGSTOP a worker while its task runs, past the lease: another host takes the task
    over and completes it; the stopped worker, continued, finds its lease gone — its own end
    of the task changes nothing, and the task is completed once."""
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        settle(d, lease_seconds=3, heartbeat_seconds=0.5)
    task = [{"key": "s", "type": "SLEEP", "payload": {"seconds": 4}}]
    created = json.loads(fredica(a, pg, "submit", spec(tmp_path, task), "--json").stdout)
    task_id = created["task_ids"]["s"]
    raw = RawDB(pg)
    wa = start_worker(a, pg, workers)
    wait_for(lambda: raw.scalar("SELECT status FROM task WHERE id = ?", task_id) == "running")
    first_holder = raw.scalar("SELECT worker_id FROM task WHERE id = ?", task_id)
    os.killpg(wa.pid, signal.SIGSTOP)
    wb = start_worker(b, pg, workers)
    wait_for(
        lambda: raw.scalar("SELECT status FROM task WHERE id = ?", task_id) == "completed",
        within=60,
    )
    holder = raw.scalar("SELECT worker_id FROM task WHERE id = ?", task_id)
    assert holder != first_holder
    os.killpg(wa.pid, signal.SIGCONT)  # it wakes up and would finish its own attempt
    time.sleep(6)  # longer than what was left of its sleep, and a few heartbeats
    row = raw.rows(
        "SELECT status, attempt, worker_id, interruptions, retry_count FROM task WHERE id = ?",
        task_id,
    )
    assert row == [("completed", 2, holder, 1, 0)]
    assert (
        raw.scalar(
            "SELECT count(*) FROM task_event WHERE task_id = ? AND kind = 'completed'", task_id
        )
        == 1
    )
    for w, d in ((wa, a), (wb, b)):
        w.send_signal(signal.SIGTERM)
        try:
            _, err = w.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{d.name}'s worker still runs 30 s after SIGTERM; its logs:\n{logs_of(d)}")
        assert w.returncode == 0, err + logs_of(d)
