"""What differs between SQLite and PostgreSQL in the store's own SQL text, in one place.

The store's hand-written statements are written for SQLite (the embedded default, where they
were measured). On PostgreSQL the same text runs after a few mechanical rewrites, made once
per statement and cached:

- ``INDEXED BY name`` goes: PostgreSQL's planner picks the partial indexes by itself;
- ``json_each(:ids)``, a list of ids bound as one JSON text, becomes
  ``json_array_elements_text(:ids)`` (its column is ``value`` too);
- SQLite's null-safe ``a IS NOT b`` becomes ``a IS DISTINCT FROM b``;
- for the driver itself (:func:`driver_sql`), ``:name`` and ``?`` parameters become psycopg's
  ``%(name)s`` and ``%s``, and a literal ``%`` is doubled.

Statements that cannot be rewritten this way (the claim, with ``FOR UPDATE SKIP LOCKED``) are
written twice, beside each other, in :mod:`workers.store._hot`.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

import sqlalchemy as sa

POSTGRESQL = "postgresql"

_INDEXED_BY = re.compile(r"\s+INDEXED BY \w+")
_IS_NOT = re.compile(r"\bIS NOT (?!NULL\b|TRUE\b|FALSE\b|DISTINCT\b)")
# A quoted literal (kept, its % doubled), a :name (not a ::cast), a ?, or a lone %.
_PARAMS = re.compile(r"'(?:[^']|'')*'|(?<![:\w]):([A-Za-z_]\w*)|\?|%")


@lru_cache(maxsize=512)
def portable(sql: str, dialect: str) -> str:
    """``sql`` (written for SQLite) as ``dialect`` runs it, parameters left as ``:name``."""
    if dialect != POSTGRESQL:
        return sql
    sql = _INDEXED_BY.sub("", sql)
    sql = sql.replace("json_each(", "json_array_elements_text(")
    return _IS_NOT.sub("IS DISTINCT FROM ", sql)


def _param(match: re.Match[str]) -> str:
    text = match.group(0)
    if text.startswith("'"):
        return text.replace("%", "%%")
    if match.group(1) is not None:
        return f"%({match.group(1)})s"
    return "%s" if text == "?" else "%%"


@lru_cache(maxsize=512)
def driver_sql(sql: str, dialect: str) -> str:
    """``sql`` as the driver of ``dialect`` takes it: :func:`portable`, with psycopg's
    parameter style on PostgreSQL (pass parameters, ``{}`` if none, so that ``%%`` is read)."""
    if dialect != POSTGRESQL:
        return sql
    return _PARAMS.sub(_param, portable(sql, dialect))


def dialect_of(conn: sa.Connection | sa.Engine) -> str:
    return conn.dialect.name


def driver_errors() -> tuple[type[Exception], ...]:
    """What the drivers raise from a raw cursor (psycopg's only once it is loaded: a
    single-machine user never loads it)."""
    psycopg = sys.modules.get("psycopg")
    return (sqlite3.Error,) if psycopg is None else (sqlite3.Error, psycopg.Error)


def driver_operational_errors() -> tuple[type[Exception], ...]:
    psycopg = sys.modules.get("psycopg")
    return (
        (sqlite3.OperationalError,)
        if psycopg is None
        else (sqlite3.OperationalError, psycopg.OperationalError)
    )


class PgCursor:
    """A psycopg cursor that takes the store's SQLite-style statements (see
    :func:`driver_sql`), so that the hot path's code is one for both backends."""

    def __init__(self, cursor: Any) -> None:
        self._cur = cursor

    def execute(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> Any:
        self._cur.execute(driver_sql(sql, POSTGRESQL), {} if params is None else params)
        return self

    def executemany(self, sql: str, params: Sequence[Mapping[str, Any]]) -> Any:
        self._cur.executemany(driver_sql(sql, POSTGRESQL), params)
        return self

    def fetchone(self) -> Any:
        return self._cur.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cur.fetchall()  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cur)

    @property
    def description(self) -> Any:
        return self._cur.description

    @property
    def rowcount(self) -> int:
        return int(self._cur.rowcount)

    def close(self) -> None:
        self._cur.close()
