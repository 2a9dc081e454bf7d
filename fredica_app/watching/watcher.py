"""Watch folders: new or changed media files, once settled, are added to the library and
submitted to their folder's template — once.

How a file gets in:

1. **Seen.** The system's file events (watchfiles: inotify, FSEvents, ReadDirectoryChangesW)
   say at once that something changed; a full rescan every ``rescan`` seconds is the fallback
   for where events do not arrive (network drives, a full inotify table) and catches what was
   there before the watcher started. Files still waiting to settle are looked at again every
   fraction of a second (:attr:`FolderWatcher.poll`).
2. **Settled.** Its size and mtime stayed the same for ``settle`` seconds
   (:mod:`.settle`, pure): a file still being written or copied is left alone until then.
3. **Taken in, once.** Its content fingerprint (size and the hash of its first and last
   blocks, no mtime) is taken in for the folder and template with ``INSERT … ON CONFLICT DO
   NOTHING`` (:mod:`fredica_app.library.watched`): a restart, a rename, a touch of the same
   bytes, or another watcher on the same data directory find the row and submit nothing.
4. **Submitted** through the services, as ``fredica add`` does: imported into the library,
   then the folder's template for the material. A row taken in whose submission never
   happened (the process stopped in between) is taken over and submitted by the next watcher
   that starts or rescans, once it is :data:`STALE_AFTER` seconds old (younger, another live
   watcher may be submitting it right now).

Fredica's own folders (the library, where outputs are written; the data directory with its
models, cache and logs) are never looked into, even inside a watch folder: it would submit its
own outputs, for ever. A watch folder that does not exist or cannot be read is reported and
looked at again at every rescan; a file that vanishes or cannot be imported is reported; none
of them stops the watcher. Should the watcher stop on an error all the same, it is started
again, and says so (:meth:`FolderWatcher.supervised`). A file whose name is not UTF-8 is taken
in like any other (its path is stored losslessly, its title shown with U+FFFD).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from watchfiles import Change, awatch

from fredica_app.database import DATABASE_ERRORS
from fredica_app.errors import FredicaError, TemplateError
from fredica_app.library.fingerprint import content_fingerprint
from fredica_app.library.watched import WatchedFileRecord, WatchedFiles
from fredica_app.settings import WatchFolder
from fredica_app.templates import BUILTIN, get_template
from fredica_app.watching.settle import Observation, SettleTracker, is_candidate, is_hidden
from python_endpoints.text import clean_text

if TYPE_CHECKING:
    from fredica_app.services.app import Fredica

log = logging.getLogger(__name__)

#: Seconds after which a row taken in but never submitted is taken over by another watcher.
STALE_AFTER = 60.0
#: A watcher that stopped on an error starts again after this pause, doubled while it keeps
#: failing within :data:`RESTART_CALM` seconds of its start, up to :data:`RESTART_LONGEST`.
RESTART_FIRST = 1.0
RESTART_CALM = 60.0
RESTART_LONGEST = 60.0

#: What taking a file in or submitting it may raise without being a bug: the application's
#: errors (a file that cannot be imported, the database unavailable) and the database's own.
_STORE_ERRORS: tuple[type[Exception], ...] = (FredicaError, *DATABASE_ERRORS)
#: The same, and a file that went or cannot be read while it is imported.
_IMPORT_ERRORS: tuple[type[Exception], ...] = (OSError, *_STORE_ERRORS)

ReportKind = Literal["submitted", "skipped", "problem"]


@dataclass(frozen=True, slots=True)
class WatchReport:
    """What a watcher did with a file, or what is wrong with a folder: a line for the CLI,
    an entry for the GUI.

    ``submitted``: the file was added to the library and its folder's template submitted
    (``run_id``). ``skipped``: nothing was submitted, and nothing needs doing (the same bytes
    were submitted before, the file went away). ``problem``: something the user may want to
    fix (a folder that is missing or unreadable, a file that could not be read or imported);
    it is tried again at the next rescan, and reported again only if what goes wrong changes.
    """

    kind: ReportKind
    #: The file, or the watch folder for a problem with the folder itself.
    path: Path
    #: What happened, for a person: a sentence without the path.
    message: str
    #: ``submitted``: the run made for the file.
    run_id: str | None = None
    #: The watch folder (as in its settings) and the template it submits to.
    folder: Path | None = None
    template: str | None = None


def check_template(name: str, params: Mapping[str, str] | None = None) -> None:
    """:class:`TemplateError` unless ``name`` is a template a watch folder can submit a file
    to (it exists, and runs on a local media file) and ``params`` are parameters it takes."""
    template = get_template(name)
    template.bind(params or {})
    if template.source != "file":
        takers = ", ".join(n for n, t in BUILTIN.items() if t.source == "file")
        raise TemplateError(
            f"template {name!r} takes {template.takes}: a watch folder submits each new media "
            f"file to a template that takes a file ({takers})"
        )


class _FolderUnusable(Exception):
    """A watch folder that cannot be scanned: the message says why."""


@dataclass
class _Scan:
    root: Path
    found: list[Observation]
    unreadable: list[Path]


@dataclass(eq=False)
class _Folder:
    """One watch folder and what the watcher keeps of it."""

    config: WatchFolder
    tracker: SettleTracker
    #: Where it really is (symbolic links resolved), from its last scan.
    root: Path | None = None
    #: The task reading its file events, and the event that stops it.
    events: asyncio.Task[None] | None = None
    events_stop: asyncio.Event | None = None
    #: Paths the file events named since the last look.
    dirty: set[Path] = field(default_factory=set)
    #: The folder's problem last reported (reported again only when it changes).
    problem: str | None = None
    #: Files to try again at the next rescan (what could not be done may work then).
    retry: set[Path] = field(default_factory=set)

    @property
    def key(self) -> str:
        """The folder as ``watched_file`` records it: as in its settings."""
        return str(self.config.folder)


@dataclass(frozen=True, slots=True)
class _Submitted:
    """A run found already submitted for a row taken over (as ``submit_for_material`` says
    of one it makes)."""

    run_id: str


class FolderWatcher:
    """Watches ``folders`` and submits each new media file once it has settled for ``settle``
    seconds (see the module's docstring).

    ``run()`` watches until it is cancelled (or use :meth:`start` and :meth:`stop`);
    ``scan_once()`` looks at every folder once (its reports are returned as well). Each
    report also goes to ``on_report``, called on the event loop's thread. An unknown
    template, or one that does not take a media file, is a :class:`TemplateError` here.
    """

    def __init__(
        self,
        app: Fredica,
        folders: list[WatchFolder],
        settle: float,
        *,
        rescan: float = 30.0,
        on_report: Callable[[WatchReport], None] | None = None,
    ) -> None:
        if settle < 0:
            raise FredicaError(f"the settle time must be 0 or more seconds, not {settle}")
        unique: dict[tuple[Path, str], WatchFolder] = {}
        for folder in folders:
            check_template(folder.template, folder.params)
            unique.setdefault((folder.folder, folder.template), folder)
        self.app = app
        self.settle = settle
        self.rescan = rescan
        #: Seconds between two looks at the files still waiting to settle.
        self.poll = min(max(settle / 4, 0.05), 1.0)
        self.on_report = on_report
        self._folders = [_Folder(f, SettleTracker(settle)) for f in unique.values()]
        self._watched = WatchedFiles(app.store.engine)
        self._own = _own_folders(app)
        self._problems: dict[Path, str] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: How many times it started again after an error.
        self.restarts = 0

    @property
    def folders(self) -> list[WatchFolder]:
        return [f.config for f in self._folders]

    # --- running ---------------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """Run :meth:`run` as a task of the running loop, started again after any error it
        ends with (:meth:`supervised`); :meth:`stop` ends it."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self.supervised())
        return self._task

    async def supervised(self) -> None:
        """:meth:`run`, never left dead: an error it ends with (a bug, a file system that
        says what nothing expected) is logged with its traceback, reported as a problem of
        each folder ("the watcher stopped on an error …; it starts again in N s"), and the
        watcher starts again after a pause that grows while it keeps failing at once."""
        pause = RESTART_FIRST
        while True:
            started = time.monotonic()
            try:
                await self.run()
                return
            except Exception as exc:
                log.exception("the watch folders' watcher stopped on an error")
                if time.monotonic() - started >= RESTART_CALM:
                    pause = RESTART_FIRST
                self.restarts += 1
                said = f"{type(exc).__name__}: {clean_text(str(exc))}"
                for folder in self._folders:
                    message = (
                        f"the watcher stopped on an error ({said}); it starts again in {pause:g} s"
                    )
                    self._report([], "problem", folder.config.folder, message, folder)
                    folder.problem = None  # its own problems are said again once it is back
                await asyncio.sleep(pause)
                pause = min(pause * 2, RESTART_LONGEST)

    async def stop(self) -> None:
        """End what :meth:`start` started, and wait for it (file-event threads included)."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def run(self) -> None:
        """Watch until cancelled: a full scan now and every ``rescan`` seconds, the file
        events in between, and a look every :attr:`poll` seconds at what has not settled."""
        try:
            next_scan = 0.0
            while True:
                if time.monotonic() >= next_scan:
                    await self._scan_all(events=True)
                    next_scan = time.monotonic() + self.rescan
                else:
                    await self._look_again()
                delay = next_scan - time.monotonic()
                if any(f.tracker.unsettled() for f in self._folders):
                    delay = min(delay, self.poll)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(delay, 0.0)):
                        await self._wake.wait()
        finally:
            await asyncio.shield(self._stop_events(self._folders))

    async def scan_once(self) -> list[WatchReport]:
        """Look at every folder once: submit what a stopped watcher left taken in, observe
        every file, and take in the files that have settled since earlier looks (a file seen
        for the first time settles at a later look, ``settle`` seconds on). The reports of
        this look, also sent to ``on_report``."""
        return await self._scan_all(events=False)

    # --- a look at the folders -------------------------------------------------------------------

    async def _scan_all(self, *, events: bool) -> list[WatchReport]:
        reports: list[WatchReport] = []
        await self._take_over_unsubmitted(reports)
        for folder in self._folders:
            await self._scan(folder, reports, events=events)
        await self._take_settled(reports)
        return reports

    async def _scan(self, folder: _Folder, reports: list[WatchReport], *, events: bool) -> None:
        config = folder.config
        try:
            scan = await asyncio.to_thread(
                _scan_folder, config.folder, config.recursive, config.patterns, self._own
            )
        except _FolderUnusable as exc:
            await self._stop_events([folder])
            folder.tracker.sync([], time.monotonic())
            folder.root = None
            self._folder_problem(folder, str(exc), reports)
            return
        folder.tracker.sync(scan.found, time.monotonic())
        with contextlib.suppress(*_STORE_ERRORS):
            await asyncio.to_thread(
                self._watched.forget_removed,
                folder.key,
                config.template,
                {str(o.path) for o in scan.found},
            )
        for path in folder.retry:
            folder.tracker.rearm(path)
        folder.retry.clear()
        if scan.root != folder.root:
            await self._stop_events([folder])
            folder.root = scan.root
        problem = None
        if scan.unreadable:
            names = ", ".join(str(p) for p in scan.unreadable[:3])
            more = f" and {len(scan.unreadable) - 3} more" if len(scan.unreadable) > 3 else ""
            problem = (
                f"subfolders that cannot be read (permission denied) are left out: {names}{more}"
            )
        if events and (folder.events is None or folder.events.done()):
            unwatched = await self._start_events(folder, scan.root)
            if unwatched is None:
                # A file made between the scan and the watch's start has no event: one more
                # look now that the watch is set up, rather than at the next rescan.
                with contextlib.suppress(_FolderUnusable):
                    again = await asyncio.to_thread(
                        _scan_folder, config.folder, config.recursive, config.patterns, self._own
                    )
                    folder.tracker.sync(again.found, time.monotonic())
            problem = unwatched or problem
        self._folder_problem(folder, problem, reports)

    async def _look_again(self) -> None:
        """What the file events named, and what has not settled yet: looked at again."""
        self._wake.clear()
        reports: list[WatchReport] = []
        for folder in self._folders:
            dirty, folder.dirty = folder.dirty, set()
            paths = sorted(dirty | {Path(p) for p in folder.tracker.unsettled()})
            if not paths or folder.root is None:
                continue
            config = folder.config
            seen = await asyncio.to_thread(
                _look_at, folder.root, paths, config.recursive, config.patterns, self._own
            )
            now = time.monotonic()
            for path, found in seen:
                if found is None:
                    folder.tracker.forget(path)
                    with contextlib.suppress(*_STORE_ERRORS):
                        await asyncio.to_thread(
                            self._watched.forget_removed,
                            folder.key,
                            config.template,
                            gone=str(path),
                        )
                for o in found or ():
                    folder.tracker.observe(o.path, o.size, o.mtime_ns, now)
        await self._take_settled(reports)

    # --- file events -----------------------------------------------------------------------------

    async def _start_events(self, folder: _Folder, root: Path) -> str | None:
        """Start reading the folder's file events; the problem to report when they cannot be
        had (then only the rescans find new files)."""
        stop = asyncio.Event()
        own = [p for p in self._own if p.is_relative_to(root)]

        def wanted(_change: Change, path: str) -> bool:
            p = Path(path)
            return not any(p == o or p.is_relative_to(o) for o in own)

        async def read() -> None:
            try:
                async for changes in awatch(
                    root,
                    watch_filter=wanted,
                    recursive=folder.config.recursive,
                    debounce=300,
                    step=50,
                    stop_event=stop,
                    ignore_permission_denied=True,
                ):
                    folder.dirty.update(Path(p) for _, p in changes)
                    self._wake.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the folder went, or the system refuses more watches
                log.warning("file events of %s stopped: %s", root, exc)

        folder.events_stop = stop
        folder.events = asyncio.ensure_future(read())
        # A watch that cannot be set up fails at once; give it that moment to say so.
        await asyncio.sleep(0.05)
        if folder.events.done():
            return (
                "the system does not report changes in this folder (too many folders "
                f"watched?): new files are found by the rescan every {self.rescan:g} s"
            )
        return None

    async def _stop_events(self, folders: Iterable[_Folder]) -> None:
        for folder in folders:
            task, stop = folder.events, folder.events_stop
            folder.events = folder.events_stop = None
            if task is None or stop is None:
                continue
            stop.set()  # the event thread sees it within its step (50 ms) and returns
            try:
                async with asyncio.timeout(10):
                    await asyncio.shield(task)
            except TimeoutError:  # pragma: no cover - a stuck watch thread
                task.cancel()

    # --- taking files in -------------------------------------------------------------------------

    async def _take_settled(self, reports: list[WatchReport]) -> None:
        for folder in self._folders:
            for settled in folder.tracker.settled():
                path = Path(settled)
                try:
                    await self._take_in(folder, path, reports)
                except _STORE_ERRORS as exc:  # the database failed under it: try again later
                    folder.retry.add(path)
                    self._report(reports, "problem", path, f"not taken in: {exc}", folder)

    async def _take_in(self, folder: _Folder, path: Path, reports: list[WatchReport]) -> None:
        try:
            fingerprint = await asyncio.to_thread(content_fingerprint, path)
        except FileNotFoundError:
            folder.tracker.forget(path)
            self._report(reports, "skipped", path, "gone before it was taken in", folder)
            return
        except OSError as exc:
            folder.retry.add(path)
            self._report(
                reports, "problem", path, f"cannot be read ({exc.strerror or exc})", folder
            )
            return
        row = await asyncio.to_thread(
            self._watched.take_in,
            folder=folder.key,
            template=folder.config.template,
            content_fingerprint=fingerprint,
            path=str(path),
        )
        if row is not None:
            await self._submit(folder, row, reports)
            return
        message = await asyncio.to_thread(self._known, folder, fingerprint, path)
        if message is None:  # let go meanwhile (its submission failed): tried at the rescan
            folder.retry.add(path)
            message = "being taken in by another watcher"
        self._report(reports, "skipped", path, message, folder)

    def _known(self, folder: _Folder, fingerprint: str, path: Path) -> str | None:
        """What to say of a file whose bytes were taken in before (None: no longer are); a
        rename or a move within the folder is recorded. Runs on a worker thread."""
        row = self._watched.get(folder.key, folder.config.template, fingerprint)
        if row is None:
            return None
        if not row.submitted:
            return "being submitted by another watcher"
        if row.material_id is not None and self.app.library.get(row.material_id) is None:
            return (
                "its material was removed from the library: not submitted again while the file "
                "stays here (move it out of the folder and back to submit it again)"
            )
        if row.path == str(path):
            return "already submitted: not submitted again"
        if Path(row.path).exists():  # a copy: the other file is still there
            return f"the same content as {row.path}, already submitted: not submitted again"
        self._watched.moved(row.id, str(path))
        return f"already submitted as {row.path} (renamed or moved): not submitted again"

    async def _submit(
        self,
        folder: _Folder,
        row: WatchedFileRecord,
        reports: list[WatchReport],
        *,
        taken_over: bool = False,
    ) -> None:
        """Import a file taken in and submit its folder's template; its row records the run.
        When it cannot be done, the row is let go (the file is taken in again at the next
        rescan, or when it changes). ``taken_over``: a watcher that stopped took this row in;
        it may have submitted the run before it stopped, and that run is this row's, whatever
        its state now (submitting again would run the file twice once the first has ended)."""
        path = Path(row.path)
        try:
            imported = await self.app.import_items([row.path])
            material = imported.materials[0]
            earlier = await self._submitted_since(material.id, row) if taken_over else None
            run = earlier or await self.app.submit_for_material(
                material, row.template, params=folder.config.params
            )
        except _IMPORT_ERRORS as exc:
            with contextlib.suppress(*_STORE_ERRORS):
                await asyncio.to_thread(self._watched.release, row)
            if await asyncio.to_thread(path.exists):
                folder.retry.add(path)
                self._report(reports, "problem", path, f"not submitted: {exc}", folder)
            else:
                folder.tracker.forget(path)
                self._report(reports, "skipped", path, "gone before it was submitted", folder)
            return
        # Should this fail, the row stays without its run: the next watcher to start takes it
        # over, and the submission, the same template for the same material, finds this run
        # while it is active.
        await asyncio.to_thread(
            self._watched.record_submission, row.id, material_id=material.id, run_id=run.run_id
        )
        self._problems.pop(path, None)
        self._report(
            reports,
            "submitted",
            path,
            f"added to the library and submitted to {row.template}",
            folder,
            run_id=run.run_id,
        )

    async def _take_over_unsubmitted(self, reports: list[WatchReport]) -> None:
        """Submit the files a watcher took in and never submitted (it stopped in between)."""
        ours = {(f.key, f.config.template): f for f in self._folders}
        if not ours:
            return
        try:
            rows = await asyncio.to_thread(
                self._watched.unsubmitted, taken_before=time.time() - STALE_AFTER
            )
        except _STORE_ERRORS as exc:
            log.warning("could not read the files taken in but not submitted: %s", exc)
            return
        for row in rows:
            folder = ours.get((row.folder, row.template))
            if folder is None:
                continue
            path = Path(row.path)
            try:
                await self._take_over(folder, row, reports)
            except _STORE_ERRORS as exc:
                self._report(reports, "problem", path, f"not submitted: {exc}", folder)

    async def _take_over(
        self, folder: _Folder, row: WatchedFileRecord, reports: list[WatchReport]
    ) -> None:
        taken = await asyncio.to_thread(self._watched.take_over, row)
        if taken is None:  # another watcher got it first
            return
        try:
            fingerprint: str | None = await asyncio.to_thread(content_fingerprint, Path(row.path))
        except OSError:
            fingerprint = None
        if fingerprint != taken.content_fingerprint:
            # Gone, or other bytes now: what is there now is taken in as any new file.
            await asyncio.to_thread(self._watched.release, taken)
            return
        await self._submit(folder, taken, reports, taken_over=True)

    async def _submitted_since(self, material_id: str, row: WatchedFileRecord) -> _Submitted | None:
        """The run of ``row``'s template for this material made since the row was taken in
        (by the watcher that stopped before recording it), if there is one."""
        runs = await self.app.store.list_runs(None, material_id=material_id)
        # Store and wall times agree to within the store clock's adjustments: a second's slack.
        found = [
            r for r in runs if r.template == row.template and r.created_at >= row.created_at - 1
        ]
        return _Submitted(min(found, key=lambda r: r.created_at).id) if found else None

    # --- reports ---------------------------------------------------------------------------------

    def _folder_problem(
        self, folder: _Folder, problem: str | None, reports: list[WatchReport]
    ) -> None:
        """Report a folder's problem when it is new (not at every rescan while it lasts)."""
        if problem is not None and problem != folder.problem:
            self._report(reports, "problem", folder.config.folder, problem, folder)
        folder.problem = problem

    def _report(
        self,
        reports: list[WatchReport],
        kind: ReportKind,
        path: Path,
        message: str,
        folder: _Folder,
        *,
        run_id: str | None = None,
    ) -> None:
        if kind == "problem" and path != folder.config.folder:
            if self._problems.get(path) == message:
                return  # said already; tried again at each rescan, said again if it changes
            self._problems[path] = message
        report = WatchReport(
            kind, path, message, run_id, folder.config.folder, folder.config.template
        )
        reports.append(report)
        if self.on_report is not None:
            try:
                self.on_report(report)
            except Exception:
                log.exception("a watch folder report could not be delivered")


# --- the file system (run on a worker thread) ----------------------------------------------------


def _own_folders(app: Fredica) -> list[Path]:
    """Fredica's folders, never looked into: the library (outputs), the data directory (its
    models, cache, logs), the settings' folder."""
    paths = app.paths
    folders = [
        app.library_dir,
        app.models_dir,
        paths.data_dir,
        paths.config_dir,
        paths.cache_dir,
        paths.log_dir,
    ]
    return sorted({f.expanduser().resolve() for f in folders})


def _scan_folder(folder: Path, recursive: bool, patterns: list[str], own: list[Path]) -> _Scan:
    """Every candidate file of a watch folder, with its size and mtime."""
    try:
        root = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        raise _FolderUnusable(
            "the folder does not exist (or its drive is not mounted); it is looked for again "
            "at every rescan"
        ) from None
    if not root.is_dir():
        raise _FolderUnusable("not a folder; it is looked at again at every rescan")
    for o in own:
        if root == o or root.is_relative_to(o):
            raise _FolderUnusable(
                f"inside Fredica's own folder {o}, where it writes its outputs and data: "
                "watch another folder"
            )
    try:
        os.listdir(root)
    except OSError as exc:
        raise _FolderUnusable(
            f"the folder cannot be read ({exc.strerror or exc}); it is tried again at every rescan"
        ) from None
    found: list[Observation] = []
    unreadable: list[Path] = []
    _walk(root, recursive, patterns, set(own), found, unreadable)
    return _Scan(root, found, unreadable)


def _walk(
    folder: Path,
    recursive: bool,
    patterns: list[str],
    own: set[Path],
    found: list[Observation],
    unreadable: list[Path],
) -> None:
    """The candidates under ``folder``: hidden entries skipped, symlinked folders not followed
    (no loops), Fredica's own folders left out."""
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                entries = list(it)
        except FileNotFoundError:
            continue
        except OSError:
            unreadable.append(current)
            continue
        for entry in entries:
            if is_hidden(entry.name):
                continue
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if recursive and path not in own:
                        stack.append(path)
                elif entry.is_file() and is_candidate(entry.name, patterns):
                    st = entry.stat()
                    found.append(Observation(path, st.st_size, st.st_mtime_ns))
            except OSError:  # gone meanwhile, or a link to nowhere
                continue


def _look_at(
    root: Path, paths: list[Path], recursive: bool, patterns: list[str], own: list[Path]
) -> list[tuple[Path, list[Observation] | None]]:
    """For each path an event named (or a file still settling): what is there now — None
    when it is gone, the candidates under it for a folder that appeared."""
    out: list[tuple[Path, list[Observation] | None]] = []
    for path in paths:
        if not path.is_relative_to(root) or path == root:
            continue
        parts = path.relative_to(root).parts
        if any(is_hidden(p) for p in parts) or (not recursive and len(parts) > 1):
            continue
        if any(path == o or path.is_relative_to(o) for o in own):
            continue
        try:
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                st = path.stat()  # a link to a file counts as the file; to a folder, not walked
                if stat.S_ISDIR(st.st_mode):
                    continue
        except FileNotFoundError:
            out.append((path, None))
            continue
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if recursive:
                found: list[Observation] = []
                _walk(path, recursive, patterns, set(own), found, [])
                out.append((path, found))
        elif stat.S_ISREG(st.st_mode) and is_candidate(path.name, patterns):
            out.append((path, [Observation(path, st.st_size, st.st_mtime_ns)]))
        else:
            out.append((path, None))  # no longer a candidate (renamed over, replaced)
    return out
