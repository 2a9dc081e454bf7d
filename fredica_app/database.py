"""Opening the Fredica database: checks that never modify a file that is not ours, then the
schema upgrade, then the engine the stores use.

Checks, all on a read-only connection before anything is written:

- a file that is not SQLite, or an SQLite file that is not Fredica's (its ``application_id``),
  is refused with :class:`NotAFredicaDatabase`;
- a file SQLite reports as damaged is refused with :class:`DatabaseCorrupt`;
- a file migrated by a newer Fredica (a revision this one does not know) is refused with
  :class:`DatabaseTooNew`.

The upgrade runs every migration in one transaction (DDL is transactional on SQLite once the
driver's own transaction handling is off, see :mod:`workers.db`): a failure rolls back and
raises :class:`MigrationFailed`, and the file stays as it was.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

import fredica_app
from fredica_app.dbfile import APPLICATION_ID, SCHEMA_HEAD, SQLITE_MAGIC
from fredica_app.errors import (
    DatabaseCorrupt,
    DatabaseTooNew,
    MigrationFailed,
    NotAFredicaDatabase,
    StoreUnavailable,
    UpgradeWaits,
)
from fredica_app.library import models as _library_models  # noqa: F401 - registers tables
from workers.db import Synchronous, create_postgres_engine, create_sqlite_engine, redact_url
from workers.models import metadata as metadata  # every table, the library's registered above

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory


#: What SQLite raises (raw or wrapped by SQLAlchemy) when a file is damaged or unreadable.
DATABASE_ERRORS: tuple[type[Exception], ...] = (sqlite3.DatabaseError, sa.exc.DatabaseError)


def migrations_dir() -> Path:
    """The Alembic scripts: inside the package when installed from a wheel or frozen, at the
    repository's root when running from a checkout."""
    here = Path(fredica_app.__file__).resolve().parent
    for candidate in (here / "_migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise MigrationFailed(f"the database migrations are missing (looked in {here})")


def alembic_config(script_location: Path | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(script_location or migrations_dir()))
    return cfg


def check_database(
    path: Path, script_location: Path | None = None, *, thorough: bool = True
) -> str | None:
    """Refuse a file that is not a usable Fredica database, without modifying it.

    Returns the file's schema revision (None for a new or empty file).
    """
    if not path.exists() or path.stat().st_size == 0:
        return None
    with path.open("rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    if head != SQLITE_MAGIC:
        raise NotAFredicaDatabase(
            f"{path} is not a Fredica database (not an SQLite file); "
            "move it away or choose another data directory"
        )
    if not (os.access(path.parent, os.W_OK) and os.access(path, os.W_OK)):
        # Said before SQLite's "unable to open database file" (a WAL database is not read even
        # read-only where its shared-memory file cannot be made), which reads as damage.
        raise StoreUnavailable(
            f"{path} cannot be written (a read-only disk or folder, or another user's file): "
            "make it writable, or choose another data directory with --data-dir"
        )
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:  # pragma: no cover - open errors surface on first query
        raise DatabaseCorrupt(f"{path} cannot be opened: {exc}") from exc
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if app_id != APPLICATION_ID and not (app_id == 0 and not tables):
            raise NotAFredicaDatabase(
                f"{path} is an SQLite database but not a Fredica one; "
                "move it away or choose another data directory"
            )
        revision = None
        if "alembic_version" in tables:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            revision = row[0] if row else None
        # A whole-file check costs time on a large database: do it before a migration writes
        # to the file and when an engine starts, not for every command that only reads.
        if thorough or revision != SCHEMA_HEAD:
            problems = [r[0] for r in conn.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise DatabaseCorrupt(
                    f"{path} is damaged ({'; '.join(problems[:3])}); restore it from a backup "
                    "or move it away to start a new one"
                )
    except sqlite3.DatabaseError as exc:
        raise DatabaseCorrupt(
            f"{path} is damaged or not a database ({exc}); restore it from a backup "
            "or move it away to start a new one"
        ) from exc
    finally:
        conn.close()
    if revision is not None and (revision != SCHEMA_HEAD or script_location is not None):
        from alembic.script import ScriptDirectory

        script = ScriptDirectory.from_config(alembic_config(script_location))
        if not _known(script, revision):
            raise DatabaseTooNew(
                f"{path} was written by a newer version of Fredica (schema {revision}); "
                "install that version or newer to open it"
            )
    return revision


def _known(script: ScriptDirectory, revision: str) -> bool:
    try:
        return script.get_revision(revision) is not None
    except Exception:  # alembic raises several kinds for an unknown id
        return False


def migrate(engine: sa.Engine, script_location: Path | None = None) -> None:
    """Upgrade the schema to the newest revision, all in one transaction."""
    from alembic import command

    cfg = alembic_config(script_location)
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql(f"PRAGMA application_id = {APPLICATION_ID}")
    except Exception as exc:
        raise MigrationFailed(
            f"upgrading the database schema failed and was rolled back: {exc}"
        ) from exc


def current_revision(engine: sa.Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _create_private(path: Path) -> None:
    """Create the database's file, empty, readable by its user alone, before SQLite does
    (with the umask's mode, often 0644); SQLite gives its ``-wal`` and ``-shm`` files the
    database's mode. An existing file is left as it is (``AppPaths.ensure`` mends modes)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def open_database(
    path: Path,
    *,
    synchronous: Synchronous = "FULL",
    script_location: Path | None = None,
    thorough: bool = True,
) -> sa.Engine:
    """Check, upgrade and open the database at ``path`` (created when missing).

    ``thorough=False`` skips the whole-file integrity check when no migration is needed (the
    CLI's read and submit commands); damage is then reported when SQLite meets it.
    """
    revision = check_database(path, script_location, thorough=thorough)
    path.parent.mkdir(parents=True, exist_ok=True)
    _create_private(path)
    engine = create_sqlite_engine(path, synchronous=synchronous)
    if revision == SCHEMA_HEAD and script_location is None:
        return engine
    try:
        migrate(engine, script_location)
    except BaseException:
        engine.dispose()
        raise
    return engine


def open_shared_database(url: str, script_location: Path | None = None) -> sa.Engine:
    """Check, upgrade and open the PostgreSQL database at ``url`` (several hosts' queue).

    The database must exist (``createdb``); an empty one gets Fredica's schema. One written by
    a newer Fredica (a schema revision this build does not know) is refused with one line
    saying which; an older one is upgraded, in one transaction under the queue's write lock
    (two hosts that start at once upgrade it once). Nothing here shows the password."""
    shown = redact_url(url)
    engine = create_postgres_engine(url)
    try:
        try:
            revision = current_revision(engine)
        except sa.exc.OperationalError as exc:
            first = str(exc.orig or exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise StoreUnavailable(
                f"the database at {shown} cannot be reached: {_without_secrets(first, url)}"
            ) from exc
        if revision is not None and (revision != SCHEMA_HEAD or script_location is not None):
            from alembic.script import ScriptDirectory

            script = ScriptDirectory.from_config(alembic_config(script_location))
            if not _known(script, revision):
                raise DatabaseTooNew(
                    f"the database at {shown} was upgraded by a newer Fredica (schema "
                    f"{revision}; this one knows up to {SCHEMA_HEAD}): install that version "
                    "or newer on this host"
                )
        if revision != SCHEMA_HEAD or script_location is not None:
            if revision is not None:
                _refuse_upgrade_under_live_engines(engine, shown)
            migrate(engine, script_location)
    except BaseException:
        engine.dispose()
        raise
    return engine


#: An engine that renewed its row within this many seconds is taken for alive (two default
#: leases: a live engine renews every few seconds).
LIVE_WITHIN = 60.0


def live_engines(conn: sa.Connection, within: float) -> list[tuple[str, str]]:
    """The engines on a shared queue that renewed their row within ``within`` seconds of the
    database's clock and have not said they stopped: ``(worker id, build)``, by id."""
    rows = conn.exec_driver_sql(
        "SELECT id, build FROM worker WHERE stopped_at IS NULL "
        "AND heartbeat_at > extract(epoch FROM clock_timestamp()) - %(within)s ORDER BY id",
        {"within": within},
    ).all()
    return [(r.id, r.build) for r in rows]


def _refuse_upgrade_under_live_engines(engine: sa.Engine, shown: str) -> None:
    """A newer build upgrades a shared queue only when no engine of an older build runs on
    it: an older build may not run on the new schema. One line naming them otherwise."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("worker"):
            return
        rows = live_engines(conn, LIVE_WITHIN)
    if rows:
        named = ", ".join(f"{wid} ({build or 'an older build'})" for wid, build in rows[:3])
        more = f" and {len(rows) - 3} more" if len(rows) > 3 else ""
        raise UpgradeWaits(
            f"the database at {shown} needs an upgrade that engines of an older Fredica still "
            f"running on it may not run on: {named}{more}; stop them (`fredica drain HOST`, "
            "then stop it), or upgrade them first, then start this one"
        )


def _without_secrets(text: str, url: str) -> str:
    """A driver's message with the URL's password taken out, should it quote it."""
    password = sa.make_url(url).password
    return text.replace(str(password), "***") if password else text
