"""The media library's store: the only module that writes the ``material`` table.

Its transactions are short and rare (an import, a probe result), so it runs them synchronously
on the caller's thread; async callers go through :func:`asyncio.to_thread`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from fredica_app.library.models import material_t
from fredica_app.library.quick import escape_like
from fredica_app.library.records import MaterialRecord
from python_endpoints.text import clean_text, is_text


def _record(row: sa.Row[Any]) -> MaterialRecord:
    return MaterialRecord(
        id=row.id,
        source=row.source,
        title=row.title,
        local_path=row.local_path,
        kind=row.kind,
        size=row.size,
        duration=row.duration,
        fingerprint=row.fingerprint,
        meta=dict(row.metadata or {}),
        created_at=row.created_at,
    )


@dataclass(frozen=True, slots=True)
class NewMaterial:
    """A material to add (:meth:`LibraryStore.add_all`)."""

    source: str
    title: str
    local_path: str | None
    kind: str
    size: int | None = None
    fingerprint: str | None = None
    meta: dict[str, Any] | None = None
    material_id: str | None = None


class LibraryStore:
    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine

    def add(
        self,
        *,
        source: str,
        title: str,
        local_path: str | None,
        kind: str,
        size: int | None = None,
        fingerprint: str | None = None,
        meta: dict[str, Any] | None = None,
        material_id: str | None = None,
    ) -> MaterialRecord:
        new = NewMaterial(source, title, local_path, kind, size, fingerprint, meta, material_id)
        (added,) = self.add_all([new])
        return added

    def add_all(self, new: Sequence[NewMaterial]) -> list[MaterialRecord]:
        """Add these materials in one transaction — one commit, so a folder of a thousand
        files pays one sync of the database, not a thousand; in their order."""
        now = time.time()
        values = [
            {
                "id": n.material_id or str(uuid.uuid4()),
                "source": n.source,
                "title": clean_text(n.title)[:512],  # for people; the path keeps the bytes
                "local_path": n.local_path,
                "kind": n.kind,
                "size": n.size,
                "duration": None,
                "fingerprint": n.fingerprint,
                "metadata": n.meta or {},
                "created_at": now,
            }
            for n in new
        ]
        if not values:
            return []
        with self._engine.begin() as conn:
            conn.execute(sa.insert(material_t), values)
        ids = [str(v["id"]) for v in values]
        found = self.get_many(ids)
        return [found[i] for i in ids]

    def get_many(self, material_ids: Sequence[str]) -> dict[str, MaterialRecord]:
        """The materials with these ids that exist, by id."""
        out: dict[str, MaterialRecord] = {}
        wanted = [i for i in material_ids if is_text(i)]
        with self._engine.connect() as conn:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                rows = conn.execute(sa.select(material_t).where(material_t.c.id.in_(chunk)))
                out.update((row.id, _record(row)) for row in rows)
        return out

    def get(self, material_id: str) -> MaterialRecord | None:
        if not is_text(material_id):  # SQLite refuses it, and no id holds one
            return None
        with self._engine.connect() as conn:
            row = conn.execute(sa.select(material_t).where(material_t.c.id == material_id)).first()
        return None if row is None else _record(row)

    def _get(self, material_id: str) -> MaterialRecord:
        found = self.get(material_id)
        assert found is not None
        return found

    def find_by_fingerprints(self, fingerprints: list[str]) -> dict[str, MaterialRecord]:
        """The materials already in the library with these fingerprints, by fingerprint."""
        out: dict[str, MaterialRecord] = {}
        with self._engine.connect() as conn:
            for i in range(0, len(fingerprints), 500):
                chunk = fingerprints[i : i + 500]
                rows = conn.execute(
                    sa.select(material_t).where(material_t.c.fingerprint.in_(chunk))
                ).all()
                for row in rows:
                    out.setdefault(row.fingerprint, _record(row))
        return out

    def find_by_source(self, source: str) -> MaterialRecord | None:
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(material_t)
                .where(material_t.c.source == source)
                .order_by(material_t.c.created_at)
                .limit(1)
            ).first()
        return None if row is None else _record(row)

    def titles(self, material_ids: Iterable[str]) -> dict[str, str]:
        """The titles of these materials, by id (those that exist)."""
        ids = sorted(set(material_ids))
        out: dict[str, str] = {}
        with self._engine.connect() as conn:
            for i in range(0, len(ids), 500):
                rows = conn.execute(
                    sa.select(material_t.c.id, material_t.c.title).where(
                        material_t.c.id.in_(ids[i : i + 500])
                    )
                ).all()
                out.update({r.id: r.title for r in rows})
        return out

    def matching(self, text: str) -> set[str]:
        """The ids of the materials ``text`` names: in its title or its source (any case), or
        the start of its id."""
        like = "%" + escape_like(text.casefold()) + "%"
        with self._engine.connect() as conn:
            rows = conn.execute(
                sa.select(material_t.c.id).where(
                    sa.func.lower(material_t.c.title).like(like, escape="\\")
                    | sa.func.lower(material_t.c.source).like(like, escape="\\")
                    | material_t.c.id.startswith(text, autoescape=True)
                )
            ).scalars()
            return set(rows)

    def delete(self, material_id: str) -> bool:
        """Remove a material from the library (its row only: files are the caller's matter).
        False when it was not there."""
        with self._engine.begin() as conn:
            gone = conn.execute(sa.delete(material_t).where(material_t.c.id == material_id))
        return bool(gone.rowcount)

    def list(self) -> list[MaterialRecord]:
        with self._engine.connect() as conn:
            rows = conn.execute(sa.select(material_t).order_by(material_t.c.created_at)).all()
        return [_record(r) for r in rows]

    def update_from_probe(self, material_id: str, probe: dict[str, Any]) -> None:
        """Fill a material from a PROBE result (streams, duration, kind, size)."""
        self.update_from_probes({material_id: probe})

    def update_from_probes(self, probes: Mapping[str, dict[str, Any]]) -> None:
        """Fill materials from PROBE results (by material id), in one transaction."""
        if not probes:
            return
        with self._engine.begin() as conn:
            for material_id, probe in probes.items():
                self._fill(conn, material_id, probe, None)

    def record_look(
        self, material_id: str, probe: dict[str, Any] | None, error: str | None
    ) -> None:
        """Keep what the first look at a material found (:mod:`fredica_app.services.inspection`):
        its probe, when there is one, and what went wrong; a material looked at is not looked
        at again."""
        with self._engine.begin() as conn:
            look = {"at": time.time(), "error": error}
            self._fill(conn, material_id, probe or {}, look)

    def _fill(
        self,
        conn: sa.Connection,
        material_id: str,
        probe: dict[str, Any],
        look: dict[str, Any] | None,
    ) -> None:
        row = conn.execute(
            sa.select(material_t.c.metadata, material_t.c.kind).where(
                material_t.c.id == material_id
            )
        ).first()
        if row is None:  # removed meanwhile
            return
        meta = dict(row.metadata or {})
        values: dict[str, Any] = {"metadata": meta}
        if probe:
            meta["streams"] = probe.get("streams", [])
            meta["format"] = probe.get("format")
            meta["subtitles"] = probe.get("subtitles", 0)
            meta["chapters"] = probe.get("chapters", [])
            if isinstance(probe.get("duration"), int | float):
                values["duration"] = float(probe["duration"])
            if isinstance(probe.get("size"), int):
                values["size"] = probe["size"]
            # A subtitle file stays one: to a probe it is only "other".
            if probe.get("kind") in ("video", "audio", "other") and row.kind != "subtitles":
                values["kind"] = probe["kind"]
        if look is not None:
            meta["look"] = look
        conn.execute(sa.update(material_t).where(material_t.c.id == material_id).values(**values))
