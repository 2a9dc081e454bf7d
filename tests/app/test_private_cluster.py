"""A shared queue on a PostgreSQL of the test's own (tests/support/pgcluster.py): a password
(SCRAM) from the environment or a password file, TLS checked against the test's CA, and the
server restarted while a worker runs."""

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
from typing import Any

import pytest

from tests.support import pgcluster
from tests.support.rawdb import RawDB

EXE = str(Path(sys.executable).parent / "fredica")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[pgcluster.Cluster]:
    why = pgcluster.unavailable()
    if why is not None:
        pytest.skip(why)
    # Not under pytest's temporary folders: those are root's alone, and the server runs as
    # the postgres user.
    root = Path(tempfile.mkdtemp(prefix="fredica-pg-"))
    made = pgcluster.make_cluster(root)
    try:
        yield made
    finally:
        made.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


def fredica(
    data: Path, url: str, *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    return subprocess.run(
        [EXE, "--data-dir", str(data), "--db-url", url, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**base, **(env or {})},
    )


def test_a_password_from_the_environment_or_a_file_and_tls_checked(
    cluster: pgcluster.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "host"
    url = cluster.url()
    with_password = {"PGPASSWORD": pgcluster.PASSWORD}
    done = fredica(
        data, url, "process", "--sample", "--template", "extract_audio", env=with_password
    )
    assert done.returncode == 0, done.stderr
    # The connection was TLS, checked against the CA.
    monkeypatch.setenv("PGPASSWORD", pgcluster.PASSWORD)
    assert RawDB(url).scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()") is True
    monkeypatch.delenv("PGPASSWORD")
    # A password file instead (mode 600, as libpq wants it).
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"localhost:{cluster.port}:*:{pgcluster.USER}:{pgcluster.PASSWORD}\n")
    passfile.chmod(0o600)
    listed = fredica(data, f"{url}&passfile={passfile}", "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 1
    # No password: one line, saying why.
    none = fredica(data, url, "runs")
    assert none.returncode == 1 and none.stderr.count("\n") == 1
    assert "password" in none.stderr
    # A wrong one given in the URL: refused, and never shown.
    wrong = fredica(data, cluster.url(password="not-it-123"), "runs")
    assert wrong.returncode == 1 and "not-it-123" not in wrong.stderr + wrong.stdout
    assert "password authentication failed" in wrong.stderr
    # A server whose certificate another CA signed (or a man in the middle): refused.
    import trustme

    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    spoofed = url.replace(str(cluster.ca_pem), str(other_ca))
    refused = fredica(data, spoofed, "runs", env=with_password)
    assert refused.returncode == 1 and "certificate verify failed" in refused.stderr


def test_postgresql_restarted_mid_run_loses_no_task_and_doubles_no_claim(
    cluster: pgcluster.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "worker-host"
    data.mkdir()
    (data / "settings.json").write_text(
        json.dumps({"lease_seconds": 6, "heartbeat_seconds": 0.5, "max_workers": 2})
    )
    url = cluster.url()
    env = {"PGPASSWORD": pgcluster.PASSWORD}
    monkeypatch.setenv("PGPASSWORD", pgcluster.PASSWORD)
    raw = RawDB(url)
    spec = tmp_path / "spec.json"
    tasks: list[dict[str, Any]] = [
        {"key": f"s{i}", "type": "SLEEP", "payload": {"seconds": 1}} for i in range(12)
    ]
    spec.write_text(json.dumps({"tasks": tasks}))
    submitted = fredica(data, url, "submit", str(spec), "--json", env=env)
    assert submitted.returncode == 0, submitted.stderr
    run_id = json.loads(submitted.stdout)["run_id"]
    base = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    worker = subprocess.Popen(
        [EXE, "--data-dir", str(data), "--db-url", url, "worker"],
        env={**base, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while _count(raw, run_id) < 3:
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.1)
        cluster.restart()  # mid-run: tasks running, connections cut
        pgcluster.wait_until_up(cluster)
        deadline = time.monotonic() + 120
        while _count(raw, run_id) < 12:
            assert time.monotonic() < deadline, "the run did not finish after the restart"
            assert worker.poll() is None, worker.communicate()[1]
            time.sleep(0.2)
        completed = raw.rows(
            "SELECT task_id, count(*) FROM task_event WHERE kind = 'completed' "
            "AND workflow_run_id = ? GROUP BY task_id",
            run_id,
        )
        assert sorted(n for _, n in completed) == [1] * 12  # none done twice
        attempts = [
            a for (a,) in raw.rows("SELECT attempt FROM task WHERE workflow_run_id = ?", run_id)
        ]
        assert all(1 <= a <= 2 for a in attempts), attempts
        assert raw.scalar("SELECT status FROM workflow_run WHERE id = ?", run_id) == "completed"
    finally:
        worker.send_signal(signal.SIGTERM)
        _out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err


def _count(raw: RawDB, run_id: str) -> int:
    """The run's completed tasks (-1 while the server restarts)."""
    try:
        return int(
            raw.scalar(
                "SELECT count(*) FROM task WHERE status = 'completed' AND workflow_run_id = ?",
                run_id,
            )
        )
    except Exception:
        return -1
