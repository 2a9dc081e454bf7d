"""What a test needs of the machine beyond what the README's commands set up.

The README's test command installs the Python environment and nothing else; ``.ci/run`` adds
Debian packages. A test that needs one of those either brings what it needs or skips with one
line saying what is missing and how to get it (``need_tool``) — never fails because of the
host. docs/development.md lists these skips.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: The unprivileged user a root test run drops to (``nobody`` on Debian and most systems).
NOBODY = 65534


def need_tool(name: str, package: str) -> str:
    """The path of the program ``name``, or skip: "NAME is not installed (apt install PKG)"."""
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (apt install {package})")
    return found


def tool_mark(name: str, package: str) -> pytest.MarkDecorator:
    """A skip mark for a whole test or module that needs ``name``."""
    return pytest.mark.skipif(
        shutil.which(name) is None, reason=f"{name} is not installed (apt install {package})"
    )


@contextmanager
def folder_for_another_user() -> Iterator[Path]:
    """A temporary folder that :func:`as_another_user` may use: the caller's own when not
    root; as root, one under the system's temporary folder owned by the unprivileged user
    (pytest's folders are root's, closed to others)."""
    if os.geteuid() != 0:
        with tempfile.TemporaryDirectory() as folder:
            yield Path(folder)
        return
    folder = Path(tempfile.mkdtemp(prefix="fredica-nobody-"))
    try:
        os.chown(folder, NOBODY, NOBODY)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def as_another_user(check: Callable[[], None]) -> None:
    """Run ``check`` as an unprivileged user: in this process when the tests do not run as
    root; as root (CI always is), in a forked child that drops to ``nobody`` first, so that
    file modes mean what they say (root writes into read-only folders). A failure in the child
    fails the test with its traceback."""
    if os.geteuid() != 0:
        check()
        return
    read, write = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns that forking a threaded process may deadlock the child; the child
        # here runs one plain function and exits.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        code = 0
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            check()
        except BaseException:
            os.write(write, traceback.format_exc().encode())
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, f"as uid {NOBODY}:\n{said}"


def _mount(*args: str) -> None:
    import subprocess

    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip()}): this test needs root")


@contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """``folder`` made a filesystem of its own of ``size`` (``4m``): a tmpfs, which a write
    can fill (root writes into an ext4 image's reserved blocks, but not past a tmpfs's size).
    Needs root: skips, saying so, elsewhere."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root (CI runs as root)")
    folder.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder))
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@contextmanager
def read_only_mount(folder: Path) -> Iterator[Path]:
    """``folder`` bound onto itself read-only (a mode would not do: root ignores modes); on
    leaving, writable again. Needs root: skips, saying so, elsewhere."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root (CI runs as root)")
    _mount("--bind", str(folder), str(folder))
    try:
        done = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {done.stderr.strip()}")
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """Fill the filesystem of ``folder`` to the last byte with one file; its path (remove it
    to give the space back)."""
    ballast = folder / "ballast"
    chunk = b"\0" * (64 << 10)
    with contextlib.suppress(OSError), open(ballast, "wb") as f:
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError:
            pass
    # What a 64 KiB write could not take, a byte at a time.
    with contextlib.suppress(OSError), open(ballast, "ab", buffering=0) as f:
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass
    return ballast
