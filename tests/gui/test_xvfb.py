"""The window on a real X server (Xvfb), through Qt's xcb platform: `fredica gui` starts,
maps a window that the X server draws, and quits when it is closed — with the engine stopped
and no process left behind. Skipped where Xvfb is not installed (CI installs it)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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


def test_the_window_on_a_real_x_server(tmp_path: Path) -> None:
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
        env = {**os.environ, "DISPLAY": f":{display}", "QT_QPA_PLATFORM": "xcb"}
        shot = tmp_path / "screen.png"
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(tmp_path / "data"), str(shot)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert child.returncode == 0, child.stderr
        import json

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
    finally:
        xvfb.terminate()
        xvfb.wait(30)
