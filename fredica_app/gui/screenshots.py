"""Renders the window's main screens to PNG files, from a real run, for the documentation.

    python -m fredica_app.gui.screenshots OUT_DIR [--seconds 240]

What it does, in a fresh data directory: makes three sample videos with speech, adds them to
the library and starts the ``full`` pipeline on one and ``subtitles`` on another; runs a
``fredica worker`` on it and kills it (``kill -9``) while it transcribes — a real crash. Then
it opens the window: recovery resumes the interrupted tasks and the restart banner says so;
the restart review (the banner and its list) is saved first, the queue held meanwhile (a short
transcription resumed at once could end and leave the review first); then the queue goes on,
the entries are dismissed and, while the engine transcodes and
transcribes, each other screen (queue, run details with the ``full`` DAG, library, settings).
Each is saved in English and Simplified Chinese, light and dark:
``<screen>-<language>-<theme>.png``.

Runs without a display (Qt's offscreen platform, on a 1600 by 1000 screen).

    python -m fredica_app.gui.screenshots OUT_DIR --desktop

renders instead, in a few seconds, what Fredica shows beside its window: the tray icon's menu
over a desktop's panel (``tray-menu.png``) and notifications as toasts over the window
(``notification-toast.png``), with tasks running.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

SCREEN = {"name": "screen", "x": 0, "y": 0, "width": 1600, "height": 1000, "logicalDpi": 96}
WINDOW = (1360, 820)
#: The screens and the languages and themes each is rendered in.
PASSES = (("en", "light"), ("en", "dark"), ("zh_CN", "light"), ("zh_CN", "dark"))
SCREENS = ("restart-review", "queue", "details", "library", "settings")
#: What ``--desktop`` renders.
DESKTOP = ("tray-menu.png", "notification-toast.png", "settings-desktop.png")


def _offscreen() -> None:
    """Before Qt starts: the offscreen platform with a screen large enough for the window
    (the default one is 800 pixels wide), unless a platform is set."""
    if "QT_QPA_PLATFORM" in os.environ:
        return
    config = Path(tempfile.mkdtemp(prefix="fredica-screen-")) / "screen.json"
    config.write_text(json.dumps({"screens": [SCREEN]}))
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={config}"


# --- the run to show ----------------------------------------------------------------------------


def prepare(data_dir: Path, seconds: float) -> list[str]:
    """Samples, materials and three runs, and a worker killed mid-transcription. Returns the
    runs' ids, the ``full`` one first."""
    from fredica_app.services import Fredica
    from python_endpoints.jobs.sample import make_sample

    media = data_dir.parent / "media"
    media.mkdir(parents=True, exist_ok=True)
    # Both CPU jobs at once (a 2-core machine would otherwise run one at a time).
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "settings.json").write_text(json.dumps({"slots": {"cpu": 2}}))
    clips = [
        ("Lecture 3 - Fourier series.mkv", seconds, "mkv"),
        ("Interview with the archivist.mp4", seconds * 0.75, "mp4"),
        ("Field recording, harbour.mkv", seconds / 4, "mkv"),
    ]
    for name, length, kind in clips:
        make_sample(media / name, length, kind=kind, speech=True, size=(1280, 720))

    async def submit() -> list[str]:
        app = Fredica.open(data_dir)
        try:
            report = await app.import_items([str(media / name) for name, _, _ in clips])
            by_name = {Path(m.source).name: m for m in report.materials}
            full = await app.submit_for_material(by_name[clips[0][0]], "full")
            subtitles = await app.submit_for_material(by_name[clips[1][0]], "subtitles")
            third = await app.submit_for_material(by_name[clips[2][0]], "full")
            return [full.run_id, subtitles.run_id, third.run_id]
        finally:
            await app.close()

    run_ids = asyncio.run(submit())
    log = data_dir.parent / "screenshots-worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "fredica_app.cli", "--data-dir", str(data_dir), "worker"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    async def until_working() -> None:
        """Until a transcription is under way: the crash interrupts it (and the transcodes
        beside it), and its entry in the restart log waits for review while it finishes —
        long enough for the restart review's screens."""
        app = Fredica.open(data_dir, thorough=False)
        try:
            deadline = time.monotonic() + 180
            while not await crash_moment(app, run_ids):
                if worker.poll() is not None or time.monotonic() > deadline:
                    states = await task_states(app, run_ids)
                    tail = log.read_text(errors="replace")[-1500:]
                    raise SystemExit(
                        f"screenshots: the worker did not start transcribing (exit code "
                        f"{worker.poll()}); tasks: {states}; its output:\n{tail}"
                    )
                await asyncio.sleep(0.05)
        finally:
            await app.close()

    try:
        asyncio.run(until_working())
    finally:
        worker.send_signal(signal.SIGKILL)  # the crash the banner speaks of
        worker.wait(30)
    return run_ids


async def crash_moment(app: Any, run_ids: list[str]) -> bool:
    """Whether to kill the worker now: a transcription has been under way for a moment (its
    progress reported, or running for a second: a short one may report only at its end), or
    every transcription is done and other work still runs (a fast machine got there first)."""
    tasks = [t for run_id in run_ids for t in await app.store.list_tasks(run_id)]
    speech = [t for t in tasks if t.type == "TRANSCRIBE"]
    now = time.time()
    for task in speech:
        if task.status.value == "running" and (
            task.progress > 0 or (task.started_at is not None and now - task.started_at > 1.0)
        ):
            return True
    all_done = bool(speech) and all(t.status.value == "completed" for t in speech)
    return all_done and any(t.status.value == "running" for t in tasks)


async def task_states(app: Any, run_ids: list[str]) -> list[str]:
    """Each task of the runs as TYPE:status, for an error message."""
    return [
        f"{t.type}:{t.status.value}"
        for run_id in run_ids
        for t in await app.store.list_tasks(run_id)
    ]


async def finished(app: Any, run_ids: list[str], task_type: str) -> bool:
    """Whether a task of ``task_type`` of the runs has completed."""
    for run_id in run_ids:
        for task in await app.store.list_tasks(run_id):
            if task.type == task_type and task.status.value == "completed":
                return True
    return False


async def running_progress(app: Any, run_ids: list[str], task_type: str) -> float:
    """The furthest progress of the runs' running tasks of ``task_type`` (0: none runs)."""
    best = 0.0
    for run_id in run_ids:
        for task in await app.store.list_tasks(run_id):
            if task.type == task_type and task.status.value == "running":
                best = max(best, task.progress)
    return best


def _wait(done: Callable[[], bool], within: float, what: str, pump: bool = False) -> None:
    deadline = time.monotonic() + within
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshots: waited {within:.0f} s for {what}")
        if pump:
            from PySide6.QtWidgets import QApplication

            QApplication.processEvents()
        time.sleep(0.05)


# --- the window ------------------------------------------------------------------------------


def tour(data_dir: Path, run_ids: list[str], out: Path) -> list[Path]:
    """Open the window on ``data_dir`` and save every screen in every language and theme."""
    from PySide6.QtWidgets import QApplication

    from fredica_app.gui import theme
    from fredica_app.gui.app import GuiApp, make_qapplication
    from fredica_app.gui.host import Mode
    from fredica_app.paths import resolve_paths

    # The queue held until the restart review is saved: a short transcription resumed at once
    # could end (and take its entry off the review) before the window reads it.
    resolve_paths(data_dir).queue_flag.touch()
    qapp = make_qapplication()
    gui = GuiApp(qapp, data_dir)
    gui.start()
    host = gui.host
    _wait(lambda: host.state.mode is Mode.ENGINE, 60, "the engine", pump=True)

    def pump(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            QApplication.processEvents()
            time.sleep(0.02)

    def progress(task_type: str) -> float:
        future = host.call(lambda app: running_progress(app, run_ids, task_type))
        return float(future.result(30))  # a documentation tool: it may wait

    def transcribed() -> bool:
        future = host.call(lambda app: finished(app, run_ids, "TRANSCRIBE"))
        return bool(future.result(30))

    def show(screen: str, window: Any) -> None:
        if screen == "library":
            window.nav.setCurrentRow(window.LIBRARY)
            page = window.library
            if page.model.rowCount() and len(page.selected_materials()) != 1:
                page.select_materials([page.model.materials[0].id])  # its details beside
        elif screen in ("queue", "restart-review"):
            window.nav.setCurrentRow(window.QUEUE)
            window.banner.review_button.setChecked(screen == "restart-review")
        elif screen == "details":
            window.show_run(run_ids[0])
            pump(1.0)  # the run's tasks, read
            tasks = host.call(lambda app: app.store.list_tasks(run_ids[0])).result(30)
            transcribe = next((t.id for t in tasks if t.type == "TRANSCRIBE"), None)
            if transcribe is not None:
                window.details.select_task(transcribe)
        else:
            window.nav.setCurrentRow(window.SETTINGS)

    saved: list[Path] = []
    current = ""

    def shoot(screens: Sequence[str], ready: Callable[[Any], bool] = lambda window: True) -> None:
        """Screen by screen, each in every language and theme at once: the work goes on
        meanwhile, and each screen should show it at one moment in every version."""
        nonlocal current
        for screen in screens:
            for language, scheme in PASSES:
                gui.theme.set_scheme(scheme)  # type: ignore[arg-type]
                if language != current:
                    gui.switch_language(language)
                    gui.window.resize(*WINDOW)
                    current = language
                    pump(1.0)  # the new window's snapshot, the banner's read
                show(screen, gui.window)
                _wait(lambda: ready(gui.window), 30, f"the {screen} screen", pump=True)
                pump(0.5)
                path = out / f"{screen}-{language}-{scheme}.png"
                gui.window.grab().save(str(path))
                saved.append(path)

    # First the restart review — the banner and its list — while the interrupted
    # transcription still runs (its entry waits for review until it is done); then the
    # entries are dismissed, as a user who has read them would, and the rest is shown.
    shoot(["restart-review"], lambda window: window.banner.isVisible())
    host.call(lambda app: app.control.resume_queue()).result(30)
    gui.window.banner.dismiss_all()
    _wait(lambda: not gui.window.banner.isVisible(), 30, "the banner dismissed", pump=True)
    # Until the speech-to-text runs (the transcodes resumed after the crash run beside it);
    # a short sample may be transcribed before it is seen running.
    _wait(lambda: progress("TRANSCRIBE") > 3 or transcribed(), 300, "a transcription", pump=True)

    def library_looked(window: Any) -> bool:
        """Every file looked at (its length and poster frame), the first one's details shown."""
        page = window.library
        materials = page.model.materials
        return (
            bool(materials)
            and all("look" in m.meta for m in materials)
            and page.details.material is not None
        )

    for screen in SCREENS[1:]:
        shoot([screen], library_looked if screen == "library" else lambda window: True)
    theme.apply(qapp, "auto")
    gui.window.retire()
    host.shutdown()
    host.join(60)
    return saved


# --- beside the window: the tray and the notifications -----------------------------------------


def desktop_tour(data_dir: Path, out: Path) -> list[Path]:
    """The tray icon's menu, and two notifications as toasts over the window, while tasks
    run (offscreen has neither a tray nor a notification server: both are drawn as Fredica
    draws them where the desktop has none)."""
    from PySide6.QtCore import QPoint, QRect, Qt
    from PySide6.QtGui import QColor, QFont, QLinearGradient, QPainter, QPixmap
    from PySide6.QtWidgets import QApplication, QScrollArea, QWidget

    from fredica_app.gui import theme
    from fredica_app.gui.app import GuiApp, make_qapplication
    from fredica_app.gui.host import Mode
    from fredica_app.gui.tray import Tray
    from fredica_app.gui.when_done import when_done_menu
    from fredica_app.settings import WatchFolder

    qapp = make_qapplication()
    gui = GuiApp(qapp, data_dir)
    gui.theme.set_scheme("light")
    gui.window.resize(1100, 680)
    gui.start()
    host = gui.host

    def pump(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            QApplication.processEvents()
            time.sleep(0.02)

    _wait(lambda: host.state.mode is Mode.ENGINE, 60, "the engine", pump=True)
    spec = {
        "tasks": [
            {"key": key, "type": "SLEEP", "payload": {"seconds": 600}}
            for key in ("transcode", "transcribe", "thumbnails")
        ]
        + [{"key": "export", "type": "NOOP", "depends_on": ["transcribe"]}]
    }
    host.call(lambda app: app.submit(spec)).result(30)
    _wait(lambda: gui.window.running_tasks == 3, 60, "the tasks", pump=True)
    pump(4.0)  # some progress, and a speed for the ETA
    saved: list[Path] = []

    # The tray's menu, under its icon on a desktop's top panel.
    tray = Tray()
    tray.attach(gui.window)
    tray.add_submenu(when_done_menu(gui.when_done))
    pump(1.0)
    tray.update_menu()
    tray.update_tooltip()
    menu = tray.menu
    menu.popup(QPoint(40, 60))
    pump(0.5)
    shot = menu.grab()
    menu.hide()
    panel, icon_size, pad = 30, 22, 16
    width = max(shot.width() + 2 * pad + 120, 420)
    height = panel + 6 + shot.height() + pad
    image = QPixmap(width, height)
    painter = QPainter(image)
    backdrop = QLinearGradient(0, 0, width, height)
    backdrop.setColorAt(0.0, QColor("#6d8fb8"))
    backdrop.setColorAt(1.0, QColor("#a3b8d4"))
    painter.fillRect(image.rect(), backdrop)
    painter.fillRect(QRect(0, 0, width, panel), QColor("#202124"))
    font = QFont()
    font.setPixelSize(13)
    painter.setFont(font)
    painter.setPen(QColor("#f1f1f1"))
    painter.drawText(
        QRect(0, 0, width - 12, panel),
        Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
        "14:32",
    )
    icon_x = width - 12 - 44 - icon_size
    for n, colour in enumerate(("#8ab4f8", "#81c995")):  # two other apps' tray icons
        painter.setBrush(QColor(colour))
        painter.setPen(Qt.PenStyle.NoPen)
        x = icon_x - (n + 1) * (icon_size + 10)
        painter.drawEllipse(x + 4, (panel - icon_size) // 2 + 4, icon_size - 8, icon_size - 8)
    painter.drawPixmap(icon_x, (panel - icon_size) // 2, tray.icon.icon().pixmap(icon_size))
    menu_x = min(icon_x, width - shot.width() - pad)
    painter.drawPixmap(menu_x, panel + 6, shot)
    painter.end()
    path = out / DESKTOP[0]
    image.save(str(path))
    saved.append(path)
    tray.hide()

    # Two notifications as toasts over the window (where there is no notification server).
    gui.window.nav.setCurrentRow(gui.window.QUEUE)
    gui.notifier.enabled = True
    gui.notifier.notify(
        "Done: Lecture 3 - Fourier series.mkv", "Subtitles from speech: finished.", run_id="x"
    )
    gui.notifier.notify(
        "Failed: Interview with the archivist.mp4",
        "TRANSCODE_MP4 failed: the disk is full (writing Interview with the archivist.mp4); "
        "free some space, then retry",
        run_id="y",
    )
    pump(1.0)
    path = out / DESKTOP[1]
    gui.window.grab().save(str(path))
    saved.append(path)
    for toast in gui.window.findChildren(QWidget, "toast"):
        toast.hide()

    # The settings page's desktop options and a watch folder.
    page = gui.window.settings
    gui.window.nav.setCurrentRow(gui.window.SETTINGS)
    _wait(lambda: page.current is not None, 60, "the settings", pump=True)
    incoming = data_dir.parent / "Videos" / "incoming"
    page.form.add_watch_folder(WatchFolder(folder=incoming, template="subtitles"))
    page.form.add_watch_folder(
        WatchFolder(folder=incoming.parent / "camera", recursive=False, patterns=["GH01*"])
    )
    pump(0.5)
    scroll = page.findChild(QScrollArea)
    if scroll is not None:
        scroll.verticalScrollBar().setValue(scroll.verticalScrollBar().maximum())
    pump(0.5)
    path = out / DESKTOP[2]
    gui.window.grab().save(str(path))
    saved.append(path)

    theme.apply(qapp, "auto")

    async def cancel_all(app: Any) -> None:  # a quick quit: nothing left to drain
        for run in await app.store.list_runs():
            await app.control.cancel(run.id)

    host.call(cancel_all).result(30)
    gui.window.retire()
    host.shutdown()
    host.join(60)
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the window's screens into PNG files.")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument(
        "--seconds", type=float, default=240, help="the main sample's length (default 240)"
    )
    parser.add_argument(
        "--desktop",
        action="store_true",
        help="render only the tray's menu and the notifications (quick)",
    )
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    _offscreen()
    with tempfile.TemporaryDirectory(prefix="fredica-screenshots-") as tmp:
        data_dir = Path(tmp) / "data"
        if args.desktop:
            paths = desktop_tour(data_dir, args.out_dir)
        else:
            paths = tour(data_dir, prepare(data_dir, args.seconds), args.out_dir)
        for path in paths:
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
