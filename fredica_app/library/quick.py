"""The library's reads for a command that must answer at once (``fredica runs``), on a plain
``sqlite3`` connection: the same answers as :class:`fredica_app.library.store.LibraryStore`
gives, without SQLAlchemy. SQLite only, read only."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

__all__ = ["titles"]

_CHUNK = 500


def titles(conn: sqlite3.Connection, material_ids: Iterable[str]) -> dict[str, str]:
    """The titles of these materials, by id (those that exist)."""
    ids = sorted(set(material_ids))
    out: dict[str, str] = {}
    for i in range(0, len(ids), _CHUNK):
        chunk = ids[i : i + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT id, title FROM material WHERE id IN ({marks})", chunk))
    return out
