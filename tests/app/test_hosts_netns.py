"""Hosts in network namespaces made by the test (tests/support/netns.py): the database on the
machine (a private cluster, TLS and a password), two worker hosts of their own, each with its
own data directory and its own endpoints server, and an endpoints host (``fredica endpoints``
with TLS and a token) serving the ``gpu`` class to both. A host's link is cut while it runs
tasks, then restored; then a host dies whole (``kill -9`` of everything in its namespace); the
endpoints host too; a worker is SIGSTOPped past its lease and continued; PostgreSQL is
restarted while both hosts run tasks. Every run finishes, nothing is lost, nothing is
completed twice."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import netns, pgcluster
from tests.support.rawdb import RawDB

EXE = str(Path(sys.executable).parent / "fredica")

pytestmark = pytest.mark.slow

LEASE = 4.0
HEARTBEAT = 0.5


@pytest.fixture(scope="module")
def network() -> Iterator[tuple[pgcluster.Cluster, list[netns.Host]]]:
    """The database, and three hosts: two for workers, the third for an endpoints server."""
    for why in (netns.unavailable(), pgcluster.unavailable()):
        if why is not None:
            pytest.skip(why)
    hosts = netns.hosts(3)
    root = Path(tempfile.mkdtemp(prefix="fredica-pg-"))
    try:
        with netns.forwarding():
            cluster = pgcluster.make_cluster(root, tuple(h.gateway for h in hosts))
            try:
                yield cluster, hosts
            finally:
                cluster.stop("immediate")
    finally:
        for h in hosts:
            h.down()
        shutil.rmtree(root, ignore_errors=True)


def start_worker(
    host: netns.Host, cluster: pgcluster.Cluster, data: Path, **settings: object
) -> subprocess.Popen[str]:
    data.mkdir(parents=True, exist_ok=True)
    (data / "settings.json").write_text(
        json.dumps(
            {"lease_seconds": LEASE, "heartbeat_seconds": HEARTBEAT, "max_workers": 2, **settings}
        )
    )
    url = cluster.url(host=host.gateway)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["PGPASSWORD"] = pgcluster.PASSWORD
    return subprocess.Popen(
        host.command(EXE, "--data-dir", str(data), "--db-url", url, "worker"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def stop_all(*procs: subprocess.Popen[str]) -> dict[int, str]:
    """SIGTERM (after a SIGCONT) every one still running, wait up to 60 s, else kill; each
    reaped, whatever happens. The tail of what each said, by pid."""
    told = {}
    for w in procs:
        if w.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(w.pid, signal.SIGCONT)
            w.send_signal(signal.SIGTERM)
        try:
            out, err = w.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            w.kill()
            out, err = w.communicate()
            err += "\n(killed: still running 60 s after SIGTERM)"
        told[w.pid] = (out or "")[-1500:] + (err or "")[-1500:]
    return told


def submit(
    raw: RawDB,
    cluster: pgcluster.Cluster,
    tmp: Path,
    n: int,
    seconds: float,
    **task: object,
) -> str:
    spec = tmp / f"spec-{time.monotonic_ns()}.json"
    tasks = [
        {"key": f"s{i}", "type": "SLEEP", "payload": {"seconds": seconds}, **task} for i in range(n)
    ]
    spec.write_text(json.dumps({"tasks": tasks}))
    env = {**os.environ, "PGPASSWORD": pgcluster.PASSWORD}
    done = subprocess.run(
        [
            EXE,
            "--data-dir",
            str(tmp / "submitter"),
            "--db-url",
            cluster.url(),
            "submit",
            str(spec),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["run_id"])


def wait_for(what: str, predicate: object, within: float) -> None:
    deadline = time.monotonic() + within
    while True:
        try:
            if predicate():  # type: ignore[operator]
                return
        except Exception:
            pass
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def held_by(raw: RawDB, pid: int) -> list[str]:
    return [
        r[0]
        for r in raw.rows(
            "SELECT t.id FROM task t JOIN worker w ON w.id = t.worker_id "
            "WHERE w.pid = ? AND t.status IN ('claimed', 'running')",
            pid,
        )
    ]


def run_done(raw: RawDB, run_id: str, n: int) -> bool:
    return (
        raw.scalar(
            "SELECT count(*) FROM task WHERE workflow_run_id = ? AND status = 'completed'", run_id
        )
        == n
    )


def attempt(raw: RawDB, task_id: str) -> int:
    return int(raw.scalar("SELECT attempt FROM task WHERE id = ?", task_id))


def completed_once(raw: RawDB, run_id: str) -> list[int]:
    return sorted(
        n
        for _, n in raw.rows(
            "SELECT task_id, count(*) FROM task_event WHERE kind = 'completed' "
            "AND workflow_run_id = ? GROUP BY task_id",
            run_id,
        )
    )


def test_a_cut_link_then_a_dead_host_lose_nothing_and_double_nothing(
    network: tuple[pgcluster.Cluster, list[netns.Host]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, (h1, h2, _) = network
    monkeypatch.setenv("PGPASSWORD", pgcluster.PASSWORD)
    raw = RawDB(cluster.url())
    w1 = start_worker(h1, cluster, tmp_path / "h1")
    w2 = start_worker(h2, cluster, tmp_path / "h2")
    try:
        # --- a link cut while the host runs tasks, then restored --------------------------
        first = submit(raw, cluster, tmp_path, 8, 3.0)
        wait_for("host 1 to run tasks", lambda: len(held_by(raw, w1.pid)) == 2, 60)
        cut_off = held_by(raw, w1.pid)
        h1.cut()
        # Host 1 cannot renew: host 2 takes its tasks once their leases ran out.
        wait_for(
            "host 2 to take over",
            lambda: all(
                raw.scalar("SELECT worker_id FROM task WHERE id = ?", t) is None
                or raw.scalar("SELECT attempt FROM task WHERE id = ?", t) >= 2
                for t in cut_off
            ),
            LEASE + 20,
        )
        time.sleep(2)
        h1.restore()
        wait_for("the first run", lambda: run_done(raw, first, 8), 120)
        assert completed_once(raw, first) == [1] * 8
        for t in cut_off:
            row = raw.rows(
                "SELECT attempt, interruptions, charged_interruptions, retry_count FROM task "
                "WHERE id = ?",
                t,
            )
            assert row == [(2, 1, 0, 0)], row
        assert w1.poll() is None and w2.poll() is None  # both lived through it
        # Host 1 is back: it renews its row again, and takes its share of new work.
        wait_for(
            "host 1 to renew again",
            lambda: (
                raw.scalar(
                    "SELECT extract(epoch FROM now()) - heartbeat_at FROM worker WHERE pid = ? "
                    "AND stopped_at IS NULL",
                    w1.pid,
                )
                < 2
            ),
            60,
        )
        second = submit(raw, cluster, tmp_path, 8, 1.0)
        wait_for("the second run", lambda: run_done(raw, second, 8), 60)
        ran = {
            r[0]
            for r in raw.rows(
                "SELECT DISTINCT w.pid FROM task_event e JOIN worker w ON "
                "w.id = e.detail ->> 'worker_id' WHERE e.workflow_run_id = ? "
                "AND e.kind IN ('claimed', 'started')",
                second,
            )
        }
        assert ran == {w1.pid, w2.pid}

        # --- a host killed whole (everything in its namespace) ------------------------------
        third = submit(raw, cluster, tmp_path, 6, 2.0)
        wait_for("host 2 to run tasks", lambda: len(held_by(raw, w2.pid)) >= 1, 60)
        h2.kill_all()
        w2.communicate(timeout=30)
        wait_for("the third run", lambda: run_done(raw, third, 6), 120)
        assert completed_once(raw, third) == [1] * 6
    finally:
        told = stop_all(w1, w2)
    assert w1.returncode == 0, told[w1.pid]


def start_endpoints_host(host: netns.Host, tmp: Path, share: Path) -> subprocess.Popen[str]:
    """``fredica endpoints`` on ``host``: TLS for its address, a token file, writes on the
    share only. Its certificate and token are those :func:`endpoint_entry` trusts."""
    return subprocess.Popen(
        host.command(
            EXE,
            "endpoints",
            "--host",
            "0.0.0.0",
            "--port",
            "8765",
            "--certfile",
            str(tmp / "gpu.pem"),
            "--keyfile",
            str(tmp / "gpu.key"),
            "--token-file",
            str(tmp / "gpu.token"),
            "--allow-write",
            str(share),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_an_endpoints_host_cut_off_then_killed_loses_no_task(
    network: tuple[pgcluster.Cluster, list[netns.Host]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import trustme

    cluster, (h1, h2, gpu) = network
    monkeypatch.setenv("PGPASSWORD", pgcluster.PASSWORD)
    raw = RawDB(cluster.url())
    authority = trustme.CA()
    cert = authority.issue_cert(gpu.addr)
    authority.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "gpu.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "gpu.key"))
    (tmp_path / "gpu.token").write_text("a-token-for-the-gpu-host")
    (tmp_path / "gpu.token").chmod(0o600)
    share = tmp_path / "share"  # as the workers see it
    share.mkdir()
    share_there = tmp_path / "gpu-mounts" / "share"  # as the GPU host does
    share_there.parent.mkdir()
    share_there.symlink_to(share)
    entry = {
        "name": "gpu-box",
        "url": f"wss://{gpu.addr}:8765",
        "classes": ["gpu"],
        "token_file": str(tmp_path / "gpu.token"),
        "ca_file": str(tmp_path / "ca.pem"),
        "path_map": [{"local": str(share), "remote": str(share_there)}],
    }
    server = start_endpoints_host(gpu, tmp_path, share_there)
    assert server.stdout is not None
    assert json.loads(server.stdout.readline())["port"] == 8765
    w1 = start_worker(h1, cluster, tmp_path / "h1", endpoint_hosts=[entry])
    w2 = start_worker(h2, cluster, tmp_path / "h2", endpoint_hosts=[entry])
    gpu_work = {"type": "SLEEP_SUBPROCESS", "resource": "gpu", "max_retries": 8}
    try:
        # --- the endpoints host's link cut while it runs tasks, then restored --------------
        first = submit(raw, cluster, tmp_path, 6, 2.0, **gpu_work)
        wait_for(
            "the GPU host to run tasks",
            lambda: raw.scalar("SELECT count(*) FROM task WHERE status = 'running'") >= 2,
            60,
        )
        gpu.cut()
        time.sleep(3)
        gpu.restore()
        wait_for("the first run", lambda: run_done(raw, first, 6), 180)
        assert completed_once(raw, first) == [1] * 6
        ran_on = {
            r[0]
            for r in raw.rows(
                "SELECT DISTINCT w.pid FROM task_event e JOIN worker w ON "
                "w.id = e.detail ->> 'worker_id' WHERE e.workflow_run_id = ? "
                "AND e.kind = 'started'",
                first,
            )
        }
        assert ran_on == {w1.pid, w2.pid}  # both workers sent it work

        # --- the endpoints host killed whole, then started again ---------------------------
        second = submit(raw, cluster, tmp_path, 4, 2.0, **gpu_work)
        wait_for(
            "the GPU host to run the second run",
            lambda: (
                raw.scalar(
                    "SELECT count(*) FROM task WHERE workflow_run_id = ? AND status = 'running'",
                    second,
                )
                >= 1
            ),
            60,
        )
        gpu.kill_all()
        server.communicate(timeout=30)
        time.sleep(2)
        server = start_endpoints_host(gpu, tmp_path, share_there)
        wait_for("the second run", lambda: run_done(raw, second, 4), 180)
        assert completed_once(raw, second) == [1] * 4
        # Each failed attempt was the lost connection to the host, nothing else.
        retried = {
            r[0]
            for r in raw.rows(
                "SELECT detail ->> 'error_type' FROM task_event WHERE workflow_run_id = ? "
                "AND kind IN ('retry_scheduled', 'failed')",
                second,
            )
        }
        assert retried == {"CONNECTION_LOST"}
        # What ran when the host died ran again: a lost connection to a host uses an attempt.
        assert raw.scalar("SELECT max(attempt) FROM task WHERE workflow_run_id = ?", second) >= 2
        assert w1.poll() is None and w2.poll() is None
        assert list(share.iterdir()) == []  # no probe file left
    finally:
        stop_all(w1, w2, server)


def test_a_stopped_worker_and_a_restarted_database_lose_nothing(
    network: tuple[pgcluster.Cluster, list[netns.Host]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, (h1, h2, _) = network
    monkeypatch.setenv("PGPASSWORD", pgcluster.PASSWORD)
    raw = RawDB(cluster.url())
    w1 = start_worker(h1, cluster, tmp_path / "h1")
    w2 = start_worker(h2, cluster, tmp_path / "h2")
    try:
        # --- a worker SIGSTOPped past its lease, then SIGCONTed ------------------------------
        first = submit(raw, cluster, tmp_path, 6, 3.0)
        wait_for("host 1 to run tasks", lambda: len(held_by(raw, w1.pid)) >= 1, 60)
        frozen = held_by(raw, w1.pid)
        os.killpg(w1.pid, signal.SIGSTOP)
        wait_for(
            "host 2 to take the frozen host's tasks over",
            lambda: all(
                raw.scalar("SELECT attempt FROM task WHERE id = ?", t) >= 2 for t in frozen
            ),
            LEASE + 20,
        )
        os.killpg(w1.pid, signal.SIGCONT)  # its late writes must change nothing
        wait_for("the first run", lambda: run_done(raw, first, 6), 120)
        time.sleep(2 * HEARTBEAT)  # what the continued worker writes late, written
        assert completed_once(raw, first) == [1] * 6
        assert (
            raw.scalar(
                "SELECT count(*) FROM task WHERE workflow_run_id = ? AND status <> 'completed'",
                first,
            )
            == 0
        )
        assert w1.poll() is None and w2.poll() is None

        # --- PostgreSQL restarted while both run tasks ---------------------------------------
        second = submit(raw, cluster, tmp_path, 8, 1.5)
        wait_for(
            "tasks to run on both hosts",
            lambda: raw.scalar("SELECT count(*) FROM task WHERE status = 'running'") >= 2,
            60,
        )
        cluster.restart()  # every connection cut, the server away for a moment
        pgcluster.wait_until_up(cluster)
        raw = RawDB(cluster.url())
        wait_for("the second run", lambda: run_done(raw, second, 8), 180)
        assert completed_once(raw, second) == [1] * 8
        assert raw.scalar("SELECT max(attempt) FROM task WHERE workflow_run_id = ?", second) <= 2
        assert w1.poll() is None and w2.poll() is None  # both held, reconnected, went on
    finally:
        told = stop_all(w1, w2)
    assert w1.returncode == 0 and w2.returncode == 0, told
