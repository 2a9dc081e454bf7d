"""Shared fixtures. Every test gets its own real SQLite file, copied from a database migrated
once per session (migrating costs ~100 ms; a copy, a millisecond)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from fredica_app.database import open_database
from python_endpoints.serving import reaper
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN
from tests.support import deb_tests, postgres
from tests.support.httpserver import HTTPTestServer
from tests.support.rawdb import RawDB
from workers.db import create_engine_for_url, create_sqlite_engine, sqlite_url
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry, builtin_registry


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test ever touches the user's real folders."""
    monkeypatch.setenv("FREDICA_DATA_DIR", str(tmp_path / "fredica-data"))


@pytest.fixture(autouse=True)
def _pytest_adopts_no_orphans() -> Iterator[None]:
    """A test that runs the endpoints server's ``main`` in-process could leave pytest a
    subreaper: every orphan after it would be pytest's child (a zombie, never reaped) and the
    tests that look for leftover children would see them. Such a test fails, and the flag is
    cleared for the tests after it."""
    yield
    if reaper.is_subreaper():
        reaper.become_subreaper(False)
        pytest.fail("the test left pytest a subreaper (it adopts every orphan after it)")


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "fredica.db"
    open_database(path).dispose()
    with sqlite3.connect(path) as conn:  # fold the WAL in, so that copying the file is enough
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


@pytest.fixture
def db_path(tmp_path: Path, migrated_template: Path) -> Iterator[Path]:
    path = tmp_path / "fredica.db"
    shutil.copyfile(migrated_template, path)
    yield path


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[TaskStore]:
    s = TaskStore(create_sqlite_engine(db_path))
    yield s
    await s.close()


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[postgres.PostgresDatabase]:
    """A migrated database of this run's own on the test PostgreSQL server."""
    why = postgres.unavailable()
    if why is not None:
        pytest.skip(why)
    yield from postgres.session_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """The store's two backends: a test that asks for :func:`database_url` runs on both."""
    return str(request.param)


@pytest.fixture
def database_url(backend: str, request: pytest.FixtureRequest) -> str:
    """The URL of this test's own migrated, empty queue database, on each backend."""
    if backend == "sqlite":
        return sqlite_url(request.getfixturevalue("db_path"))
    pg: postgres.PostgresDatabase = request.getfixturevalue("postgres_database")
    pg.reset()
    return pg.url


@pytest.fixture
def raw(database_url: str) -> RawDB:
    """A plain connection of another program to this test's database (either backend)."""
    return RawDB(database_url)


@pytest.fixture
async def make_store(database_url: str) -> AsyncIterator[Callable[..., TaskStore]]:
    """Opens stores (more than one if a test needs them) on this test's database."""
    opened: list[TaskStore] = []

    def make(**kwargs: Any) -> TaskStore:
        s = TaskStore(create_engine_for_url(database_url), **kwargs)
        opened.append(s)
        return s

    yield make
    for s in opened:
        await s.close()


@pytest.fixture
def registry() -> TaskTypeRegistry:
    return builtin_registry()


@pytest.fixture
def http() -> Iterator[HTTPTestServer]:
    """A local HTTP server on 127.0.0.1 that tests fill with routes."""
    with HTTPTestServer() as server:
        yield server


@pytest.fixture
async def endpoints() -> AsyncIterator[int]:
    """A real endpoints server on 127.0.0.1:0; its port."""
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()
    yield port
    await srv.close()


#: The tests that use the .deb: its build starts when they are collected.
DEB_TESTS = "tests/packaging/test_deb_install.py::"


def pytest_collection_finish(session: pytest.Session) -> None:
    """When the .deb's tests are to run, start its build now, beside the other tests."""
    if session.config.option.collectonly or not deb_tests.can_build():
        return
    if any(item.nodeid.startswith(DEB_TESTS) for item in session.items):
        folder = Path(tempfile.mkdtemp(prefix="fredica-deb-build-"))
        session.config.stash[deb_tests.BUILD] = deb_tests.start_build(folder)


def pytest_sessionfinish(session: pytest.Session) -> None:
    build = session.config.stash.get(deb_tests.BUILD, None)
    if build is not None:
        build.stop()
        shutil.rmtree(build.folder.parent, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say it loudly when speech tests were skipped for want of eSpeak NG (see README)."""
    from tests.support.voices import ESPEAK

    skipped = [
        r for r in terminalreporter.stats.get("skipped", []) if "espeak-ng" in str(r.longrepr)
    ]
    without_pg = [
        r
        for r in terminalreporter.stats.get("skipped", [])
        if "PostgreSQL is not reachable" in str(r.longrepr)
    ]
    if without_pg:
        terminalreporter.write_sep(
            "!",
            f"{len(without_pg)} tests skipped: PostgreSQL is not reachable "
            f"({postgres.server_url()}; set FREDICA_TEST_PG_URL, or start the server; "
            ".ci/run requires it)",
            yellow=True,
        )
    if skipped and ESPEAK is None:
        terminalreporter.write_sep(
            "!",
            f"{len(skipped)} speech tests skipped: espeak-ng is not installed "
            "(apt install espeak-ng; .ci/run installs it)",
            yellow=True,
        )
