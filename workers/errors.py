"""Errors of the durable queue. Every message says what happened and, where it can, what to do.

::

    FredicaError                  base of every error a user may see (fredica_app adds its own)
    ├── SpecError                 a workflow spec that cannot be run; nothing was written
    ├── NotFound                  no task or run with that id
    ├── InvalidState              the task or run is not in a state that allows the request
    └── DatabaseError             the database cannot be used as it is
        ├── NotAFredicaDatabase   the file is not a Fredica database
        ├── DatabaseTooNew        written by a newer Fredica; this one will not touch it
        ├── DatabaseCorrupt       SQLite reports damage
        └── DatabaseLocked        another engine holds the data directory
"""

from __future__ import annotations


class FredicaError(Exception):
    """Base of every error Fredica reports to a user."""


class SpecError(FredicaError, ValueError):
    """A workflow spec that cannot be run: unknown type, bad payload, unknown dependency,
    cycle, negative priority… Nothing was written."""


class NotFound(FredicaError, LookupError):
    """No task or run with that id."""


class InvalidState(FredicaError):
    """The task or run is not in a state that allows the request."""


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
