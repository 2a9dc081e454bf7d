"""Media tasks through the whole chain — a real ``fredica worker`` process, its endpoints
server, real child processes, real ffmpeg, a real HTTP server — and what a ``kill -9`` of the
worker mid-job leaves: a download resumes from the bytes on disk; a transcode leaves nothing at
its final path, no ffmpeg behind, and its retry completes."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil
import pytest

from tests.engine.test_crash import fredica, query, run_cli, submit, wait_for
from tests.support.httpserver import HTTPTestServer, Route, make_body

pytestmark = pytest.mark.slow

BODY = make_body(4_000_000, seed=7)


def processes_mentioning(text: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(text in part for part in p.info["cmdline"] or ()):
                found.append(p)
        except psutil.NoSuchProcess:
            continue
    return found


def wait_gone(text: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in processes_mentioning(text) if p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return
        time.sleep(0.1)
    raise AssertionError(f"processes left behind: {[p.cmdline() for p in alive]}")


def bytes_done(data: Path) -> int:
    rows = query(data, "SELECT json_extract(checkpoint, '$.bytes_done') FROM task")
    return int(rows[0][0] or 0)


def test_kill_9_mid_download_resumes_from_the_bytes_on_disk(tmp_path: Path) -> None:
    data = tmp_path / "data"
    output = data / "library" / "remote-0001" / "clip.bin"
    with HTTPTestServer() as http:
        http.routes["/clip.bin"] = Route(body=BODY, rate=600_000)
        spec = {
            "tasks": [
                {
                    "key": "d",
                    "type": "DOWNLOAD",
                    "payload": {"url": http.url("/clip.bin"), "output": str(output)},
                    "max_retries": 2,
                }
            ]
        }
        submitted = submit(data, spec)
        worker = fredica(data, "worker")
        # The endpoints server names its log file, under the data directory, on its command
        # line (its other options come on stdin).
        server_log = str(data / "logs" / "endpoints.log")
        try:
            wait_for(lambda: bytes_done(data) > 500_000, within=60)
            assert processes_mentioning(server_log)
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.communicate(timeout=10)
        (saved,) = query(data, "SELECT json_extract(checkpoint, '$.bytes_done') FROM task")[0]
        part = output.with_name(output.name + ".part")
        assert part.stat().st_size >= saved > 0
        assert not output.exists()
        wait_gone(server_log)  # the endpoints server died with its parent

        http.routes["/clip.bin"].rate = None
        code, _, err = run_cli(data, "worker", "--until-idle")
        assert code == 0, err
        assert "recovered: 1 resumed, 0 restarted from the start, 0 held, 0 failed" in err
        ranges = [r.headers.get("range") for r in http.requests]
    task = query(
        data,
        "SELECT status, attempt, json_extract(result, '$.resumed_from') FROM task "
        "WHERE workflow_run_id = ?",
        submitted["run_id"],
    )[0]
    assert task[0] == "completed" and task[1] == 2
    assert task[2] >= saved  # the second attempt started from what was on disk
    assert ranges[0] is None and ranges[-1] == f"bytes={task[2]}-"
    assert output.read_bytes() == BODY and not part.exists()


def test_kill_9_mid_transcode_leaves_no_partial_output_and_the_retry_completes(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    clip = tmp_path / "long.mkv"
    code, _, err = run_cli(data, "sample", str(clip), "--seconds", "120")
    assert code == 0, err
    output = data / "library" / "out-0001" / "long.mp4"
    spec = {
        "tasks": [
            {
                "key": "t",
                "type": "TRANSCODE_MP4",
                "payload": {
                    "input": str(clip),
                    "output": str(output),
                    "mode": "reencode",
                    "preset": "medium",
                },
                "max_retries": 1,
            }
        ]
    }
    submitted = submit(data, spec)
    worker = fredica(data, "worker")
    try:
        wait_for(
            lambda: (
                query(data, "SELECT progress FROM task")[0][0] > 5
                and bool(processes_mentioning(str(output.parent)))
            ),
            within=120,
        )
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=10)
    wait_gone(str(output.parent))  # no ffmpeg (nor job child) outlives the worker
    assert not output.exists()

    code, _, err = run_cli(data, "worker", "--until-idle")
    assert code == 0, err
    status, attempt = query(
        data, "SELECT status, attempt FROM task WHERE workflow_run_id = ?", submitted["run_id"]
    )[0]
    assert (status, attempt) == ("completed", 2)
    assert output.is_file()
    leftovers = sorted(p.name for p in output.parent.iterdir() if p.name != output.name)
    assert all(name.endswith(".fredica.json") for name in leftovers), leftovers


def test_urls_through_process_direct_file_and_video_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``process URL --template download_transcode``: a direct file URL is a DOWNLOAD, a page
    (no media file in its path) a DOWNLOAD_SITE (yt-dlp); both end in a verified MP4."""
    import json

    from fredica_app.cli import main
    from python_endpoints.jobs.sample import make_sample

    clip = make_sample(tmp_path / "clip.mp4", 3, kind="mp4")
    data = tmp_path / "data"
    with HTTPTestServer() as http:
        http.routes["/media/clip.mp4"] = Route(body=clip.read_bytes(), content_type="video/mp4")
        video = f'<video src="{http.url("/media/clip.mp4")}"></video>'
        html = f"<html><head><title>A talk</title></head><body>{video}</body></html>"
        http.routes["/watch"] = Route(body=html.encode(), content_type="text/html; charset=utf-8")
        for url, kind in (
            (http.url("/media/clip.mp4"), "DOWNLOAD"),
            (http.url("/watch"), "DOWNLOAD_SITE"),
        ):
            code = main(
                [
                    "--data-dir",
                    str(data),
                    "process",
                    url,
                    "--template",
                    "download_transcode",
                    "--json",
                ]
            )
            out, err = capsys.readouterr()
            assert code == 0, err
            run = json.loads(out)
            tasks = {t["key"]: t for t in run["tasks"]}
            assert tasks["download"]["type"] == kind
            assert run["status"] == "completed"
            downloaded = Path(tasks["download"]["result"]["outputs"][0])
            assert downloaded.read_bytes() == clip.read_bytes()
            assert downloaded.parent.parent.parent == data / "library"
            mp4 = Path(tasks["transcode"]["result"]["outputs"][0])
            assert mp4.is_file() and tasks["transcode"]["result"]["mode"] == "remux"
