"""``fredica process`` and ``fredica sample``, end to end: real ffmpeg, real endpoints server,
real child processes, on a real data directory."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import av
import pytest

from fredica_app.cli import main

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
    assert tasks["probe"]["result"]["duration"] == pytest.approx(10.0, abs=0.5)

    code, out, _ = fredica(capsys, data, "materials", "--json")
    (material,) = json.loads(out)
    assert material["id"] == run["material_id"]
    assert material["duration"] == pytest.approx(10.0, abs=0.5)  # filled from PROBE
    assert material["kind"] == "video"

    # Again: the same sample, the output is current, the transcode is skipped.
    code, out, err = fredica(
        capsys, data, "process", "--sample", "--template", "transcode_mp4", "--json"
    )
    assert code == 0, err
    again = {t["key"]: t for t in json.loads(out)["tasks"]}
    assert again["transcode"]["result"] == {"skipped": True}


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
    assert tasks["probe"]["error_type"] == "NOT_MEDIA"
    assert tasks["transcode"]["error_type"] == "DEPENDENCY_FAILED"
    assert "fredica: error: probe:" in err and "Traceback" not in err


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
