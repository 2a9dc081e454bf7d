"""What the watch folders took in: the only module that writes the ``watched_file`` table.

A row says "this watch folder submitted these bytes to this template". It is keyed by the
file's content (:func:`~fredica_app.library.fingerprint.content_fingerprint`: size and the
hash of the first and last blocks, no mtime), so a restart, a rename or a touch of the same
bytes finds it and submits nothing, while changed bytes are a new row.

Taking a file in is ``INSERT … ON CONFLICT DO NOTHING``: when two watchers see the same file
at once (the desktop app and ``fredica watch-folders`` on one data directory), the database
picks the one that submits it, never a check-then-insert. The submission is recorded in a
second transaction, once the run exists; a row without a run is a take-in whose submission
never happened (the process stopped in between), which the next watcher to start submits.

Its transactions are short and rare, so they run synchronously on the caller's thread, like
:mod:`fredica_app.library.store`; async callers go through :func:`asyncio.to_thread`.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa

from fredica_app.library.models import material_t, watched_t
from workers.db import READ_ONLY

_KEY = ("folder", "template", "content_fingerprint")


@dataclass(frozen=True, slots=True)
class WatchedFileRecord:
    id: int
    folder: str
    template: str
    content_fingerprint: str
    path: str
    material_id: str | None
    workflow_run_id: str | None
    #: When it was taken in (Unix seconds); taken over again: when that happened.
    created_at: float
    submitted_at: float | None

    @property
    def submitted(self) -> bool:
        return self.workflow_run_id is not None


def _record(row: sa.Row[Any]) -> WatchedFileRecord:
    return WatchedFileRecord(**row._asdict())


class WatchedFiles:
    """The ``watched_file`` table."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        self._read_engine = engine.execution_options(**{READ_ONLY: True})

    def take_in(
        self,
        *,
        folder: str,
        template: str,
        content_fingerprint: str,
        path: str,
        now: float | None = None,
    ) -> WatchedFileRecord | None:
        """Take a file in for submission: its new row, or None when these bytes were taken in
        before for this folder and template (by this process or another, whether or not the
        submission has been made). The caller that gets the row submits it, then calls
        :meth:`record_submission` (or :meth:`release` when it cannot)."""
        values = {
            "folder": folder,
            "template": template,
            "content_fingerprint": content_fingerprint,
            "path": path,
            "material_id": None,
            "workflow_run_id": None,
            "created_at": time.time() if now is None else now,
            "submitted_at": None,
        }
        # The dialect's own INSERT (ON CONFLICT: SQLite's and PostgreSQL's take the same
        # arguments), imported for the engine's dialect only: a SQLite file's commands do
        # without SQLAlchemy's PostgreSQL dialect (workers.models).
        dialect: Any = importlib.import_module(f"sqlalchemy.dialects.{self._engine.dialect.name}")
        stmt = dialect.insert(watched_t).on_conflict_do_nothing(index_elements=list(_KEY))
        stmt = stmt.values(values).returning(*watched_t.c)
        with self._engine.begin() as conn:
            row = conn.execute(stmt).first()
        return None if row is None else _record(row)

    def get(self, folder: str, template: str, content_fingerprint: str) -> WatchedFileRecord | None:
        with self._read_engine.begin() as conn:
            row = conn.execute(
                sa.select(watched_t).where(
                    watched_t.c.folder == folder,
                    watched_t.c.template == template,
                    watched_t.c.content_fingerprint == content_fingerprint,
                )
            ).first()
        return None if row is None else _record(row)

    def moved(self, record_id: int, path: str) -> bool:
        """The file of this row is now at ``path`` (renamed or moved within its folder). False
        when the row was there already (or is gone)."""
        with self._engine.begin() as conn:
            changed = conn.execute(
                sa.update(watched_t)
                .where(watched_t.c.id == record_id, watched_t.c.path != path)
                .values(path=path)
            )
        return bool(changed.rowcount)

    def record_submission(
        self, record_id: int, *, material_id: str, run_id: str, now: float | None = None
    ) -> bool:
        """The run submitted for a row taken in. False when the row already had one (another
        watcher took it over and submitted it first) or is gone."""
        with self._engine.begin() as conn:
            changed = conn.execute(
                sa.update(watched_t)
                .where(watched_t.c.id == record_id, watched_t.c.workflow_run_id.is_(None))
                .values(
                    material_id=material_id,
                    workflow_run_id=run_id,
                    submitted_at=time.time() if now is None else now,
                )
            )
        return bool(changed.rowcount)

    def release(self, record: WatchedFileRecord) -> bool:
        """Give up a row taken in whose submission could not be made (the file vanished, or
        could not be imported), so that the file is taken in again when it comes back or
        changes. Only while it is still the take-in ``record`` describes: a row submitted or
        taken over meanwhile stays."""
        with self._engine.begin() as conn:
            gone = conn.execute(
                sa.delete(watched_t).where(
                    watched_t.c.id == record.id,
                    watched_t.c.workflow_run_id.is_(None),
                    watched_t.c.created_at == record.created_at,
                )
            )
        return bool(gone.rowcount)

    def unsubmitted(self, *, taken_before: float) -> list[WatchedFileRecord]:
        """Rows taken in before ``taken_before`` (Unix seconds) and never submitted: the
        process that took them in stopped before it submitted them. Oldest first."""
        with self._read_engine.begin() as conn:
            rows = conn.execute(
                sa.select(watched_t)
                .where(
                    watched_t.c.workflow_run_id.is_(None),
                    watched_t.c.created_at < taken_before,
                )
                .order_by(watched_t.c.created_at, watched_t.c.id)
            ).all()
        return [_record(r) for r in rows]

    def take_over(
        self, record: WatchedFileRecord, *, now: float | None = None
    ) -> WatchedFileRecord | None:
        """Take over a row that was never submitted (see :meth:`unsubmitted`): compare-and-set
        on its take-in time, so that of two watchers starting at once only one gets it. The
        row as taken over, or None when another watcher took it first or it was submitted."""
        taken_at = time.time() if now is None else now
        with self._engine.begin() as conn:
            changed = conn.execute(
                sa.update(watched_t)
                .where(
                    watched_t.c.id == record.id,
                    watched_t.c.workflow_run_id.is_(None),
                    watched_t.c.created_at == record.created_at,
                )
                .values(created_at=taken_at)
            )
        if not changed.rowcount:
            return None
        return replace(record, workflow_run_id=None, created_at=taken_at, submitted_at=None)

    def forget_removed(
        self,
        folder: str,
        template: str,
        present: Collection[str] = (),
        *,
        gone: str | None = None,
    ) -> int:
        """Forget the rows of this watch folder whose material was removed from the library
        (``fredica remove``) and whose file is no longer in the folder (``present``: the paths
        a full look found there). Those bytes were let go twice, from the library and from
        the folder: when they come back they are a new file, and are submitted again. A file
        that stays in the folder after its material was removed keeps its row: it is not
        submitted again behind the user's back. ``gone``: one path the file events say left
        (the rest of the folder not looked at). How many rows were forgotten."""
        removed = watched_t.c.material_id.not_in(sa.select(material_t.c.id))
        with self._engine.begin() as conn:
            rows = conn.execute(
                sa.select(watched_t.c.id, watched_t.c.path).where(
                    watched_t.c.folder == folder,
                    watched_t.c.template == template,
                    watched_t.c.workflow_run_id.is_not(None),
                    watched_t.c.material_id.is_not(None),
                    removed,
                    *([] if gone is None else [watched_t.c.path == gone]),
                )
            ).all()
            forgotten = [r.id for r in rows if gone is not None or r.path not in present]
            for i in range(0, len(forgotten), 500):
                chunk = forgotten[i : i + 500]
                conn.execute(sa.delete(watched_t).where(watched_t.c.id.in_(chunk)))
        return len(forgotten)

    def list(self, folder: str | None = None) -> list[WatchedFileRecord]:
        """Every row (of one watch folder), oldest first."""
        query = sa.select(watched_t).order_by(watched_t.c.created_at, watched_t.c.id)
        if folder is not None:
            query = query.where(watched_t.c.folder == folder)
        with self._read_engine.begin() as conn:
            rows = conn.execute(query).all()
        return [_record(r) for r in rows]
