"""``fredica migrate-db --to URL``: this data directory's database copied to a shared queue
on PostgreSQL (:mod:`fredica_app.database_copy`), then used from there."""

from __future__ import annotations

import argparse
import json
import sys

from fredica_app.database_copy import CopyRefused, copy_to_shared
from fredica_app.lock import DataDirLock
from fredica_app.paths import AppPaths
from fredica_app.settings import (
    check_database_url,
    load_settings,
    read_settings_data,
    validate_settings_data,
    write_settings_text,
)


def run_migrate_db(args: argparse.Namespace, paths: AppPaths) -> int:
    url = args.to
    loaded = load_settings(paths.settings_file)
    # Held through the copy: no engine starts on this data directory meanwhile (and one that
    # runs makes this refuse, with who holds it).
    lock = DataDirLock(paths.engine_lock).acquire()
    try:
        report = copy_to_shared(
            paths.database,
            url,
            lease_seconds=loaded.settings.lease_seconds,
            progress=_progress if sys.stderr.isatty() else None,
        )
    except CopyRefused as exc:
        print(f"fredica: error: {exc}", file=sys.stderr)
        return 1
    finally:
        lock.release()
    counts = ", ".join(
        f"{n:,} {name}" for name, n in report.rows.items() if n and name != "change_tombstone"
    )
    print(
        f"copied to {report.target}: {counts or 'nothing (an empty database)'} "
        f"({report.total:,} rows in {len(report.rows)} tables, {report.seconds:.1f} s); "
        "verified: the same counts and checksums on both sides"
    )
    print(f"{paths.database} is unchanged (keep it as a backup)")
    try:
        check_database_url(url)
    except ValueError:
        print(
            "this data directory still uses its own database: its URL holds a password, which "
            "the settings do not keep — use --db-url or $FREDICA_DB_URL, with PGPASSWORD or a "
            "password file"
        )
        return 0
    data = read_settings_data(paths.settings_file)
    data["database_url"] = url
    validate_settings_data(data)
    write_settings_text(paths.settings_file, json.dumps(data, indent=2) + "\n")
    print("this data directory now uses it (the setting database_url)")
    return 0


def _progress(table: str, n: int) -> None:
    print(f"\r{table}: {n:,} rows", end="", file=sys.stderr, flush=True)
