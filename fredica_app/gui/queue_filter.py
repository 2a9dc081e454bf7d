"""Which tasks the queue page shows: a state, a search text, the selected runs.

A :class:`QSortFilterProxyModel` with ``dynamicSortFilter`` off: with it on, every
``dataChanged`` re-runs the filter on the changed rows and re-sorts them, per batch, on the GUI
thread. Off, the proxy still filters rows as they are inserted, but a changed row keeps its
place even when it no longer matches (a running task that completes, under the "running"
filter). :meth:`TaskFilterProxy.recheck` looks at the changed rows only, and when one of them
should appear or go, filters again — once, a moment later, however many batches arrive
meanwhile. No filter set: nothing is looked at.

The proxy does not sort (on 10,000 rows its sort costs about half a second of Python
comparisons per click): a header click orders the task model itself, once, by a key read from
the records (``RecordTableModel.sort``), and the proxy keeps that order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from PySide6.QtCore import (
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    QTimer,
)

from fredica_app.gui.models import TaskTableModel
from fredica_app.views.queue_state import Badge
from workers.records import TaskRecord

#: After a batch that changes what the filter shows, filter again this much later (batches
#: come every 80 ms: a burst costs one pass over the rows, not one per batch).
REFILTER_MS = 250

_ROWS = QSortFilterProxyModel.Direction.Rows


class TaskFilterProxy(QSortFilterProxyModel):
    """The task table as the page shows it. ``badge_of`` says a task's badge (the page's
    counts, so that a state's row count and the rows shown agree)."""

    def __init__(
        self,
        tasks: TaskTableModel,
        badge_of: Callable[[TaskRecord], Badge],
        parent: QObject | None = None,
        *,
        titles: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(parent)
        #: Material id → title (the runs' model keeps it): the search finds a file's tasks.
        self._titles = titles if titles is not None else {}
        self.setDynamicSortFilter(False)
        self.setSourceModel(tasks)
        self._tasks = tasks
        self._badge_of = badge_of
        self._badge: Badge | None = None
        self._text = ""
        self._runs: frozenset[str] | None = None
        self._active = False
        self._later = QTimer(self)
        self._later.setSingleShot(True)
        self._later.setInterval(REFILTER_MS)
        self._later.timeout.connect(self.refilter)

    # --- what to show ----------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether some filter is set (otherwise every task shows)."""
        return self._active

    def set_badge(self, shown: Badge | None) -> None:
        """Only tasks with this badge (None: any)."""
        if shown is not self._badge:
            self.beginFilterChange()
            self._badge = shown
            self._changed()

    def set_text(self, text: str) -> None:
        """Only tasks whose key, type, id, run id or material's title contain ``text`` (any
        case)."""
        folded = text.strip().casefold()
        if folded != self._text:
            self.beginFilterChange()
            self._text = folded
            self._changed()

    def set_runs(self, run_ids: Collection[str] | None) -> None:
        """Only the tasks of these runs (None or empty: of any run)."""
        runs = frozenset(run_ids) if run_ids else None
        if runs != self._runs:
            self.beginFilterChange()
            self._runs = runs
            self._changed()

    def accepts(self, task: TaskRecord) -> bool:
        """Whether ``task`` passes the filters set."""
        if self._runs is not None and task.workflow_run_id not in self._runs:
            return False
        if self._badge is not None and self._badge_of(task) is not self._badge:
            return False
        if self._text:
            title = self._titles.get(task.material_id or "", "")
            hay = f"{task.key or ''}\n{task.type}\n{task.id}\n{task.workflow_run_id or ''}\n{title}"
            return self._text in hay.casefold()
        return True

    def filterAcceptsRow(
        self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex
    ) -> bool:
        # The record straight from the model: no data() call, no QVariant.
        return not self._active or self.accepts(self._tasks.record_at(source_row))

    # --- keeping up with changes -------------------------------------------------------------

    def recheck(self, task_ids: Iterable[str]) -> None:
        """These tasks changed: filter again soon if one of them should now appear or go."""
        if not self._active or self._later.isActive():
            return
        tasks = self._tasks
        for task_id in task_ids:
            row = tasks.row_of(task_id)
            if row is None:
                continue
            shown = self.mapFromSource(tasks.index(row, 0)).isValid()
            if shown != self.accepts(tasks.record_at(row)):
                self._later.start()
                return

    def refilter(self) -> None:
        """Filter every row again now."""
        self._later.stop()
        self.beginFilterChange()
        self.endFilterChange(_ROWS)

    def _changed(self) -> None:
        self._later.stop()  # this pass covers what it would have done
        self._active = bool(self._badge is not None or self._text or self._runs is not None)
        self.endFilterChange(_ROWS)
