"""``fredica migrate-db``: a single-machine database — library and history — copied to a
shared queue on PostgreSQL, verified, the SQLite file left untouched.

- The SQLite file is read on a read-only connection (``mode=ro``): nothing of it changes, not
  even its modification time; it stays as it was, a backup.
- Refused while an engine runs on either side: this data directory's (its lock, which the
  copy then holds itself, so that none starts meanwhile), or any host's on the target (a
  registered engine that is not stopped and renewed its row within two leases).
- The target must hold no queue yet (no run, no task, no material): a copy never merges.
- Every table goes over in one PostgreSQL transaction, under the queue's write lock, in the
  order of their foreign keys, with their ids (the change stream's numbers included, so a
  viewer's cursor means the same); the id sequences are moved past the copied ids.
- Before the commit, each table is read back from the target and compared with the source:
  its row count and a checksum over its rows in key order (SHA-256 of their values, JSON and
  floats normalised). Any difference rolls the whole copy back.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from fredica_app.database import live_engines, metadata, open_shared_database
from fredica_app.dbfile import SCHEMA_HEAD
from fredica_app.errors import FredicaError
from workers.db import redact_url

#: Tables that say nothing of the library or its history: not copied.
SKIPPED = frozenset({"worker"})
#: Rows moved per INSERT.
CHUNK = 1_000
#: Tables whose one row belongs to the schema (the target has its own): set, not inserted.
COUNTERS = frozenset({"change_counter"})


class CopyRefused(FredicaError):
    """The copy cannot be made as things are (nothing was written)."""


@dataclass
class CopyReport:
    target: str
    rows: dict[str, int] = field(default_factory=dict)
    checksums: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def copy_to_shared(
    source: Path,
    url: str,
    *,
    lease_seconds: float = 30.0,
    progress: Callable[[str, int], None] | None = None,
) -> CopyReport:
    """Copy the SQLite database at ``source`` to the PostgreSQL database at ``url``."""
    shown = redact_url(url)
    started = time.monotonic()
    src = _open_read_only(source)
    try:
        revision = _revision(src)
        if revision != SCHEMA_HEAD:
            raise CopyRefused(
                f"{source} is at schema {revision}, this Fredica's is {SCHEMA_HEAD}: run any "
                "command on it once (`fredica runs`) to upgrade it, then copy it"
            )
        engine = open_shared_database(url)
        try:
            report = _copy(src, engine, shown, lease_seconds, progress)
        finally:
            engine.dispose()
    finally:
        src.close()
    report.seconds = time.monotonic() - started
    return report


def _open_read_only(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise CopyRefused(f"there is no database to copy at {path}")
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def _revision(conn: sqlite3.Connection) -> str | None:
    try:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def _copy(
    src: sqlite3.Connection,
    engine: sa.Engine,
    shown: str,
    lease_seconds: float,
    progress: Callable[[str, int], None] | None,
) -> CopyReport:
    report = CopyReport(shown)
    tables = [t for t in metadata.sorted_tables if t.name not in SKIPPED]
    with engine.begin() as conn:  # the queue's write lock: no host writes meanwhile
        _refuse_live_engines(conn, shown, lease_seconds)
        _refuse_non_empty(conn, shown)
        for table in tables:
            if table.name in COUNTERS:
                continue
            n = 0
            try:
                for chunk in _chunks(_rows(src, table), CHUNK):
                    conn.execute(sa.insert(table), chunk)
                    n += len(chunk)
                    if progress is not None:
                        progress(table.name, n)
            except sa.exc.DBAPIError as exc:
                why = str(exc.orig or exc).strip().splitlines()[0]
                raise CopyRefused(
                    f"copying {table.name} failed after {n} rows ({why}): nothing was kept "
                    f"in {shown}"
                ) from exc
            report.rows[table.name] = n
            _advance_sequence(conn, table)
        counter = src.execute("SELECT seq, pruned_seq FROM change_counter WHERE id = 1").fetchone()
        if counter is not None:
            conn.exec_driver_sql(
                "UPDATE change_counter SET seq = %(seq)s, pruned_seq = %(pruned)s WHERE id = 1",
                {"seq": counter[0], "pruned": counter[1]},
            )
        # Read back before the commit: any difference rolls everything back.
        for table in tables:
            want_n, want_sum = _checksum(_rows(src, table), table)
            got_n, got_sum = _checksum(_target_rows(conn, table), table)
            if (want_n, want_sum) != (got_n, got_sum):
                raise CopyRefused(
                    f"the copy of {table.name} differs from the source ({got_n} rows for "
                    f"{want_n}, checksum {got_sum[:12]} for {want_sum[:12]}): nothing was kept "
                    f"in {shown}"
                )
            report.checksums[table.name] = want_sum
    return report


def _refuse_live_engines(conn: sa.Connection, shown: str, lease_seconds: float) -> None:
    names = [wid for wid, _ in live_engines(conn, 2 * lease_seconds)]
    if names:
        raise CopyRefused(
            f"an engine runs on {shown} ({', '.join(names[:3])}): stop it (or `fredica "
            "drain` it and let it stop) before copying into that database"
        )


def _refuse_non_empty(conn: sa.Connection, shown: str) -> None:
    for table in ("workflow_run", "task", "material"):
        if conn.exec_driver_sql(f"SELECT 1 FROM {table} LIMIT 1").first() is not None:
            raise CopyRefused(
                f"{shown} already holds a queue (its {table} table has rows): a copy goes "
                "only into an empty database (createdb a new one)"
            )


def _rows(src: sqlite3.Connection, table: sa.Table) -> Iterable[dict[str, Any]]:
    """The source table's rows in key order, typed as the models type them."""
    cols = [c.name for c in table.c]
    order = ", ".join(f'"{c.name}"' for c in table.primary_key.columns) or "rowid"
    names = ", ".join(f'"{c}"' for c in cols)
    for row in src.execute(f"SELECT {names} FROM {table.name} ORDER BY {order}"):
        yield {c.name: _from_sqlite(c, row[c.name]) for c in table.c}


def _target_rows(conn: sa.Connection, table: sa.Table) -> Iterable[Mapping[Any, Any]]:
    q = sa.select(table).order_by(*table.primary_key.columns)
    return conn.execute(q).mappings()


def _from_sqlite(column: sa.Column[Any], value: Any) -> Any:
    if value is None:
        return None
    kind = column.type
    if isinstance(kind, sa.JSON) or isinstance(getattr(kind, "impl", None), sa.JSON):
        return json.loads(value) if isinstance(value, str) else value
    if isinstance(kind, sa.Boolean):
        return bool(value)
    return value


def _normal(value: Any) -> Any:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, bool):
        return int(value)
    return value


def _checksum(rows: Iterable[Mapping[Any, Any]], table: sa.Table) -> tuple[int, str]:
    h = hashlib.sha256()
    n = 0
    names = [c.name for c in table.c]
    for row in rows:
        h.update(json.dumps([_normal(row[c]) for c in names], default=str).encode())
        n += 1
    return n, h.hexdigest()


def _advance_sequence(conn: sa.Connection, table: sa.Table) -> None:
    """Move an integer id's sequence past the ids copied (PostgreSQL keeps a sequence per
    autoincrementing key; explicit ids do not move it)."""
    for column in table.primary_key.columns:
        if column.autoincrement is True or (
            column.autoincrement == "auto" and isinstance(column.type, sa.Integer)
        ):
            seq = conn.exec_driver_sql(
                "SELECT pg_get_serial_sequence(%(t)s, %(c)s)", {"t": table.name, "c": column.name}
            ).scalar()
            if seq:
                conn.exec_driver_sql(
                    f"SELECT setval(%(s)s, coalesce((SELECT max({column.name}) FROM "
                    f"{table.name}), 0) + 1, false)",
                    {"s": seq},
                )


def _chunks(rows: Iterable[dict[str, Any]], n: int) -> Iterable[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= n:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
