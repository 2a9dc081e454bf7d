"""Starting the desktop app from the command line: ``fredica``, ``fredica gui [ITEMS…]
[--minimized]`` and ``fredica FILE_OR_URL…`` (what a file manager's "Open with Fredica" runs).

:func:`run` first looks for a Fredica already running on the data directory
(:mod:`.single`): when one answers, the items go to it, it comes to the front, and this
process exits 0 without a window or an engine. Otherwise this process is the instance: it
listens for later starts, opens the window (:class:`~fredica_app.gui.app.GuiApp`) and imports
the items once the data directory is open (the library cannot import before).

``--minimized`` (what a start at login runs) keeps the window hidden when a tray icon is
shown, and minimised otherwise; handed over to a running instance, it does not bring that
one to the front.

SIGTERM and SIGINT (a logout, ``kill``, Ctrl-C in the terminal that started it) stop the
engine gracefully, as quitting does, without a question: running tasks checkpoint and resume
at the next start. A second signal quits at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from PySide6.QtCore import QEvent, QObject, QSocketNotifier, QTimer
from PySide6.QtGui import QFileOpenEvent
from PySide6.QtWidgets import QApplication, QWidget

from fredica_app.gui import single
from fredica_app.gui.app import GuiApp, make_qapplication
from fredica_app.gui.host import HostState, Mode
from fredica_app.paths import resolve_paths

log = logging.getLogger(__name__)

_OPEN = (Mode.ENGINE, Mode.ATTACHED)


def run(data_dir: Path | str | None, items: Sequence[str] = (), *, minimized: bool = False) -> int:
    """Hand ``items`` to the Fredica running on ``data_dir``, or open the window with them;
    the exit status. Relative paths are taken from the working directory."""
    paths = resolve_paths(data_dir).ensure()
    prepared = single.prepare_items(items, Path.cwd())
    name = single.server_name(paths.data_dir)
    qapp: QApplication | None = None
    server: single.InstanceServer | None = None
    for _ in range(3):  # two starts at once: one listens, the other hands over to it
        if single.hand_off(name, prepared, activate=not minimized):
            log.info("handed %d item(s) over to the Fredica already running", len(prepared))
            return 0
        qapp = qapp or make_qapplication()
        server = single.InstanceServer(name)
        found = server.listen()
        if found is not single.Listen.TAKEN:
            break
        server.deleteLater()
        server = None
    assert qapp is not None
    gui = GuiApp(qapp, paths.data_dir)
    front = FrontDoor(gui, server)
    stop = SignalQuit(gui, qapp)
    probe = LaunchProbe(gui, qapp) if os.environ.get(LaunchProbe.ENV) else None
    try:
        gui.start(hidden=minimized)
        if minimized:
            front.start_hidden()
        front.open_items(prepared)
        code = qapp.exec()
    finally:
        stop.restore()
        if server is not None:
            server.close()
    gui.host.join(15)
    del probe
    return int(code)


class LaunchProbe(QObject):
    """For the launch benchmarks (``bench/launch_bundle.py``), with ``FREDICA_LAUNCH_PROBE``
    set: once the window is visible and painted, print ``painted UNIX_TIME`` on standard
    output and quit as the user would. Measures a real start of the real command — also a
    frozen bundle's, which no script can import into."""

    ENV = "FREDICA_LAUNCH_PROBE"

    def __init__(self, gui: GuiApp, qapp: QApplication) -> None:
        super().__init__(gui.window)
        self._qapp = qapp
        self._done = False
        gui.window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if not self._done and event.type() == QEvent.Type.Paint:
            window = self.parent()
            if isinstance(window, QWidget) and window.isVisible():
                self._done = True
                print(f"painted {time.time()!r}", flush=True)
                QTimer.singleShot(0, self._qapp.quit)
        return False


class FrontDoor(QObject):
    """What later starts ask of this instance: items imported into the library (once the
    data directory is open), the window brought to the front.

    On macOS, Finder's "Open With" and a drop on the Dock icon reach a running app as a
    ``FileOpen`` event rather than a new start: those files come in the same way."""

    def __init__(self, gui: GuiApp, server: single.InstanceServer | None) -> None:
        super().__init__(gui.qapp)
        self.gui = gui
        self._pending: list[str] = []
        gui.host.state_changed.connect(self._on_state)
        gui.qapp.installEventFilter(self)
        if server is not None:
            server.items_received.connect(self.open_items)
            server.activate_requested.connect(self.activate)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.FileOpen and isinstance(event, QFileOpenEvent):
            item = event.file() or event.url().toString()
            if item:
                self.open_items(single.prepare_items([item], Path.cwd()))
                self.activate()
                return True
        return False

    def open_items(self, items: list[str]) -> None:
        """Import ``items`` into the library, now or as soon as it is open."""
        self._pending += items
        self._flush()

    def _on_state(self, _state: HostState) -> None:
        self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        mode = self.gui.host.state.mode
        if mode is Mode.STOPPED:
            log.warning(
                "%d item(s) were not imported: Fredica could not open its data",
                len(self._pending),
            )
            self._pending = []
        elif mode in _OPEN:
            items, self._pending = self._pending, []
            window = self.gui.window  # read now: a change of language replaces it
            window.nav.setCurrentRow(window.LIBRARY)
            window.library.import_items(items)

    def activate(self) -> None:
        """Bring the window to the front: out of the tray or the task bar, raised, focused
        (where the window manager lets a program take the focus)."""
        self.gui.show_window()
        log.info("brought the window to the front")

    def start_hidden(self) -> None:
        """After ``gui.start(hidden=True)``: a window shown all the same (there is no tray to
        hide it in) is minimised — a window nobody can find is worse than one in the task
        bar."""
        if self.gui.window.isVisible():
            self.gui.window.showMinimized()


class SignalQuit(QObject):
    """SIGTERM and SIGINT stop the application gracefully (see the module's docstring).

    A Python signal handler runs only when the interpreter runs, and Qt's event loop may sit
    in C++ for as long as nothing happens: the signal's number is written to a socket
    (:func:`signal.set_wakeup_fd`) that Qt watches, which wakes the loop at once."""

    SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), signal.SIGINT) if s)

    def __init__(self, gui: GuiApp, qapp: QApplication) -> None:
        super().__init__(qapp)
        self.gui = gui
        self.qapp = qapp
        self._asked = False
        self._previous: dict[int, object] = {}
        self._old_fd = -1
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)
        try:
            self._old_fd = signal.set_wakeup_fd(self._writer.fileno())
        except ValueError:  # not the main thread: leave signals alone
            self._close_sockets()
            self._notifier = None
            return
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._woken)
        for signum in self.SIGNALS:
            self._previous[signum] = signal.signal(signum, self._note)

    def _note(self, signum: int, _frame: FrameType | None) -> None:
        """The Python-level handler: nothing to do (the wake-up socket carries the signal);
        it replaces the default action, which would end the process at once."""

    def _woken(self) -> None:
        with contextlib.suppress(OSError):
            received = self._reader.recv(64)
            if received:
                self.stop(received[-1])

    def stop(self, signum: int) -> None:
        """Stop the engine gracefully and quit; a second time, quit now."""
        if self._asked or self.gui.host.state.mode is Mode.STOPPED:
            log.info("signal %d: quitting now", signum)
            self.qapp.quit()
            return
        self._asked = True
        log.info("signal %d: stopping the engine gracefully, then quitting", signum)
        self.gui.host.stopped.connect(self.qapp.quit)
        self.gui.host.shutdown()

    def restore(self) -> None:
        """Put the signal handling back as it was (a test runs :func:`run` in-process)."""
        if self._notifier is None:
            return
        self._notifier.setEnabled(False)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        signal.set_wakeup_fd(self._old_fd)
        self._close_sockets()
        self._notifier = None

    def _close_sockets(self) -> None:
        self._reader.close()
        self._writer.close()
