"""The window's "When done" choice: what Fredica does once the queue is done — nothing, a
notification, quit, put the computer to sleep or shut it down (the commands are in
:mod:`fredica_app.desktop.power`).

:class:`WhenDoneController` keeps the choice for this session and acts on the edge from busy
to idle that the window reports (:meth:`WhenDoneController.queue_busy`, on every change of the
queue). Sleep and shut down first show a :class:`CountdownDialog` — a minute to cancel,
shown with ``open()`` so that nothing waits in a nested event loop — and new work cancels the
countdown (the choice stays, for when that work is done).

The choice is deliberately not saved: a "shut down when done" remembered across restarts
would power the computer off the next time someone opens Fredica and a queue drains, long
after the evening it was meant for. For the same reason, once it has acted, a choice of
sleep, shut down or quit goes back to "Do nothing" (a computer that wakes up and finishes
more work must not go back to sleep or shut down again), and so does a countdown the user
cancels. "Notify me" stays until changed.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QFont
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from fredica_app.desktop.power import (
    COUNTDOWN_SECONDS,
    CommandRunner,
    WhenDone,
    perform,
    power_command,
    run_command,
    seconds_left,
)
from fredica_app.errors import FredicaError
from fredica_app.gui.symbols import WARNING, symbol
from fredica_app.views.queue_state import Badge

log = logging.getLogger(__name__)

#: Between two updates of the countdown's text (milliseconds).
TICK_MS = 200


def queue_is_busy(counts: Mapping[Badge, int]) -> bool:
    """Whether the queue still has work, from the queue page's counts: a task runs or is
    queued for a slot. Waiting tasks wait for one of those (or for a held task, which is not
    work that will end by itself); held, done, failed and cancelled ones are not work."""
    return counts.get(Badge.RUNNING, 0) + counts.get(Badge.QUEUED, 0) > 0


class CountdownDialog(QDialog):
    """ "The queue is done: Fredica will shut the computer down in 60 s", with Cancel (the
    default button) and "Shut down now". Accepted when the time is up or on "now", rejected
    on Cancel, Escape or closing it."""

    def __init__(
        self,
        action: WhenDone,
        seconds: float = COUNTDOWN_SECONDS,
        parent: QWidget | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(parent)
        if not action.powers_off:
            raise ValueError(f"no countdown for {action!r}")
        self.setObjectName("when-done-countdown")
        self.action = action
        self.seconds = seconds
        self._clock = clock
        self._started = clock()
        self.setWindowTitle(self.tr("Fredica"))
        # The window may be hidden in the tray, the user away: in front of everything.
        self.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint, True)

        sleep = action is WhenDone.SLEEP
        icon = QLabel()
        shown = symbol("info") if sleep else symbol("triangle-alert", WARNING)
        icon.setPixmap(shown.pixmap(48, 48))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        heading = QLabel(self.tr("The queue is done"))
        font = QFont(heading.font())
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.2)
        heading.setFont(font)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setMinimumWidth(340)
        hint = QLabel(self.tr("Cancel to keep the computer on."))
        self.bar = QProgressBar()
        self.bar.setRange(0, max(1, round(seconds * 1000)))
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(8)

        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.now_button = QPushButton(self.tr("Sleep now") if sleep else self.tr("Shut down now"))
        self.cancel_button.setDefault(True)  # Enter keeps the computer on
        self.cancel_button.clicked.connect(self.reject)
        self.now_button.clicked.connect(self.accept)

        text = QVBoxLayout()
        text.addWidget(heading)
        text.addWidget(self.message)
        text.addWidget(hint)
        text.addSpacing(6)
        text.addWidget(self.bar)
        top = QHBoxLayout()
        top.addWidget(icon)
        top.addSpacing(8)
        top.addLayout(text, 1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.now_button)
        buttons.addWidget(self.cancel_button)
        column = QVBoxLayout(self)
        column.addLayout(top)
        column.addSpacing(8)
        column.addLayout(buttons)

        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._tick)
        self.finished.connect(self._timer.stop)
        self._tick()
        self._timer.start()

    def seconds_left(self) -> int:
        return seconds_left(self._started, self._clock(), self.seconds)

    def _tick(self) -> None:
        left = self.seconds_left()
        if self.action is WhenDone.SLEEP:
            text = self.tr("Fredica will put the computer to sleep in %n s.", "", left)
        else:
            text = self.tr("Fredica will shut the computer down in %n s.", "", left)
        self.message.setText(text)
        remaining = self.seconds - (self._clock() - self._started)
        self.bar.setValue(max(0, round(remaining * 1000)))
        if left <= 0 and self.isVisible():
            self.accept()


class WhenDoneController(QObject):
    """The session's "When done" choice, acted on when the queue goes from busy to idle.

    ``notify(title, body)`` shows a notification (the window's tray or its fallback);
    ``runner`` runs the sleep or shut-down command (the real one by default; a test's fake).
    """

    #: The choice changed (a :class:`WhenDone` value).
    action_changed = Signal(str)
    #: Quit Fredica: the queue is done and "Quit Fredica" was chosen.
    quit_requested = Signal()
    #: Sleep or shut down failed: what happened and what to try (also notified).
    failed = Signal(str)
    #: A sleep or shut-down command ran (the action's value).
    performed = Signal(str)
    #: From the thread that ran the command: "" when it worked, else the error.
    _command_done = Signal(str, str)

    def __init__(
        self,
        notify: Callable[[str, str], None],
        runner: CommandRunner = run_command,
        *,
        platform: str = sys.platform,
        countdown_seconds: float = COUNTDOWN_SECONDS,
        dialog_parent: QWidget | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._notify = notify
        self._runner = runner
        self._platform = platform
        self.countdown_seconds = countdown_seconds
        self._dialog_parent = dialog_parent
        self._action = WhenDone.NOTHING
        self._busy = False
        self._keep_choice = False  # the countdown is being cancelled by new work
        #: The countdown showing, if any.
        self.dialog: CountdownDialog | None = None
        self._command_done.connect(self._on_command_done)

    # --- the choice ------------------------------------------------------------------------------

    @property
    def action(self) -> WhenDone:
        return self._action

    def set_action(self, action: WhenDone | str) -> None:
        action = WhenDone(action)
        if action is self._action:
            return
        self._action = action
        if self.dialog is not None:  # another choice while counting down: not that one
            self._cancel_countdown(keep_choice=True)
        self.action_changed.emit(action.value)

    def labels(self) -> dict[WhenDone, str]:
        """What the menu shows for each choice."""
        return {
            WhenDone.NOTHING: self.tr("Do nothing"),
            WhenDone.NOTIFY: self.tr("Notify me"),
            WhenDone.QUIT: self.tr("Quit Fredica"),
            WhenDone.SLEEP: self.tr("Sleep"),
            WhenDone.SHUTDOWN: self.tr("Shut down"),
        }

    def supports(self, action: WhenDone) -> bool:
        """Whether this system has a command for it (sleep and shut down need one)."""
        if not action.powers_off:
            return True
        try:
            power_command(action, self._platform)
        except FredicaError:
            return False
        return True

    # --- the queue -------------------------------------------------------------------------------

    def queue_busy(self, busy: bool) -> None:
        """The window's report, on every change of the queue: whether work remains (see
        :func:`queue_is_busy`). Acts on busy → idle; new work cancels a countdown."""
        was, self._busy = self._busy, busy
        if busy and not was:
            if self.dialog is not None:
                self._cancel_countdown(keep_choice=True)
        elif was and not busy:
            self._queue_done()

    def _queue_done(self) -> None:
        action = self._action
        if action is WhenDone.NOTIFY:
            self._notify(self.tr("The queue is done"), self.tr("Every task has finished."))
        elif action is WhenDone.QUIT:
            self.set_action(WhenDone.NOTHING)
            self.quit_requested.emit()
        elif action.powers_off:
            if not self.supports(action):
                self.set_action(WhenDone.NOTHING)
                self._failed(self._unsupported(action))
                return
            dialog = CountdownDialog(action, self.countdown_seconds, self._dialog_parent)
            dialog.finished.connect(self._countdown_ended)
            self.dialog = dialog
            dialog.open()
            dialog.raise_()
            dialog.activateWindow()

    def _unsupported(self, action: WhenDone) -> str:
        try:
            power_command(action, self._platform)
        except FredicaError as exc:
            return str(exc)
        return ""

    # --- the countdown ---------------------------------------------------------------------------

    def _cancel_countdown(self, *, keep_choice: bool) -> None:
        if self.dialog is not None:
            self._keep_choice = keep_choice
            self.dialog.reject()

    def _countdown_ended(self, result: int) -> None:
        dialog, self.dialog = self.dialog, None
        keep, self._keep_choice = self._keep_choice, False
        if dialog is None:
            return
        dialog.deleteLater()
        action = dialog.action
        if result == QDialog.DialogCode.Accepted:
            self.set_action(WhenDone.NOTHING)  # done once: a computer that wakes stays on
            self._perform(action)
        elif not keep:  # the user cancelled: the computer stays on, and stays so
            self.set_action(WhenDone.NOTHING)

    def _perform(self, action: WhenDone) -> None:
        """Run the command on a thread of its own: the window stays responsive while it runs
        (shutting down asks every application to quit first)."""
        runner, platform, done = self._runner, self._platform, self._command_done

        def run() -> None:
            try:
                perform(action, runner, platform)
                message = ""
            except FredicaError as exc:
                message = str(exc)
            except Exception as exc:  # a runner that breaks its contract: still say so
                log.exception("the when-done command failed")
                message = f"{type(exc).__name__}: {exc}"
            try:
                done.emit(action.value, message)
            except RuntimeError:  # the controller is gone (the app quit meanwhile)
                pass

        threading.Thread(target=run, name="fredica-when-done", daemon=True).start()

    def _on_command_done(self, action: str, message: str) -> None:
        if message:
            self._failed(message)
        else:
            self.performed.emit(action)

    def _failed(self, message: str) -> None:
        log.warning("when the queue is done: %s", message)
        self.failed.emit(message)
        self._notify(self.tr("Fredica"), message)


class WhenDoneMenu(QMenu):
    """ "When done" with its five choices, checkable, one checked: the controller's."""

    def __init__(self, controller: WhenDoneController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle(self.tr("When done"))
        self.setObjectName("when-done-menu")
        self.controller = controller
        group = QActionGroup(self)
        group.setExclusive(True)
        self._actions: dict[WhenDone, QAction] = {}
        for choice, text in controller.labels().items():
            item = self.addAction(text)
            item.setCheckable(True)
            item.setData(choice.value)
            item.setEnabled(controller.supports(choice))
            item.triggered.connect(lambda _=False, c=choice: controller.set_action(c))
            group.addAction(item)
            self._actions[choice] = item
        self._show(controller.action.value)
        # A slot of this menu: the connection goes with it when the menu is deleted.
        controller.action_changed.connect(self._show)

    def _show(self, value: str) -> None:
        self._actions[WhenDone(value)].setChecked(True)


def when_done_menu(controller: WhenDoneController, parent: QWidget | None = None) -> QMenu:
    """The "When done" menu for the window's menu bar or the tray's menu."""
    return WhenDoneMenu(controller, parent)
