"""Crashes of a real ``fredica worker`` process: ``kill -9`` mid-run and named crash points at
commit boundaries. Afterwards: nothing lost, nothing completed twice, SLEEP resumed from its
checkpoint, and the restart log says what happened."""

from __future__ import annotations

import functools
import itertools
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
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
    assert "recovered: 3 resumed, 0 restarted from the start, 0 held, 0 failed" in err
    tasks = assert_exactly_once(data, submitted["run_id"])
    interruptions = dict(query(data, "SELECT key, interruptions FROM task WHERE type = 'SLEEP'"))
    assert interruptions == {f"s{i}": 1 for i in range(3)}  # a crash is counted
    for i in range(3):
        t = tasks[f"s{i}"]
        assert t["attempt"] == 2 and t["retry_count"] == 0  # and is not a failed attempt
        # The second attempt slept only what was left after the checkpoint.
        assert t["completed_at"] - t["started_at"] < 2.0 - slept[f"s{i}"] + 0.6
    code, out, _ = run_cli(data, "restart-log", "--json")
    log = json.loads(out)
    assert {e["task_id"] for e in log} == {tasks[f"s{i}"]["id"] for i in range(3)}
    assert all(e["action"] == "resumed" and e["status_at_restart"] == "running" for e in log)
    # They had saved checkpoints: interrupted, not charged against their limit.
    assert all(
        e["detail"].startswith(
            "crash: interrupted, not charged (it saved progress since its last interruption); "
            "charged so far: 0 of 5, 1 in all"
        )
        for e in log
    )


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


# --- interruptions: graceful stops and crashes are not failures ---------------------------


def descendants(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    try:
        return psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def assert_gone(procs: list[psutil.Process], data: Path, within: float = 10.0) -> None:
    """Every process in ``procs``, and any mentioning ``data`` (the endpoints server is started
    with ``--log-file DATA/logs/endpoints.log``), has exited."""

    def alive() -> list[psutil.Process]:
        found = [p for p in procs if p.is_running()]
        for p in psutil.process_iter(["cmdline"]):
            try:
                if any(str(data) in part for part in p.info["cmdline"] or ()):
                    found.append(p)
            except psutil.Error:
                continue
        left = []
        for p in found:
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    left.append(p)
            except psutil.NoSuchProcess:
                continue
        return left

    deadline = time.monotonic() + within
    while (left := alive()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes left behind: {[p.pid for p in left]}"


def test_sigterm_three_times_during_one_long_sleep_uses_no_retry(tmp_path: Path) -> None:
    """Three graceful stops (SIGTERM) of ``fredica worker`` during one long SLEEP without
    retries: each start resumes it from its checkpoint, the last one finishes it. A stop is
    neither a failed attempt nor a counted interruption."""
    data = tmp_path / "data"
    total = 36.0
    submitted = submit(
        data, {"tasks": [{"key": "long", "type": "SLEEP", "payload": {"seconds": total}}]}
    )

    def slept() -> float:
        sql = "SELECT coalesce(json_extract(checkpoint, '$.slept'), 0) FROM task"
        return float(query(data, sql)[0][0])

    saved = [0.0]
    for stop in range(3):
        worker = fredica(data, "worker")
        try:
            # Running again, past where the last stop left it.
            wait_for(lambda: slept() > saved[-1] + 0.3, within=30)
            children = descendants(worker)
        finally:
            worker.send_signal(signal.SIGTERM)
            _, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
        assert_gone(children, data)
        if stop:
            assert "recovered: 1 resumed, 0 restarted from the start, 0 held, 0 failed" in err
        # Left to recovery, marked as stopped gracefully (its lease given up).
        assert query(data, "SELECT status, lease_until, interruptions, retry_count FROM task")[
            0
        ] == ("running", None, 0, 0)
        saved.append(slept())
    # Each run went on from where the previous one stopped: it slept its 10 s of drain and
    # more on top of the last checkpoint.
    assert all(b > a + 9 for a, b in itertools.pairwise(saved)), saved
    left = total - saved[-1]
    assert left > 2

    code, _, err = run_cli(data, "worker", "--until-idle")
    assert code == 0, err
    assert "recovered: 1 resumed, 0 restarted from the start, 0 held, 0 failed" in err
    task = assert_exactly_once(data, submitted["run_id"])["long"]
    assert (task["attempt"], task["retry_count"], task["interruptions"]) == (4, 0, 0)
    # The last attempt slept only what was left after the last checkpoint.
    took = task["completed_at"] - task["started_at"]
    assert left - 0.5 < took < left + 1.5, (left, took)
    code, out, _ = run_cli(data, "restart-log", "--json")
    log = json.loads(out)
    assert [e["action"] for e in log] == ["resumed"] * 3
    assert all(e["detail"].startswith("graceful stop, not counted; charged so far: 0") for e in log)


def test_on_restart_hold_keeps_interrupted_work_for_review(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"on_restart": "hold"}))
    submitted = submit(
        data, {"tasks": [{"key": "s", "type": "SLEEP", "payload": {"seconds": 3.0}}]}
    )
    worker = fredica(data, "worker")
    try:
        sql = "SELECT json_extract(checkpoint, '$.slept') FROM task"
        wait_for(lambda: (query(data, sql)[0][0] or 0) > 0.6)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=10)
    # A held task does not keep `--until-idle` alive: it exits at once.
    code, _, err = run_cli(data, "worker", "--until-idle")
    assert code == 0, err
    assert "recovered: 0 resumed, 0 restarted from the start, 1 held, 0 failed" in err
    row = query(data, "SELECT status, is_paused, status_text, interruptions FROM task")[0]
    assert row == ("pending", 1, "held after a restart: review it", 1)
    task_id = submitted["task_ids"]["s"]
    assert run_cli(data, "resume", task_id)[0] == 0
    code, _, err = run_cli(data, "worker", "--until-idle")
    assert code == 0, err
    task = assert_exactly_once(data, submitted["run_id"])["s"]
    assert (task["retry_count"], task["interruptions"]) == (0, 1)
    # It went on from its checkpoint (over 0.6 s slept): less than the whole 3 s.
    assert task["completed_at"] - task["started_at"] < 2.9


def has_worked(data: Path, pid: int) -> bool:
    """Whether the worker ``pid`` has claimed a task yet (or the run is over)."""
    sql = (
        "SELECT 1 FROM task WHERE instr(worker_id, ?) > 0 "
        "OR (SELECT status FROM workflow_run) = 'completed' LIMIT 1"
    )
    return bool(query(data, sql, f":{pid}:"))


def soak_spec(rng: random.Random) -> dict[str, Any]:
    """Four lanes of eleven tasks (NOOP, SLEEP, SLEEP_SUBPROCESS), some waiting for the lane
    beside theirs too, between a NOOP root and a NOOP join: 46 tasks, no retries. The SLEEPs
    are short enough for a few runs to finish them; the SLEEP_SUBPROCESSes (no checkpoint:
    they start again each time) shorter still."""
    tasks: list[dict[str, Any]] = [{"key": "root", "type": "NOOP"}]
    lanes, length = 3, 15
    for j in range(length):
        for lane in range(lanes):
            deps = [f"l{lane}.{j - 1}" if j else "root"]
            if j and j % 3 == 0:
                deps.append(f"l{(lane + 1) % lanes}.{j - 1}")
            kind = rng.choices(["SLEEP", "SLEEP_SUBPROCESS", "NOOP"], [6, 3, 1])[0]
            t: dict[str, Any] = {"key": f"l{lane}.{j}", "type": kind, "depends_on": deps}
            if kind == "SLEEP":
                t["payload"] = {"seconds": round(rng.uniform(1.0, 2.6), 2)}
            elif kind == "SLEEP_SUBPROCESS":
                t["payload"] = {"seconds": round(rng.uniform(0.05, 0.2), 2)}
            tasks.append(t)
    tasks.append(
        {"key": "join", "type": "NOOP", "depends_on": [f"l{i}.{length - 1}" for i in range(lanes)]}
    )
    return {"tasks": tasks}


def test_soak_20_kill_9_at_random_moments_then_every_task_completes_once(
    tmp_path: Path,
) -> None:
    """``kill -9`` of ``fredica worker`` 20 times at random moments (seeded) while it runs a
    mixed DAG without retries, restarting it each time; a last start with ``--until-idle``
    finishes the run: every task completed exactly once, none failed or cancelled, no retry
    used, and no process of a killed worker left behind.

    The kills come at a random moment after the restarted worker has started work (a few at
    start-up, during recovery), 0.4 to 2.5 s into it: a task then gets a fair share of each
    run, as it would from a user's app, and reaches the interruption limit (5 crashes while it
    ran) only if it keeps being cut off — in this DAG a task lives through 1 to 3 crashes."""
    rng = random.Random(20261201)
    data = tmp_path / "data"
    submitted = submit(data, soak_spec(rng))
    run_id = submitted["run_id"]
    unfinished_at_kill = []
    for _ in range(20):
        worker = fredica(data, "worker")
        try:
            if rng.random() < 0.15:  # at start-up: loading, recovering, first claims
                time.sleep(rng.uniform(0.2, 1.2))
            else:
                wait_for(functools.partial(has_worked, data, worker.pid), within=30)
                time.sleep(rng.uniform(0.8, 2.2))
            children = descendants(worker)
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.communicate(timeout=10)
        assert worker.returncode == -signal.SIGKILL
        assert_gone(children, data)
        unfinished_at_kill.append(
            query(data, "SELECT count(*) FROM task WHERE status != 'completed'")[0][0]
        )

    code, _, err = run_cli(data, "worker", "--until-idle", timeout=180)
    assert code == 0, err
    tasks = assert_exactly_once(data, run_id)
    assert len(tasks) == 47
    kinds = dict(query(data, "SELECT kind, count(*) FROM task_event GROUP BY kind"))
    assert "failed" not in kinds and "cancelled" not in kinds, kinds
    assert all(t["retry_count"] == 0 and t["error_type"] is None for t in tasks.values())
    most = max(t["interruptions"] for t in tasks.values())
    assert 1 <= most <= 5, most
    # SLEEP went on from its checkpoint, SLEEP_SUBPROCESS (not resumable) from the start.
    actions = set(query(data, "SELECT DISTINCT action, task_type FROM restart_task_log"))
    assert actions <= {
        ("resumed", "SLEEP"),
        ("restarted", "SLEEP_SUBPROCESS"),
        ("requeued", "SLEEP"),
        ("requeued", "SLEEP_SUBPROCESS"),
    }, actions
    # The kills came while the run was under way, most of them with work left to do.
    assert sum(1 for n in unfinished_at_kill if n > 0) >= 12, unfinished_at_kill
    assert_gone([], data)


def running_keys(data: Path, pid: int) -> set[str]:
    """The keys of the tasks the worker ``pid`` runs now."""
    rows = query(
        data,
        "SELECT key FROM task WHERE status = 'running' AND instr(worker_id, ?) > 0",
        f":{pid}:",
    )
    return {r[0] for r in rows}


def runs_all(data: Path, pid: int, keys: set[str]) -> bool:
    return running_keys(data, pid) == keys


def test_repeated_crashes_are_charged_only_to_a_task_that_could_cause_them(
    tmp_path: Path,
) -> None:
    """The limit at 1 (``max_interruptions``): a second charged crash fails a task. The worker
    is killed three times while two SLEEP_SUBPROCESS (their work in a child of the endpoints
    server: nothing of theirs can take the worker down) and a SLEEP that checkpoints as it
    goes run. None of these crashes is charged: the last worker finishes every task, none
    failed ``INTERRUPTED`` (before the rule, every one did at the second crash)."""
    data = tmp_path / "data"
    data.mkdir()
    code, _, err = run_cli(data, "settings", "set", "max_interruptions", "1")
    assert code == 0, err
    spec = {
        "tasks": [
            {"key": "child1", "type": "SLEEP_SUBPROCESS", "payload": {"seconds": 4}},
            {"key": "child2", "type": "SLEEP_SUBPROCESS", "payload": {"seconds": 4}},
            {"key": "here", "type": "SLEEP", "payload": {"seconds": 6}},
        ]
    }
    run_id = submit(data, spec)["run_id"]
    everyone = {"child1", "child2", "here"}
    for _ in range(3):
        worker = fredica(data, "worker", "--max-workers", "3")
        try:
            wait_for(functools.partial(runs_all, data, worker.pid, everyone), within=60)
            time.sleep(1.2)  # past the SLEEP's first checkpoint write (every 0.5 s)
            children = descendants(worker)
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.communicate(timeout=10)
        assert_gone(children, data)
    code, _, err = run_cli(data, "worker", "--until-idle", "--max-workers", "3", timeout=180)
    assert code == 0, err
    tasks = assert_exactly_once(data, run_id)
    assert {k: (t["interruptions"], t["retry_count"]) for k, t in tasks.items()} == {
        k: (3, 0) for k in everyone
    }
    details = [d for (d,) in query(data, "SELECT detail FROM restart_task_log")]
    assert len(details) == 9
    assert all(d.startswith("crash: interrupted, not charged (") for d in details), details


def test_a_killed_endpoints_server_interrupts_its_tasks_without_using_a_retry(
    tmp_path: Path,
) -> None:
    """``kill -9`` of the endpoints server (not of a job's child) while two SLEEP_SUBPROCESS
    without retries run: they are queued again, not failed; the worker starts a new server
    and finishes them."""
    data = tmp_path / "data"
    spec = {
        "tasks": [
            {"key": "a", "type": "SLEEP_SUBPROCESS", "payload": {"seconds": 3}},
            {"key": "b", "type": "SLEEP_SUBPROCESS", "payload": {"seconds": 3}},
        ]
    }
    run_id = submit(data, spec)["run_id"]
    worker = fredica(data, "worker", "--until-idle", "--max-workers", "2")
    try:
        wait_for(functools.partial(runs_all, data, worker.pid, {"a", "b"}), within=60)
        time.sleep(0.5)
        [server] = [
            p for p in descendants(worker) if any("endpoints.log" in part for part in p.cmdline())
        ]
        server.send_signal(signal.SIGKILL)
        _, err = worker.communicate(timeout=120)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == 0, err
    tasks = assert_exactly_once(data, run_id)
    assert {k: (t["interruptions"], t["retry_count"]) for k, t in tasks.items()} == {
        "a": (1, 0),
        "b": (1, 0),
    }
    kinds = [k for (k,) in query(data, "SELECT kind FROM task_event WHERE kind = 'interrupted'")]
    assert kinds == ["interrupted", "interrupted"]
    assert_gone([], data)
