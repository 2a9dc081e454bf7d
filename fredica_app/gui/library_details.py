"""The library page's details pane: the selected material's poster frame, where it came from,
its length, size and format, its streams and chapters, and the files its runs made — each
opening its folder (double-click or Enter, or the button under the list).

What it shows comes from the material's record (its first look, see
:mod:`fredica_app.services.inspection`) and, for the outputs, from the queue: the page reads
the material's runs through the host and hands them here (:meth:`MaterialDetails.show_outputs`).
The words are made by :mod:`fredica_app.views.material_view`, in the interface's language.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QFileInfo, QSize, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from fredica_app.gui.library_model import read_picture
from fredica_app.gui.models import template_label
from fredica_app.gui.symbols import WARNING, symbol
from fredica_app.library.records import MaterialRecord
from fredica_app.views.material_view import (
    OutputGroup,
    chapter_line,
    facts_line,
    stream_line,
)
from python_endpoints.text import clean_text

# The poster's width in the pane (its height follows the picture).
POSTER_WIDTH = 300
# Where a file's path is kept on its item of the outputs list.
PATH_ROLE = Qt.ItemDataRole.UserRole + 1
_SELECTABLE = Qt.TextInteractionFlag.TextSelectableByMouse


def _stream_words() -> dict[str, str]:
    return {
        "video": QCoreApplication.translate("MaterialDetails", "video"),
        "audio": QCoreApplication.translate("MaterialDetails", "audio"),
        "subtitle": QCoreApplication.translate("MaterialDetails", "subtitles"),
        "data": QCoreApplication.translate("MaterialDetails", "data"),
        "attachment": QCoreApplication.translate("MaterialDetails", "attachment"),
        "cover": QCoreApplication.translate("MaterialDetails", "cover art"),
        "text": QCoreApplication.translate("MaterialDetails", "text"),
        "bitmap": QCoreApplication.translate("MaterialDetails", "bitmap"),
        "mono": QCoreApplication.translate("MaterialDetails", "mono"),
        "stereo": QCoreApplication.translate("MaterialDetails", "stereo"),
        "channels": QCoreApplication.translate("MaterialDetails", "%1 channels"),
        "silent": QCoreApplication.translate("MaterialDetails", "no sound in it"),
    }


def _status_words() -> dict[str, str]:
    return {
        "pending": QCoreApplication.translate("MaterialDetails", "queued"),
        "running": QCoreApplication.translate("MaterialDetails", "running"),
        "completed": QCoreApplication.translate("MaterialDetails", "done"),
        "failed": QCoreApplication.translate("MaterialDetails", "failed"),
        "cancelled": QCoreApplication.translate("MaterialDetails", "cancelled"),
    }


class MaterialDetails(QScrollArea):
    """One material in full, or a word on what to select."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("library-details")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.material: MaterialRecord | None = None
        # Opens a folder in the desktop's file manager (a test replaces it).
        self.open_url: Callable[[QUrl], bool] = QDesktopServices.openUrl
        inside = QWidget()
        inside.setObjectName("library-details-inside")
        column = QVBoxLayout(inside)
        column.setContentsMargins(10, 10, 10, 10)
        column.setSpacing(6)

        self.empty = QLabel(
            QCoreApplication.translate(
                "MaterialDetails", "Select a material to see its streams, chapters and outputs."
            )
        )
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setObjectName("library-details-empty")
        self.poster = QLabel()
        self.poster.setObjectName("library-details-poster")
        self.poster.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title = QLabel()
        self.title.setObjectName("library-details-title")
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title.setFont(font)
        self.source = QLabel()
        self.facts = QLabel()
        self.problem_icon = QLabel()
        self.problem = QLabel()
        self.problem.setObjectName("library-details-problem")
        problem_row = QHBoxLayout()
        problem_row.setContentsMargins(0, 0, 0, 0)
        problem_row.addWidget(self.problem_icon, 0, Qt.AlignmentFlag.AlignTop)
        problem_row.addWidget(self.problem, 1)
        self.problem_box = QWidget()
        self.problem_box.setLayout(problem_row)
        self.streams_heading = self._heading(
            QCoreApplication.translate("MaterialDetails", "Streams")
        )
        self.streams = QLabel()
        self.chapters_heading = self._heading(
            QCoreApplication.translate("MaterialDetails", "Chapters")
        )
        self.chapters = QLabel()
        self.outputs_heading = self._heading(
            QCoreApplication.translate("MaterialDetails", "Outputs")
        )
        self.outputs_note = QLabel(
            QCoreApplication.translate("MaterialDetails", "Double-click a file to open its folder.")
        )
        self.outputs_note.setWordWrap(True)
        self.outputs = QListWidget()
        self.outputs.setObjectName("library-details-outputs")
        self.outputs.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.outputs.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.outputs.itemActivated.connect(self._open_item)
        self.outputs.currentItemChanged.connect(self._update_button)
        self.open_button = QPushButton(
            symbol("folder-open"), QCoreApplication.translate("MaterialDetails", "Open folder")
        )
        self.open_button.clicked.connect(self._open_current)
        self.no_outputs = QLabel(
            QCoreApplication.translate(
                "MaterialDetails", "Nothing made from it yet: start a template on it."
            )
        )
        self.no_outputs.setWordWrap(True)
        for label in (self.title, self.source, self.facts, self.problem, self.streams):
            label.setWordWrap(True)
            label.setTextInteractionFlags(_SELECTABLE)
        self.chapters.setWordWrap(True)
        self.chapters.setTextInteractionFlags(_SELECTABLE)
        for label in (self.title, self.source, self.facts, self.problem):
            label.setTextFormat(Qt.TextFormat.PlainText)
        for label in (self.streams, self.chapters):
            label.setTextFormat(Qt.TextFormat.PlainText)

        #: What shows a material (hidden, with only :attr:`empty` shown, when there is none).
        self._parts: list[QWidget] = [
            self.poster,
            self.title,
            self.source,
            self.facts,
            self.problem_box,
            self.streams_heading,
            self.streams,
            self.chapters_heading,
            self.chapters,
            self.outputs_heading,
            self.outputs_note,
            self.outputs,
            self.no_outputs,
            self.open_button,
        ]
        column.addWidget(self.empty)
        for widget in self._parts[:-1]:
            column.addWidget(widget)
        column.addWidget(self.open_button, 0, Qt.AlignmentFlag.AlignLeft)
        column.addStretch(1)
        self.setWidget(inside)
        self.outputs.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.show_material(None)

    def sizeHint(self) -> QSize:
        return QSize(POSTER_WIDTH + 40, 400)

    @staticmethod
    def _heading(text: str) -> QLabel:
        label = QLabel(text)
        font = label.font()
        font.setBold(True)
        label.setFont(font)
        label.setContentsMargins(0, 6, 0, 0)
        return label

    # --- what it shows -----------------------------------------------------------------------

    def show_material(
        self,
        material: MaterialRecord | None,
        *,
        selected: int = 0,
        kind: str = "",
        poster: Path | None = None,
    ) -> None:
        """Show ``material`` (None: ``selected`` materials are, or none is); ``kind`` is its
        kind in the interface's words, ``poster`` its poster frame's file."""
        changed = material is None or self.material is None or material.id != self.material.id
        self.material = material
        for widget in self._parts:
            widget.setVisible(material is not None)
        self.empty.setVisible(material is None)
        if material is None:
            self.empty.setText(
                self.tr("%n materials selected.", "", selected)
                if selected > 1
                else QCoreApplication.translate(
                    "MaterialDetails", "Select a material to see its streams, chapters and outputs."
                )
            )
            self.outputs.clear()
            return
        self._show_poster(poster)
        self.title.setText(clean_text(material.title))
        self.source.setText(clean_text(material.source))
        self.facts.setText(facts_line(kind, material.duration, material.size, material.meta))
        look = material.meta.get("look")
        error = look.get("error") if isinstance(look, dict) else None
        self.problem_box.setVisible(bool(error))
        if error:
            size = self.fontMetrics().height()
            self.problem_icon.setPixmap(symbol("triangle-alert", WARNING).pixmap(size, size))
            self.problem.setText(clean_text(str(error)))
        words = _stream_words()
        streams = material.meta.get("streams")
        lines = [stream_line(s, words) for s in streams or () if isinstance(s, dict)]
        if not lines:
            lines = [
                QCoreApplication.translate("MaterialDetails", "Not looked at yet.")
                if not isinstance(look, dict)
                else QCoreApplication.translate("MaterialDetails", "None found.")
            ]
        self.streams.setText("\n".join(clean_text(line) for line in lines))
        chapters = [c for c in material.meta.get("chapters") or () if isinstance(c, dict)]
        self.chapters.setText(
            "\n".join(clean_text(chapter_line(n, c)) for n, c in enumerate(chapters, 1))
        )
        for widget in (self.chapters_heading, self.chapters):
            widget.setVisible(bool(chapters))
        if changed:
            self.show_outputs([])

    def show_outputs(self, groups: Sequence[OutputGroup]) -> None:
        """The files the material's runs made: a heading per template (its newest run), then
        its files."""
        if self.material is None:
            return
        current = self.outputs.currentItem()
        keep = None if current is None else current.data(PATH_ROLE)
        self.outputs.clear()
        statuses = _status_words()
        file_icon = symbol("file")
        rows = 0
        for group in groups:
            head = QListWidgetItem(
                symbol("workflow"),
                f"{template_label(group.template)} · {statuses.get(group.status, group.status)}",
                self.outputs,
            )
            head.setFlags(Qt.ItemFlag.ItemIsEnabled)
            font = head.font()
            font.setBold(True)
            head.setFont(font)
            rows += 1
            for path in group.files:
                item = QListWidgetItem(file_icon, clean_text(Path(path).name), self.outputs)
                item.setData(PATH_ROLE, path)
                item.setToolTip(clean_text(path))
                rows += 1
                if path == keep:
                    self.outputs.setCurrentItem(item)
        has_files = any(g.files for g in groups)
        self.outputs.setVisible(rows > 0)
        self.outputs_note.setVisible(has_files)
        self.no_outputs.setVisible(not has_files)
        self.open_button.setVisible(has_files)
        frame = 2 * self.outputs.frameWidth() + 4
        shown = min(rows, 10)
        self.outputs.setFixedHeight(frame + shown * max(self.outputs.sizeHintForRow(0), 1))
        self._update_button()

    def output_paths(self) -> list[str]:
        """The files listed, in order."""
        items = (self.outputs.item(n) for n in range(self.outputs.count()))
        return [str(i.data(PATH_ROLE)) for i in items if i.data(PATH_ROLE)]

    def _show_poster(self, poster: Path | None) -> None:
        self.poster.setVisible(poster is not None)
        if poster is None:
            self.poster.clear()
            return
        picture = read_picture(poster, QSize(POSTER_WIDTH, 10_000))
        self.poster.setVisible(picture is not None)
        self.poster.setPixmap(picture or QPixmap())

    # --- opening a folder ------------------------------------------------------------------

    def _update_button(self, *_: object) -> None:
        item = self.outputs.currentItem()
        self.open_button.setEnabled(item is not None and bool(item.data(PATH_ROLE)))

    def _open_current(self) -> None:
        item = self.outputs.currentItem()
        if item is not None:
            self._open_item(item)

    def _open_item(self, item: QListWidgetItem) -> None:
        path = item.data(PATH_ROLE)
        if path:
            self.open_url(QUrl.fromLocalFile(QFileInfo(str(path)).absolutePath()))
