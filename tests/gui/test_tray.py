"""The tray icon over a real application (host, engine, window offscreen): its menu pauses
and resumes the queue for real, its tooltip and badge follow the running tasks, and closing
the window while tasks run hides it in the tray while the engine goes on.

Offscreen has no system tray: ``QSystemTrayIcon.isSystemTrayAvailable`` is replaced by a
FAKE that says there is one (the icon itself is real; it is shown nowhere)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from fredica_app.gui.app import TOLD_ABOUT_TRAY, GuiApp
from fredica_app.gui.host import Mode
from fredica_app.gui.icon import app_icon, badged_icon
from fredica_app.gui.persist import ViewState
from fredica_app.gui.settings_work import Saved
from fredica_app.gui.tray import QueueProgress, Tray
from fredica_app.settings import Settings
from tests.gui.factory import make_task, running
from tests.gui.hosting import call
from workers.changes import Tombstone
from workers.states import TaskStatus

WAIT = 30_000


@pytest.fixture
def fake_tray(monkeypatch: pytest.MonkeyPatch) -> None:
    """A FAKE system tray: offscreen has none, this says there is one."""
    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))


@contextmanager
def started(qtbot: Any, data_dir: Path, qapp: Any, *, hidden: bool = False) -> Iterator[GuiApp]:
    """The desktop app on ``data_dir``, its engine running; quit (and joined) at the end,
    after cancelling what still runs (a graceful stop would give it ten seconds to end)."""
    gui = GuiApp(qapp, data_dir)
    qtbot.addWidget(gui.window)
    gui.start(hidden=hidden)
    qtbot.waitUntil(lambda: gui.host.state.mode is Mode.ENGINE, timeout=WAIT)
    try:
        yield gui
    finally:
        if gui.host.state.mode is not Mode.STOPPED:
            for run_id in call(gui.host, unfinished_runs):
                call(gui.host, lambda app, r=run_id: app.control.cancel(r))
            qtbot.waitUntil(lambda: gui.window.running_tasks == 0, timeout=WAIT)
            gui.quit()
        assert gui.host.join(60), "the host's thread did not end"
        if gui.tray is not None:
            gui.tray.hide()


async def unfinished_runs(app: Any) -> list[str]:
    runs = await app.store.list_runs()
    return [r.id for r in runs if r.status.value in ("pending", "running")]


def asked_to_quit(window: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the quit question (answered no: the test goes on with the window)."""
    asked: list[int] = []
    monkeypatch.setattr(window, "confirm_quit", lambda n: asked.append(n) or False)
    return asked


def sleeps(seconds: float, n: int) -> dict[str, Any]:
    return {
        "tasks": [
            {"key": f"s{i}", "type": "SLEEP", "payload": {"seconds": seconds}} for i in range(n)
        ]
    }


def image(icon: Any) -> QImage:
    return icon.pixmap(32, 32).toImage()


def queue_paused(gui: GuiApp) -> bool:
    async def read(app: Any) -> bool:
        return bool(app.control.queue_paused)

    return call(gui.host, read)


def test_the_menu_pauses_and_resumes_the_queue_for_real(
    qtbot: Any, qapp: Any, data_dir: Path, fake_tray: None
) -> None:
    with started(qtbot, data_dir, qapp) as gui:
        tray = gui.tray
        assert tray is not None and tray.icon.isVisible()
        assert tray.icon.contextMenu() is tray.menu
        tray.update_menu()
        assert tray.pause_action.isEnabled() and not tray.resume_action.isEnabled()
        assert tray.show_action.text() == "Hide Fredica"  # the window is shown

        tray.pause_action.trigger()
        qtbot.waitUntil(lambda: queue_paused(gui), timeout=WAIT)
        toggle = gui.window.queue.commands.pause_queue
        assert toggle.isChecked()  # the queue page says the same
        qtbot.waitUntil(lambda: "[paused]" in gui.window.windowTitle(), timeout=WAIT)
        tray.update_menu()
        assert not tray.pause_action.isEnabled() and tray.resume_action.isEnabled()
        assert "Queue paused" in tray.icon.toolTip() or "Queue paused" in tray.tooltip()

        tray.resume_action.trigger()
        qtbot.waitUntil(lambda: not queue_paused(gui), timeout=WAIT)
        assert not toggle.isChecked()
        tray.update_menu()
        assert tray.pause_action.isEnabled() and not tray.resume_action.isEnabled()


def test_the_tooltip_and_the_badge_follow_the_running_tasks(
    qtbot: Any, qapp: Any, data_dir: Path, fake_tray: None
) -> None:
    with started(qtbot, data_dir, qapp) as gui:
        tray = gui.tray
        assert tray is not None
        assert image(tray.icon.icon()) == image(app_icon())  # nothing runs: no badge
        qtbot.waitUntil(lambda: "Nothing to do" in tray.icon.toolTip(), timeout=WAIT)

        created = call(gui.host, lambda app: app.submit(sleeps(60, 2)))
        qtbot.waitUntil(lambda: tray.running == 2, timeout=WAIT)
        assert image(tray.icon.icon()) == image(badged_icon(2))
        assert image(tray.icon.icon()) != image(app_icon())
        qtbot.waitUntil(lambda: "2 running · 0 queued" in tray.icon.toolTip(), timeout=WAIT)
        qtbot.waitUntil(lambda: "% done" in tray.icon.toolTip(), timeout=WAIT)
        qtbot.waitUntil(lambda: "left" in tray.icon.toolTip(), timeout=WAIT)  # the ETA

        call(gui.host, lambda app: app.control.apply("cancel", created.task_ids["s0"]))
        qtbot.waitUntil(lambda: tray.running == 1, timeout=WAIT)
        assert image(tray.icon.icon()) == image(badged_icon(1))
        call(gui.host, lambda app: app.control.apply("cancel", created.task_ids["s1"]))
        qtbot.waitUntil(lambda: tray.running == 0, timeout=WAIT)
        assert image(tray.icon.icon()) == image(app_icon())
        qtbot.waitUntil(lambda: "Nothing to do" in tray.icon.toolTip(), timeout=WAIT)


def test_closing_while_tasks_run_hides_the_window_and_the_work_goes_on(
    qtbot: Any, qapp: Any, data_dir: Path, fake_tray: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with started(qtbot, data_dir, qapp) as gui:
        tray = gui.tray
        assert tray is not None
        created = call(gui.host, lambda app: app.submit(sleeps(60, 1)))
        task_id = created.task_ids["s0"]
        qtbot.waitUntil(lambda: gui.window.running_tasks == 1, timeout=WAIT)

        gui.window.close()
        assert not gui.window.isVisible()
        assert gui.host.state.mode is Mode.ENGINE  # nothing stopped
        told = [s for s in gui.notifier.shown if s.title == "Fredica is still running"]
        assert len(told) == 1 and told[0].backend == "tray"
        assert str(ViewState(data_dir).value(TOLD_ABOUT_TRAY)).lower() == "true"
        tray.update_menu()
        assert tray.show_action.text() == "Show Fredica"

        # A click on the icon brings it back; closing again says nothing new.
        tray.icon.activated.emit(QSystemTrayIcon.ActivationReason.Trigger)
        assert gui.window.isVisible()
        gui.window.close()
        assert not gui.window.isVisible()
        assert [s.title for s in gui.notifier.shown].count("Fredica is still running") == 1
        status = call(gui.host, lambda app: app.store.get_task(task_id)).status
        assert status is TaskStatus.RUNNING  # the work went on

        # Quit from the tray: as File > Quit, asked first while tasks run (declined here).
        asked = asked_to_quit(gui.window, monkeypatch)
        tray.quit_action.trigger()
        assert asked == [1]
        assert gui.host.state.mode is Mode.ENGINE
        call(gui.host, lambda app: app.control.cancel(task_id))
        qtbot.waitUntil(lambda: gui.window.running_tasks == 0, timeout=WAIT)
        with qtbot.waitSignal(gui.window.closed, timeout=60_000):
            tray.quit_action.trigger()  # nothing runs: quits at once
        assert asked == [1]
        assert gui.host.join(60)
        assert not tray.icon.isVisible()


def test_the_first_time_message_is_remembered_across_starts(
    qtbot: Any, qapp: Any, data_dir: Path, fake_tray: None
) -> None:
    data_dir.mkdir(parents=True)
    state = ViewState(data_dir)
    state.set_value(TOLD_ABOUT_TRAY, True)
    state.sync()
    with started(qtbot, data_dir, qapp) as gui:
        call(gui.host, lambda app: app.submit(sleeps(60, 1)))
        qtbot.waitUntil(lambda: gui.window.running_tasks == 1, timeout=WAIT)
        gui.window.close()
        assert not gui.window.isVisible()
        assert gui.notifier.shown == []  # told in an earlier session already


def test_closing_quits_with_nothing_running_or_with_the_setting_off(
    qtbot: Any, qapp: Any, data_dir: Path, fake_tray: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with started(qtbot, data_dir, qapp) as gui:
        assert gui.tray is not None and gui.window.running_tasks == 0
        with qtbot.waitSignal(gui.window.closed, timeout=60_000):
            gui.window.close()
    data_dir.joinpath("settings.json").write_text(json.dumps({"close_to_tray": False}))
    with started(qtbot, data_dir, qapp) as gui:
        assert gui.tray is not None and not gui.close_to_tray
        call(gui.host, lambda app: app.submit(sleeps(60, 1)))
        qtbot.waitUntil(lambda: gui.window.running_tasks == 1, timeout=WAIT)
        asked = asked_to_quit(gui.window, monkeypatch)
        gui.window.close()  # quitting, not hiding: asked first
        assert asked == [1] and gui.window.isVisible()
        assert gui.notifier.shown == []


def test_without_a_tray_closing_quits_as_it_always_did(
    qtbot: Any, qapp: Any, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not QSystemTrayIcon.isSystemTrayAvailable()  # offscreen: none
    with started(qtbot, data_dir, qapp) as gui:
        assert gui.tray is None
        call(gui.host, lambda app: app.submit(sleeps(60, 1)))
        qtbot.waitUntil(lambda: gui.window.running_tasks == 1, timeout=WAIT)
        asked = asked_to_quit(gui.window, monkeypatch)
        gui.window.close()
        assert asked == [1] and gui.window.isVisible()


def test_saved_settings_apply_at_once(
    qtbot: Any, qapp: Any, data_dir: Path, fake_tray: None
) -> None:
    with started(qtbot, data_dir, qapp) as gui:
        assert gui.close_to_tray and gui.notifier.enabled
        saved = Saved(settings=Settings(close_to_tray=False, notifications=False))
        gui.window.settings.saved.emit(saved)
        assert not gui.close_to_tray and not gui.notifier.enabled
        gui.window.settings.saved.emit(Saved(errors={}))  # refused: nothing changes
        assert not gui.close_to_tray and not gui.notifier.enabled


def test_starting_hidden_needs_a_tray(
    qtbot: Any, qapp: Any, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with started(qtbot, data_dir, qapp, hidden=True) as gui:
        assert gui.tray is None and gui.window.isVisible()  # nowhere else to find it
    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    with started(qtbot, data_dir, qapp, hidden=True) as gui:
        assert gui.tray is not None and not gui.window.isVisible()
        gui.tray.icon.activated.emit(QSystemTrayIcon.ActivationReason.DoubleClick)
        assert gui.window.isVisible()


def test_a_submenu_goes_between_the_queue_and_quit(qapp: Any, fake_tray: None) -> None:
    tray = Tray.create()
    assert tray is not None
    try:
        when_done = QMenu("When done")
        tray.add_submenu(when_done)
        actions = tray.menu.actions()
        place = actions.index(when_done.menuAction())
        assert actions.index(tray.resume_action) < place < actions.index(tray.quit_action)
    finally:
        tray.hide()


# --- the work under way, as the tooltip counts it ---------------------------------------------


def test_progress_counts_the_work_since_the_queue_was_idle() -> None:
    now = [0.0]
    progress = QueueProgress(clock=lambda: now[0])
    assert progress.percent is None and progress.eta is None
    done_before = make_task(9, status=TaskStatus.COMPLETED, progress=100.0)
    progress.load([done_before, running(1, 20.0), make_task(2, status=TaskStatus.PENDING)])
    assert progress.percent == pytest.approx(10.0)  # (20 + 0) / 2: the old one is not counted
    for t in range(1, 11):
        now[0] = float(t)
        progress.apply([running(1, 20.0 + 4 * t)])  # 2 %/s overall
    assert progress.percent == pytest.approx(30.0)
    assert progress.eta == pytest.approx(35.0)  # 70 % left at 2 %/s
    progress.apply([make_task(1, status=TaskStatus.COMPLETED, progress=100.0)])
    assert progress.percent == pytest.approx(50.0)  # done counts 100 %
    progress.apply([Tombstone("run", "run-0001", "run-0001", 0.0)])  # not a task: no change
    assert progress.percent == pytest.approx(50.0)
    progress.apply([Tombstone("task", "task-00002", "run-0001", 0.0)])
    # The last unfinished task deleted: idle, and counting starts again.
    assert progress.percent is None and progress.eta is None
    progress.apply([make_task(3, status=TaskStatus.CANCELLED)])  # finished, never seen: no work
    assert progress.percent is None
    progress.apply([running(4, 50.0)])
    assert progress.percent == pytest.approx(50.0)


def test_when_done_chosen_in_the_tray_acts_once_the_queue_the_window_shows_is_done(
    qtbot: Any, data_dir: Path, qapp: Any, fake_tray: None
) -> None:
    with started(qtbot, data_dir, qapp) as gui:
        assert gui.tray is not None
        [tray_menu] = [
            a.menu() for a in gui.tray.icon.contextMenu().actions() if isinstance(a.menu(), QMenu)
        ]
        [notify] = [a for a in tray_menu.actions() if a.data() == "notify"]
        notify.trigger()
        # The window's menu shows the same choice (one controller for both).
        [window_menu] = [
            a.menu()
            for a in gui.window.menuBar().actions()
            if a.menu() is not None and a.menu().objectName() == "when-done-menu"
        ]
        assert [a.data() for a in window_menu.actions() if a.isChecked()] == ["notify"]
        call(gui.host, lambda app: app.submit(sleeps(1.0, 1)))
        qtbot.waitUntil(
            lambda: any("queue is done" in s.title for s in gui.notifier.shown), timeout=WAIT
        )
        assert sum("queue is done" in s.title for s in gui.notifier.shown) == 1
