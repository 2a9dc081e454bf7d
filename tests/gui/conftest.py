"""Qt runs offscreen here: CI has no display. The variable must be set before the first
QApplication exists (pytest-qt creates it in its ``qapp`` fixture, after this import).

The tests read the window in English: the app follows the system's language when its setting
is "auto", and Qt takes that from ``LC_ALL``, ``LC_MESSAGES``, ``LANG`` and ``LANGUAGE``, so a
machine set up in Chinese would show the tests another window. They are set to the neutral
C locale here, before Qt reads them; a test of another language asks for it by its setting."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["LC_ALL"] = "C.UTF-8"
os.environ["LC_MESSAGES"] = "C.UTF-8"
os.environ["LANG"] = "C.UTF-8"
os.environ["LANGUAGE"] = ""


from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _collect_on_the_gui_thread(qapp: Any) -> Iterator[Any]:
    """Garbage collection on the GUI thread during each test, as the app has it
    (``GuiApp.collector``): the host's engine thread of one test must not finalize the
    widgets another left in a cycle. Torn down last: a final collection here, then the
    interpreter's own collection back for the tests of other folders. Yields the collector
    (a test of the collector itself stops it first)."""
    from fredica_app.gui.collector import GuiThreadCollector

    collector = GuiThreadCollector()
    collector.start()
    yield collector
    collector.stop()
    collector.deleteLater()


@pytest.fixture(autouse=True)
def _quit_without_asking(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window closed at a test's end (pytest-qt closes the widgets it was given) must not
    wait on a question nobody answers; a test that checks the question patches its window."""
    from fredica_app.gui.window import MainWindow

    monkeypatch.setattr(MainWindow, "confirm_quit", lambda self, running: True)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def app_host(qtbot: Any, data_dir: Path) -> Iterator[Any]:
    """A real application host on a fresh data directory, its engine running; stopped (and
    its thread joined) at the end."""
    from fredica_app.gui.host import AppHost, Mode

    host = AppHost(data_dir)
    host.start()
    qtbot.waitUntil(lambda: host.state.mode is Mode.ENGINE, timeout=30_000)
    yield host
    host.shutdown()
    assert host.join(60), "the host's thread did not end"


@pytest.fixture
def live(qtbot: Any, app_host: Any) -> Iterator[Any]:
    """The run details page over the real host, fed by a change bridge as the window's."""
    from fredica_app.gui.bridge import ChangeBridge
    from fredica_app.gui.details import RunDetailsPage
    from fredica_app.gui.feed import Feed
    from fredica_app.services.queries import Queries
    from workers.changes import RunFilter, TaskFilter

    feed = Feed()
    bridge = ChangeBridge(
        Queries(app_host.app.store), runs=RunFilter(limit=50), tasks=TaskFilter(limit=500)
    )
    bridge.snapshot.connect(feed.snapshot)
    bridge.changes.connect(feed.changes)
    page = RunDetailsPage(app_host, feed)
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()
    with qtbot.waitSignal(bridge.snapshot, timeout=20_000):
        bridge.start()
    yield page
    bridge.stop()
