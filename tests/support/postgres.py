"""The PostgreSQL half of the store's conformance suite: a database of the test run's own on
the server at ``FREDICA_TEST_PG_URL`` (default: the project machines' PostgreSQL 15 at
127.0.0.1:5432, trust auth), migrated once, emptied before each test.

Where no server answers, the PostgreSQL half is skipped with the reason; ``.ci/run`` checks
that the server answers first, so that a skipped half never passes for green there.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import sqlalchemy as sa

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def server_url() -> str:
    return os.environ.get("FREDICA_TEST_PG_URL", DEFAULT_URL)


def unavailable() -> str | None:
    """Why PostgreSQL cannot be used here (None: it can)."""
    try:
        engine = sa.create_engine(server_url(), connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        engine.dispose()
    except Exception as exc:
        return f"PostgreSQL is not reachable at {sa.make_url(server_url())!r}: {exc}"
    return None


@dataclass
class PostgresDatabase:
    """A migrated database of this test run's own (dropped at the end)."""

    url: str
    _admin: sa.Engine
    name: str

    def reset(self) -> None:
        """Empty every table but the schema's own; the change stream starts again at 0."""
        from fredica_app.database import metadata

        tables = [t.name for t in metadata.sorted_tables if t.name not in ("change_counter",)]
        engine = sa.create_engine(self.url, poolclass=sa.NullPool)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
            conn.exec_driver_sql("UPDATE change_counter SET seq = 0, pruned_seq = 0")
        engine.dispose()

    def drop(self) -> None:
        with self._admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        self._admin.dispose()


def create_database() -> PostgresDatabase:
    """A new database on the test server, with Fredica's schema."""
    from fredica_app.database import migrate
    from workers.db import create_postgres_engine

    admin = sa.create_engine(server_url(), isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    name = f"fredica_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = sa.make_url(server_url()).set(database=name).render_as_string(hide_password=False)
    engine = create_postgres_engine(url)
    try:
        migrate(engine)
    finally:
        engine.dispose()
    return PostgresDatabase(url, admin, name)


def session_database() -> Iterator[PostgresDatabase]:
    db = create_database()
    try:
        yield db
    finally:
        db.drop()
