"""The main window: a navigation list (library, queue, settings), the pages, the restart
banner above them, and a status bar that says who runs the queue.

The window is a client of :class:`~fredica_app.gui.host.AppHost` like the CLI is of the
services: it reads through the change bridge (one :class:`~fredica_app.gui.feed.Feed` every
page connects to) and acts through :meth:`AppHost.call`. It keeps no business state; the
little it tracks (which tasks run, whether the queue is paused) is what it shows.

Quitting while tasks run asks first, then stops the engine gracefully: running tasks
checkpoint and are resumed at the next start. Closing the window is not always quitting:
where the app keeps running in the tray (``keep_in_tray``, decided by the app), the window
only hides; File ▸ Quit (:meth:`MainWindow.quit`) always quits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QMimeData, QSize, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from fredica_app.gui.banner import RestartBanner
from fredica_app.gui.bridge import ChangeBridge
from fredica_app.gui.details import RunDetailsPage
from fredica_app.gui.feed import Feed
from fredica_app.gui.host import AppHost, HostState, Mode
from fredica_app.gui.hosts import HostsPage
from fredica_app.gui.library import LibraryPage
from fredica_app.gui.persist import ViewState
from fredica_app.gui.queue import QueuePage
from fredica_app.gui.settings_page import SettingsPage
from fredica_app.gui.symbols import symbol
from fredica_app.gui.when_done import WhenDoneController, queue_is_busy, when_done_menu
from fredica_app.views.queue_state import Badge
from workers.changes import RunFilter, TaskFilter
from workers.events import EngineHeld

log = logging.getLogger(__name__)

#: What the window's snapshot loads: the newest runs and their tasks, up to these many.
SNAPSHOT_RUNS = 1000
SNAPSHOT_TASKS = 20_000
#: Between two reads of the queue's pause flag (another process may change it).
QUEUE_FLAG_MS = 1000


#: The share of the screen's free area a first window takes, each way.
FIRST_SHARE = 0.8
#: …but not less than this (a small screen: as much of it as there is).
FIRST_MIN = QSize(1240, 720)


def first_size(window: QWidget) -> QSize:
    """The size of a window opened for the first time: about 80 % of its screen's free area,
    never more than the area, never less than the queue needs to show its columns and its
    toolbar whole where the screen has room (a 1280 by 800 screen gives 1240 by 720 of its
    1280 by 800, a 1920 by 1080 one 1536 by 864)."""
    area = (window.screen() or QGuiApplication.primaryScreen()).availableGeometry().size()
    wanted = QSize(int(area.width() * FIRST_SHARE), int(area.height() * FIRST_SHARE))
    return wanted.expandedTo(FIRST_MIN).boundedTo(area)


class MainWindow(QMainWindow):
    """Fredica's window over one application host."""

    #: The window has closed for good (not for a change of language).
    closed = Signal()
    #: Closing it hid it instead: the app goes on in the tray.
    hidden_to_tray = Signal()

    LIBRARY, QUEUE, DETAILS, SETTINGS, HOSTS = range(5)

    def __init__(self, host: AppHost, data_dir: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("main")
        self.host = host
        self.view_state = ViewState(data_dir)
        self.feed = Feed(self)
        self._bridge: ChangeBridge | None = None
        self._queue_paused = False
        self._quitting = False
        self._quit_asked = False
        self._retired = False
        #: Whether closing the window should hide it (the app goes on in the tray) rather
        #: than quit; the app sets it (a tray, ``close_to_tray``, tasks running).
        self.keep_in_tray: Callable[[], bool] = lambda: False
        #: What to do when the queue is done (:meth:`attach_when_done`).
        self.when_done: WhenDoneController | None = None
        self.setAcceptDrops(True)

        self.library = LibraryPage(host, self.feed)
        self.queue = QueuePage(host, self.feed)
        self.details = RunDetailsPage(host, self.feed)
        self.settings = SettingsPage(host)
        self.hosts = HostsPage(host)
        self.banner = RestartBanner(host)
        #: Says why nothing new starts while the engine cannot write its database.
        self.held_bar = QLabel()
        self.held_bar.setObjectName("held-bar")
        self.held_bar.setWordWrap(True)
        self.held_bar.setContentsMargins(12, 6, 12, 6)
        self.held_bar.setStyleSheet("#held-bar { background: #8a5300; color: white; }")
        self.held_bar.hide()

        self.pages = QStackedWidget()
        for page in (self.library, self.queue, self.details, self.settings, self.hosts):
            self.pages.addWidget(page)
        self.nav = QListWidget()
        self.nav.setObjectName("nav")
        for text, icon in (
            (self.tr("Library"), symbol("library")),
            (self.tr("Queue"), symbol("list-video")),
            (self.tr("Run details"), symbol("workflow")),
            (self.tr("Settings"), symbol("settings")),
            (self.tr("Hosts"), symbol("server")),
        ):
            QListWidgetItem(icon, text, self.nav)
        # Hosts: only with a shared queue or endpoint hosts (the page says when it has those).
        self.nav.setRowHidden(self.HOSTS, True)
        self.hosts.relevance_changed.connect(self._show_hosts)
        self.nav.currentRowChanged.connect(self.pages.setCurrentIndex)

        right = QWidget()
        column = QVBoxLayout(right)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.held_bar)
        column.addWidget(self.banner)
        column.addWidget(self.pages, 1)
        self.splitter = QSplitter()
        self.splitter.setObjectName("main-splitter")
        self.splitter.addWidget(self.nav)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setCollapsible(0, False)
        self.splitter.setSizes([170, 1010])
        self.setCentralWidget(self.splitter)

        self.mode_label = QLabel(self.tr("Opening the data directory…"))
        self.statusBar().addWidget(self.mode_label, 1)
        self.activity_label = QLabel()
        self.statusBar().addPermanentWidget(self.activity_label)

        self._build_menus()
        self.queue.open_run.connect(self.show_run)
        self.details.back.connect(lambda: self.nav.setCurrentRow(self.QUEUE))
        self.feed.snapshot.connect(self._update_activity)
        self.feed.changes.connect(self._update_activity)
        host.state_changed.connect(self._on_state)
        host.state_changed.connect(self.banner.on_state)
        host.failed.connect(self._on_failed)
        host.engine_event.connect(self._on_engine_event)
        host.stopped.connect(self._on_stopped)

        self._flag_timer = QTimer(self)
        self._flag_timer.setInterval(QUEUE_FLAG_MS)
        self._flag_timer.timeout.connect(self._read_queue_flag)

        if not self.view_state.restore("window", self):
            self.resize(first_size(self))  # the first launch; later, the size it was left at
        self.view_state.restore("main-splitter", self.splitter)
        for page in (self.library, self.queue, self.details, self.settings):
            restore = getattr(page, "restore_view_state", None)
            if restore is not None:
                restore(self.view_state)
        self.nav.setCurrentRow(int(self.view_state.value("window/page", self.QUEUE)))
        self._update_title()
        if host.state.mode is not Mode.STARTING:  # a host that opened before this window
            self._on_state(host.state)
            self.banner.on_state(host.state)

    # --- menus -------------------------------------------------------------------------------

    def _build_menus(self) -> None:
        files = self.menuBar().addMenu(self.tr("&File"))
        self._action(files, self.tr("Add &files…"), self.library_call("add_files_dialog"), "Ctrl+O")
        self._action(files, self.tr("Add a f&older…"), self.library_call("add_folder_dialog"))
        self._action(files, self.tr("Add &URLs…"), self.library_call("paste_urls"), "Ctrl+Shift+V")
        files.addSeparator()
        self._action(files, self.tr("&Quit"), self.quit, QKeySequence.StandardKey.Quit)
        view = self.menuBar().addMenu(self.tr("&View"))
        for row, shortcut in ((self.LIBRARY, "Ctrl+1"), (self.QUEUE, "Ctrl+2")):
            self._action(
                view, self.nav.item(row).text(), lambda r=row: self.nav.setCurrentRow(r), shortcut
            )
        self._action(
            view,
            self.nav.item(self.SETTINGS).text(),
            lambda: self.nav.setCurrentRow(self.SETTINGS),
            QKeySequence.StandardKey.Preferences,
        )

    def _action(
        self,
        menu: QMenu,
        text: str,
        slot: Any,
        shortcut: str | QKeySequence.StandardKey | None = None,
    ) -> QAction:
        action = menu.addAction(text)
        action.triggered.connect(slot)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        return action

    def library_call(self, method: str) -> Any:
        def call() -> None:
            self.nav.setCurrentRow(self.LIBRARY)
            getattr(self.library, method)()

        return call

    # --- navigation --------------------------------------------------------------------------

    def _show_hosts(self, relevant: bool) -> None:
        self.nav.setRowHidden(self.HOSTS, not relevant)
        if not relevant and self.nav.currentRow() == self.HOSTS:
            self.nav.setCurrentRow(self.QUEUE)

    def show_run(self, run_id: str) -> None:
        self.details.show_run(run_id)
        self.nav.setCurrentRow(self.DETAILS)

    # --- the host and the feed ---------------------------------------------------------------

    def _on_state(self, state: HostState) -> None:
        if self._retired:  # replaced (a change of language) or closing: it reads no more
            return
        if state.mode is Mode.ENGINE:
            self.mode_label.setText(self.tr("Processing in this window"))
        elif state.mode is Mode.ATTACHED:
            self.mode_label.setText(
                self.tr(
                    "Attached to the worker already running on this data directory: "
                    "it processes the queue, this window views and controls it"
                )
            )
        if state.mode in (Mode.ENGINE, Mode.ATTACHED) and self._bridge is None:
            self._start_feed()
        if state.settings_problem:
            self.statusBar().showMessage(state.settings_problem, 15_000)

    def _on_engine_event(self, event: object) -> None:
        if isinstance(event, EngineHeld):
            if event.reason is None:
                self.held_bar.hide()
            else:
                text = self.tr("Waiting: %1. Running tasks go on; nothing new starts until then.")
                self.held_bar.setText(text.replace("%1", event.reason, 1))
                self.held_bar.show()

    def _start_feed(self) -> None:
        from fredica_app.services.queries import Queries  # with the store: once it is open

        app = self.host.app
        assert app is not None
        self._bridge = ChangeBridge(
            Queries(app.store),
            runs=RunFilter(limit=SNAPSHOT_RUNS),
            tasks=TaskFilter(limit=SNAPSHOT_TASKS),
            parent=self,
        )
        self._bridge.snapshot.connect(self.feed.snapshot)
        self._bridge.changes.connect(self.feed.changes)
        self._bridge.start()
        self._flag_timer.start()
        self._read_queue_flag()

    def _on_failed(self, message: str) -> None:
        self.mode_label.setText(
            self.tr("Fredica could not open its data: %1").replace("%1", message)
        )
        box = QMessageBox(QMessageBox.Icon.Critical, self.tr("Fredica"), message, parent=self)
        box.open()  # window-modal without a nested event loop: nothing waits on it

    def _update_activity(self, _records: Any = None) -> None:
        """After the queue page has applied a snapshot or a batch (it is connected to the
        feed first): say how many tasks run, as its counts tell."""
        n = self.running_tasks
        self.activity_label.setText(self.tr("%n task(s) running", "", n) if n else "")
        if self.when_done is not None:
            self.when_done.queue_busy(queue_is_busy(self.queue.counts.counts))

    def attach_when_done(self, controller: WhenDoneController) -> None:
        """The app's "when the queue is done" choice (it outlives a window: a change of
        language replaces the window): a menu here, and the queue's busy and idle told to it
        as the feed shows them."""
        self.when_done = controller
        self.menuBar().addMenu(when_done_menu(controller, self))

    def _read_queue_flag(self) -> None:
        async def read(app: Any) -> bool:
            return bool(app.control.queue_paused)

        def failed(exc: Exception) -> None:  # closing, or the database away for now:
            log.debug("could not read the queue's pause flag: %s", exc)  # read again in 1 s

        self.host.call(read, self.set_queue_paused, failed)

    def set_queue_paused(self, paused: bool) -> None:
        if paused != self._queue_paused:
            self._queue_paused = paused
            self._update_title()
        self.queue.show_queue_paused(paused)

    @property
    def running_tasks(self) -> int:
        """Tasks claimed or running now and not paused (the queue page's count)."""
        return self.queue.counts.counts.get(Badge.RUNNING, 0)

    def _update_title(self) -> None:
        title = "Fredica"
        if self._queue_paused:
            title += " " + self.tr("[paused]")
        self.setWindowTitle(title)

    # --- dropping files ----------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if _dropped_items(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        items = _dropped_items(event.mimeData())
        if items:
            event.acceptProposedAction()
            self.nav.setCurrentRow(self.LIBRARY)
            self.library.import_items(items)

    # --- closing -----------------------------------------------------------------------------

    def confirm_quit(self, running: int) -> bool:
        """Ask whether to quit while ``running`` tasks run (a test may replace this)."""
        answer = QMessageBox.question(
            self,
            self.tr("Quit Fredica?"),
            self.tr(
                "%n task(s) are running. They will save their progress and continue the "
                "next time Fredica starts.",
                "",
                running,
            ),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        return answer == QMessageBox.StandardButton.Yes

    def quit(self) -> None:
        """Quit the app (File ▸ Quit, the tray's Quit): as closing the window does when it
        does not go to the tray — asking first while tasks run."""
        self._quit_asked = True
        try:
            self.close()
        finally:
            self._quit_asked = False

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._retired or self.host.state.mode is Mode.STOPPED:
            self._save_view_state()
            event.accept()
            return
        if not self._quitting and not self._quit_asked and self.keep_in_tray():
            self._save_view_state()
            self.hide()
            event.ignore()
            self.hidden_to_tray.emit()
            return
        if not self._quitting:
            running = self.running_tasks if self.host.state.mode is Mode.ENGINE else 0
            if running and not self.confirm_quit(running):
                event.ignore()
                return
            self._quitting = True
            self._save_view_state()
            self.mode_label.setText(self.tr("Stopping: running tasks are saving their progress…"))
            self.setEnabled(False)
            self._stop_feed()  # before the host closes the store it reads
            self.host.shutdown()
        event.ignore()  # closed for good when the host has stopped (_on_stopped)

    def _on_stopped(self) -> None:
        self._stop_feed()
        if self._quitting:
            self._retired = True
            self.close()
            self.closed.emit()

    def retire(self) -> None:
        """Close this window while the application goes on (a new window replaces it)."""
        self._retired = True
        self._stop_feed()
        self.close()

    def _stop_feed(self) -> None:
        self._flag_timer.stop()
        if self._bridge is not None:
            self._bridge.stop()
            self._bridge = None

    def _save_view_state(self) -> None:
        self.view_state.save("window", self)
        self.view_state.save("main-splitter", self.splitter)
        self.view_state.set_value("window/page", self.nav.currentRow())
        for page in (self.library, self.queue, self.details, self.settings):
            save = getattr(page, "save_view_state", None)
            if save is not None:
                save(self.view_state)
        self.view_state.sync()


def _dropped_items(mime: QMimeData) -> list[str]:
    """Local files and folders, or web addresses, from a drop."""
    items: list[str] = []
    for url in mime.urls():
        if url.isLocalFile():
            items.append(url.toLocalFile())
        elif url.scheme() in ("http", "https"):
            items.append(url.toString(QUrl.ComponentFormattingOption.FullyEncoded))
    if not items and mime.hasText():
        items = [
            line.strip()
            for line in mime.text().splitlines()
            if line.strip().startswith(("http://", "https://"))
        ]
    return items
