"""Another program's plain connection to a test's queue database, SQLite file or PostgreSQL,
taking sqlite3's ``?`` parameters on both: how a test reads what the store wrote, or writes
behind its back."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from workers.store._dialect import driver_sql


class RawConnection:
    def __init__(self, conn: sa.Connection) -> None:
        self._conn = conn
        self.dialect = conn.dialect.name

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sa.CursorResult[Any]:
        args: Any = tuple(params)
        if self.dialect == "postgresql" and not args:
            args = {}
        return self._conn.exec_driver_sql(driver_sql(sql, self.dialect), args)


class RawDB:
    def __init__(self, url: str) -> None:
        self.url = url
        self.dialect = sa.make_url(url).get_backend_name()

    @contextmanager
    def connect(self) -> Iterator[RawConnection]:
        """One transaction, committed at the end of the block."""
        engine = sa.create_engine(self.url, poolclass=sa.NullPool)
        if self.dialect == "sqlite":  # as the store's own connections: foreign keys enforced

            @sa.event.listens_for(engine, "connect")
            def _foreign_keys(dbapi_conn: Any, _: Any) -> None:
                dbapi_conn.execute("PRAGMA foreign_keys = ON")

        try:
            with engine.begin() as conn:
                yield RawConnection(conn)
        finally:
            engine.dispose()

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with self.connect() as conn:
            return [tuple(r) for r in conn.execute(sql, args)]

    def scalar(self, sql: str, *args: Any) -> Any:
        with self.connect() as conn:
            return conn.execute(sql, args).scalar()


def raw_of(store: Any) -> RawDB:
    """A plain connection of another program to the database ``store`` works on."""
    return RawDB(store.engine.url.render_as_string(hide_password=False))
