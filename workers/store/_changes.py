"""The change stream's reads: what changed since a cursor, and snapshots with their cursor.

SQLite keeps the stream (workers.models, "the change stream"): triggers stamp every visible
change of a task or a run with the next number of the one-row counter, and leave a tombstone
for a deleted row. A reader asks for rows stamped after its cursor, on the ``change_seq``
indexes; with nothing new, that is one read of the counter's row.

Why nothing is missed: writers are serialized (``BEGIN IMMEDIATE``), so a transaction that
commits later than another also drew its numbers later; a read transaction sees a prefix of
the commits, and the counter's value in it is the highest number any of them drew. Reading the
rows stamped after the cursor and the counter in one read transaction, and answering the
counter as the next cursor, leaves nothing behind it that a later commit could still stamp.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Collection
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from workers.changes import (
    Change,
    ChangeSet,
    PageKey,
    RunFilter,
    Snapshot,
    TaskFilter,
    Tombstone,
)
from workers.errors import CursorExpired, NotFound
from workers.models import run_t, task_t
from workers.records import RunRecord, TaskRecord
from workers.store._base import StoreBase, _task_record

COUNTER_SQL = "SELECT seq, pruned_seq FROM change_counter WHERE id = 1"

_IN_RUNS = "(SELECT value FROM json_each(:runs))"


def _columns(table: sa.Table) -> str:
    return ", ".join(f'"{c.name}"' for c in table.c)


# Every column named, in the table's order: the text's result columns are typed positionally
# by the table's (JSON, booleans, statuses). INDEXED BY: with a run filter the planner would
# rather walk all of the run's tasks; the rows stamped after a recent cursor are few, whatever
# the size of the run.
TASKS_SINCE = (
    f"SELECT {_columns(task_t)} FROM task INDEXED BY ix_task_change_seq "
    "WHERE change_seq > :cursor{runs} ORDER BY change_seq LIMIT :limit"
)
RUNS_SINCE = (
    f"SELECT {_columns(run_t)} FROM workflow_run INDEXED BY ix_workflow_run_change_seq "
    "WHERE change_seq > :cursor{runs} ORDER BY change_seq LIMIT :limit"
)
TOMBSTONES_SINCE = (
    "SELECT seq, kind, row_id, workflow_run_id, deleted_at FROM change_tombstone "
    "WHERE seq > :cursor{runs} ORDER BY seq LIMIT :limit"
)


class ChangesMixin(StoreBase):
    async def change_cursor(self) -> int:
        """The stream's position now: following from it shows what changes from now on."""
        return await self._read(self._cursor_tx)

    def _cursor_tx(self, conn: sa.Connection) -> int:
        return int(self._exec(conn, COUNTER_SQL).one()[0])

    async def changes_since(
        self,
        cursor: int,
        run_id: str | Collection[str] | None = None,
        *,
        limit: int = 1000,
    ) -> ChangeSet:
        """The runs and tasks that changed after ``cursor`` (their current state, one entry per
        row, in the order of their last change) and those deleted since, up to ``limit``
        entries; with ``run_id`` (one id or several), only those runs and their tasks.

        Raises :class:`CursorExpired` when the deletions since ``cursor`` are no longer all
        recorded (their tombstones were pruned) or the cursor is ahead of this database: the
        caller takes a new snapshot."""
        runs = None if run_id is None else [run_id] if isinstance(run_id, str) else list(run_id)
        return await self._read(self._changes_tx, cursor, runs, max(1, limit))

    def _changes_tx(
        self, conn: sa.Connection, cursor: int, runs: list[str] | None, limit: int
    ) -> ChangeSet:
        top, pruned = self._exec(conn, COUNTER_SQL).one()
        if cursor < pruned or cursor > top:
            raise CursorExpired(
                f"the changes since {cursor} are no longer all known (the stream is at {top}, "
                f"deletions up to {pruned} were pruned): take a new snapshot"
            )
        if cursor == top:
            return ChangeSet(cursor)
        params: dict[str, Any] = {"cursor": cursor, "limit": limit}
        if runs is not None:
            params["runs"] = json.dumps(runs)
        tasks_sql = TASKS_SINCE.format(
            runs="" if runs is None else f" AND workflow_run_id IN {_IN_RUNS}"
        )
        runs_sql = RUNS_SINCE.format(runs="" if runs is None else f" AND id IN {_IN_RUNS}")
        tombs_sql = TOMBSTONES_SINCE.format(
            runs="" if runs is None else f" AND workflow_run_id IN {_IN_RUNS}"
        )
        tasks = [
            Change(r["change_seq"], _task_record(r))
            for r in conn.execute(self._text(tasks_sql).columns(*task_t.c), params).mappings()
        ]
        run_rows = [
            Change(r["change_seq"], RunRecord.from_row(r))
            for r in conn.execute(self._text(runs_sql).columns(*run_t.c), params).mappings()
        ]
        tombs = [
            Change(seq, Tombstone(kind, row_id, run, float(at)))
            for seq, kind, row_id, run, at in self._exec(conn, tombs_sql, params)
        ]
        merged = list(heapq.merge(tasks, run_rows, tombs, key=lambda c: c.seq))
        if len(merged) > limit or limit in (len(tasks), len(run_rows), len(tombs)):
            # Cut: every entry up to the last one kept is in (a source that stopped at its
            # limit stopped past it), so the next read starts right after it.
            kept = merged[:limit]
            return ChangeSet(kept[-1].seq, tuple(kept), more=True)
        return ChangeSet(int(top), tuple(merged))

    async def snapshot(
        self, runs: RunFilter | None = None, tasks: TaskFilter | None = None
    ) -> Snapshot:
        """A page of runs and a page of tasks, and the stream's cursor, all read in one read
        transaction: following the changes from that cursor misses nothing."""
        return await self._read(self._snapshot_tx, runs, tasks)

    def _snapshot_tx(
        self, conn: sa.Connection, runs: RunFilter | None, tasks: TaskFilter | None
    ) -> Snapshot:
        # The counter first: a read transaction's snapshot is fixed by its first read.
        cursor = self._cursor_tx(conn)
        run_page: list[RunRecord] = []
        task_page: list[TaskRecord] = []
        next_runs = next_tasks = None
        if runs is not None:
            run_page, next_runs = self._run_page(conn, runs)
        if tasks is not None:
            task_page, next_tasks = self._task_page(conn, tasks)
        return Snapshot(cursor, tuple(run_page), tuple(task_page), next_runs, next_tasks)

    async def run_page(self, f: RunFilter) -> tuple[list[RunRecord], PageKey | None, int]:
        """A page of the runs ``f`` reads, where the next page starts (None: the last), and
        how many runs of ``f`` come after this page (its ``limit`` and ``after`` aside)."""
        return await self._read(self._run_page_counted_tx, f)

    def _run_page_counted_tx(
        self, conn: sa.Connection, f: RunFilter
    ) -> tuple[list[RunRecord], PageKey | None, int]:
        page, next_key = self._run_page(conn, f)
        more = 0
        if next_key is not None:
            count = sa.select(sa.func.count()).select_from(run_t)
            rest = replace(f, after=next_key)
            more = int(conn.execute(count.where(*self._run_clauses(rest))).scalar_one())
        return page, next_key, more

    @staticmethod
    def _run_clauses(f: RunFilter) -> list[sa.ColumnElement[bool]]:
        """The conditions of ``f`` (its page's start included, its limit not)."""
        out: list[sa.ColumnElement[bool]] = []
        if f.ids is not None:
            out.append(run_t.c.id.in_(list(f.ids)))
        if f.status:
            out.append(run_t.c.status.in_(list(f.status)))
        if f.material_id is not None:
            out.append(run_t.c.material_id == f.material_id)
        if f.templates:
            out.append(run_t.c.template.in_(list(f.templates)))
        if f.material_ids is not None:
            out.append(run_t.c.material_id.in_(list(f.material_ids)))
        if f.since is not None:
            out.append(run_t.c.created_at >= f.since)
        if f.after is not None:
            out.append(sa.tuple_(run_t.c.created_at, run_t.c.id) < sa.tuple_(*f.after))
        return out

    def _run_page(
        self, conn: sa.Connection, f: RunFilter
    ) -> tuple[list[RunRecord], PageKey | None]:
        q = sa.select(run_t).order_by(run_t.c.created_at.desc(), run_t.c.id.desc())
        clauses = self._run_clauses(f)
        if clauses:
            q = q.where(*clauses)
        if f.limit is not None:
            q = q.limit(f.limit + 1)
        rows = [RunRecord.from_row(r) for r in conn.execute(q).mappings()]
        if f.limit is not None and len(rows) > f.limit:
            rows = rows[: f.limit]
            return rows, (rows[-1].created_at, rows[-1].id)
        return rows, None

    def _task_page(
        self, conn: sa.Connection, f: TaskFilter
    ) -> tuple[list[TaskRecord], PageKey | None]:
        q = sa.select(task_t).order_by(task_t.c.created_at, task_t.c.id)
        if f.run_ids is not None:
            run_ids = list(f.run_ids)
            found = conn.execute(sa.select(run_t.c.id).where(run_t.c.id.in_(run_ids))).scalars()
            missing = set(run_ids) - set(found)
            if missing:
                raise NotFound(f"no run {', '.join(sorted(missing))}")
            q = q.where(task_t.c.workflow_run_id.in_(run_ids))
        if f.status:
            q = q.where(task_t.c.status.in_(list(f.status)))
        if f.after is not None:
            q = q.where(sa.tuple_(task_t.c.created_at, task_t.c.id) > sa.tuple_(*f.after))
        if f.limit is not None:
            q = q.limit(f.limit + 1)
        rows = [_task_record(r) for r in conn.execute(q).mappings()]
        if f.limit is not None and len(rows) > f.limit:
            rows = rows[: f.limit]
            return rows, (rows[-1].created_at, rows[-1].id)
        return rows, None
