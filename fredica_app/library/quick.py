"""The library's reads for a command that must answer at once (``fredica runs``), on a plain
``sqlite3`` connection: the same answers as :class:`fredica_app.library.store.LibraryStore`
gives, without SQLAlchemy. SQLite only, read only."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from workers.store.quick import id_chunks

__all__ = ["escape_like", "matching", "titles"]


def titles(conn: sqlite3.Connection, material_ids: Collection[str]) -> dict[str, str]:
    """The titles of these materials, by id (those that exist)."""
    out: dict[str, str] = {}
    for chunk in id_chunks(material_ids):
        marks = ", ".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT id, title FROM material WHERE id IN ({marks})", chunk))
    return out


def escape_like(text: str) -> str:
    """``text`` as a LIKE pattern's literal part (escape character: backslash)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def matching(conn: sqlite3.Connection, text: str) -> set[str]:
    """What :meth:`LibraryStore.matching` gives: the materials ``text`` names."""
    like = "%" + escape_like(text.casefold()) + "%"
    prefix = escape_like(text) + "%"
    rows = conn.execute(
        "SELECT id FROM material WHERE lower(title) LIKE ? ESCAPE '\\' "
        "OR lower(source) LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\'",
        (like, like, prefix),
    )
    return {row[0] for row in rows}
