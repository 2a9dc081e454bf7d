"""The .deb's build for the packaging tests: started when collection ends
(``tests/conftest.py``), beside the other tests, and waited for by their fixture
(``tests/packaging/test_deb_install.py``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support import background

ROOT = Path(__file__).resolve().parents[2]
#: The build running beside the tests, in the session's stash.
BUILD = pytest.StashKey[background.Background]()


def can_build() -> bool:
    """The .deb is built on Linux, with dpkg-deb."""
    return sys.platform.startswith("linux") and shutil.which("dpkg-deb") is not None


def start_build(folder: Path) -> background.Background:
    """``packaging/build.py`` into ``folder/dist`` (its work in ``folder/build``)."""
    argv = [sys.executable, str(ROOT / "packaging" / "build.py")]
    argv += ["--out", str(dist(folder)), "--work", str(work(folder))]
    return background.start(folder / "run", argv, cwd=ROOT)


def dist(folder: Path) -> Path:
    return folder / "dist"


def work(folder: Path) -> Path:
    return folder / "build"
