"""Opening, checking and migrating the database; SQLite settings; the claim's query plan."""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
import warnings
from pathlib import Path

import pytest
import sqlalchemy as sa

from fredica_app.database import (
    check_database,
    current_revision,
    metadata,
    migrations_dir,
    open_database,
)
from fredica_app.dbfile import APPLICATION_ID
from fredica_app.errors import (
    DatabaseCorrupt,
    DatabaseTooNew,
    MigrationFailed,
    NotAFredicaDatabase,
)
from tests.support.olddb import database_at
from workers.db import create_sqlite_engine


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def schema(path: Path) -> dict[str, object]:
    """Everything SQLite knows of a schema, normalised so that two equal schemas compare
    equal whatever DDL text produced them."""
    out: dict[str, object] = {}
    with sqlite3.connect(path) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
                " AND name != 'alembic_version' ORDER BY name"
            )
        ]
        for t in tables:
            sql = conn.execute("SELECT sql FROM sqlite_master WHERE name=?", (t,)).fetchone()[0]
            checks = sorted(
                re.sub(r"\s+", " ", c) for c in re.findall(r"CHECK \((.*?)\)(?:,|\n|$)", sql)
            )
            indexes = {}
            for _, name, unique, origin, partial in conn.execute(f"PRAGMA index_list('{t}')"):
                cols = [
                    (r[2], r[3])  # column name (None for an expression), DESC flag
                    for r in conn.execute(f"PRAGMA index_xinfo('{name}')")
                    if r[5]  # key columns only
                ]
                isql = conn.execute(
                    "SELECT sql FROM sqlite_master WHERE name=?", (name,)
                ).fetchone()
                where = ""
                if isql and isql[0] and " WHERE " in isql[0]:
                    where = re.sub(r"\s+", " ", isql[0].split(" WHERE ", 1)[1])
                key = name if not name.startswith("sqlite_autoindex") else f"auto:{cols}"
                indexes[key] = (unique, origin, partial, cols, where)
            out[t] = {
                "columns": conn.execute(f"PRAGMA table_info('{t}')").fetchall(),
                "fks": sorted(r[2:] for r in conn.execute(f"PRAGMA foreign_key_list('{t}')")),
                "indexes": indexes,
                "checks": checks,
            }
        # The change stream's triggers (migration 0005), as SQLite stores their text.
        out["triggers"] = {
            name: re.sub(r"\s+", " ", sql)
            for name, sql in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type='trigger' ORDER BY name"
            )
        }
    return out


def test_migrations_give_exactly_the_models_schema(tmp_path: Path) -> None:
    migrated = tmp_path / "migrated.db"
    open_database(migrated).dispose()
    modelled = tmp_path / "modelled.db"
    engine = create_sqlite_engine(modelled)
    metadata.create_all(engine)
    engine.dispose()
    got, want = schema(migrated), schema(modelled)
    assert got.keys() == want.keys()
    for table in want:
        assert got[table] == want[table], table
    # And alembic's own comparison finds nothing either (it cannot see expression indexes).
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    engine = create_sqlite_engine(migrated)
    with engine.connect() as conn, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "skipping expression-based index"
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    engine.dispose()
    # ...and reflects the claimable indexes without their DESC, so it reports them as changed;
    # the schema comparison above has already checked those indexes exactly.
    claimable = {"ix_task_claimable", "ix_task_claimable_by_resource"}
    diff = [d for d in diff if not (d[0].endswith("_index") and d[1].name in claimable)]
    assert diff == []


def test_open_database_sets_fredica_settings(tmp_path: Path) -> None:
    path = tmp_path / "d" / "fredica.db"
    engine = open_database(path)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000
        assert conn.exec_driver_sql("PRAGMA application_id").scalar() == APPLICATION_ID
    assert current_revision(engine) is not None
    engine.dispose()
    # Opening again is a no-op upgrade.
    assert check_database(path) is not None
    open_database(path, synchronous="NORMAL").dispose()


def test_write_transactions_begin_immediate(db_path: Path) -> None:
    """A writer takes the lock at BEGIN: a second writer waits (and here, times out) at its
    own BEGIN, never half-way through a transaction."""
    engine = create_sqlite_engine(db_path)
    other = sqlite3.connect(db_path, timeout=0.1, isolation_level=None)
    with engine.begin():
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        # Readers are not blocked (WAL).
        assert other.execute("SELECT count(*) FROM task").fetchone() == (0,)
    other.execute("BEGIN IMMEDIATE")
    other.execute("ROLLBACK")
    other.close()
    engine.dispose()


def _plan(db_path: Path, sql: str, params: dict[str, object]) -> list[str]:
    with sqlite3.connect(db_path) as conn:
        return [str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


CLAIM_PARAMS = {
    "new_status": "claimed",
    "now": 1.0,
    "started_at": None,
    "token": "t",
    "worker_id": "w",
    "lease_until": 2.0,
}


def test_claim_uses_the_partial_indexes(db_path: Path) -> None:
    from workers.store import _hot

    # Any class: a walk of ix_task_claimable in claim order, nothing sorted.
    plan = _plan(db_path, _hot.claim_sql(None), CLAIM_PARAMS)
    assert "SCAN task USING INDEX ix_task_claimable" in plan
    assert not any("TEMP B-TREE" in p for p in plan), plan
    # Some classes: one seek per class in ix_task_claimable_by_resource; only the classes'
    # heads (one row each) are sorted.
    params = {**CLAIM_PARAMS, "r0": "gpu", "r1": "io", "r2": "net"}
    plan = _plan(db_path, _hot.claim_sql(3), params)
    seeks = [p for p in plan if "ix_task_claimable_by_resource (resource=?)" in p]
    assert len(seeks) == 3 and all(p.startswith("SEARCH") for p in seeks), plan
    assert sum("TEMP B-TREE" in p for p in plan) == 1, plan
    # Retries that came due are found in ix_task_retry_due, not by a scan of the table.
    for sql in (_hot.PROMOTE_DUE_SQL, _hot.DUE_SQL, _hot.NEXT_RETRY_SQL):
        plan = _plan(db_path, sql, {"now": 1.0, "horizon": 400.0})
        assert all("ix_task_retry_due" in p for p in plan), (sql, plan)


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "fredica.db"
    path.write_bytes(b"my holiday notes\n" * 100)
    before = digest(path)
    with pytest.raises(NotAFredicaDatabase, match="not a Fredica database"):
        open_database(path)
    assert digest(path) == before


def test_another_apps_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "fredica.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE contacts (name TEXT)")
        conn.execute("INSERT INTO contacts VALUES ('Ada')")
    before = digest(path)
    with pytest.raises(NotAFredicaDatabase, match="not a Fredica one"):
        open_database(path)
    assert digest(path) == before
    assert not Path(f"{path}-wal").exists()


def test_a_database_from_a_newer_fredica_is_refused_untouched(
    tmp_path: Path, migrated_template: Path
) -> None:
    path = tmp_path / "fredica.db"
    shutil.copyfile(migrated_template, path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    before = digest(path)
    with pytest.raises(DatabaseTooNew, match="newer version of Fredica"):
        open_database(path)
    assert digest(path) == before


def test_a_corrupt_database_is_refused_untouched(tmp_path: Path, migrated_template: Path) -> None:
    path = tmp_path / "fredica.db"
    shutil.copyfile(migrated_template, path)
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    data[2 * page : 4 * page] = b"\xff" * (2 * page)  # smash two pages of b-tree
    path.write_bytes(bytes(data))
    before = digest(path)
    with pytest.raises(DatabaseCorrupt, match="damaged"):
        open_database(path)
    assert digest(path) == before


def test_an_empty_file_becomes_a_new_database(tmp_path: Path) -> None:
    path = tmp_path / "fredica.db"
    path.touch()
    open_database(path).dispose()
    assert check_database(path) is not None


def test_a_failing_migration_rolls_back_completely(tmp_path: Path, migrated_template: Path) -> None:
    scripts = tmp_path / "migrations"
    shutil.copytree(migrations_dir(), scripts)
    head = sorted(p.stem for p in (scripts / "versions").glob("*.py"))[-1].split("_")[0]
    (scripts / "versions" / "9000_broken.py").write_text(
        f'''
import sqlalchemy as sa
from alembic import op

revision = "9000"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table("half_done", sa.Column("id", sa.Integer, primary_key=True))
    op.add_column("task", sa.Column("new_col", sa.Integer, nullable=True))
    op.execute("INSERT INTO no_such_table VALUES (1)")


def downgrade():
    pass
'''
    )
    path = tmp_path / "fredica.db"
    shutil.copyfile(migrated_template, path)
    before = schema(path)
    with pytest.raises(MigrationFailed, match="rolled back"):
        open_database(path, script_location=scripts)
    assert schema(path) == before
    engine = create_sqlite_engine(path)
    assert current_revision(engine) == head
    with engine.connect() as conn:
        names = sa.inspect(conn).get_table_names()
    engine.dispose()
    assert "half_done" not in names


def test_schema_head_constant_is_alembics_head() -> None:
    from alembic.script import ScriptDirectory

    from fredica_app.database import alembic_config
    from fredica_app.dbfile import SCHEMA_HEAD

    assert ScriptDirectory.from_config(alembic_config()).get_heads() == [SCHEMA_HEAD]


def test_opening_a_current_database_does_not_load_alembic(migrated_template: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from fredica_app.database import open_database;"
        f"open_database(Path({str(migrated_template)!r})).dispose();"
        "print('alembic' in sys.modules)"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_upgrade_from_the_first_schema_keeps_the_data(tmp_path: Path) -> None:
    """A database written at revision 0001 upgrades in place, its rows intact."""
    from fredica_app.dbfile import SCHEMA_HEAD

    path = tmp_path / "old.db"
    with database_at(path, "0001") as conn:
        conn.exec_driver_sql(
            "INSERT INTO workflow_run (id, status, created_at) VALUES ('r', 'pending', 1)"
        )
        conn.exec_driver_sql(
            "INSERT INTO task (id, type, workflow_run_id, status, created_at) "
            "VALUES ('t', 'NOOP', 'r', 'pending', 1)"
        )
        conn.exec_driver_sql(
            "INSERT INTO task_event (task_id, workflow_run_id, at, kind) VALUES ('t', 'r', 1, 'x')"
        )
    assert check_database(path) == "0001"
    engine = open_database(path)
    assert current_revision(engine) == SCHEMA_HEAD
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM task_event").scalar() == 1
        names = {i["name"] for i in sa.inspect(conn).get_indexes("task_event")}
    engine.dispose()
    assert "ix_task_event_task_id" not in names and "ix_task_event_workflow_run_id" in names
