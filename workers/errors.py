"""Errors of the durable queue. Every message says what happened and, where it can, what to do.

::

    FredicaError                  base of every error a user may see (fredica_app adds its own)
    ├── SpecError                 a workflow spec that cannot be run; nothing was written
    ├── NotFound                  no task or run with that id
    │   └── AmbiguousId           the beginning of several ids (they are listed)
    ├── InvalidState              the task or run is not in a state that allows the request
    ├── CursorExpired             the changes since a cursor can no longer all be told
    └── DatabaseError             the database cannot be used as it is
        ├── NotAFredicaDatabase   the file is not a Fredica database
        ├── DatabaseTooNew        written by a newer Fredica; this one will not touch it
        ├── DatabaseCorrupt       SQLite reports damage
        ├── DatabaseLocked        another engine holds the data directory
        └── StoreUnavailable      a write or read failed for a reason no task caused (disk
                                  full, database locked past the timeout, read-only file):
                                  nothing half-written stays; the engine waits for a full
                                  disk or a lock to pass (``waitable``), stops otherwise
"""

from __future__ import annotations


class FredicaError(Exception):
    """Base of every error Fredica reports to a user."""


class SpecError(FredicaError, ValueError):
    """A workflow spec that cannot be run: unknown type, bad payload, unknown dependency,
    cycle, negative priority… Nothing was written."""


class NotFound(FredicaError, LookupError):
    """No task or run with that id."""


class AmbiguousId(NotFound):
    """An id's beginning that several runs or tasks start with: the message lists them."""


class InvalidState(FredicaError):
    """The task or run is not in a state that allows the request."""


class CursorExpired(FredicaError):
    """The changes since this cursor can no longer all be told (the record of deletions that
    old was pruned, or the cursor is from another database): take a new snapshot."""


class DatabaseError(FredicaError):
    """The database cannot be used as it is."""


class NotAFredicaDatabase(DatabaseError):
    pass


class DatabaseTooNew(DatabaseError):
    pass


class DatabaseCorrupt(DatabaseError):
    pass


class DatabaseLocked(DatabaseError):
    pass


class StoreUnavailable(DatabaseError):
    """The database failed under a transaction (which was rolled back): the disk is full, the
    file is read-only, another program kept it locked past the timeout, an I/O error. Not the
    fault of any task. What passes by itself (space freed, a lock let go) is ``waitable``: an
    engine that meets it claims nothing more and tries again until it can write. Otherwise
    the engine stops, and its work resumes at the next start."""

    def __init__(self, message: str, *, waitable: bool = False) -> None:
        super().__init__(message)
        self.waitable = waitable


#: What PostgreSQL's driver says when the server is gone or cannot be reached.
_UNREACHABLE = (
    "connection refused",
    "server closed the connection",
    "terminating connection",
    "connection is closed",
    "connection timeout",
    "could not connect",
    "the database system is shutting down",
    "the database system is starting up",
    "consuming input failed",
    "connection failed",
)


def store_unavailable(exc: BaseException) -> StoreUnavailable:
    """Say in a user's words why the database failed (``exc``: SQLite's error, raw or wrapped
    by SQLAlchemy)."""
    text = str(getattr(exc, "orig", None) or exc)
    low = text.lower()
    if "full" in low or "no space left" in low:
        return StoreUnavailable(
            "the disk that holds the database is full: free some space on it", waitable=True
        )
    if "locked" in low or "busy" in low:
        return StoreUnavailable(
            "another program kept the database locked for longer than the timeout (a database "
            "browser, a backup tool): close it",
            waitable=True,
        )
    if any(w in low for w in _UNREACHABLE):
        return StoreUnavailable(
            "the database server cannot be reached (it stopped, restarted, or the network to "
            f"it is down): {text.strip().splitlines()[0] if text.strip() else 'no answer'}",
            waitable=True,
        )
    if "readonly" in low or "read-only" in low:
        why = (
            "the database cannot be written (a read-only file, folder or server): "
            "check its permissions"
        )
    elif "i/o" in low:
        why = "the disk reported an I/O error: check the drive, then start again"
    else:
        why = f"the database failed ({text})"
    return StoreUnavailable(why)
