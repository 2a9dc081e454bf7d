"""The application for one data directory: its parts (database, stores, settings, the endpoints
server), the engine that runs on it, and the queue's pause flag.

Nothing here speaks SQL (the stores do) or Qt (the GUI does). Submitting work is in
:mod:`.submission` (inherited), controlling it in :mod:`.control` (:attr:`Fredica.control`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Collection, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fredica_app import jobs
from fredica_app.database import open_database, open_shared_database
from fredica_app.endpoints import EndpointsProcess
from fredica_app.library.store import LibraryStore
from fredica_app.paths import ENV_DB_URL, AppPaths, home_id, resolve_paths
from fredica_app.services.control import Control
from fredica_app.services.submission import Submission
from fredica_app.settings import Settings, load_settings
from fredica_app.version import fredica_version
from workers.db import redact_url
from workers.engine import WorkerEngine
from workers.events import Event, TaskChanged
from workers.records import RestartLogEntry, TaskRecord, WorkerRecord
from workers.retention import RetentionPolicy
from workers.running import RESOURCE_NAMES, default_slots
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry

if TYPE_CHECKING:
    from fredica_app.desktop.awake import AwakeWhileBusy, KeepAwake
    from fredica_app.lock import DataDirLock
    from workers.executors.remote import Router

log = logging.getLogger(__name__)


def database_url(given: str | None, settings: Settings) -> str | None:
    """The shared queue's URL, if one is chosen: ``--db-url``, then ``$FREDICA_DB_URL``, then
    the settings' ``database_url``; None: the data directory's own SQLite file."""
    url = given or os.environ.get(ENV_DB_URL) or settings.database_url
    return url or None


#: The task types whose result says what the material is: PROBE's whole result, the others'
#: ``probe`` (the jobs that probe their input anyway, so that a template needs no PROBE task).
PROBING = frozenset({"PROBE", "TRANSCODE_MP4", "BURN_SUBTITLES", "EXTRACT_AUDIO"})
#: Seconds the materials' fills from completed jobs wait, to be written together.
FILL_EVERY = 0.25


@dataclass
class Fredica(Submission):
    """The application's parts for one data directory."""

    paths: AppPaths
    settings: Settings
    settings_problem: str | None
    store: TaskStore
    registry: TaskTypeRegistry
    library: LibraryStore
    endpoints: EndpointsProcess = field(default_factory=EndpointsProcess)
    _background: set[asyncio.Future[Any]] = field(default_factory=set)
    #: Materials' fills from completed jobs' probes, waiting to be written (by material id).
    _fills: dict[str, dict[str, Any]] = field(default_factory=dict)
    _closing: asyncio.Event = field(default_factory=asyncio.Event)
    #: The engine this process runs on the data directory (set by :meth:`engine_session`
    #: while it runs), None otherwise: :class:`Control` tells it directly when there is one.
    running_engine: WorkerEngine | None = field(default=None, init=False)
    #: What keeps the computer awake while the engine runs tasks (``settings.keep_awake``);
    #: None: the platform's (:func:`~fredica_app.desktop.awake.keep_awake_for_platform`).
    awake_backend: KeepAwake | None = field(default=None, init=False)
    #: The shared queue's database (PostgreSQL), as it may be shown (no password); None:
    #: the data directory's own SQLite file.
    database_shown: str | None = field(default=None, init=False)
    #: The settings' endpoint hosts, as the engine routes tasks to them (None: none set).
    router: Router | None = field(default=None, init=False)

    @classmethod
    def open(
        cls,
        data_dir: Path | str | None = None,
        *,
        thorough: bool = True,
        endpoints: EndpointsProcess | None = None,
        db_url: str | None = None,
    ) -> Fredica:
        """Open the data directory. ``thorough``: check the whole database file's integrity
        (when an engine will run on it); without it, only what is cheap is checked.
        ``endpoints``: the server to use, started ahead (:meth:`EndpointsProcess.prestart`);
        what its jobs may do is set here, from the settings."""
        paths = resolve_paths(data_dir).ensure()
        endpoints = endpoints or EndpointsProcess()
        loaded = load_settings(paths.settings_file)
        url = database_url(db_url, loaded.settings)
        if url is not None:
            engine = open_shared_database(url)
        else:
            engine = open_database(
                paths.database, synchronous=loaded.settings.sqlite_synchronous, thorough=thorough
            )
        library_dir = loaded.settings.library_dir or paths.default_library_dir
        models_dir = loaded.settings.models_dir or paths.default_models_dir
        key_env = loaded.settings.llm_api_key_env
        app = cls(
            paths,
            loaded.settings,
            loaded.problem,
            TaskStore(engine, lease_seconds=loaded.settings.lease_seconds),
            jobs.registry(),
            LibraryStore(engine),
            # The server runs only this ffmpeg and lets ANALYZE read only this variable:
            # whoever holds its token cannot choose either.
            endpoints.configure(
                write_roots=[library_dir, models_dir, paths.posters_dir],
                ffmpeg=loaded.settings.ffmpeg_path,
                api_key_envs=[key_env] if key_env else [],
                log_file=paths.endpoints_log_file,
            ),
        )
        if url is not None:
            app.database_shown = redact_url(url)
        # Runs say the home they were submitted from: on a shared queue, its window tells them.
        app.store.home_id = home_id(paths.data_dir)
        return app

    async def close(self) -> None:
        self._closing.set()  # what waits to be written goes now
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        # The server's exit and the database's (its last checkpoint) side by side.
        await asyncio.gather(self.endpoints.stop(), self.store.close())

    @property
    def control(self) -> Control:
        """Pause, resume, cancel, retry a task or a run; pause or resume the queue — through
        the engine of this process when one runs, else through the database."""
        return Control(self)

    def _on_event(self, event: Event) -> None:
        """Fill a material when a task that probed it completes — PROBE, or a job that
        probes its input and says what it found (the app reacts to the engine's events;
        the queue knows nothing of materials)."""
        if (
            isinstance(event, TaskChanged)
            and event.kind == "completed"
            and (event.task_type is None or event.task_type in PROBING)  # None: read it back
        ):
            if event.result is not None:  # said with the event: nothing to read back
                self._fill_from(event.task_type, event.material_id, event.result)
            else:
                self._in_background(self._after_completion(event.task_id))

    def _in_background(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` beside the rest; :meth:`close` waits for it."""
        job = asyncio.ensure_future(work)
        self._background.add(job)
        job.add_done_callback(self._background.discard)

    async def _after_completion(self, task_id: str) -> None:
        task = await self.store.get_task(task_id)
        if task.result is not None:
            self._fill_from(task.type, task.material_id, task.result)

    def _fill_from(
        self, task_type: str | None, material_id: str | None, result: Mapping[str, Any]
    ) -> None:
        if task_type not in PROBING or not material_id or not result:
            return
        found = result if task_type == "PROBE" else result.get("probe")
        if isinstance(found, dict) and found:
            first = not self._fills
            self._fills[material_id] = found
            if first:
                self._in_background(self._write_fills())

    async def _write_fills(self) -> None:
        """Write the materials' fills that came within :data:`FILL_EVERY` seconds in one
        transaction (a folder of short files completes a job every few milliseconds; a
        commit each cost the app as much as its engine's turn). :meth:`close` writes them at
        once."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FILL_EVERY):
                await self._closing.wait()
        fills, self._fills = self._fills, {}
        await asyncio.to_thread(self.library.update_from_probes, fills)

    # --- running -------------------------------------------------------------------------

    def make_engine(self, *, max_workers: int | None = None) -> WorkerEngine:
        # Here, as the executors (fredica_app.jobs): a command that runs no engine (`add`)
        # imports no websocket client.
        from fredica_app import endpoint_hosts

        self.router = endpoint_hosts.router(self.settings.endpoint_hosts)
        engine = WorkerEngine(
            self.store,
            jobs.executors(self.endpoints.address, self._job_values, self.router),
            max_workers=max_workers or self.settings.max_workers,
            slots=self.settings.slots,
            registry=self.registry,
            max_interruptions=self.settings.max_interruptions,
            hold_interrupted=self.settings.on_restart == "hold",
            retention=self.retention,
            home_id=home_id(self.paths.data_dir),
            build=fredica_version(),
            heartbeat_interval=self.settings.heartbeat_seconds,
        )
        engine.bus.subscribe(self._on_event)
        return engine

    def _job_values(self) -> dict[str, Any]:
        """The settings' values for jobs as they are now (a saved change counts)."""
        return jobs.app_values(self.settings, self.models_dir)

    @property
    def retention(self) -> RetentionPolicy:
        """What the history keeps (the settings' ``keep_runs_days``, ``keep_events_days``)."""
        return RetentionPolicy.from_days(
            self.settings.keep_runs_days, self.settings.keep_events_days
        )

    @property
    def lock(self) -> DataDirLock:
        # Imported here, as the keep-awake backends below: commands that only submit
        # (``add``) take no lock and keep nothing awake.
        from fredica_app.lock import DataDirLock

        return DataDirLock(self.paths.engine_lock)

    def start_endpoints_early(self, task_types: Collection[str]) -> None:
        """Start the endpoints server now, in the background, with a child ready for each
        endpoint that tasks of ``task_types`` run on: for a command about to submit work and
        run it (``process``), so that the server and its first children start while the
        items are imported and submitted, not after. Nothing is started when another
        process's engine will run the work. A server started ahead
        (:meth:`EndpointsProcess.prestart`) gets its options now. :meth:`close` stops the
        server."""
        if self.endpoints.serving or self.lock.is_held_elsewhere():
            return
        self.endpoints.warm = jobs.endpoints_of(jobs.executors(self.endpoints.address), task_types)
        job = asyncio.create_task(_start_server(self.endpoints))
        self._background.add(job)
        job.add_done_callback(self._background.discard)

    @contextlib.asynccontextmanager
    async def engine_session(
        self, *, max_workers: int | None = None, start_endpoints: bool = False
    ) -> AsyncIterator[WorkerEngine]:
        """Take the data directory's lock, start an engine (recovery included) and stop it
        gracefully at the end. Raises :class:`DatabaseLocked` when another engine runs.
        Meanwhile it is :attr:`running_engine`, the one :attr:`control` tells directly, and
        the computer is kept awake while tasks run (``settings.keep_awake``).

        ``start_endpoints``: start the endpoints server now, beside the engine's start,
        rather than when the first job asks for it — for a command that is about to run jobs
        (``process``, ``worker``): the server's start (an interpreter and its imports, about
        half a second) is then not in front of the first job. A server that fails to start
        here is started again, and its failure told, by the first job that needs it."""
        lock = self.lock.acquire()
        awake: AwakeWhileBusy | None = None
        early: asyncio.Task[object] | None = None
        try:
            engine = self.make_engine(max_workers=max_workers)
            if start_endpoints:
                # The children of the endpoints the queued work will use start with the
                # server: the first PROBE and TRANSCODE_MP4 of a run need not start theirs.
                queued = await self.store.queued_types()
                self.endpoints.warm = jobs.endpoints_of(engine.executors.values(), queued)
                early = asyncio.create_task(self.endpoints.address())
            if self.settings.keep_awake:
                from fredica_app.desktop.awake import AwakeWhileBusy, keep_awake_for_platform

                backend = self.awake_backend or keep_awake_for_platform()
                awake = AwakeWhileBusy(engine.bus, backend)
            await engine.start()
            if self.router is not None:  # each host's shared folders, checked now
                self._in_background(self.router.check_all())
            watcher = asyncio.create_task(self._watch_queue_flag(engine))
            self.running_engine = engine
            try:
                yield engine
            finally:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
                try:
                    await engine.stop()
                finally:
                    self.running_engine = None
                self.endpoints.stop_soon()  # the app's close waits for it
        finally:
            if early is not None:
                await _settled(early)
                self.endpoints.stop_soon()  # started after the stop above, or left alone
            if awake is not None:
                await awake.close()
            lock.release()

    # --- pausing the queue across processes -------------------------------------------------

    @property
    def queue_flag(self) -> Path:
        return self.paths.queue_flag

    def set_queue_paused(self, paused: bool) -> None:
        """``pause-queue``: the engine on this data dir stops claiming (running work goes on)
        within half a second, and stays so across restarts until ``resume-queue``."""
        if paused:
            self.queue_flag.write_text("paused\n")
        else:
            self.queue_flag.unlink(missing_ok=True)

    async def _watch_queue_flag(self, engine: WorkerEngine, interval: float = 0.5) -> None:
        while True:
            paused = self.queue_flag.exists()
            if paused and not engine.queue_paused:
                engine.pause_queue()
            elif not paused and engine.queue_paused:
                engine.resume_queue()
            await asyncio.sleep(interval)

    async def waiting_reasons(self, tasks: list[TaskRecord]) -> dict[str, str]:
        """For ready tasks that wait only for a busy resource class, say so ("waiting for
        GPU"): derived from what runs now and the configured slots, never stored."""
        ready = [
            t
            for t in tasks
            if t.status.value == "pending"
            and t.unmet_deps == 0
            and not t.is_paused
            and (t.next_run_at is None or t.next_run_at <= self.store.now())
        ]
        if not ready:
            return {}
        busy = await self.store.busy_resources()
        slots = {**default_slots(), **self.settings.slots}
        total = sum(busy.values())
        reasons = {}
        for t in ready:
            if busy.get(t.resource, 0) >= slots.get(t.resource, 1):
                reasons[t.id] = f"waiting for {RESOURCE_NAMES.get(t.resource, t.resource)}"
            elif total >= self.settings.max_workers:
                reasons[t.id] = "waiting for a free worker"
        return reasons

    # --- restart log -------------------------------------------------------------------------

    @property
    def review_home(self) -> str | None:
        """Whose interrupted work this app reviews: on a shared queue, this home's (each host
        reviews what it ran itself); None: all of it."""
        return home_id(self.paths.data_dir) if self.store.shared else None

    async def restart_log(self) -> list[RestartLogEntry]:
        """What recovery found; on a shared queue, what this host ran itself."""
        return await self.store.restart_log(home=self.review_home)

    async def hosts(self, *, include_stopped: bool = False) -> list[WorkerRecord]:
        """The engines on the queue (several hosts on a shared queue), newest first."""
        return await self.store.list_workers(include_stopped=include_stopped)

    async def drain(self, target: str, *, undo: bool = False) -> list[str]:
        """Ask an engine (a worker id, or a host name for all of its engines) to finish its
        work and claim no more (``undo``: to claim again)."""
        return await self.store.drain(target, undo=undo)


async def _start_server(endpoints: EndpointsProcess) -> None:
    try:
        await endpoints.address()
    except OSError as exc:  # told by the first job that needs the server
        log.info("the endpoints server did not start ahead: %s", exc)


async def _settled(job: asyncio.Task[object]) -> None:
    """Wait for ``job`` whatever its end; what went wrong is the next user's to report."""
    if not job.done():
        job.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await job
    if not job.cancelled() and job.exception() is not None:
        log.info("the endpoints server did not start ahead: %s", job.exception())
