"""What makes a file a Fredica database, and a read-only look at one that needs none of the
database layer (SQLAlchemy, Alembic: most of a command's start-up), for the commands that only
read and should answer at once (``fredica runs``).

:mod:`fredica_app.database` opens, checks and upgrades the file for everything else; when
:func:`open_current` declines a file, the caller takes that way, which says what is wrong.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The newest schema revision. A database already there opens without loading Alembic at all;
#: a test keeps this equal to Alembic's head.
SCHEMA_HEAD = "0012"

#: ``PRAGMA application_id`` of every Fredica database: "FRED".
APPLICATION_ID = 0x46524544
SQLITE_MAGIC = b"SQLite format 3\x00"

#: How long a read waits for a writer's lock (a checkpoint) before it gives up.
BUSY_TIMEOUT_MS = 5000


@contextmanager
def open_current(path: Path) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection to ``path`` when it is a Fredica database at this version's
    schema, in one read transaction (a consistent snapshot); None for anything else — a
    missing, empty or foreign file, a schema older or newer, a file SQLite cannot read —,
    which the caller then opens the full way."""
    try:
        with path.open("rb") as f:
            if f.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                yield None
                return
    except OSError:
        yield None
        return
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error:
        yield None
        return
    try:
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("BEGIN")
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            revisions = conn.execute("SELECT version_num FROM alembic_version").fetchall()
            current = app_id == APPLICATION_ID and revisions == [(SCHEMA_HEAD,)]
        except sqlite3.Error:  # no alembic_version (a foreign file), or damage
            current = False
        yield conn if current else None
    finally:
        conn.close()
