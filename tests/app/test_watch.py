"""``fredica watch``: the change stream of a real data directory, written by a real engine in
another process."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from fredica_app.cli import main

EXE = str(Path(sys.executable).parent / "fredica")


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def submit(capsys: pytest.CaptureFixture[str], tmp_path: Path, data: Path, spec: Any) -> str:
    path = tmp_path / f"spec-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(spec))
    code, out, err = fredica(capsys, data, "submit", str(path), "--json")
    assert code == 0, err
    return str(json.loads(out)["run_id"])


def sleeps(*seconds: float) -> dict[str, Any]:
    tasks: list[dict[str, Any]] = []
    for i, s in enumerate(seconds):
        deps = [f"t{i - 1}"] if i else []
        tasks.append(
            {"key": f"t{i}", "type": "SLEEP", "payload": {"seconds": s}, "depends_on": deps}
        )
    return {"template": "watched", "tasks": tasks}


class Lines:
    """A process's standard output, line by line, read in a thread (a read never hangs the
    test)."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def next(self, timeout: float) -> str | None:
        """The next line; None at the end of the output or when none came in time."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def rest(self, timeout: float) -> list[str]:
        lines = []
        while (line := self.next(timeout)) is not None:
            lines.append(line)
        return lines


def statuses(objs: list[dict[str, Any]], kind: str, row_id: str) -> list[str]:
    """The statuses a row went through in the output, repeats folded."""
    out: list[str] = []
    for o in objs:
        if o["kind"] == kind and o["record"]["id"] == row_id:
            if not out or out[-1] != o["record"]["status"]:
                out.append(o["record"]["status"])
    return out


def test_watch_json_follows_a_run_through_an_engine_in_another_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    run_id = submit(capsys, tmp_path, data, sleeps(1.0, 1.0))
    watch = subprocess.Popen(
        [EXE, "--data-dir", str(data), "watch", run_id, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watch.stdout is not None
    lines = Lines(watch.stdout)
    try:
        # The run as it is first (nothing runs it yet): the run, then its tasks in order.
        first = [lines.next(60) for _ in range(3)]
        assert all(first), watch.stderr.read() if watch.poll() is not None else first  # type: ignore[union-attr]
        snapshot = [json.loads(line) for line in first if line]
        assert [o["kind"] for o in snapshot] == ["run", "task", "task"]
        assert snapshot[0]["record"]["id"] == run_id
        assert snapshot[0]["record"]["status"] == "pending"
        assert [o["record"]["key"] for o in snapshot[1:]] == ["t0", "t1"]
        assert len({o["seq"] for o in snapshot}) == 1
        worker = subprocess.run(
            [EXE, "--data-dir", str(data), "worker", "--until-idle"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert worker.returncode == 0, worker.stderr
        # The watch ends by itself once the run has.
        assert watch.wait(timeout=30) == 0, watch.stderr.read()  # type: ignore[union-attr]
        objs = snapshot + [json.loads(line) for line in lines.rest(5)]
    finally:
        if watch.poll() is None:
            watch.kill()
        watch.communicate()

    for o in objs:
        assert set(o) == {"kind", "seq", "record"}
        assert o["kind"] in ("run", "task")
    seqs = [o["seq"] for o in objs[3:]]
    assert seqs == sorted(set(seqs)) and seqs[0] > snapshot[0]["seq"]
    ids = {o["record"]["key"]: o["record"]["id"] for o in snapshot[1:]}
    for key in ("t0", "t1"):
        assert statuses(objs, "task", ids[key]) in (
            ["pending", "running", "completed"],
            ["pending", "claimed", "running", "completed"],
        ), key
    run_statuses = statuses(objs, "run", run_id)
    assert run_statuses[0] == "pending" and run_statuses[-1] == "completed"
    assert "running" in run_statuses
    # In order: t1 starts after t0 completed; the run completes last of all.
    at = {
        (o["record"]["id"], o["record"]["status"]): i
        for i, o in reversed(list(enumerate(objs)))
        if o["kind"] == "task"
    }
    assert at[(ids["t0"], "completed")] < at[(ids["t1"], "running")]
    last = objs[-1]
    assert last["kind"] == "run" and last["record"]["status"] == "completed"
    assert last["record"]["done_tasks"] == 2
    # The records are the CLI's JSON shapes (`run --json`).
    code, out, _ = fredica(capsys, data, "run", run_id, "--json")
    assert code == 0
    shown = json.loads(out)
    assert set(last["record"]) == set(shown) - {"tasks"}
    assert set(objs[1]["record"]) == set(shown["tasks"][0])


def test_watch_prints_changes_from_now_until_ctrl_c(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    submit(capsys, tmp_path, data, sleeps(0.1))  # before the watch: not shown
    watch = subprocess.Popen(
        [EXE, "--data-dir", str(data), "watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watch.stdout is not None
    lines = Lines(watch.stdout)
    try:
        # It prints nothing until something changes: submit until a line shows that it is
        # watching (its start-up takes a moment).
        seen = None
        submitted = []
        deadline = time.monotonic() + 60
        while seen is None and time.monotonic() < deadline:
            submitted.append(submit(capsys, tmp_path, data, sleeps(0.1)))
            seen = lines.next(1.0)
        assert seen is not None, "the watch printed nothing"
        watch.send_signal(signal.SIGINT)
        assert watch.wait(timeout=30) == 0, watch.stderr.read()  # type: ignore[union-attr]
        out = [seen, *lines.rest(5)]
    finally:
        if watch.poll() is None:
            watch.kill()
        watch.communicate()
    runs = [line for line in out if "  run  " in line]
    assert runs and all("pending" in line and "watched" in line for line in runs)
    assert any(line.split()[2] == submitted[-1][:8] for line in runs) or any(
        submitted_id[:8] in "".join(out) for submitted_id in submitted
    )


def test_watch_of_a_finished_run_prints_it_and_exits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    run_id = submit(capsys, tmp_path, data, sleeps(0.0, 0.0))
    code, _, err = fredica(capsys, data, "worker", "--until-idle")
    assert code == 0, err
    code, out, err = fredica(capsys, data, "watch", run_id, "--json")
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    assert [o["kind"] for o in objs] == ["run", "task", "task"]
    assert objs[0]["record"]["status"] == "completed"
    assert all(o["record"]["status"] == "completed" for o in objs[1:])
    code, out, err = fredica(capsys, data, "watch", run_id)
    assert code == 0 and "completed" in out.splitlines()[0]
    code, _, err = fredica(capsys, data, "watch", "no-such-run")
    assert code == 1 and "no run no-such-run" in err


def test_watch_json_shows_only_the_runs_its_filters_ask_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    submit(capsys, tmp_path, data, sleeps(0.0))  # the data directory exists before the watch
    watch = subprocess.Popen(
        [EXE, "--data-dir", str(data), "watch", "--json", "--template", "kept"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watch.stdout is not None
    lines = Lines(watch.stdout)
    kept: list[str] = []
    others: list[str] = []
    try:
        first = None
        deadline = time.monotonic() + 60
        while first is None and time.monotonic() < deadline:
            others.append(submit(capsys, tmp_path, data, {**sleeps(0.0), "template": "other"}))
            kept.append(submit(capsys, tmp_path, data, {**sleeps(0.0), "template": "kept"}))
            first = lines.next(1.0)
        assert first is not None, "the watch printed nothing"
        code, _, err = fredica(capsys, data, "worker", "--until-idle")
        assert code == 0, err
        out = [first, *lines.rest(3)]
        watch.send_signal(signal.SIGINT)
        assert watch.wait(timeout=30) == 0, watch.stderr.read()  # type: ignore[union-attr]
    finally:
        if watch.poll() is None:
            watch.kill()
        watch.communicate()
    objs = [json.loads(line) for line in out]
    runs = {o["record"]["id"] for o in objs if o["kind"] == "run"}
    tasks = [o["record"] for o in objs if o["kind"] == "task"]
    assert runs and runs <= set(kept)  # the kept runs only…
    assert tasks and {t["workflow_run_id"] for t in tasks} <= set(kept)  # …and their tasks
    assert any(t["status"] == "completed" for t in tasks)
    assert others  # and there were others to leave out
