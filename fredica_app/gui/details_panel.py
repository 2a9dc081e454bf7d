"""The run details page's panel for the selected task: its payload, its result (the files it
made, each opening its folder), its error with a hint of what to do, and its timeline.

The timeline is read from the store through the host (``store.events``), never on the GUI
thread: when the task is selected, then again when its record changes in a way that writes
an event (a new status, attempt, pause), at most once per :data:`TIMELINE_DELAY_MS` and one
read at a time — a running task reports progress many times a second, and none of that adds
an event.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from PySide6.QtCore import QCoreApplication, QFileInfo, Qt, QTimer, QUrl
from PySide6.QtGui import QDesktopServices, QFont, QFontDatabase, QGuiApplication, QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from fredica_app.gui.details_paint import badge_text
from fredica_app.gui.host import AppHost
from fredica_app.gui.status_words import status_words
from fredica_app.gui.symbols import WARNING, symbol
from fredica_app.views import error_hints
from fredica_app.views.queue_state import Badge
from python_endpoints.text import clean_text
from workers.records import EventRecord, TaskRecord
from workers.states import TaskStatus

log = logging.getLogger(__name__)

#: The least time between two reads of the selected task's timeline.
TIMELINE_DELAY_MS = 400
#: Where a file's path is kept on its item of the outputs list.
PATH_ROLE = Qt.ItemDataRole.UserRole + 1

_SELECTABLE = Qt.TextInteractionFlag.TextSelectableByMouse


def _timeline_fields(task: TaskRecord) -> tuple[Any, ...]:
    """What changes with every event the store writes (progress and status text do not)."""
    return (
        task.status,
        task.attempt,
        task.retry_count,
        task.is_paused,
        task.error_type,
        task.claimed_at,
        task.started_at,
        task.completed_at,
        task.interruptions,
    )


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON for a person; a path that is not UTF-8 shows U+FFFD (Qt
    would drop its bytes)."""
    return clean_text(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def event_time(at: float, now: float) -> str:
    """``14:03:27.512`` today; ``2025-03-01 14:03:27`` another day."""
    then, today = time.localtime(at), time.localtime(now)
    if then[:3] == today[:3]:
        return time.strftime("%H:%M:%S", then) + f".{int(at * 1000) % 1000:03d}"
    return time.strftime("%Y-%m-%d %H:%M:%S", then)


def event_detail(detail: Mapping[str, Any] | None) -> str:
    """An event's detail on one line: ``error_type: NO_SPACE · delay: 2.0``."""
    if not detail:
        return ""
    parts = []
    for key, value in detail.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}: {text}")
    return " · ".join(parts)


class TaskPanel(QWidget):
    """The selected task's details, in tabs; kept current by :meth:`show_task`."""

    PAYLOAD, RESULT, ERROR, TIMELINE = range(4)

    def __init__(self, host: AppHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        #: Opens a folder (a test replaces it).
        self.open_url: Callable[[QUrl], Any] = QDesktopServices.openUrl
        self.task: TaskRecord | None = None
        self.events: list[EventRecord] = []
        self._shown: tuple[TaskRecord, Badge] | None = None
        self._timeline_busy = False
        self._timeline_again = False
        self._timeline_timer = QTimer(self)
        self._timeline_timer.setSingleShot(True)
        self._timeline_timer.setInterval(TIMELINE_DELAY_MS)
        self._timeline_timer.timeout.connect(self.refresh_timeline)

        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.title = QLabel()
        self.title.setTextInteractionFlags(_SELECTABLE)
        self.title.setWordWrap(True)
        self.tabs = QTabWidget()
        self.payload = QPlainTextEdit(readOnly=True)
        self.payload.setFont(mono)
        self.payload.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.tabs.addTab(self.payload, self.tr("Payload"))
        self.tabs.addTab(self._build_result(mono), self.tr("Result"))
        self.tabs.addTab(self._build_error(), self.tr("Error"))
        self.tabs.addTab(self._build_timeline(), self.tr("Timeline"))

        self.empty = QLabel(self.tr("Click a task in the graph to see its details."))
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setEnabled(False)
        content = QWidget()
        column = QVBoxLayout(content)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.title)
        column.addWidget(self.tabs, 1)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.stack)

    # --- building --------------------------------------------------------------------------

    def _build_result(self, mono: QFont) -> QWidget:
        self.result_stack = QStackedWidget()
        self.no_result = QLabel(self.tr("No result yet: the task has not finished."))
        self.no_result.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.no_result.setEnabled(False)
        page = QWidget()
        column = QVBoxLayout(page)
        self.outputs_label = QLabel(self.tr("Files it made (double-click one to open its folder):"))
        self.outputs = QListWidget()
        self.outputs.itemActivated.connect(self._open_item)
        self.rest_label = QLabel(self.tr("Other values:"))
        self.result_json = QPlainTextEdit(readOnly=True)
        self.result_json.setFont(mono)
        self.result_json.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        for widget in (self.outputs_label, self.outputs, self.rest_label):
            column.addWidget(widget)
        column.addWidget(self.result_json, 1)
        self.result_stack.addWidget(self.no_result)
        self.result_stack.addWidget(page)
        return self.result_stack

    def _build_error(self) -> QWidget:
        self.error_stack = QStackedWidget()
        self.no_error = QLabel(self.tr("No error: this task has not failed."))
        self.no_error.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.no_error.setEnabled(False)
        page = QWidget()
        column = QVBoxLayout(page)
        self.error_title = QLabel()
        self.error_title.setTextInteractionFlags(_SELECTABLE)
        self.error_hint = QLabel()
        self.error_hint.setWordWrap(True)
        self.error_hint.setTextInteractionFlags(_SELECTABLE)
        self.retry_note = QLabel()
        self.retry_note.setWordWrap(True)
        self.error_message = QPlainTextEdit(readOnly=True)
        # A few lines: ffmpeg's last words fit, and a longer message scrolls.
        self.error_message.setMaximumHeight(self.fontMetrics().lineSpacing() * 7)
        copy = QPushButton(self.tr("Copy the error"))
        copy.clicked.connect(self._copy_error)
        row = QHBoxLayout()
        row.addWidget(self.retry_note, 1)
        row.addWidget(copy)
        column.addWidget(self.error_title)
        column.addWidget(self.error_hint)
        column.addWidget(QLabel(self.tr("Message:")))
        column.addWidget(self.error_message)
        column.addLayout(row)
        column.addStretch(1)
        self.error_stack.addWidget(self.no_error)
        self.error_stack.addWidget(page)
        return self.error_stack

    def _build_timeline(self) -> QWidget:
        self.timeline = QTableWidget(0, 3)
        self.timeline.setHorizontalHeaderLabels(
            [self.tr("Time"), self.tr("Event"), self.tr("Detail")]
        )
        rows = self.timeline.verticalHeader()
        rows.hide()
        rows.setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.timeline.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.timeline.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.timeline.setWordWrap(False)
        header = self.timeline.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        return self.timeline

    # --- showing a task --------------------------------------------------------------------

    def show_task(self, task: TaskRecord | None, shown: Badge | None = None) -> None:
        """Show ``task`` (None: nothing selected) with its badge. The same task again with a
        newer record updates what changed; a new task is shown from the start."""
        old = self.task
        self.task = task
        if task is None:
            self._shown = None
            self.stack.setCurrentIndex(0)
            self._timeline_timer.stop()
            return
        self.stack.setCurrentIndex(1)
        badge_shown = shown or Badge.QUEUED
        if old is None or old.id != task.id:
            self._shown = None
            self.events = []
            self.timeline.setRowCount(0)
            self._fill(task, badge_shown, None)
            if task.status is TaskStatus.FAILED:  # what the user opens a failed task for
                self.tabs.setCurrentIndex(self.ERROR)
            self._timeline_timer.stop()
            self.refresh_timeline()
            return
        if self._shown != (task, badge_shown):
            self._fill(task, badge_shown, old)
        if _timeline_fields(task) != _timeline_fields(old) and not self._timeline_timer.isActive():
            self._timeline_timer.start()

    def _fill(self, task: TaskRecord, shown: Badge, old: TaskRecord | None) -> None:
        self._shown = (task, shown)
        state = badge_text(shown)
        if shown in (Badge.RUNNING, Badge.PAUSED) and task.progress:
            state += f" {task.progress:.0f} %"
        if task.status_text and task.status in (TaskStatus.CLAIMED, TaskStatus.RUNNING):
            state += f" — {status_words(task)}"
        title = f"<b>{_esc(task.key or task.id[:8])}</b> · {_esc(task.type)} · {_esc(state)}"
        if task.attempt:
            attempts = self.tr("attempt %1 of %2")
            attempts = attempts.replace("%1", str(task.attempt))
            title += " · " + attempts.replace("%2", str(task.max_retries + 1))
        self.title.setText(title)
        self.title.setToolTip(task.id)
        if old is None or old.payload != task.payload:
            self.payload.setPlainText(pretty_json(task.payload))
        if old is None or old.result != task.result:
            self._fill_result(task)
        if old is None or (old.error, old.error_type, old.status) != (
            task.error,
            task.error_type,
            task.status,
        ):
            self._fill_error(task)

    def _fill_result(self, task: TaskRecord) -> None:
        result = task.result
        if result is None:
            self.result_stack.setCurrentIndex(0)
            return
        self.result_stack.setCurrentIndex(1)
        self.outputs.clear()
        paths = result.get("outputs")
        paths = [str(p) for p in paths] if isinstance(paths, list) else []
        icon = symbol("file")
        for path in paths:
            item = QListWidgetItem(icon, path, self.outputs)
            item.setData(PATH_ROLE, path)
            item.setToolTip(self.tr("Double-click to open the folder of %1").replace("%1", path))
        for widget in (self.outputs_label, self.outputs):
            widget.setVisible(bool(paths))
        rows = min(len(paths), 5)  # as tall as its files, up to five; more scroll
        frame = 2 * self.outputs.frameWidth() + 4
        self.outputs.setFixedHeight(frame + rows * max(self.outputs.sizeHintForRow(0), 1))
        rest = {k: v for k, v in result.items() if k != "outputs" or not paths}
        self.rest_label.setVisible(bool(paths))
        self.result_json.setPlainText(pretty_json(rest))

    def _fill_error(self, task: TaskRecord) -> None:
        self.tabs.setTabIcon(self.ERROR, self._warning_icon() if task.error else QIcon())
        if not task.error and not task.error_type:
            self.error_stack.setCurrentIndex(0)
            return
        self.error_stack.setCurrentIndex(1)
        kind = task.error_type
        heading = QCoreApplication.translate(error_hints.CONTEXT, error_hints.title(kind))
        self.error_title.setText(f"<b>{_esc(heading)}</b> ({_esc(kind or '?')})")
        hint = QCoreApplication.translate(error_hints.CONTEXT, error_hints.hint(kind))
        self.error_hint.setText(f"<b>{_esc(self.tr('What to do:'))}</b> {_esc(hint)}")
        self.error_message.setPlainText(task.error or "")
        note = ""
        if task.status is TaskStatus.PENDING:
            note = self.tr("This was the last attempt's error: the task will be tried again.")
        elif task.status in (TaskStatus.CLAIMED, TaskStatus.RUNNING):
            note = self.tr("This was the last attempt's error: the task is being tried again.")
        self.retry_note.setText(note)

    def _warning_icon(self) -> QIcon:
        return symbol("triangle-alert", WARNING)

    # --- actions ---------------------------------------------------------------------------

    def _open_item(self, item: QListWidgetItem) -> None:
        path = str(item.data(PATH_ROLE))
        self.open_url(QUrl.fromLocalFile(QFileInfo(path).absolutePath()))

    def _copy_error(self) -> None:
        task = self.task
        if task is not None and (task.error or task.error_type):
            QGuiApplication.clipboard().setText(f"[{task.error_type}] {task.error or ''}")

    # --- the timeline ----------------------------------------------------------------------

    def refresh_timeline(self) -> None:
        """Read the selected task's events again (one read at a time)."""
        task = self.task
        if task is None:
            return
        if self._timeline_busy:
            self._timeline_again = True
            return
        self._timeline_busy = True
        task_id = task.id
        self.host.call(
            lambda app: app.store.events(task_id),
            lambda events: self._on_events(task_id, events),
            lambda exc: self._on_events_failed(task_id, exc),
        )

    def _on_events(self, task_id: str, events: list[EventRecord]) -> None:
        self._timeline_busy = False
        if self.task is not None and self.task.id == task_id:
            self.events = list(events)
            self._fill_timeline()
        self._next_timeline()

    def _on_events_failed(self, task_id: str, exc: Exception) -> None:
        self._timeline_busy = False
        log.warning("reading the timeline of task %s failed: %s", task_id, exc)
        self._next_timeline()

    def _next_timeline(self) -> None:
        if self._timeline_again:
            self._timeline_again = False
            self._timeline_timer.start()

    def _fill_timeline(self) -> None:
        table, now = self.timeline, time.time()
        kinds = self._event_kinds()
        table.setRowCount(len(self.events))
        for row, event in enumerate(self.events):
            at = QTableWidgetItem(event_time(event.at, now))
            at.setToolTip(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.at)))
            table.setItem(row, 0, at)
            table.setItem(row, 1, QTableWidgetItem(kinds.get(event.kind, event.kind)))
            detail = event_detail(event.detail)
            cell = QTableWidgetItem(detail)
            cell.setToolTip(detail)
            table.setItem(row, 2, cell)
        table.scrollToBottom()

    def _event_kinds(self) -> dict[str, str]:
        return {
            "claimed": self.tr("claimed"),
            "started": self.tr("started"),
            "completed": self.tr("completed"),
            "failed": self.tr("failed"),
            "retry_scheduled": self.tr("retry scheduled"),
            "retried": self.tr("retried"),
            "cancelled": self.tr("cancelled"),
            "paused": self.tr("paused"),
            "resumed": self.tr("resumed"),
            "recovered": self.tr("recovered after a restart"),
            "interrupted": self.tr("interrupted (not charged)"),
        }


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
