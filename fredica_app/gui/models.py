"""The queue's tables: tasks and runs, one flat model each (see ``table``).

Inputs are plain records (``workers.records``) and change batches, never Qt types: the same
snapshot and change sets the CLI reads. What a row says comes from ``fredica_app.views`` (the
badge, the ETA) and ``fredica_app.views.records`` (a task's state in words, for the tooltip).

Besides the display text, a cell answers:

- :data:`PROGRESS_ROLE` on the progress column: a :class:`ProgressCell`, which the progress
  delegate draws as a bar;
- :data:`RECORD_ROLE` on any column: the row's record (for a selection's actions);
- the tooltip, the alignment of the figures, and a colour for failed and interrupted tasks.

Words shown in cells (a badge, a run's status) and the column titles are translated when a
row's strings are built (once per version of the row, as the rest of them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

from PySide6.QtCore import QCoreApplication, QObject, Qt
from PySide6.QtGui import QColor, QIcon

from fredica_app.gui.status_words import status_words
from fredica_app.gui.symbols import WARNING, symbol
from fredica_app.gui.table import DISPLAY, Index, RecordTableModel, Row
from fredica_app.views.eta import UNKNOWN, SpeedMeter, format_eta
from fredica_app.views.progress_label import bar_label
from fredica_app.views.queue_state import Badge, badge
from fredica_app.views.records import clock, task_note, task_state
from workers.records import RunRecord, TaskRecord
from workers.states import ACTIVE, RunStatus, TaskStatus

# Roles and flags looked up once (see ``table``: the short spellings are slow).
TOOLTIP = Qt.ItemDataRole.ToolTipRole
ALIGNMENT = Qt.ItemDataRole.TextAlignmentRole
FOREGROUND = Qt.ItemDataRole.ForegroundRole
DECORATION = Qt.ItemDataRole.DecorationRole
#: The progress column's :class:`ProgressCell`.
PROGRESS_ROLE = Qt.ItemDataRole.UserRole + 1
#: The row's record, on any column.
RECORD_ROLE = Qt.ItemDataRole.UserRole + 2
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter

_ALERT = QColor(0xC6, 0x28, 0x28)
_WARN = QColor(0xB2, 0x5E, 0x00)
_BADGE_COLOURS = {Badge.FAILED: _ALERT, Badge.INTERRUPTED: _WARN}

_translate = QCoreApplication.translate


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    """Marks ``text`` for ``lupdate`` in ``context`` and returns it untranslated (Qt's own is
    typed as returning ``object``); it is translated where shown."""
    return text


#: A badge's words, marked for ``lupdate`` (the context "Badge"); see :func:`badge_text`.
BADGE_TEXT = {
    Badge.WAITING: QT_TRANSLATE_NOOP("Badge", "waiting"),
    Badge.QUEUED: QT_TRANSLATE_NOOP("Badge", "queued"),
    Badge.RUNNING: QT_TRANSLATE_NOOP("Badge", "running"),
    Badge.PAUSED: QT_TRANSLATE_NOOP("Badge", "paused"),
    Badge.DONE: QT_TRANSLATE_NOOP("Badge", "done"),
    Badge.FAILED: QT_TRANSLATE_NOOP("Badge", "failed"),
    Badge.CANCELLED: QT_TRANSLATE_NOOP("Badge", "cancelled"),
    Badge.SKIPPED: QT_TRANSLATE_NOOP("Badge", "skipped"),
    Badge.INTERRUPTED: QT_TRANSLATE_NOOP("Badge", "interrupted"),
}
_RUN_STATUS_TEXT = {
    RunStatus.PENDING: QT_TRANSLATE_NOOP("RunStatus", "pending"),
    RunStatus.RUNNING: QT_TRANSLATE_NOOP("RunStatus", "running"),
    RunStatus.COMPLETED: QT_TRANSLATE_NOOP("RunStatus", "completed"),
    RunStatus.FAILED: QT_TRANSLATE_NOOP("RunStatus", "failed"),
    RunStatus.CANCELLED: QT_TRANSLATE_NOOP("RunStatus", "cancelled"),
}


def badge_text(shown: Badge) -> str:
    """A badge in the interface's language."""
    return _translate("Badge", BADGE_TEXT[shown])


def run_status_text(status: RunStatus) -> str:
    """A run's status in the interface's language."""
    return _translate("RunStatus", _RUN_STATUS_TEXT[status])


@dataclass(frozen=True, slots=True)
class ProgressCell:
    """What the progress delegate draws: a bar at ``percent`` (None: it moves but cannot say
    how far — a busy bar), the label written on it, and whether it looks live (a paused,
    failed or cancelled task's bar is greyed)."""

    percent: float | None
    label: str
    active: bool = True


class TaskTableModel(RecordTableModel):
    """Tasks, one per row: name (its key), type, state badge, progress, attempt, ETA, run.

    ``clock`` times the progress samples the ETA is measured from (a test's fake clock).
    ``badges`` says a task's badge (default: from its own record); a page that counts badges
    across tasks (``BadgeCounts``) passes its own, and :meth:`refresh` rebuilds the rows whose
    badge moved without a change of their own."""

    KIND = "task"
    RECORD = TaskRecord
    TR_CONTEXT = "TaskTableModel"
    HEADERS = (
        QT_TRANSLATE_NOOP("TaskTableModel", "Task"),
        QT_TRANSLATE_NOOP("TaskTableModel", "Type"),
        QT_TRANSLATE_NOOP("TaskTableModel", "State"),
        QT_TRANSLATE_NOOP("TaskTableModel", "Progress"),
        QT_TRANSLATE_NOOP("TaskTableModel", "Attempt"),
        QT_TRANSLATE_NOOP("TaskTableModel", "ETA"),
        QT_TRANSLATE_NOOP("TaskTableModel", "File"),
    )
    NAME, TYPE, STATE, PROGRESS, ATTEMPT, ETA, FILE = range(7)
    _RIGHT_ALIGNED: ClassVar[frozenset[int]] = frozenset({ATTEMPT, ETA})

    def __init__(
        self,
        parent: QObject | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        badges: Callable[[TaskRecord], Badge] = badge,
        titles: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(parent)
        self._clock = clock
        self._badge = badges
        # Material id → title (the runs' model keeps it): the file a task's row is about.
        self._titles = titles if titles is not None else {}
        self._meters: dict[str, SpeedMeter] = {}
        self._progress: dict[str, ProgressCell] = {}

    def data(self, index: Index, role: int = DISPLAY) -> Any:
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        column = index.column()
        if role == DISPLAY:
            return self.cells(row)[column]
        if role == PROGRESS_ROLE:
            return self.progress_cell(row) if column == self.PROGRESS else None
        if role == ALIGNMENT:
            return RIGHT if column in self._RIGHT_ALIGNED else None
        if role == FOREGROUND:
            return _BADGE_COLOURS.get(self._badge(row.record)) if column == self.STATE else None
        if role == TOOLTIP:
            task = row.record
            note = task_note(task)
            lines = [task_state(task)]
            if resumed(task, self._badge(task)):
                lines.append(resumed_tip())
            if note:
                lines.append(f"⚠ {note}")
            return "\n".join(lines)
        if role == DECORATION:
            return _warning_icon() if column == self.STATE and task_note(row.record) else None
        if role == RECORD_ROLE:
            return row.record
        return None

    def sort_key(self, column: int) -> Callable[[Row], Any]:
        """From the record: a badge by its place in the order of states, progress and attempt
        as numbers, an unknown ETA after every known one."""
        if column == self.NAME:
            return lambda row: (row.record.key or row.id).casefold()
        if column == self.TYPE:
            return lambda row: row.record.type
        if column == self.STATE:
            order = {b: n for n, b in enumerate(Badge)}
            return lambda row: order[self._badge(row.record)]
        if column == self.PROGRESS:
            return lambda row: row.record.progress
        if column == self.ATTEMPT:
            return lambda row: row.record.attempt
        if column == self.ETA:
            return self._eta_key
        return lambda row: (self._file(row.record).casefold(), row.record.created_at)

    def _file(self, task: TaskRecord) -> str:
        """The file the task is about; its run's short id for a run of no material."""
        if task.material_id:
            return self._titles.get(task.material_id, "…")
        return (task.workflow_run_id or "")[:8]

    def refresh_materials(self, material_ids: Collection[str]) -> None:
        """These materials' titles came: their tasks' rows show them."""
        self.refresh(r.id for r in self._rows if (r.record.material_id or "") in material_ids)

    def _eta_key(self, row: Row) -> float:
        meter = self._meters.get(row.id)
        eta = meter.eta if meter is not None else None
        return float("inf") if eta is None else eta

    def progress_cell(self, row: Row) -> ProgressCell:
        """The row's bar, built with its display strings and kept as long as they are."""
        self.cells(row)
        return self._progress[row.id]

    def render(self, row: Row) -> tuple[str, ...]:
        task: TaskRecord = row.record
        shown = self._badge(task)
        cell = _task_progress(task, shown)
        self._progress[task.id] = cell
        eta = ""
        if shown is Badge.RUNNING:
            meter = self._meters.get(task.id)
            eta = format_eta(meter.eta) if meter is not None else UNKNOWN
        attempt = ""
        if task.attempt:
            # The attempts the user's retries allow, as spent: a failure spends one, a restart
            # of Fredica under the task does not (it is told in the state instead).
            tries, spent = task.max_retries + 1, task.retry_count + 1
            attempt = f"{spent} / {tries}" if spent <= tries else str(spent)
        # A job that finished with a note for the user (an input shorter than its header
        # said…): its state says so, the icon and the tooltip say what.
        state = badge_text(shown)
        if resumed(task, shown):  # short, for its column: the tooltip says it in full
            state += " · " + QCoreApplication.translate("TaskTableModel", "resumed")
        if task_note(task):
            state += " · " + QCoreApplication.translate("TaskTableModel", "see the note")
        return (
            task.key or task.id[:8],
            task.type,
            state,
            cell.label,
            attempt,
            eta,
            self._file(task),
        )

    def observe(self, record: Any, previous: Any | None) -> None:
        """Feed the task's speed meter: a sample per progress change while it runs; a pause
        starts its window again; a finished task's meter goes."""
        task: TaskRecord = record
        meters = self._meters
        if task.status not in ACTIVE:
            meters.pop(task.id, None)
        elif task.is_paused:
            meter = meters.get(task.id)
            if meter is not None:
                meter.pause()
        elif task.status is not TaskStatus.PENDING:
            meter = meters.get(task.id)
            if meter is None:
                meter = meters[task.id] = SpeedMeter()
            elif meter.paused:
                meter.resume()
            # Every record of a running task is a sample, the unchanged ones too: time went by
            # at that figure (its status text changed, say), and the speed should show it.
            meter.add(self._clock(), task.progress)

    def forget(self, row: Row) -> None:
        self._meters.pop(row.id, None)
        self._progress.pop(row.id, None)


#: Badges of a task still under way: where a restart under it is news (once it has ended,
#: how it ended is what counts).
_UNDER_WAY = frozenset({Badge.WAITING, Badge.QUEUED, Badge.RUNNING, Badge.PAUSED})


def resumed(task: TaskRecord, shown: Badge) -> bool:
    """Whether the task is under way again after Fredica stopped under it (a restart, not an
    attempt it spent)."""
    return bool(task.interruptions) and shown in _UNDER_WAY


def resumed_tip() -> str:
    """The state's tooltip line for a task :func:`resumed` after a restart."""
    return QCoreApplication.translate(
        "TaskTableModel",
        "Resumed after a restart of Fredica, from where it was: not an attempt it spent.",
    )


@cache
def _warning_icon() -> QIcon:
    return symbol("triangle-alert", WARNING)


def _task_progress(task: TaskRecord, shown: Badge) -> ProgressCell:
    text = status_words(task)
    if shown is Badge.DONE or shown is Badge.SKIPPED:
        return _cell(100.0, badge_text(shown), True)
    if shown is Badge.RUNNING:
        if task.progress <= 0.0:  # no figure yet (or a job that gives none): busy, not 0 %
            starting = QCoreApplication.translate("TaskTableModel", "starting")
            return ProgressCell(None, text or starting, True)
        return _cell(task.progress, text, True)
    if shown in (Badge.WAITING, Badge.QUEUED):
        if not task.progress:  # not started: an empty, quiet bar rather than "0 %"
            return ProgressCell(0.0, "", False)
        return _cell(task.progress, text, True)
    # Paused, failed, cancelled, interrupted: where it stopped, greyed, and why.
    return _cell(
        task.progress, text if shown is Badge.PAUSED and text else badge_text(shown), False
    )


def _cell(percent: float, text: str, active: bool) -> ProgressCell:
    return ProgressCell(percent, bar_label(percent, text), active)


#: The workflows' names as a person reads them, by template (an unknown one: its own name).
TEMPLATE_LABELS = {
    "transcode_mp4": QT_TRANSLATE_NOOP("Templates", "Make an MP4"),
    "download_transcode": QT_TRANSLATE_NOOP("Templates", "Download, then make an MP4"),
    "extract_audio": QT_TRANSLATE_NOOP("Templates", "Extract the audio"),
    "extract_subtitles": QT_TRANSLATE_NOOP("Templates", "Extract the subtitles"),
    "thumbnail": QT_TRANSLATE_NOOP("Templates", "Contact sheet"),
    "media": QT_TRANSLATE_NOOP("Templates", "MP4, audio and subtitles"),
    "subtitles": QT_TRANSLATE_NOOP("Templates", "Subtitles from speech"),
    "full": QT_TRANSLATE_NOOP("Templates", "Everything"),
    "diagnostic": QT_TRANSLATE_NOOP("Templates", "Diagnostic"),
    "noop_chain": QT_TRANSLATE_NOOP("Templates", "Chain of no-ops"),
}


def template_label(template: str | None) -> str:
    """A workflow's name for a person: ``Make an MP4`` for ``transcode_mp4``; a run made
    from a spec (no template), "Tasks"."""
    if not template:
        return QCoreApplication.translate("Templates", "Tasks")
    label = TEMPLATE_LABELS.get(template)
    return _translate("Templates", label) if label else template


class RunTableModel(RecordTableModel):
    """Runs, one per row, led by what they are about: the material's title (the file or the
    URL's name; the run's id only in its tooltip), the workflow, then status, progress (tasks
    done of all), counts, start. The titles come from the library: :meth:`set_titles`."""

    KIND = "run"
    RECORD = RunRecord
    TR_CONTEXT = "RunTableModel"
    HEADERS = (
        QT_TRANSLATE_NOOP("RunTableModel", "File"),
        QT_TRANSLATE_NOOP("RunTableModel", "Workflow"),
        QT_TRANSLATE_NOOP("RunTableModel", "State"),
        QT_TRANSLATE_NOOP("RunTableModel", "Progress"),
        QT_TRANSLATE_NOOP("RunTableModel", "Tasks"),
        QT_TRANSLATE_NOOP("RunTableModel", "Created"),
    )
    TITLE, TEMPLATE, STATE, PROGRESS, TASKS, CREATED = range(6)

    def __init__(
        self, parent: QObject | None = None, *, now: Callable[[], float] = time.time
    ) -> None:
        super().__init__(parent)
        self._now = now
        # Material id → title, as the library said (set_titles).
        self.titles: dict[str, str] = {}
        # Run id → how many of its tasks finished with a note for the user (set_notes).
        self.notes: dict[str, int] = {}
        # Run id → its done tasks when its notes were last asked for.
        self._notes_asked: dict[str, int] = {}

    def set_titles(self, titles: dict[str, str]) -> None:
        """The library's titles of these materials: their runs' rows show them."""
        self.titles.update(titles)
        self.refresh(row.id for row in self._rows if (row.record.material_id or "") in titles)

    def missing_titles(self) -> set[str]:
        """The materials of the rows whose title is not known yet."""
        return {m for row in self._rows if (m := row.record.material_id) and m not in self.titles}

    def notes_to_ask(self) -> list[str]:
        """The runs whose notes may have changed since asked: a task of theirs finished since.
        They count as asked from now on (:meth:`notes_not_read` puts them back)."""
        asked = self._notes_asked
        wanted = [
            row.id
            for row in self._rows
            if row.record.done_tasks and asked.get(row.id) != row.record.done_tasks
        ]
        for run_id in wanted:
            asked[run_id] = self._rows[self._where[run_id]].record.done_tasks
        return wanted

    def notes_not_read(self, run_ids: Iterable[str]) -> None:
        """These runs' notes could not be read: ask again with the next change."""
        for run_id in run_ids:
            self._notes_asked.pop(run_id, None)

    def set_notes(self, notes: dict[str, int]) -> None:
        """How many tasks of these runs finished with a note: their rows show a warning."""
        changed = [i for i, n in notes.items() if self.notes.get(i, 0) != n]
        self.notes.update(notes)
        self.refresh(changed)

    def title(self, run: RunRecord) -> str:
        """The row's title: its material's, "…" while the library has not said it yet, the
        run's short id for a run of no material."""
        if run.material_id is None:
            return QCoreApplication.translate("RunTableModel", "run %1").replace("%1", run.id[:8])
        return self.titles.get(run.material_id, "…")

    def data(self, index: Index, role: int = DISPLAY) -> Any:
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        column = index.column()
        if role == DISPLAY:
            return self.cells(row)[column]
        if role == PROGRESS_ROLE:
            return _run_progress(row.record) if column == self.PROGRESS else None
        if role == FOREGROUND:
            failed = row.record.status is RunStatus.FAILED
            return _ALERT if failed and column == self.STATE else None
        if role == TOOLTIP:
            run = row.record
            tip = f"{self.title(run)}\n{run.template or ''}  ·  {run.id}"
            notes = self.notes.get(run.id, 0)
            if notes:
                said = QCoreApplication.translate(
                    "RunTableModel", "%n task(s) left a note: see its tasks", "", notes
                )
                tip += f"\n⚠ {said}"
            return tip
        if role == DECORATION:
            noted = column == self.STATE and self.notes.get(row.id, 0)
            return _warning_icon() if noted else None
        if role == RECORD_ROLE:
            return row.record
        return None

    def sort_key(self, column: int) -> Callable[[Row], Any]:
        """From the record: times and counts as numbers, a status by its place in the order
        of statuses, titles and workflows as they read."""
        if column == self.PROGRESS:
            return lambda row: row.record.done_tasks / max(1, row.record.total_tasks)
        if column == self.STATE:
            order = {s: n for n, s in enumerate(RunStatus)}
            return lambda row: order[row.record.status]
        if column == self.TASKS:
            return lambda row: row.record.total_tasks - row.record.done_tasks
        if column == self.CREATED:
            return lambda row: row.record.created_at
        if column == self.TEMPLATE:
            return lambda row: template_label(row.record.template).casefold()
        return lambda row: (self.title(row.record).casefold(), row.record.created_at)

    def render(self, row: Row) -> tuple[str, ...]:
        run: RunRecord = row.record
        return (
            self.title(run),
            template_label(run.template),
            run_status_text(run.status),
            _run_progress(run).label,
            _run_counts(run),
            clock(run.created_at, self._now()),
        )


def _run_progress(run: RunRecord) -> ProgressCell:
    if not run.total_tasks:
        return ProgressCell(None, QCoreApplication.translate("RunTableModel", "no tasks"), False)
    live = run.status in (RunStatus.PENDING, RunStatus.RUNNING)
    return ProgressCell(
        100.0 * run.done_tasks / run.total_tasks, f"{run.done_tasks} / {run.total_tasks}", live
    )


def _run_counts(run: RunRecord) -> str:
    translate = QCoreApplication.translate
    running = run.running_tasks + run.claimed_tasks
    pending, failed, cancelled = run.pending_tasks, run.failed_tasks, run.cancelled_tasks
    counts = (
        (running, QCoreApplication.translate("RunTableModel", "%n running", "", running)),
        (pending, QCoreApplication.translate("RunTableModel", "%n pending", "", pending)),
        (failed, QCoreApplication.translate("RunTableModel", "%n failed", "", failed)),
        (cancelled, QCoreApplication.translate("RunTableModel", "%n cancelled", "", cancelled)),
    )
    return " · ".join(text for n, text in counts if n) or translate("RunTableModel", "all done")
