"""``fredica migrate-db --to URL``: a single-machine library and its history moved to a
shared queue on PostgreSQL — verified, the SQLite file untouched — and its refusals."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from fredica_app import database_copy
from fredica_app.cli import main
from fredica_app.lock import DataDirLock
from fredica_app.paths import resolve_paths
from tests.support import postgres
from tests.support.rawdb import RawDB

TABLES = ("material", "workflow_run", "task", "task_dependency", "task_event", "notice")


@pytest.fixture
def pg(postgres_database: postgres.PostgresDatabase) -> str:
    postgres_database.reset()
    return postgres_database.url


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def library(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A data directory with a material, two finished runs and their history."""
    data = tmp_path / "data"
    code, _, err = fredica(capsys, data, "process", "--sample", "--template", "extract_audio")
    assert code == 0, err
    code, _, err = fredica(capsys, data, "demo")
    assert code == 0, err
    return data


def counts_sqlite(path: Path) -> dict[str, int]:
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def counts_pg(url: str) -> dict[str, int]:
    raw = RawDB(url)
    return {t: int(raw.scalar(f"SELECT count(*) FROM {t}")) for t in TABLES}


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def test_a_library_moves_to_postgresql_verified_and_the_file_stays_as_it_was(
    library: Path, pg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = library / "fredica.db"
    before, want = fingerprint(db), counts_sqlite(db)
    code, out, err = fredica(capsys, library, "runs", "--json")
    runs_before = json.loads(out)
    code, out, err = fredica(capsys, library, "migrate-db", "--to", pg)
    assert code == 0, err
    assert "verified: the same counts and checksums on both sides" in out
    assert "now uses it" in out
    assert fingerprint(db) == before  # not a byte, not its time
    assert counts_pg(pg) == want and want["task"] >= 6
    settings = json.loads((library / "settings.json").read_text())
    assert settings["database_url"] == pg
    # This data directory now works on the shared queue: the same runs, and new work.
    code, out, err = fredica(capsys, library, "runs", "--json")
    assert json.loads(out) == runs_before
    code, out, err = fredica(capsys, library, "demo")
    assert code == 0, err
    assert counts_pg(pg)["workflow_run"] == want["workflow_run"] + 1
    assert fingerprint(db) == before


def test_a_queue_in_the_target_is_never_merged_into(
    library: Path, pg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert fredica(capsys, library, "migrate-db", "--to", pg)[0] == 0
    (library / "settings.json").unlink()
    code, _, err = fredica(capsys, library, "migrate-db", "--to", pg)
    assert code == 1 and "already holds a queue" in err


def test_refused_while_an_engine_runs_on_either_side(
    library: Path, pg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = DataDirLock(resolve_paths(library).engine_lock).acquire()
    try:
        code, _, err = fredica(capsys, library, "migrate-db", "--to", pg)
    finally:
        lock.release()
    assert code == 1 and "already running" in err
    with RawDB(pg).connect() as conn:  # another host's engine, alive
        conn.execute(
            "INSERT INTO worker (id, host, home_id, pid, build, slots, task_types, draining, "
            "started_at, heartbeat_at) VALUES ('gpu-box:1:ab', 'gpu-box', 'h', 1, '', '{}', "
            "'{}', false, extract(epoch FROM now()), extract(epoch FROM now()))"
        )
    code, _, err = fredica(capsys, library, "migrate-db", "--to", pg)
    assert code == 1 and "an engine runs on" in err and "gpu-box:1:ab" in err
    assert counts_pg(pg) == dict.fromkeys(TABLES, 0)
    assert not (library / "settings.json").exists()


def test_a_copy_that_does_not_check_out_is_rolled_back_whole(
    library: Path, pg: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = database_copy._checksum
    seen: list[str] = []

    def off_by_one_on_the_target(rows: Any, table: Any) -> tuple[int, str]:
        n, digest = real(rows, table)
        seen.append(table.name)
        if table.name == "task_event" and seen.count("task_event") == 2:
            return n - 1, digest  # as if a row were lost on the way
        return n, digest

    monkeypatch.setattr(database_copy, "_checksum", off_by_one_on_the_target)
    code, _, err = fredica(capsys, library, "migrate-db", "--to", pg)
    assert code == 1 and "the copy of task_event differs from the source" in err
    assert counts_pg(pg) == dict.fromkeys(TABLES, 0)  # nothing kept
    assert not (library / "settings.json").exists()
