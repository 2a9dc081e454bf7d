"""Log files that several processes write at once, rotated by size (standard library only).

Fredica logs to files in the data directory's ``logs/`` folder, one per kind of process:
``fredica.log`` (the command line and the engine) and ``endpoints.log`` (an endpoints server
and its job children). Several processes of a kind often run at once — a ``worker`` beside a
``fredica submit``, the endpoints servers of a ``worker`` and of a ``doctor``, a server beside
its jobs — and the standard :class:`logging.handlers.RotatingFileHandler` is not safe then:
each process keeps its own handle and rotates on its own, so one renames the file under the
others (and on Windows a file another process holds open cannot be renamed at all).

:class:`SharedLogFile` writes each record under an exclusive OS lock on ``<file>.lock``
(``flock`` on POSIX, ``msvcrt.locking`` on Windows): it opens the file in append mode, writes
the record, closes it, and rotates (``<file>.1`` … ``<file>.N``) under the same lock when the
next record would take the file past its size. No handle stays open between records. A record
costs an open, a lock and a close (tens of microseconds): Fredica logs a few lines per job
and per failure, never per frame or per progress step.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: The size at which a log file is rotated, and how many old files are kept beside it
#: (``.1`` is the newest): at most 15 MiB per kind of process.
MAX_BYTES = 5 * 2**20
BACKUPS = 2
FORMAT = "%(asctime)s %(levelname)-7s %(processName)s[%(process)d] %(name)s: %(message)s"

#: Loggers whose records below WARNING say nothing worth keeping: a websocket opened and
#: closed for every job, Alembic setting up its plugins at every start.
QUIET = ("websockets", "alembic.runtime.plugins")

_current: Path | None = None


def _not_chatter(record: logging.LogRecord) -> bool:
    if record.levelno >= logging.WARNING:
        return True
    return not any(record.name == q or record.name.startswith(q + ".") for q in QUIET)


#: How a log file is opened: appended to, created readable by its user alone (what ran, and
#: on which files, is nobody else's business).
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT


class SharedLogFile(logging.Handler):
    """A size-rotated log file that any number of processes may write at once."""

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        super().__init__()
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.max_bytes = max_bytes
        self.backups = backups
        self.setFormatter(logging.Formatter(FORMAT))
        self.addFilter(_not_chatter)
        self._said_failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        """Say once, in one line, that the file cannot be written (a full disk, a removed
        folder) — not a traceback per record; later records are tried again."""
        if not self._said_failed:
            self._said_failed = True
            exc = sys.exc_info()[1]
            with contextlib.suppress(Exception):
                sys.stderr.write(f"warning: cannot write the log file {self.path}: {exc}\n")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            data = (self.format(record) + "\n").encode("utf-8", "backslashreplace")
            with _exclusive(self.lock_path):
                try:
                    size = os.stat(self.path).st_size
                except FileNotFoundError:
                    size = 0
                if size and size + len(data) > self.max_bytes:
                    self._rotate()
                with os.fdopen(os.open(self.path, _APPEND, 0o600), "ab") as f:
                    f.write(data)
        except Exception:
            self.handleError(record)

    def _rotate(self) -> None:
        for n in range(self.backups, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n - 1}") if n > 1 else self.path
            with contextlib.suppress(FileNotFoundError):
                os.replace(older, self.path.with_name(f"{self.path.name}.{n}"))
        if self.backups == 0:
            self.path.unlink(missing_ok=True)


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive OS lock on ``lock_path`` (created if need be); released when the
    file is closed, and by the OS if the process dies."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if sys.platform == "win32":
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # waits up to 10 s, then raises
            try:
                yield
            finally:
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
    finally:
        os.close(fd)


def log_to_file(path: Path, level: int = logging.INFO) -> SharedLogFile:
    """Send this process's log records of ``level`` and above to ``path`` (the folder is
    created); return the handler, added to the root logger. Child processes started after this
    learn the path from :func:`current_file`."""
    global _current
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = SharedLogFile(path)
    handler.setLevel(level)
    root = logging.getLogger()
    root.addHandler(handler)
    if root.getEffectiveLevel() > level:
        root.setLevel(level)
    _current = path
    return handler


def stop_logging_to_file(handler: SharedLogFile) -> None:
    """Undo :func:`log_to_file` (a command run in-process, e.g. by a test, ends)."""
    global _current
    logging.getLogger().removeHandler(handler)
    handler.close()
    if _current == handler.path:
        _current = None


def current_file() -> Path | None:
    """The log file this process writes (None: none), for the processes it starts."""
    return _current


class OneLine(logging.Formatter):
    """``<prefix>: warning: message`` — one line for a terminal, never a traceback (the log
    file has it): an exception's type and text are added, and where its traceback is."""

    def __init__(self, prefix: str, log_file: Path | None = None) -> None:
        super().__init__()
        self.prefix = prefix
        self.log_file = log_file

    def format(self, record: logging.LogRecord) -> str:
        level = "error" if record.levelno >= logging.ERROR else "warning"
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc}"
            text += f"; the traceback is in {self.log_file})" if self.log_file else ")"
        return f"{self.prefix}: {level}: " + " ".join(text.splitlines())


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes (a progress display or a
    test may have replaced it since the handler was made)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def stderr_warnings(prefix: str, log_file: Path | None) -> logging.Handler:
    """A handler for the root logger: warnings and errors on standard error, one line each
    (:class:`OneLine`)."""
    handler = _CurrentStderr()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(OneLine(prefix, log_file))
    return handler
