"""The Hosts page: who works on a shared queue, and the endpoint hosts this computer uses.

Shown when there is something to show: a queue shared by several hosts (PostgreSQL), or
endpoint hosts in the settings (docs/scale-out.md). The engines' table is what ``fredica
hosts`` prints — each engine's host, the age of its heartbeat, the tasks it holds, its slots,
whether it claims, drains or stopped — read again every few seconds while the page is in view;
a selected engine can be drained (it finishes what it runs and claims nothing more) or let
claim again. The endpoint hosts' table shows each host's classes, shared folders and state: as
this window's engine knows it (the tasks it has there, a host passed over and why), or as
*Check now* finds it (a zero-second job through its TLS and token, and its path maps checked
with a probe file).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from fredica_app.gui.host import AppHost, HostState, Mode
from workers.records import WorkerRecord

if TYPE_CHECKING:
    from fredica_app.services import Fredica

_OPEN = (Mode.ENGINE, Mode.ATTACHED)
_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
#: What an empty cell shows (an en dash).
NONE = "\u2013"
#: How often the engines are read again while the page is in view.
REFRESH_MS = 2000


class HostsPage(QWidget):
    """The engines on the queue and the endpoint hosts (see the module's doc)."""

    #: Whether the page has anything to show (the window shows or hides its entry).
    relevance_changed = Signal(bool)

    def __init__(self, host: AppHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.workers: list[WorkerRecord] = []
        #: The worker id of this window's own engine (None: it runs none).
        self.mine: str | None = None
        self.endpoint_states: list[dict[str, Any]] = []
        #: Whether there is anything to show (a shared queue, or endpoint hosts set).
        self.relevant = False
        self._reading = False
        #: What *Check now* found, kept while no engine of this window knows better.
        self._check: list[dict[str, Any]] | None = None

        self.queue_label = QLabel()
        self.queue_label.setWordWrap(True)
        self.queue_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.engines = _table(
            [
                self.tr("Worker"),
                self.tr("Host"),
                self.tr("Heartbeat"),
                self.tr("Running"),
                self.tr("Slots"),
                self.tr("State"),
                self.tr("Version"),
            ]
        )
        self.engines.itemSelectionChanged.connect(self._update_buttons)
        self.drain_button = QPushButton(self.tr("Drain"))
        self.drain_button.setToolTip(
            self.tr("Let the selected engine finish what it runs, and take no new task")
        )
        self.drain_button.clicked.connect(lambda: self._drain(undo=False))
        self.undrain_button = QPushButton(self.tr("Claim again"))
        self.undrain_button.clicked.connect(lambda: self._drain(undo=True))

        self.endpoints = _table(
            [
                self.tr("Endpoint host"),
                self.tr("Address"),
                self.tr("Serves"),
                self.tr("Shared folders"),
                self.tr("Running"),
                self.tr("State"),
            ]
        )
        self.check_button = QPushButton(self.tr("Check now"))
        self.check_button.setToolTip(
            self.tr("Reach each endpoint host and check its shared folders with a probe file")
        )
        self.check_button.clicked.connect(self.check_endpoints)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.hide()

        engines_title = QLabel(self.tr("Engines on the queue"))
        endpoints_title = QLabel(self.tr("Endpoint hosts"))
        for title in (engines_title, endpoints_title):
            font = title.font()
            font.setBold(True)
            title.setFont(font)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        layout.addWidget(self.queue_label)
        layout.addWidget(engines_title)
        layout.addWidget(self.engines, 3)
        buttons = QHBoxLayout()
        buttons.addWidget(self.drain_button)
        buttons.addWidget(self.undrain_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        layout.addWidget(endpoints_title)
        layout.addWidget(self.endpoints, 2)
        check = QHBoxLayout()
        check.addWidget(self.check_button)
        check.addStretch(1)
        layout.addLayout(check)
        layout.addWidget(self.problem)

        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        host.state_changed.connect(self.on_state)
        self._update_buttons()

    # --- reading -----------------------------------------------------------------------------

    def on_state(self, state: HostState) -> None:
        if state.mode in _OPEN:
            self.refresh()
        elif state.mode is Mode.STOPPED:
            self._timer.stop()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self._timer.start()
        self.refresh()

    def hideEvent(self, event: Any) -> None:
        super().hideEvent(event)
        self._timer.stop()

    def refresh(self) -> None:
        """Read the engines, and the endpoint hosts as this window's engine knows them."""
        if self._reading:
            return
        self._reading = True

        async def read(app: Fredica) -> dict[str, Any]:
            shared = app.store.shared
            return {
                "shared": shared,
                "database": app.database_shown,
                "workers": await app.hosts(include_stopped=False) if shared else [],
                "mine": None if app.running_engine is None else app.running_engine.worker_id,
                "endpoints": _entries(app),
                "live": app.router is not None,
            }

        def done(found: dict[str, Any]) -> None:
            self._reading = False
            self.show_reading(found)

        def failed(exc: Exception) -> None:
            self._reading = False
            self._on_error(exc)

        self._call(read, done, failed)

    def show_reading(self, found: dict[str, Any]) -> None:
        """Show what :meth:`refresh` read (a test may call it)."""
        relevant = bool(found["shared"] or found["endpoints"])
        if relevant != self.relevant:
            self.relevant = relevant
            self.relevance_changed.emit(relevant)
        if found["shared"]:
            self.queue_label.setText(
                self.tr("A queue shared by several hosts: %1").replace("%1", found["database"])
            )
        else:
            self.queue_label.setText(
                self.tr(
                    "This computer's own queue: one engine at a time. Several hosts share a "
                    "queue on PostgreSQL (see Scaling out in the documentation)."
                )
            )
        self.workers = list(found["workers"])
        self.mine = found.get("mine")
        self._fill_engines(self.workers, time.time())
        if found.get("live") or self._check is None:
            self.endpoint_states = list(found["endpoints"])
            self._fill_endpoints(self.endpoint_states)
        self.problem.hide()

    def check_endpoints(self) -> None:
        """Check each endpoint host now (*Check now*)."""
        from fredica_app.endpoint_hosts import check_hosts

        self.check_button.setEnabled(False)
        self.check_button.setText(self.tr("Checking…"))

        def done(states: list[dict[str, Any]]) -> None:
            self._checked()
            self._check = states
            self.endpoint_states = states
            self._fill_endpoints(states)

        def failed(exc: Exception) -> None:
            self._checked()
            self._on_error(exc)

        self._call(lambda app: check_hosts(app.settings.endpoint_hosts), done, failed)

    def _checked(self) -> None:
        self.check_button.setEnabled(True)
        self.check_button.setText(self.tr("Check now"))

    # --- the tables --------------------------------------------------------------------------

    def _fill_engines(self, workers: Sequence[WorkerRecord], now: float) -> None:
        selected = set(self.selected_workers())
        self.engines.setRowCount(len(workers))
        for row, w in enumerate(workers):
            slots = "  ".join(f"{k} {v}" for k, v in sorted(w.slots.items())) or NONE
            if w.stopped_at is not None:
                state = self.tr("stopped")
            elif w.draining:
                state = self.tr("draining")
            else:
                state = self.tr("taking work")
            if w.id == self.mine:
                state = self.tr("%1 (this window)").replace("%1", state)
            cells = (
                w.id,
                w.host,
                self.age(now - w.heartbeat_at),
                str(w.running),
                slots,
                state,
                w.build or NONE,
            )
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, w.id)
                if column == 3:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                self.engines.setItem(row, column, item)
            if w.id in selected:
                self.engines.selectRow(row)
        if not workers:
            self.engines.setRowCount(1)
            empty = QTableWidgetItem(self.tr("No engine is running on this queue."))
            empty.setFlags(Qt.ItemFlag.NoItemFlags)
            self.engines.setItem(0, 0, empty)
            self.engines.setSpan(0, 0, 1, self.engines.columnCount())
        else:
            self.engines.clearSpans()
        self._update_buttons()

    def _fill_endpoints(self, states: Sequence[dict[str, Any]]) -> None:
        self.endpoints.clearSpans()
        self.endpoints.setRowCount(len(states))
        for row, s in enumerate(states):
            folders = "\n".join(f"{p['local']} → {p['remote']}" for p in s["paths"]) or NONE
            if s.get("problem"):
                state = s["problem"]
            elif s.get("verified") or not s["paths"]:
                state = self.tr("ready")
            else:
                state = self.tr("not checked yet")
            cells = (
                s["name"],
                s["url"],
                ", ".join(s["classes"]),
                folders,
                str(s.get("running", 0)),
                state,
            )
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.endpoints.setItem(row, column, item)
        if not states:
            self.endpoints.setRowCount(1)
            empty = QTableWidgetItem(
                self.tr("None set. The settings' endpoint_hosts send work to another host's GPU.")
            )
            empty.setFlags(Qt.ItemFlag.NoItemFlags)
            self.endpoints.setItem(0, 0, empty)
            self.endpoints.setSpan(0, 0, 1, self.endpoints.columnCount())
        self.endpoints.resizeRowsToContents()

    def age(self, seconds: float) -> str:
        seconds = max(0.0, seconds)
        if seconds < 90:
            return self.tr("%1 s ago").replace("%1", f"{seconds:.0f}")
        if seconds < 90 * 60:
            return self.tr("%1 min ago").replace("%1", f"{seconds / 60:.0f}")
        return self.tr("%1 h ago").replace("%1", f"{seconds / 3600:.1f}")

    # --- drain -------------------------------------------------------------------------------

    def selected_workers(self) -> list[str]:
        rows = {i.row() for i in self.engines.selectedItems()}
        ids = []
        for row in sorted(rows):
            item = self.engines.item(row, 0)
            worker_id = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
            if worker_id:
                ids.append(str(worker_id))
        return ids

    def select_worker(self, worker_id: str) -> None:
        for row in range(self.engines.rowCount()):
            item = self.engines.item(row, 0)
            if item is not None and item.data(Qt.ItemDataRole.UserRole) == worker_id:
                self.engines.selectRow(row)

    def _update_buttons(self) -> None:
        chosen = set(self.selected_workers())
        records = [w for w in self.workers if w.id in chosen and w.stopped_at is None]
        self.drain_button.setEnabled(any(not w.draining for w in records))
        self.undrain_button.setEnabled(any(w.draining for w in records))

    def _drain(self, undo: bool) -> None:
        ids = self.selected_workers()
        if not ids:
            return

        async def drain(app: Fredica) -> None:
            for worker_id in ids:
                await app.drain(worker_id, undo=undo)

        self._call(drain, lambda _: self.refresh(), self._on_error)

    # --- calls -------------------------------------------------------------------------------

    def _call(
        self,
        work: Callable[[Fredica], Any],
        on_done: Callable[[Any], None],
        on_error: Callable[[Exception], None],
    ) -> None:
        def alive(callback: Callable[[Any], None]) -> Callable[[Any], None]:
            return lambda value: callback(value) if isValid(self) else None

        if self.host.state.mode not in _OPEN:  # host.call would wait for it: never here
            self._reading = False
            return
        try:
            self.host.call(work, alive(on_done), alive(on_error))
        except RuntimeError as exc:  # the application has closed
            on_error(exc)

    def _on_error(self, exc: Exception) -> None:
        self.problem.setText(self.tr("Could not read the hosts: %1").replace("%1", str(exc)))
        self.problem.show()


def _entries(app: Fredica) -> list[dict[str, Any]]:
    """The endpoint hosts as this process's engine knows them; the settings' entries, not
    checked, when no engine runs here."""
    if app.router is not None:
        return app.router.states()
    from fredica_app.endpoint_hosts import router

    built = router(app.settings.endpoint_hosts)
    return [] if built is None else built.states()


def _table(headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.verticalHeader().hide()
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)
    table.setWordWrap(True)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setStretchLastSection(True)
    return table
