"""The library's reads for a command that must answer at once (``fredica runs``), on a plain
``sqlite3`` connection: the same answers as :class:`fredica_app.library.store.LibraryStore`
gives, without SQLAlchemy. SQLite only, read only."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from workers.store.quick import id_chunks

__all__ = ["titles"]


def titles(conn: sqlite3.Connection, material_ids: Collection[str]) -> dict[str, str]:
    """The titles of these materials, by id (those that exist)."""
    out: dict[str, str] = {}
    for chunk in id_chunks(material_ids):
        marks = ", ".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT id, title FROM material WHERE id IN ({marks})", chunk))
    return out
