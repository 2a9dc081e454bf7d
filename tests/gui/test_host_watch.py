"""The application host watches the settings' watch folders while it is open: a file dropped
into one is submitted, and a change of the settings starts the watching anew (a folder
removed from them is no longer watched)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fredica_app.gui.host import AppHost, Mode
from tests.gui.hosting import call


def write_settings(data_dir: Path, folder: Path, template: str = "thumbnail") -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "settings.json").write_text(
        json.dumps(
            {
                "watch_folders": [{"folder": str(folder), "template": template}],
                "watch_settle_seconds": 0.5,
            }
        )
    )


def test_a_file_settled_in_a_watch_folder_is_submitted_until_the_folder_is_removed(
    qtbot: Any, tmp_path: Path, data_dir: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    write_settings(data_dir, inbox)
    host = AppHost(data_dir)
    reports: list[Any] = []
    host.watch_report.connect(reports.append)
    host.start()
    try:
        qtbot.waitUntil(lambda: host.state.mode is Mode.ENGINE, timeout=30_000)
        (inbox / "first.mp4").write_bytes(b"\0" * 4096)  # not real media: PROBE fails later
        qtbot.waitUntil(lambda: any(r.kind == "submitted" for r in reports), timeout=30_000)
        [first] = [r for r in reports if r.kind == "submitted"]
        assert first.path.name == "first.mp4" and first.run_id

        async def forget_folders(app: Any) -> None:
            app.settings = app.settings.model_copy(update={"watch_folders": []})

        call(host, forget_folders)
        qtbot.wait(1500)  # the host looks at the settings every second
        (inbox / "second.mp4").write_bytes(b"\1" * 4096)
        qtbot.wait(2500)  # settled and submitted by now, were it still watched

        async def runs(app: Any) -> int:
            return len(await app.store.list_runs())

        assert call(host, runs) == 1
        assert [r.path.name for r in reports if r.kind == "submitted"] == ["first.mp4"]
    finally:
        host.shutdown()
        assert host.join(60)


def test_a_template_a_watch_folder_cannot_use_is_reported_not_fatal(
    qtbot: Any, tmp_path: Path, data_dir: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    write_settings(data_dir, inbox, template="no_such_template")
    host = AppHost(data_dir)
    reports: list[Any] = []
    host.watch_report.connect(reports.append)
    host.start()
    try:
        qtbot.waitUntil(lambda: bool(reports), timeout=30_000)
        assert reports[0].kind == "problem" and "no_such_template" in reports[0].message
        qtbot.waitUntil(lambda: host.state.mode is Mode.ENGINE, timeout=30_000)
    finally:
        host.shutdown()
        assert host.join(60)


def test_the_window_says_what_a_watch_folder_submitted_and_notifies_its_problems(
    qtbot: Any, qapp: Any, tmp_path: Path, data_dir: Path
) -> None:
    from fredica_app.gui.app import GuiApp

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    missing = tmp_path / "not-there"
    data_dir.mkdir(parents=True)
    (data_dir / "settings.json").write_text(
        json.dumps(
            {
                "watch_folders": [
                    {"folder": str(inbox), "template": "thumbnail"},
                    {"folder": str(missing), "template": "thumbnail"},
                ],
                "watch_settle_seconds": 0.5,
            }
        )
    )
    gui = GuiApp(qapp, data_dir)
    qtbot.addWidget(gui.window)
    gui.start()
    try:
        qtbot.waitUntil(lambda: gui.host.state.mode is Mode.ENGINE, timeout=30_000)
        qtbot.waitUntil(
            lambda: any(str(missing) in s.body for s in gui.notifier.shown), timeout=30_000
        )
        (inbox / "clip.mp4").write_bytes(b"\0" * 4096)
        qtbot.waitUntil(
            lambda: "clip.mp4" in gui.window.statusBar().currentMessage(), timeout=30_000
        )
        assert "thumbnail" in gui.window.statusBar().currentMessage()
        assert sum(str(missing) in s.body for s in gui.notifier.shown) == 1
    finally:
        gui.quit()
        assert gui.host.join(60)
