"""The ``fredica`` command as a newcomer meets it: what each command shows, the help, sources a
template cannot take, ``demo`` beside a running worker. Real data directories, the real
command (in-process, or the console script where a second process is the point)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fredica_app.cli import build_parser, main
from fredica_app.templates import BUILTIN

EXE = str(Path(sys.executable).parent / "fredica")


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def submit(capsys: pytest.CaptureFixture[str], data: Path, spec: Any) -> dict[str, Any]:
    path = data.parent / "spec.json"
    path.write_text(json.dumps(spec))
    code, out, err = fredica(capsys, data, "submit", str(path), "--json")
    assert code == 0, err
    return dict(json.loads(out))


def sql(data: Path, statement: str, *args: Any) -> list[Any]:
    with sqlite3.connect(data / "fredica.db") as conn:
        return conn.execute(statement, args).fetchall()


def _env(data: Path) -> dict[str, str]:
    return {**os.environ, "FREDICA_DATA_DIR": str(data)}


# --- help ----------------------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                found.update({f"{name} {k}": v for k, v in _subparsers(sub).items()})
    return found


def test_every_option_has_help_and_template_lists_the_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    missing = [
        f"{name} {'/'.join(action.option_strings)}"
        for name, sub in {"fredica": parser, **_subparsers(parser)}.items()
        for action in sub._actions
        if action.option_strings and not action.help
    ]
    assert missing == []
    subs = _subparsers(parser)
    for command in ("add", "process", "watch-folders"):
        shown = " ".join(subs[command].format_help().split())  # the help as printed
        for name, t in BUILTIN.items():
            wanted = t.needs_source if command == "add" else True
            if command == "watch-folders":
                wanted = t.source == "file"
            assert (f"{name}," in shown or f"{name} (" in shown) == wanted, (command, name)
    assert "remove" in subs
    # An unknown name: one line with the known ones.
    code, _, err = fredica(capsys, tmp_path / "d", "process", "--template", "nope", "--sample")
    assert code == 1 and err.count("\n") == 1
    assert "unknown template 'nope'" in err and all(name in err for name in BUILTIN)


def test_version_among_other_options_is_looked_up_when_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--version`` after other options goes through the parser (the bare ``fredica
    --version`` does not build it): the same line, exit 0, nothing made."""
    from fredica_app.version import fredica_version

    with pytest.raises(SystemExit) as ended:
        main(["--data-dir", str(tmp_path / "d"), "--version"])
    assert ended.value.code in (0, None)
    assert capsys.readouterr().out == f"fredica {fredica_version()}\n"
    assert not (tmp_path / "d").exists()
    assert "show the version and exit" in build_parser().format_help()


# --- sources a template cannot take ----------------------------------------------------------


def test_sources_a_template_cannot_take_are_refused_before_anything_is_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    clip = tmp_path / "clip.mkv"
    clip.write_bytes(b"not really a video")
    cases = [
        (["process", str(clip), "--template", "diagnostic"], "'diagnostic' takes no media"),
        (["process", "--sample", "--template", "noop_chain"], "'noop_chain' takes no media"),
        (["add", str(clip), "--template", "diagnostic"], "'diagnostic' takes no media"),
        (["process", "--template", "transcode_mp4"], "'transcode_mp4' needs a media file"),
        (
            ["process", str(clip), "--template", "download_transcode"],
            "'download_transcode' needs an http(s) URL",
        ),
    ]
    for args, message in cases:
        code, out, err = fredica(capsys, data, *args)
        assert code == 1, args
        assert err.startswith("fredica: error: template") and err.count("\n") == 1, err
        assert message in err, err
        assert out == ""
    code, out, _ = fredica(capsys, data, "materials", "--json")
    assert json.loads(out) == []  # nothing was brought into the library
    assert not (data / "samples").exists()  # nor made
    code, out, _ = fredica(capsys, data, "runs", "--json")
    assert json.loads(out) == []


def test_process_runs_a_template_that_takes_no_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = fredica(
        capsys, tmp_path / "d", "process", "--template", "noop_chain", "--json"
    )
    assert code == 0, err
    run = json.loads(out)
    assert (run["template"], run["status"], run["material_id"]) == ("noop_chain", "completed", None)


# --- demo beside a running worker ---------------------------------------------------------------


def test_demo_follows_a_running_worker_which_prints_a_line_per_run(tmp_path: Path) -> None:
    data = tmp_path / "data"
    worker = subprocess.Popen(
        [EXE, "worker"], env=_env(data), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        for _ in range(100):  # the worker holds the lock once its engine started
            if (data / "engine.lock.owner").exists():
                break
            time.sleep(0.1)
        demo = subprocess.run(
            [EXE, "demo", "--json"], env=_env(data), capture_output=True, text=True, timeout=120
        )
        assert demo.returncode == 0, demo.stderr
        assert "another Fredica engine" not in demo.stderr
        assert "following the run" in demo.stderr
        run = json.loads(demo.stdout)
        assert run["status"] == "completed" and run["done_tasks"] == 5
        # Run by the worker, not by a second engine.
        workers = sql(
            data, "SELECT DISTINCT worker_id FROM task WHERE workflow_run_id = ?", run["id"]
        )
        assert len(workers) == 1
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    lines = out.splitlines()
    assert any(
        line.startswith("completed") and "diagnostic" in line and run["id"] in line
        for line in lines
    ), out
    assert re.search(r"1 run\(s\) finished \(1 completed\); 5 task\(s\) completed; in ", lines[-1])


# --- worker ------------------------------------------------------------------------------------


def test_worker_until_idle_prints_each_finished_run_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    ok = submit(
        capsys, data, {"tasks": [{"key": "a", "type": "SLEEP", "payload": {"seconds": 0.2}}]}
    )
    crashing = {"seconds": 1.0, "crash_after": 0.1}
    bad = submit(
        capsys,
        data,
        {"tasks": [{"key": "x", "type": "SLEEP_SUBPROCESS", "payload": crashing}]},
    )
    code, out, _ = fredica(capsys, data, "worker", "--until-idle")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 3, out
    by_run = {line.rsplit("(run ", 1)[1].rstrip(")"): line for line in lines[:2]}
    assert by_run[ok["run_id"]].startswith("completed  spec  1/1 tasks  in ")
    assert by_run[bad["run_id"]].startswith("failed     spec  0/1 tasks  in ")
    assert re.fullmatch(
        r"2 run\(s\) finished \(1 completed, 1 failed\); 1 task\(s\) completed, 1 failed; "
        r"in \d+\.\d s",
        lines[2],
    ), lines[2]


def test_a_job_that_floods_standard_output_finishes_and_its_first_lines_are_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server, its fork server and its jobs' children share the standard output the app
    reads the server's port on. 1 MB written there by a job (a talkative library's) is read
    to its end: unread, the pipe filled after some 200 KB and the job waited for good."""
    data = tmp_path / "d"
    chatty = {"seconds": 0.1, "chatter": 1_000_000}
    run = submit(
        capsys, data, {"tasks": [{"key": "x", "type": "SLEEP_SUBPROCESS", "payload": chatty}]}
    )
    worker = subprocess.run(
        [sys.executable, "-m", "fredica_app.cli", "worker", "--until-idle"],
        env=_env(data),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert worker.returncode == 0, worker.stderr
    assert sql(data, "SELECT status FROM workflow_run WHERE id = ?", run["run_id"]) == [
        ("completed",)
    ]
    logged = (data / "logs" / "fredica.log").read_text()
    said = re.findall(r"endpoints server \(pid \d+\) output: (.*)", logged)
    assert said == ["chatter " + "x" * 91] * 20, said[:3]
    assert "its further output is not logged" in logged


# --- runs and run ------------------------------------------------------------------------------


def test_runs_has_a_header_times_and_says_when_the_queue_is_paused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    done = submit(
        capsys, data, {"tasks": [{"key": "a", "type": "SLEEP", "payload": {"seconds": 0.3}}]}
    )
    assert fredica(capsys, data, "worker", "--until-idle")[0] == 0
    waiting = submit(capsys, data, {"template": "noop_chain"})
    fredica(capsys, data, "pause-queue")
    code, out, _ = fredica(capsys, data, "runs")
    assert code == 0
    paused, header, newest, oldest = out.splitlines()
    assert paused.startswith("the queue is paused") and "resume-queue" in paused
    assert header.split() == [
        "RUN", "STATUS", "TASKS", "PROGRESS", "TEMPLATE", "MATERIAL", "STARTED", "ELAPSED", "ETA"
    ]  # fmt: skip
    assert newest.startswith(waiting["run_id"]) and oldest.startswith(done["run_id"])
    for column in ("STATUS", "TASKS", "TEMPLATE", "MATERIAL"):  # every row lines up
        at = header.index(column)
        assert newest[at - 1] == oldest[at - 1] == " " and newest[at] != " " != oldest[at]
    started_elapsed = re.search(r"\d\d:\d\d:\d\d +(\d+\.\d) s", oldest)
    assert started_elapsed, oldest  # a 0.3 s task, whatever the machine's load adds to it
    assert 0.3 <= float(started_elapsed[1]) < 10, oldest
    assert "-" in newest.split()[-3:]  # never started: no times
    fredica(capsys, data, "resume-queue")
    code, out, _ = fredica(capsys, data, "runs")
    assert out.splitlines()[0].startswith("RUN")


def test_run_shows_how_finished_tasks_ended_aligned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    spec = {
        "tasks": [
            {"key": "a", "type": "SLEEP", "payload": {"seconds": 0.1}},
            {"key": "a_rather_long_task_key", "type": "NOOP", "depends_on": ["a"]},
            {"key": "c", "type": "SLEEP", "payload": {"seconds": 0.1}, "depends_on": ["a"]},
        ]
    }
    first = submit(capsys, data, spec)
    assert fredica(capsys, data, "worker", "--until-idle")[0] == 0
    # What a task's last status line said stays in the database: never shown once it ended.
    sql(data, "UPDATE task SET status_text = 'transcribing 4:16 of 5:00'")
    code, out, _ = fredica(capsys, data, "run", first["run_id"])
    assert code == 0 and "transcribing" not in out, out
    header, *rows = out.splitlines()[1:]
    assert [r.split()[0] for r in rows] == ["a", "a_rather_long_task_key", "c"]
    for column in ("TYPE", "PROGRESS", "STATE"):
        at = header.index(column)
        assert all(r[at - 1] == " " and r[at] != " " for r in rows if column != "PROGRESS")
    assert all(r[header.index("STATE") :].startswith("done in ") for r in rows), out
    # Held, then cancelled: "held" no longer; how it ended instead.
    second = submit(capsys, data, spec)
    fredica(capsys, data, "pause", second["run_id"])
    fredica(capsys, data, "cancel", second["run_id"])
    code, out, _ = fredica(capsys, data, "run", second["run_id"])
    assert code == 0 and "held" not in out and "paused" not in out, out
    assert out.count("cancelled: cancelled by the user") == 3


# --- restart-log -------------------------------------------------------------------------------


async def _leave_running(data: Path) -> dict[str, str]:
    """Three SLEEP tasks left running by a worker that died (claimed, started, never ended)."""
    from fredica_app.services import Fredica

    app = Fredica.open(data)
    try:
        spec = {"tasks": [{"key": k, "type": "SLEEP", "payload": {"seconds": 0.1}} for k in "abc"]}
        created = await app.submit(spec)
        for claimed in await app.store.claim("dead-worker", limit=3):
            await app.store.mark_running(claimed.id, claimed.lease_token)
        return created.task_ids
    finally:
        await app.close()


def test_restart_log_entries_are_settled_once_their_task_completed_or_was_cancelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    ids = asyncio.run(_leave_running(data))
    (data / "settings.json").write_text(json.dumps({"on_restart": "hold"}))

    def cli(*args: str) -> tuple[int, str, str]:
        return fredica(capsys, data, *args)

    code, _, err = cli("worker", "--until-idle")  # recovery holds all three
    assert code == 0 and "3 held" in err, err
    cli("resume", ids["a"])
    cli("cancel", ids["b"])
    assert (cli("worker", "--until-idle"))[0] == 0  # a completes; c stays held
    code, out, _ = cli("restart-log", "--json")
    disposition = {e["task_id"]: e["disposition"] for e in json.loads(out)}
    assert disposition == {ids["a"]: "settled", ids["b"]: "settled", ids["c"]: "pending_review"}
    code, out, _ = cli("restart-log")
    header, *rows = out.splitlines()
    assert header.split()[:4] == ["ENTRY", "ACTION", "DISPOSITION", "TYPE"]
    at = header.index("DISPOSITION")
    assert sorted(r[at:].split()[0] for r in rows) == ["pending_review", "settled", "settled"]
    assert all(r[header.index("TASK") :].split()[0] in ids.values() for r in rows)
