"""Naming and merging a run's speakers in the window: what ``fredica speakers RUN 1=Ana 3=2``
does (:mod:`fredica_app.services.speakers`).

The run details page offers *Speakers…* once a run has written its speaker-labelled exports.
The dialog lists each speaker with their time of speech and turns, a name to give and whom
they are the same person as; *Save* names and merges them and writes the exports again (a few
seconds, through the endpoints server), the dialog staying open and busy meanwhile, then
showing the speakers as they now are. A failure is said under the table; nothing is lost (the
files are replaced only once every one is written).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from fredica_app.gui.host import AppHost
from fredica_app.services.speakers import RunSpeakers, Speaker, rename_speakers, run_speakers
from workers.records import TaskRecord
from workers.states import TaskStatus

if TYPE_CHECKING:
    from fredica_app.services import Fredica

_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
_SAVE = QDialogButtonBox.StandardButton.Save
_CLOSE = QDialogButtonBox.StandardButton.Close
# The columns: who, speech, turns, the name to give, the same person as.
NUMBER, SPEECH, TURNS, NAME, SAME = range(5)


def has_speakers(tasks: Sequence[TaskRecord]) -> bool:
    """Whether a run's tasks have written speaker-labelled exports (what the dialog edits)."""
    return any(
        t.type == "EXPORT_SUBTITLES"
        and t.payload.get("speakers")
        and t.status is TaskStatus.COMPLETED
        for t in tasks
    )


def minutes(seconds: float) -> str:
    """``1:05`` for 65 s."""
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def _unnamed(speaker: Speaker) -> bool:
    return speaker.name == f"Speaker {speaker.number}"


class SpeakersDialog(QDialog):
    """A run's speakers: name them, merge two that are one person (see the module's doc)."""

    # The speakers as saved (the run details page may say so).
    saved = Signal(object)

    def __init__(self, host: AppHost, run_id: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("speakers-dialog")
        self.setWindowTitle(self.tr("Speakers"))
        self.host = host
        self.run_id = run_id
        self.found: RunSpeakers | None = None
        self.heading = QLabel(self.tr("Reading the speakers…"))
        self.heading.setWordWrap(True)
        self.table = QTableWidget(0, 5)
        self.table.setObjectName("speakers")
        titles = [self.tr("Speaker"), self.tr("Speech"), self.tr("Turns"), self.tr("Name")]
        self.table.setHorizontalHeaderLabels([*titles, self.tr("Same person as")])
        self.table.verticalHeader().hide()
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        for column in (NUMBER, SPEECH, TURNS):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(NAME, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(SAME, QHeaderView.ResizeMode.ResizeToContents)
        self.note = QLabel(
            self.tr(
                "The subtitles and transcripts of this run are written again with these "
                "names. A speaker who is the same person as another is merged into them."
            )
        )
        self.note.setWordWrap(True)
        self.note.setEnabled(False)
        self.problem = QLabel()
        self.problem.setObjectName("speakers-problem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #c62828;")
        self.problem.hide()
        self.buttons = QDialogButtonBox(_SAVE | _CLOSE)
        self.buttons.button(_SAVE).clicked.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(_SAVE).setEnabled(False)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.note)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(560)
        self._busy = False
        self.host.call(lambda app: run_speakers(app, run_id), self._show, self._failed)

    # --- showing ----------------------------------------------------------------------------

    def _show(self, found: RunSpeakers) -> None:
        if not isValid(self):  # closed meanwhile
            return
        self.found = found
        self._busy = False
        count = len(found.speakers)
        self.heading.setText(self.tr("%n speaker(s) found in this run.", "", count))
        self.table.setRowCount(count)
        for row, speaker in enumerate(found.speakers):
            self._fill(row, speaker, found.speakers)
        self.buttons.button(_SAVE).setEnabled(bool(count))
        self.table.setEnabled(True)
        self._fit_rows()

    def _fit_rows(self) -> None:
        """The table as tall as its rows (up to eight; it scrolls beyond)."""
        self.table.resizeRowsToContents()
        rows = sum(self.table.rowHeight(r) for r in range(min(8, self.table.rowCount())))
        frame = 2 * self.table.frameWidth()
        self.table.setFixedHeight(self.table.horizontalHeader().height() + rows + frame)
        self.adjustSize()

    def _default(self, speaker: Speaker) -> str:
        return self.tr("Speaker %1").replace("%1", str(speaker.number))

    def _shown(self, speaker: Speaker) -> str:
        """A speaker's name, or "Speaker N" in the window's language."""
        return self._default(speaker) if _unnamed(speaker) else speaker.name

    def _fill(self, row: int, speaker: Speaker, everyone: Sequence[Speaker]) -> None:
        default = self._default(speaker)
        cells = {
            NUMBER: QTableWidgetItem(default),
            SPEECH: QTableWidgetItem(minutes(speaker.seconds)),
            TURNS: QTableWidgetItem(str(speaker.turns)),
        }
        for column, item in cells.items():
            if column != NUMBER:
                item.setTextAlignment(_RIGHT)
            self.table.setItem(row, column, item)
        name = QLineEdit()
        name.setMaxLength(80)
        name.setPlaceholderText(default)
        # A name given earlier is shown; "Speaker N" is the default, not a name.
        if not _unnamed(speaker):
            name.setText(speaker.name)
        name.setAccessibleName(self.tr("Name of speaker %1").replace("%1", str(speaker.number)))
        self.table.setCellWidget(row, NAME, name)
        same = QComboBox()
        same.addItem(self.tr("nobody else"), None)
        for other in everyone:
            if other.number != speaker.number:
                same.addItem(self._shown(other), other.number)
        same.setAccessibleName(
            self.tr("Speaker %1 is the same person as").replace("%1", str(speaker.number))
        )
        self.table.setCellWidget(row, SAME, same)

    def _failed(self, exc: Exception) -> None:
        if not isValid(self):
            return
        self._busy = False
        self.table.setEnabled(True)
        self.problem.setText(str(exc))
        self.problem.show()
        if self.found is None:
            self.heading.setText(self.tr("The speakers could not be read."))
        self.buttons.button(_SAVE).setEnabled(self.found is not None)

    # --- saving -----------------------------------------------------------------------------

    def changes(self) -> tuple[dict[int, str], dict[int, int]]:
        """The names typed (changed ones) and the merges chosen."""
        assert self.found is not None
        names: dict[int, str] = {}
        merges: dict[int, int] = {}
        for row, speaker in enumerate(self.found.speakers):
            name = self.table.cellWidget(row, NAME)
            same = self.table.cellWidget(row, SAME)
            assert isinstance(name, QLineEdit) and isinstance(same, QComboBox)
            typed = name.text().strip()
            if typed and typed != speaker.name:
                names[speaker.number] = typed
            if same.currentData() is not None:
                merges[speaker.number] = int(same.currentData())
        return names, merges

    def save(self) -> None:
        if self.found is None or self._busy:
            return
        names, merges = self.changes()
        if not names and not merges:
            self.problem.setText(self.tr("Nothing to save: type a name, or choose a person."))
            self.problem.show()
            return
        self._busy = True
        self.problem.hide()
        self.table.setEnabled(False)
        self.buttons.button(_SAVE).setEnabled(False)
        self.heading.setText(self.tr("Writing the subtitles and transcripts again…"))

        async def work(app: Fredica) -> RunSpeakers:
            return await rename_speakers(app, self.run_id, names, merges)

        self.host.call(work, self._saved, self._failed)

    def _saved(self, found: RunSpeakers) -> None:
        if not isValid(self):
            return
        self._show(found)
        files = len(found.exports)
        self.heading.setText(
            self.tr("Saved: %n file(s) written again.", "", files)
            + " "
            + self.tr("%n speaker(s).", "", len(found.speakers))
        )
        self.saved.emit(found)
