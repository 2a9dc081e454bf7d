"""The media library's table. Only :mod:`fredica_app.library.store` writes it."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from workers.models import Base


class Material(Base):
    """One media item the user brought in."""

    __tablename__ = "material"

    id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    source: Mapped[str] = mapped_column(sa.Text)  # the path or URL it came from
    title: Mapped[str] = mapped_column(sa.String(512))
    local_path: Mapped[str | None] = mapped_column(sa.Text)
    kind: Mapped[str] = mapped_column(sa.String(16), server_default="unknown")
    size: Mapped[int | None] = mapped_column(sa.BigInteger)
    duration: Mapped[float | None]
    # size + mtime + hash of the first and last blocks: cheap on multi-GB files.
    fingerprint: Mapped[str | None] = mapped_column(sa.String(128), index=True)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", server_default="{}")
    created_at: Mapped[float]
