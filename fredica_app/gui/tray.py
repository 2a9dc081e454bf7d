"""The tray icon: Fredica at a glance while its window is closed.

Where the desktop has a system tray (``QSystemTrayIcon.isSystemTrayAvailable()``: Windows,
macOS's menu bar, KDE Plasma, Xfce, GNOME with the AppIndicator extension…) the app shows an
icon there; elsewhere :meth:`Tray.create` returns None and the app lives on without one
(closing the window then quits, as it always did).

- The icon is Fredica's (:mod:`~fredica_app.gui.icon`) with a red badge counting the tasks
  running now.
- Its tooltip says how many tasks run and wait, how far the work under way is, and about how
  long it has left (:class:`QueueProgress`).
- Its menu: Show/Hide the window, Pause queue and Resume queue (the queue page's own
  "Pause queue after current" action, so both say the same and act the same way), the
  "When done" submenu (:meth:`Tray.add_submenu`), Quit.
- A click on the icon brings the window back (on macOS, where a click opens the menu: a
  double click).

The tray follows the window it is attached to (:meth:`Tray.attach`): the window's feed of
changes, after the queue page has applied them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon
from shiboken6 import isValid

from fredica_app.gui.icon import app_icon, badged_icon
from fredica_app.gui.symbols import symbol
from fredica_app.views.eta import SpeedMeter, format_eta
from fredica_app.views.queue_state import Badge
from workers.changes import Change, Snapshot, Tombstone
from workers.records import TaskRecord
from workers.states import ACTIVE

if TYPE_CHECKING:
    from fredica_app.gui.window import MainWindow

#: The tooltip is written again at most this often (milliseconds) while work goes on.
TOOLTIP_MS = 500
_REASON = QSystemTrayIcon.ActivationReason
# A click brings the window back; on macOS a click opens the menu (which has "Show").
_OPENS = (
    (_REASON.DoubleClick,) if sys.platform == "darwin" else (_REASON.Trigger, _REASON.DoubleClick)
)


class QueueProgress:
    """How far the work under way is, and how long it has left.

    The work under way is every task that was unfinished at some point since the queue was
    last idle: a task counts its progress while it is unfinished (paused ones too) and 100 %
    once it has finished, whichever way. When no task is unfinished the queue is idle and the
    count starts again. The time left comes from the speed of the overall percentage over
    the last half minute (``views.eta``); new work arriving lowers the percentage, and the
    speed is measured afresh from there.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._progress: dict[str, float] = {}
        self._unfinished: set[str] = set()
        self._sum = 0.0
        self._meter = SpeedMeter()

    def load(self, tasks: Iterable[TaskRecord]) -> None:
        """Start again from a snapshot's tasks."""
        self._reset()
        self.apply(tasks)

    def apply(self, records: Iterable[TaskRecord | Tombstone | Any]) -> None:
        """Tasks' new records (or tombstones); other records are ignored."""
        for record in records:
            if isinstance(record, Tombstone):
                if record.kind == "task":
                    self._drop(record.id)
            elif isinstance(record, TaskRecord):
                self._apply(record)
        if not self._unfinished:
            self._reset()
        elif self._progress:
            self._meter.add(self._clock(), self._sum / len(self._progress))

    def _apply(self, task: TaskRecord) -> None:
        unfinished = task.status in ACTIVE
        if not unfinished and task.id not in self._progress:
            return  # finished before this stretch of work began
        value = min(100.0, max(0.0, task.progress)) if unfinished else 100.0
        self._sum += value - self._progress.get(task.id, 0.0)
        self._progress[task.id] = value
        if unfinished:
            self._unfinished.add(task.id)
        else:
            self._unfinished.discard(task.id)

    def _drop(self, task_id: str) -> None:
        self._sum -= self._progress.pop(task_id, 0.0)
        self._unfinished.discard(task_id)

    def _reset(self) -> None:
        self._progress.clear()
        self._unfinished.clear()
        self._sum = 0.0
        self._meter = SpeedMeter()

    @property
    def percent(self) -> float | None:
        """The work under way, done (0 to 100); None when the queue is idle."""
        if not self._unfinished:
            return None
        return self._sum / len(self._progress)

    @property
    def eta(self) -> float | None:
        """Seconds left at the current speed; None when unknown or idle."""
        return self._meter.eta if self._unfinished else None


class Tray(QObject):
    """Fredica's tray icon (see the module's docstring)."""

    #: Show the window (a click on the icon, "Show Fredica").
    show_requested = Signal()
    #: Hide the window ("Hide Fredica").
    hide_requested = Signal()
    #: "Quit Fredica".
    quit_requested = Signal()

    @classmethod
    def create(cls, parent: QObject | None = None) -> Tray | None:
        """A tray icon, or None where the desktop has no tray."""
        if not QSystemTrayIcon.isSystemTrayAvailable():
            return None
        return cls(parent)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.icon = QSystemTrayIcon(app_icon(), self)
        self.menu = QMenu()
        self.menu.setObjectName("tray-menu")
        self.show_action = self.menu.addAction(app_icon(), self.tr("Show Fredica"))
        self.show_action.triggered.connect(self._toggle_window)
        self.menu.addSeparator()
        self.pause_action = self.menu.addAction(symbol("pause"), self.tr("Pause queue"))
        self.pause_action.setToolTip(self.tr("Start no new task; the running ones finish"))
        self.pause_action.triggered.connect(lambda: self._set_queue_paused(True))
        self.resume_action = self.menu.addAction(symbol("play"), self.tr("Resume queue"))
        self.resume_action.triggered.connect(lambda: self._set_queue_paused(False))
        #: Submenus (``add_submenu``) go above this separator, between the queue and Quit.
        self._submenus_end = self.menu.addSeparator()
        self.quit_action = self.menu.addAction(
            QIcon.fromTheme(QIcon.ThemeIcon.ApplicationExit), self.tr("Quit Fredica")
        )
        self.quit_action.triggered.connect(self.quit_requested)
        self.menu.aboutToShow.connect(self.update_menu)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._on_activated)

        self.progress = QueueProgress()
        self._window: MainWindow | None = None
        self._running = 0
        self._tooltip_timer = QTimer(self)
        self._tooltip_timer.setSingleShot(True)
        self._tooltip_timer.setInterval(TOOLTIP_MS)
        self._tooltip_timer.timeout.connect(self.update_tooltip)
        self.update_tooltip()
        self.icon.show()

    # --- the window --------------------------------------------------------------------------

    def attach(self, window: MainWindow) -> None:
        """Follow ``window`` (a new one replaces the old: a change of language)."""
        self._window = window
        window.feed.snapshot.connect(self._on_snapshot)
        window.feed.changes.connect(self._on_changes)
        window.queue.commands.pause_queue.toggled.connect(lambda _on: self._schedule())
        self.progress = QueueProgress()
        self._update_badge()
        self.update_tooltip()

    def _live_window(self) -> MainWindow | None:
        window = self._window
        return window if window is not None and isValid(window) else None

    def add_submenu(self, menu: QMenu) -> QAction:
        """Put ``menu`` (as a submenu: "When done ▸") between the queue's actions and Quit.
        The menu stays its owner's; the tray only shows it."""
        return self.menu.insertMenu(self._submenus_end, menu)

    def hide(self) -> None:
        """Take the icon off the tray (the app is quitting)."""
        self.icon.hide()

    # --- what it shows -------------------------------------------------------------------------

    def _on_snapshot(self, snapshot: Snapshot) -> None:
        self.progress.load(snapshot.tasks)
        self._update_badge()
        self._schedule()

    def _on_changes(self, batch: list[Any]) -> None:
        self.progress.apply(c.record if isinstance(c, Change) else c for c in batch)
        self._update_badge()
        self._schedule()

    def _schedule(self) -> None:
        if not self._tooltip_timer.isActive():
            self._tooltip_timer.start()

    def _update_badge(self) -> None:
        window = self._live_window()
        running = window.running_tasks if window is not None else 0
        if running != self._running:
            self._running = running
            self.icon.setIcon(badged_icon(running))

    @property
    def running(self) -> int:
        """The count on the badge."""
        return self._running

    def tooltip(self) -> str:
        """ "Fredica", then what runs and waits, then how far and how long."""
        window = self._live_window()
        lines = ["Fredica"]
        if window is None:
            return lines[0]
        counts = window.queue.counts.counts
        running = counts.get(Badge.RUNNING, 0)
        queued = counts.get(Badge.QUEUED, 0) + counts.get(Badge.WAITING, 0)
        paused = counts.get(Badge.PAUSED, 0)
        if window.queue.commands.pause_queue.isChecked():
            lines.append(self.tr("Queue paused: no new task starts"))
        if not (running or queued or paused):
            lines.append(self.tr("Nothing to do"))
            return "\n".join(lines)
        parts = [
            self.tr("%n running", "", running),
            self.tr("%n queued", "", queued),
        ]
        if paused:
            parts.append(self.tr("%n paused", "", paused))
        lines.append(" · ".join(parts))
        percent = self.progress.percent
        if percent is not None:
            done = self.tr("%1 % done").replace("%1", f"{percent:.0f}")
            eta = self.progress.eta
            if eta is not None:
                done += " · " + self.tr("about %1 left").replace("%1", format_eta(eta))
            lines.append(done)
        return "\n".join(lines)

    def update_tooltip(self) -> None:
        text = self.tooltip()
        if self.icon.toolTip() != text:
            self.icon.setToolTip(text)

    # --- the menu ------------------------------------------------------------------------------

    def update_menu(self) -> None:
        """Before the menu shows: Show or Hide, and Pause or Resume, as things are now."""
        window = self._live_window()
        shown = window is not None and window.isVisible() and not window.isMinimized()
        self.show_action.setText(self.tr("Hide Fredica") if shown else self.tr("Show Fredica"))
        toggle = window.queue.commands.pause_queue if window is not None else None
        open_ = window is not None and window.host.app is not None
        paused = toggle is not None and toggle.isChecked()
        self.pause_action.setEnabled(open_ and not paused)
        self.resume_action.setEnabled(open_ and paused)

    def _toggle_window(self) -> None:
        window = self._live_window()
        if window is not None and window.isVisible() and not window.isMinimized():
            self.hide_requested.emit()
        else:
            self.show_requested.emit()

    def _set_queue_paused(self, paused: bool) -> None:
        """Through the queue page's toggle: the same call, the same error line."""
        window = self._live_window()
        if window is None:
            return
        toggle = window.queue.commands.pause_queue
        if toggle.isChecked() != paused:
            toggle.trigger()

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in _OPENS:
            self.show_requested.emit()
