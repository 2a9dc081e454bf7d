"""What only PostgreSQL has to show: its schema from the migrations, the write lock, the claim
that passes over a locked row, the database's clock, and a connection lost between
transactions. (Everything else the store does is the conformance suite: tests/store and
tests/engine run on both backends.)"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from fredica_app.database import metadata, migrate
from tests.support import postgres
from tests.support.rawdb import RawDB
from workers.db import WRITE_LOCK_KEY, create_postgres_engine, redact_url
from workers.spec import parse_spec, prepare_run
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


@pytest.fixture
def pg(postgres_database: postgres.PostgresDatabase) -> str:
    postgres_database.reset()
    return postgres_database.url


@pytest.fixture
async def pg_store(pg: str) -> Any:
    s = TaskStore(create_postgres_engine(pg))
    yield s
    await s.close()


async def submit(store: TaskStore, registry: TaskTypeRegistry, n: int) -> list[str]:
    spec = {"tasks": [{"key": f"t{i}", "type": "NOOP"} for i in range(n)]}
    created = await store.create_run(prepare_run(parse_spec(spec), registry))
    return [created.task_ids[f"t{i}"] for i in range(n)]


@pytest.fixture
def fresh_database() -> Iterator[tuple[str, sa.Engine]]:
    """An empty database of its own (the schema tests make theirs)."""
    why = postgres.unavailable()
    if why is not None:
        pytest.skip(why)
    admin = sa.create_engine(
        postgres.server_url(), isolation_level="AUTOCOMMIT", poolclass=sa.NullPool
    )
    name = f"fredica_schema_{time.monotonic_ns()}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = sa.make_url(postgres.server_url()).set(database=name)
    try:
        yield url.render_as_string(hide_password=False), admin
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def _pg_schema(engine: sa.Engine) -> dict[str, Any]:
    with engine.connect() as conn:
        triggers = {
            r[0]: r[1]
            for r in conn.exec_driver_sql(
                "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal"
            )
        }
        functions = {
            r[0]: r[1]
            for r in conn.exec_driver_sql(
                "SELECT proname, prosrc FROM pg_proc WHERE starts_with(proname, 'fredica')"
            )
        }
        indexes = {
            r[0]: r[1]
            for r in conn.exec_driver_sql(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' "
                "AND tablename <> 'alembic_version'"
            )
        }
        columns = {
            (r[0], r[1]): r[2:]
            for r in conn.exec_driver_sql(
                "SELECT table_name, column_name, data_type, is_nullable, column_default "
                "FROM information_schema.columns WHERE table_schema = 'public' "
                "AND table_name <> 'alembic_version'"
            )
        }
    return {"triggers": triggers, "functions": functions, "indexes": indexes, "columns": columns}


def test_the_migrations_give_the_models_schema_on_postgresql(
    fresh_database: tuple[str, sa.Engine],
) -> None:
    url, admin = fresh_database
    engine = create_postgres_engine(url)
    migrate(engine)
    migrated = _pg_schema(engine)
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    engine.dispose()
    assert diff == []
    # And the models' own create_all makes the same tables, indexes, triggers and functions.
    name = sa.make_url(url).database
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}_m"')
    try:
        modelled = create_postgres_engine(sa.make_url(url).set(database=f"{name}_m"))
        metadata.create_all(modelled)
        want = _pg_schema(modelled)
        modelled.dispose()
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}_m" WITH (FORCE)')
    assert migrated == want
    assert migrated["columns"]["task", "payload"][0] == "jsonb"
    assert migrated["columns"]["task", "is_paused"][0] == "boolean"
    assert "WHERE" in migrated["indexes"]["ix_task_claimable"]  # partial, as on SQLite
    assert len(migrated["triggers"]) == 7


async def test_writers_are_serialized_by_the_write_lock(
    pg_store: TaskStore, pg: str, registry: TaskTypeRegistry
) -> None:
    """While another holder has the write lock, a store's write waits at its start (as a
    second SQLite writer waits at BEGIN IMMEDIATE), and goes on once it is let go."""
    await submit(pg_store, registry, 1)
    holder = sa.create_engine(pg, poolclass=sa.NullPool)
    conn = holder.connect()
    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})")
    claim = pg_store.claim("w")
    task = asyncio.ensure_future(claim)
    await asyncio.sleep(0.5)
    assert not task.done()
    conn.rollback()
    conn.close()
    holder.dispose()
    assert len(await task) == 1


async def test_a_stopped_holder_of_the_write_lock_does_not_stall_the_queue(
    pg_store: TaskStore, pg: str, registry: TaskTypeRegistry
) -> None:
    """A process stopped in the middle of a write transaction (SIGSTOP, a frozen VM) holds
    the write lock every host waits for; the server ends its session once it has sat idle in
    its transaction past the limit Fredica sets, and the queue goes on."""
    await submit(pg_store, registry, 1)
    frozen = create_postgres_engine(pg, idle_in_transaction_ms=1000)
    conn = frozen.connect()
    conn.begin()  # takes the write lock (the begin hook), then sits idle: "stopped"
    started = time.monotonic()
    assert len(await asyncio.wait_for(pg_store.claim("w"), 30)) == 1
    assert 0.8 < time.monotonic() - started < 10
    with pytest.raises(sa.exc.DBAPIError, match="idle-in-transaction"):  # its session ended
        conn.exec_driver_sql("SELECT 1")
    conn.invalidate()
    frozen.dispose()


async def test_the_claim_passes_over_a_row_another_transaction_holds(
    pg_store: TaskStore, pg: str, registry: TaskTypeRegistry
) -> None:
    ids = await submit(pg_store, registry, 2)
    holder = sa.create_engine(pg, poolclass=sa.NullPool)
    with holder.connect() as conn:
        conn.exec_driver_sql("SELECT id FROM task WHERE id = %(id)s FOR UPDATE", {"id": ids[0]})
        started = time.monotonic()
        [claimed] = await pg_store.claim("w")
        assert claimed.id == ids[1]  # the head is locked: skipped, not waited for
        assert time.monotonic() - started < 2
        conn.rollback()
    holder.dispose()
    [then] = await pg_store.claim("w")
    assert then.id == ids[0]


async def test_times_come_from_the_database_clock_not_the_hosts(
    pg: str, registry: TaskTypeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose wall clock is an hour off stamps claims and leases by the database's."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)
    store = TaskStore(create_postgres_engine(pg), lease_seconds=30)
    try:
        await submit(store, registry, 1)
        [claimed] = await store.claim("w")
        raw = RawDB(pg)
        db_now = float(raw.scalar("SELECT extract(epoch FROM clock_timestamp())"))
        task = await store.get_task(claimed.id)
        assert task.claimed_at is not None and task.lease_until is not None
        assert abs(task.claimed_at - db_now) < 5
        assert task.lease_until - task.claimed_at == pytest.approx(30, abs=0.01)
    finally:
        await store.close()


async def test_a_connection_lost_between_transactions_is_replaced(
    pg_store: TaskStore, pg: str, registry: TaskTypeRegistry
) -> None:
    """The server ended the store's connection (a restart, an idle timeout): the next write
    runs on a new one, and nothing is written twice."""
    await submit(pg_store, registry, 2)
    raw = RawDB(pg)
    killed = raw.scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    assert killed >= 1
    claimed = await pg_store.claim("w", limit=5)
    assert len(claimed) == 2
    assert raw.scalar("SELECT count(*) FROM task_event WHERE kind = 'claimed'") == 2


def test_credentials_are_never_shown() -> None:
    url = "postgresql+psycopg://fredica:s3cret@db.example:5432/queue?sslmode=verify-full"
    shown = redact_url(url)
    assert "s3cret" not in shown and "***" in shown and "sslmode=verify-full" in shown
    assert "s3cret" not in redact_url("postgresql://db.example/queue?password=s3cret")


def test_many_threads_get_one_clock(pg_store: TaskStore) -> None:
    """The store's clock is strictly increasing whichever thread asks (each write
    transaction reads the database's clock again)."""
    seen: list[float] = []
    lock = threading.Lock()

    def take(n: int, into: Callable[[float], None]) -> None:
        for _ in range(n):
            into(pg_store.now())

    def add(t: float) -> None:
        with lock:
            seen.append(t)

    threads = [threading.Thread(target=take, args=(500, add)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == len(seen) == 2000


def test_a_newer_build_upgrades_a_shared_queue_only_once_older_engines_stopped() -> None:
    """An upgrade of a shared queue waits for the engines of an older build still on it
    (they may not run on the new schema): one line naming them, nothing changed; once they
    stopped, the newer build upgrades it."""
    from alembic import command

    from fredica_app.database import alembic_config, current_revision, open_shared_database
    from fredica_app.dbfile import SCHEMA_HEAD
    from fredica_app.errors import UpgradeWaits

    why = postgres.unavailable()
    if why is not None:
        pytest.skip(why)
    db = postgres.create_database()
    try:
        engine = create_postgres_engine(db.url)
        cfg = alembic_config()
        with engine.begin() as conn:  # as an older build left it
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0010")
        with RawDB(db.url).connect() as conn:
            conn.execute(
                "INSERT INTO worker (id, host, home_id, pid, build, slots, task_types, "
                "draining, started_at, heartbeat_at) VALUES ('nas:7:ab', 'nas', 'h', 7, "
                "'0.0.9', '{}', '{}', false, extract(epoch FROM now()), "
                "extract(epoch FROM now()))"
            )
        with pytest.raises(UpgradeWaits, match=r"nas:7:ab \(0\.0\.9\).*fredica drain"):
            open_shared_database(db.url)
        assert current_revision(engine) == "0010"  # nothing changed
        with RawDB(db.url).connect() as conn:
            conn.execute("UPDATE worker SET stopped_at = extract(epoch FROM now())")
        open_shared_database(db.url).dispose()
        assert current_revision(engine) == SCHEMA_HEAD
        engine.dispose()
    finally:
        db.drop()
