"""The main window over a real application host: quitting (asked while tasks run, then a
graceful stop that the next start resumes), attaching to a ``fredica worker`` already running
on the data directory, the queue's pause in the title, what the window remembers, and
``fredica`` with no display."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fredica_app.cli import main as cli_main
from fredica_app.gui.host import AppHost, Mode
from fredica_app.gui.window import MainWindow
from tests.gui.hosting import call
from workers.states import TaskStatus

EXE = str(Path(sys.executable).parent / "fredica")


def sleep_run(seconds: float, n: int = 1) -> dict[str, Any]:
    return {
        "tasks": [
            {"key": f"s{i}", "type": "SLEEP", "payload": {"seconds": seconds}} for i in range(n)
        ]
    }


def open_window(qtbot: Any, host: AppHost, data_dir: Path) -> MainWindow:
    window = MainWindow(host, data_dir)
    qtbot.addWidget(window)
    window.show()
    return window


def wait_status(qtbot: Any, host: AppHost, task_id: str, status: TaskStatus) -> Any:
    qtbot.waitUntil(
        lambda: call(host, lambda app: app.store.get_task(task_id)).status is status,
        timeout=30_000,
    )
    return call(host, lambda app: app.store.get_task(task_id))


def test_quitting_while_tasks_run_asks_then_stops_gracefully_for_the_next_start(
    qtbot: Any, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = AppHost(data_dir)
    window = open_window(qtbot, host, data_dir)
    host.start()
    qtbot.waitUntil(lambda: host.state.mode is Mode.ENGINE, timeout=30_000)
    created = call(host, lambda app: app.submit(sleep_run(60)))
    task_id = created.task_ids["s0"]
    wait_status(qtbot, host, task_id, TaskStatus.RUNNING)
    qtbot.waitUntil(lambda: window.running_tasks == 1, timeout=10_000)

    asked: list[int] = []
    monkeypatch.setattr(window, "confirm_quit", lambda n: asked.append(n) or False)
    window.close()
    assert asked == [1]
    assert window.isVisible() and host.state.mode is Mode.ENGINE  # declined: nothing stops

    monkeypatch.setattr(window, "confirm_quit", lambda n: asked.append(n) or True)
    with qtbot.waitSignal(window.closed, timeout=60_000):
        window.close()
    assert asked == [1, 1]
    assert host.join(30)
    assert not window.isVisible()

    # The next start resumes it: released by the shutdown, not counted as an interruption.
    again = AppHost(data_dir)
    again.start()
    qtbot.waitUntil(lambda: again.state.mode is Mode.ENGINE, timeout=30_000)
    try:
        report = again.state.recovery
        assert report is not None and (report.resumed, report.crashed) == (1, 0)
        task = wait_status(qtbot, again, task_id, TaskStatus.RUNNING)
        assert task.interruptions == 0
        assert task.attempt == 2
    finally:
        again.shutdown()
        assert again.join(60)


def test_quitting_with_nothing_running_does_not_ask(
    qtbot: Any, app_host: AppHost, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = open_window(qtbot, app_host, data_dir)
    monkeypatch.setattr(window, "confirm_quit", lambda n: pytest.fail("asked"))
    with qtbot.waitSignal(window.closed, timeout=60_000):
        window.close()


def test_the_title_says_paused_while_the_queue_is_paused(
    qtbot: Any, app_host: AppHost, data_dir: Path
) -> None:
    window = open_window(qtbot, app_host, data_dir)
    assert "[paused]" not in window.windowTitle()
    # As `fredica pause-queue` does it, from outside the window.
    call(app_host, _set_queue_paused(True))
    qtbot.waitUntil(lambda: "[paused]" in window.windowTitle(), timeout=5_000)
    call(app_host, _set_queue_paused(False))
    qtbot.waitUntil(lambda: "[paused]" not in window.windowTitle(), timeout=5_000)


def _set_queue_paused(paused: bool) -> Any:
    async def work(app: Any) -> None:
        app.set_queue_paused(paused)

    return work


def test_the_window_remembers_its_size_and_page(
    qtbot: Any, app_host: AppHost, data_dir: Path
) -> None:
    window = open_window(qtbot, app_host, data_dir)
    window.resize(700, 500)
    window.nav.setCurrentRow(MainWindow.LIBRARY)
    window.retire()  # closes it without stopping the host: the state is saved
    again = open_window(qtbot, app_host, data_dir)
    assert (again.width(), again.height()) == (700, 500)
    assert again.nav.currentRow() == MainWindow.LIBRARY


@pytest.mark.slow
def test_with_a_worker_running_the_window_attaches_then_takes_over_when_it_stops(
    qtbot: Any, data_dir: Path
) -> None:
    worker = subprocess.Popen(
        [EXE, "--data-dir", str(data_dir), "worker"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lock_owner = data_dir / "engine.lock.owner"
        deadline = time.monotonic() + 30
        while not lock_owner.exists():
            assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.05)

        host = AppHost(data_dir)
        window = open_window(qtbot, host, data_dir)
        host.start()
        qtbot.waitUntil(lambda: host.state.mode is Mode.ATTACHED, timeout=30_000)
        qtbot.waitUntil(lambda: "Attached" in window.mode_label.text(), timeout=5_000)
        assert host.engine is None

        # Work submitted from the window runs in the worker; the window sees it, and its
        # pause reaches the worker's running task through the database.
        created = call(host, lambda app: app.submit(sleep_run(60)))
        task_id = created.task_ids["s0"]
        wait_status(qtbot, host, task_id, TaskStatus.RUNNING)
        qtbot.waitUntil(lambda: window.running_tasks == 1, timeout=10_000)
        call(host, lambda app: app.control.pause(task_id))
        qtbot.waitUntil(
            lambda: call(host, lambda app: app.store.get_task(task_id)).is_paused,
            timeout=15_000,
        )

        # The worker stops (gracefully): the window's own engine takes over.
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
        qtbot.waitUntil(lambda: host.state.mode is Mode.ENGINE, timeout=30_000)
        qtbot.waitUntil(
            lambda: "Processing in this window" in window.mode_label.text(), timeout=5_000
        )
        call(host, lambda app: app.control.cancel(task_id))
        wait_status(qtbot, host, task_id, TaskStatus.CANCELLED)
        with qtbot.waitSignal(window.closed, timeout=60_000):
            window.close()
        assert host.join(30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(30)
        if worker.stderr is not None:
            worker.stderr.close()


def test_without_a_display_fredica_says_what_to_do(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    if sys.platform in ("win32", "darwin"):
        pytest.skip("always a display there")
    assert cli_main(["--data-dir", str(tmp_path), "gui"]) == 1
    err = capsys.readouterr().err
    assert "no display" in err and "fredica process" in err
    assert err.count("\n") == 1


def test_a_data_directory_that_cannot_be_opened_is_said_and_nothing_hangs(
    qtbot: Any, data_dir: Path
) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "fredica.db").write_text("hello")  # not a Fredica database
    host = AppHost(data_dir)
    window = open_window(qtbot, host, data_dir)
    failures: list[str] = []
    host.failed.connect(failures.append)
    early = host.call(_nothing)  # asked before the failure: answered with an error, not hung
    host.start()
    qtbot.waitUntil(lambda: bool(failures), timeout=30_000)
    assert "not a Fredica database" in failures[0]
    qtbot.waitUntil(lambda: "could not open" in window.mode_label.text(), timeout=5_000)
    with pytest.raises(RuntimeError, match="not open"):
        early.result(10)
    with pytest.raises(RuntimeError, match="not open"):
        host.call(_nothing).result(10)  # and after it
    assert host.join(30)
    window.close()  # closes at once: there is nothing to stop
    assert not window.isVisible()


async def _nothing(app: Any) -> None:
    return None


def test_a_first_window_takes_most_of_its_screen_and_then_the_size_it_was_left_at(
    qtbot: Any, data_dir: Path
) -> None:
    """About 80 % of the screen's free area the first time (it was a fixed 1180 by 760, which
    clipped the columns on a large screen and overflowed a small one); from then on, the
    size it was left at."""
    from fredica_app.gui.window import FIRST_MIN

    window = MainWindow(AppHost(data_dir), data_dir)
    qtbot.addWidget(window)
    area = window.screen().availableGeometry().size()
    want_w = min(max(int(area.width() * 0.8), FIRST_MIN.width()), area.width())
    want_h = min(max(int(area.height() * 0.8), FIRST_MIN.height()), area.height())
    assert (window.width(), window.height()) == (want_w, want_h)
    window.resize(want_w - 100, want_h - 50)
    window._save_view_state()
    again = MainWindow(AppHost(data_dir), data_dir)
    qtbot.addWidget(again)
    assert (again.width(), again.height()) == (want_w - 100, want_h - 50)


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_at_1280_by_800_the_queue_needs_no_sideways_scrolling_and_no_folded_toolbar(
    qtbot: Any, qapp: Any, data_dir: Path, language: str
) -> None:
    """A laptop's screen: the runs' and the tasks' columns fit their table (no horizontal
    scroll bar) and every action of the toolbar shows (none folded behind "»"), in either
    language."""
    from PySide6.QtWidgets import QToolButton

    from fredica_app.gui.app import Translations

    languages = Translations(qapp)
    languages.install(language)
    try:
        window = MainWindow(AppHost(data_dir), data_dir)
        qtbot.addWidget(window)
        window.resize(1280, 800)
        window.show()
        window.nav.setCurrentRow(1)  # the queue
        qtbot.waitExposed(window)
        qapp.processEvents()
        queue = window.queue
        for view in (queue.runs_view, queue.tasks_view):
            assert view.horizontalScrollBar().maximum() == 0, view.objectName()
            header = view.horizontalHeader()
            assert header.length() <= view.viewport().width() + 1
        folded = [
            b
            for b in queue.toolbar.findChildren(QToolButton)
            if b.objectName() == "qt_toolbar_ext_button" and b.isVisible()
        ]
        assert not folded
        actions = [a for a in queue.toolbar.actions() if not a.isSeparator()]
        assert all(queue.toolbar.widgetForAction(a).isVisible() for a in actions)
    finally:
        languages.install("en")


def test_a_retired_window_reads_the_queue_no_more(
    qtbot: Any, app_host: AppHost, data_dir: Path
) -> None:
    """A window replaced (a change of language) stops its feed, and a state the host says
    after that does not start it again: only the window shown reads the store."""
    window = open_window(qtbot, app_host, data_dir)
    qtbot.waitUntil(lambda: window._bridge is not None, timeout=30_000)
    window.retire()
    assert window._bridge is None
    app_host.state_changed.emit(app_host.state)  # the engine's state, said again
    assert window._bridge is None
