"""The queue page: runs and tasks, live, with their actions.

Left, a search box and the states with their counts (``queue_sidebar``); right, a toolbar
with the actions (``queue_actions``), then the runs above the tasks in a splitter. Selecting
runs shows only their tasks; a state, or a search, narrows the tasks further
(``queue_filter``).

Everything comes from the window's :class:`~fredica_app.gui.feed.Feed`: a snapshot loads the
models and the counts once; each batch of changes is applied to them — the models update the
rows it names, the counts move by one per changed task — and nothing here ever walks all
rows because of a batch. Actions go through the application host; an error shows as one line
(the window's status bar, or a line on the page when it stands alone).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QCoreApplication,
    QEvent,
    QModelIndex,
    QObject,
    QPoint,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMainWindow,
    QSplitter,
    QStyle,
    QTableView,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from fredica_app.gui.delegates import ProgressDelegate
from fredica_app.gui.feed import Feed
from fredica_app.gui.host import AppHost
from fredica_app.gui.models import (
    TEMPLATE_LABELS,
    RunTableModel,
    TaskTableModel,
    badge_text,
    run_status_text,
    template_label,
)
from fredica_app.gui.persist import ViewState
from fredica_app.gui.queue_actions import QueueActions, Scope, Selection
from fredica_app.gui.queue_filter import TaskFilterProxy
from fredica_app.gui.queue_sidebar import StateSidebar, TrackedCounts
from fredica_app.views.queue_state import Badge, badge
from fredica_app.views.records import shown, task_outputs
from workers.changes import Change, Snapshot, Tombstone
from workers.records import TaskRecord
from workers.states import RunStatus, TaskStatus

if TYPE_CHECKING:
    from fredica_app.services import Fredica

log = logging.getLogger(__name__)

#: The search filters this long after the last key (a keystroke does not refilter 10,000 rows).
SEARCH_MS = 200
#: After a batch, the actions follow the selection's new records this much later (once per
#: burst of batches).
ACTIONS_MS = 150
#: How long a line stays shown.
MESSAGE_MS = 10_000
#: The runs' notes are read this long after a change (once per burst of changes).
NOTES_AFTER_MS = 300
#: The columns' first widths, before the user's own are restored.
_ASCENDING = Qt.SortOrder.AscendingOrder
_DESCENDING = Qt.SortOrder.DescendingOrder
#: The columns' first widths, before the user's own are restored: the widest of these samples
#: of their content (and of the header), a column of bars as wide as given; ``None``: the
#: column that takes the room left (the file's name). What the samples fit: the workflows'
#: names, the states, the longest times.
_BAR = 160
#: A column of text is never made wider than this at first (its cells are elided).
_WIDEST = 170
_FOCUS_IN = QEvent.Type.FocusIn


class QueuePage(QWidget):
    """Runs and tasks, live (see the module's docstring)."""

    #: A run's id: show its details.
    open_run = Signal(str)

    def __init__(self, host: AppHost, feed: Feed, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("queue")
        self.host = host
        self.feed = feed
        self.counts = TrackedCounts()
        self.runs = RunTableModel(self)
        self.tasks = TaskTableModel(self, badges=self.badge_of, titles=self.runs.titles)
        self._titles_asked: set[str] = set()
        # The runs' notes are asked for a moment after a burst of changes, once for it all.
        self._notes_timer = QTimer(self)
        self._notes_timer.setSingleShot(True)
        self._notes_timer.setInterval(NOTES_AFTER_MS)
        self._notes_timer.timeout.connect(self._ask_notes)
        self.filter = TaskFilterProxy(self.tasks, self.badge_of, self, titles=self.runs.titles)
        self._scope = Scope.TASKS
        #: The last line shown (errors and notes), for tests and for the page's own label.
        self.last_message = ""

        self.sidebar = StateSidebar()
        self.sidebar.chosen.connect(self.filter.set_badge)
        self.runs_view = _table(
            self.runs, "queue-runs", RunTableModel.PROGRESS, RunTableModel.TITLE
        )
        self.tasks_view = _table(
            self.filter, "queue-tasks", TaskTableModel.PROGRESS, TaskTableModel.FILE
        )
        _fit(self.runs_view, _run_samples())
        _fit(self.tasks_view, _task_samples())
        _sort_on_click(self.runs_view, self.runs)
        _sort_on_click(self.tasks_view, self.tasks)
        self.commands = QueueActions(host, self.selection, self)
        self.commands.message.connect(self.show_message)
        self.commands.open_run.connect(self.open_run)

        self.search = QLineEdit()
        self.search.setObjectName("queue-search")
        self.search.setClearButtonEnabled(True)
        self.search.setPlaceholderText(self.tr("Search: file, task, type or run"))
        self.search.setMaximumWidth(self.sidebar.maximumWidth())
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_MS)
        self._search_timer.timeout.connect(lambda: self.filter.set_text(self.search.text()))
        self.search.textChanged.connect(self._search_timer.start)

        self.toolbar = QToolBar()
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toolbar.addActions(self.commands.selection_actions)
        self.toolbar.addSeparator()
        self.toolbar.addAction(self.commands.pause_queue)

        self.notice = QLabel()
        self.notice.setObjectName("queue-notice")
        self.notice.setWordWrap(True)
        self.notice.hide()
        self._notice_timer = QTimer(self)
        self._notice_timer.setSingleShot(True)
        self._notice_timer.setInterval(MESSAGE_MS)
        self._notice_timer.timeout.connect(self.notice.hide)

        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("queue-splitter")
        self.splitter.addWidget(self.runs_view)
        self.splitter.addWidget(self.tasks_view)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setChildrenCollapsible(False)

        # The actions across the whole page, above the states and the tables: on a 1280-pixel
        # screen they fit there, where beside the states they were folded behind "»".
        right = QVBoxLayout()
        right.setContentsMargins(0, 0, 0, 0)
        right.setSpacing(4)
        right.addWidget(self.notice)
        right.addWidget(self.splitter, 1)
        left = QVBoxLayout()
        left.setContentsMargins(0, 0, 0, 0)
        left.setSpacing(4)
        left.addWidget(self.search)
        left.addWidget(self.sidebar, 1)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addLayout(left)
        row.addLayout(right, 1)
        page = QVBoxLayout(self)
        page.setContentsMargins(6, 6, 6, 6)
        page.setSpacing(4)
        page.addWidget(self.toolbar)
        page.addLayout(row, 1)

        self._wire_views()
        self._actions_timer = QTimer(self)
        self._actions_timer.setSingleShot(True)
        self._actions_timer.setInterval(ACTIONS_MS)
        self._actions_timer.timeout.connect(self.commands.refresh)
        feed.snapshot.connect(self.load)
        feed.changes.connect(self.apply)
        self._update_sidebar()

    def _wire_views(self) -> None:
        tasks_view, runs_view = self.tasks_view, self.runs_view
        # Keyboard shortcuts work while a table has the focus (see queue_actions).
        actions = self.commands
        tasks_view.addActions(actions.selection_actions)
        # Not on the runs: Enter opens a run's details there, Ctrl+C copies as tables do.
        runs_view.addActions([actions.pause, actions.resume, actions.cancel, actions.retry])
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):  # on a run: its details
            shortcut = QShortcut(QKeySequence(key), runs_view)
            shortcut.setContext(Qt.ShortcutContext.WidgetShortcut)
            shortcut.activated.connect(self.commands.details.trigger)
        for view in (tasks_view, runs_view):
            view.installEventFilter(self)
            view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            view.customContextMenuRequested.connect(lambda pos, v=view: self._context_menu(v, pos))
        tasks_view.selectionModel().selectionChanged.connect(
            lambda *_: self._selection_changed(Scope.TASKS)
        )
        runs_view.selectionModel().selectionChanged.connect(self._runs_selected)
        tasks_view.doubleClicked.connect(self._task_double_clicked)
        runs_view.doubleClicked.connect(
            lambda index: self.open_run.emit(self.runs.record_at(index.row()).id)
        )

    # --- the feed ------------------------------------------------------------------------------

    def load(self, snapshot: Snapshot) -> None:
        """(Re)load from a snapshot: the one time the counts are made from all tasks."""
        self.counts = TrackedCounts(snapshot.tasks)
        self.runs.load(snapshot)
        self._ask_titles()
        self._notes_timer.start()
        self.tasks.load(snapshot)
        self._update_sidebar()
        self.commands.refresh()

    def apply(self, batch: list[Any]) -> None:
        """A batch of changes: the counts by ±1 per changed task, the models' rows, the rows
        whose badge moved because of another's change, and the filter for those rows only."""
        counts = self.counts
        changed: list[str] = []
        for item in batch:
            record = item.record if isinstance(item, Change) else item
            if isinstance(record, TaskRecord):
                counts.apply(record)
                changed.append(record.id)
            elif isinstance(record, Tombstone) and record.kind == "task":
                counts.apply(record)
        self.runs.apply(batch)
        self._ask_titles()
        if not self._notes_timer.isActive():
            self._notes_timer.start()
        self.tasks.apply(batch)
        moved = counts.take_moved().difference(changed)
        if moved:
            self.tasks.refresh(moved)
        if changed or moved:
            self.filter.recheck([*changed, *moved])
            self._update_sidebar()
        if self.tasks_view.selectionModel().hasSelection() or (
            self.runs_view.selectionModel().hasSelection()
        ):
            self._actions_timer.start()

    def _ask_titles(self) -> None:
        """Ask the library for the titles of the runs' materials it has not said yet (off the
        GUI thread; each material once)."""
        wanted = self.runs.missing_titles() - self._titles_asked
        if not wanted:
            return
        self._titles_asked |= wanted
        gone = self.tr("(removed from the library)")

        async def read(app: Fredica) -> dict[str, str]:
            found = await asyncio.to_thread(app.library.titles, wanted)
            return {m: shown(found[m]) if m in found else gone for m in wanted}

        try:
            self.host.call(read, self._got_titles, self._titles_failed(wanted))
        except RuntimeError:  # the application has closed
            self._titles_asked -= wanted

    def _ask_notes(self) -> None:
        """Ask the queue how many tasks of each run that moved on left a note (off the GUI
        thread): those runs' rows show a warning."""
        wanted = self.runs.notes_to_ask()
        if not wanted:
            return

        async def read(app: Fredica) -> dict[str, int]:
            progress = await app.store.run_progress(wanted)
            return {i: progress[i].notes if i in progress else 0 for i in wanted}

        def failed(exc: Exception) -> None:
            log.warning("could not read the runs' notes: %s", exc)
            self.runs.notes_not_read(wanted)

        try:
            self.host.call(read, self.runs.set_notes, failed)
        except RuntimeError:  # the application has closed
            self.runs.notes_not_read(wanted)

    def _got_titles(self, titles: dict[str, str]) -> None:
        self.runs.set_titles(titles)
        self.tasks.refresh_materials(titles)
        if self.filter.active:  # a search may now find these files' tasks
            self.filter.refilter()

    def _titles_failed(self, wanted: set[str]) -> Callable[[Exception], None]:
        def failed(exc: Exception) -> None:
            log.warning("could not read the materials' titles: %s", exc)
            self._titles_asked -= wanted  # asked again with the next change

        return failed

    def badge_of(self, task: TaskRecord) -> Badge:
        """A task's badge as counted (its dependencies' records considered)."""
        return self.counts.badge_of(task.id) or badge(task)

    def _update_sidebar(self) -> None:
        self.sidebar.set_counts(self.counts.counts, self.tasks.rowCount())

    # --- the selection -------------------------------------------------------------------------

    def selection(self) -> Selection:
        """The selected tasks and runs, and which table the actions act on."""
        proxy, record_at = self.filter, self.tasks.record_at
        rows = _selected_rows(self.tasks_view)
        if proxy.active:
            rows = [proxy.mapToSource(proxy.index(row, 0)).row() for row in rows]
        # (Unfiltered, the proxy neither hides nor moves a row: its rows are the model's.)
        tasks = [record_at(row) for row in rows]
        runs = [self.runs.record_at(row) for row in _selected_rows(self.runs_view)]
        return Selection(self._scope, tasks, runs)

    def selected_run_ids(self) -> list[str]:
        return [r.id for r in self.selection().runs]

    def set_scope(self, scope: Scope) -> None:
        """Make the actions act on the tasks or on the runs (the table in use does)."""
        self._scope = scope
        self.commands.refresh()

    def _selection_changed(self, scope: Scope) -> None:
        view = self.tasks_view if scope is Scope.TASKS else self.runs_view
        other = self.runs_view if scope is Scope.TASKS else self.tasks_view
        # The table in use is the one with the focus; with neither focused, the one the user
        # (or a test) just selected in. A selection the filter trims is no choice of table.
        if view.selectionModel().hasSelection() and not other.hasFocus():
            self._scope = scope
        self.commands.refresh()

    def _runs_selected(self, *_: Any) -> None:
        self.filter.set_runs(self.selected_run_ids())
        self._selection_changed(Scope.RUNS)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == _FOCUS_IN:
            self.set_scope(Scope.TASKS if watched is self.tasks_view else Scope.RUNS)
        return False

    def _context_menu(self, view: QTableView, pos: QPoint) -> None:
        self.set_scope(Scope.TASKS if view is self.tasks_view else Scope.RUNS)
        menu = self.commands.menu(self)
        if menu is not None:
            menu.exec(view.viewport().mapToGlobal(pos))
            menu.deleteLater()

    def _task_double_clicked(self, index: QModelIndex) -> None:
        task: TaskRecord = self.tasks.record_at(self.filter.mapToSource(index).row())
        if task.status is TaskStatus.COMPLETED and task_outputs(task):
            self.commands.open_outputs([task])
        elif task.workflow_run_id:
            self.open_run.emit(task.workflow_run_id)

    # --- the queue's pause, messages, what is remembered ---------------------------------------

    def show_queue_paused(self, paused: bool) -> None:
        """The queue's pause flag as read (the window reads it every second)."""
        self.commands.show_queue_paused(paused)

    def show_message(self, text: str) -> None:
        """One line for the user: in the window's status bar, or on the page standing alone
        ("" clears the page's line)."""
        if text:
            self.last_message = text
        window = self.window()
        if isinstance(window, QMainWindow):
            if text:
                window.statusBar().showMessage(text, MESSAGE_MS)
            return
        self.notice.setText(text)
        self.notice.setVisible(bool(text))
        if text:
            self._notice_timer.start()

    def save_view_state(self, vs: ViewState) -> None:
        vs.save("queue-splitter", self.splitter)
        vs.save("queue-tasks", self.tasks_view.horizontalHeader())
        vs.save("queue-runs", self.runs_view.horizontalHeader())

    def restore_view_state(self, vs: ViewState) -> None:
        vs.restore("queue-splitter", self.splitter)
        vs.restore("queue-tasks", self.tasks_view.horizontalHeader())
        vs.restore("queue-runs", self.runs_view.horizontalHeader())


def _selected_rows(view: QTableView) -> list[int]:
    """The selected rows, in the order they were selected: from the selection's ranges
    (``selectedRows()`` asks every cell of every row whether it is selected, in Python)."""
    rows: dict[int, None] = {}
    selection = view.selectionModel().selection()
    for n in range(selection.size()):
        part = selection.at(n)
        rows.update(dict.fromkeys(range(part.top(), part.bottom() + 1)))
    return list(rows)


def _table(model: Any, name: str, progress: int, stretch: int) -> QTableView:
    """A table of a queue model: rows selected whole, the progress column drawn as bars, fixed
    row heights; ``stretch``, the column that takes the room the others leave (sizing every
    column to its contents would read every row: :func:`_fit` sizes them from samples)."""
    view = QTableView()
    view.setObjectName(name)
    view.setModel(model)
    view.setItemDelegateForColumn(progress, ProgressDelegate(view))
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setShowGrid(False)
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.setSortingEnabled(False)  # see queue_filter: no sorting of 10,000 rows in Python
    rows = view.verticalHeader()
    rows.hide()
    rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    rows.setDefaultSectionSize(view.fontMetrics().height() + 10)
    header = view.horizontalHeader()
    header.setHighlightSections(False)
    header.setStretchLastSection(False)
    header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    return view


def _fit(view: QTableView, samples: dict[int, list[str] | int]) -> None:
    """Each column as wide as the widest of its header and its samples (a number: that many
    pixels, for a column of bars); the stretching column keeps what is left."""
    header = view.horizontalHeader()
    metrics = view.fontMetrics()
    model = view.model()
    pad = 2 * view.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin) + 16  # the sort mark
    for column, sample in samples.items():
        if isinstance(sample, int):
            header.resizeSection(column, sample)
            continue
        title = str(model.headerData(column, Qt.Orientation.Horizontal))
        widest = max(metrics.horizontalAdvance(text) for text in [title, *sample])
        header.resizeSection(column, min(widest + pad, _WIDEST))


def _run_samples() -> dict[int, list[str] | int]:
    m = RunTableModel
    tr = QCoreApplication.translate
    counts = (
        f"{tr('RunTableModel', '%n running', '', 2)} · {tr('RunTableModel', '%n pending', '', 3)}"
    )
    return {
        m.TEMPLATE: [template_label(t) for t in TEMPLATE_LABELS],
        m.STATE: [run_status_text(s) for s in RunStatus],
        m.PROGRESS: _BAR,
        m.TASKS: [counts],
        m.CREATED: ["2026-12-31 23:59"],
    }


def _task_samples() -> dict[int, list[str] | int]:
    m = TaskTableModel
    resumed = QCoreApplication.translate("TaskTableModel", "resumed")
    return {
        m.NAME: ["export_subtitles"],
        m.TYPE: ["EXPORT_SUBTITLES"],
        # A task resumed after a restart says so beside its state ("running · resumed").
        m.STATE: [*(badge_text(b) for b in Badge), f"{badge_text(Badge.RUNNING)} · {resumed}"],
        m.PROGRESS: _BAR,
        m.ATTEMPT: ["2 / 3"],
        m.ETA: ["1 h 02 min"],
    }


def _sort_on_click(view: QTableView, model: Any) -> None:
    """A click on a column's header orders ``model``'s rows by it once, then the other way on
    the next click; rows stay where they are as they change (no live sorting: see
    ``RecordTableModel.sort``). The filter above the task model keeps the new order."""
    header = view.horizontalHeader()
    header.setSectionsClickable(True)
    header.setSortIndicatorShown(True)
    header.setSortIndicator(-1, _ASCENDING)

    def on_click(column: int) -> None:
        order = header.sortIndicatorOrder() if header.sortIndicatorSection() == column else None
        order = _DESCENDING if order == _ASCENDING else _ASCENDING
        model.sort(column, order)
        header.setSortIndicator(column, order)

    header.sectionClicked.connect(on_click)
