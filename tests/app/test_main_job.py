"""The README's main job for real, as a user runs it: ``fredica process --sample --template
subtitles`` on a fresh data directory. A clean run says nothing on standard error but its
progress: no warning (``multiprocessing``'s resource tracker reporting "leaked semaphore
objects", a library's deprecation), no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

EXE = str(Path(sys.executable).parent / "fredica")


def test_the_main_job_runs_clean(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = subprocess.run(
        [EXE, "--data-dir", str(data), "process", "--sample", "--template", "subtitles"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    for noise in ("Warning", "warning:", "Traceback"):
        assert noise not in done.stderr, done.stderr
    assert "export_subtitles" in done.stderr and "done in" in done.stderr  # its progress lines
    assert list(data.glob("library/*/*.srt")), done.stderr
