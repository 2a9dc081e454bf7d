"""Crashes of a real ``fredica worker`` process: ``kill -9`` mid-run and named crash points at
commit boundaries. Afterwards: nothing lost, nothing completed twice, SLEEP resumed from its
checkpoint, and the restart log says what happened."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

EXE = str(Path(sys.executable).parent / "fredica")


def fredica(data: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [EXE, "--data-dir", str(data), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def run_cli(
    data: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[int, str, str]:
    proc = fredica(data, *args, env=env)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def submit(data: Path, spec: dict[str, Any]) -> dict[str, Any]:
    path = data / "spec.json"
    data.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec))
    code, out, err = run_cli(data, "submit", str(path), "--json")
    assert code == 0, err
    return dict(json.loads(out))


def query(data: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(data / "fredica.db", timeout=30) as conn:
        return conn.execute(sql, args).fetchall()


def wait_for(predicate: Any, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def assert_exactly_once(data: Path, run_id: str) -> dict[str, dict[str, Any]]:
    code, out, err = run_cli(data, "run", run_id, "--json")
    assert code == 0, err
    run = json.loads(out)
    assert run["status"] == "completed", run
    tasks = {t["key"]: t for t in run["tasks"]}
    assert all(t["status"] == "completed" for t in tasks.values())
    completions = dict(
        query(
            data,
            "SELECT task_id, count(*) FROM task_event WHERE kind = 'completed' GROUP BY task_id",
        )
    )
    assert completions == {t["id"]: 1 for t in tasks.values()}  # nothing completed twice
    return tasks


def test_kill_9_mid_run_then_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    spec = {
        "tasks": [{"key": "start", "type": "NOOP"}]
        + [
            {
                "key": f"s{i}",
                "type": "SLEEP",
                "payload": {"seconds": 2.0},
                "depends_on": ["start"],
                "max_retries": 2,
            }
            for i in range(3)
        ]
        + [{"key": "end", "type": "NOOP", "depends_on": ["s0", "s1", "s2"]}]
    }
    submitted = submit(data, spec)
    worker = fredica(data, "worker")
    try:
        # Wait until the sleeps run and have checkpointed about a second of sleep.
        wait_for(
            lambda: (
                len(
                    query(
                        data,
                        "SELECT id FROM task WHERE status = 'running' AND type = 'SLEEP' "
                        "AND json_extract(checkpoint, '$.slept') > 0.8",
                    )
                )
                == 3
            )
        )
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=10)
    assert worker.returncode == -signal.SIGKILL
    slept = dict(
        query(
            data, "SELECT key, json_extract(checkpoint, '$.slept') FROM task WHERE type = 'SLEEP'"
        )
    )
    assert all(v > 0.8 for v in slept.values())

    code, _, err = run_cli(data, "worker", "--until-idle")
    assert code == 0, err
    assert "recovered: 3 requeued" in err
    tasks = assert_exactly_once(data, submitted["run_id"])
    for i in range(3):
        t = tasks[f"s{i}"]
        assert t["attempt"] == 2 and t["retry_count"] == 1
        # The second attempt slept only what was left after the checkpoint.
        assert t["completed_at"] - t["started_at"] < 2.0 - slept[f"s{i}"] + 0.6
    code, out, _ = run_cli(data, "restart-log", "--json")
    log = json.loads(out)
    assert {e["task_id"] for e in log} == {tasks[f"s{i}"]["id"] for i in range(3)}
    assert all(e["action"] == "requeued" and e["status_at_restart"] == "running" for e in log)


@pytest.mark.parametrize("point", ["after_claim", "before_commit", "after_commit"])
def test_named_crash_points(tmp_path: Path, point: str) -> None:
    data = tmp_path / "data"
    spec = {
        "tasks": [
            {"key": "a", "type": "SLEEP", "payload": {"seconds": 0.3}, "max_retries": 1},
            # Not a NOOP: NOOP runs inline, claimed and completed in one commit.
            {
                "key": "b",
                "type": "SLEEP",
                "payload": {"seconds": 0.05},
                "depends_on": ["a"],
                "max_retries": 1,
            },
            {"key": "c", "type": "NOOP", "depends_on": ["b"], "max_retries": 1},
        ]
    }
    submitted = submit(data, spec)
    code, _, _ = run_cli(data, "worker", "--until-idle", env={"FREDICA_CRASH_AT": point})
    assert code == -signal.SIGKILL  # it really died at the point
    code, _, err = run_cli(data, "worker", "--until-idle")
    assert code == 0, err
    tasks = assert_exactly_once(data, submitted["run_id"])
    attempts = {k: t["attempt"] for k, t in tasks.items()}
    if point == "after_commit":
        # a's result was durable: a did not run again. b, claimed and started in the same
        # commit, was interrupted and ran once more.
        assert attempts == {"a": 1, "b": 2, "c": 1}
    else:
        # a was interrupted (before its result was committed): it ran again, once.
        assert attempts == {"a": 2, "b": 1, "c": 1}


def test_second_engine_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    submitted = submit(data, {"tasks": [{"key": "s", "type": "SLEEP", "payload": {"seconds": 60}}]})
    worker = fredica(data, "worker")
    try:
        wait_for(lambda: query(data, "SELECT status FROM task")[0][0] == "running")
        code, _, err = run_cli(data, "worker", "--until-idle")
        assert code == 1
        assert "another Fredica engine is already running" in err and "pid" in err
        # Reading and submitting still work beside it.
        assert run_cli(data, "run", submitted["run_id"])[0] == 0
        # A cancel from this process reaches the running task through the database.
        code, _, _ = run_cli(data, "cancel", submitted["task_ids"]["s"])
        assert code == 0
        wait_for(lambda: query(data, "SELECT status FROM task")[0][0] == "cancelled")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=30)
    assert worker.returncode == 0
