"""Engines for the queue's database: SQLite tuned for a durable queue.

Every connection gets WAL, ``synchronous`` (FULL by default: an acknowledged completion survives
power loss), a busy timeout and foreign keys. pysqlite's own transaction handling is switched
off so that SQLAlchemy's ``BEGIN`` is really emitted: write transactions begin ``IMMEDIATE``
(they take the write lock up front and never fail half-way with SQLITE_BUSY on upgrade), reads
begin ``DEFERRED`` and run beside a writer thanks to WAL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy import event

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

#: Execution option that marks a connection's transactions as read-only (``BEGIN DEFERRED``).
READ_ONLY = "fredica_read_only"

BUSY_TIMEOUT_MS = 30_000


def sqlite_url(path: Path) -> str:
    return f"sqlite+pysqlite:///{path}"


def configure_sqlite_connection(
    dbapi_conn: Any, synchronous: Synchronous, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> None:
    """Apply the pragmas every Fredica connection needs."""
    # Autocommit at the driver level; SQLAlchemy's begin hook below emits BEGIN itself.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    try:
        cur.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute(f"PRAGMA synchronous = {synchronous}")
        cur.execute("PRAGMA foreign_keys = ON")
    finally:
        cur.close()


def _install_sqlite_hooks(
    sync_engine: sa.Engine, synchronous: Synchronous, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> None:
    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        configure_sqlite_connection(dbapi_conn, synchronous, busy_timeout_ms)

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        # Straight to the driver: SQLAlchemy's own execution path would cost a noticeable
        # share of a short transaction, and the statement needs none of it.
        mode = "DEFERRED" if conn.get_execution_options().get(READ_ONLY) else "IMMEDIATE"
        conn.connection.driver_connection.execute(f"BEGIN {mode}")  # type: ignore[union-attr]


def create_sqlite_engine(
    path: Path,
    *,
    synchronous: Synchronous = "FULL",
    pool_size: int = 4,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
) -> sa.Engine:
    """An engine on the SQLite file at ``path`` with Fredica's settings (``busy_timeout_ms``:
    how long a write waits for another program's lock before it fails).

    Connections are shared between the store's threads (never used by two at once), hence
    ``check_same_thread=False``.
    """
    engine = sa.create_engine(
        sqlite_url(path),
        connect_args={"check_same_thread": False},
        pool_size=pool_size,
        max_overflow=4,
    )
    _install_sqlite_hooks(engine, synchronous, busy_timeout_ms)
    return engine
