"""The app's logging: configured once per command, in ``logs/`` of the data directory.

=====================  =================================================================
``fredica.log``        every command of the app: the engine, recovery, start-up of the
                       endpoints server, failed attempts, and the traceback of any
                       unexpected error (the command says one line and names this file)
``endpoints.log``      the endpoints servers the app starts (``--log-file``) and their job
                       children: jobs started and ended, a job's traceback when it raises
=====================  =================================================================

Each is written by several processes at once (a worker beside a ``fredica submit``, a server
beside its jobs): :class:`python_endpoints.serving.logfile.SharedLogFile` writes each record
under an
OS lock and rotates at 5 MiB, keeping two old files. Records of level INFO and above go to the
file; only warnings and errors also reach standard error, as one line each
(``fredica: warning: …``) — a clean run prints none.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import TracebackType

from python_endpoints.serving.logfile import (
    SharedLogFile,
    log_to_file,
    stderr_warnings,
    stop_logging_to_file,
)


class CommandLogging:
    """Logging for one command run in this process: a file, and one-line warnings on standard
    error. Undone at the end, so that a command run in-process (tests) leaves nothing behind."""

    def __init__(self) -> None:
        self.file: Path | None = None
        self._file_handler: SharedLogFile | None = None
        self._stderr_handler: logging.Handler | None = None
        self._level: int | None = None

    def start(self, path: Path) -> None:
        root = logging.getLogger()
        self._level = root.level
        self._file_handler = log_to_file(path)
        self.file = path
        stderr = stderr_warnings("fredica", path)
        root.addHandler(stderr)
        self._stderr_handler = stderr

    def record_unexpected(self, exc: BaseException, command: str) -> Path | None:
        """Write ``exc`` with its traceback to the log file alone (the command says one line
        itself); the file, or None when logging has not started."""
        if self._file_handler is None:
            return None
        record = logging.getLogger("fredica_app.cli").makeRecord(
            "fredica_app.cli",
            logging.CRITICAL,
            __file__,
            0,
            "unexpected error in `fredica %s`",
            (command,),
            (type(exc), exc, exc.__traceback__),
        )
        self._file_handler.handle(record)
        return self.file

    def close(self) -> None:
        root = logging.getLogger()
        if self._stderr_handler is not None:
            root.removeHandler(self._stderr_handler)
            self._stderr_handler = None
        if self._file_handler is not None:
            stop_logging_to_file(self._file_handler)
            self._file_handler = None
        if self._level is not None:
            root.setLevel(self._level)
            self._level = None

    def __enter__(self) -> CommandLogging:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
