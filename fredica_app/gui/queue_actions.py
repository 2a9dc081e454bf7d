"""What the queue page can do to its selection: pause, resume, cancel, retry, open a task's
output, copy its error, open a run's details — and pause the whole queue.

One :class:`QAction` per verb serves the toolbar, the context menu and the keyboard. They act
on the selected tasks or, when the runs table is the one in use, on the selected runs (a run's
verb applies to every task of it). What they offer comes from
:func:`~fredica_app.views.queue_state.selection_actions`: only what some selected task can do,
and a pause that cannot happen now is shown disabled, saying why.

Every action goes through :meth:`AppHost.call` (the GUI thread never waits on the
application); a failure comes back as one line on :attr:`QueueActions.message`.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from PySide6.QtCore import QObject, Qt, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication, QIcon, QKeySequence
from PySide6.QtWidgets import QMenu, QWidget

from fredica_app.gui.host import AppHost
from fredica_app.gui.symbols import symbol
from fredica_app.views.queue_state import ActionName, selection_actions
from fredica_app.views.records import task_outputs
from workers.errors import FredicaError
from workers.records import RunRecord, TaskRecord
from workers.states import RunStatus

if TYPE_CHECKING:
    from fredica_app.services import Fredica

T = TypeVar("T")
Verb = Literal["pause", "resume", "cancel", "retry"]

#: One "Open output" opens at most this many folders (not one window per task of hundreds).
MAX_FOLDERS = 5
_UNFINISHED_RUN = frozenset({RunStatus.PENDING, RunStatus.RUNNING})
_ONLY_HERE = Qt.ShortcutContext.WidgetShortcut
_NATIVE = QKeySequence.SequenceFormat.NativeText


class Scope(enum.Enum):
    """Which table the actions act on."""

    TASKS = "tasks"
    RUNS = "runs"


@dataclass(frozen=True, slots=True)
class Selection:
    """What is selected, and which table is in use."""

    scope: Scope
    tasks: Sequence[TaskRecord] = ()
    runs: Sequence[RunRecord] = ()


class QueueActions(QObject):
    """The queue page's actions over the selection ``selection()`` returns."""

    #: One line for the user: why an action failed, or what it did ("" clears it).
    message = Signal(str)
    #: A run's id: show its details.
    open_run = Signal(str)

    def __init__(self, host: AppHost, selection: Callable[[], Selection], parent: QWidget) -> None:
        super().__init__(parent)
        self.host = host
        self._selection = selection
        #: How a folder is opened (a test replaces it): the desktop's file manager, no shell.
        self.open_url: Callable[[QUrl], bool] = QDesktopServices.openUrl

        def make(text: str, icon: QIcon, *keys: QKeySequence) -> QAction:
            action = QAction(icon, text, self)
            action.setShortcuts(list(keys))
            # Only while a table has the focus: Delete or Ctrl+C in the search box edit text.
            action.setShortcutContext(_ONLY_HERE)
            return action

        key = QKeySequence
        self.pause = make(self.tr("Pause"), symbol("pause"), key("Ctrl+P"))
        self.resume = make(self.tr("Resume"), symbol("play"), key("Ctrl+R"))
        self.cancel = make(
            self.tr("Cancel"),
            symbol("circle-x"),
            key(key.StandardKey.Delete),
        )
        self.retry = make(self.tr("Retry"), symbol("rotate-ccw"), key("Ctrl+Shift+R"))
        self.open_output = make(
            self.tr("Open output"),
            symbol("folder-open"),
            key(Qt.Key.Key_Return),
            key(Qt.Key.Key_Enter),
        )
        self.copy_error = make(
            self.tr("Copy error"),
            symbol("copy"),
            key(key.StandardKey.Copy),
        )
        self.details = make(self.tr("Details"), symbol("workflow"))
        #: Checked: no new task starts; running ones finish (``fredica pause-queue``).
        self.pause_queue = QAction(
            symbol("circle-pause"), self.tr("Pause queue after current"), self
        )
        self.pause_queue.setCheckable(True)
        self.pause_queue.setToolTip(
            self.tr("Start no new task; the running ones finish. Kept until unchecked.")
        )
        self._verbs: dict[Verb, QAction] = {
            "pause": self.pause,
            "resume": self.resume,
            "cancel": self.cancel,
            "retry": self.retry,
        }
        self._by_name = {
            ActionName.PAUSE: self.pause,
            ActionName.RESUME: self.resume,
            ActionName.CANCEL: self.cancel,
            ActionName.RETRY: self.retry,
            ActionName.OPEN_OUTPUT: self.open_output,
            ActionName.COPY_ERROR: self.copy_error,
        }
        # What each does, by scope (tasks, runs).
        self._tips: dict[QAction, tuple[str, str]] = {
            self.pause: (
                self.tr("Pause the selected tasks"),
                self.tr("Pause every unfinished task of the selected runs"),
            ),
            self.resume: (
                self.tr("Resume the selected tasks"),
                self.tr("Resume the held tasks of the selected runs"),
            ),
            self.cancel: (
                self.tr("Cancel the selected tasks and what depends on them"),
                self.tr("Cancel the selected runs"),
            ),
            self.retry: (
                self.tr("Run the selected failed or cancelled tasks again"),
                self.tr("Run the failed and cancelled tasks of the selected runs again"),
            ),
            self.open_output: (
                self.tr("Open the folder of the selected tasks' output"),
                self.tr("Select done tasks to open their output"),
            ),
            self.copy_error: (
                self.tr("Copy the selected tasks' errors"),
                self.tr("Select failed tasks to copy their errors"),
            ),
            self.details: (
                self.tr("Show the run of the selected task"),
                self.tr("Show the selected run"),
            ),
        }
        self._failed: dict[Verb, str] = {
            "pause": self.tr("Could not pause %1: %2"),
            "resume": self.tr("Could not resume %1: %2"),
            "cancel": self.tr("Could not cancel %1: %2"),
            "retry": self.tr("Could not retry %1: %2"),
        }
        for verb, action in self._verbs.items():
            action.triggered.connect(lambda _=False, v=verb: self.control(v))
        self.open_output.triggered.connect(self._open_selected_outputs)
        self.copy_error.triggered.connect(self._copy_errors)
        self.details.triggered.connect(self._show_details)
        self.pause_queue.triggered.connect(self._toggle_queue)

        self.scope = Scope.TASKS
        self._tasks: Sequence[TaskRecord] = ()
        self._targets: dict[QAction, tuple[str, ...]] = {}
        self._labels: dict[str, str] = {}
        #: The context menu's entries, None for a separator.
        self._offered: list[QAction | None] = []
        self._queue_calls = 0
        self.refresh()

    @property
    def selection_actions(self) -> list[QAction]:
        """The actions on the selection, in toolbar order."""
        return [*self._by_name.values(), self.details]

    def targets(self, action: QAction) -> tuple[str, ...]:
        """The ids ``action`` would act on now (as of the last :meth:`refresh`)."""
        return self._targets.get(action, ())

    # --- what the selection allows -------------------------------------------------------------

    def refresh(self) -> None:
        """Enable, disable and explain the actions for the selection as it is now."""
        selection = self._selection()
        self.scope = selection.scope
        if selection.scope is Scope.TASKS:
            self._offer_tasks(selection.tasks)
        else:
            self._offer_runs(selection.runs)

    def _offer_tasks(self, tasks: Sequence[TaskRecord]) -> None:
        self._tasks = tasks
        self._labels = {t.id: t.key or t.id[:8] for t in tasks}
        offers = {offer.name: offer for offer in selection_actions(tasks)}
        offered: list[QAction | None] = []
        for name, action in self._by_name.items():
            offer = offers.get(name)
            self._targets[action] = offer.task_ids if offer is not None else ()
            action.setEnabled(offer is not None and offer.enabled)
            if offer is not None and not offer.enabled:
                action.setToolTip(self._why_not(offer.name, len(offer.task_ids), offer.reason))
            else:
                action.setToolTip(self._tip(action, 0))
            if offer is not None:
                offered.append(action)
        runs = _unique(t.workflow_run_id for t in tasks if t.workflow_run_id)
        self._set_details(runs, offered, 0)

    def _offer_runs(self, runs: Sequence[RunRecord]) -> None:
        self._tasks = ()
        self._labels = {r.id: r.id[:8] for r in runs}
        unfinished = tuple(r.id for r in runs if r.status in _UNFINISHED_RUN)
        retryable = tuple(r.id for r in runs if r.failed_tasks or r.cancelled_tasks)
        # A run's outputs and errors are its tasks': none of these on a run.
        ids_of = {
            self.pause: unfinished,
            self.resume: unfinished,
            self.cancel: unfinished,
            self.retry: retryable,
        }
        offered: list[QAction | None] = []
        for action in self._by_name.values():
            ids = ids_of.get(action, ())
            self._targets[action] = ids
            action.setEnabled(bool(ids))
            action.setToolTip(self._tip(action, 1))
            if ids:
                offered.append(action)
        self._set_details([r.id for r in runs], offered, 1)

    def _set_details(self, run_ids: Sequence[str], offered: list[QAction | None], tip: int) -> None:
        self._targets[self.details] = tuple(run_ids[:1])
        self.details.setEnabled(bool(run_ids))
        self.details.setToolTip(self._tip(self.details, tip))
        if run_ids:
            offered += [None, self.details] if offered else [self.details]
        self._offered = offered

    def _tip(self, action: QAction, scope: int) -> str:
        text = self._tips[action][scope]
        keys = action.shortcut().toString(_NATIVE)
        return f"{text} ({keys})" if keys else text

    def _why_not(self, name: ActionName, n: int, reason: str | None) -> str:
        if name is ActionName.PAUSE:  # the one action selection_actions disables
            if n == 1:
                return self.tr("This task cannot pause now: its job cannot stop safely here")
            return self.tr("None of these tasks can pause now: their jobs cannot stop safely here")
        return reason or ""

    def menu(self, parent: QWidget | None = None) -> QMenu | None:
        """The context menu of the selection: only what it offers (None: nothing)."""
        self.refresh()
        if not self._offered:
            return None
        menu = QMenu(parent)
        menu.setToolTipsVisible(True)  # a disabled entry says why
        for action in self._offered:
            if action is None:
                menu.addSeparator()
            else:
                menu.addAction(action)
        return menu

    # --- doing it ----------------------------------------------------------------------------

    def control(self, verb: Verb) -> None:
        """Pause, resume, cancel or retry the selected tasks or runs."""
        self.refresh()  # the records may have changed since the menu was shown
        action = self._verbs[verb]
        ids = self._targets.get(action, ())
        if not ids or not action.isEnabled():
            return
        labels = dict(self._labels)

        async def work(app: Fredica) -> list[tuple[str, str]]:
            failures: list[tuple[str, str]] = []
            changed: set[str] = set()
            for some_id in ids:
                # Already changed with an earlier one (downstream of a cancel or a retry):
                # acting on it again would only say it is no longer in that state.
                if some_id in changed:
                    continue
                try:
                    result = await app.control.apply(verb, some_id)
                except FredicaError as exc:
                    failures.append((some_id, str(exc)))
                else:
                    changed.update(result.changed)
            return failures

        def done(failures: list[tuple[str, str]]) -> None:
            if not failures:
                self.message.emit("")
                return
            some_id, error = failures[0]
            line = self._failed[verb].replace("%1", labels.get(some_id, some_id[:8]), 1)
            line = line.replace("%2", error, 1)
            if len(failures) > 1:
                line += " " + self.tr("(and %n more)", "", len(failures) - 1)
            self.message.emit(line)

        self._call(work, done)

    def open_outputs(self, tasks: Iterable[TaskRecord]) -> None:
        """Open the folders of these tasks' outputs in the file manager."""
        folders = _unique(str(Path(p).parent) for t in tasks for p in task_outputs(t))
        for folder in folders[:MAX_FOLDERS]:
            if not self.open_url(QUrl.fromLocalFile(folder)):
                self.message.emit(self.tr("Could not open the folder %1").replace("%1", folder))
                return
        if len(folders) > MAX_FOLDERS:
            self.message.emit(self.tr("Opened the first %n folder(s)", "", MAX_FOLDERS))

    def _open_selected_outputs(self) -> None:
        self.refresh()
        ids = set(self._targets.get(self.open_output, ()))
        self.open_outputs(t for t in self._tasks if t.id in ids)

    def _copy_errors(self) -> None:
        self.refresh()
        ids = set(self._targets.get(self.copy_error, ()))
        lines = [
            f"{t.key or t.id[:8]} ({t.type}): [{t.error_type}] {t.error}"
            for t in self._tasks
            if t.id in ids
        ]
        if lines:
            QGuiApplication.clipboard().setText("\n".join(lines))
            self.message.emit(self.tr("Copied the error of %n task(s)", "", len(lines)))

    def _show_details(self) -> None:
        self.refresh()
        runs = self._targets.get(self.details, ())
        if runs:
            self.open_run.emit(runs[0])

    # --- the queue's pause -----------------------------------------------------------------------

    def _toggle_queue(self, checked: bool) -> None:
        async def work(app: Fredica) -> None:
            if checked:
                await app.control.pause_queue()
            else:
                await app.control.resume_queue()

        def done(_: None) -> None:
            self._queue_calls -= 1

        def failed(exc: Exception) -> None:
            self._queue_calls -= 1
            self.pause_queue.setChecked(not checked)
            self._on_error(exc)

        self._queue_calls += 1
        if not self._call(work, done, failed):
            self._queue_calls -= 1
            self.pause_queue.setChecked(not checked)

    def show_queue_paused(self, paused: bool) -> None:
        """The queue's flag as read: check or uncheck the toggle without acting. A read that
        crosses a click of this window's is ignored (the next one tells)."""
        if self._queue_calls == 0 and self.pause_queue.isChecked() != paused:
            self.pause_queue.setChecked(paused)  # ``triggered`` only fires for the user's

    # --- calling the application ---------------------------------------------------------------

    def _call(
        self,
        work: Callable[[Fredica], Awaitable[T]],
        on_done: Callable[[T], Any],
        on_error: Callable[[Exception], Any] | None = None,
    ) -> bool:
        if self.host.app is None:  # still opening: a call would wait for it
            self.message.emit(self.tr("Fredica is still opening its data: try again in a moment"))
            return False
        try:
            self.host.call(work, on_done, on_error or self._on_error)
        except RuntimeError as exc:  # the application has closed
            self.message.emit(self.tr("Fredica cannot do that now: %1").replace("%1", str(exc)))
            return False
        return True

    def _on_error(self, exc: Exception) -> None:
        self.message.emit(
            self.tr("That did not work: %1").replace("%1", str(exc) or type(exc).__name__)
        )


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
