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

from workers import jsonb

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

#: Execution option that marks a connection's transactions as read-only (``BEGIN DEFERRED``).
READ_ONLY = "fredica_read_only"
#: Where a PostgreSQL write transaction leaves the database's clock (Unix seconds) as read at
#: its start, in ``Connection.info``, for the store to take.
DB_NOW = "fredica_db_now"

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


# --- PostgreSQL -------------------------------------------------------------------------------

#: The key of the transaction-level advisory lock every write transaction on PostgreSQL takes
#: first: writes are serialized as SQLite serializes them (the store's read-then-write steps
#: and the change stream's numbering rely on it), whichever host they come from. ("FRED" in
#: ASCII: any fixed number no other program on the database uses.)
WRITE_LOCK_KEY = 0x46524544

#: psycopg's connect arguments Fredica sets on every PostgreSQL connection: a dead server or a
#: cut link is noticed in seconds, not after the kernel's two hours (or its retransmissions).
POSTGRES_CONNECT_ARGS: dict[str, Any] = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    # A statement sent into a cut link fails after this long (TCP_USER_TIMEOUT), instead of
    # the kernel's retransmissions for a quarter of an hour; keepalives cover idle ones.
    "tcp_user_timeout": 10_000,
    "application_name": "fredica",
}


def is_postgres_url(url: str | sa.URL) -> bool:
    return sa.make_url(url).get_backend_name() == "postgresql"


def redact_url(url: str | sa.URL) -> str:
    """The URL as it may be shown or logged: the password (and a ``password`` query option)
    replaced by ``***``."""
    u = sa.make_url(url)
    if "password" in u.query:
        u = u.update_query_dict({"password": "***"})
    return u.render_as_string(hide_password=True)


def _install_postgres_hooks(sync_engine: sa.Engine) -> None:
    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        driver = conn.connection.driver_connection
        if conn.get_execution_options().get(READ_ONLY):
            # One snapshot for the whole read: a reader of the change stream reads the counter
            # and the rows stamped after its cursor as of one moment.
            driver.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")  # type: ignore[union-attr]
        else:
            # The database's clock read in the same round trip, once the lock is held.
            row = driver.execute(  # type: ignore[union-attr]
                "SELECT pg_advisory_xact_lock(%s), extract(epoch FROM clock_timestamp())",
                (WRITE_LOCK_KEY,),
            ).fetchone()
            conn.info[DB_NOW] = float(row[1])


#: How long the server lets a session of Fredica's sit idle inside a transaction before it
#: ends it (``idle_in_transaction_session_timeout``). A store's transaction runs its
#: statements back to back; a session idle that long belongs to a process that was stopped
#: (SIGSTOP, a debugger, a frozen VM) or cut off mid-transaction — and holds the queue's write
#: lock, which every host waits for. Well under the 30 s lease.
IDLE_IN_TRANSACTION_MS = 10_000


def create_postgres_engine(
    url: str | sa.URL,
    *,
    pool_size: int = 4,
    idle_in_transaction_ms: int = IDLE_IN_TRANSACTION_MS,
) -> sa.Engine:
    """An engine on the PostgreSQL database at ``url`` (``postgresql+psycopg://…``).

    Connections are checked before use (``pool_pre_ping``): after the server restarted or a
    link was cut, the store's next transaction gets a new connection instead of an error."""
    u = sa.make_url(url)
    if u.drivername != "postgresql+psycopg":
        u = u.set(drivername="postgresql+psycopg")
    args = dict(POSTGRES_CONNECT_ARGS)
    args["options"] = f"-c idle_in_transaction_session_timeout={int(idle_in_transaction_ms)}"
    engine = sa.create_engine(
        u,
        connect_args=args,
        # Strings jsonb refuses (NUL, lone surrogates) kept all the same (workers.jsonb).
        json_serializer=jsonb.dumps,
        json_deserializer=jsonb.loads,
        pool_size=pool_size,
        max_overflow=4,
        pool_pre_ping=True,
    )
    _install_postgres_hooks(engine)
    return engine


def create_engine_for_url(url: str | sa.URL, *, synchronous: Synchronous = "FULL") -> sa.Engine:
    """An engine with Fredica's settings for a database URL: ``sqlite+pysqlite:///PATH`` or
    ``postgresql+psycopg://…`` (``postgresql://`` is taken to mean psycopg)."""
    u = sa.make_url(url)
    if u.get_backend_name() == "postgresql":
        return create_postgres_engine(u)
    if u.get_backend_name() == "sqlite" and u.database:
        return create_sqlite_engine(Path(u.database), synchronous=synchronous)
    raise ValueError(
        f"not a database Fredica can use: {redact_url(u)} "
        "(use postgresql+psycopg://USER@HOST/DB, or a file: sqlite+pysqlite:///PATH)"
    )
