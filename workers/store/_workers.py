"""The engines on the queue (``worker``): registered at start, renewed with each heartbeat,
marked at a graceful stop, asked to drain. With several hosts on one database, how they see
one another (``fredica hosts``); on SQLite there is one at a time."""

from __future__ import annotations

import sqlalchemy as sa

from workers.errors import NotFound
from workers.models import task_t, worker_t
from workers.records import WorkerInfo, WorkerRecord
from workers.store._base import HELD, StoreBase


class WorkersMixin(StoreBase):
    async def register_worker(self, info: WorkerInfo) -> None:
        """Say that an engine starts (a new row: a worker id is new for each start)."""
        await self._write(self._register_tx, info)

    def _register_tx(self, conn: sa.Connection, info: WorkerInfo) -> None:
        now = self.now()
        conn.execute(
            sa.insert(worker_t).values(
                id=info.id,
                host=info.host[:255],
                home_id=info.home_id,
                pid=info.pid,
                build=info.build[:64],
                slots=dict(info.slots),
                task_types=dict(info.task_types),
                started_at=now,
                heartbeat_at=now,
            )
        )

    async def worker_stopped(self, worker_id: str) -> None:
        """Say that an engine stopped (gracefully: a crash leaves its row to age)."""
        await self._write(self._stopped_tx, worker_id)

    def _stopped_tx(self, conn: sa.Connection, worker_id: str) -> None:
        conn.execute(
            sa.update(worker_t)
            .where(worker_t.c.id == worker_id, worker_t.c.stopped_at.is_(None))
            .values(stopped_at=self.now())
        )

    async def list_workers(self, *, include_stopped: bool = False) -> list[WorkerRecord]:
        """The engines, newest first, each with how many tasks it holds now."""
        return await self._read(self._list_workers_tx, include_stopped)

    def _list_workers_tx(self, conn: sa.Connection, include_stopped: bool) -> list[WorkerRecord]:
        held = (
            sa.select(task_t.c.worker_id, sa.func.count().label("running"))
            .where(task_t.c.status.in_(HELD), task_t.c.worker_id.is_not(None))
            .group_by(task_t.c.worker_id)
            .subquery()
        )
        q = (
            sa.select(worker_t, sa.func.coalesce(held.c.running, 0).label("running"))
            .outerjoin(held, held.c.worker_id == worker_t.c.id)
            .order_by(worker_t.c.started_at.desc())
        )
        if not include_stopped:
            q = q.where(worker_t.c.stopped_at.is_(None))
        return [WorkerRecord.from_row(r) for r in conn.execute(q).mappings()]

    async def drain(self, target: str, *, undo: bool = False) -> list[str]:
        """Ask the engine ``target`` (a worker id, or a host name for all of its engines) to
        finish what it runs and claim nothing more (``undo``: to claim again). Returns the
        worker ids asked; raises :class:`NotFound` when no running engine matches."""
        return await self._write(self._drain_tx, target, not undo)

    def _drain_tx(self, conn: sa.Connection, target: str, draining: bool) -> list[str]:
        ids = list(
            conn.execute(
                sa.update(worker_t)
                .where(
                    sa.or_(worker_t.c.id == target, worker_t.c.host == target),
                    worker_t.c.stopped_at.is_(None),
                )
                .values(draining=draining)
                .returning(worker_t.c.id)
            ).scalars()
        )
        if not ids:
            raise NotFound(f"no running engine {target!r} (see `fredica hosts`)")
        return sorted(ids)
