"""Hosts in network namespaces made by the test (tests/support/netns.py): the database on the
machine (a private cluster, TLS and a password), two worker hosts of their own, each with its
own data directory and its own endpoints server. A host's link is cut while it runs tasks,
then restored; then a host dies whole (``kill -9`` of everything in its namespace). Every run
finishes, nothing is lost, nothing is completed twice."""

from __future__ import annotations

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
    for why in (netns.unavailable(), pgcluster.unavailable()):
        if why is not None:
            pytest.skip(why)
    hosts = netns.hosts(2)
    root = Path(tempfile.mkdtemp(prefix="fredica-pg-"))
    try:
        cluster = pgcluster.make_cluster(root, tuple(h.gateway for h in hosts))
        try:
            yield cluster, hosts
        finally:
            cluster.stop("immediate")
    finally:
        for h in hosts:
            h.down()
        shutil.rmtree(root, ignore_errors=True)


def start_worker(host: netns.Host, cluster: pgcluster.Cluster, data: Path) -> subprocess.Popen[str]:
    data.mkdir(parents=True, exist_ok=True)
    (data / "settings.json").write_text(
        json.dumps({"lease_seconds": LEASE, "heartbeat_seconds": HEARTBEAT, "max_workers": 2})
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


def submit(raw: RawDB, cluster: pgcluster.Cluster, tmp: Path, n: int, seconds: float) -> str:
    spec = tmp / f"spec-{time.monotonic_ns()}.json"
    tasks = [{"key": f"s{i}", "type": "SLEEP", "payload": {"seconds": seconds}} for i in range(n)]
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
    cluster, (h1, h2) = network
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
        for pid in h2.pids():
            os.kill(pid, signal.SIGKILL)
        w2.communicate(timeout=30)
        wait_for("the third run", lambda: run_done(raw, third, 6), 120)
        assert completed_once(raw, third) == [1] * 6
    finally:
        for w in (w1, w2):
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
                try:
                    w.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    w.kill()
    assert w1.returncode == 0, w1.stderr.read() if w1.stderr else ""
