"""Keeping the computer awake while tasks run: a real engine (through
``Fredica.engine_session``) running real SLEEP tasks, driving a recording backend; the
process backends with real, harmless children; the Windows backend with a FAKE kernel32."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import psutil
import pytest

from fredica_app.desktop import awake
from fredica_app.desktop.awake import (
    ES_CONTINUOUS,
    ES_SYSTEM_REQUIRED,
    AwakeWhileBusy,
    Caffeinate,
    NoKeepAwake,
    SystemdInhibit,
    WindowsExecutionState,
    keep_awake_for_platform,
)
from fredica_app.services import Fredica
from workers.events import EventBus, TaskChanged

#: A child that would wait ten minutes: it stands for systemd-inhibit, which cannot reach a
#: logind here.
WAITER = [sys.executable, "-c", "import time; time.sleep(600)"]


class RecordingKeepAwake:
    """A FAKE backend (the real ones ask the OS, and logind is not reachable here): records
    ``hold`` and ``release`` and the thread each came from."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.threads: set[str] = set()
        self.held = False

    def hold(self, reason: str) -> None:
        self.calls.append(f"hold: {reason}")
        self.threads.add(_thread_name())
        self.held = True

    def release(self) -> None:
        self.calls.append("release")
        self.threads.add(_thread_name())
        self.held = False


def _thread_name() -> str:
    import threading

    return threading.current_thread().name


async def until(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.02)


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Fredica]:
    app = Fredica.open(tmp_path / "data")
    yield app
    await app.close()


# --- with the engine ------------------------------------------------------------------------


async def test_held_while_tasks_run_and_released_once_they_are_done(
    app: Fredica, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three SLEEP tasks in a chain: one hold for all of them (no release in the gaps between
    one task and the next), a release once the last has finished, while the engine runs on."""
    monkeypatch.setattr(awake, "SETTLE_SECONDS", 2.0)
    recorder = app.awake_backend = RecordingKeepAwake()
    await app.submit(
        {
            "tasks": [
                {"key": "a", "type": "SLEEP", "payload": {"seconds": 1.0}},
                {"key": "b", "type": "SLEEP", "payload": {"seconds": 1.0}, "depends_on": ["a"]},
                {"key": "c", "type": "SLEEP", "payload": {"seconds": 1.0}, "depends_on": ["b"]},
            ]
        }
    )
    async with app.engine_session() as engine:
        runner = asyncio.create_task(engine.run())
        try:
            await until(lambda: recorder.held, "held")
            assert engine.stats.completed < 3  # held while the work goes on
            await until(lambda: engine.stats.completed == 3, "all three done")
            await until(lambda: not recorder.held, "released after the last task")
            assert recorder.calls == ["hold: Fredica is running tasks", "release"]
            assert len(recorder.threads) == 1 and "keep-awake" in next(iter(recorder.threads))
        finally:
            await engine.stop()
            await runner
    assert recorder.calls == ["hold: Fredica is running tasks", "release", "release"]


async def test_a_paused_task_lets_the_computer_sleep_and_its_resume_holds_again(
    app: Fredica, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(awake, "SETTLE_SECONDS", 0.2)
    recorder = app.awake_backend = RecordingKeepAwake()
    created = await app.submit(
        {"tasks": [{"key": "long", "type": "SLEEP", "payload": {"seconds": 120}}]}
    )
    task_id = created.task_ids["long"]
    async with app.engine_session() as engine:
        runner = asyncio.create_task(engine.run())
        try:
            await until(lambda: recorder.held, "held while it runs")
            await app.control.pause(task_id)
            await until(lambda: not recorder.held, "released while paused")
            assert (await app.store.get_task(task_id)).status.value == "running"
            await app.control.resume(task_id)
            await until(lambda: recorder.held, "held again once resumed")
            await app.control.cancel(task_id)
            await until(lambda: not recorder.held, "released once cancelled")
            assert recorder.calls == [
                "hold: Fredica is running tasks",
                "release",
                "hold: Fredica is running tasks",
                "release",
            ]
        finally:
            await engine.stop()
            await runner


async def test_a_session_that_stops_with_a_task_running_releases(
    app: Fredica, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopping leaves the task to recovery (no event ends it): closing the session
    releases."""
    monkeypatch.setattr(awake, "SETTLE_SECONDS", 60.0)
    recorder = app.awake_backend = RecordingKeepAwake()
    await app.submit({"tasks": [{"key": "long", "type": "SLEEP", "payload": {"seconds": 120}}]})
    async with app.engine_session() as engine:
        runner = asyncio.create_task(engine.run())
        await until(lambda: recorder.held, "held")
        await engine.stop(drain_timeout=0.5)
        await runner
    assert not recorder.held and recorder.calls[-1] == "release"


async def test_keep_awake_off_in_the_settings_never_asks(app: Fredica) -> None:
    recorder = app.awake_backend = RecordingKeepAwake()
    app.settings.keep_awake = False
    await app.submit({"tasks": [{"key": "s", "type": "SLEEP", "payload": {"seconds": 0.3}}]})
    async with app.engine_session() as engine:
        await asyncio.wait_for(engine.run(until_idle=True), 60)
        assert engine.stats.completed == 1
    assert recorder.calls == []


# --- the bus alone --------------------------------------------------------------------------


async def test_pausing_or_resuming_a_task_that_is_not_running_changes_nothing() -> None:
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    recorder = RecordingKeepAwake()
    watcher = AwakeWhileBusy(bus, recorder, settle=0.05)
    bus.publish(TaskChanged("held", "r", "paused"))  # a pending task held by the user
    bus.publish(TaskChanged("held", "r", "resumed"))
    await asyncio.sleep(0.1)
    assert not watcher.busy and recorder.calls == []
    bus.publish(TaskChanged("t", "r", "started"))
    bus.publish(TaskChanged("t", "r", "progress", 10.0))
    await until(lambda: recorder.held, "held")
    bus.publish(TaskChanged("t", "r", "retry", error="boom"))  # the attempt ended
    await until(lambda: not recorder.held, "released")
    await watcher.close()
    bus.publish(TaskChanged("t", "r", "started"))  # not followed any more
    await asyncio.sleep(0.1)
    assert recorder.calls == ["hold: Fredica is running tasks", "release", "release"]


async def test_a_task_that_starts_and_completes_at_once_starts_nothing() -> None:
    """An inline task (NOOP) is started and completed in one go: no process for it."""
    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    recorder = RecordingKeepAwake()
    watcher = AwakeWhileBusy(bus, recorder, settle=0.05)
    for i in range(20):
        bus.publish(TaskChanged(f"t{i}", "r", "started", 0.0))
        bus.publish(TaskChanged(f"t{i}", "r", "completed", 100.0))
    await asyncio.sleep(0.1)
    assert recorder.calls == []
    await watcher.close()


async def test_a_backend_that_raises_does_not_reach_the_engine(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        """A FAKE backend that breaks its promise never to raise."""

        def hold(self, reason: str) -> None:
            raise RuntimeError("broken hold")

        def release(self) -> None:
            raise RuntimeError("broken release")

    bus = EventBus()
    bus.bind(asyncio.get_running_loop())
    watcher = AwakeWhileBusy(bus, Broken(), settle=0.05)
    with caplog.at_level(logging.ERROR, logger="fredica_app.desktop.awake"):
        bus.publish(TaskChanged("t", "r", "started"))
        await until(lambda: "broken hold" in caplog.text, "logged")
        await watcher.close()
    assert "broken release" in caplog.text
    assert watcher.held is False


# --- a child process that holds -------------------------------------------------------------


def test_systemd_inhibit_child_lives_while_held_and_is_reaped_on_release() -> None:
    backend = SystemdInhibit(WAITER)
    backend.hold("a test")
    pid = backend.pid
    assert pid is not None and psutil.pid_exists(pid)
    assert os.getsid(pid) == pid != os.getsid(0)  # its own session: a Ctrl-C does not reach it
    backend.hold("again")  # idempotent: the same child
    assert backend.pid == pid
    backend.release()
    assert backend.pid is None
    assert not psutil.pid_exists(pid)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped by the backend
    backend.release()  # idempotent


def test_the_inhibitor_ends_by_itself_when_fredica_is_killed(tmp_path: Path) -> None:
    """The default command wraps ``cat`` reading a pipe from us: a process that holds with it
    (``cat`` itself stands in for systemd-inhibit, which would run it) and is then killed with
    SIGKILL leaves no process behind."""
    holder = tmp_path / "holder.py"
    holder.write_text(
        "import sys, time\n"
        "from fredica_app.desktop.awake import SystemdInhibit\n"
        "b = SystemdInhibit(['cat'])\n"
        "b.hold('test')\n"
        "print(b.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, str(holder)], stdout=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        assert psutil.Process(child).name() == "cat"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        # Orphaned, cat is reaped by init (or the nearest subreaper) once it has ended.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _ended(child):
            time.sleep(0.05)
        assert _ended(child), "the inhibitor outlived the process that held it"
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _ended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_the_default_commands() -> None:
    argv = awake.inhibit_argv("Fredica is running tasks")
    assert argv == [
        "systemd-inhibit",
        "--what=sleep:idle",
        "--who=Fredica",
        "--why=Fredica is running tasks",
        "--mode=block",
        "cat",
    ]
    assert Caffeinate().command("x") == ["caffeinate", "-i", "-w", str(os.getpid())]


def test_a_command_that_cannot_start_warns_once_and_never_raises(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    backend = SystemdInhibit([str(tmp_path / "no-such-systemd-inhibit")])
    with caplog.at_level(logging.INFO, logger="fredica_app.desktop.awake"):
        backend.hold("a test")
        backend.release()
        backend.hold("a test")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "could not keep the computer awake" in warnings[0].getMessage()
    assert "could not start" in warnings[0].getMessage()
    assert backend.pid is None


def test_an_inhibitor_that_exits_at_once_says_why(caplog: pytest.LogCaptureFixture) -> None:
    """What systemd-inhibit does without a logind to ask: prints why and exits 1."""
    failing = [
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('Failed to connect to bus: No such file\\n'); sys.exit(1)",
    ]
    backend = SystemdInhibit(failing)
    with caplog.at_level(logging.WARNING, logger="fredica_app.desktop.awake"):
        backend.hold("a test")
        proc = backend._proc
        assert proc is not None
        proc.wait(30)
        backend.release()
    assert backend.pid is None
    [warning] = caplog.records
    assert "systemd-inhibit exited 1 (Failed to connect to bus: No such file)" in (
        warning.getMessage()
    )


# --- Windows, and choosing a backend ---------------------------------------------------------


class FakeKernel32:
    """A FAKE ``SetThreadExecutionState`` (Windows only): records the flags, answers
    ``answer`` (the previous state; 0 means it failed)."""

    def __init__(self, answer: int = ES_CONTINUOUS) -> None:
        self.answer = answer
        self.flags: list[int] = []

    def __call__(self, flags: int) -> int:
        self.flags.append(flags)
        return self.answer


def test_windows_holds_with_system_required_and_releases_with_continuous() -> None:
    kernel32 = FakeKernel32()
    backend = WindowsExecutionState(kernel32)
    backend.hold("x")
    backend.hold("x")
    backend.release()
    backend.release()
    assert kernel32.flags == [ES_CONTINUOUS | ES_SYSTEM_REQUIRED, ES_CONTINUOUS]
    assert ES_CONTINUOUS | ES_SYSTEM_REQUIRED == 0x80000001


def test_windows_failure_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    kernel32 = FakeKernel32(answer=0)
    backend = WindowsExecutionState(kernel32)
    with caplog.at_level(logging.WARNING, logger="fredica_app.desktop.awake"):
        backend.hold("x")
        backend.hold("x")
        backend.release()  # nothing was held: nothing to undo
    assert kernel32.flags == [ES_CONTINUOUS | ES_SYSTEM_REQUIRED] * 2
    assert len(caplog.records) == 1 and "SetThreadExecutionState failed" in caplog.text
    # Without kernel32 at all (not Windows): a warning, no exception.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="fredica_app.desktop.awake"):
        WindowsExecutionState().hold("x")
    assert "is not available" in caplog.text


def test_the_backend_for_each_system() -> None:
    def found(name: str) -> str:
        return f"/usr/bin/{name}"

    def missing(name: str) -> None:
        return None

    linux = keep_awake_for_platform("linux", which=found, has_system_bus=lambda: True)
    assert isinstance(linux, SystemdInhibit)
    no_bus = keep_awake_for_platform("linux", which=found, has_system_bus=lambda: False)
    assert isinstance(no_bus, NoKeepAwake) and "D-Bus" in no_bus.why
    no_systemd = keep_awake_for_platform("linux", which=missing, has_system_bus=lambda: True)
    assert isinstance(no_systemd, NoKeepAwake) and "systemd-inhibit" in no_systemd.why
    assert isinstance(keep_awake_for_platform("darwin", which=found), Caffeinate)
    assert isinstance(keep_awake_for_platform("win32"), WindowsExecutionState)
    assert isinstance(keep_awake_for_platform("sunos5"), NoKeepAwake)


def test_no_keep_awake_says_why_once_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    backend = NoKeepAwake("no system D-Bus to reach logind")
    with caplog.at_level(logging.INFO, logger="fredica_app.desktop.awake"):
        for _ in range(3):
            backend.hold("x")
            backend.release()
    assert [r.getMessage() for r in caplog.records] == [
        "cannot keep the computer awake here: no system D-Bus to reach logind"
    ]
    assert all(r.levelno == logging.INFO for r in caplog.records)
