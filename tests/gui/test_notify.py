"""The notifier: a desktop notification server on D-Bus when there is one (a real private
bus and a FAKE server, ``fake_notifications``), else the tray's balloon, else a toast in the
window — offscreen, with neither a tray nor a bus, that last one, without a crash or a hang.
What was shown is recorded once, with the way it was shown."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEvent, QPointF
from PySide6.QtDBus import QDBusConnection
from PySide6.QtGui import QEnterEvent
from PySide6.QtWidgets import QApplication, QMainWindow, QSystemTrayIcon, QWidget

from fredica_app.gui import theme
from fredica_app.gui.icon import app_icon
from fredica_app.gui.notify import KEEP, MAX_FAILURES, Notifier, Shown
from fredica_app.gui.toast import DARK, LIGHT, MAX_TOASTS, Toast
from tests.gui.fake_notifications import (
    call_fake,
    fake_server,
    private_bus,
    received,
)
from tests.support.host import tool_mark

WAIT = 20_000
needs_dbus = tool_mark("dbus-daemon", "dbus")


@pytest.fixture
def window(qtbot: Any) -> QMainWindow:
    window = QMainWindow()
    window.setCentralWidget(QWidget())
    window.statusBar().showMessage("ready")
    window.resize(900, 600)
    qtbot.addWidget(window)
    window.show()
    return window


def visible_toasts(window: QWidget) -> list[Toast]:
    return [t for t in window.findChildren(Toast) if t.isVisible()]


def test_offscreen_a_notification_is_a_toast_whose_link_shows_the_run(
    qtbot: Any, window: QMainWindow
) -> None:
    notifier = Notifier()  # the default: offscreen has no desktop to notify on
    assert notifier.dbus_state == "off"
    notifier.set_window(window)
    opened: list[str] = []
    notifier.show_run.connect(opened.append)

    notifier.notify("Done: clip.mkv", "The transcode_mp4 run has finished.", run_id="run-1")

    assert notifier.shown == [
        Shown("Done: clip.mkv", "The transcode_mp4 run has finished.", "toast", "run-1")
    ]
    [toast] = visible_toasts(window)
    assert toast.title.text() == "Done: clip.mkv"
    assert toast.body.text() == "The transcode_mp4 run has finished."
    assert "Show" in toast.link.text()
    # In the window's bottom-right corner, above its status bar.
    geometry = toast.geometry()
    assert geometry.right() < window.width() and geometry.left() > window.width() // 2
    assert geometry.bottom() < window.height() - window.statusBar().height()
    toast.link.linkActivated.emit("show")
    assert opened == ["run-1"]
    qtbot.waitUntil(lambda: not visible_toasts(window), timeout=WAIT)


def test_a_notification_about_the_queue_opens_the_queue(qtbot: Any, window: QMainWindow) -> None:
    notifier = Notifier(bus=None)
    notifier.set_window(window)
    queue: list[bool] = []
    notifier.show_queue.connect(lambda: queue.append(True))
    notifier.notify("12 runs finished", "10 completed, 2 failed")
    [toast] = visible_toasts(window)
    assert "Open the queue" in toast.link.text()
    toast.link.linkActivated.emit("show")
    assert queue == [True]


def test_toasts_stack_up_and_go_away_by_themselves(qtbot: Any, window: QMainWindow) -> None:
    notifier = Notifier(bus=None)
    notifier.set_window(window, toast_ms=400)
    for n in range(MAX_TOASTS + 2):
        notifier.notify(f"Title {n}", f"Text {n}", run_id=f"run-{n}")
    toasts = visible_toasts(window)
    assert len(toasts) == MAX_TOASTS
    assert notifier.toasts is not None
    stacked = notifier.toasts.toasts
    assert [t.title.text() for t in stacked] == [f"Title {n}" for n in range(2, MAX_TOASTS + 2)]
    tops = [t.geometry().top() for t in stacked]
    assert tops == sorted(tops)  # oldest first: the newest lowest, the older ones above it
    bottoms = [t.geometry().bottom() for t in stacked]
    assert all(bottoms[n - 1] < tops[n] for n in range(1, len(stacked)))  # none overlaps
    # A resized window takes its toasts with it.
    window.resize(700, 500)
    qtbot.waitUntil(lambda: stacked[-1].geometry().right() < 700, timeout=WAIT)
    qtbot.waitUntil(lambda: not visible_toasts(window), timeout=WAIT)
    assert len(notifier.shown) == MAX_TOASTS + 2  # each shown once, as a toast
    assert {s.backend for s in notifier.shown} == {"toast"}


def test_a_toast_waits_while_the_pointer_rests_on_it(qtbot: Any, window: QMainWindow) -> None:
    notifier = Notifier(bus=None)
    notifier.set_window(window)
    notifier.notify("Done: clip.mkv", "finished", run_id="run-1")
    [toast] = visible_toasts(window)
    assert toast.counting
    inside = QPointF(10, 10)
    QApplication.sendEvent(toast, QEnterEvent(inside, inside, toast.mapToGlobal(inside)))
    assert not toast.counting
    QApplication.sendEvent(toast, QEvent(QEvent.Type.Leave))
    assert toast.counting
    toast.close_button.click()
    assert visible_toasts(window) == [] and not toast.counting
    QApplication.sendEvent(toast, QEvent(QEvent.Type.Leave))  # (a late one changes nothing)
    assert not toast.counting


def test_a_toast_reads_in_light_and_dark(qtbot: Any, window: QMainWindow) -> None:
    qapp = QApplication.instance()
    assert isinstance(qapp, QApplication)
    notifier = Notifier(bus=None)
    notifier.set_window(window)
    notifier.notify("Failed: clip.mkv", "TRANSCODE_MP4 failed: no space", run_id="run-2")
    [toast] = visible_toasts(window)
    try:
        theme.apply(qapp, "dark")
        assert DARK[0] in toast.styleSheet() and DARK[3] in toast.link.text()
        theme.apply(qapp, "light")
        assert LIGHT[0] in toast.styleSheet() and LIGHT[3] in toast.link.text()
    finally:
        theme.apply(qapp, "auto")


def test_notifications_off_show_nothing_but_what_is_essential(
    qtbot: Any, window: QMainWindow
) -> None:
    notifier = Notifier(enabled=False, bus=None)
    notifier.set_window(window)
    notifier.notify("Done: clip.mkv", "finished", run_id="run-1")
    assert notifier.shown == [] and visible_toasts(window) == []
    notifier.notify("Fredica is still running", "in the tray", essential=True)
    assert [s.title for s in notifier.shown] == ["Fredica is still running"]


def test_with_nowhere_to_show_it_is_logged_and_the_record_stays_bounded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notifier = Notifier(bus=None)
    with caplog.at_level("INFO", logger="fredica_app.gui.notify"):
        for n in range(KEEP + 10):
            notifier.notify(f"T{n}", "text")
    assert len(notifier.shown) == KEEP
    assert notifier.shown[0].title == "T10" and notifier.shown[-1].title == f"T{KEEP + 9}"
    assert {s.backend for s in notifier.shown} == {"log"}
    assert "notification: T0 — text" in caplog.text


def test_the_tray_balloon_comes_before_a_toast(qtbot: Any, window: QMainWindow) -> None:
    notifier = Notifier(bus=None)
    notifier.set_window(window)
    tray = QSystemTrayIcon(app_icon())
    tray.show()  # offscreen shows it nowhere, but it is "visible" and takes messages
    notifier.set_tray(tray)
    opened: list[str] = []
    notifier.show_run.connect(opened.append)
    try:
        notifier.notify("Done: clip.mkv", "finished", run_id="run-3")
        assert notifier.shown == [Shown("Done: clip.mkv", "finished", "tray", "run-3")]
        assert visible_toasts(window) == []
        tray.messageClicked.emit()
        assert opened == ["run-3"]
        tray.hide()  # a tray icon taken away: toasts again
        notifier.notify("Done: other.mkv", "finished", run_id="run-4")
        assert notifier.shown[-1].backend == "toast"
    finally:
        tray.hide()
        tray.deleteLater()


# --- D-Bus ----------------------------------------------------------------------------------


@pytest.fixture
def bus_address(tmp_path: Path) -> Iterator[str]:
    with private_bus(tmp_path / "bus") as address:
        yield address


def connection(address: str) -> Any:
    """A factory of a connection of its own to ``address`` (QtDBus keeps the session bus of
    a process; a named connection can go to any bus)."""
    name = f"fredica-notify-{time.monotonic_ns()}"
    return lambda: QDBusConnection.connectToBus(address, name)


def wait_ready(qtbot: Any, notifier: Notifier) -> None:
    qtbot.waitUntil(lambda: notifier.dbus_state != "probing", timeout=WAIT)


@needs_dbus
def test_the_desktop_server_gets_the_notification_and_a_click_opens_the_run(
    qtbot: Any, window: QMainWindow, bus_address: str, tmp_path: Path
) -> None:
    record = tmp_path / "received.jsonl"
    with fake_server(bus_address, record):
        notifier = Notifier(bus=connection(bus_address))
        notifier.set_window(window)
        opened: list[str] = []
        queue: list[bool] = []
        notifier.show_run.connect(opened.append)
        notifier.show_queue.connect(lambda: queue.append(True))
        try:
            # Sent before the server is found: held, then sent.
            notifier.notify("Failed: clip.mkv", "TRANSCODE_MP4 failed: no space", run_id="r-1")
            qtbot.waitUntil(lambda: len(notifier.shown) == 1, timeout=WAIT)
            assert notifier.dbus_state == "on"
            assert notifier.shown == [
                Shown("Failed: clip.mkv", "TRANSCODE_MP4 failed: no space", "dbus", "r-1")
            ]
            [got] = received(record)
            assert got["app_name"] == "Fredica" and got["replaces_id"] == 0
            assert (got["summary"], got["body"]) == (
                "Failed: clip.mkv",
                "TRANSCODE_MP4 failed: no space",
            )
            assert got["actions"] == ["default", "Open", "show", "Show"]
            assert got["hints"] == {"desktop-entry": "fredica"}
            assert visible_toasts(window) == []  # shown by the desktop, not in the window

            call_fake(bus_address, "Invoke", "default")  # the user clicks it
            qtbot.waitUntil(lambda: opened == ["r-1"], timeout=WAIT)

            notifier.notify("Disk nearly full", "1 GB free", urgent=True)
            qtbot.waitUntil(lambda: len(received(record)) == 2, timeout=WAIT)
            assert received(record)[1]["hints"] == {"desktop-entry": "fredica", "urgency": 2}
            call_fake(bus_address, "Invoke", "show")
            qtbot.waitUntil(lambda: queue == [True], timeout=WAIT)
            call_fake(bus_address, "Invoke", "something-else")  # not an action of ours
            notifier.notify("Done: b.mkv", "finished", run_id="r-2")
            qtbot.waitUntil(lambda: len(notifier.shown) == 3, timeout=WAIT)
            assert opened == ["r-1"] and queue == [True]
        finally:
            notifier.close()


@needs_dbus
def test_a_hung_server_costs_a_toast_not_the_window_and_is_given_up(
    qtbot: Any, window: QMainWindow, bus_address: str, tmp_path: Path
) -> None:
    record = tmp_path / "received.jsonl"
    with fake_server(bus_address, record):
        notifier = Notifier(bus=connection(bus_address), call_ms=500)
        notifier.set_window(window)
        try:
            wait_ready(qtbot, notifier)
            assert notifier.dbus_state == "on"
            for n in range(MAX_FAILURES):
                call_fake(bus_address, "Stall", 1.5)
                notifier.notify(f"Title {n}", "text")
                # The GUI thread goes on meanwhile: the call waits on the D-Bus thread.
                assert notifier.shown[n:] == []
                qtbot.waitUntil(lambda n=n: len(notifier.shown) == n + 1, timeout=WAIT)
                assert notifier.shown[n].backend == "toast"
            assert notifier.dbus_state == "off"  # given up after the failures in a row
            notifier.notify("After", "text")
            assert notifier.shown[-1] == Shown("After", "text", "toast")
            assert received(record) == []
        finally:
            notifier.close()


@needs_dbus
def test_a_bus_without_a_notification_server_means_toasts(
    qtbot: Any, window: QMainWindow, bus_address: str
) -> None:
    notifier = Notifier(bus=connection(bus_address))
    notifier.set_window(window)
    try:
        notifier.notify("Done: clip.mkv", "finished", run_id="run-1")
        qtbot.waitUntil(lambda: len(notifier.shown) == 1, timeout=WAIT)
        assert notifier.dbus_state == "off"
        assert notifier.shown == [Shown("Done: clip.mkv", "finished", "toast", "run-1")]
    finally:
        notifier.close()


def test_no_bus_at_all_means_toasts(qtbot: Any, window: QMainWindow, tmp_path: Path) -> None:
    notifier = Notifier(bus=connection(f"unix:path={tmp_path / 'no-bus-here'}"))
    notifier.set_window(window)
    try:
        notifier.notify("Done: clip.mkv", "finished")
        qtbot.waitUntil(lambda: len(notifier.shown) == 1, timeout=WAIT)
        assert notifier.dbus_state == "off"
        assert notifier.shown[0].backend == "toast"
    finally:
        notifier.close()
