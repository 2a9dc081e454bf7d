"""``FREDICA_LAUNCH_PROBE``: the real ``fredica gui`` says when its window is first painted,
then quits as a user would — what the launch benchmarks and the installed-bundle check time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def _start(data_dir: Path, probe: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    env.pop("FREDICA_LAUNCH_PROBE", None)
    if probe:
        env["FREDICA_LAUNCH_PROBE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "fredica_app.cli", "--data-dir", str(data_dir), "gui"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_window_reports_its_first_paint_and_quits_cleanly(tmp_path: Path) -> None:
    began = time.time()
    done = _start(tmp_path / "data", probe=True)
    assert done.returncode == 0, done.stderr
    painted = [line for line in done.stdout.splitlines() if line.startswith("painted ")]
    assert len(painted) == 1
    assert began < float(painted[0].split()[1]) < time.time()
    # It quit as a user would: the data directory was opened and closed, its lock released.
    assert (tmp_path / "data" / "fredica.db").is_file()
    assert _start(tmp_path / "data", probe=True).returncode == 0
