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
import time
from collections.abc import Mapping, Sequence

from fredica_app.cli.display import runs_lines
from fredica_app.cli.shapes import print_json, run_json
from fredica_app.dbfile import open_current
from fredica_app.library import quick as library_reads
from fredica_app.paths import ENV_DB_URL, AppPaths
from workers.records import RunProgress, RunRecord
from workers.store import quick as queue_reads

__all__ = ["run_quick", "show_runs"]


def run_quick(args: argparse.Namespace, paths: AppPaths) -> int | None:
    """Answer ``args.command`` from a plain read; None when the file must be opened the usual
    way (nothing is printed then)."""
    assert args.command == "runs"
    if shared_database_chosen(args, paths):
        return None
    with open_current(paths.database) as conn:
        if conn is None:
            return None
        try:
            runs = queue_reads.list_runs(conn)
            progress, titles = {}, {}
            if not args.json:
                progress = queue_reads.run_progress(conn, [r.id for r in runs])
                titles = library_reads.titles(conn, {r.material_id for r in runs if r.material_id})
        except sqlite3.Error:  # damage the usual way reports
            return None
    show_runs(runs, progress, titles, paths.queue_flag.exists(), as_json=args.json)
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


def show_runs(
    runs: Sequence[RunRecord],
    progress: Mapping[str, RunProgress],
    titles: Mapping[str, str],
    queue_paused: bool,
    *,
    as_json: bool,
) -> None:
    """``fredica runs``: one line per run, or their JSON."""
    if as_json:
        print_json([run_json(r) for r in runs])
    else:
        print("\n".join(runs_lines(runs, progress, titles, time.time(), queue_paused=queue_paused)))
