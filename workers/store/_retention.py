"""Retention: deleting finished runs and old timeline events, in short transactions.

A prune is a loop of small write transactions, so that it never holds the write lock for long
(an engine's turn waits for the lock behind it): each deletes a batch of finished runs with
everything that belongs to them, by set-based statements on their indexes, or a window of old
timeline events. Between two batches the writer thread takes whatever else is queued.

What goes with a run: its tasks, their ``task_dependency`` edges, their ``task_event`` rows,
their ``restart_task_log`` entries, and the run's notices. A run is deleted only when it is
finished (completed, failed or cancelled) and none of its tasks is pending, claimed or
running — a failed run can still have a task running — and only when no task of another run
depends on one of its tasks. Its tasks go before it (``task.workflow_run_id`` is ``ON DELETE
SET NULL``: deleting the run first would leave orphans).

Those batches run with foreign-key enforcement off for their transaction. ``task_event`` has
no index on ``task_id`` (every event would otherwise land on a random index page: see
migration 0002), so SQLite's ``ON DELETE CASCADE`` would scan the whole timeline once per
deleted task. The batch deletes every child row itself, by an index, before the parents, and
deletes only closed sets (whole runs, with every edge of their tasks), so nothing is left
pointing at a deleted row. Materials are not the queue's: they stay.

Deleting a task or a run leaves a tombstone for the change stream's readers (a trigger writes
it); tombstones go by age, a window of the oldest per transaction, and the counter's
``pruned_seq`` then tells a reader with an older cursor to take a new snapshot.

:meth:`RetentionMixin.delete_run` deletes one run by id, whatever its age (``fredica remove``):
the same rule, the same statements, one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import sqlalchemy as sa

from workers.errors import InvalidState, NotFound
from workers.models import task_t, worker_t
from workers.retention import PruneReport, RetentionPolicy
from workers.store._base import HELD, StoreBase

T = TypeVar("T")

#: Tasks deleted per transaction, with their edges, events and log rows: a batch takes whole
#: runs up to this many tasks; a larger run goes alone, in one transaction, as it was created.
#: Measured with bench/prune.py on a 300 MB database (docs/performance.md): 100 tasks hold the
#: write lock 3.7 ms (p50; 8 ms at most), 500 tasks 36 ms (99 ms at most: the batch no longer
#: fits SQLite's page cache).
BATCH_TASKS = 100
#: Timeline events per transaction when trimming by age (a window of event ids): 3.4 ms (p50).
EVENT_WINDOW = 5_000

_ACTIVE = "('pending', 'claimed', 'running')"

# Whether the run ``r`` can go: finished, none of its tasks is active, and no task of another
# run depends on one of its tasks. Its first term is the finished-runs index's predicate, word
# for word (SQLite then uses that partial index).
_REMOVABLE = f"""r.status IN ('completed', 'failed', 'cancelled')
  AND r.pending_tasks = 0 AND r.claimed_tasks = 0 AND r.running_tasks = 0
  AND NOT EXISTS (
      SELECT 1 FROM task AS t WHERE t.workflow_run_id = r.id AND t.status IN {_ACTIVE}
  )
  AND NOT EXISTS (
      SELECT 1 FROM task AS t
      JOIN task_dependency AS d ON d.depends_on_id = t.id
      JOIN task AS c ON c.id = d.task_id
      WHERE t.workflow_run_id = r.id AND c.workflow_run_id IS NOT r.id
  )"""

# Finished runs, oldest first, that can go.
CANDIDATE_RUNS_SQL = f"""
SELECT r.id, r.total_tasks FROM workflow_run AS r INDEXED BY ix_workflow_run_finished
WHERE {_REMOVABLE} AND r.completed_at < :cutoff
ORDER BY r.completed_at
LIMIT :limit
"""

# One run, by id, when it can go (``remove``); its status and counters when it cannot.
REMOVABLE_RUN_SQL = f"SELECT {_REMOVABLE} FROM workflow_run AS r WHERE r.id = :run"

_IN_RUNS = "(SELECT value FROM json_each(:runs))"
_RUN_TASKS = f"(SELECT id FROM task WHERE workflow_run_id IN {_IN_RUNS})"
#: What a batch of runs (``:runs``, a JSON list of ids) takes with it: (name, table, which
#: rows), every child before its parent.
RUN_ROWS = (
    ("dependencies", "task_dependency", f"task_id IN {_RUN_TASKS}"),
    ("events", "task_event", f"workflow_run_id IN {_IN_RUNS}"),
    ("restart_log", "restart_task_log", f"task_id IN {_RUN_TASKS}"),
    ("tasks", "task", f"workflow_run_id IN {_IN_RUNS}"),
    ("notices", "notice", f"workflow_run_id IN {_IN_RUNS}"),
    ("runs", "workflow_run", f"id IN {_IN_RUNS}"),
)

# Old events are deleted by windows of ids, each window's delete still checking the time:
# one transaction never walks more than a window, whatever is kept in between. The ids to
# walk are found first by a read (a scan of the timeline, on a reader thread: no lock held).
OLD_EVENT_IDS_SQL = "SELECT min(id), max(id) FROM task_event WHERE at < :cutoff"
DELETE_EVENTS_SQL = "DELETE FROM task_event WHERE id >= :lo AND id < :hi AND at < :cutoff"

# The change stream's tombstones go by age, oldest numbers first, a window per transaction;
# the counter's pruned_seq then says which cursors can no longer be answered.
TOMBSTONE_WINDOW = 5_000
OLD_TOMBSTONES_SQL = "SELECT max(seq) FROM change_tombstone WHERE deleted_at < :cutoff"
LAST_IN_WINDOW_SQL = (
    "SELECT max(seq) FROM (SELECT seq FROM change_tombstone WHERE seq <= :upto "
    "ORDER BY seq LIMIT :window) AS w"
)
DELETE_TOMBSTONES_SQL = "DELETE FROM change_tombstone WHERE seq <= :last"
PRUNED_SEQ_SQL = "UPDATE change_counter SET pruned_seq = :last WHERE id = 1 AND pruned_seq < :last"


class RetentionMixin(StoreBase):
    async def prune(
        self,
        policy: RetentionPolicy,
        *,
        dry_run: bool = False,
        batch_tasks: int = BATCH_TASKS,
        event_window: int = EVENT_WINDOW,
        tombstone_window: int = TOMBSTONE_WINDOW,
    ) -> PruneReport:
        """Delete the finished runs, the timeline events and the change stream's tombstones
        ``policy`` no longer keeps, in short write transactions (see the module's docstring);
        or, with ``dry_run``, count the runs and events that would go (one read)."""
        now = self.now()
        run_cutoff = None if policy.keep_runs is None else now - policy.keep_runs
        event_cutoff = None if policy.keep_events is None else now - policy.keep_events
        if dry_run:
            return await self._read(self._prune_count_tx, run_cutoff, event_cutoff)
        totals: Counter[str] = Counter()
        longest = 0.0
        while run_cutoff is not None:
            counts, took = await self._timed_write(
                False, self._prune_runs_tx, run_cutoff, batch_tasks
            )
            if counts is None:
                break
            totals.update(counts)
            totals["transactions"] += 1
            longest = max(longest, took)
            await self._between_batches()
        span = None
        if event_cutoff is not None:
            span = await self._read(self._old_event_ids_tx, event_cutoff)
        if span is not None:
            lo, last = span
            while lo <= last:
                hi = min(lo + event_window, last + 1)
                deleted, took = await self._timed_write(
                    True, self._prune_events_tx, lo, hi, event_cutoff
                )
                totals["old_events"] += deleted
                totals["transactions"] += 1
                longest = max(longest, took)
                lo = hi
                await self._between_batches()
        if run_cutoff is not None:
            deleted, took = await self._timed_write(True, self._prune_workers_tx, run_cutoff)
            totals["workers"] += deleted
            totals["transactions"] += 1
            longest = max(longest, took)
        upto = None
        if policy.keep_tombstones is not None:
            # Stamped by SQLite's clock, hence the system's clock here (not the store's).
            cutoff = time.time() - policy.keep_tombstones
            upto = await self._read(self._old_tombstones_tx, cutoff)
        while upto is not None:
            deleted, took = await self._timed_write(
                True, self._prune_tombstones_tx, upto, tombstone_window
            )
            totals["transactions"] += 1
            longest = max(longest, took)
            if deleted < tombstone_window:
                break
        return PruneReport(
            runs=totals["runs"],
            tasks=totals["tasks"],
            dependencies=totals["dependencies"],
            events=totals["events"],
            restart_log=totals["restart_log"],
            notices=totals["notices"],
            old_events=totals["old_events"],
            workers=totals["workers"],
            transactions=totals["transactions"],
            longest_transaction_ms=longest * 1e3,
        )

    # --- one batch of runs ----------------------------------------------------------------

    def _prune_runs_tx(
        self, conn: sa.Connection, cutoff: float, batch_tasks: int
    ) -> dict[str, int] | None:
        """Delete the next batch of finished runs: whole runs, up to ``batch_tasks`` tasks
        (at least one run). None when no run can go."""
        runs: list[str] = []
        tasks = 0
        # Read lazily: each run read costs the checks on its tasks; stop once the batch is full.
        found = self._exec(conn, CANDIDATE_RUNS_SQL, {"cutoff": cutoff, "limit": batch_tasks})
        try:
            for run_id, total in found:
                if runs and tasks + total > batch_tasks:
                    break
                runs.append(run_id)
                tasks += total
        finally:
            found.close()
        if not runs:
            return None
        return self._delete_runs(conn, runs)

    def _delete_runs(self, conn: sa.Connection, runs: list[str]) -> dict[str, int]:
        """Delete these runs with every row that belongs to them (foreign-key enforcement off:
        see the module's docstring); how many rows of each kind went."""
        params = {"runs": json.dumps(runs)}
        return {
            name: self._exec(conn, f"DELETE FROM {table} WHERE {rows}", params).rowcount
            for name, table, rows in RUN_ROWS
        }

    # --- one run, by id -------------------------------------------------------------------

    async def delete_run(self, run_id: str) -> PruneReport:
        """Delete one finished run now, whatever its age, with everything that belongs to it:
        the same rule and the same statements as a prune's batch, in one transaction.

        Raises :class:`NotFound` without the run, and :class:`InvalidState` (nothing deleted)
        when it cannot go: a task of it is still pending, claimed or running, or a task of
        another run depends on one of its tasks."""
        counts, took = await self._timed_write(False, self._delete_run_tx, run_id)
        return PruneReport(
            runs=counts["runs"],
            tasks=counts["tasks"],
            dependencies=counts["dependencies"],
            events=counts["events"],
            restart_log=counts["restart_log"],
            notices=counts["notices"],
            transactions=1,
            longest_transaction_ms=took * 1e3,
        )

    def _delete_run_tx(self, conn: sa.Connection, run_id: str) -> dict[str, int]:
        removable = self._exec(conn, REMOVABLE_RUN_SQL, {"run": run_id}).scalar()
        if removable is None:
            raise NotFound(f"no run {run_id}")
        if not removable:
            active = self._exec(
                conn,
                f"SELECT count(*) FROM task WHERE workflow_run_id = :run AND status IN {_ACTIVE}",
                {"run": run_id},
            ).scalar_one()
            if active:
                raise InvalidState(f"run {run_id} has {active} unfinished task(s): cancel it first")
            raise InvalidState(f"a task of another run depends on run {run_id}: it is kept")
        return self._delete_runs(conn, [run_id])

    # --- old events -----------------------------------------------------------------------

    def _old_event_ids_tx(self, conn: sa.Connection, cutoff: float) -> tuple[int, int] | None:
        """The first and last ids of events stamped before ``cutoff``; None when none is."""
        first, last = self._exec(conn, OLD_EVENT_IDS_SQL, {"cutoff": cutoff}).one()
        return None if first is None else (int(first), int(last))

    def _prune_events_tx(self, conn: sa.Connection, lo: int, hi: int, cutoff: float) -> int:
        return int(
            self._exec(conn, DELETE_EVENTS_SQL, {"lo": lo, "hi": hi, "cutoff": cutoff}).rowcount
        )

    # --- the change stream's tombstones -------------------------------------------------

    def _old_tombstones_tx(self, conn: sa.Connection, cutoff: float) -> int | None:
        """The highest number among tombstones older than ``cutoff``; None when none is."""
        value = self._exec(conn, OLD_TOMBSTONES_SQL, {"cutoff": cutoff}).scalar()
        return None if value is None else int(value)

    def _prune_tombstones_tx(self, conn: sa.Connection, upto: int, window: int) -> int:
        """Delete the oldest tombstones, numbered up to ``upto``, at most ``window`` of them;
        the stream then refuses a cursor below the last one deleted (it would miss them)."""
        last = self._exec(conn, LAST_IN_WINDOW_SQL, {"upto": upto, "window": window}).scalar()
        if last is None:
            return 0
        deleted = self._exec(conn, DELETE_TOMBSTONES_SQL, {"last": last}).rowcount
        self._exec(conn, PRUNED_SEQ_SQL, {"last": last})
        return int(deleted)

    # --- a dry run ------------------------------------------------------------------------

    def _prune_count_tx(
        self, conn: sa.Connection, run_cutoff: float | None, event_cutoff: float | None
    ) -> PruneReport:
        runs: list[str] = []
        if run_cutoff is not None:
            runs = [
                r[0]
                for r in self._exec(
                    conn, CANDIDATE_RUNS_SQL, {"cutoff": run_cutoff, "limit": 2**62}
                )
            ]
        params: dict[str, Any] = {"runs": json.dumps(runs)}
        counts = {
            name: self._exec(
                conn, f"SELECT count(*) FROM {table} WHERE {rows}", params
            ).scalar_one()
            for name, table, rows in RUN_ROWS
        }
        old_events = 0
        if event_cutoff is not None:
            old_events = self._exec(
                conn,
                "SELECT count(*) FROM task_event WHERE at < :cutoff AND (workflow_run_id IS NULL"
                f" OR workflow_run_id NOT IN {_IN_RUNS})",
                {"cutoff": event_cutoff, **params},
            ).scalar_one()
        workers = 0
        if run_cutoff is not None:
            workers = conn.execute(
                sa.select(sa.func.count()).select_from(worker_t).where(_gone_workers(run_cutoff))
            ).scalar_one()
        return PruneReport(**counts, old_events=old_events, workers=workers, dry_run=True)

    def _prune_workers_tx(self, conn: sa.Connection, cutoff: float) -> int:
        return conn.execute(sa.delete(worker_t).where(_gone_workers(cutoff))).rowcount

    # --- plumbing -------------------------------------------------------------------------

    async def _between_batches(self) -> None:
        """Checkpoint the WAL on a reader thread (``PASSIVE``: no lock that writers wait for),
        so that the next commit does not pay for copying the pages this batch wrote (SQLite
        checkpoints inside the commit that takes the WAL past 1,000 pages: measured up to
        ~80 ms more under the write lock)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._readers, self._checkpoint)

    def _checkpoint(self) -> None:
        if self.dialect != "sqlite":  # a server keeps its own log
            return
        raw = self._engine.raw_connection()  # no transaction open on it
        try:
            raw.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)")  # type: ignore[union-attr]
        finally:
            raw.close()

    async def _timed_write(
        self, foreign_keys: bool, fn: Callable[..., T], *args: Any
    ) -> tuple[T, float]:
        """:meth:`_write`, and how long its transaction took, in seconds. Without
        ``foreign_keys``, their enforcement is off for that transaction (see the module's
        docstring)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._writer, functools.partial(self._timed_tx, foreign_keys, fn, *args)
        )

    def _timed_tx(self, foreign_keys: bool, fn: Callable[..., T], *args: Any) -> tuple[T, float]:
        # On the writer thread, between two transactions: a pragma applies to the next one.
        driver = None
        # (PostgreSQL checks them: the rows go children first, so nothing is refused.)
        if not foreign_keys and self.dialect == "sqlite":
            driver = self._writer_conn().connection.driver_connection
            assert isinstance(driver, sqlite3.Connection)
            driver.execute("PRAGMA foreign_keys = OFF")
        try:
            t0 = time.perf_counter()
            result = self._tx(fn, *args)
            return result, time.perf_counter() - t0
        finally:
            if driver is not None:
                with contextlib.suppress(sqlite3.Error):  # a connection that broke is dropped
                    driver.execute("PRAGMA foreign_keys = ON")


def _gone_workers(cutoff: float) -> sa.ColumnElement[bool]:
    """Engines gone since before ``cutoff`` — stopped then, or silent since (a crash leaves
    its row with no stop) — that no task names as its holder."""
    holders = sa.select(task_t.c.worker_id).where(
        task_t.c.status.in_(HELD), task_t.c.worker_id.is_not(None)
    )
    return sa.and_(
        sa.func.coalesce(worker_t.c.stopped_at, worker_t.c.heartbeat_at) < cutoff,
        worker_t.c.id.not_in(holders),
    )
