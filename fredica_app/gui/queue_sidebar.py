"""The queue page's left column: a filter per task state, each with how many tasks show it.

The counts come from :class:`TrackedCounts`, a :class:`~fredica_app.views.queue_state.BadgeCounts`
fed the same batches as the task table (±1 per change, never a recount of all rows), which
also tells which tasks' badges moved — a dependent turns from waiting to queued when its last
dependency completes, without any change of its own row — so that the table redraws those.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from fredica_app.views.queue_state import Badge, BadgeCounts
from workers.records import TaskRecord

_FILTER_ROLE = Qt.ItemDataRole.UserRole
_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
_PALETTE_CHANGE = QEvent.Type.PaletteChange
_APP_PALETTE_CHANGE = QEvent.Type.ApplicationPaletteChange
#: A dot per state, so that a state reads at a glance; interrupted (needs the user after a
#: restart) is orange, apart from failed's red, as in the table's State column.
_DOT_COLOURS = {
    Badge.WAITING: QColor(0x9E, 0x9E, 0x9E),
    Badge.QUEUED: QColor(0x78, 0x90, 0x9C),
    Badge.RUNNING: QColor(0x1E, 0x88, 0xE5),
    Badge.PAUSED: QColor(0xF9, 0xA8, 0x25),
    Badge.DONE: QColor(0x43, 0xA0, 0x47),
    Badge.FAILED: QColor(0xC6, 0x28, 0x28),
    Badge.CANCELLED: QColor(0x61, 0x61, 0x61),
    Badge.SKIPPED: QColor(0xBD, 0xBD, 0xBD),
    Badge.INTERRUPTED: QColor(0xEF, 0x6C, 0x00),
}
_DOT = 10


class TrackedCounts(BadgeCounts):
    """:class:`BadgeCounts` that also remembers whose badge moved, until
    :meth:`take_moved`."""

    def __init__(self, tasks: Iterable[TaskRecord] = ()) -> None:
        self._moved: set[str] = set()  # before the base class applies ``tasks``
        super().__init__(tasks)
        self._moved.clear()

    def _rebadge(self, task_id: str) -> None:
        # The one place a badge is (re)computed: the changed task's and its dependents'.
        before = self.badge_of(task_id)
        super()._rebadge(task_id)
        if self.badge_of(task_id) is not before:
            self._moved.add(task_id)

    def take_moved(self) -> set[str]:
        """The tasks whose badge moved since the last call."""
        moved, self._moved = self._moved, set()
        return moved


class StateSidebar(QTreeWidget):
    """ "All", then one row per badge with its count; choosing a row filters the tasks."""

    #: The badge to show (None: all tasks).
    chosen = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("queue-states")
        self.setColumnCount(2)
        self.setHeaderHidden(True)
        self.setRootIsDecorated(False)
        self.setIndentation(0)
        self.setUniformRowHeights(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setIconSize(QSize(_DOT, _DOT))
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        names = self.badge_names()
        self._items: dict[Badge | None, QTreeWidgetItem] = {}
        self._shown: dict[Badge | None, int] = {}
        all_item = QTreeWidgetItem(self, [self.tr("All tasks"), "0"])
        bold = QFont(all_item.font(0))
        bold.setBold(True)
        all_item.setFont(0, bold)
        self._items[None] = all_item
        for shown in Badge:
            item = QTreeWidgetItem(self, [names[shown], "0"])
            item.setIcon(0, _dot(_DOT_COLOURS[shown]))
            item.setData(0, _FILTER_ROLE, shown.value)
            self._items[shown] = item
        self._quiet = QBrush(self.palette().placeholderText())
        self._plain = QBrush(self.palette().text())
        row_height = QSize(0, self.fontMetrics().height() + 12)
        for item in self._items.values():
            item.setSizeHint(0, row_height)
            item.setTextAlignment(1, _RIGHT)
            item.setForeground(1, self._quiet)
        self.setCurrentItem(all_item)
        self.currentItemChanged.connect(self._on_current)
        self.setMinimumWidth(150)
        self.setMaximumWidth(220)

    def badge_names(self) -> dict[Badge, str]:
        """The states as the sidebar names them, translated."""
        return {
            Badge.WAITING: self.tr("Waiting"),
            Badge.QUEUED: self.tr("Queued"),
            Badge.RUNNING: self.tr("Running"),
            Badge.PAUSED: self.tr("Paused"),
            Badge.DONE: self.tr("Done"),
            Badge.FAILED: self.tr("Failed"),
            Badge.CANCELLED: self.tr("Cancelled"),
            Badge.SKIPPED: self.tr("Skipped"),
            Badge.INTERRUPTED: self.tr("Interrupted"),
        }

    @property
    def current_badge(self) -> Badge | None:
        item = self.currentItem()
        value = item.data(0, _FILTER_ROLE) if item is not None else None
        return Badge(value) if value else None

    def choose(self, shown: Badge | None) -> None:
        """Select the row of ``shown`` (None: all tasks), as a click does."""
        self.setCurrentItem(self._items[shown])

    def count_of(self, shown: Badge | None) -> int:
        """The count the row shows (None: all tasks)."""
        return self._shown.get(shown, 0)

    def set_counts(self, counts: Mapping[Badge, int], total: int) -> None:
        """Show these counts; only the rows whose figure changed are touched."""
        self._set(None, total)
        for shown in Badge:
            self._set(shown, counts.get(shown, 0))

    def _set(self, shown: Badge | None, n: int) -> None:
        if self._shown.get(shown) == n:
            return
        was_zero = not self._shown.get(shown)
        self._shown[shown] = n
        item = self._items[shown]
        item.setText(1, str(n))
        if was_zero != (n == 0):  # a count of nothing is written quietly
            item.setForeground(1, self._quiet if n == 0 else self._plain)

    def changeEvent(self, event: QEvent) -> None:
        """A new palette (light to dark): the counts' colours follow it."""
        super().changeEvent(event)
        if event.type() in (_PALETTE_CHANGE, _APP_PALETTE_CHANGE):
            self._quiet = QBrush(self.palette().placeholderText())
            self._plain = QBrush(self.palette().text())
            for shown, item in self._items.items():
                item.setForeground(1, self._quiet if not self._shown.get(shown) else self._plain)

    def _on_current(self, item: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None) -> None:
        value = item.data(0, _FILTER_ROLE) if item is not None else None
        self.chosen.emit(Badge(value) if value else None)


def _dot(colour: QColor) -> QIcon:
    pixmap = QPixmap(_DOT, _DOT)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(colour)
    painter.drawEllipse(1, 1, _DOT - 2, _DOT - 2)
    painter.end()
    return QIcon(pixmap)
