"""Log files: shared by several processes without losing or mixing records, rotated by size;
the engine, the endpoints server and each job write to them."""

from __future__ import annotations

import json
import logging
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from fredica_app import cli
from fredica_app.cli import main
from python_endpoints.protocol import JobFrame
from python_endpoints.serving import logfile
from python_endpoints.serving.child import JobFailed
from python_endpoints.serving.endpoint import ProcessEndpoint
from tests.support.process_table import assert_no_job_process_left

WRITERS = 4
RECORDS = 300


def write_records(path: str, writer: int) -> None:
    """In a process of its own: many records, through a handler that rotates every few KiB."""
    handler = logfile.SharedLogFile(Path(path), max_bytes=16 * 1024, backups=50)
    log = logging.getLogger(f"writer{writer}")
    log.propagate = False
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    for n in range(RECORDS):
        log.info("record %d of writer %d %s", n, writer, "x" * 40)


def test_processes_share_a_log_file_and_its_rotation_without_losing_a_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shared.log"
    mp = multiprocessing.get_context("spawn")
    writers = [mp.Process(target=write_records, args=(str(path), w)) for w in range(WRITERS)]
    for p in writers:
        p.start()
    for p in writers:
        p.join(60)
        assert p.exitcode == 0
    files = [path, *sorted(tmp_path.glob("shared.log.*[0-9]"))]
    assert len(files) > 5  # it rotated, many times
    lines = [line for f in files for line in f.read_text().splitlines()]
    assert all(" INFO    " in line and line.endswith("x" * 40) for line in lines)  # none torn
    seen = sorted((int(line.split()[-2]), int(line.split()[-5])) for line in lines)
    assert seen == [(w, n) for w in range(WRITERS) for n in range(RECORDS)]  # each once
    assert all(f.stat().st_size <= 16 * 1024 for f in files)


def raising_job(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    raise ValueError("a job's own bug")


class Raising(ProcessEndpoint):
    name = "raising"
    target = staticmethod(raising_job)
    keep_spare = False


async def test_a_job_process_writes_its_traceback_to_the_servers_log(tmp_path: Path) -> None:
    path = tmp_path / "endpoints.log"
    handler = logfile.log_to_file(path)

    async def emit(frame: JobFrame) -> None:
        pass

    try:
        with pytest.raises(JobFailed, match="ValueError: a job's own bug"):
            await Raising(emit).run({})
    finally:
        logfile.stop_logging_to_file(handler)
    await assert_no_job_process_left()
    text = path.read_text()
    assert "fredica-raising[" in text and "the raising job raised" in text
    assert "Traceback (most recent call last)" in text and 'raise ValueError("a job' in text


def test_a_worker_logs_its_engine_its_endpoints_server_and_the_jobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = {
        "tasks": [
            {"key": "ok", "type": "SLEEP_SUBPROCESS", "payload": {"seconds": 0.1}},
            {
                "key": "crash",
                "type": "SLEEP_SUBPROCESS",
                "payload": {"seconds": 1, "crash_after": 0.1, "exit_code": 7},
            },
        ]
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert main(["--data-dir", str(tmp_path), "submit", str(tmp_path / "spec.json")]) == 0
    assert main(["--data-dir", str(tmp_path), "worker", "--until-idle"]) == 0
    _, err = capsys.readouterr()
    assert err == ""  # a failed task is the run's business: nothing on the terminal
    app_log = (tmp_path / "logs" / "fredica.log").read_text()
    assert "MainProcess" in app_log and " engine " in app_log and " started: max_workers" in app_log
    assert "started the endpoints server (pid" in app_log
    assert "(SLEEP_SUBPROCESS) attempt 1 failed: [SUBPROCESS_CRASHED]" in app_log
    server_log = (tmp_path / "logs" / "endpoints.log").read_text()
    assert "serving the task endpoints on 127.0.0.1:" in server_log
    assert "sleep: job completed after" in server_log
    assert "sleep: job failed after" in server_log and "exited with code 7" in server_log
    assert "websockets" not in server_log  # a line per connection says nothing


def test_warnings_reach_the_terminal_as_one_line_and_the_log_in_full(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def noisy(app: object, args: object) -> int:
        log = logging.getLogger("workers.engine")
        log.info("only in the file")
        log.warning("the endpoints server exited (code %d); starting a new one", -9)
        try:
            raise ValueError("an executor's bug")
        except ValueError:
            log.exception("task t1 (SLEEP) raised")
        return 0

    monkeypatch.setitem(cli.COMMANDS, "materials", noisy)
    assert main(["--data-dir", str(tmp_path), "materials"]) == 0
    _, err = capsys.readouterr()
    path = tmp_path / "logs" / "fredica.log"
    assert err.splitlines() == [
        "fredica: warning: the endpoints server exited (code -9); starting a new one",
        "fredica: error: task t1 (SLEEP) raised (ValueError: an executor's bug; the traceback "
        f"is in {path})",
    ]
    text = path.read_text()
    assert "INFO    MainProcess" in text and "workers.engine: only in the file" in text
    assert "Traceback (most recent call last)" in text and "ValueError: an executor's bug" in text
    # The command is over: nothing of its logging is left behind in this process.
    logging.getLogger("workers.engine").warning("after the command")
    assert "after the command" not in path.read_text()
    assert logfile.current_file() is None
