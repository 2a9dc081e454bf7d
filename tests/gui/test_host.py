"""The application host: the engine on its own thread, calls answered on the GUI thread."""

from __future__ import annotations

import threading
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
