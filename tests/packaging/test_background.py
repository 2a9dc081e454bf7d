"""The runner of the .deb's build beside the tests (``tests/support/background.py``): the
exit status and output of what it ran, a stop that ends it, and that it is not pytest's
descendant (the tests that look for leftover children must not see it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psutil
import pytest

from tests.support import background

pytestmark = pytest.mark.skipif(
    os.name != "posix", reason="the runner forks and makes a session of its own (POSIX)"
)


def test_a_failing_command_s_status_and_output_come_back(tmp_path: Path) -> None:
    code = "import sys; print('half way'); sys.exit(3)"
    run = background.start(tmp_path / "run", [sys.executable, "-c", code])
    assert run.wait(timeout=60) == 3
    assert "half way" in run.output


def test_it_runs_detached_at_the_lowest_priority_and_stop_ends_it(tmp_path: Path) -> None:
    run = background.start(tmp_path / "run", [sys.executable, "-c", "import time; time.sleep(60)"])
    leader = psutil.Process(int((tmp_path / "run" / "pid").read_text()))
    group = [leader, *leader.children(recursive=True)]
    assert len(group) == 2  # the leader and the sleeping command
    ours = {p.pid for p in psutil.Process().children(recursive=True)}
    assert not ours & {p.pid for p in group}
    assert os.getpgid(leader.pid) == leader.pid and all(p.nice() == 19 for p in group)
    assert not run.done()
    run.stop()
    _, alive = psutil.wait_procs(group, timeout=10)
    assert alive == []
