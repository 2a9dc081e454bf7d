"""The queue's reads for a command that must answer at once (``fredica runs``), on a plain
``sqlite3`` connection: no SQLAlchemy, no store threads. The same records as
:meth:`TaskStore.run_page` and :meth:`TaskStore.run_progress` give (a test holds the two
equal on the same file); SQLite only, read only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator
from dataclasses import fields, replace
from typing import Any

from workers import states
from workers.changes import PageKey, RunFilter
from workers.records import RunProgress, RunRecord
from workers.states import RunStatus, TaskStatus

__all__ = ["id_chunks", "run_page", "run_progress"]

#: The run record's fields are the table's columns.
_RUN_COLUMNS = tuple(f.name for f in fields(RunRecord))


def _quoted(statuses: Collection[TaskStatus]) -> str:
    return ", ".join(f"'{s.value}'" for s in sorted(statuses))


_LIVE = f"status NOT IN ({_quoted((TaskStatus.FAILED, TaskStatus.CANCELLED))})"
RUN_PROGRESS_SQL = (
    "SELECT workflow_run_id, MIN(started_at), "
    f"SUM(CASE WHEN {_LIVE} THEN 1 ELSE 0 END), "
    f"SUM(CASE WHEN status = '{TaskStatus.COMPLETED.value}' THEN 100.0 "
    f"WHEN {_LIVE} THEN progress ELSE 0.0 END), "
    f"SUM(CASE WHEN status IN ({_quoted(states.ACTIVE)}) AND is_paused THEN 1 ELSE 0 END), "
    f"SUM(CASE WHEN status = '{TaskStatus.COMPLETED.value}' "
    "AND COALESCE(json_extract(result, '$.note'), '') != '' THEN 1 ELSE 0 END) "
    "FROM task WHERE workflow_run_id IN ({marks}) GROUP BY workflow_run_id"
)

#: Ids bound per statement: well under SQLite's limit on variables.
_CHUNK = 500


def _run(row: tuple[Any, ...]) -> RunRecord:
    data = dict(zip(_RUN_COLUMNS, row, strict=True))
    data["status"] = RunStatus(data["status"])
    return RunRecord.from_row(data)


def _where(f: RunFilter) -> tuple[str, list[object]]:
    """``f``'s conditions (its page's start included, its limit not) as SQL and values."""
    clauses: list[str] = []
    params: list[object] = []

    def any_of(column: str, values: Collection[object]) -> None:
        clauses.append(f"{column} IN ({', '.join('?' * len(values))})" if values else "0")
        params.extend(values)

    if f.ids is not None:
        any_of("id", sorted(f.ids))
    if f.status:
        any_of("status", sorted(s.value for s in f.status))
    if f.material_id is not None:
        clauses.append("material_id = ?")
        params.append(f.material_id)
    if f.templates:
        any_of("template", sorted(f.templates))
    if f.material_ids is not None:
        any_of("material_id", sorted(f.material_ids))
    if f.since is not None:
        clauses.append("created_at >= ?")
        params.append(f.since)
    if f.after is not None:
        clauses.append("(created_at, id) < (?, ?)")
        params.extend(f.after)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def run_page(conn: sqlite3.Connection, f: RunFilter) -> tuple[list[RunRecord], PageKey | None, int]:
    """What :meth:`TaskStore.run_page` gives: a page of ``f``'s runs, where the next starts,
    how many come after it."""
    where, params = _where(f)
    sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM workflow_run{where} "
    sql += "ORDER BY created_at DESC, id DESC"
    if f.limit is not None:
        sql += " LIMIT ?"
        params = [*params, f.limit + 1]
    runs = [_run(row) for row in conn.execute(sql, params)]
    if f.limit is None or len(runs) <= f.limit:
        return runs, None, 0
    runs = runs[: f.limit]
    next_key = (runs[-1].created_at, runs[-1].id)
    where, params = _where(replace(f, after=next_key))
    [(more,)] = conn.execute(f"SELECT COUNT(*) FROM workflow_run{where}", params)
    return runs, next_key, int(more)


def run_progress(conn: sqlite3.Connection, run_ids: Collection[str]) -> dict[str, RunProgress]:
    """For each of these runs that has tasks: when its first task started, how far its tasks
    are, how many are held."""
    out = {}
    for chunk in id_chunks(run_ids):
        sql = RUN_PROGRESS_SQL.format(marks=", ".join("?" * len(chunk)))
        for run_id, started, live, progress, held, notes in conn.execute(sql, chunk):
            out[run_id] = RunProgress(
                started, int(live or 0), float(progress or 0.0), int(held or 0), int(notes or 0)
            )
    return out


def id_chunks(ids: Collection[str]) -> Iterator[list[str]]:
    """These ids, each once and sorted, in lists short enough to bind in one ``IN (…)``."""
    unique = sorted(set(ids))
    for i in range(0, len(unique), _CHUNK):
        yield unique[i : i + _CHUNK]
