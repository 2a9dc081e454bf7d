"""The database under stress while an engine runs on it, with real files and a real second
process: locked by another program past the busy timeout, made read-only by a read-only
mount, deleted, replaced. Each ends with one clear message and no damage: what passes by
itself is waited out, the rest stops the engine before it writes anything wrong."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.engine.test_engine import engine_for, submit, wait_until
from tests.support.host import read_only_mount
from tests.support.invariants import completed_events, queue_problems
from workers.db import create_sqlite_engine
from workers.errors import StoreUnavailable
from workers.events import EngineHeld, Event
from workers.states import RunStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry

SLEEPS = [{"key": f"s{i}", "type": "SLEEP", "payload": {"seconds": 0.3}} for i in range(8)]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_lock_kept_past_the_busy_timeout_is_waited_out(
    db_path: Path, registry: TaskTypeRegistry
) -> None:
    """Another process takes the database's write lock and keeps it for 3 s, six times the
    engine's busy timeout here: the engine says it waits and why, runs nothing new, then goes
    on when the lock is let go; each task completed once."""
    store = TaskStore(create_sqlite_engine(db_path, busy_timeout_ms=500))
    try:
        created = await submit(store, registry, SLEEPS)
        engine = engine_for(store, max_workers=2)
        events: list[Event] = []
        engine.bus.subscribe(events.append)
        await engine.start()
        run = asyncio.create_task(engine.run(until_idle=True))
        await wait_until(lambda: len(engine.running_ids) > 0)
        holder = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sqlite3, sys, time
                c = sqlite3.connect({str(db_path)!r}, isolation_level=None)
                c.execute("BEGIN IMMEDIATE")
                print("locked", flush=True)
                time.sleep(3)
                c.execute("ROLLBACK")
                """
            ),
            stdout=asyncio.subprocess.PIPE,
        )
        assert holder.stdout is not None
        assert (await holder.stdout.readline()).strip() == b"locked"
        await wait_until(lambda: engine.held is not None, within=15)
        assert "locked for longer than the timeout" in str(engine.held)
        assert not run.done()
        assert await asyncio.wait_for(holder.wait(), 30) == 0
        await asyncio.wait_for(run, 60)
        assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED
        assert sorted(completed_events(db_path).values()) == [1] * len(SLEEPS)
        assert queue_problems(db_path) == []
        held = [e.reason for e in events if isinstance(e, EngineHeld)]
        assert held[-1] is None and len(held) == 2, held
    finally:
        await store.close()


async def test_a_database_mounted_read_only_under_the_engine_loses_nothing(
    tmp_path: Path, db_path: Path, registry: TaskTypeRegistry
) -> None:
    """The folder of the database bound read-only while the engine runs (root ignores file
    modes: a mount it cannot ignore). The kernel lets files opened before go on being
    written, so the running engine finishes its work; what opens the database anew is
    refused at once with "cannot be written" and changes nothing (the file byte for byte)."""
    folder = tmp_path / "db"
    folder.mkdir()
    path = folder / "fredica.db"
    shutil.copyfile(db_path, path)
    store = TaskStore(create_sqlite_engine(path))
    created = await submit(store, registry, SLEEPS)
    engine = engine_for(store, max_workers=2)
    await engine.start()
    run = asyncio.create_task(engine.run(until_idle=True))
    await wait_until(lambda: len(engine.running_ids) > 0)
    with read_only_mount(folder):
        await asyncio.wait_for(run, 30)
        assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED
        await engine.stop()
        await store.close()
        before = digest(path)
        again = TaskStore(create_sqlite_engine(path))
        try:
            with pytest.raises(StoreUnavailable, match=r"readonly|read-only|cannot be written"):
                await engine_for(again).start()  # recovery is its first write
        finally:
            await again.close()
        assert digest(path) == before
    assert sorted(completed_events(path).values()) == [1] * len(SLEEPS)
    assert queue_problems(path) == []


def test_fredica_worker_on_a_read_only_data_directory_says_so_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    spec = tmp_path / "spec.json"
    spec.write_text('{"tasks": [{"key": "a", "type": "NOOP"}]}')
    cli = [sys.executable, "-m", "fredica_app.cli", "--data-dir", str(data)]
    subprocess.run([*cli, "submit", str(spec)], check=True, capture_output=True, timeout=60)
    before = digest(data / "fredica.db")
    with read_only_mount(data):
        done = subprocess.run(
            [*cli, "worker", "--until-idle"], capture_output=True, text=True, timeout=60
        )
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "Traceback" not in done.stderr, done.stderr
    assert any("cannot be written" in line or "read-only" in line for line in lines), lines
    assert len(lines) <= 2, lines
    assert digest(data / "fredica.db") == before


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_database_deleted_or_replaced_under_the_engine_stops_it_untouched(
    tmp_path: Path, db_path: Path, registry: TaskTypeRegistry, how: str
) -> None:
    """Before: the engine went on writing into the deleted file (which no one could open
    again), and over a replaced one it went on with the old file's state. Now its next write
    or look says so, and it stops; a file put in its place is left byte for byte."""
    folder = tmp_path / "db"
    folder.mkdir()
    path = folder / "fredica.db"
    shutil.copyfile(db_path, path)
    other = tmp_path / "other.db"  # another Fredica database (a backup restored, say)
    shutil.copyfile(db_path, other)
    store = TaskStore(create_sqlite_engine(path))
    try:
        await submit(store, registry, SLEEPS)
        engine = engine_for(store, max_workers=2)
        await engine.start()
        run = asyncio.create_task(engine.run(until_idle=True))
        await wait_until(lambda: len(engine.running_ids) > 0)
        for name in ("fredica.db", "fredica.db-wal", "fredica.db-shm"):
            (folder / name).unlink(missing_ok=True)
        if how == "replaced":
            os.replace(other, path)
            before = digest(path)
        with pytest.raises(StoreUnavailable, match=f"was {how}") as caught:
            await asyncio.wait_for(run, 30)
        assert "start it again" in str(caught.value)
        assert not engine.running_ids
        await engine.stop()
        if how == "replaced":
            assert digest(path) == before
            assert (
                not (folder / "fredica.db-wal").exists()
                or not (folder / "fredica.db-wal").stat().st_size
            )
        else:
            assert not path.exists()
    finally:
        await store.close()
