"""The library's table: one row per material — title, kind, duration, size, and how its
outputs stand (the newest run of each template on it, from an
:class:`~fredica_app.views.library_view.OutputBoard`).

A fresh read of the library replaces the rows by removals and appends
(:func:`~fredica_app.views.library_view.plan_update`), never a reset unless the order changed:
the selection survives a reload. Besides the display text, a cell answers
:data:`SORT_ROLE` (the raw value the sort proxy compares), :data:`MATERIAL_ROLE` (the row's
:class:`~fredica_app.library.records.MaterialRecord`), a tooltip, an icon and an alignment.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QCoreApplication,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSize,
    Qt,
)
from PySide6.QtGui import QColor, QIcon, QImageReader, QPixmap

from fredica_app.gui.models import TEMPLATE_LABELS, template_label
from fredica_app.gui.symbols import PosterEngine, symbol
from fredica_app.gui.table import row_ranges
from fredica_app.library.records import MaterialRecord
from fredica_app.services.inspection import poster_path
from fredica_app.views.library_view import (
    OutputBoard,
    OutputState,
    file_size,
    media_length,
    plan_update,
    summary,
)
from python_endpoints.text import clean_text

Index = QModelIndex | QPersistentModelIndex

# Full enum spellings, looked up once: data() runs for every visible cell on every repaint.
DISPLAY = Qt.ItemDataRole.DisplayRole
TOOLTIP = Qt.ItemDataRole.ToolTipRole
DECORATION = Qt.ItemDataRole.DecorationRole
ALIGNMENT = Qt.ItemDataRole.TextAlignmentRole
HORIZONTAL = Qt.Orientation.Horizontal
ITEM_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
NO_FLAGS = Qt.ItemFlag.NoItemFlags
FOREGROUND = Qt.ItemDataRole.ForegroundRole
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
LEFT = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
# A failed output, as the queue shows a failed task (readable on light and dark).
ALERT = QColor(0xC6, 0x28, 0x28)
# The value the sort proxy compares: a casefolded title, seconds, bytes (-1 when unknown).
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
# The row's MaterialRecord, on any column.
MATERIAL_ROLE = Qt.ItemDataRole.UserRole + 2
# The picture at the head of a row: a 16:9 tile (a poster frame, or the kind's symbol).
PICTURE = QSize(48, 27)
_ROOT = QModelIndex()


class LibraryModel(QAbstractTableModel):
    """Materials, one per row, in the order the library lists them (oldest first)."""

    TITLE, KIND, DURATION, SIZE, OUTPUTS = range(5)

    def __init__(self, board: OutputBoard, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.board = board
        self._rows: list[MaterialRecord] = []
        self._where: dict[str, int] = {}
        # Display strings per material id, built when first shown, dropped on a change.
        self._cells: dict[str, tuple[str, ...]] = {}
        self._headers = (
            QCoreApplication.translate("LibraryModel", "Title"),
            QCoreApplication.translate("LibraryModel", "Kind"),
            QCoreApplication.translate("LibraryModel", "Duration"),
            QCoreApplication.translate("LibraryModel", "Size"),
            QCoreApplication.translate("LibraryModel", "Outputs"),
        )
        self._kinds = {
            "video": QCoreApplication.translate("LibraryModel", "video"),
            "audio": QCoreApplication.translate("LibraryModel", "audio"),
            "subtitles": QCoreApplication.translate("LibraryModel", "subtitles"),
            "other": QCoreApplication.translate("LibraryModel", "other"),
            "unknown": QCoreApplication.translate("LibraryModel", "unknown"),
        }
        self._words = {
            OutputState.QUEUED: QCoreApplication.translate("LibraryModel", "queued"),
            OutputState.RUNNING: QCoreApplication.translate("LibraryModel", "running"),
            OutputState.PAUSED: QCoreApplication.translate("LibraryModel", "paused"),
            OutputState.DONE: QCoreApplication.translate("LibraryModel", "done"),
            OutputState.FAILED: QCoreApplication.translate("LibraryModel", "failed"),
            OutputState.CANCELLED: QCoreApplication.translate("LibraryModel", "cancelled"),
        }
        self._names = {name: template_label(name) for name in TEMPLATE_LABELS}
        # Made when first drawn (the style's icons need the application to exist).
        self._icons: dict[str, QIcon] = {}
        #: Where the poster frames are (set once the data directory is open).
        self.posters_dir: Path | None = None
        #: Each row's picture, by material id: made when first shown, dropped on a change.
        self._pictures: dict[str, QIcon] = {}

    # --- reading -------------------------------------------------------------------------

    def rowCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._headers)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = DISPLAY) -> Any:
        if orientation != HORIZONTAL or not 0 <= section < len(self._headers):
            return None
        if role == DISPLAY:
            return self._headers[section]
        if role == ALIGNMENT:  # figures and their headers line up on the right
            return RIGHT if section in (self.DURATION, self.SIZE) else LEFT
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        return ITEM_FLAGS if index.isValid() else NO_FLAGS

    def data(self, index: Index, role: int = DISPLAY) -> Any:
        if not index.isValid():
            return None
        material = self._rows[index.row()]
        column = index.column()
        if role == DISPLAY:
            return self._display(material)[column]
        if role == SORT_ROLE:
            return self._sort_value(material, column)
        if role == MATERIAL_ROLE:
            return material
        if role == ALIGNMENT:
            return RIGHT if column in (self.DURATION, self.SIZE) else None
        if role == DECORATION:
            return self.picture(material) if column == self.TITLE else None
        if role == FOREGROUND:
            return self._alert(material) if column == self.OUTPUTS else None
        if role == TOOLTIP:
            return self._tooltip(material, column)
        return None

    def material_at(self, row: int) -> MaterialRecord:
        return self._rows[row]

    def row_of(self, material_id: str) -> int | None:
        return self._where.get(material_id)

    @property
    def materials(self) -> list[MaterialRecord]:
        """Every material, in row order (a copy)."""
        return list(self._rows)

    def kind_text(self, kind: str) -> str:
        """A material's kind in the interface's words."""
        return self._kinds.get(kind, kind)

    def outputs_text(self, material: MaterialRecord) -> str:
        """The outputs cell: each template's newest run, in words of the interface's
        language."""
        return summary(self.board.outputs(material.id), self._words, self._names)

    # --- writing -------------------------------------------------------------------------

    def set_materials(self, materials: Sequence[MaterialRecord]) -> None:
        """Show a fresh read of the library: rows that went are removed, new ones appended,
        changed ones (a probe filled them) redrawn."""
        fresh = {m.id: m for m in materials}
        plan = plan_update([m.id for m in self._rows], list(fresh))
        if plan is None:
            self.beginResetModel()
            self._rows = list(fresh.values())
            self._reindex()
            self._cells.clear()
            self.endResetModel()
            return
        for first, last in plan.removals:
            self.beginRemoveRows(_ROOT, first, last)
            for gone in self._rows[first : last + 1]:
                self._cells.pop(gone.id, None)
                self._pictures.pop(gone.id, None)
            del self._rows[first : last + 1]
            self.endRemoveRows()
        self._reindex()
        changed = []
        for n, old in enumerate(self._rows):
            new = fresh[old.id]
            if new != old:
                self._rows[n] = new
                self._cells.pop(new.id, None)
                self._pictures.pop(new.id, None)
                changed.append(n)
        for first, last in row_ranges(changed):
            self.dataChanged.emit(self.index(first, 0), self.index(last, self.OUTPUTS))
        if plan.appended:
            start = len(self._rows)
            self.beginInsertRows(_ROOT, start, start + len(plan.appended) - 1)
            self._rows.extend(fresh[i] for i in plan.appended)
            self._reindex()
            self.endInsertRows()

    def outputs_changed(self, material_ids: Iterable[str] | None = None) -> None:
        """The board changed for these materials (None: for all, after a snapshot)."""
        if material_ids is None:
            rows = list(range(len(self._rows)))
        else:
            rows = [n for n in (self._where.get(i) for i in material_ids) if n is not None]
        for n in rows:
            self._cells.pop(self._rows[n].id, None)
        for first, last in row_ranges(rows):
            self.dataChanged.emit(self.index(first, self.OUTPUTS), self.index(last, self.OUTPUTS))

    # --- inside --------------------------------------------------------------------------

    def _reindex(self) -> None:
        self._where = {m.id: n for n, m in enumerate(self._rows)}

    def _display(self, material: MaterialRecord) -> tuple[str, ...]:
        cells = self._cells.get(material.id)
        if cells is None:
            cells = self._cells[material.id] = (
                material.title,
                self._kinds.get(material.kind, material.kind),
                media_length(material.duration),
                file_size(material.size),
                self.outputs_text(material),
            )
        return cells

    def _sort_value(self, material: MaterialRecord, column: int) -> Any:
        if column == self.DURATION:
            return -1.0 if material.duration is None else material.duration
        if column == self.SIZE:
            return -1 if material.size is None else material.size
        return self._display(material)[column].casefold()

    def _alert(self, material: MaterialRecord) -> QColor | None:
        failed = any(o.state is OutputState.FAILED for o in self.board.outputs(material.id))
        return ALERT if failed else None

    def picture(self, material: MaterialRecord) -> QIcon:
        """The row's picture: its poster frame once made, else its kind's symbol on a tile."""
        icon = self._pictures.get(material.id)
        if icon is None:
            poster = self._poster(material)
            icon = self._pictures[material.id] = QIcon(PosterEngine(poster, self._icon(material)))
        return icon

    def poster_file(self, material: MaterialRecord) -> Path | None:
        """Its poster frame's file, when it has one."""
        if self.posters_dir is None or material.kind != "video" or "look" not in material.meta:
            return None
        path = poster_path(self.posters_dir, material.id)
        return path if path.is_file() else None

    def _poster(self, material: MaterialRecord) -> QPixmap | None:
        path = self.poster_file(material)
        # Decoded small: a row needs no more than twice its tile.
        return None if path is None else read_picture(path, PICTURE * 2)

    def _icon(self, material: MaterialRecord) -> QIcon:
        icons = self._icons
        if not icons:
            icons.update(
                video=symbol("film"),
                audio=symbol("music"),
                url=symbol("globe"),
                other=symbol("file"),
            )
        if material.is_url and material.kind not in ("video", "audio"):
            return icons["url"]
        return icons.get(material.kind, icons["other"])

    def _tooltip(self, material: MaterialRecord, column: int) -> str | None:
        if column == self.TITLE:
            return clean_text(material.source)  # Qt drops what is not UTF-8: say U+FFFD
        if column == self.OUTPUTS:
            lines = [
                summary([o], self._words, self._names) + f"  ({o.run_id[:8]})"
                for o in self.board.outputs(material.id)
            ]
            return "\n".join(lines) or None
        return None


def read_picture(path: Path, within: QSize) -> QPixmap | None:
    """The picture in ``path``, decoded no larger than ``within`` (its shape kept; a smaller
    one as it is); None when it cannot be read."""
    reader = QImageReader(str(path))
    size = reader.size()
    if size.isValid() and (size.width() > within.width() or size.height() > within.height()):
        reader.setScaledSize(size.scaled(within, Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    return None if image.isNull() else QPixmap.fromImage(image)
