"""The ``fredica`` command, end to end on a real data directory."""

from __future__ import annotations

import io
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

from fredica_app.cli import main

SPEC = {
    "tasks": [
        {"key": "a", "type": "NOOP", "payload": {"n": 1}},
        {"key": "b", "type": "SLEEP", "payload": {"seconds": 0.2}, "depends_on": ["a"]},
        {"key": "c", "type": "NOOP", "depends_on": ["a", "b"], "priority": 3},
    ]
}


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def write_spec(tmp_path: Path, spec: Any) -> str:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return str(path)


def test_submit_then_worker_until_idle_runs_the_dag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    code, out, _ = fredica(capsys, data, "submit", write_spec(tmp_path, SPEC), "--json")
    assert code == 0
    submitted = json.loads(out)
    assert set(submitted["task_ids"]) == {"a", "b", "c"} and submitted["deduplicated"] is False
    run_id = submitted["run_id"]

    code, out, _ = fredica(capsys, data, "run", run_id, "--json")
    assert json.loads(out)["status"] == "pending"

    assert fredica(capsys, data, "worker", "--until-idle")[0] == 0

    code, out, _ = fredica(capsys, data, "run", run_id, "--json")
    run = json.loads(out)
    assert (run["status"], run["done_tasks"], run["total_tasks"]) == ("completed", 3, 3)
    tasks = {t["key"]: t for t in run["tasks"]}
    assert tasks["a"]["result"] == {"n": 1, "schema_version": 1}
    assert tasks["b"]["result"] == {"slept": 0.2}
    assert tasks["c"]["depends_on"] == [submitted["task_ids"]["a"], submitted["task_ids"]["b"]]
    for t in tasks.values():
        assert t["attempt"] == 1 and t["retry_count"] == 0 and t["error"] is None
        assert isinstance(t["started_at"], float) and t["completed_at"] >= t["started_at"]
    # b started only after a completed, c only after b.
    assert tasks["b"]["started_at"] >= tasks["a"]["completed_at"]
    assert tasks["c"]["started_at"] >= tasks["b"]["completed_at"]

    code, out, _ = fredica(capsys, data, "runs", "--json")
    [listed] = json.loads(out)
    assert listed["id"] == run_id and "tasks" not in listed


def test_submit_from_stdin_and_deduplication(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = {"tasks": [{"key": "a", "type": "NOOP", "idempotency_key": "k1"}]}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(spec)))
    code, out, _ = fredica(capsys, tmp_path, "submit", "-", "--json")
    first = json.loads(out)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(spec)))
    code, out, _ = fredica(capsys, tmp_path, "submit", "-", "--json")
    again = json.loads(out)
    assert code == 0 and again["deduplicated"] and again["run_id"] == first["run_id"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"tasks": [{"key": "a", "type": "NOPE"}]}, "unknown task type 'NOPE'"),
        ({"tasks": [{"key": "a", "type": "NOOP", "depends_on": ["zz"]}]}, "unknown 'zz'"),
        ({"tasks": [{"key": "a", "type": "NOOP", "priority": -5}]}, "priority"),
        ({"template": "no-such-template"}, "unknown template"),
        ("not json at all", "not valid JSON"),
    ],
)
def test_invalid_specs_exit_non_zero_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: Any, message: str
) -> None:
    path = tmp_path / "spec.json"
    path.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    code, out, err = fredica(capsys, tmp_path / "d", "submit", str(path))
    assert code == 1 and out == ""
    assert err.startswith("fredica: error:") and message in err and err.count("\n") == 1
    code, out, _ = fredica(capsys, tmp_path / "d", "runs", "--json")
    assert json.loads(out) == []


def test_control_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = fredica(capsys, tmp_path, "submit", write_spec(tmp_path, SPEC), "--json")
    assert code == 0
    submitted = json.loads(out)
    a = submitted["task_ids"]["a"]
    code, out, _ = fredica(capsys, tmp_path, "pause", a, "--json")
    assert code == 0
    assert json.loads(out)["changed"] == [a]
    fredica(capsys, tmp_path, "worker", "--until-idle")  # a held: nothing runs, exits
    code, out, _ = fredica(capsys, tmp_path, "run", submitted["run_id"], "--json")
    assert code == 0
    assert {t["status"] for t in json.loads(out)["tasks"]} == {"pending"}
    code, out, _ = fredica(capsys, tmp_path, "cancel", submitted["run_id"], "--json")
    assert code == 0
    assert len(json.loads(out)["changed"]) == 3
    code, out, _ = fredica(capsys, tmp_path, "retry", submitted["run_id"], "--json")
    assert code == 0
    assert len(json.loads(out)["changed"]) == 3
    fredica(capsys, tmp_path, "resume", a)
    fredica(capsys, tmp_path, "worker", "--until-idle")
    code, out, _ = fredica(capsys, tmp_path, "run", submitted["run_id"], "--json")
    assert code == 0
    assert json.loads(out)["status"] == "completed"


def test_every_verb_takes_the_ids_beginning_the_window_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The window and ``fredica runs`` show an id's first 8 characters; each verb takes
    them (before: "no run e5ff0766"). A beginning of several ids is one line listing them."""
    code, out, _ = fredica(capsys, tmp_path, "submit", write_spec(tmp_path, SPEC), "--json")
    submitted = json.loads(out)
    run, a = submitted["run_id"], submitted["task_ids"]["a"]
    code, out, err = fredica(capsys, tmp_path, "pause", a[:8], "--json")
    assert (code, json.loads(out)["changed"]) == (0, [a]), err
    code, out, _ = fredica(capsys, tmp_path, "resume", a[:8], "--json")
    assert json.loads(out)["changed"] == [a]
    code, out, _ = fredica(capsys, tmp_path, "cancel", run[:8], "--json")
    assert len(json.loads(out)["changed"]) == 3
    code, out, _ = fredica(capsys, tmp_path, "retry", run[:8], "--json")
    assert len(json.loads(out)["changed"]) == 3
    assert fredica(capsys, tmp_path, "worker", "--until-idle")[0] == 0
    code, out, _ = fredica(capsys, tmp_path, "run", run[:8], "--json")
    assert (code, json.loads(out)["id"], json.loads(out)["status"]) == (0, run, "completed")
    code, out, err = fredica(capsys, tmp_path, "remove", run[:8])
    assert code == 0, err
    code, _, err = fredica(capsys, tmp_path, "run", run[:8])
    assert code == 1 and f"no run {run[:8]}" in err
    # Enough runs that some first character begins several of their ids.
    for _ in range(20):
        fredica(
            capsys,
            tmp_path,
            "submit",
            write_spec(tmp_path, {"tasks": [{"key": "n", "type": "NOOP"}]}),
        )
    code, out, _ = fredica(capsys, tmp_path, "runs", "--json")
    firsts = [r["id"][0] for r in json.loads(out)]
    shared = next(c for c in firsts if firsts.count(c) > 1)
    code, _, err = fredica(capsys, tmp_path, "run", shared)
    assert code == 1 and err.count("\n") == 1
    assert f"{shared!r} is the beginning of more than one run id: " in err and "type more" in err


def test_unknown_ids_and_bad_states_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = fredica(capsys, tmp_path, "run", "no-such-run")
    assert code == 1 and "no run no-such-run" in err
    code, _, err = fredica(capsys, tmp_path, "cancel", "nope")
    assert code == 1 and "no task or run" in err


def test_corrupt_settings_warn_but_do_not_stop_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "settings.json").write_text("{broken")
    code, out, err = fredica(capsys, tmp_path, "runs", "--json")
    assert code == 0 and json.loads(out) == []
    assert "warning" in err and "settings.json" in err and "corrupt-" in err


def test_a_foreign_database_is_an_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fredica.db").write_text("hello")
    code, _, err = fredica(capsys, tmp_path, "runs")
    assert code == 1 and "not a Fredica database" in err


def test_prune_removes_old_finished_runs_and_says_what(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    spec = {
        "tasks": [{"key": "a", "type": "NOOP"}, {"key": "b", "type": "NOOP", "depends_on": ["a"]}]
    }
    _, out, _ = fredica(capsys, data, "submit", write_spec(tmp_path, spec))
    old_run = out.strip()
    assert fredica(capsys, data, "worker", "--until-idle")[0] == 0
    _, out, _ = fredica(capsys, data, "submit", write_spec(tmp_path, spec))
    new_run = out.strip()  # pending: never pruned
    day = 86_400
    with sqlite3.connect(data / "fredica.db") as conn:  # the old run finished 40 days ago
        conn.execute(
            "UPDATE workflow_run SET completed_at = completed_at - ? WHERE id = ?",
            (40 * day, old_run),
        )
        conn.execute(
            "UPDATE task_event SET at = at - ? WHERE workflow_run_id = ?", (40 * day, old_run)
        )

    code, out, _ = fredica(capsys, data, "prune", "--dry-run", "--json")
    dry = json.loads(out)
    assert code == 0 and dry["dry_run"] is True
    assert (dry["runs"], dry["tasks"], dry["dependencies"]) == (1, 2, 1)
    assert (dry["runs_days"], dry["events_days"]) == (30, 90)
    code, out, _ = fredica(capsys, data, "prune", "--runs-days", "50")
    assert code == 0 and out.startswith("runs: removed 0 that finished more than 50 days ago")

    code, out, _ = fredica(capsys, data, "prune")
    assert code == 0
    assert out.splitlines() == [
        f"runs: removed 1 that finished more than 30 days ago, with 2 tasks, 1 dependencies, "
        f"{dry['events']} events and 0 restart-log entries",
        "events: removed 0 more, older than 90 days",
        "posters: removed 0 of materials no longer in the library",
    ]
    _, out, _ = fredica(capsys, data, "runs", "--json")
    assert [r["id"] for r in json.loads(out)] == [new_run]

    (data / "settings.json").write_text(json.dumps({"keep_runs_days": 0, "keep_events_days": None}))
    code, out, _ = fredica(capsys, data, "prune", "--json")
    assert code == 0 and json.loads(out)["runs_days"] is None
    _, out, _ = fredica(capsys, data, "prune")
    assert out.splitlines()[:2] == ["runs: kept forever", "events: kept forever"]
    code, _, err = fredica(capsys, data, "prune", "--runs-days", "-3")
    assert (
        code == 1 and err == "fredica: error: --runs-days is a number of days, 0 or more (got -3)\n"
    )


def test_templates_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = fredica(capsys, tmp_path, "templates", "--json")
    names = {t["name"] for t in json.loads(out)}
    assert "diagnostic" in names


def test_types_list_the_queues_own_and_one_per_catalogue_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from python_endpoints.catalogue import CATALOGUE

    code, out, _ = fredica(capsys, tmp_path, "types", "--json")
    assert code == 0
    rows = {t["name"]: t for t in json.loads(out)}
    assert rows["NOOP"]["endpoint"] is None
    for job in CATALOGUE:
        row = rows.pop(job.task_type)
        assert (row["endpoint"], row["resource"], row["skip"]) == (job.name, job.resource, job.skip)
    assert set(rows) == {"NOOP", "SLEEP", "SLEEP_SUBPROCESS"}
    _, text, _ = fredica(capsys, tmp_path, "types")
    assert "THUMBNAIL         cpu  a contact sheet" in text


def test_the_readmes_main_job_runs_through_the_console_script(tmp_path: Path) -> None:
    """The README's first command, exactly as written there (but on a temp data dir)."""
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    line = next(ln for ln in readme.splitlines() if "uv run fredica" in ln)
    args = line.split("uv run fredica", 1)[1].split()
    assert args[0] == "--data-dir"
    args[1] = str(tmp_path / "demo")
    exe = Path(sys.executable).parent / "fredica"
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "completed" in proc.stdout and "transcribe" in proc.stdout
    srt = list((tmp_path / "demo" / "library").glob("*/*.srt"))
    assert srt and "fox" in srt[0].read_text().lower()


def test_console_script_runs_the_demo(tmp_path: Path) -> None:
    """The diagnostic demo, through the installed console script."""
    exe = Path(sys.executable).parent / "fredica"
    env = {**os.environ, "FREDICA_DATA_DIR": str(tmp_path)}
    proc = subprocess.run(
        [str(exe), "demo", "--json"], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["status"] == "completed" and run["done_tasks"] == 5
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert version.stdout.startswith("fredica ")


def test_a_damaged_database_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], migrated_template: Path
) -> None:
    import shutil

    shutil.copyfile(migrated_template, tmp_path / "fredica.db")
    data = bytearray((tmp_path / "fredica.db").read_bytes())
    data[2 * 4096 : 6 * 4096] = b"\xee" * (4 * 4096)
    (tmp_path / "fredica.db").write_bytes(bytes(data))
    for command in (["worker", "--until-idle"], ["doctor"]):
        code, _, err = fredica(capsys, tmp_path, *command)
        assert code == 1, command
        assert err.startswith("fredica: error:") and err.count("\n") == 1, err
        assert "damaged" in err
    # A read that only touches undamaged pages may succeed; one that meets damage must say so
    # in one line, never with a traceback.
    for command in (["runs"], ["run", "x"], ["restart-log"]):
        code, _, err = fredica(capsys, tmp_path, *command)
        assert code in (0, 1)
        assert "Traceback" not in err and (code == 0 or err.startswith("fredica: error:"))


def test_a_running_worker_picks_up_a_submission_within_a_second(tmp_path: Path) -> None:
    exe = str(Path(sys.executable).parent / "fredica")
    env = {**os.environ, "FREDICA_DATA_DIR": str(tmp_path)}
    worker = subprocess.Popen(
        [exe, "worker"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # Let the worker start and back off to its longest poll interval (5 s) while idle.
        time.sleep(12)
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps({"tasks": [{"key": "a", "type": "NOOP"}]}))
        out = subprocess.run(
            [exe, "submit", str(spec), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        run_id = json.loads(out.stdout)["run_id"]
        for _ in range(200):
            with sqlite3.connect(tmp_path / "fredica.db") as conn:
                row = conn.execute(
                    "SELECT created_at, started_at FROM task WHERE workflow_run_id = ?", (run_id,)
                ).fetchone()
            if row and row[1]:
                break
            time.sleep(0.05)
        assert row and row[1], "the worker never started the task"
        assert row[1] - row[0] < 1.0  # from the submission's commit to the start
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=30)
    assert worker.returncode == 0


def test_doctor_reports_each_check_and_how_to_fix_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = fredica(capsys, tmp_path, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)}
    assert code == 0 and all(c["ok"] for c in checks.values()), checks
    assert {"data directory", "database", "engine", "ffmpeg", "settings"} <= set(checks)
    assert Path(checks["ffmpeg"]["detail"]).is_file()
    # This machine's ffmpeg lists hardware encoders that cannot work without their GPU: the
    # test encode tells them apart, and libx264 is what transcodes use.
    hardware = checks["hardware encoders"]["detail"]
    assert "libx264" in hardware or "(verified)" in hardware
    # No settings file is fine, and said as such (not "ok" with a file that is not there).
    assert checks["settings"]["detail"].startswith("no settings file: using the defaults")
    assert checks["logs"]["detail"].startswith(f"{tmp_path / 'logs' / 'fredica.log'} ")

    (tmp_path / "settings.json").write_text(
        json.dumps({"ffmpeg_path": str(tmp_path / "nope"), "whisper_model": "smal"})
    )
    code, out, _ = fredica(capsys, tmp_path, "doctor")
    assert code == 1
    assert "[FAIL] ffmpeg" in out and "fix: fix ffmpeg_path in settings" in out
    assert "hardware encoders" not in out  # nothing to test them with
    # A model name that is neither installed, embedded, nor one a download can fetch.
    assert "[FAIL] speech models: whisper_model 'smal' is not a model" in out
    assert "fix: did you mean small?" in out
    assert f"[ok  ] settings: {tmp_path / 'settings.json'}" in out


def test_the_whole_chain_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """submit + worker: a SLEEP_SUBPROCESS task through the app's endpoints server, its child
    process pausing itself and resuming by itself on the way."""
    spec = {
        "tasks": [
            {
                "key": "s",
                "type": "SLEEP_SUBPROCESS",
                "payload": {"seconds": 0.4, "pause_after": 0.1, "resume_after": 0.2},
            },
            {"key": "after", "type": "NOOP", "depends_on": ["s"]},
        ]
    }
    code, out, _ = fredica(capsys, tmp_path, "submit", write_spec(tmp_path, spec), "--json")
    assert code == 0
    run_id = json.loads(out)["run_id"]
    assert fredica(capsys, tmp_path, "worker", "--until-idle")[0] == 0
    code, out, _ = fredica(capsys, tmp_path, "run", run_id, "--json")
    assert code == 0
    run = json.loads(out)
    tasks = {t["key"]: t for t in run["tasks"]}
    assert run["status"] == "completed", run
    assert tasks["s"]["result"] == {"slept": 0.4} and not tasks["s"]["is_paused"]


def test_fredica_endpoints_serves_with_a_token(tmp_path: Path) -> None:
    exe = str(Path(sys.executable).parent / "fredica")
    token = tmp_path / "token"
    token.write_text("secret-token")
    token.chmod(0o600)  # readable by others, it would be refused
    server = subprocess.Popen(
        [exe, "endpoints", "--token-file", str(token)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = json.loads(server.stdout.readline())["port"]
        import asyncio

        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus

        async def status(tok: str) -> int:
            try:
                async with connect(
                    f"ws://127.0.0.1:{port}/tasks/sleep",
                    additional_headers={"Authorization": f"Bearer {tok}"},
                ):
                    return 101
            except InvalidStatus as exc:
                return exc.response.status_code

        assert asyncio.run(status("wrong")) == 401
        assert asyncio.run(status("secret-token")) == 101
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=20)
    assert server.returncode == 0
