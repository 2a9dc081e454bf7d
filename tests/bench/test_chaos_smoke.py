"""``python -m bench.chaos``, a short seeded run: real workers, servers and job children
killed, stopped and quit at random moments, then the work finished and checked from outside.
Eight faults here (every kind but one is dealt with this seed); the long run is in
docs/reliability.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_a_short_chaos_run_loses_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.chaos", "--seed", "7", "--cycles", "8", "--runs", "4",
         "--clips", "1", "--json"],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(done.stdout.splitlines()[-1])
    assert figures["violations"] == []
    assert sum(figures["dealt"].values()) == 8
    assert figures["dealt"].get("worker", 0) >= 1 and figures["dealt"].get("server", 0) >= 1
    rows = dict(line.split(" | ", 1) for line in done.stdout.splitlines() if " | " in line)
    assert rows["violations"] == "0"
