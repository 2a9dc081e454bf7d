"""The restart banner: what start-up recovery found, to retry or dismiss.

Above the pages, a coloured bar while the restart log has entries waiting for review
(disposition ``pending_review``): "Fredica stopped unexpectedly: 3 task(s) were interrupted —
2 resumed, 1 held for review." It is read when the host opens the application (with an engine:
after its recovery) and every few seconds while shown, since an entry whose task completes is
settled by the store and leaves the list.

"Review…" lists the entries (task, run, how it was when Fredica stopped, what recovery did, how
it is now) with Retry and Dismiss on each row. Retry runs the task again the way the CLI's
``retry`` and ``resume`` do (``app.control``): a failed or cancelled task is retried, a held
one resumed; one already queued or running again needs nothing. The entry is then marked
``retried``. Dismiss marks it ``dismissed``. "Retry all" and "Dismiss all" do it to every
pending entry. Everything goes through :meth:`AppHost.call`.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QPalette, QShowEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from fredica_app.gui import theme
from fredica_app.gui.host import AppHost, HostState, Mode
from workers.errors import InvalidState, NotFound
from workers.records import RestartLogEntry, TaskRecord
from workers.states import ACTIVE, TaskStatus

if TYPE_CHECKING:
    from fredica_app.services import Fredica

#: Between two reads of the restart log while the banner shows (milliseconds).
REFRESH_MS = 10_000
#: The entries the review list shows at most (the counts cover them all).
MAX_ROWS = 200
#: The rows the review list shows without scrolling.
MAX_VISIBLE_ROWS = 6
#: How recovery's actions are listed in the message, in this order.
ACTIONS = ("resumed", "restarted", "requeued", "held", "kept_paused", "failed")
#: The restart log's detail of a task a graceful stop interrupted (``workers.store``'s
#: recovery writes it): no crash happened.
GRACEFUL = "graceful stop"
_OPEN = (Mode.ENGINE, Mode.ATTACHED)
_PALETTE_EVENTS = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
_REDO = (TaskStatus.FAILED, TaskStatus.CANCELLED)
#: The bar's colours on a light palette and on a dark one: amber, with text that reads on it.
STYLE = """
#restart-banner { background-color: %s; border-bottom: 1px solid %s; }
#restart-banner > QLabel { color: %s; }
"""
LIGHT = ("#fff3cd", "#e0b94f", "#3d2f00")
DARK = ("#4a3c12", "#8a6d1f", "#f7e7b4")


def needs_review(entry: RestartLogEntry) -> bool:
    """Whether the banner speaks of ``entry``: a crash interrupted its task, or recovery held
    or failed it. A task a graceful stop (the user quitting) left, and that simply resumed,
    needs nobody's attention."""
    graceful = (entry.detail or "").startswith(GRACEFUL)
    return not graceful or entry.action in ("held", "failed")


# --- on the host's loop -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pending:
    """The restart log's entries waiting for review, with their tasks as they are now."""

    entries: tuple[RestartLogEntry, ...] = ()
    #: The first :data:`MAX_ROWS` entries' tasks by id (None: deleted since).
    tasks: dict[str, TaskRecord | None] = field(default_factory=dict)


async def read_pending(app: Fredica) -> Pending:
    entries = await app.store.restart_log(only_pending=True, home=app.review_home)
    tasks: dict[str, TaskRecord | None] = {}
    for entry in entries[:MAX_ROWS]:
        try:
            tasks[entry.task_id] = await app.store.get_task(entry.task_id)
        except NotFound:
            tasks[entry.task_id] = None
    return Pending(tuple(entries), tasks)


async def retry_task(app: Fredica, task_id: str) -> bool:
    """Run a task of the restart log again if it needs it: retry it when it failed or was
    cancelled, resume it when it is held. False when nothing was to be done (it is queued or
    running again, finished, or gone)."""
    try:
        task = await app.store.get_task(task_id)
    except NotFound:
        return False
    if task.status in _REDO:
        await app.control.retry(task_id)
        return True
    if task.is_paused and task.status in ACTIVE:
        await app.control.resume(task_id)
        return True
    return False


async def retry_entries(app: Fredica, entry_ids: Collection[int] | None = None) -> list[str]:
    """Retry the tasks of the pending entries ``entry_ids`` (None: all) and mark the entries
    ``retried``; the reasons of those that could not be retried (they stay pending)."""
    problems = []
    for entry in await app.store.restart_log(only_pending=True, home=app.review_home):
        if entry_ids is not None and entry.id not in entry_ids:
            continue
        try:
            await retry_task(app, entry.task_id)
        except InvalidState as exc:
            problems.append(f"{entry.task_type}: {exc}")
            continue
        with contextlib.suppress(NotFound):  # deleted meanwhile (a prune)
            await app.store.set_disposition(entry.id, "retried")
    return problems


async def dismiss_entries(app: Fredica, entry_ids: Collection[int] | None = None) -> list[str]:
    """Mark the pending entries ``entry_ids`` (None: all) ``dismissed``."""
    if entry_ids is None:
        await app.store.set_disposition(None, "dismissed")
    for entry_id in entry_ids or ():
        with contextlib.suppress(NotFound):
            await app.store.set_disposition(entry_id, "dismissed")
    return []


# --- the widget -------------------------------------------------------------------------------


class RestartBanner(QFrame):
    """The bar (see the module's docstring); the window calls :meth:`on_state`."""

    #: The pending entries were read again (a :class:`Pending`).
    refreshed = Signal(object)

    TASK, RUN, STOPPED, RECOVERY, NOW, BUTTONS = range(6)

    def __init__(self, host: AppHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.pending = Pending()
        self._reading = False
        self._read_again = False
        self.setObjectName("restart-banner")
        self._restyle()
        self.message = QLabel()
        self.message.setObjectName("restart-message")
        self.message.setWordWrap(True)
        self.review_button = QPushButton(self.tr("Review…"))
        self.review_button.setCheckable(True)
        self.retry_all_button = QPushButton(self.tr("Retry all"))
        self.dismiss_all_button = QPushButton(self.tr("Dismiss all"))
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.list = QTreeWidget()
        self.list.setObjectName("restart-entries")
        self.list.setRootIsDecorated(False)
        self.list.setHeaderLabels(
            [self.tr("Task"), self.tr("Run"), self.tr("When Fredica stopped"),
             self.tr("Recovery"), self.tr("Now"), ""]
        )  # fmt: skip
        header = self.list.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(self.TASK, QHeaderView.ResizeMode.Stretch)
        self.list.hide()
        top = QHBoxLayout()
        top.addWidget(self.message, 1)
        for button in (self.review_button, self.retry_all_button, self.dismiss_all_button):
            top.addWidget(button)
        column = QVBoxLayout(self)
        column.setContentsMargins(10, 6, 10, 6)
        column.addLayout(top)
        column.addWidget(self.problem)
        column.addWidget(self.list)

        theme.notifier().changed.connect(self._restyle)
        self.review_button.toggled.connect(self._review)
        self.retry_all_button.clicked.connect(self.retry_all)
        self.dismiss_all_button.clicked.connect(self.dismiss_all)
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        self.hide()

    def _restyle(self, _dark: bool | None = None) -> None:
        dark = QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128
        style = STYLE % (DARK if dark else LIGHT)
        if self.styleSheet() != style:  # setting it changes the palette: no loop
            self.setStyleSheet(style)

    def changeEvent(self, event: QEvent) -> None:
        """A new palette (light to dark): the bar's colours follow."""
        super().changeEvent(event)
        if event.type() in _PALETTE_EVENTS:
            self._restyle()

    def showEvent(self, event: QShowEvent) -> None:
        """A palette changed while the bar was hidden may not have reached it: look again."""
        self._restyle()
        super().showEvent(event)

    # --- the host -----------------------------------------------------------------------------

    def on_state(self, state: HostState) -> None:
        """The host's state changed (with an engine: its recovery report). Open: read the
        restart log (recovery has written it by then); stopped: hide."""
        if state.mode in _OPEN:
            self.refresh()
        elif state.mode is Mode.STOPPED:
            self._timer.stop()
            self.hide()

    def _call(
        self, job: Callable[[Fredica], Awaitable[Any]], on_done: Callable[[Any], None]
    ) -> None:
        def alive(callback: Callable[[Any], None]) -> Callable[[Any], None]:
            return lambda value: callback(value) if isValid(self) else None

        if self.host.state.mode not in _OPEN:  # host.call would wait for it: never here
            self._on_error(RuntimeError(self.tr("the application is not open")))
            return
        try:
            self.host.call(job, alive(on_done), alive(self._on_error))
        except RuntimeError as exc:  # the application has closed
            self._on_error(exc)

    def _on_error(self, exc: Exception) -> None:
        self._reading = False
        self._enable(True)
        self.problem.setText(self.tr("Could not do it: %1").replace("%1", str(exc)))
        self.problem.show()

    def refresh(self) -> None:
        """Read the pending entries again."""
        if self._reading:
            self._read_again = True
            return
        self._reading = True
        self._call(read_pending, self._on_pending)

    def _on_pending(self, pending: Pending) -> None:
        self._reading = False
        self.pending = pending
        self._enable(True)
        if not any(needs_review(e) for e in pending.entries):
            self._timer.stop()
            self.review_button.setChecked(False)
            self.list.clear()
            self.hide()
        else:
            self.message.setText(self.headline(pending.entries))
            if self.review_button.isChecked():
                self._fill()
            self._timer.start()
            self.show()
        self.refreshed.emit(pending)
        if self._read_again:
            self._read_again = False
            self.refresh()

    # --- what it says -------------------------------------------------------------------------

    def headline(self, entries: Collection[RestartLogEntry]) -> str:
        """ "Fredica stopped unexpectedly: 3 task(s) were interrupted — 2 resumed, 1 held for
        review." (after a graceful stop: "Fredica was closed while 3 task(s) ran — …")."""
        n = len(entries)
        if any(not (e.detail or "").startswith(GRACEFUL) for e in entries):
            head = self.tr("Fredica stopped unexpectedly: %n task(s) were interrupted", "", n)
        else:
            head = self.tr("Fredica was closed while %n task(s) ran", "", n)
        counts = Counter(e.action for e in entries)
        order = [*ACTIONS, *sorted(set(counts) - set(ACTIONS))]
        parts = [self.action_count(action, counts[action]) for action in order if counts[action]]
        return f"{head} — {', '.join(parts)}."

    def action_count(self, action: str, n: int) -> str:
        """ "2 resumed", "1 held for review"…"""
        counts = {
            "resumed": self.tr("%n resumed", "", n),
            "restarted": self.tr("%n restarted from the start", "", n),
            "requeued": self.tr("%n requeued", "", n),
            "held": self.tr("%n held for review", "", n),
            "kept_paused": self.tr("%n kept paused", "", n),
            "failed": self.tr("%n failed", "", n),
        }
        return counts.get(action, f"{n} {action}")

    def action_name(self, action: str) -> str:
        names = {
            "resumed": self.tr("resumed from its checkpoint"),
            "restarted": self.tr("restarted from the start"),
            "requeued": self.tr("requeued"),
            "held": self.tr("held for review"),
            "kept_paused": self.tr("kept paused"),
            "failed": self.tr("failed"),
        }
        return names.get(action, action)

    def charge_note(self, entry: RestartLogEntry) -> str:
        """Whether the crash counted against the task's limit: " · charged 2 of 5", " · not
        charged" (its work runs elsewhere, or it was getting on), or nothing (no crash)."""
        charged = entry.charged
        if charged is not None:
            n, limit = charged
            return " · " + self.tr("charged %1 of %2").replace("%1", str(n)).replace(
                "%2", str(limit)
            )
        return " · " + self.tr("not charged") if entry.not_charged else ""

    def task_now(self, task: TaskRecord | None) -> str:
        """How an entry's task is now, in a word or two."""
        if task is None:
            return self.tr("deleted")
        if task.status in ACTIVE and task.is_paused:
            return self.tr("held")
        names = {
            TaskStatus.PENDING: self.tr("queued"),
            TaskStatus.CLAIMED: self.tr("starting"),
            TaskStatus.RUNNING: self.tr("running"),
            TaskStatus.COMPLETED: self.tr("completed"),
            TaskStatus.FAILED: self.tr("failed"),
            TaskStatus.CANCELLED: self.tr("cancelled"),
        }
        return names.get(task.status, task.status.value)

    # --- the review list ----------------------------------------------------------------------

    def _review(self, shown: bool) -> None:
        if shown:
            self._fill()
        self.list.setVisible(shown)

    def _fill(self) -> None:
        self.list.clear()
        for entry in self.pending.entries[:MAX_ROWS]:
            task = self.pending.tasks.get(entry.task_id)
            name = entry.task_type + (f" · {task.key}" if task is not None and task.key else "")
            item = QTreeWidgetItem(
                [
                    name,
                    (entry.workflow_run_id or "—")[:8],
                    self.tr("%1 at %2 %")
                    .replace("%1", entry.status_at_restart)
                    .replace("%2", f"{entry.progress:.0f}"),
                    self.action_name(entry.action) + self.charge_note(entry),
                    self.task_now(task),
                    "",
                ]
            )
            item.setToolTip(self.RECOVERY, entry.detail or "")
            item.setToolTip(self.RUN, entry.workflow_run_id or "")
            self.list.addTopLevelItem(item)
            self.list.setItemWidget(item, self.BUTTONS, self._row_buttons(entry, task))
        hidden = len(self.pending.entries) - MAX_ROWS
        if hidden > 0:
            more = self.tr("… and %n more (`fredica restart-log` lists them all)", "", hidden)
            self.list.addTopLevelItem(QTreeWidgetItem([more]))
        # As tall as its rows, up to a few: the pages below stay in sight.
        rows = min(self.list.topLevelItemCount(), MAX_VISIBLE_ROWS)
        row_height = self.list.sizeHintForRow(0) if rows else 0
        frame = 2 * self.list.frameWidth()
        self.list.setFixedHeight(self.list.header().sizeHint().height() + rows * row_height + frame)

    def _row_buttons(self, entry: RestartLogEntry, task: TaskRecord | None) -> QWidget:
        cell = QWidget()
        line = QHBoxLayout(cell)
        line.setContentsMargins(2, 0, 2, 0)
        retry = QPushButton(self.tr("Retry"))
        retry.setObjectName(f"retry-{entry.id}")
        if task is not None and task.status in _REDO:
            retry.setToolTip(self.tr("Run it again"))
        elif task is not None and task.status in ACTIVE and task.is_paused:
            retry.setToolTip(self.tr("Resume it"))
        else:
            retry.setEnabled(False)
            retry.setToolTip(self.tr("Nothing to retry: it is queued, running or finished"))
        dismiss = QPushButton(self.tr("Dismiss"))
        dismiss.setObjectName(f"dismiss-{entry.id}")
        retry.clicked.connect(lambda: self.retry(entry.id))
        dismiss.clicked.connect(lambda: self.dismiss(entry.id))
        line.addWidget(retry)
        line.addWidget(dismiss)
        return cell

    # --- acting -------------------------------------------------------------------------------

    def retry_all(self) -> None:
        """Retry every pending entry's task that needs it; mark them all ``retried``."""
        self._act(lambda app: retry_entries(app))

    def dismiss_all(self) -> None:
        """Mark every pending entry ``dismissed``."""
        self._act(lambda app: dismiss_entries(app))

    def retry(self, entry_id: int) -> None:
        self._act(lambda app: retry_entries(app, {entry_id}))

    def dismiss(self, entry_id: int) -> None:
        self._act(lambda app: dismiss_entries(app, {entry_id}))

    def _act(self, job: Callable[[Fredica], Awaitable[list[str]]]) -> None:
        self._enable(False)
        self.problem.hide()
        self._call(job, self._acted)

    def _acted(self, problems: list[str]) -> None:
        if problems:
            self.problem.setText("\n".join(problems))
            self.problem.show()
        self.refresh()

    def _enable(self, enabled: bool) -> None:
        for widget in (self.retry_all_button, self.dismiss_all_button, self.list):
            widget.setEnabled(enabled)
