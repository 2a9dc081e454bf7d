"""The ``fredica`` command: the engine, headless. See docs/cli.md for every command and the
JSON it prints.

The package: :mod:`.parser` (the command line), one module per group of commands —
:mod:`.runs` (the queue's records), :mod:`.control` (pause, resume, cancel, retry; the queue),
:mod:`.worker` (the engine, ``doctor``), :mod:`.media` (the library and media) —,
:mod:`.shapes` (the stable JSON) and :mod:`.output`; here the entry point, :func:`main`, and
``COMMANDS``, which maps each command to its handler.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import select
import sys
import traceback
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from fredica_app.errors import FredicaError
from fredica_app.logs import CommandLogging
from fredica_app.paths import ENV_DB_URL, resolve_paths

if TYPE_CHECKING:
    from fredica_app.cli.output import Handler

__all__ = [
    "COMMANDS",
    "ENGINE_COMMANDS",
    "EXIT_BROKEN_PIPE",
    "build_parser",
    "main",
    "quick_exit",
    "run",
]

#: Commands that run an engine (or check health): they verify the whole database file first.
ENGINE_COMMANDS = frozenset({"worker", "demo", "doctor", "process", "watch-folders"})

#: Commands answered from a plain read of the database when it can be read so (:mod:`.quick`):
#: they skip the app's stack, which is most of a command's start-up.
QUICK_COMMANDS = frozenset({"runs"})

#: Each command's handler, as ``module:function`` under this package: imported when the
#: command runs, so that a command loads what it needs and no more (``fredica runs`` has no
#: use for the engine's executors or the media jobs). A test may put a handler itself here.
COMMANDS: dict[str, Handler | str] = {
    "submit": "runs:cmd_submit",
    "worker": "worker:cmd_worker",
    "runs": "runs:cmd_runs",
    "run": "runs:cmd_run",
    "pause": "control:cmd_pause",
    "resume": "control:cmd_resume",
    "cancel": "control:cmd_cancel",
    "retry": "control:cmd_retry",
    "pause-queue": "control:cmd_pause_queue",
    "resume-queue": "control:cmd_resume_queue",
    "restart-log": "runs:cmd_restart_log",
    "hosts": "hosts:cmd_hosts",
    "drain": "hosts:cmd_drain",
    "prune": "runs:cmd_prune",
    "remove": "media:cmd_remove",
    "doctor": "worker:cmd_doctor",
    "templates": "media:cmd_templates",
    "speakers": "speakers:cmd_speakers",
    "types": "media:cmd_types",
    "demo": "media:cmd_demo",
    "add": "add:cmd_add",
    "process": "media:cmd_process",
    "sample": "media:cmd_sample",
    "materials": "media:cmd_materials",
    "watch": "watch:cmd_watch",
    "watch-folders": "watch_folders:cmd_watch_folders",
}


def build_parser() -> argparse.ArgumentParser:
    """The command line (:mod:`.parser`, imported when it is needed: it loads the templates)."""
    from fredica_app.cli.parser import build_parser as build

    return build()


def handler(command: str) -> Handler:
    """The handler of ``command``, imported now if it is not yet."""
    found = COMMANDS[command]
    if isinstance(found, str):
        module, name = found.split(":")
        found = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        assert callable(found)
    return found


# --- entry point ----------------------------------------------------------------------------


#: The exit status when standard output was closed early (``fredica runs | head -1``): what a
#: shell reports for a tool that SIGPIPE ended, as it does for other Unix tools.
EXIT_BROKEN_PIPE = 141


def run(argv: Sequence[str] | None = None) -> int:
    """The ``fredica`` executable: :func:`main`, then an exit that skips the interpreter's
    last garbage collections (see :func:`quick_exit`)."""
    code = main(argv)
    quick_exit()
    return code


def quick_exit() -> None:
    """Make the interpreter's exit, which follows, quick: it would collect every object the
    imports made (SQLAlchemy's, pydantic's…), ~0.13 s of a command's time here, for memory
    the system takes back anyway. Frozen objects are not collected; everything else of an
    exit still runs (``atexit``, the standard streams' flush). Only for a process about to
    end: the objects frozen are never collected."""
    gc.freeze()


@contextlib.contextmanager
def imports_without_collection(module: str) -> Iterator[None]:
    """Import the app's modules with the garbage collector off, then freeze what they made.

    An import makes many objects (classes, functions, SQLAlchemy's and pydantic's tables of
    them) and almost no garbage; the collections their allocations set off only walk them,
    ~10 % of the imports' time here. Frozen afterwards, they are left out of every later
    collection too (they live as long as the process anyway). Only when ``module``, the one
    the block imports, is not loaded yet: a process that runs commands in-process (the tests)
    keeps its collector as it was, and nothing of its own is frozen."""
    if module in sys.modules:
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.freeze()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Whatever goes wrong ends as one line on standard error (docs/cli.md,
    "Exit codes"); an unexpected error's traceback goes to the log file that line names."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words == ["--version"]:  # what the parser would print, without building it
        from fredica_app.version import fredica_version

        print(f"fredica {fredica_version()}")
        return 0
    from fredica_app.cli.parser import gui_shorthand

    parser = build_parser()
    args = parser.parse_args(gui_shorthand(parser, words))
    if args.selftest or args.selftest_json:  # before anything looks at a data directory
        return _selftest(parser, args)
    with CommandLogging() as command_log:
        try:
            code = _run(args, command_log)
            sys.stdout.flush()  # a closed pipe shows here at the latest, not at exit
            return code
        except BrokenPipeError as exc:
            if not _stdout_is_gone():  # another pipe broke: not the reader of our output
                return _unexpected(exc, args.command, command_log)
            _discard_stdout()
            return EXIT_BROKEN_PIPE
        except FredicaError as exc:
            from fredica_app.views.records import (
                shown,  # imported only when there is an error to say
            )

            # One line: a name the message quotes may hold a newline or a terminal's escape.
            print(f"fredica: error: {shown(str(exc))}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
        except Exception as exc:
            if _is_database_error(exc):
                print(
                    f"fredica: error: the database cannot be read ({exc}); run `fredica "
                    "doctor`, and restore it from a backup if it is damaged",
                    file=sys.stderr,
                )
                return 1
            return _unexpected(exc, args.command, command_log)


def _is_database_error(exc: Exception) -> bool:
    from fredica_app.database import DATABASE_ERRORS  # the database's modules: loaded by now

    return isinstance(exc, DATABASE_ERRORS)


def _selftest(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``fredica --selftest [--json]``: in a temporary data directory of its own (see
    :mod:`fredica_app.selftest`, which imports what it checks as it checks it)."""
    if not args.selftest:
        parser.error(
            "--json before a command goes with --selftest; a command's --json goes "
            "after it (fredica runs --json)"
        )
    if args.command is not None:
        parser.error(f"--selftest takes no command (got {args.command!r})")
    from fredica_app.selftest import main as selftest

    return selftest(json_output=args.selftest_json)


def _unexpected(exc: Exception, command: str, command_log: CommandLogging) -> int:
    """A bug, or a fault nothing translates: its traceback to the log, one line here."""
    where = command_log.record_unexpected(exc, command)
    line = f"fredica: error: unexpected {type(exc).__name__}: {exc}"
    if where is None:  # no log file to hold the traceback
        print(line, file=sys.stderr)
        traceback.print_exception(exc)
    else:
        print(
            f"{line} (the traceback is in {where}; please report it if the cause is not clear)",
            file=sys.stderr,
        )
    return 1


def _run(args: argparse.Namespace, command_log: CommandLogging) -> int:
    if getattr(args, "db_url", None):
        # Every part that opens the queue — the window's host, a command's app — finds it
        # there, as if it had been set outside.
        os.environ[ENV_DB_URL] = args.db_url
    if args.command in (None, "gui"):
        return _open_window(args, command_log)
    if args.command == "endpoints":  # needs no data directory
        return _serve_endpoints(args)
    paths = resolve_paths(args.data_dir).ensure()
    command_log.start(paths.log_file)
    if args.command == "settings":  # needs no database
        from fredica_app.cli import settings as settings_command

        return settings_command.run(
            paths.settings_file,
            args.action,
            getattr(args, "key", ""),
            getattr(args, "value", ""),
            args.json,
            paths.data_dir,
        )
    if args.command == "migrate-db":  # opens both databases its own way
        from fredica_app.cli.migrate import run_migrate_db

        return run_migrate_db(args, paths)
    if args.command in QUICK_COMMANDS:
        from fredica_app.cli.quick import run_quick

        code = run_quick(args, paths)
        if code is not None:
            return code
    import asyncio  # here: the quick commands do without it

    return asyncio.run(_main(args))


def _open_window(args: argparse.Namespace, command_log: CommandLogging) -> int:
    """``fredica`` alone, ``fredica gui [ITEMS…]`` or ``fredica FILE_OR_URL…``: the desktop
    app, or the items handed to the one already open (Qt is imported only here)."""
    if not _has_display():
        raise FredicaError(
            "no display to open the window on; run `fredica --help` for the commands that "
            "work without one (`fredica process FILE`, `fredica worker`), or set "
            "QT_QPA_PLATFORM=offscreen to run the window invisibly"
        )
    paths = resolve_paths(args.data_dir).ensure()
    command_log.start(paths.log_file)
    from fredica_app.gui.launch import run as run_window

    items = getattr(args, "items", [])  # `fredica` alone has none
    return run_window(paths.data_dir, items, minimized=getattr(args, "minimized", False))


def _has_display() -> bool:
    """Whether a window can be shown: always on Windows and macOS; on other systems when an
    X or Wayland display is set, or Qt is told which platform to use."""
    if sys.platform in ("win32", "darwin"):
        return True
    return any(os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))


def _serve_endpoints(args: argparse.Namespace) -> int:
    from python_endpoints.__main__ import main as serve_endpoints

    forwarded = ["--host", args.host, "--port", str(args.port)]
    for flag in ("token_file", "certfile", "keyfile", "ffmpeg", "log_file"):
        if getattr(args, flag) is not None:
            forwarded += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    for root in args.allow_write:
        forwarded += ["--allow-write", str(root)]
    for name in args.allow_key_env:
        forwarded += ["--allow-key-env", name]
    return serve_endpoints(forwarded, prog="fredica")


def _stdout_is_gone() -> bool:
    """Whether standard output's reader has gone (its pipe or socket reports an error);
    True when that cannot be told here (no ``poll``: Windows)."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
    except (AttributeError, OSError, ValueError):
        return True
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _discard_stdout() -> None:
    """Standard output's reader is gone: send what is left to devnull, so that flushing it at
    exit raises nothing (the recipe of Python's documentation for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):  # not a real file (a command run in-process)
        pass


#: Commands that run jobs at once: they start the endpoints server before anything else.
PRESTART_COMMANDS = frozenset({"worker", "process"})


async def _main(args: argparse.Namespace) -> int:
    endpoints = None
    if args.command in PRESTART_COMMANDS:
        # Its start (an interpreter, its imports, its children's fork server) runs beside
        # the imports below, on another core, rather than after them.
        from fredica_app.endpoints import EndpointsProcess

        endpoints = EndpointsProcess(log_file=resolve_paths(args.data_dir).endpoints_log_file)
        await endpoints.prestart()
    with imports_without_collection("fredica_app.services"):
        from fredica_app.services import Fredica

    try:
        run = handler(args.command)
        app = Fredica.open(
            args.data_dir,
            thorough=args.command in ENGINE_COMMANDS,
            endpoints=endpoints,
            db_url=args.db_url,
        )
    except BaseException:
        if endpoints is not None:
            await endpoints.stop()
        raise
    if app.settings_problem:
        from fredica_app.views.records import shown

        # One line: the problem may quote a key of the file holding a newline or an escape.
        print(f"fredica: warning: {shown(app.settings_problem)}", file=sys.stderr)
    try:
        return await run(app, args)
    finally:
        await app.close()
