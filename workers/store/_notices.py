"""Notices of finished runs: the desktop app takes each one once.

The notice itself is written by :meth:`StoreBase._set_run_status`, in the transaction that
ends the run; here it is read and marked shown.
"""

from __future__ import annotations

import sqlalchemy as sa

from workers.models import notice_t
from workers.records import NoticeRecord
from workers.store._base import StoreBase


class NoticesMixin(StoreBase):
    async def take_notices(self, limit: int = 200) -> list[NoticeRecord]:
        """The notices not shown yet, oldest first, marked shown in the same transaction: a
        notice taken is never taken again, whoever asks next (another window, a restart). With
        :attr:`home_id` set, those of runs submitted from that home (and of runs that say
        none): on a shared queue each host's window tells the runs its host submitted."""
        return await self._write(self._take_notices_tx, limit)

    def _take_notices_tx(self, conn: sa.Connection, limit: int) -> list[NoticeRecord]:
        now = self.now()
        rows = (
            conn.execute(
                sa.update(notice_t)
                .where(
                    notice_t.c.id.in_(
                        sa.select(notice_t.c.id)
                        .where(notice_t.c.shown_at.is_(None), *self._own_notices())
                        .order_by(notice_t.c.id)
                        .limit(limit)
                    )
                )
                .values(shown_at=now)
                .returning(*notice_t.c)
            )
            .mappings()
            .all()
        )
        return sorted((NoticeRecord.from_row(r) for r in rows), key=lambda n: n.id)

    def _own_notices(self) -> list[sa.ColumnElement[bool]]:
        if self.home_id is None:
            return []
        return [sa.or_(notice_t.c.home_id.is_(None), notice_t.c.home_id == self.home_id)]
