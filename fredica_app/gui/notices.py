"""What the desktop app notifies the user of, and when.

- **Finished runs.** A run that completes or fails leaves a notice in the transaction that
  ends it, whoever ends it: this app's engine or a headless ``fredica worker``
  (``services.notices``). The app takes the notices not shown yet — taking marks them shown,
  so none is ever shown twice, by this process or another — when the application opens
  (those left while the app was closed, or crashed), and again whenever the window's feed
  shows a run reaching completed or failed. Those takes are debounced: a burst of a hundred
  runs finishing is one take, not a hundred. Up to :data:`SUMMARY_OVER` runs are told one by
  one (a failed run says what failed: the task's type and the first line of its error);
  more become one summary, whose click opens the queue.
- **A restart to review.** When start-up recovery left something for the user (the restart
  banner's ``needs_review``), one notification at start.
- **The database cannot be written** (the engine's ``EngineHeld``: its disk full, a lock
  another program keeps): one urgent notification; the window shows it in a bar until it
  passes.
- **The disk nearly full** (:class:`DiskWatch`, the rule in ``views.disk``): the library folder
  and the data directory are measured every minute, off the GUI thread; and at once when a
  task fails because the disk is full (``NO_SPACE``).

With notifications off in the settings the notices are still taken (and so marked shown):
they do not pile up for the day notifications are turned on again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal
from shiboken6 import isValid

from fredica_app.gui.banner import Pending, needs_review, read_pending
from fredica_app.gui.host import AppHost, HostState, Mode
from fredica_app.gui.models import template_label
from fredica_app.gui.notify import Notifier
from fredica_app.services.notices import RunNotice, TakenNotices, take_run_notices
from fredica_app.views.disk import LowSpaceAlarm, Usage
from fredica_app.views.library_view import file_size
from workers.changes import Change
from workers.events import EngineHeld
from workers.records import RunRecord, TaskRecord
from workers.states import ErrorType, RunStatus, TaskStatus

if TYPE_CHECKING:
    from fredica_app.gui.window import MainWindow
    from fredica_app.services import Fredica

log = logging.getLogger(__name__)

#: More runs than this at once are told in one summary.
SUMMARY_OVER = 3
#: A take waits this long after the last run seen finishing (milliseconds)…
DEBOUNCE_MS = 1500
#: …but no longer than this after the first, while runs keep finishing.
MAX_WAIT_MS = 10_000
#: Between two measures of the free disk space (milliseconds).
DISK_MS = 60_000
#: After telling of a full disk, tasks failing for it are not told again for this long
#: (seconds): a hundred tasks failing at once are one notification.
NO_SPACE_QUIET = 300.0
#: A failed task's error, as much as a notification shows.
ERROR_CHARS = 200
_OPEN = (Mode.ENGINE, Mode.ATTACHED)
_FINISHED = (RunStatus.COMPLETED, RunStatus.FAILED)


def first_line(text: str | None, limit: int = ERROR_CHARS) -> str:
    """The first non-empty line of ``text``, shortened to ``limit`` characters."""
    line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


class NoticeWatcher(QObject):
    """Tells the user of finished runs, a restart to review and a full disk (see the
    module's docstring). The app makes one and :meth:`attach` es each window to it."""

    #: The notices of one take, after they were told (a list of ``RunNotice``).
    taken = Signal(object)

    def __init__(
        self,
        host: AppHost,
        notifier: Notifier,
        *,
        debounce_ms: int = DEBOUNCE_MS,
        disk: DiskWatch | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.host = host
        self.notifier = notifier
        self.disk = disk or DiskWatch(host, notifier, parent=self)
        self._window: MainWindow | None = None
        self._first_take = True
        self._taking = False
        self._again = False
        self._told_restart = False
        self._no_space_seen: set[str] = set()
        self._no_space_quiet_until = 0.0
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(debounce_ms)
        self._debounce.timeout.connect(self.take)
        self._max_wait = QTimer(self)
        self._max_wait.setSingleShot(True)
        self._max_wait.setInterval(max(debounce_ms, MAX_WAIT_MS))
        self._max_wait.timeout.connect(self.take)
        host.state_changed.connect(self.on_state)
        host.engine_event.connect(self.on_engine_event)

    def attach(self, window: MainWindow) -> None:
        """Follow ``window``'s feed (a new window replaces the old: a change of language)."""
        self._window = window
        window.feed.changes.connect(self._on_changes)

    # --- the host ------------------------------------------------------------------------------

    def on_state(self, state: HostState) -> None:
        """Open (an engine here, or attached to a worker's): take what was left, look at the
        disks, and tell of a restart to review; stopped: stop looking."""
        if state.mode in _OPEN:
            self.take()
            self.disk.start()
            recovery = state.recovery
            if not self._told_restart and recovery is not None and recovery.total:
                self._told_restart = True
                self._call(read_pending, self._on_pending)
        elif state.mode is Mode.STOPPED:
            self.disk.stop()
            self._debounce.stop()
            self._max_wait.stop()

    def _call(
        self,
        work: Callable[[Fredica], Any],
        on_done: Callable[[Any], None],
        on_error: Callable[[Exception], None] | None = None,
    ) -> bool:
        if self.host.state.mode not in _OPEN:
            return False
        try:
            self.host.call(work, on_done, on_error or self._on_error)
        except RuntimeError as exc:  # the application has closed meanwhile
            log.info("notices: %s", exc)
            return False
        return True

    def _on_error(self, exc: Exception) -> None:
        log.warning("notices: could not read what to tell: %s", exc)

    def _on_take_failed(self, exc: Exception) -> None:
        self._taking = False
        self._on_error(exc)  # the next run finishing, or the next start, takes them

    # --- finished runs -------------------------------------------------------------------------

    def request(self) -> None:
        """Take the notices soon (debounced: see the module's docstring)."""
        self._debounce.start()
        if not self._max_wait.isActive():
            self._max_wait.start()

    def take(self) -> None:
        """Take the notices now (after one in flight, when there is one)."""
        if self._taking:
            self._again = True
            return
        self._debounce.stop()
        self._max_wait.stop()
        while_closed = self._first_take
        self._taking = True

        def taken(notices: TakenNotices) -> None:
            self._on_taken(notices, while_closed)

        if self._call(take_run_notices, taken, self._on_take_failed):
            self._first_take = False
        else:
            self._taking = False

    def _on_taken(self, taken: TakenNotices, while_closed: bool) -> None:
        self._taking = False
        self.tell(taken.notices, while_closed=while_closed, total=taken.total, failed=taken.failed)
        self.taken.emit(taken.notices)
        if self._again:
            self._again = False
            self.request()

    def tell(
        self,
        notices: Sequence[RunNotice],
        *,
        while_closed: bool = False,
        total: int | None = None,
        failed: int | None = None,
    ) -> None:
        """Notify of ``notices``: one by one, or in one summary past :data:`SUMMARY_OVER`.
        ``total`` and ``failed``: how many runs finished (and failed) in all, when only some
        of them are in ``notices``."""
        n = len(notices) if total is None else total
        if not n:
            return
        if n <= SUMMARY_OVER and len(notices) == n:
            for notice in notices:
                title, body = self.describe(notice)
                self.notifier.notify(title, body, run_id=notice.run_id)
            return
        if failed is None:
            failed = sum(1 for notice in notices if notice.failed)
        if while_closed:
            title = self.tr("%n run(s) finished while Fredica was closed", "", n)
        else:
            title = self.tr("%n run(s) finished", "", n)
        parts = []
        if n - failed:
            parts.append(self.tr("%n completed", "", n - failed))
        if failed:
            parts.append(self.tr("%n failed", "", failed))
        self.notifier.notify(title, ", ".join(parts))

    def describe(self, notice: RunNotice) -> tuple[str, str]:
        """A finished run's title and text."""
        if not notice.failed:
            title = self.tr("Done: %1").replace("%1", notice.title)
            if notice.template:
                body = self.tr("%1: finished.").replace("%1", template_label(notice.template))
            else:
                body = self.tr("The run has finished.")
            return title, body
        title = self.tr("Failed: %1").replace("%1", notice.title)
        if notice.failed_task:
            error = first_line(notice.error) or self.tr("no error was given")
            body = self.tr("%1 failed: %2").replace("%1", notice.failed_task, 1)
            body = body.replace("%2", error, 1)
        else:
            body = self.tr("The run failed.")
        return title, body

    def _on_changes(self, batch: list[Any]) -> None:
        finished = False
        no_space: list[TaskRecord] = []
        for item in batch:
            record = item.record if isinstance(item, Change) else item
            if isinstance(record, RunRecord):
                finished = finished or record.status in _FINISHED
            elif (
                isinstance(record, TaskRecord)
                and record.status is TaskStatus.FAILED
                and record.error_type == ErrorType.NO_SPACE
                and record.id not in self._no_space_seen
            ):
                self._no_space_seen.add(record.id)
                no_space.append(record)
        if finished:
            self.request()
        if no_space:
            self._tell_no_space(no_space)

    # --- a full disk ---------------------------------------------------------------------------

    def _tell_no_space(self, tasks: list[TaskRecord]) -> None:
        now = time.monotonic()
        if now < self._no_space_quiet_until:
            return
        self._no_space_quiet_until = now + NO_SPACE_QUIET
        first = tasks[0]
        error = first_line(first.error) or self.tr("the disk is full: free some space, then retry")
        body = f"{first.type}: {error}"
        if len(tasks) > 1:
            body += " " + self.tr("(and %n more)", "", len(tasks) - 1)
        self.notifier.notify(
            self.tr("The disk is full"), body, run_id=first.workflow_run_id, urgent=True
        )

    # --- a restart to review -------------------------------------------------------------------

    def on_engine_event(self, event: object) -> None:
        """The engine cannot write the database for now (a full disk, a lock another program
        keeps): told once, urgently, until it can again."""
        if isinstance(event, EngineHeld) and event.reason is not None:
            reason = event.reason[:1].upper() + event.reason[1:]
            body = self.tr("%1. Running tasks go on; nothing new starts until it is fixed.")
            self.notifier.notify(
                self.tr("Fredica is waiting"), body.replace("%1", reason, 1), urgent=True
            )

    def _on_pending(self, pending: Pending) -> None:
        entries = [e for e in pending.entries if needs_review(e)]
        if not entries:
            return
        window = self._window
        if window is not None and isValid(window):
            text = window.banner.headline(entries)
        else:
            text = self.tr("%n task(s) were interrupted.", "", len(entries))
        self.notifier.notify(self.tr("Work to review after a restart"), text)


# --- the disks ----------------------------------------------------------------------------------


def measure(folders: Iterable[Path]) -> list[Usage]:
    """The file systems of ``folders`` (a folder not made yet: its nearest parent), each
    once, with their size and free space. One that cannot be read is left out. Blocking: run
    it off the GUI thread."""
    usages: list[Usage] = []
    seen: set[int] = set()
    for folder in folders:
        path = Path(folder)
        while not path.exists() and path.parent != path:
            path = path.parent
        try:
            device = os.stat(path).st_dev
            total, _used, free = shutil.disk_usage(path)
        except OSError as exc:
            log.debug("cannot measure the disk of %s: %s", path, exc)
            continue
        if device not in seen:
            seen.add(device)
            usages.append(Usage(device, str(folder), total, free))
    return usages


class DiskWatch(QObject):
    """Measures the disks of the library folder and the data directory every
    :data:`DISK_MS`, through the host (off the GUI thread), and warns once when one runs
    low (``views.disk``)."""

    #: The usages of one measure (a list of ``Usage``), after any warning.
    measured = Signal(object)

    def __init__(
        self,
        host: AppHost,
        notifier: Notifier,
        *,
        interval_ms: int = DISK_MS,
        measure: Callable[[Iterable[Path]], list[Usage]] = measure,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.host = host
        self.notifier = notifier
        self.alarm = LowSpaceAlarm()
        self._measure = measure
        self._busy = False
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)

    def start(self) -> None:
        if not self._timer.isActive():
            self._timer.start()
            self.check()

    def stop(self) -> None:
        self._timer.stop()

    def check(self) -> None:
        """Measure now (unless a measure is under way)."""
        if self._busy or self.host.state.mode not in _OPEN:
            return
        measure_ = self._measure

        async def work(app: Fredica) -> list[Usage]:
            folders = [Path(app.library_dir), Path(app.paths.data_dir)]
            return await asyncio.to_thread(measure_, folders)

        self._busy = True
        try:
            self.host.call(work, self._on_measured, self._on_error)
        except RuntimeError:
            self._busy = False

    def _on_error(self, exc: Exception) -> None:
        self._busy = False
        log.warning("could not measure the free disk space: %s", exc)

    def _on_measured(self, usages: list[Usage]) -> None:
        self._busy = False
        for usage in self.alarm.update(usages):
            body = self.tr(
                "%1 free on the disk of %2. Tasks that write there fail when it is full."
            )
            body = body.replace("%1", file_size(usage.free), 1).replace("%2", usage.path, 1)
            self.notifier.notify(self.tr("The disk is nearly full"), body, urgent=True)
        self.measured.emit(usages)
