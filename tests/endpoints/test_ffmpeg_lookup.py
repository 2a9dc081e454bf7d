"""Looking up the bundled ffmpeg when its check is killed.

imageio-ffmpeg checks its binary once per process by running ``ffmpeg -version`` and keeps the
answer, a failure included. Chaos runs found a check killed from outside (every ffmpeg on the
machine ended) leaving the fork server saying "no ffmpeg found" to every child it forked. Here
the check's ffmpeg is a real process, started and SIGKILLed before it can answer; what is
injected is only the timing (the kill comes at once, where in the field it is a race).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from imageio_ffmpeg import _utils  # the lookup's cache and check: private, pinned version

from python_endpoints.jobs import media
from python_endpoints.serving.child import JobFailed
from python_endpoints.serving.policy import JobPolicy

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("IMAGEIO_FFMPEG_EXE")), reason="the environment names the ffmpeg"
)


CHECK_CALL = subprocess.check_call


class CheckKiller:
    """Kills the first ``kills`` ``ffmpeg -version`` checks imageio-ffmpeg runs (None: all)."""

    def __init__(self, kills: int | None) -> None:
        self.kills = kills
        self.killed: list[int] = []
        self.checks = 0
        self.found = ""

    def check_call(self, cmd: list[str], **kwargs: Any) -> int:
        self.checks += 1
        if cmd[0] != self.found:
            # Another ffmpeg imageio-ffmpeg would fall back to (a conda one, the PATH's):
            # absent here, whatever this host has — named as such, a host fact kept out.
            raise FileNotFoundError(cmd[0])
        if self.kills is not None and len(self.killed) >= self.kills:
            return CHECK_CALL(cmd, **kwargs)
        with subprocess.Popen(cmd, **kwargs) as process:
            process.send_signal(signal.SIGKILL)
            code = process.wait()
        self.killed.append(process.pid)
        raise subprocess.CalledProcessError(code, cmd)


@pytest.fixture
def killer(monkeypatch: pytest.MonkeyPatch) -> Iterator[CheckKiller]:
    """A fresh lookup (nothing kept from earlier tests) whose checks go through a killer."""
    monkeypatch.setattr(media, "LOOKUP_WAITS", (0.01, 0.01, 0.01))
    found = _utils._get_ffmpeg_exe()
    assert found is not None
    _utils._get_ffmpeg_exe.cache_clear()
    the_killer = CheckKiller(kills=1)
    the_killer.found = found
    monkeypatch.setattr(subprocess, "check_call", the_killer.check_call)  # imageio's too
    yield the_killer
    monkeypatch.undo()
    _utils._get_ffmpeg_exe.cache_clear()
    assert _utils._get_ffmpeg_exe() == found  # the next test finds it as before


def test_a_killed_check_is_tried_again_and_finds_the_ffmpeg(killer: CheckKiller) -> None:
    binary = media.ffmpeg_binary({})
    assert len(killer.killed) == 1 and binary == killer.found
    assert subprocess.run([binary, "-version"], capture_output=True, check=False).returncode == 0
    checks = killer.checks
    assert media.ffmpeg_binary({}) == binary and killer.checks == checks  # the success is kept


def test_checks_killed_every_time_say_no_ffmpeg_and_the_failure_is_not_kept(
    killer: CheckKiller,
) -> None:
    killer.kills = None
    with pytest.raises(JobFailed, match="no ffmpeg found") as failed:
        media.ffmpeg_binary({})
    assert failed.value.error_type == "EXECUTOR_ERROR"
    assert len(killer.killed) == len(media.LOOKUP_WAITS) + 1
    killer.kills = len(killer.killed)  # the killing stops: the next job finds it
    assert media.ffmpeg_binary({}) == killer.found


def test_the_server_policy_does_not_keep_a_failed_look(killer: CheckKiller) -> None:
    killer.kills = None
    policy = JobPolicy()
    assert policy.fill({"ffmpeg": "/usr/bin/ffmpeg"}, None) == {"ffmpeg": "/usr/bin/ffmpeg"}  # type: ignore[arg-type]
    killer.kills = len(killer.killed)
    found = killer.found
    assert policy.refusal({"ffmpeg": found}) is None
    assert policy.fill({"ffmpeg": found}, None) == {"ffmpeg": found}  # type: ignore[arg-type]


def test_site_downloads_and_samples_find_it_after_a_killed_check(
    killer: CheckKiller, tmp_path: Path
) -> None:
    from python_endpoints.jobs import sample, site

    assert site.ffmpeg_location({"ffmpeg": None}) is not None and len(killer.killed) == 1
    _utils._get_ffmpeg_exe.cache_clear()
    killer.kills = 2
    out = sample.make_sample(tmp_path / "clip.mkv", seconds=0.5)
    assert len(killer.killed) == 2 and out.stat().st_size > 0
