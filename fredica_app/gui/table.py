"""A flat table model of records keyed by id, loaded once and then kept current by batches of
changes from the change stream (workers.changes).

Why it looks like this (measured on a 10,000-row queue; see performance.md): the rows are a
plain list with an id → row map, so a change finds its row in O(1); a batch of changes emits
one ``dataChanged`` per run of consecutive changed rows, one ``beginInsertRows`` for all the
new rows (appended), and removes rows range by range — the model is never reset and no event
scans all rows. A row's display strings are built the first time a view asks for them and
kept until the row changes: a repaint of the visible rows costs a tuple index per cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from PySide6.QtCore import (
    QAbstractTableModel,
    QCoreApplication,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
)

from workers.changes import Change, Snapshot, Tombstone
from workers.records import RunRecord, TaskRecord

Record = TaskRecord | RunRecord
#: What a batch holds: entries of change sets, or bare records and tombstones.
BatchItem = Change | TaskRecord | RunRecord | Tombstone
Index = QModelIndex | QPersistentModelIndex

# Full enum spellings, looked up once: the short ones (Qt.DisplayRole) go through a slow
# compatibility path on every access, and data() runs for every visible cell on every repaint.
DISPLAY = Qt.ItemDataRole.DisplayRole
HORIZONTAL = Qt.Orientation.Horizontal
ITEM_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
NO_FLAGS = Qt.ItemFlag.NoItemFlags
ASCENDING = Qt.SortOrder.AscendingOrder
DESCENDING = Qt.SortOrder.DescendingOrder
_ROOT = QModelIndex()


class Row:
    """One row: its record, and its display strings once a view has asked for them."""

    __slots__ = ("cells", "id", "record")

    def __init__(self, record: Record) -> None:
        self.id = record.id
        #: A TaskRecord or a RunRecord, as its model says (Any: data() reads it unchecked).
        self.record: Any = record
        #: One display string per column; None until first shown, and again after a change.
        self.cells: tuple[str, ...] | None = None


class RecordTableModel(QAbstractTableModel):
    """Rows of one kind of record (``KIND``), in the order they were loaded, new ones at the
    end. Subclasses say which records are theirs, their headers, and how a row reads."""

    #: The tombstones' ``kind`` of this model's records.
    KIND: ClassVar[str]
    RECORD: ClassVar[type[TaskRecord] | type[RunRecord]]
    #: The column titles in English, marked for ``lupdate`` with ``QT_TRANSLATE_NOOP`` in the
    #: context :attr:`TR_CONTEXT`; shown translated.
    HEADERS: ClassVar[tuple[str, ...]]
    TR_CONTEXT: ClassVar[str] = "RecordTableModel"

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[Row] = []
        self._where: dict[str, int] = {}

    # --- what subclasses provide ---------------------------------------------------------

    def render(self, row: Row) -> tuple[str, ...]:
        """The row's display strings, one per column."""
        raise NotImplementedError

    def observe(self, record: Any, previous: Any | None) -> None:
        """A record arrives (loaded, changed or new): keep whatever follows it over time."""

    def forget(self, row: Row) -> None:
        """A row goes away (deleted, or the model is loaded again)."""

    # --- reading ---------------------------------------------------------------------------

    def rowCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = DISPLAY) -> Any:
        if role == DISPLAY and orientation == HORIZONTAL and 0 <= section < len(self.HEADERS):
            return QCoreApplication.translate(self.TR_CONTEXT, self.HEADERS[section])
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        return ITEM_FLAGS if index.isValid() else NO_FLAGS

    def cells(self, row: Row) -> tuple[str, ...]:
        """The row's display strings, built once per version of the row."""
        cells = row.cells
        if cells is None:
            cells = row.cells = self.render(row)
        return cells

    def row_of(self, record_id: str) -> int | None:
        """The row showing this id, if any."""
        return self._where.get(record_id)

    def record_at(self, row: int) -> Any:
        return self._rows[row].record

    @property
    def records(self) -> list[Any]:
        """Every record, in row order (a copy: for tests and exports, not for painting)."""
        return [r.record for r in self._rows]

    # --- sorting on demand -------------------------------------------------------------------

    def sort_key(self, column: int) -> Callable[[Row], Any]:
        """What rows are ordered by in ``column`` (subclasses: from the record, so that a
        sort builds no display strings)."""
        return lambda row: self.cells(row)[column]

    def sort(self, column: int, order: Qt.SortOrder = ASCENDING) -> None:
        """Order the rows by ``column`` once (a click on its header). Rows do not move again
        as they change, and new ones come at the end, so that nothing jumps under the
        pointer; equal rows keep their order (a stable sort, descending too)."""
        if not 0 <= column < len(self.HEADERS):
            return
        key = self.sort_key(column)
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        held = [(self._rows[i.row()].id, i.column()) for i in persistent]
        self._rows.sort(key=key, reverse=order == DESCENDING)
        self._where = {row.id: n for n, row in enumerate(self._rows)}
        self.changePersistentIndexList(persistent, [self.index(self._where[i], c) for i, c in held])
        self.layoutChanged.emit()

    # --- writing ---------------------------------------------------------------------------

    def load(self, snapshot: Snapshot | Iterable[Any]) -> None:
        """Replace every row with a snapshot's records of this model's kind (once; again only
        after the stream's cursor expired): the one place the model resets."""
        records: Iterable[Any] = (
            (*snapshot.runs, *snapshot.tasks) if isinstance(snapshot, Snapshot) else snapshot
        )
        self.beginResetModel()
        for row in self._rows:
            self.forget(row)
        self._rows = []
        self._where = {}
        for record in records:
            if isinstance(record, self.RECORD):
                self._upsert_quiet(record)
        self.endResetModel()

    def apply(self, batch: Iterable[BatchItem]) -> None:
        """Apply a batch of changes: an upsert per record of this model's kind (last one
        wins), a removal per tombstone of its kind; everything else is ignored. Applying the
        same batch twice leaves the same rows."""
        updates: dict[str, Record] = {}
        removed: set[str] = set()
        for item in batch:
            record = item.record if isinstance(item, Change) else item
            if isinstance(record, Tombstone):
                if record.kind == self.KIND:
                    updates.pop(record.id, None)
                    removed.add(record.id)
            elif isinstance(record, self.RECORD):
                removed.discard(record.id)
                # Its last version, in the place it was first seen: new rows come in the
                # order they were made (a folder's runs in its files' order, even those the
                # engine had already started within the same batch).
                updates[record.id] = record
        if removed:
            self._remove(removed)
        changed: list[int] = []
        new: list[Record] = []
        where = self._where
        rows = self._rows
        for record_id, record in updates.items():
            at = where.get(record_id)
            if at is None:
                new.append(record)
                continue
            row = rows[at]
            self.observe(record, row.record)
            row.record = record
            row.cells = None
            changed.append(at)
        self._emit_changed(changed)
        if new:
            first = len(rows)
            self.beginInsertRows(_ROOT, first, first + len(new) - 1)
            for record in new:
                self._upsert_quiet(record)
            self.endInsertRows()

    def refresh(self, ids: Iterable[str]) -> None:
        """Build these rows' display strings again, their records unchanged: what they show
        also depends on other rows (a task's badge on its dependencies')."""
        where = self._where
        rows = self._rows
        changed = [at for at in (where.get(i) for i in ids) if at is not None]
        for at in changed:
            rows[at].cells = None
        self._emit_changed(changed)

    def _upsert_quiet(self, record: Any) -> None:
        at = self._where.get(record.id)
        if at is not None:  # the same id twice in a snapshot's pages: the later one wins
            row = self._rows[at]
            self.observe(record, row.record)
            row.record, row.cells = record, None
            return
        self.observe(record, None)
        self._where[record.id] = len(self._rows)
        self._rows.append(Row(record))

    def _emit_changed(self, changed: list[int]) -> None:
        if not changed:
            return
        last_column = len(self.HEADERS) - 1
        for first, last in row_ranges(changed):
            self.dataChanged.emit(self.index(first, 0), self.index(last, last_column))

    def _remove(self, ids: set[str]) -> None:
        at = sorted(self._where[i] for i in ids if i in self._where)
        if not at:
            return
        rows = self._rows
        # Bottom up, so that the rows of the ranges still to remove keep their numbers.
        for first, last in reversed(row_ranges(at)):
            self.beginRemoveRows(_ROOT, first, last)
            for row in rows[first : last + 1]:
                self.forget(row)
                del self._where[row.id]
            del rows[first : last + 1]
            self.endRemoveRows()
        # Deletions are rare (retention, ``fredica remove``): renumbering the rows below the
        # first removed one, once per batch, is the price of a plain list.
        for n in range(at[0], len(rows)):
            self._where[rows[n].id] = n


def row_ranges(rows: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted, distinct ``(first, last)`` ranges of consecutive row numbers."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(rows)):
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out
