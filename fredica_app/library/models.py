"""The media library's tables: ``material``, and ``watched_file`` (what the watch folders
submitted). Only :mod:`fredica_app.library.store` writes ``material``; only
:mod:`fredica_app.library.watched` writes ``watched_file``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from fredica_app.library.fspath import from_stored, to_stored
from workers.models import Base


class StoredPath(sa.TypeDecorator[str]):
    """A file path (or a URL), kept losslessly whatever bytes it holds
    (:mod:`fredica_app.library.fspath`); TEXT in the database."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: sa.Dialect) -> str | None:
        return None if value is None else to_stored(value)

    def process_result_value(self, value: str | None, dialect: sa.Dialect) -> str | None:
        return None if value is None else from_stored(value)


class Material(Base):
    """One media item the user brought in."""

    __tablename__ = "material"

    id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    source: Mapped[str] = mapped_column(StoredPath)  # the path or URL it came from
    title: Mapped[str] = mapped_column(sa.String(512))
    local_path: Mapped[str | None] = mapped_column(StoredPath)
    kind: Mapped[str] = mapped_column(sa.String(16), server_default="unknown")
    size: Mapped[int | None] = mapped_column(sa.BigInteger)
    duration: Mapped[float | None]
    # size + mtime + hash of the first and last blocks: cheap on multi-GB files.
    fingerprint: Mapped[str | None] = mapped_column(sa.String(128), index=True)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", server_default="{}")
    created_at: Mapped[float]


class WatchedFile(Base):
    """A file a watch folder took in, by its content: a restart, a rename or a touch of the
    same bytes submits nothing again; changed bytes are a new row, and a new run."""

    __tablename__ = "watched_file"
    __table_args__ = (sa.UniqueConstraint("folder", "template", "content_fingerprint"),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    #: The watch folder (as in the settings) and the template it submits.
    folder: Mapped[str] = mapped_column(StoredPath)
    template: Mapped[str] = mapped_column(sa.String(128))
    #: Size and a hash of the first and last blocks, not the mtime (a touch changes nothing).
    content_fingerprint: Mapped[str] = mapped_column(sa.String(128))
    #: Where the file was when it was last seen.
    path: Mapped[str] = mapped_column(StoredPath)
    material_id: Mapped[str | None] = mapped_column(sa.String(64))
    #: The run submitted for it; NULL while the submission has not been made (a crash between
    #: taking the file in and submitting it: the next start submits it).
    workflow_run_id: Mapped[str | None] = mapped_column(sa.String(36))
    created_at: Mapped[float]
    submitted_at: Mapped[float | None]
