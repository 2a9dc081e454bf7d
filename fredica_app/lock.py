"""The data directory's single-instance lock: one engine per database.

An OS file lock (filelock: ``flock`` on POSIX, ``LockFileEx`` on Windows), so it is released
when the process dies however it dies — a ``kill -9`` leaves no stale lock. Beside it, an
informational file names the holder for the error message. Commands that only read or submit
do not take it.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType

from filelock import FileLock, Timeout

from fredica_app.errors import DatabaseLocked


class DataDirLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.info_path = path.with_name(path.name + ".owner")
        self._lock = FileLock(str(path), timeout=0)

    def acquire(self) -> DataDirLock:
        try:
            self._lock.acquire()
        except Timeout:
            raise DatabaseLocked(
                f"another Fredica engine is already running on {self.path.parent}"
                f"{self._describe_owner()}; stop it first, or use commands that only read or "
                "submit (they work while it runs)"
            ) from None
        self.info_path.write_text(
            json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
        )
        return self

    def release(self) -> None:
        if self._lock.is_locked:
            self.info_path.unlink(missing_ok=True)
            self._lock.release()

    def is_held_elsewhere(self) -> bool:
        """True when another process holds the lock (this one does not take it)."""
        probe = FileLock(str(self.path), timeout=0)
        try:
            probe.acquire()
        except Timeout:
            return True
        probe.release()
        return False

    def _describe_owner(self) -> str:
        try:
            owner = json.loads(self.info_path.read_text())
            return f" (pid {owner['pid']} on {owner['host']})"
        except (OSError, ValueError, KeyError, TypeError):
            return ""

    def __enter__(self) -> DataDirLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
