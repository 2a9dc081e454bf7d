"""Reads: snapshots of tasks, runs and their timelines."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa

from python_endpoints.text import is_text
from workers import states
from workers.errors import AmbiguousId, NotFound
from workers.models import event_t, log_t, run_t, task_t
from workers.records import (
    EventRecord,
    HeartbeatOutcome,
    RunProgress,
    RunRecord,
    TaskRecord,
)
from workers.store import _hot
from workers.store._base import HELD, S, StoreBase, _task_record


class ReadsMixin(StoreBase):
    # --- reads ----------------------------------------------------------------------------

    async def get_task(self, task_id: str) -> TaskRecord:
        return await self._read(self._get_task_tx, task_id)

    def _get_task_tx(self, conn: sa.Connection, task_id: str) -> TaskRecord:
        if not is_text(task_id):
            raise NotFound(f"no task {task_id!r}")
        row = conn.execute(sa.select(task_t).where(task_t.c.id == task_id)).mappings().first()
        if row is None:
            row = _one(_starting(conn, task_t, task_id), task_id, "task")
        return _task_record(row)

    async def get_run(self, run_id: str) -> RunRecord:
        return await self._read(self._get_run_tx, run_id)

    def _get_run_tx(self, conn: sa.Connection, run_id: str) -> RunRecord:
        if not is_text(run_id):
            raise NotFound(f"no run {run_id!r}")
        row = conn.execute(sa.select(run_t).where(run_t.c.id == run_id)).mappings().first()
        if row is None:
            row = _one(_starting(conn, run_t, run_id), run_id, "run")
        return RunRecord.from_row(row)

    async def find(self, some_id: str) -> TaskRecord | RunRecord:
        """A task or a run by id (the CLI's commands take either)."""
        return await self._read(self._find_tx, some_id)

    def _find_tx(self, conn: sa.Connection, some_id: str) -> TaskRecord | RunRecord:
        if not is_text(some_id):
            raise NotFound(f"no task or run with id {some_id!r}")
        for table in (run_t, task_t):
            exact = conn.execute(sa.select(table).where(table.c.id == some_id)).mappings().first()
            if exact is not None:
                return RunRecord.from_row(exact) if table is run_t else _task_record(exact)
        runs = _starting(conn, run_t, some_id)
        tasks = _starting(conn, task_t, some_id)
        if len(runs) + len(tasks) > 1:
            _one([*runs, *tasks], some_id, "run or task")
        if runs:
            return RunRecord.from_row(runs[0])
        if tasks:
            return _task_record(tasks[0])
        raise NotFound(f"no task or run with id {some_id!r}")

    async def list_runs(
        self, limit: int | None = 1000, *, material_id: str | None = None
    ) -> list[RunRecord]:
        """Runs, newest first (``limit`` None: all); with ``material_id``, that material's."""
        return await self._read(self._list_runs_tx, limit, material_id)

    def _list_runs_tx(
        self, conn: sa.Connection, limit: int | None, material_id: str | None
    ) -> list[RunRecord]:
        q = sa.select(run_t).order_by(run_t.c.created_at.desc())
        if limit is not None:
            q = q.limit(limit)
        if material_id is not None:
            q = q.where(run_t.c.material_id == material_id)
        return [RunRecord.from_row(r) for r in conn.execute(q).mappings()]

    async def run_progress(self, run_ids: Collection[str]) -> dict[str, RunProgress]:
        """For each of these runs that has tasks: when its first task started, how far its
        tasks are, how many are held (one read)."""
        if not run_ids:
            return {}
        return await self._read(self._run_progress_tx, list(run_ids))

    def _run_progress_tx(self, conn: sa.Connection, run_ids: list[str]) -> dict[str, RunProgress]:
        status = task_t.c.status
        live = status.notin_((S.FAILED, S.CANCELLED))
        # A completed task whose result holds a note for the user.
        noted = (status == S.COMPLETED) & (
            sa.func.coalesce(task_t.c.result["note"].as_string(), "") != ""
        )
        rows = conn.execute(
            sa.select(
                task_t.c.workflow_run_id,
                sa.func.min(task_t.c.started_at),
                sa.func.sum(sa.case((live, 1), else_=0)),
                sa.func.sum(
                    sa.case((status == S.COMPLETED, 100.0), (live, task_t.c.progress), else_=0.0)
                ),
                sa.func.sum(sa.case((status.in_(states.ACTIVE) & task_t.c.is_paused, 1), else_=0)),
                sa.func.sum(sa.case((noted, 1), else_=0)),
            )
            .where(task_t.c.workflow_run_id.in_(run_ids))
            .group_by(task_t.c.workflow_run_id)
        ).all()
        return {
            r[0]: RunProgress(
                r[1], int(r[2] or 0), float(r[3] or 0.0), int(r[4] or 0), int(r[5] or 0)
            )
            for r in rows
        }

    async def list_tasks(self, run_id: str) -> list[TaskRecord]:
        return await self._read(self._list_tasks_tx, run_id)

    def _list_tasks_tx(self, conn: sa.Connection, run_id: str) -> list[TaskRecord]:
        self._require_run(conn, run_id)
        rows = conn.execute(
            sa.select(task_t)
            .where(task_t.c.workflow_run_id == run_id)
            .order_by(task_t.c.created_at)
        ).mappings()
        return [_task_record(r) for r in rows]

    async def events(self, task_id: str) -> list[EventRecord]:
        return await self._read(self._events_tx, task_id)

    def _events_tx(self, conn: sa.Connection, task_id: str) -> list[EventRecord]:
        run_id = conn.execute(
            sa.select(task_t.c.workflow_run_id).where(task_t.c.id == task_id)
        ).scalar_one_or_none()
        rows = conn.execute(
            sa.select(event_t)
            .where(
                event_t.c.workflow_run_id.is_(None)
                if run_id is None
                else event_t.c.workflow_run_id == run_id,
                event_t.c.task_id == task_id,
            )
            .order_by(event_t.c.id)
        ).mappings()
        events = [EventRecord.from_row(r) for r in rows]
        # Recovery writes one restart-log row per task instead of a timeline event (it touches
        # up to every unfinished task at once); the timeline shows them as "recovered".
        recovered = conn.execute(
            sa.select(log_t).where(log_t.c.task_id == task_id).order_by(log_t.c.id)
        ).mappings()
        events += [
            EventRecord(
                id=0,
                task_id=task_id,
                workflow_run_id=r["workflow_run_id"],
                at=r["created_at"],
                kind="recovered",
                detail={"action": r["action"], "status_at_restart": r["status_at_restart"]},
            )
            for r in recovered
        ]
        return sorted(events, key=lambda e: (e.at, e.id))

    async def upstream_results(self, task_id: str) -> dict[str, dict[str, Any] | None]:
        """The results of the tasks ``task_id`` depends on, keyed by their spec key (or id)."""
        return await self._read(self._upstream_tx, task_id)

    def _upstream_tx(self, conn: sa.Connection, task_id: str) -> dict[str, dict[str, Any] | None]:
        return self._upstream(conn, task_id)

    async def next_retry_at(self) -> float | None:
        """When the earliest waiting retry becomes due (the engine's timer)."""
        return await self._read(self._next_retry_tx)

    def _next_retry_tx(self, conn: sa.Connection) -> float | None:
        value = self._exec(conn, _hot.NEXT_RETRY_SQL).scalar()
        return float(value) if value is not None else None

    async def has_claimable(self, slots: Mapping[str, int] | None = None) -> bool:
        """Whether a claim could find anything (a cheap read before taking the write lock)."""
        resources = None if slots is None else tuple(sorted(k for k, v in slots.items() if v > 0))
        return await self._read(self._has_claimable_tx, resources)

    def _has_claimable_tx(self, conn: sa.Connection, resources: tuple[str, ...] | None) -> bool:
        if resources == ():
            return False
        # A retry that came due is claimable once a claim promotes it: say yes, so that the
        # claim runs (whatever its class: promoting it costs one write).
        checks = [_hot.DUE_SQL]
        if resources is None:
            checks.append(_hot.PICK_ANY_SQL)
        else:
            checks += [_hot.PICK_CLASS_SQL.format(i=i) for i in range(len(resources))]
        sql = "SELECT " + " OR ".join(f"EXISTS ({c})" for c in checks)
        now = self.now()
        params: dict[str, Any] = {"now": now, "horizon": self.retry_horizon(now)}
        params.update({f"r{i}": r for i, r in enumerate(resources or ())})
        return bool(self._exec(conn, sql, params).scalar())

    async def control_state(self, worker_id: str, task_ids: Collection[str]) -> HeartbeatOutcome:
        """What a heartbeat would say of the tasks ``worker_id`` holds (still ours, asked to
        pause, lost), as a read: how an engine learns at once of a pause, resume or cancel
        that another process wrote."""
        if not task_ids:
            return HeartbeatOutcome(frozenset(), frozenset(), frozenset())
        return await self._read(self._control_tx, worker_id, list(task_ids))

    def _control_tx(
        self, conn: sa.Connection, worker_id: str, task_ids: list[str]
    ) -> HeartbeatOutcome:
        rows = conn.execute(
            sa.select(task_t.c.id, task_t.c.is_paused, task_t.c.lease_token).where(
                task_t.c.id.in_(task_ids),
                task_t.c.worker_id == worker_id,
                task_t.c.status.in_(HELD),
            )
        ).all()
        return HeartbeatOutcome.of(
            task_ids, ((r.id, bool(r.is_paused), r.lease_token) for r in rows)
        )

    async def queued_types(self) -> set[str]:
        """The types of the tasks that are to run: unfinished and not held (one read)."""
        return await self._read(self._queued_types_tx)

    def _queued_types_tx(self, conn: sa.Connection) -> set[str]:
        rows = conn.execute(
            sa.select(task_t.c.type)
            .where(task_t.c.status.in_(states.ACTIVE), sa.not_(task_t.c.is_paused))
            .distinct()
        )
        return {r[0] for r in rows}

    async def busy_resources(self) -> dict[str, int]:
        """How many tasks of each resource class are claimed or running, all workers together."""
        return await self._read(self._busy_tx)

    def _busy_tx(self, conn: sa.Connection) -> dict[str, int]:
        rows = conn.execute(
            sa.select(task_t.c.resource, sa.func.count())
            .where(task_t.c.status.in_((S.CLAIMED, S.RUNNING)))
            .group_by(task_t.c.resource)
        ).all()
        return {r[0]: int(r[1]) for r in rows}


#: How many ids an ambiguous beginning lists.
CANDIDATES = 5


def _starting(conn: sa.Connection, table: sa.Table, prefix: str) -> list[Any]:
    """The rows of ``table`` whose id starts with ``prefix`` (a few more than are listed: the
    ids the window and ``fredica runs`` show are their first 8 characters). A range on the
    primary key, not LIKE: ``%`` and ``_`` in what was typed mean themselves."""
    if not prefix:
        return []
    query = (
        sa.select(table)
        .where(table.c.id >= prefix, table.c.id < prefix + "\U0010ffff")
        .order_by(table.c.id)
        .limit(CANDIDATES + 1)
    )
    return list(conn.execute(query).mappings())


def _one(rows: list[Any], prefix: str, kind: str) -> Any:
    """The one row an id's beginning names, or :class:`NotFound` (none) or
    :class:`AmbiguousId` (several: listed, with what to do)."""
    if len(rows) == 1:
        return rows[0]
    if not rows:
        raise NotFound(f"no {kind} {prefix}")
    listed = ", ".join(str(r["id"]) for r in rows[:CANDIDATES])
    more = ", …" if len(rows) > CANDIDATES else ""
    raise AmbiguousId(
        f"{prefix!r} is the beginning of more than one {kind} id: {listed}{more}; type more of it"
    )
