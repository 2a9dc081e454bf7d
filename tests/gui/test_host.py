"""The application host: the engine on its own thread, calls answered on the GUI thread."""

from __future__ import annotations

import threading
import time
from typing import Any

from fredica_app.gui.host import Mode
from tests.gui.hosting import call


def test_a_call_runs_on_the_hosts_thread_and_answers_on_the_gui_thread(
    qtbot: Any, app_host: Any
) -> None:
    gui_thread = threading.current_thread()
    seen: dict[str, Any] = {}

    async def where(app: Any) -> str:
        return threading.current_thread().name

    def done(name: str) -> None:
        seen["ran on"] = name
        seen["answered on"] = threading.current_thread()

    app_host.call(where, done)
    qtbot.waitUntil(lambda: "answered on" in seen, timeout=10_000)
    assert seen["ran on"] == "fredica-app"
    assert seen["answered on"] is gui_thread


def test_an_error_reaches_on_error(qtbot: Any, app_host: Any) -> None:
    errors: list[Exception] = []

    async def fails(app: Any) -> None:
        await app.store.get_task("no-such-task")

    app_host.call(fails, on_error=errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=10_000)
    assert "no-such-task" in str(errors[0])


def test_the_engine_runs_work_submitted_through_a_call(qtbot: Any, app_host: Any) -> None:
    assert app_host.state.mode is Mode.ENGINE
    created = call(app_host, lambda app: app.submit({"tasks": [{"key": "a", "type": "NOOP"}]}))
    run_id = created.run_id

    async def status(app: Any) -> str:
        return (await app.store.get_run(run_id)).status.value

    qtbot.waitUntil(lambda: call(app_host, status) == "completed", timeout=20_000)


def test_a_window_whose_host_never_started_closes_at_once(qtbot: Any, data_dir: Any) -> None:
    """Closing it asks the host to stop; a host that never started has nothing to stop and
    says so at once (it waited 5 s for an opening that would never come, on the GUI
    thread)."""
    from fredica_app.gui.host import AppHost
    from fredica_app.gui.window import MainWindow

    host = AppHost(data_dir)
    window = MainWindow(host, data_dir)
    qtbot.addWidget(window)
    window.show()
    started = time.monotonic()
    with qtbot.waitSignal(window.closed, timeout=3_000):
        window.quit()  # File > Quit: no keeping to the tray
    assert time.monotonic() - started < 1.0
    assert host.state.mode is Mode.STOPPED
    assert window.isHidden()
    assert host.join(0)  # no thread was ever started
