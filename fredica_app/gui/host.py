"""The application on a thread of its own, and the one way the GUI calls it.

:class:`AppHost` opens the data directory (``fredica_app.services.Fredica``) on a thread that
runs an asyncio loop, and there:

- runs an engine on it, start-up recovery included — or, when a ``fredica worker`` (or another
  window) already runs one, *attaches*: no engine here, and every action goes through the
  database, which that engine reads within half a second (``Control``). While attached it
  looks every few seconds whether that engine has gone, and then starts its own;
- runs what the GUI asks of the application: :meth:`AppHost.call` takes a coroutine function
  of the application and hands its result (or its error) back on the GUI thread, through a
  queued signal. The GUI thread never waits on the engine or on SQLite;
- forwards the engine's events (``workers.events``) as the :attr:`AppHost.engine_event`
  signal, on the GUI thread;
- watches the watch folders of the settings (``fredica_app.watching``) while the application
  is open, engine or attached (two watchers of one folder submit a file once), and starts
  them anew when the settings name other folders; their reports are the
  :attr:`AppHost.watch_report` signal.

:meth:`AppHost.shutdown` stops the engine gracefully (running tasks checkpoint; what is left is
resumed at the next start) and closes the application; :attr:`AppHost.stopped` says when.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QObject, QTimer, Signal

from fredica_app.errors import DatabaseLocked, FredicaError
from workers.records import RecoveryReport

if TYPE_CHECKING:
    from fredica_app.services import Fredica
    from workers.engine import WorkerEngine

log = logging.getLogger(__name__)

T = TypeVar("T")

#: While attached, seconds between two looks at whether the other engine has gone.
ATTACH_RETRY = 3.0
#: Seconds between two looks at whether the settings name other watch folders.
WATCH_SETTINGS_POLL = 1.0


def _open(data_dir: Path | str | None) -> Fredica:
    """Open the application on the host's thread. Its modules (SQLAlchemy, pydantic, the
    engine: about a second) are imported there, while the window shows itself — not before
    it."""
    from fredica_app.services import Fredica

    return Fredica.open(data_dir)


class Mode(enum.Enum):
    """Who runs the queue while the window is open."""

    #: Opening the data directory; nothing runs yet.
    STARTING = "starting"
    #: An engine of this process runs it.
    ENGINE = "engine"
    #: Another process's engine runs it; this one views it and controls it through the
    #: database.
    ATTACHED = "attached"
    #: Stopped (after :meth:`AppHost.shutdown`), or failed to start.
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class HostState:
    """What the status bar and the restart banner need to know about the application."""

    mode: Mode
    data_dir: Path
    #: What start-up recovery found and did (None: attached, or no engine yet).
    recovery: RecoveryReport | None = None
    #: The settings file could not be used as it is (the defaults are in force): why.
    settings_problem: str | None = None
    #: Attached: who holds the data directory (the lock's message).
    attached_to: str | None = None


class AppHost(QObject):
    """Fredica on its own thread (see the module's docstring)."""

    #: A :class:`HostState`, each time the mode changes (first when the application is open).
    state_changed = Signal(object)
    #: A ``workers.events.Event`` of the engine of this process.
    engine_event = Signal(object)
    #: The application could not be opened: the message to show.
    failed = Signal(str)
    #: The engine has stopped and the application is closed.
    stopped = Signal()
    #: A ``fredica_app.watching.WatchReport`` of the watch folders.
    watch_report = Signal(object)
    # (callback, value): delivered queued, on the thread this object lives in.
    _deliver = Signal(object, object)

    def __init__(
        self,
        data_dir: Path | str | None = None,
        *,
        opener: Callable[[Path | str | None], Fredica] | None = None,
        run_engine: bool = True,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._data_dir = data_dir
        self._opener = opener or _open
        self._run_engine = run_engine
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._early_lock = threading.Lock()
        self._early: list[tuple[Callable[[Fredica], Awaitable[Any]], Future[Any]]] = []
        self._closed = False
        self._stop: asyncio.Event | None = None
        self.app: Fredica | None = None
        self.state = HostState(Mode.STARTING, Path(str(data_dir or "")))
        self._deliver.connect(self._on_deliver)

    # --- life --------------------------------------------------------------------------------

    def start(self) -> None:
        """Open the application on the host's thread (:attr:`state_changed` says when)."""
        if self._thread is not None:
            raise RuntimeError("the host has already started")
        self._thread = threading.Thread(target=self._main, name="fredica-app", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        """Stop the engine gracefully and close the application; :attr:`stopped` follows.
        Returns at once."""
        if self._thread is None:  # never started: stopped now, said once this call returns
            self._ended()
            QTimer.singleShot(0, self.stopped.emit)
            return
        loop, stop = self._loop, self._stop
        if loop is None or stop is None:
            self._ready.wait(5)
            loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # its loop has already closed
                loop.call_soon_threadsafe(stop.set)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the host's thread to end (after :meth:`shutdown`); whether it has."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def engine(self) -> WorkerEngine | None:
        """The engine of this process, None when attached (read it on the host's loop)."""
        return self.app.running_engine if self.app is not None else None

    # --- calls -------------------------------------------------------------------------------

    def call(
        self,
        work: Callable[[Fredica], Awaitable[T]],
        on_done: Callable[[T], Any] | None = None,
        on_error: Callable[[Exception], Any] | None = None,
    ) -> Future[T]:
        """Run ``work(app)`` on the host's loop; ``on_done(result)`` or ``on_error(exc)`` is
        then called on the GUI thread. Returns the future (a test may wait on it; the GUI
        must not). Errors with no ``on_error`` are logged. Called before the application is
        open, the call waits (off the GUI thread) until it is; after it has closed, it fails
        with ``RuntimeError``."""

        def done(f: Future[T]) -> None:
            if f.cancelled():
                return
            exc = f.exception()
            if exc is None:
                if on_done is not None:
                    self._deliver.emit(on_done, f.result())
            elif on_error is not None and isinstance(exc, Exception):
                self._deliver.emit(on_error, exc)
            else:
                log.error("a call from the window failed", exc_info=exc)

        future: Future[T] = Future()
        future.add_done_callback(done)
        with self._early_lock:
            held = self._loop is None and not self._closed
            if held:  # not open yet: sent when it is (the GUI thread never waits here)
                self._early.append((work, future))
        if not held:
            # Outside the lock: a call that fails at once answers at once, on this thread,
            # and its callback may well call again.
            self._send(work, future)

        return future

    def _send(self, work: Callable[[Fredica], Awaitable[Any]], future: Future[Any]) -> None:
        """Run ``work`` on the loop, its outcome into ``future``."""
        loop, app = self._loop, self.app
        if loop is None or app is None or self._closed:
            future.set_exception(RuntimeError("the application is not open"))
            return

        async def run() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(await work(app))
                except Exception as exc:
                    future.set_exception(exc)

        try:
            asyncio.run_coroutine_threadsafe(run(), loop)
        except RuntimeError as exc:  # its loop has closed meanwhile
            future.set_exception(RuntimeError(f"the application is not open ({exc})"))

    def _open_for_calls(self, opened: bool) -> None:
        """The application is open (or will never be): send the calls held until now."""
        with self._early_lock:
            self._closed = not opened
            early, self._early = self._early, []
        for work, future in early:
            self._send(work, future)

    def _on_deliver(self, callback: Callable[[Any], Any], value: Any) -> None:
        callback(value)

    # --- the host's thread -------------------------------------------------------------------

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        finally:
            self._ended()
            self.stopped.emit()

    def _ended(self) -> None:
        """Stopped, or never to start: nobody waits for it to open, calls fail at once."""
        self._ready.set()
        self._open_for_calls(False)
        self._set_state(Mode.STOPPED)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            app = self.app = await asyncio.to_thread(self._opener, self._data_dir)
        except Exception as exc:
            log.exception("opening the data directory failed")
            self._ready.set()
            self._open_for_calls(False)
            self.failed.emit(str(exc))
            return
        self.state = HostState(
            Mode.STARTING, app.paths.data_dir, settings_problem=app.settings_problem
        )
        self._ready.set()
        self._open_for_calls(True)
        watching = asyncio.create_task(self._watch_folders(app), name="fredica-watch-folders")
        try:
            while not self._stop.is_set():
                if not self._run_engine:
                    self._set_state(Mode.ATTACHED)
                    await self._stop.wait()
                    break
                try:
                    await self._run_with_engine(app)
                except DatabaseLocked as exc:  # a worker runs on it: view it from here
                    self._set_state(Mode.ATTACHED, attached_to=str(exc))
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(ATTACH_RETRY):
                            await self._stop.wait()
                    while not self._stop.is_set() and app.lock.is_held_elsewhere():
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(ATTACH_RETRY):
                                await self._stop.wait()
                except Exception as exc:  # the database failed under the engine
                    log.exception("the engine stopped")
                    self.failed.emit(f"the engine stopped: {exc}")
                    break
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
            with self._early_lock:
                self._closed = True  # calls from now on fail at once
            await app.close()

    async def _watch_folders(self, app: Fredica) -> None:
        """Run a watcher of the settings' watch folders; a new one when they change (the
        settings page puts a saved change in ``app.settings``)."""
        from fredica_app.watching import FolderWatcher, WatchReport

        watcher: FolderWatcher | None = None
        running: asyncio.Task[None] | None = None
        current: tuple[object, ...] | None = None
        try:
            while True:
                wanted = (tuple(app.settings.watch_folders), app.settings.watch_settle_seconds)
                if watcher is not None and running is not None and running.done():
                    # The watcher starts itself again after an error (and says so); it ends
                    # only when cancelled: not started again until the settings change.
                    await _stopped(watcher)
                    watcher = running = None
                if wanted != current:
                    current = wanted
                    if watcher is not None:
                        await _stopped(watcher)
                        watcher = None
                    if app.settings.watch_folders:
                        try:
                            watcher = FolderWatcher(
                                app,
                                list(app.settings.watch_folders),
                                app.settings.watch_settle_seconds,
                                on_report=self.watch_report.emit,
                            )
                        except FredicaError as exc:  # a template that cannot be used
                            folder = app.settings.watch_folders[0].folder
                            self.watch_report.emit(WatchReport("problem", folder, str(exc)))
                        else:
                            running = watcher.start()
                await asyncio.sleep(WATCH_SETTINGS_POLL)
        finally:
            if watcher is not None:
                await asyncio.shield(_stopped(watcher))

    async def _run_with_engine(self, app: Fredica) -> None:
        assert self._stop is not None
        async with app.engine_session() as engine:
            engine.bus.subscribe(self.engine_event.emit)
            self._set_state(Mode.ENGINE, recovery=engine.recovery)
            runner = asyncio.create_task(engine.run(), name="fredica-engine")
            stop = asyncio.create_task(self._stop.wait())
            await asyncio.wait({runner, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            await engine.stop()
            await runner
        # A stopped engine (the window closing) ends the loop; one that failed under us
        # (StoreUnavailable) raised from ``runner`` above.
        self._stop.set()

    def _set_state(self, mode: Mode, **fields: Any) -> None:
        old = self.state
        self.state = HostState(
            mode,
            old.data_dir,
            settings_problem=old.settings_problem,
            **{"recovery": None, "attached_to": None, **fields},
        )
        self.state_changed.emit(self.state)


async def _stopped(watcher: Any) -> None:
    """Stop a folder watcher; an error it had ended with is logged, not raised."""
    try:
        await watcher.stop()
    except Exception:
        log.exception("the watch folders stopped")
