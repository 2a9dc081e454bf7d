"""A long command run beside the tests, at the lowest CPU priority, detached from pytest.

The Linux bundle and its ``.deb`` take minutes to build, most of it xz on one core or two.
Started when collection ends, at ``nice 19``, the build takes only the CPU the other tests
leave idle (they wait on child processes, timers and ffmpeg much of the time); the packaging
tests, late in the run, wait for what is left of it.

The command is not pytest's descendant: a launcher forks it into a session of its own and
exits, so the tests that look for processes a test left behind among pytest's children do
not see the build. Its exit status and its process group's id are written to files; the
session's end kills the group if it still runs.

    python -m tests.support.background DIR -- ARGV...

writes ``DIR/pid`` (the command's process group), ``DIR/output.log`` (its standard output
and error) and, once it has ended, ``DIR/status`` (its exit status).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Background:
    """A command started by :func:`start`."""

    folder: Path

    @property
    def output(self) -> str:
        return (self.folder / "output.log").read_text(errors="replace")

    def done(self) -> bool:
        return (self.folder / "status").exists()

    def wait(self, timeout: float) -> int:
        """Its exit status, once it has ended (``TimeoutError`` after ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while not self.done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"still running after {timeout:.0f} s")
            time.sleep(0.5)
        return int((self.folder / "status").read_text())

    def stop(self) -> None:
        """Kill its process group if it still runs."""
        if self.done():
            return
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.killpg(int((self.folder / "pid").read_text()), signal.SIGKILL)


def start(folder: Path, argv: list[str], *, cwd: Path | None = None) -> Background:
    """Run ``argv`` detached, at the lowest priority; its files go in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "tests.support.background", str(folder), "--", *argv],
        check=True,
        cwd=cwd,
        timeout=60,
    )
    deadline = time.monotonic() + 30
    while not (folder / "pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return Background(folder)


def _launch(folder: Path, argv: list[str]) -> None:
    if os.fork() > 0:
        return  # the launcher ends: the command is reparented, no longer pytest's
    os.setsid()
    os.nice(19)
    quiet = os.open(os.devnull, os.O_RDWR)  # not pytest's terminal or pipe: it may outlive them
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    (folder / "pid.tmp").write_text(str(os.getpid()))  # the group's leader: its id
    os.replace(folder / "pid.tmp", folder / "pid")
    status = 127
    try:
        with open(folder / "output.log", "wb") as log:
            status = subprocess.call(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    finally:
        (folder / "status.tmp").write_text(str(status))
        os.replace(folder / "status.tmp", folder / "status")
        os._exit(0)


if __name__ == "__main__":
    where, sep, *command = sys.argv[1:]
    assert sep == "--" and command, __doc__
    _launch(Path(where), command)
