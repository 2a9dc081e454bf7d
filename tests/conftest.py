"""Shared fixtures. Every test gets its own real SQLite file, copied from a database migrated
once per session (migrating costs ~100 ms; a copy, a millisecond)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from fredica_app.database import open_database
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN
from tests.support.httpserver import HTTPTestServer
from workers.db import create_sqlite_engine
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry, builtin_registry


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test ever touches the user's real folders."""
    monkeypatch.setenv("FREDICA_DATA_DIR", str(tmp_path / "fredica-data"))


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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say it loudly when speech tests were skipped for want of eSpeak NG (see README)."""
    from tests.support.voices import ESPEAK

    skipped = [
        r for r in terminalreporter.stats.get("skipped", []) if "espeak-ng" in str(r.longrepr)
    ]
    if skipped and ESPEAK is None:
        terminalreporter.write_sep(
            "!",
            f"{len(skipped)} speech tests skipped: espeak-ng is not installed "
            "(apt install espeak-ng; .ci/run installs it)",
            yellow=True,
        )
