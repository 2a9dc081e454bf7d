"""The Hosts page, on a real application host: hidden on this computer's own queue, shown on a
shared one (the engines, drained and let claim again from the window) and with endpoint hosts
(each as the window's engine knows it, and checked on demand)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fredica_app.gui.host import AppHost, Mode
from fredica_app.gui.window import MainWindow
from tests.support import postgres
from tests.support.endpoint_hosts import Lab, make_lab


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with make_lab(tmp_path) as made:
        yield made


def open_window(qtbot: Any, data_dir: Path) -> tuple[MainWindow, AppHost]:
    host = AppHost(data_dir)
    window = MainWindow(host, data_dir)
    qtbot.addWidget(window)
    host.start()
    qtbot.waitUntil(lambda: host.state.mode is Mode.ENGINE, timeout=30_000)
    return window, host


def close(window: MainWindow, host: AppHost) -> None:
    window.retire()
    host.shutdown()
    assert host.join(60)


def cells(table: Any, row: int) -> list[str]:
    return [table.item(row, c).text() for c in range(table.columnCount())]


def test_this_computers_own_queue_has_no_hosts_page(qtbot: Any, data_dir: Path) -> None:
    window, host = open_window(qtbot, data_dir)
    try:
        qtbot.wait(500)  # the page's first reading
        assert window.nav.isRowHidden(window.HOSTS)
        assert not window.hosts.relevant
    finally:
        close(window, host)


def test_a_shared_queue_shows_its_engines_and_drains_one(
    qtbot: Any, data_dir: Path, postgres_database: postgres.PostgresDatabase
) -> None:
    postgres_database.reset()
    data_dir.mkdir(parents=True)
    (data_dir / "settings.json").write_text(json.dumps({"database_url": postgres_database.url}))
    window, host = open_window(qtbot, data_dir)
    try:
        window.show()
        qtbot.waitUntil(lambda: not window.nav.isRowHidden(window.HOSTS), timeout=10_000)
        window.nav.setCurrentRow(window.HOSTS)
        page = window.hosts
        qtbot.waitUntil(lambda: len(page.workers) == 1, timeout=10_000)
        assert "postgresql" in page.queue_label.text() and "***" not in page.queue_label.text()
        worker = page.workers[0]
        row = cells(page.engines, 0)
        assert row[0] == worker.id and row[2].endswith("s ago")
        assert row[5] == "taking work (this window)"  # its own engine, on the shared queue
        assert not page.drain_button.isEnabled()  # nothing selected yet
        page.select_worker(worker.id)
        assert page.drain_button.isEnabled() and not page.undrain_button.isEnabled()
        page.drain_button.click()
        qtbot.waitUntil(
            lambda: cells(page.engines, 0)[5] == "draining (this window)", timeout=10_000
        )
        drained = host.call(lambda app: app.hosts(include_stopped=False)).result(30)
        assert drained[0].draining
        assert page.undrain_button.isEnabled() and not page.drain_button.isEnabled()
        page.undrain_button.click()
        qtbot.waitUntil(
            lambda: cells(page.engines, 0)[5] == "taking work (this window)", timeout=10_000
        )
        assert not host.call(lambda app: app.hosts(include_stopped=False)).result(30)[0].draining
    finally:
        close(window, host)


def test_endpoint_hosts_are_shown_as_the_engine_knows_them_and_checked(
    qtbot: Any, data_dir: Path, lab: Lab
) -> None:
    box = lab.start("gpu-box")
    gone = {**lab.entry(box, ["cpu"]), "name": "old-box", "url": "wss://127.0.0.1:1"}
    lab.settings(data_dir, [lab.entry(box, ["gpu"]), gone])
    window, host = open_window(qtbot, data_dir)
    try:
        window.show()
        qtbot.waitUntil(lambda: not window.nav.isRowHidden(window.HOSTS), timeout=10_000)
        window.nav.setCurrentRow(window.HOSTS)
        page = window.hosts
        # The engine checked each host at its start: gpu-box ready, old-box passed over.
        qtbot.waitUntil(
            lambda: page.endpoints.rowCount() == 2 and cells(page.endpoints, 0)[5] == "ready",
            timeout=20_000,
        )
        first = cells(page.endpoints, 0)
        assert first[:3] == ["gpu-box", f"wss://127.0.0.1:{box.port}", "gpu"]
        assert str(lab.nas) in first[3]
        qtbot.waitUntil(lambda: "cannot be reached" in cells(page.endpoints, 1)[5], timeout=20_000)
        assert "queue shared" not in page.queue_label.text()  # this computer's own queue
        page.check_button.click()
        assert not page.check_button.isEnabled()  # checking
        qtbot.waitUntil(page.check_button.isEnabled, timeout=30_000)
        assert cells(page.endpoints, 0)[5] == "ready"
        assert "cannot be reached at 127.0.0.1:1" in cells(page.endpoints, 1)[5]
    finally:
        close(window, host)
