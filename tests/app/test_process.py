"""``fredica process`` and ``fredica sample``, end to end: real ffmpeg, real endpoints server,
real child processes, on a real data directory."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import av
import psutil
import pytest

from fredica_app.cli import main
from fredica_app.cli import process as process_module
from python_endpoints.jobs.sample import make_sample

pytestmark = pytest.mark.slow

EXE = str(Path(sys.executable).parent / "fredica")


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_sample_writes_a_clip_with_video_audio_and_subtitles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "clips" / "sample.mkv"
    out.parent.mkdir()  # `sample` makes no folder (tests/test_cli_newcomer.py)
    code, stdout, err = fredica(capsys, tmp_path / "data", "sample", str(out), "--seconds", "4")
    assert code == 0, err
    assert stdout.strip() == str(out)
    with av.open(str(out)) as container:
        kinds = sorted({s.type for s in container.streams})
        assert container.duration is not None
        duration = container.duration / 1_000_000
    assert kinds == ["audio", "subtitle", "video"]
    assert 3.5 < duration < 4.6
    code, _, err = fredica(capsys, tmp_path / "data", "sample", str(out), "--seconds", "0")
    assert code == 1 and "--seconds" in err


def test_process_sample_transcode_completes_and_fills_the_material(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    code, out, err = fredica(
        capsys, data, "process", "--sample", "--template", "transcode_mp4", "--json"
    )
    assert code == 0, err
    run = json.loads(out)
    assert run["status"] == "completed" and run["template"] == "transcode_mp4"
    tasks = {t["key"]: t for t in run["tasks"]}
    mp4 = Path(tasks["transcode"]["result"]["outputs"][0])
    assert mp4.is_file() and mp4.suffix == ".mp4"
    assert mp4.parent.parent == data / "library"  # the material's folder under the library
    with av.open(str(mp4)) as container:
        assert {s.type for s in container.streams} >= {"video", "audio"}
    assert list(tasks) == ["transcode"]  # no PROBE task: the job says what it probed
    assert tasks["transcode"]["result"]["probe"]["duration"] == pytest.approx(10.0, abs=0.5)

    code, out, _ = fredica(capsys, data, "materials", "--json")
    (material,) = json.loads(out)
    assert material["id"] == run["material_id"]
    assert material["duration"] == pytest.approx(10.0, abs=0.5)  # filled from that probe
    assert material["kind"] == "video"
    assert [s["type"] for s in material["metadata"]["streams"]] == ["video", "audio", "subtitle"]

    # Again: the same sample, the output is current, the transcode is skipped.
    code, out, err = fredica(
        capsys, data, "process", "--sample", "--template", "transcode_mp4", "--json"
    )
    assert code == 0, err
    again = {t["key"]: t for t in json.loads(out)["tasks"]}
    # A skipped task's result names what it would have made, as one that ran does.
    assert again["transcode"]["result"] == {"skipped": True, "outputs": [str(mp4)]}
    # And the screen shows it under the task, with how the task ended.
    code, out, err = fredica(capsys, data, "process", "--sample", "--template", "transcode_mp4")
    assert code == 0, err
    lines = out.splitlines()
    (row,) = [i for i, line in enumerate(lines) if line.split()[0] == "transcode"]
    assert "skipped: its output is already up to date" in lines[row]
    assert lines[row + 1] == f"      → {mp4}"
    assert "skipped" in err and str(mp4) in err  # the line per change of status


def test_following_a_run_draws_a_task_again_only_when_it_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's display is not drawn whole at each change of one task: each drawing of a
    line has a record (or column widths) the line did not show before."""
    drawn: list[tuple[str, int, tuple[int, int]]] = []
    real_show = process_module._show

    def show(display: Any, bars: Any, seen: Any, t: Any, console: Any, widths: Any) -> None:
        drawn.append((t.id, id(t), widths))
        real_show(display, bars, seen, t, console, widths)

    monkeypatch.setattr(process_module, "_show", show)
    data = tmp_path / "data"
    code, _, err = fredica(capsys, data, "process", "--sample", "--template", "extract_subtitles")
    assert code == 0, err
    last: dict[str, tuple[int, tuple[int, int]]] = {}
    for task_id, record, widths in drawn:
        assert last.get(task_id) != (record, widths), "a line drawn again, unchanged"
        last[task_id] = (record, widths)
    assert len(last) == 2  # PROBE and EXTRACT_SUBTITLES, each drawn


def test_a_note_a_job_leaves_is_a_warning_in_process_runs_run_and_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated input is transcoded as far as it goes, and its result says so: before,
    ``process`` printed "done in 0.2 s" and nothing else. Now: a ``warning:`` line at the
    end of ``process``, a mark in ``runs``, the note under its task in ``run``, and a
    ``warning:`` line under the run's line in ``worker``."""
    data = tmp_path / "data"
    clip = make_sample(tmp_path / "cut.mkv", 6.0, kind="corrupt", size=(160, 120))
    code, _, err = fredica(capsys, data, "process", str(clip), "--template", "transcode_mp4")
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, err
    assert warnings[0].startswith("warning: transcode: the input is shorter than its header")
    code, out, _ = fredica(capsys, data, "runs")
    assert "completed (warning)" in out
    code, out, _ = fredica(capsys, data, "runs", "--json")
    run_id = json.loads(out)[0]["id"]
    code, out, _ = fredica(capsys, data, "run", run_id[:8])
    assert "      warning: the input is shorter than its header" in out
    # The same file again through `add` and `worker`: the warning under the run's line.
    again = tmp_path / "again.mkv"
    again.write_bytes(clip.read_bytes() + b"\0")  # another file (the library keeps one per content)
    fredica(capsys, data, "add", str(again), "--template", "transcode_mp4")
    code, out, err = fredica(capsys, data, "worker", "--until-idle")
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("completed"))
    assert lines[at + 1].startswith("  warning: transcode: the input is shorter"), out


def test_process_of_a_file_that_is_not_media_fails_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a video\n" * 100)
    code, out, err = fredica(
        capsys, tmp_path / "data", "process", str(notes), "--template", "transcode_mp4", "--json"
    )
    assert code == 1
    run = json.loads(out)
    tasks = {t["key"]: t for t in run["tasks"]}
    assert run["status"] == "failed"
    assert tasks["transcode"]["error_type"] == "NOT_MEDIA"
    assert "fredica: error: transcode:" in err and "Traceback" not in err


def test_process_without_input_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = fredica(capsys, tmp_path / "data", "process", "--template", "transcode_mp4")
    assert code == 1 and "--sample" in err


def _env(data: Path) -> dict[str, str]:
    return {**os.environ, "FREDICA_DATA_DIR": str(data)}


def test_process_follows_a_run_when_a_worker_already_runs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    worker = subprocess.Popen(
        [EXE, "worker"], env=_env(data), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        for _ in range(100):  # the worker holds the lock once its engine started
            if (data / "engine.lock").exists():
                break
            time.sleep(0.1)
        time.sleep(1.0)
        done = subprocess.run(
            [EXE, "process", "--sample", "--template", "extract_audio", "--json"],
            env=_env(data),
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr
        assert "following the run" in done.stderr
        run = json.loads(done.stdout)
        assert run["status"] == "completed"
        with sqlite3.connect(data / "fredica.db") as conn:
            (worker_ids,) = conn.execute(
                "SELECT count(DISTINCT worker_id) FROM task WHERE workflow_run_id = ?",
                (run["id"],),
            ).fetchone()
        assert worker_ids == 1  # run by the worker, not by a second engine
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
    assert worker.returncode == 0


def test_ctrl_c_holds_the_run_and_says_how_to_continue(tmp_path: Path) -> None:
    data = tmp_path / "data"
    clip = tmp_path / "long.mkv"
    subprocess.run(
        [EXE, "sample", str(clip), "--seconds", "90", "--kind", "legacy"],
        env=_env(data),
        check=True,
        timeout=120,
    )
    proc = subprocess.Popen(
        [EXE, "process", str(clip), "--template", "media", "--json"],
        env=_env(data),
        stdin=subprocess.DEVNULL,  # no terminal to ask on: a Ctrl-C quits at once
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Wait until the transcode (a re-encode: it takes a while) runs, then interrupt.
        for _ in range(600):
            with sqlite3.connect(data / "fredica.db") as conn:
                running = conn.execute(
                    "SELECT count(*) FROM task WHERE status = 'running' AND progress > 1 "
                    "AND type = 'TRANSCODE_MP4'"
                ).fetchone()[0]
            if running:
                break
            time.sleep(0.1)
        assert running
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "fredica resume" in err and "Traceback" not in err
    run = json.loads(out)
    assert run["status"] != "completed"
    unfinished = [t for t in run["tasks"] if t["status"] != "completed"]
    assert unfinished and all(t["is_paused"] for t in unfinished)
    # No final file of an interrupted job (only verified outputs are moved into place).
    for t in unfinished:
        output = t["payload"].get("output")
        if output:
            assert not Path(output).exists()

    # Continue as it says: resume, then a worker until idle.
    subprocess.run([EXE, "resume", run["id"]], env=_env(data), check=True, timeout=60)
    subprocess.run([EXE, "worker", "--until-idle"], env=_env(data), check=True, timeout=300)
    final = subprocess.run(
        [EXE, "run", run["id"], "--json"], env=_env(data), capture_output=True, text=True
    )
    assert json.loads(final.stdout)["status"] == "completed"


def test_process_exits_at_once_with_one_line_when_the_database_fails_under_its_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's second turn fails as SQLite does when the disk reports an I/O error (a
    failure that does not pass by itself: a full disk or a lock is waited out, see
    test_engine_faults.py): ``process`` ends with one line and exit 1, instead of following
    for ever."""
    import sqlalchemy as sa

    from workers.store._base import StoreBase

    original = StoreBase._tx
    ticks = 0

    def tx(self: StoreBase, fn: Any, *args: Any) -> Any:
        nonlocal ticks
        if getattr(fn, "__name__", "") == "_tick_tx":
            ticks += 1
            if ticks == 2:

                def then_fail(conn: sa.Connection, *a: Any) -> Any:
                    fn(conn, *a)
                    raise sa.exc.OperationalError(
                        "COMMIT", {}, sqlite3.OperationalError("disk I/O error")
                    )

                return original(self, then_fail, *args)
        return original(self, fn, *args)

    monkeypatch.setattr(StoreBase, "_tx", tx)
    began = time.monotonic()
    code, _, err = fredica(
        capsys, tmp_path / "data", "process", "--sample", "--template", "transcode_mp4"
    )
    assert code == 1
    assert time.monotonic() - began < 60
    lines = [line for line in err.splitlines() if line.startswith("fredica: error:")]
    assert len(lines) == 1 and "I/O error" in lines[0], err  # said once
    assert "Traceback" not in err


def _ffmpegs_of(folder: Path) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "ffmpeg" in (p.info["name"] or "") and str(folder) in cmd:
            out.append(p)
    return out


def test_ctrl_c_in_a_terminal_pauses_in_place_and_enter_resumes(tmp_path: Path) -> None:
    """In a real pseudo-terminal: ^C goes to the whole foreground process group, as a user's
    does. The job's child and ffmpeg must not die of it: the run is paused in place (ffmpeg
    stopped), Enter resumes it, and the same encode goes on to the end — attempt 1, the same
    ffmpeg process, no restart from zero."""
    data = tmp_path / "data"
    clip = tmp_path / "long.mkv"
    subprocess.run(
        [EXE, "sample", str(clip), "--seconds", "90", "--kind", "legacy"],
        env=_env(data),
        check=True,
        timeout=120,
    )
    master, slave = os.openpty()

    def controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [EXE, "process", str(clip), "--template", "transcode_mp4"],
        env={**_env(data), "TERM": "dumb"},
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    screen = bytearray()

    def read_until(text: bytes, within: float) -> None:
        deadline = time.monotonic() + within
        while text not in screen:
            assert time.monotonic() < deadline, f"no {text!r} on the screen: {bytes(screen)!r}"
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                with contextlib.suppress(OSError):
                    screen.extend(os.read(master, 65536))

    def transcode() -> tuple[str, float, int, int]:
        with sqlite3.connect(data / "fredica.db") as conn:
            row = conn.execute(
                "SELECT status, progress, attempt, is_paused FROM task WHERE type = 'TRANSCODE_MP4'"
            ).fetchone()
        return row if row else ("", 0.0, 0, 0)

    try:
        deadline = time.monotonic() + 120
        while transcode()[1] < 5:
            assert time.monotonic() < deadline, bytes(screen)
            read_until(b"", 0.2)
            time.sleep(0.1)
        (encoder,) = _ffmpegs_of(data)
        os.write(master, b"\x03")  # Ctrl-C, as typed
        read_until(b"Enter resumes", 30)
        time.sleep(1.0)
        status, at_pause, attempt, paused = transcode()
        assert (status, attempt, paused) == ("running", 1, 1)
        assert encoder.is_running() and encoder.status() == psutil.STATUS_STOPPED
        time.sleep(1.0)
        assert transcode()[1] == at_pause  # nothing moves while paused
        os.write(master, b"\r")  # Enter
        read_until(b"resumed", 30)
        deadline = time.monotonic() + 300
        while proc.poll() is None:
            assert time.monotonic() < deadline
            read_until(b"", 0.5)
        assert proc.returncode == 0, bytes(screen)
        assert b"Traceback" not in screen and b"KeyboardInterrupt" not in screen
        status, progress, attempt, paused = transcode()
        assert (status, progress, attempt, paused) == ("completed", 100.0, 1, 0)
        assert not encoder.is_running()  # it finished its work: the one encode, resumed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_a_clip_whose_name_is_not_utf8_is_probed_and_transcoded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real clip named ``caf\\xe9 \\n clip.mkv`` (a Latin-1 byte and a newline): its path goes
    through the library, the task payloads and the websocket as the bytes it is, so PROBE and
    TRANSCODE_MP4 open it; the MP4 gets a safe name, and the lines printed stay one each."""
    clip = make_sample(tmp_path / "clip.mkv", 1.0, kind="mkv", size=(160, 120))
    named = tmp_path / "in" / os.fsdecode(b"caf\xe9 \n clip.mkv")
    named.parent.mkdir()
    clip.rename(named)
    code, out, err = fredica(capsys, tmp_path / "data", "process", str(named.parent),
                             "--template", "transcode_mp4")  # fmt: skip
    assert code == 0, err
    assert "completed" in out and "caf\ufffd \\n clip" in out
    (mp4,) = (tmp_path / "data" / "library").glob("*/*.mp4")
    assert mp4.name == "caf\ufffd___clip.mp4"
    with av.open(str(mp4)) as container:
        assert {s.type for s in container.streams} >= {"video", "audio"}
