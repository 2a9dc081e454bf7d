"""The media library's tables: ``material``, and ``watched_file`` (what the watch folders
submitted). Only :mod:`fredica_app.library.store` writes ``material``; only
:mod:`fredica_app.library.watched` writes ``watched_file``."""

from __future__ import annotations

import sqlalchemy as sa

from fredica_app.library.fspath import from_stored, to_stored
from workers.models import JSON, metadata


class StoredPath(sa.TypeDecorator[str]):
    """A file path (or a URL), kept losslessly whatever bytes it holds
    (:mod:`fredica_app.library.fspath`); TEXT in the database."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: sa.Dialect) -> str | None:
        return None if value is None else to_stored(value)

    def process_result_value(self, value: str | None, dialect: sa.Dialect) -> str | None:
        return None if value is None else from_stored(value)


#: One media item the user brought in.
material_t = sa.Table(
    "material",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    # The path or URL it came from.
    sa.Column("source", StoredPath(), nullable=False),
    sa.Column("title", sa.String(512), nullable=False),
    sa.Column("local_path", StoredPath()),
    sa.Column("kind", sa.String(16), nullable=False, server_default="unknown"),
    sa.Column("size", sa.BigInteger()),
    sa.Column("duration", sa.Float()),
    # size + mtime + hash of the first and last blocks: cheap on multi-GB files.
    sa.Column("fingerprint", sa.String(128), index=True),
    sa.Column("metadata", JSON, nullable=False, server_default="{}"),
    sa.Column("created_at", sa.Float(), nullable=False),
)

#: A file a watch folder took in, by its content: a restart, a rename or a touch of the same
#: bytes submits nothing again; changed bytes are a new row, and a new run.
watched_t = sa.Table(
    "watched_file",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
    # The watch folder (as in the settings) and the template it submits.
    sa.Column("folder", StoredPath(), nullable=False),
    sa.Column("template", sa.String(128), nullable=False),
    # Size and a hash of the first and last blocks, not the mtime (a touch changes nothing).
    sa.Column("content_fingerprint", sa.String(128), nullable=False),
    # Where the file was when it was last seen.
    sa.Column("path", StoredPath(), nullable=False),
    sa.Column("material_id", sa.String(64)),
    # The run submitted for it; NULL while the submission has not been made (a crash between
    # taking the file in and submitting it: the next start submits it).
    sa.Column("workflow_run_id", sa.String(36)),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.Column("submitted_at", sa.Float()),
    sa.UniqueConstraint("folder", "template", "content_fingerprint"),
)
