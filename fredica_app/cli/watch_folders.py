"""``watch-folders``: the watch folders, headless — each new media file, once settled, is added
to the library and submitted to its folder's template, and an engine runs the work.

The folders are the settings' ``watch_folders``, or the one given as ``DIR`` with its
options. The engine is this command's own, as ``worker`` runs one; when another already runs
on the data directory (a ``worker``, the desktop app), the files are submitted to it. Ctrl-C or
SIGTERM stops the watcher, then the engine gracefully (running tasks checkpoint; what is left
is resumed at the next start).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from fredica_app.cli.worker import FinishedRuns
from fredica_app.errors import DatabaseLocked
from fredica_app.services import Fredica
from fredica_app.settings import WatchFolder
from fredica_app.views.records import shown
from fredica_app.watching import FolderWatcher, WatchReport
from workers.engine import WorkerEngine

#: The exit status of a command line that cannot be used as it is (argparse's).
EXIT_USAGE = 2


class _Usage(Exception):
    """What is wrong with the command line: said in one line, exit 2."""


async def cmd_watch_folders(app: Fredica, args: argparse.Namespace) -> int:
    try:
        folders = _folders(app, args)
        settle = app.settings.watch_settle_seconds if args.settle is None else args.settle
        if not settle > 0:
            raise _Usage(f"--settle must be more than 0 seconds, not {args.settle:g}")
    except _Usage as exc:
        print(f"fredica: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # An unknown template is said here, before anything starts.
    watcher = FolderWatcher(app, folders, settle, on_report=_print_report)
    for f in watcher.folders:
        print(
            f"watching {_describe(f)}; a file is taken in once unchanged for {settle:g} s",
            file=sys.stderr,
        )
    finished = FinishedRuns(app)
    async with contextlib.AsyncExitStack() as stack:
        engine: WorkerEngine | None
        try:
            engine = await stack.enter_async_context(app.engine_session())
        except DatabaseLocked as exc:
            engine = None
            print(f"{exc}: the files are submitted to it", file=sys.stderr)
        if engine is not None:
            engine.bus.subscribe(finished)
            report = engine.recovery
            if report is not None and report.total:
                print(f"recovered: {report.summary} (see `fredica restart-log`)", file=sys.stderr)
        await _watch(watcher, engine)
    await finished.drain()
    return 0


def _folders(app: Fredica, args: argparse.Namespace) -> list[WatchFolder]:
    """The folders to watch: ``DIR`` with its options, else the settings'."""
    if args.dir is None:
        given = [
            name
            for name, value in (
                ("--template", args.template),
                ("--pattern", args.pattern),
                ("--param", args.param),
                ("--recursive/--no-recursive", args.recursive is not None),
            )
            if value
        ]
        if given:
            raise _Usage(
                f"{', '.join(given)} go with DIR: `fredica watch-folders DIR --template NAME`"
            )
        if not app.settings.watch_folders:
            raise _Usage(
                "no watch folder is set: add one to the setting watch_folders (`fredica "
                "settings edit`), or give one: `fredica watch-folders DIR --template NAME`"
            )
        return list(app.settings.watch_folders)
    folder = Path(os.path.abspath(args.dir.expanduser()))
    if not folder.is_dir():
        what = "not a folder" if folder.exists() else "no such folder"
        raise _Usage(f"{args.dir}: {what} (give the folder to watch)")
    return [
        WatchFolder(
            folder=folder,
            template=args.template or WatchFolder.model_fields["template"].default,
            recursive=args.recursive is not False,
            patterns=list(args.pattern),
            params=dict(args.param),
        )
    ]


def _describe(folder: WatchFolder) -> str:
    what = "its subfolders too" if folder.recursive else "not its subfolders"
    if folder.patterns:
        what += ", names matching " + " or ".join(folder.patterns)
    return f"{folder.folder} → {folder.template} ({what})"


def _print_report(report: WatchReport) -> None:
    """A line per file submitted (standard output) and per problem (standard error);
    files skipped (the same bytes submitted before) say nothing."""
    if report.kind == "submitted":
        path = shown(str(report.path))
        print(f"submitted: {path} → {report.template} (run {report.run_id})", flush=True)
    elif report.kind == "problem":
        said = f"{shown(str(report.path))}: {shown(report.message)}"
        print(f"fredica: warning: {said}", file=sys.stderr, flush=True)


async def _watch(watcher: FolderWatcher, engine: WorkerEngine | None) -> None:
    """Watch (and run the engine) until SIGINT or SIGTERM; then stop both gracefully. An
    error of either (the database failing under them) is raised."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal() -> None:
        if not stop.is_set():
            print("stopping: letting running tasks checkpoint…", file=sys.stderr)
            stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    watching = watcher.start()
    running = asyncio.ensure_future(engine.run()) if engine is not None else None
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait(
            [t for t in (watching, running, stopped) if t is not None],
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        stopped.cancel()
        try:
            await watcher.stop()
        finally:
            if engine is not None and running is not None:
                await engine.stop()
                await running
