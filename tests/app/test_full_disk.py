"""A disk that fills under a running ``fredica worker``: the one that holds the data directory
(the database), on a size-limited filesystem the test mounts (tmpfs: root writes past an ext4
image's free blocks into its reserve, never past a tmpfs's size).

The engine must not die: it claims nothing new, says why on its standard error, keeps what
finished meanwhile, and goes on by itself once space is back — every task completed exactly
once, the database intact."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.host import fill, small_disk

CLI = [sys.executable, "-m", "fredica_app.cli"]
RUNS = 8

pytestmark = pytest.mark.slow


class Lines:
    """A process's standard error, read in a thread, waited for line by line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, within: float = 60.0) -> str:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            for line in self.lines:
                if text in line:
                    return line
            time.sleep(0.05)
        raise AssertionError(f"no line with {text!r} in {within:g} s: {self.lines}")


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as c:
        return c.execute(sql).fetchall()


def until(check: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within:g} s: {what}")
        time.sleep(0.1)


def test_a_full_data_disk_holds_the_engine_which_goes_on_when_space_returns(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", "6m") as disk:
        data = disk / "data"
        spec = tmp_path / "spec.json"
        chain = [{"key": "s", "type": "SLEEP", "payload": {"seconds": 0.5}}] + [
            {"key": f"n{i}", "type": "NOOP", "depends_on": ["s"]} for i in range(6)
        ]
        spec.write_text(json.dumps({"tasks": chain}))
        for _ in range(RUNS):
            subprocess.run([*CLI, "--data-dir", str(data), "submit", str(spec)], check=True,
                           capture_output=True, timeout=60)  # fmt: skip
        db = data / "fredica.db"
        worker = subprocess.Popen(
            [*CLI, "--data-dir", str(data), "worker", "--max-workers", "2"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            err = Lines(worker)
            done = "SELECT count(*) FROM task WHERE status = 'completed'"
            until(lambda: rows(db, done)[0][0] >= 10, 60, "ten tasks completed")
            ballast = fill(disk)
            said = err.wait_for("waiting: the disk that holds the database is full")
            assert "nothing new starts" in said
            time.sleep(3.0)  # held: alive, and nothing of the queue written meanwhile
            assert worker.poll() is None, err.lines
            held_at = rows(db, done)[0][0]
            time.sleep(2.0)
            assert rows(db, done)[0][0] == held_at
            assert worker.poll() is None

            ballast.unlink()  # space is back
            err.wait_for("the database can be written again")
            until(lambda: rows(db, done)[0][0] == RUNS * len(chain), 120, "every task completed")
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) == 0, err.lines
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(30)
        err.thread.join(10)
        assert worker.stderr is not None
        worker.stderr.close()
        assert not [line for line in err.lines if "Traceback" in line], err.lines
        assert rows(db, "PRAGMA integrity_check") == [("ok",)]
        twice = rows(
            db,
            "SELECT task_id, count(*) FROM task_event WHERE kind = 'completed' "
            "GROUP BY task_id HAVING count(*) != 1",
        )
        assert twice == []
        statuses = rows(db, "SELECT status, count(*) FROM workflow_run GROUP BY status")
        assert statuses == [("completed", RUNS)]
