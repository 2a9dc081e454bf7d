"""A database as an older Fredica left it: migrated only up to a given revision, for the tests
of an upgrade (what a migration does to the rows already there)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from alembic import command

from fredica_app.database import alembic_config
from fredica_app.dbfile import APPLICATION_ID
from workers.db import create_sqlite_engine


@contextmanager
def database_at(path: Path, revision: str) -> Iterator[sa.Connection]:
    """A Fredica database at ``path`` at schema ``revision``: the connection of the
    transaction that made it, for the test to write its rows; committed and closed after."""
    engine = create_sqlite_engine(path)
    cfg = alembic_config()
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
            conn.exec_driver_sql(f"PRAGMA application_id = {APPLICATION_ID}")
            yield conn
    finally:
        engine.dispose()
