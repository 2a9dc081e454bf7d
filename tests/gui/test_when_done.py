"""The window's "When done" choice: each action on the edge from busy to idle, the countdown
before sleep or shut down (real widgets, offscreen), its cancel, new work cancelling it. The
commands that would suspend or power off this machine go to a FAKE runner."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog

from fredica_app.desktop.power import WhenDone, power_command
from fredica_app.gui.when_done import (
    CountdownDialog,
    WhenDoneController,
    queue_is_busy,
    when_done_menu,
)
from fredica_app.views.queue_state import Badge

WAIT = 30_000  # ms: a shared, slow machine
SCREENSHOT = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "when-done-countdown.png"
)


class FakeRunner:
    """A FAKE command runner (the real one would suspend or power off this machine): records
    each argv and the thread it ran on, answers ``code``."""

    def __init__(self, code: int = 0) -> None:
        self.code = code
        self.calls: list[list[str]] = []
        self.threads: list[str] = []

    def __call__(self, argv: list[str]) -> int:
        self.calls.append(list(argv))
        self.threads.append(threading.current_thread().name)
        return self.code


class Harness:
    """A controller with a fake runner, a 1 s countdown and a record of what it did."""

    def __init__(self, qtbot: Any, code: int = 0, platform: str = "linux") -> None:
        self.runner = FakeRunner(code)
        self.notes: list[tuple[str, str]] = []
        self.quits: list[bool] = []
        self.failures: list[str] = []
        self.performed: list[str] = []
        self.controller = WhenDoneController(
            lambda title, body: self.notes.append((title, body)),
            self.runner,
            platform=platform,
            countdown_seconds=1.0,
        )
        self.controller.quit_requested.connect(lambda: self.quits.append(True))
        self.controller.failed.connect(self.failures.append)
        self.controller.performed.connect(self.performed.append)
        self.qtbot = qtbot

    def work_then_done(self) -> None:
        self.controller.queue_busy(True)
        self.controller.queue_busy(False)


@pytest.fixture
def harness(qtbot: Any) -> Harness:
    return Harness(qtbot)


def test_nothing_by_default_and_idle_to_idle_does_nothing(harness: Harness, qtbot: Any) -> None:
    c = harness.controller
    assert c.action is WhenDone.NOTHING
    harness.work_then_done()
    c.set_action(WhenDone.SHUTDOWN)
    c.queue_busy(False)  # idle → idle: no edge
    c.queue_busy(False)
    qtbot.wait(100)
    assert c.dialog is None and harness.runner.calls == [] and harness.notes == []


def test_notify_on_the_edge_and_the_choice_stays(harness: Harness) -> None:
    c = harness.controller
    c.set_action(WhenDone.NOTIFY)
    harness.work_then_done()
    assert harness.notes == [("The queue is done", "Every task has finished.")]
    assert c.action is WhenDone.NOTIFY
    harness.work_then_done()
    assert len(harness.notes) == 2 and harness.runner.calls == []


def test_quit_asks_to_quit_once_and_goes_back_to_nothing(harness: Harness) -> None:
    c = harness.controller
    c.set_action("quit")
    c.queue_busy(True)
    assert harness.quits == []
    c.queue_busy(False)
    assert harness.quits == [True] and c.action is WhenDone.NOTHING
    harness.work_then_done()
    assert harness.quits == [True]


@pytest.mark.parametrize("action", [WhenDone.SLEEP, WhenDone.SHUTDOWN])
def test_sleep_or_shutdown_counts_down_then_runs_the_command_off_the_gui_thread(
    harness: Harness, qtbot: Any, action: WhenDone
) -> None:
    c = harness.controller
    c.set_action(action)
    harness.work_then_done()
    dialog = c.dialog
    assert dialog is not None and dialog.isVisible() and dialog.action is action
    assert harness.runner.calls == []  # not before the countdown has run out
    qtbot.waitUntil(lambda: harness.performed == [action.value], timeout=WAIT)
    assert harness.runner.calls == [power_command(action, "linux")]
    assert harness.runner.threads == ["fredica-when-done"]
    assert c.dialog is None and c.action is WhenDone.NOTHING  # a machine that wakes stays on
    harness.work_then_done()
    qtbot.wait(100)
    assert c.dialog is None and len(harness.runner.calls) == 1


def test_now_does_not_wait_for_the_countdown(qtbot: Any) -> None:
    harness = Harness(qtbot)
    harness.controller.countdown_seconds = 600
    harness.controller.set_action(WhenDone.SHUTDOWN)
    harness.work_then_done()
    dialog = harness.controller.dialog
    assert dialog is not None
    qtbot.mouseClick(dialog.now_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: harness.runner.calls == [["systemctl", "poweroff"]], timeout=WAIT)


def test_cancel_in_the_dialog_runs_nothing_and_resets_the_choice(
    harness: Harness, qtbot: Any
) -> None:
    c = harness.controller
    c.set_action(WhenDone.SHUTDOWN)
    harness.work_then_done()
    dialog = c.dialog
    assert dialog is not None
    qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    assert c.dialog is None and c.action is WhenDone.NOTHING
    qtbot.wait(1500)  # past the countdown's end: nothing may run any more
    assert harness.runner.calls == [] and harness.performed == []


def test_escape_cancels_too(harness: Harness, qtbot: Any) -> None:
    c = harness.controller
    c.countdown_seconds = 600
    c.set_action(WhenDone.SLEEP)
    harness.work_then_done()
    dialog = c.dialog
    assert dialog is not None
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    assert c.dialog is None and harness.runner.calls == []


def test_new_work_during_the_countdown_cancels_it_and_keeps_the_choice(
    harness: Harness, qtbot: Any
) -> None:
    c = harness.controller
    c.set_action(WhenDone.SLEEP)
    harness.work_then_done()
    first = c.dialog
    assert first is not None
    c.queue_busy(True)  # more work came in
    assert c.dialog is None and first.result() == QDialog.DialogCode.Rejected
    qtbot.wait(1500)
    assert harness.runner.calls == [] and c.action is WhenDone.SLEEP
    c.queue_busy(False)  # that work is done: the countdown again, to its end
    qtbot.waitUntil(lambda: harness.runner.calls == [["systemctl", "suspend"]], timeout=WAIT)


def test_a_failing_command_is_reported_and_notified(qtbot: Any) -> None:
    harness = Harness(qtbot, code=1)
    harness.controller.set_action(WhenDone.SHUTDOWN)
    harness.work_then_done()
    qtbot.waitUntil(lambda: bool(harness.failures), timeout=WAIT)
    [message] = harness.failures
    assert message.startswith("could not shut the computer down: systemctl exited 1")
    assert harness.notes == [("Fredica", message)] and harness.performed == []


def test_a_system_without_the_command_says_so_without_a_countdown(qtbot: Any) -> None:
    harness = Harness(qtbot, platform="sunos5")
    c = harness.controller
    assert not c.supports(WhenDone.SLEEP) and c.supports(WhenDone.NOTIFY)
    c.set_action(WhenDone.SLEEP)
    harness.work_then_done()
    assert c.dialog is None and harness.runner.calls == []
    assert "cannot put the computer to sleep on this system (sunos5)" in harness.failures[0]


def test_changing_the_choice_during_the_countdown_cancels_it(harness: Harness, qtbot: Any) -> None:
    c = harness.controller
    c.set_action(WhenDone.SHUTDOWN)
    harness.work_then_done()
    assert c.dialog is not None
    c.set_action(WhenDone.NOTIFY)
    assert c.dialog is None and c.action is WhenDone.NOTIFY
    qtbot.wait(1500)
    assert harness.runner.calls == []


def test_the_menu_reflects_and_sets_the_choice(harness: Harness, qtbot: Any) -> None:
    c = harness.controller
    menu = when_done_menu(c)
    qtbot.addWidget(menu)
    items = {a.data(): a for a in menu.actions()}
    assert menu.title() == "When done"
    assert [a.text() for a in menu.actions()] == [
        "Do nothing",
        "Notify me",
        "Quit Fredica",
        "Sleep",
        "Shut down",
    ]
    assert all(a.isCheckable() for a in items.values())
    assert [v for v, a in items.items() if a.isChecked()] == ["nothing"]
    items["sleep"].trigger()
    assert c.action is WhenDone.SLEEP
    assert [v for v, a in items.items() if a.isChecked()] == ["sleep"]
    c.set_action(WhenDone.NOTIFY)  # changed elsewhere (the tray's menu): shown here
    assert [v for v, a in items.items() if a.isChecked()] == ["notify"]
    menu.deleteLater()
    qtbot.wait(50)
    c.set_action(WhenDone.QUIT)  # the menu is gone: nothing breaks


def test_the_menu_disables_what_the_system_cannot_do(qtbot: Any) -> None:
    harness = Harness(qtbot, platform="sunos5")
    menu = when_done_menu(harness.controller)
    qtbot.addWidget(menu)
    enabled = {a.data(): a.isEnabled() for a in menu.actions()}
    assert enabled == {
        "nothing": True,
        "notify": True,
        "quit": True,
        "sleep": False,
        "shutdown": False,
    }


def test_queue_is_busy_from_the_counts() -> None:
    assert not queue_is_busy({})
    assert not queue_is_busy({Badge.DONE: 3, Badge.PAUSED: 1, Badge.WAITING: 2})
    assert queue_is_busy({Badge.RUNNING: 1})
    assert queue_is_busy({Badge.QUEUED: 1, Badge.DONE: 4})


def test_the_countdown_dialog_text_and_screenshot(qtbot: Any) -> None:
    now = [1000.0]
    dialog = CountdownDialog(WhenDone.SHUTDOWN, 60, clock=lambda: now[0])
    qtbot.addWidget(dialog)
    assert dialog.message.text() == "Fredica will shut the computer down in 60 s."
    now[0] += 10.2
    dialog._tick()
    assert dialog.message.text() == "Fredica will shut the computer down in 50 s."
    assert dialog.now_button.text() == "Shut down now"
    assert dialog.cancel_button.isDefault()
    dialog.open()
    qtbot.waitExposed(dialog)
    image = dialog.grab()
    assert image.width() >= 380 and image.height() >= 120
    if os.environ.get("FREDICA_WRITE_SCREENSHOTS"):  # documentation: docs/screenshots/
        image.save(str(SCREENSHOT))
    now[0] += 60
    dialog._tick()  # the time is up
    assert dialog.result() == QDialog.DialogCode.Accepted


def test_the_sleep_dialog_says_sleep(qtbot: Any) -> None:
    dialog = CountdownDialog(WhenDone.SLEEP, 5)
    qtbot.addWidget(dialog)
    assert dialog.message.text() == "Fredica will put the computer to sleep in 5 s."
    assert dialog.now_button.text() == "Sleep now"
    with pytest.raises(ValueError):
        CountdownDialog(WhenDone.NOTIFY)
