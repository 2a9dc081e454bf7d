"""The window on a real X server (Xvfb), through Qt's xcb platform: `fredica gui` starts,
maps a window that the X server draws, and quits when it is closed — with the engine stopped
and no process left behind. Skipped where Xvfb is not installed (CI installs it)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.host import tool_mark

pytestmark = [
    pytest.mark.slow,
    tool_mark("Xvfb", "xvfb"),
]

# Run in a child process on the X display: open the window as `fredica gui` does, wait until
# it is exposed, grab the X server's screen, then close the window (as a user would) and let
# the application quit by itself.
CHILD = textwrap.dedent(
    """
    import json, sys, time
    from PySide6.QtCore import QTimer
    from fredica_app.gui.app import GuiApp, make_qapplication
    from fredica_app.gui.host import Mode

    qapp = make_qapplication()
    gui = GuiApp(qapp, sys.argv[1])
    gui.start()
    report = {"platform": qapp.platformName()}

    def look():
        window = gui.window
        handle = window.windowHandle()
        if gui.host.state.mode is not Mode.ENGINE or handle is None or not handle.isExposed():
            QTimer.singleShot(100, look)
            return
        shot = qapp.primaryScreen().grabWindow(0)  # what the X server shows
        shot.save(sys.argv[2])
        image = shot.toImage()
        report.update(
            title=window.windowTitle(),
            mode=window.mode_label.text(),
            size=[image.width(), image.height()],
            colours=len({image.pixel(x, y) for x in range(0, image.width(), 7)
                         for y in range(0, image.height(), 7)}),
        )
        window.close()

    QTimer.singleShot(100, look)
    code = qapp.exec()
    gui.host.join(30)
    report["exit"] = code
    report["host"] = gui.host.state.mode.value
    print(json.dumps(report))
    """
)


@contextlib.contextmanager
def x_server() -> Iterator[dict[str, str]]:
    """A real X server (Xvfb, 1280 by 800) for the test's children: their environment."""
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as reader:
            display = reader.readline().strip()
        assert display, "Xvfb gave no display number"
        yield {**os.environ, "DISPLAY": f":{display}", "QT_QPA_PLATFORM": "xcb"}
    finally:
        xvfb.terminate()
        xvfb.wait(30)


def test_the_window_on_a_real_x_server(tmp_path: Path) -> None:
    with x_server() as env:
        shot = tmp_path / "screen.png"
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(tmp_path / "data"), str(shot)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert child.returncode == 0, child.stderr
        report = json.loads(child.stdout.strip().splitlines()[-1])
        assert report["platform"] == "xcb"
        assert report["title"] == "Fredica"
        assert report["mode"] == "Processing in this window"
        assert report["size"] == [1280, 800]
        assert report["colours"] > 20  # the window was drawn, not a blank screen
        assert (report["exit"], report["host"]) == (0, "stopped")
        assert shot.stat().st_size > 10_000
        # Nothing left behind: the endpoints server and its jobs exited with the app.
        leftovers = [
            p
            for p in psutil.process_iter(["cmdline"])
            if str(tmp_path) in " ".join(p.info["cmdline"] or [])
        ]
        assert leftovers == []


# Queue three files as a user does (add them, select them, start a workflow on them); report
# the runs' titles as the queue shows them once a transcription is under way; then wait to be
# killed (the crash).
QUEUE_THREE = textwrap.dedent(
    """
    import json, sys, time
    from PySide6.QtCore import QTimer
    from fredica_app.gui.app import GuiApp, make_qapplication
    from fredica_app.gui.host import Mode
    from fredica_app.gui.library_model import MATERIAL_ROLE
    from fredica_app.gui.models import RunTableModel, TaskTableModel

    qapp = make_qapplication()
    gui = GuiApp(qapp, sys.argv[1])
    gui.start()
    files = sys.argv[2:]
    step = ["open"]

    def tick():
        window, library, queue = gui.window, gui.window.library, gui.window.queue
        if step[0] == "open" and gui.host.state.mode is Mode.ENGINE:
            library.import_items(files)
            step[0] = "imported"
        elif step[0] == "imported" and library.model.rowCount() == len(files):
            library.select_materials(
                library.model.index(r, 0).data(MATERIAL_ROLE).id for r in range(3)
            )
            library.ask_template = lambda materials: "subtitles"  # the dialog's answer
            library.start_template()
            window.nav.setCurrentRow(window.QUEUE)
            step[0] = "started"
        elif step[0] == "started":
            runs = queue.runs
            titles = [runs.index(r, RunTableModel.TITLE).data() for r in range(runs.rowCount())]
            tasks = queue.tasks
            transcribing = [  # the long file's: it still runs when the window is back
                r for r in range(tasks.rowCount())
                if (t := tasks.record_at(r)).type == "TRANSCRIBE"
                and t.status.value == "running" and t.progress > 0
                and tasks.index(r, TaskTableModel.FILE).data() == "Lecture 3 - Fourier series"
            ]
            if len(titles) == 3 and "…" not in titles and transcribing:
                qapp.primaryScreen().grabWindow(0).save(sys.argv[1] + "-queued.png")
                print(json.dumps({"titles": titles}), flush=True)
                step[0] = "waiting"  # for the kill
        QTimer.singleShot(100, tick)

    QTimer.singleShot(100, tick)
    qapp.exec()
    """
)

# The window opened again on what the crash left: report the banner and the tasks' states.
AFTER_THE_CRASH = textwrap.dedent(
    """
    import json, sys
    from PySide6.QtCore import QTimer
    from fredica_app.gui.app import GuiApp, make_qapplication
    from fredica_app.gui.host import Mode
    from fredica_app.gui.models import TaskTableModel
    from PySide6.QtWidgets import QToolButton

    qapp = make_qapplication()
    gui = GuiApp(qapp, sys.argv[1])
    gui.start()
    report = {}

    def look():
        window = gui.window
        queue = window.queue
        window.nav.setCurrentRow(window.QUEUE)
        tasks = queue.tasks
        states = [tasks.index(r, TaskTableModel.STATE).data() for r in range(tasks.rowCount())]
        resumed = [s for s in states if s and s.endswith("· resumed")]
        if gui.host.state.mode is not Mode.ENGINE or not window.banner.isVisible() or not resumed:
            QTimer.singleShot(100, look)
            return
        qapp.primaryScreen().grabWindow(0).save(sys.argv[1] + "-restarted.png")
        report.update(
            banner=window.banner.message.text(),
            resumed=resumed,
            size=[window.width(), window.height()],
            sideways=[
                v.horizontalScrollBar().isVisible() for v in (queue.runs_view, queue.tasks_view)
            ],
            folded=[b.isVisible() for b in queue.toolbar.findChildren(QToolButton)
                    if b.objectName() == "qt_toolbar_ext_button"],
        )
        window.confirm_quit = lambda running: True  # "quit while tasks run?": yes
        window.close()

    QTimer.singleShot(100, look)
    code = qapp.exec()
    gui.host.join(60)
    report["exit"] = code
    print(json.dumps(report))
    """
)


def test_three_files_queued_in_the_window_then_a_crash_and_the_window_again(
    tmp_path: Path,
) -> None:
    """In a real window on a real X server: three files added and started as a user does,
    the queue naming each run by its file; the app killed mid-transcription; the window
    opened again says it stopped unexpectedly (the banner) and marks the resumed work."""
    from python_endpoints.jobs.sample import make_sample

    files = [
        make_sample(tmp_path / "Lecture 3 - Fourier series.mkv", 40.0, speech=True),
        make_sample(tmp_path / "Interview with the archivist.mp4", 4.0, kind="mp4", speech=True),
        make_sample(tmp_path / "Field recording, harbour.mkv", 4.0, speech=True),
    ]
    data = tmp_path / "data"
    with x_server() as env:
        errors = tmp_path / "first.err"
        with (
            errors.open("w") as err,
            subprocess.Popen(
                [sys.executable, "-c", QUEUE_THREE, str(data), *map(str, files)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            ) as first,
        ):
            try:
                assert first.stdout is not None
                line = first.stdout.readline()  # once three runs are named and one transcribes
                assert line, errors.read_text()[-2000:]
                report = json.loads(line)
                assert sorted(report["titles"]) == sorted(f.stem for f in files)
            finally:
                first.send_signal(signal.SIGKILL)  # the crash
                first.wait(30)
        again = subprocess.run(
            [sys.executable, "-c", AFTER_THE_CRASH, str(data)],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert again.returncode == 0, again.stderr[-2000:]
    after = json.loads(again.stdout.strip().splitlines()[-1])
    assert "stopped unexpectedly" in after["banner"]
    assert after["resumed"] and after["exit"] == 0
    # A first window on a 1280 by 800 screen: every column and every action without scrolling.
    assert after["size"][0] >= 1240 and after["sideways"] == [False, False]
    assert not any(after["folded"])
    for shot in ("queued", "restarted"):
        assert (tmp_path / f"data-{shot}.png").stat().st_size > 10_000
    leftovers = [
        p
        for p in psutil.process_iter(["cmdline"])
        if str(data) in " ".join(p.info["cmdline"] or [])
    ]
    assert leftovers == [], [p.info["cmdline"] for p in leftovers]
