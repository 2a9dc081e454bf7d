"""Commands answered from a plain read of the database, without the app's stack (services,
the engine, SQLAlchemy, pydantic: most of a command's start-up): ``fredica runs``.

A file that is not plainly readable — missing, needing an upgrade, written by a newer Fredica,
damaged, another program's — is left to the command's usual way, which creates, upgrades or
says what is wrong. The settings are not read here (nothing these commands print depends on
them), so a problem in them is reported by the commands that use them.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fredica_app.cli.display import runs_lines
from fredica_app.cli.run_filter import encode_cursor, footer, run_filter
from fredica_app.cli.shapes import print_json, run_json
from fredica_app.dbfile import open_current
from fredica_app.library import quick as library_reads
from fredica_app.paths import ENV_DB_URL, AppPaths
from workers.changes import PageKey
from workers.records import RunProgress, RunRecord
from workers.store import quick as queue_reads

__all__ = ["RunsPage", "run_quick", "show_runs"]


def run_quick(args: argparse.Namespace, paths: AppPaths) -> int | None:
    """Answer ``args.command`` from a plain read; None when the file must be opened the usual
    way (nothing is printed then)."""
    assert args.command == "runs"
    if shared_database_chosen(args, paths):
        return None
    now, terminal = time.time(), sys.stdout.isatty()
    with open_current(paths.database) as conn:
        if conn is None:
            return None
        try:
            named = None
            if args.material is not None:
                named = library_reads.matching(conn, args.material)
            wanted = run_filter(args, named, now, terminal=terminal)
            runs, next_key, more = queue_reads.run_page(conn, wanted)
            progress, titles = {}, {}
            if not args.json:
                progress = queue_reads.run_progress(conn, [r.id for r in runs])
                titles = library_reads.titles(conn, {r.material_id for r in runs if r.material_id})
        except sqlite3.Error:  # damage the usual way reports
            return None
    page = RunsPage(runs, next_key, more, paged=wanted.limit is not None and args.json)
    show_runs(page, progress, titles, paths.queue_flag.exists(), as_json=args.json)
    return 0


def shared_database_chosen(args: argparse.Namespace, paths: AppPaths) -> bool:
    """Whether the queue is a shared database (``--db-url``, ``$FREDICA_DB_URL``, the setting
    ``database_url``): the data directory's file is then not the queue. Read without the
    settings' model (only whether the key holds something)."""
    if getattr(args, "db_url", None) or os.environ.get(ENV_DB_URL):
        return True
    try:
        data = json.loads(paths.settings_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False  # a missing file names none; a broken one is told the usual way
    return isinstance(data, dict) and bool(data.get("database_url"))


@dataclass(frozen=True, slots=True)
class RunsPage:
    """The runs ``fredica runs`` shows, where the next page starts, how many come after."""

    runs: Sequence[RunRecord]
    next_key: PageKey | None
    more: int
    #: The JSON is a page (``--limit``, ``--cursor``): an object that says what follows.
    paged: bool = False


def show_runs(
    page: RunsPage,
    progress: Mapping[str, RunProgress],
    titles: Mapping[str, str],
    queue_paused: bool,
    *,
    as_json: bool,
) -> None:
    """``fredica runs``: one line per run and, when cut, a line saying how many more; or
    their JSON — a list of every run asked for, or with ``--limit`` a page that says so."""
    if as_json:
        listed = [run_json(r) for r in page.runs]
        if not page.paged:
            print_json(listed)
            return
        cursor = None if page.next_key is None else encode_cursor(page.next_key)
        print_json({"runs": listed, "more": page.more, "next_cursor": cursor})
        return
    lines = runs_lines(page.runs, progress, titles, time.time(), queue_paused=queue_paused)
    more = footer(len(page.runs), page.more)
    print("\n".join(lines if more is None else [*lines, more]))
