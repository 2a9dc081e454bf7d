"""``fredica runs`` answered from a plain read of the database (:mod:`fredica_app.cli.quick`):
the same records as the stores give, without the app's stack, and the usual way whenever the
file is not plainly readable (missing, foreign, another schema, damaged)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fredica_app.cli import main
from fredica_app.dbfile import open_current
from fredica_app.library import quick as library_quick
from fredica_app.services import Fredica
from tests.support.apps import opened_app, submit_chain
from workers.changes import RunFilter
from workers.states import ErrorType
from workers.store import quick as queue_quick


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Fredica]:
    async with opened_app(tmp_path / "data") as app:
        yield app


async def _runs_of_every_kind(app: Fredica) -> list[str]:
    """A completed run with a material (one of its tasks left a note), a failed one (its
    second task cancelled by the cascade), one with a held task, one running part-way, one
    not started."""
    film = app.library.add(source="/media/Film.mkv", title="Film", local_path=None, kind="video")
    talk = app.library.add(source="/media/Talk.mkv", title="Talk", local_path=None, kind="video")
    store = app.store
    done = await submit_chain(app, film.id, "a", "b", "c")
    for note in ("the input is shorter than its header claims", "", None):  # one note only
        [c] = await store.claim("w", limit=1)
        await store.complete(c.id, c.lease_token, {"note": note})
    failed = await submit_chain(app, talk.id, "a", "b")
    [c] = await store.claim("w", limit=1)
    await store.fail(c.id, c.lease_token, "broken", ErrorType.PAYLOAD_ERROR)
    held = await submit_chain(app, None, "a", "b")
    first, _ = await store.list_tasks(held)
    assert await store.set_paused(first.id, True)
    running = await submit_chain(app, film.id, "a", "b", "c")
    [c] = await store.claim("w", limit=1, start=True)
    assert c.task.workflow_run_id == running
    assert await store.report_progress(c.id, c.lease_token, progress=40.0)
    fresh = await submit_chain(app, "gone", "a")  # a material id the library does not hold
    return [done, failed, held, running, fresh]


async def test_the_plain_read_gives_what_the_stores_give(app: Fredica) -> None:
    ids = await _runs_of_every_kind(app)
    runs = await app.store.list_runs()
    progress = await app.store.run_progress(ids)
    titles = app.library.titles({r.material_id for r in runs if r.material_id})
    with open_current(app.paths.database) as conn:
        assert conn is not None
        assert queue_quick.run_page(conn, RunFilter()) == (runs, None, 0)
        page, key, more = queue_quick.run_page(conn, RunFilter(limit=2))
        assert (page, key, more) == (runs[:2], (runs[1].created_at, runs[1].id), 3)
        assert queue_quick.run_progress(conn, ids) == progress
        assert library_quick.titles(conn, {r.material_id for r in runs if r.material_id}) == titles
    # What the comparison stands on: the runs differ in what the read computes.
    assert {r.status.value for r in runs} == {"completed", "failed", "pending", "running"}
    assert sorted(titles.values()) == ["Film", "Talk"]
    assert progress[ids[2]].held == 1 and progress[ids[1]].live_tasks == 0
    assert progress[ids[0]].notes == 1 and progress[ids[3]].notes == 0
    assert progress[ids[3]].progress_sum == 40.0 and progress[ids[3]].started_at is not None


async def test_many_runs_are_read_in_chunks(app: Fredica) -> None:
    ids = [await submit_chain(app, None, "a") for _ in range(3)]
    with open_current(app.paths.database) as conn:
        assert conn is not None
        queue_quick._CHUNK, kept = 2, queue_quick._CHUNK
        try:
            assert queue_quick.run_progress(conn, ids) == await app.store.run_progress(ids)
        finally:
            queue_quick._CHUNK = kept


PROBE = """
import json, sys
from fredica_app.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_runs_answers_without_the_apps_stack(tmp_path: Path) -> None:
    data = tmp_path / "d"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"tasks": [{"key": "a", "type": "NOOP"}]}))
    assert main(["--data-dir", str(data), "submit", str(spec)]) == 0
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "--data-dir", str(data), "runs"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    *table, last = done.stdout.strip().splitlines()
    probe = json.loads(last)
    assert probe["code"] == 0 and len(table) == 2 and " pending " in table[1]
    heavy = {"sqlalchemy", "pydantic", "asyncio", "alembic", "fredica_app.services"}
    assert not heavy & set(probe["modules"])


def _migrated(tmp_path: Path) -> Path:
    data = tmp_path / "d"
    assert main(["--data-dir", str(data), "runs"]) == 0  # creates and migrates the file
    return data / "fredica.db"


def _set_revision(db: Path, revision: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (revision,))
    conn.close()


def _set_app_id(db: Path, app_id: int) -> None:
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA application_id = {app_id}")
    conn.close()


@pytest.mark.parametrize(
    "spoil",
    [
        lambda db: db.unlink(),
        lambda db: db.write_bytes(b""),
        lambda db: db.write_bytes(b"not a database at all"),
        lambda db: _set_app_id(db, 0x12345678),
        lambda db: _set_revision(db, "0005"),
        lambda db: _set_revision(db, "9999"),
    ],
    ids=["missing", "empty", "not-sqlite", "another-app", "older-schema", "newer-schema"],
)
def test_a_file_not_plainly_readable_is_left_to_the_usual_way(tmp_path: Path, spoil) -> None:  # type: ignore[no-untyped-def]
    db = _migrated(tmp_path)
    with open_current(db) as conn:
        assert conn is not None  # the file as migrated is read plainly
    spoil(db)
    with open_current(db) as conn:
        assert conn is None


def test_a_newer_schema_is_still_refused_with_its_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _migrated(tmp_path)
    _set_revision(db, "9999")
    capsys.readouterr()
    assert main(["--data-dir", str(db.parent), "runs"]) == 1
    assert "newer version of Fredica" in capsys.readouterr().err


def test_damage_met_while_reading_is_reported_by_the_usual_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"material_id": "m1", "tasks": [{"key": "a", "type": "NOOP"}]}))
    assert main(["--data-dir", str(data), "submit", str(spec)]) == 0
    with sqlite3.connect(data / "fredica.db") as conn:  # the schema says current, is not
        conn.execute("DROP TABLE material")
    conn.close()
    capsys.readouterr()
    assert main(["--data-dir", str(data), "runs"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fredica: error: the database cannot be read") and "doctor" in err
    assert "Traceback" not in err
