"""A material as the library's readers see it: a plain record, apart from the store (which
needs SQLAlchemy), so that a client showing materials need not import the database to name
their type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class MaterialRecord:
    id: str
    source: str
    title: str
    local_path: str | None
    kind: str
    size: int | None
    duration: float | None
    fingerprint: str | None
    meta: dict[str, Any]
    created_at: float

    @property
    def is_url(self) -> bool:
        return self.source.startswith(("http://", "https://"))
