"""The change stream: every visible change numbered by SQLite, whoever writes; a reader that
follows a cursor loses none and sees none twice; heartbeats stay out of it; deletions show as
tombstones; a write by another process reaches a reader here within half a second."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from fredica_app.database import open_database
from fredica_app.dbfile import SCHEMA_HEAD
from fredica_app.services.queries import Queries
from tests.support.olddb import database_at
from tests.support.rawdb import RawDB
from workers.changes import Change, ChangeSet, RunFilter, TaskFilter, Tombstone, run_ended
from workers.db import create_sqlite_engine
from workers.errors import CursorExpired, NotFound
from workers.records import CreatedRun, RunRecord, TaskRecord
from workers.retention import RetentionPolicy
from workers.spec import parse_spec, prepare_run
from workers.states import RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry

ROOT = Path(__file__).resolve().parents[2]


async def submit(store: TaskStore, registry: TaskTypeRegistry, n: int = 2) -> CreatedRun:
    tasks: list[dict[str, Any]] = [{"key": "t0", "type": "NOOP"}]
    tasks += [{"key": f"t{i}", "type": "NOOP", "depends_on": [f"t{i - 1}"]} for i in range(1, n)]
    return await store.create_run(prepare_run(parse_spec({"tasks": tasks}), registry))


def counter(db: RawDB) -> int:
    return int(db.scalar("SELECT seq FROM change_counter"))


@dataclass
class View:
    """What a viewer holds: a snapshot, then every change set applied."""

    cursor: int = 0
    runs: dict[str, RunRecord] = field(default_factory=dict)
    tasks: dict[str, TaskRecord] = field(default_factory=dict)
    #: The number each row was last seen with.
    seqs: dict[str, int] = field(default_factory=dict)
    seen: list[int] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)

    def apply(self, changes: ChangeSet) -> None:
        for c in changes.changes:
            assert c.seq > self.cursor, (c.seq, self.cursor)  # nothing from before the cursor
            self.seen.append(c.seq)
            r = c.record
            if isinstance(r, RunRecord):
                self.runs[r.id] = r
                self.seqs[r.id] = c.seq
            elif isinstance(r, TaskRecord):
                self.tasks[r.id] = r
                self.seqs[r.id] = c.seq
            elif r.kind == "run":
                self.runs.pop(r.id, None)
                self.gone.add(r.id)
            else:
                self.tasks.pop(r.id, None)
                self.gone.add(r.id)
                self.seqs.pop(r.id, None)
        if changes.changes:
            assert changes.cursor >= changes.changes[-1].seq
        self.cursor = changes.cursor


async def drain(store: TaskStore, view: View, **kw: Any) -> None:
    while True:
        changes = await store.changes_since(view.cursor, **kw)
        view.apply(changes)
        if not changes.more:
            return


# --- what is numbered -----------------------------------------------------------------------


async def test_each_write_path_numbers_the_rows_it_changes_once(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, 2)
    first = await store.changes_since(0)
    assert [c.kind for c in first.changes] == ["run", "task", "task"]
    assert [c.seq for c in first.changes] == sorted(c.seq for c in first.changes)
    assert first.cursor == first.changes[-1].seq and not first.more

    [claim] = await store.claim("w", start=True)
    await store.report_progress(claim.id, claim.lease_token, progress=40.0)
    await store.report_progress(claim.id, claim.lease_token, progress=60.0)
    assert await store.complete(claim.id, claim.lease_token, {"ok": 1})
    changes = await store.changes_since(first.cursor)
    # Coalesced: the task that was claimed, started, moved twice and completed is one entry,
    # as it is now; so is the run; its second task, which waited for it, is ready now
    # (unmet_deps 1 -> 0: queued instead of waiting), stamped in the same transaction.
    assert {(c.kind, c.record.id) for c in changes.changes} == {
        ("task", claim.id),
        ("run", created.run_id),
        ("task", next(t.id for t in first.tasks if t.id != claim.id)),
    }
    task = changes.tasks[0]
    assert task.status is TaskStatus.COMPLETED and task.result == {"ok": 1}
    assert changes.runs[0].done_tasks == 1
    # Nothing since.
    again = await store.changes_since(changes.cursor)
    assert again.changes == () and again.cursor == changes.cursor


async def test_heartbeats_and_leases_make_no_change(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    await submit(store, registry, 1)
    await submit(store, registry, 1)
    claims = await store.claim("w", limit=2, start=True)
    ids = [c.id for c in claims]
    await store.report_progress(ids[0], claims[0].lease_token, progress=10.0, is_pausable=True)
    before = counter(raw)
    cursor = (await store.changes_since(0)).cursor
    for _ in range(5):
        await store.heartbeat("w", ids)
    await store.control_state("w", ids)
    # The same values again, and a checkpoint alone: nothing a viewer shows changed.
    await store.report_progress(ids[0], claims[0].lease_token, progress=10.0, is_pausable=True)
    await store.report_progress(ids[0], claims[0].lease_token, checkpoint={"at": 3})
    await store.release_for_shutdown([(c.id, c.lease_token) for c in claims])
    assert counter(raw) == before
    assert (await store.changes_since(cursor)).changes == ()
    # A raw statement of another program is numbered too, when it changes what is shown.
    with raw.connect() as conn:
        conn.execute("UPDATE task SET heartbeat_at = 1, lease_until = 2")
        conn.execute("UPDATE task SET status_text = 'by hand' WHERE id = ?", (ids[1],))
    changes = await store.changes_since(cursor)
    assert [(c.kind, c.record.id) for c in changes.changes] == [("task", ids[1])]
    assert changes.tasks[0].status_text == "by hand"


async def test_deletions_are_seen_as_tombstones(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, 2)
    kept = await submit(store, registry, 1)
    for _ in range(3):
        [c] = await store.claim("w")
        await store.complete(c.id, c.lease_token, {})
    cursor = await store.change_cursor()
    await store.delete_run(created.run_id)
    changes = await store.changes_since(cursor)
    gone = {(t.kind, t.id) for t in changes.deleted}
    assert gone == {("run", created.run_id)} | {("task", i) for i in created.task_ids.values()}
    assert all(isinstance(c.record, Tombstone) for c in changes.changes)
    assert [t.kind for t in changes.deleted][-1] == "run"  # its tasks go first
    # A reader of that run sees them; a reader of another run does not.
    mine = await store.changes_since(cursor, created.run_id)
    assert {t.id for t in mine.deleted} == {i for _, i in gone}
    assert (await store.changes_since(cursor, kept.run_id)).changes == ()


async def test_a_cursor_older_than_the_pruned_tombstones_expires(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, 1)
    [c] = await store.claim("w")
    await store.complete(c.id, c.lease_token, {})
    old = await store.change_cursor()
    await store.delete_run(created.run_id)
    recent = await store.change_cursor()
    policy = RetentionPolicy(keep_runs=None, keep_events=None, keep_tombstones=-1.0)
    report = await store.prune(policy)
    assert report.transactions == 1
    with pytest.raises(CursorExpired, match="new snapshot"):
        await store.changes_since(old)
    assert (await store.changes_since(recent)).changes == ()
    with pytest.raises(CursorExpired):
        await store.changes_since(recent + 1)  # ahead of this database


async def test_pages_cut_at_the_limit_lose_nothing(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    for _ in range(7):
        await submit(store, registry, 3)
    view = View()
    sets = 0
    while True:
        changes = await store.changes_since(view.cursor, limit=4)
        view.apply(changes)
        sets += 1
        assert len(changes.changes) <= 4
        if not changes.more:
            break
    assert sets >= 7
    assert len(view.runs) == 7 and len(view.tasks) == 21
    assert view.seen == sorted(set(view.seen))


async def test_snapshot_pages_filters_and_cursor(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    runs = [await submit(store, registry, 3) for _ in range(5)]
    snap = await store.snapshot(RunFilter(limit=2), TaskFilter(run_ids=[runs[0].run_id]))
    assert [r.id for r in snap.runs] == [runs[4].run_id, runs[3].run_id]  # newest first
    assert [t.key for t in snap.tasks] == ["t0", "t1", "t2"]
    assert snap.next_tasks is None and snap.next_runs is not None
    pages = [r.id for r in snap.runs]
    after = snap.next_runs
    while after is not None:
        page = await store.snapshot(RunFilter(limit=2, after=after))
        pages += [r.id for r in page.runs]
        after = page.next_runs
    assert pages == [c.run_id for c in reversed(runs)]
    # Filters; the cursor is the stream's position at the read.
    [c] = await store.claim("w", start=True)
    running = await store.snapshot(
        RunFilter(status=[RunStatus.RUNNING]), TaskFilter(status=[TaskStatus.RUNNING])
    )
    assert [r.id for r in running.runs] == [c.task.workflow_run_id]
    assert [t.id for t in running.tasks] == [c.id]
    assert running.cursor == await store.change_cursor() > snap.cursor
    with pytest.raises(NotFound):
        await store.snapshot(tasks=TaskFilter(run_ids=["nope"]))


# --- concurrency ----------------------------------------------------------------------------


def _thread_writer(url: str, seed: int, stop: threading.Event, errors: list[BaseException]) -> None:
    """Another program's raw statements: status texts and heartbeats on random tasks."""
    rng = random.Random(seed)
    db = RawDB(url)
    try:
        i = 0
        while not stop.is_set():
            i += 1
            try:
                with db.connect() as conn:
                    ids = [
                        r[0] for r in conn.execute("SELECT id FROM task ORDER BY random() LIMIT 3")
                    ]
                    for task_id in ids:
                        if rng.random() < 0.5:
                            conn.execute(
                                "UPDATE task SET status_text = ? WHERE id = ?",
                                (f"t{seed}-{i}", task_id),
                            )
                        else:
                            conn.execute(
                                "UPDATE task SET heartbeat_at = ? WHERE id = ?", (i, task_id)
                            )
            except sa.exc.OperationalError as exc:
                # PostgreSQL: without Fredica's write lock this writer may be a deadlock's
                # victim (its transaction rolled back), as any client there may be.
                if "deadlock" not in str(exc):
                    raise
            time.sleep(rng.random() * 0.01)
    except BaseException as exc:  # pragma: no cover - reported by the test
        errors.append(exc)


async def test_concurrent_writers_lose_no_change_and_repeat_none(
    database_url: str, store: TaskStore, raw: RawDB, registry: TaskTypeRegistry
) -> None:
    """Three processes write as workers and commands do (runs, claims, progress, pauses,
    outcomes, deletions) while two threads write raw statements; a reader follows the stream
    with small pages all along. At the end the reader's view is exactly the database. (On
    PostgreSQL the raw writers take no write lock: the counter's row lock alone orders their
    numbers, as concurrent transactions commit.)"""
    view = View()
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.support.changewriter",
            database_url,
            str(seed),
            "25",
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for seed in range(3)
    ]
    stop = threading.Event()
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=_thread_writer, args=(database_url, 100 + i, stop, errors))
        for i in range(2)
    ]
    for t in threads:
        t.start()
    try:
        sets = 0
        deadline = time.monotonic() + 120
        while any(p.returncode is None for p in procs):
            assert time.monotonic() < deadline, "the writers did not finish"
            changes = await store.changes_since(view.cursor, limit=25)
            view.apply(changes)
            sets += bool(changes.changes)
            await asyncio.sleep(0.005)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    for p in procs:
        out, err = await asyncio.wait_for(p.communicate(), 30)
        assert p.returncode == 0 and out.decode().strip() == "done", err.decode()
    assert not errors, errors
    await drain(store, view, limit=25)
    assert sets > 10  # the reader really ran beside the writers

    # None repeated: numbers only ever grow along the stream.
    assert view.seen == sorted(set(view.seen))
    # None lost: the view is the database, row for row, each at its last number.
    with raw.connect() as conn:
        tasks = {r["id"]: r for r in conn.execute("SELECT * FROM task").mappings()}
        runs = {r["id"]: r for r in conn.execute("SELECT * FROM workflow_run").mappings()}
        tombstones = {r[0] for r in conn.execute("SELECT row_id FROM change_tombstone")}
    assert view.tasks.keys() == tasks.keys()
    assert view.runs.keys() == runs.keys()
    for task_id, row in tasks.items():
        seen = view.tasks[task_id]
        assert (seen.status.value, seen.progress, seen.status_text, seen.is_paused) == (
            row["status"],
            row["progress"],
            row["status_text"],
            bool(row["is_paused"]),
        )
        assert view.seqs[task_id] == row["change_seq"]
    for run_id, row in runs.items():
        seen_run = view.runs[run_id]
        assert (seen_run.status.value, seen_run.done_tasks, seen_run.total_tasks) == (
            row["status"],
            row["done_tasks"],
            row["total_tasks"],
        )
        assert view.seqs[run_id] == row["change_seq"]
    assert tombstones and view.gone == tombstones


async def test_a_write_by_another_process_is_seen_within_half_a_second(
    db_path: Path, registry: TaskTypeRegistry
) -> None:
    store = TaskStore(create_sqlite_engine(db_path))
    created = await submit(store, registry, 1)
    [task_id] = created.task_ids.values()
    queries = Queries(store)
    # The other process writes a line's worth of change each time it is asked, and says
    # when its commit returned.
    code = (
        "import sqlite3, sys, time\n"
        f"conn = sqlite3.connect({str(db_path)!r}, timeout=30, isolation_level=None)\n"
        "for line in sys.stdin:\n"
        "    conn.execute('BEGIN IMMEDIATE')\n"
        "    conn.execute('UPDATE task SET status_text = ? WHERE id = ?',\n"
        f"                 (line.strip(), {task_id!r}))\n"
        "    conn.execute('COMMIT')\n"
        "    print(time.time(), flush=True)\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    delays = []
    try:
        stream = queries.follow(await queries.cursor())
        for i in range(5):
            await asyncio.sleep(random.random() * 0.3)  # anywhere in the poll's period
            proc.stdin.write(f"write {i}\n".encode())
            await proc.stdin.drain()
            changes = await asyncio.wait_for(anext(stream), 10)
            seen_at = time.time()
            committed_at = float(await asyncio.wait_for(proc.stdout.readline(), 10))
            assert [t.status_text for t in changes.tasks] == [f"write {i}"]
            delays.append(seen_at - committed_at)
        await stream.aclose()
    finally:
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 10)
        await store.close()
    assert max(delays) < 0.5, delays


async def test_follow_wakes_at_once_on_a_commit_of_this_process(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    queries = Queries(store, poll=30.0)  # no poll would come in time
    stream = queries.follow(await queries.cursor())
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.1)
    created = await submit(store, registry, 1)
    changes = await asyncio.wait_for(pending, 5)
    assert created.run_id in {r.id for r in changes.runs}
    await stream.aclose()
    assert store.commit_listeners == []


async def test_runs_follower_keeps_the_runs_tasks_current(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, 2)
    other = await submit(store, registry, 1)
    follower = Queries(store).follower([created.run_id])
    await follower.start()
    assert [t.key for t in follower.tasks[created.run_id]] == ["t0", "t1"]
    assert not await follower.wait(0.05)
    stop = asyncio.Event()
    stop.set()
    assert not await follower.wait(30, stop)  # returns at once: asked to stop
    while not follower.ended:
        got = await store.claim("w", limit=1)
        for c in got:
            await store.complete(c.id, c.lease_token, {})
        assert await follower.wait(5) or not got
    assert other.run_id not in follower.runs
    assert run_ended(follower.runs[created.run_id])
    assert store.commit_listeners == []
    with pytest.raises(NotFound):
        await Queries(store).follower(["nope"]).start()


@pytest.mark.parametrize("followed", [1, 70], ids=["named in the read", "told apart here"])
async def test_a_follower_says_which_of_its_tasks_changed_and_nothing_of_other_runs(
    store: TaskStore, registry: TaskTypeRegistry, followed: int
) -> None:
    other = await submit(store, registry, 1)  # claimed first (FIFO): its changes come first
    runs = [await submit(store, registry, 1) for _ in range(followed)]
    follower = Queries(store).follower([c.run_id for c in runs])
    await follower.start()
    assert len(follower.changed) == followed and not follower.ended
    done: list[str] = []
    while not follower.ended:
        [c] = await store.claim("w", limit=1)
        await store.complete(c.id, c.lease_token, {})
        await follower.wait(5)
        if c.task.workflow_run_id != other.run_id:
            done.append(c.id)
            assert [t.id for t in follower.changed] == [c.id]
            assert follower.changed[0].status.value == "completed"
        else:
            assert follower.changed == []
    assert done == [t.id for ts in follower.tasks.values() for t in ts]
    assert other.run_id not in follower.runs and len(follower.runs) == followed


# --- the migration --------------------------------------------------------------------------


def test_upgrading_a_0004_database_numbers_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with database_at(path, "0004") as conn:
        for r in range(2):
            conn.exec_driver_sql(
                f"INSERT INTO workflow_run (id, status, created_at) VALUES ('r{r}', 'pending', 1)"
            )
            for t in range(3):
                conn.exec_driver_sql(
                    "INSERT INTO task (id, type, workflow_run_id, status, created_at) "
                    f"VALUES ('r{r}t{t}', 'NOOP', 'r{r}', 'pending', {t})"
                )
    open_database(path).dispose()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == SCHEMA_HEAD
        seqs = [r[0] for r in conn.execute("SELECT change_seq FROM task")]
        seqs += [r[0] for r in conn.execute("SELECT change_seq FROM workflow_run")]
        top = conn.execute("SELECT seq, pruned_seq FROM change_counter").fetchone()
    assert len(set(seqs)) == 8 and min(seqs) > 0
    assert top == (max(seqs), 0)

    async def read() -> tuple[ChangeSet, list[Change]]:
        store = TaskStore(create_sqlite_engine(path))
        try:
            everything = await store.changes_since(0)
            await store.set_paused("r0t1", True)
            return everything, list((await store.changes_since(everything.cursor)).changes)
        finally:
            await store.close()

    everything, later = asyncio.run(read())
    assert len(everything.runs) == 2 and len(everything.tasks) == 6
    assert [(c.kind, c.record.id, c.seq > max(seqs)) for c in later] == [("task", "r0t1", True)]
