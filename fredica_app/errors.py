"""Errors the application reports. The queue's own errors live in :mod:`workers.errors`; this
module re-exports them beside the application's, so callers import from one place.

::

    FredicaError                      (workers.errors)
    ├── SpecError, NotFound (AmbiguousId: the beginning of several ids), InvalidState
    ├── DatabaseError
    │   ├── NotAFredicaDatabase, DatabaseTooNew, DatabaseCorrupt, DatabaseLocked
│   ├── StoreUnavailable          the database cannot be written (or failed under a write)
    │   ├── MigrationFailed           an upgrade failed and was rolled back
    │   └── UpgradeWaits              a shared queue's upgrade waits for its older engines
    ├── SettingsError                 settings that cannot be read or written
    ├── DataDirError                  a data directory (or one of its folders) that cannot be made
    ├── TemplateError                 an unknown workflow template
    └── MediaImportError              a path or URL that cannot be brought into the library
"""

from __future__ import annotations

from workers.errors import (
    AmbiguousId,
    DatabaseCorrupt,
    DatabaseError,
    DatabaseLocked,
    DatabaseTooNew,
    FredicaError,
    InvalidState,
    NotAFredicaDatabase,
    NotFound,
    SpecError,
    StoreUnavailable,
)

__all__ = [
    "AmbiguousId",
    "DataDirError",
    "DatabaseCorrupt",
    "DatabaseError",
    "DatabaseLocked",
    "DatabaseTooNew",
    "FredicaError",
    "InvalidState",
    "MediaImportError",
    "MigrationFailed",
    "NotAFredicaDatabase",
    "NotFound",
    "SettingsError",
    "SpecError",
    "StoreUnavailable",
    "TemplateError",
    "UpgradeWaits",
]


class MigrationFailed(DatabaseError):
    """A schema upgrade failed; it was rolled back and the database is as it was."""


class UpgradeWaits(DatabaseError):
    """A shared queue's schema would need an upgrade while engines of an older build run on
    it: nothing was changed."""


class SettingsError(FredicaError):
    """Settings that cannot be read or written."""


class DataDirError(FredicaError):
    """A data directory, or one of the folders Fredica keeps in it, that cannot be created or
    used (a file in its place, no permission)."""


class TemplateError(FredicaError):
    """An unknown workflow template, or one that cannot be expanded."""


class NoSubtitlesFor(TemplateError):
    """A material a template that burns subtitles finds no subtitle file beside (a batch
    skips it, saying so)."""


class MediaImportError(FredicaError):
    """A path or URL that cannot be brought into the library (missing, unreadable, bad URL)."""
