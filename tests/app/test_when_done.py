"""``fredica worker --until-idle --then ACTION``: what happens once the queue is done, on a real
data directory with a real run. The commands that would suspend or power off this machine (or
show a notification on a desktop that is not here) go to a FAKE runner; everything else is
real — the engine, the countdown, the signals that cancel it."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fredica_app.cli import main, worker
from fredica_app.desktop import power
from fredica_app.desktop.power import WhenDone
from fredica_app.errors import FredicaError

SPEC = {
    "tasks": [
        {"key": "a", "type": "NOOP"},
        {"key": "b", "type": "SLEEP", "payload": {"seconds": 0.3}, "depends_on": ["a"]},
    ]
}


class FakeRunner:
    """A FAKE command runner (the real one would suspend or power off this machine): records
    each argv with the run statuses in the database at that moment, and answers ``code`` or
    raises ``error``."""

    def __init__(self, data: Path, code: int = 0, error: Exception | None = None) -> None:
        self.data, self.code, self.error = data, code, error
        self.calls: list[list[str]] = []
        self.statuses_then: list[list[str]] = []

    def __call__(self, argv: list[str]) -> int:
        self.calls.append(list(argv))
        self.statuses_then.append([s for (s,) in sql(self.data, "SELECT status FROM workflow_run")])
        if self.error is not None:
            raise self.error
        return self.code


def sql(data: Path, statement: str) -> list[Any]:
    with sqlite3.connect(data / "fredica.db") as conn:
        return conn.execute(statement).fetchall()


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A data directory with a NOOP → SLEEP run submitted."""
    data = tmp_path / "data"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    code, _, err = fredica(capsys, data, "submit", str(spec))
    assert code == 0, err
    return data


@pytest.fixture
def fast_countdown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A countdown of 0.6 s with a line every 0.2 s (60 s and 10 s for users)."""
    monkeypatch.setattr(worker, "COUNTDOWN_SECONDS", 0.6)
    monkeypatch.setattr(worker, "COUNTDOWN_STEP", 0.2)


def use(monkeypatch: pytest.MonkeyPatch, runner: FakeRunner) -> FakeRunner:
    monkeypatch.setattr(worker, "RUN_COMMAND", runner)
    return runner


# --- the CLI -------------------------------------------------------------------------------


@pytest.mark.parametrize("action", [WhenDone.SLEEP, WhenDone.SHUTDOWN])
def test_sleep_or_shutdown_runs_after_the_run_finished_and_a_countdown(
    data: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fast_countdown: None,
    action: WhenDone,
) -> None:
    fake = use(monkeypatch, FakeRunner(data))
    code, out, err = fredica(capsys, data, "worker", "--until-idle", "--then", action.value)
    assert code == 0, err
    assert fake.calls == [power.power_command(action)]
    assert fake.statuses_then == [["completed"]]  # the run had finished when it ran
    assert "1 run(s) finished (1 completed)" in out
    doing = "going to sleep" if action is WhenDone.SLEEP else "shutting down"
    lines = err.splitlines()
    assert lines[0] == f"{doing} in 1 s — press Ctrl-C to cancel"  # 0.6 s, rounded up
    assert lines[-1] == f"{doing} now"


def test_the_countdown_says_what_is_left_every_step(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "COUNTDOWN_SECONDS", 3)
    monkeypatch.setattr(worker, "COUNTDOWN_STEP", 1)
    fake = use(monkeypatch, FakeRunner(data))
    code, _, err = fredica(capsys, data, "worker", "--until-idle", "--then", "shutdown")
    assert code == 0, err
    assert err.splitlines() == [
        "shutting down in 3 s — press Ctrl-C to cancel",
        "shutting down in 2 s — press Ctrl-C to cancel",
        "shutting down in 1 s — press Ctrl-C to cancel",
        "shutting down now",
    ]
    assert len(fake.calls) == 1


class SignalOnCountdown(io.StringIO):
    """Standard error that sends this process ``sig`` when the countdown's first line is
    written: a user pressing Ctrl-C (SIGINT) or a service manager stopping it (SIGTERM)."""

    def __init__(self, sig: signal.Signals) -> None:
        super().__init__()
        self.sig = sig
        self.sent = False

    def write(self, text: str) -> int:
        written = super().write(text)
        if "press Ctrl-C to cancel" in text and not self.sent:
            self.sent = True
            os.kill(os.getpid(), self.sig)
        return written


@pytest.mark.parametrize(("sig", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_a_signal_during_the_countdown_cancels_it_and_runs_nothing(
    data: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sig: signal.Signals,
    exit_code: int,
) -> None:
    monkeypatch.setattr(worker, "COUNTDOWN_SECONDS", 30)  # never runs out during the test
    fake = use(monkeypatch, FakeRunner(data))
    stderr = SignalOnCountdown(sig)
    monkeypatch.setattr("sys.stderr", stderr)
    code = main(["--data-dir", str(data), "worker", "--until-idle", "--then", "shutdown"])
    assert stderr.sent
    assert code == exit_code
    assert fake.calls == []
    assert stderr.getvalue().splitlines() == [
        "shutting down in 30 s — press Ctrl-C to cancel",
        "cancelled: the computer stays on",
    ]
    # The handlers are gone with the countdown: the default SIGINT handler is back.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize(
    ("runner_kw", "expected"),
    [
        ({"code": 1}, "could not put the computer to sleep: systemctl exited 1; logind refuses"),
        (
            {"error": FileNotFoundError(2, "No such file or directory", "systemctl")},
            "could not put the computer to sleep: systemctl was not found",
        ),
        (
            {"error": subprocess.TimeoutExpired(["systemctl"], 120)},
            "could not put the computer to sleep: systemctl did not run (Command",
        ),
    ],
)
def test_a_failing_command_is_one_clear_error_line_and_exit_1(
    data: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fast_countdown: None,
    runner_kw: dict[str, Any],
    expected: str,
) -> None:
    monkeypatch.setattr(worker, "PLATFORM", "linux")
    fake = use(monkeypatch, FakeRunner(data, **runner_kw))
    code, out, err = fredica(capsys, data, "worker", "--until-idle", "--then", "sleep")
    assert code == 1
    assert len(fake.calls) == 1
    assert "1 run(s) finished" in out  # the work was done all the same
    last = err.splitlines()[-1]
    assert last.startswith(f"fredica: error: {expected}"), last


def test_then_without_until_idle_is_refused_before_anything_runs(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = use(monkeypatch, FakeRunner(data))
    code, out, err = fredica(capsys, data, "worker", "--then", "sleep")
    assert code == 2
    assert out == "" and fake.calls == []
    assert err.startswith("usage: fredica worker")
    assert "fredica worker: error: --then needs --until-idle" in err
    assert {s for (s,) in sql(data, "SELECT status FROM task")} == {"pending"}


def test_an_unknown_action_is_a_usage_error(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--data-dir", str(data), "worker", "--until-idle", "--then", "hibernate"])
    assert exited.value.code == 2
    assert "invalid choice: 'hibernate'" in capsys.readouterr().err


def test_notify_shows_the_summary_through_the_notifier(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "PLATFORM", "linux")
    fake = use(monkeypatch, FakeRunner(data))
    code, out, err = fredica(capsys, data, "worker", "--until-idle", "--then", "notify")
    assert code == 0 and err == ""
    summary = out.splitlines()[-1]
    assert fake.calls == [
        ["notify-send", "--app-name=Fredica", "Fredica: the queue is done", summary]
    ]
    assert fake.statuses_then == [["completed"]]


@pytest.mark.parametrize(
    "runner_kw",
    [{"code": 1}, {"error": FileNotFoundError(2, "No such file or directory", "notify-send")}],
)
def test_notify_without_a_working_notifier_says_it_on_stderr_and_exits_0(
    data: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    runner_kw: dict[str, Any],
) -> None:
    monkeypatch.setattr(worker, "PLATFORM", "linux")
    fake = use(monkeypatch, FakeRunner(data, **runner_kw))
    code, out, err = fredica(capsys, data, "worker", "--until-idle", "--then", "notify")
    assert code == 0 and len(fake.calls) == 1
    assert err == f"fredica: the queue is done: {out.splitlines()[-1]}\n"


def test_notify_where_there_is_no_notifier_command_says_it_on_stderr(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "PLATFORM", "win32")
    fake = use(monkeypatch, FakeRunner(data))
    code, _, err = fredica(capsys, data, "worker", "--until-idle", "--then", "notify")
    assert code == 0 and fake.calls == []
    assert err.startswith("fredica: the queue is done: 1 run(s) finished")


@pytest.mark.parametrize("action", ["nothing", "quit"])
def test_nothing_and_quit_just_exit(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    fake = use(monkeypatch, FakeRunner(data))
    code, out, err = fredica(capsys, data, "worker", "--until-idle", "--then", action)
    assert (code, err, fake.calls) == (0, "", [])
    assert "1 run(s) finished (1 completed)" in out


def test_an_unknown_system_is_refused_before_the_countdown(
    data: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fast_countdown: None,
) -> None:
    monkeypatch.setattr(worker, "PLATFORM", "sunos5")
    fake = use(monkeypatch, FakeRunner(data))
    code, _, err = fredica(capsys, data, "worker", "--until-idle", "--then", "shutdown")
    assert code == 1 and fake.calls == []
    assert "press Ctrl-C" not in err
    assert "fredica: error: Fredica cannot shut the computer down on this system (sunos5)" in err


def test_a_worker_stopped_before_the_queue_is_done_does_not_act(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while a task runs stops the worker: the queue is not done, nothing happens."""
    data = tmp_path / "data"
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps({"tasks": [{"key": "s", "type": "SLEEP", "payload": {"seconds": 60}}]})
    )
    assert fredica(capsys, data, "submit", str(spec))[0] == 0
    fake = use(monkeypatch, FakeRunner(data))

    def interrupt_once_it_runs() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if sql(data, "SELECT count(*) FROM task WHERE status = 'running'")[0][0]:
                    os.kill(os.getpid(), signal.SIGINT)
                    return
            except sqlite3.OperationalError:  # busy: try again
                pass
            time.sleep(0.05)

    thread = threading.Thread(target=interrupt_once_it_runs)
    thread.start()
    try:
        code, _, err = fredica(capsys, data, "worker", "--until-idle", "--then", "shutdown")
    finally:
        thread.join()
    assert code == 0, err
    assert "stopping: letting running tasks checkpoint" in err
    assert "press Ctrl-C" not in err and fake.calls == []


# --- the commands, pure -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "sleep", "shutdown"),
    [
        ("linux", ["systemctl", "suspend"], ["systemctl", "poweroff"]),
        (
            "darwin",
            ["pmset", "sleepnow"],
            ["osascript", "-e", 'tell app "System Events" to shut down'],
        ),
        (
            "win32",
            ["rundll32.exe", "powrprof.dll,SetSuspendState", "0,1,0"],
            ["shutdown.exe", "/s", "/t", "0"],
        ),
    ],
)
def test_power_commands_per_system(platform: str, sleep: list[str], shutdown: list[str]) -> None:
    assert power.power_command(WhenDone.SLEEP, platform) == sleep
    assert power.power_command(WhenDone.SHUTDOWN, platform) == shutdown


def test_power_command_refuses_what_is_not_a_power_action_and_unknown_systems() -> None:
    with pytest.raises(ValueError, match="runs no power command"):
        power.power_command(WhenDone.NOTIFY, "linux")
    with pytest.raises(FredicaError, match=r"cannot put the computer to sleep on this system"):
        power.power_command(WhenDone.SLEEP, "aix")


def test_perform_names_the_program_and_what_to_try(tmp_path: Path) -> None:
    with pytest.raises(FredicaError) as failed:
        power.perform(WhenDone.SHUTDOWN, lambda argv: 1, "darwin")
    assert str(failed.value).startswith("could not shut the computer down: osascript exited 1")
    assert "Automation" in str(failed.value)
    calls: list[list[str]] = []
    power.perform(WhenDone.SLEEP, lambda argv: calls.append(argv) or 0, "win32")
    assert calls == [["rundll32.exe", "powrprof.dll,SetSuspendState", "0,1,0"]]


def test_the_real_runner_runs_an_argv_without_a_shell(tmp_path: Path) -> None:
    """A real child: its exit status comes back; a missing program raises for perform to say."""
    import sys

    marker = tmp_path / "ran; touch injected"
    code = power.run_command(
        [sys.executable, "-c", "import sys; open(sys.argv[1], 'w')", str(marker)]
    )
    assert code == 0 and marker.exists() and not (tmp_path / "injected").exists()
    assert power.run_command([sys.executable, "-c", "raise SystemExit(3)"]) == 3
    with pytest.raises(FileNotFoundError):
        power.run_command([str(tmp_path / "no-such-program")])


def test_notify_commands_pass_the_texts_as_arguments_never_as_code() -> None:
    title, body = 'Done "now"', '3 run(s) finished" & do shell script "rm -rf ~"'
    mac = power.notify_command(title, body, "darwin")
    assert mac is not None and mac[-2:] == [title, body]
    assert all(body not in part for part in mac[:-2])
    assert power.notify_command(title, body, "linux") == [
        "notify-send",
        "--app-name=Fredica",
        title,
        body,
    ]
    assert power.notify_command(title, body, "win32") is None


def test_notify_never_raises() -> None:
    def missing(argv: list[str]) -> int:
        raise FileNotFoundError(argv[0])

    assert power.notify("t", "b", missing, "linux") is False
    assert power.notify("t", "b", lambda argv: 0, "linux") is True
    assert power.notify("t", "b", lambda argv: 1, "linux") is False


def test_seconds_left_counts_down_from_the_whole_countdown() -> None:
    assert power.seconds_left(100.0, 100.0, 60) == 60
    assert power.seconds_left(100.0, 100.2, 60) == 60
    assert power.seconds_left(100.0, 109.9999, 60) == 50  # a timer that fired a hair early
    assert power.seconds_left(100.0, 110.5, 60) == 50
    assert power.seconds_left(100.0, 159.5, 60) == 1
    assert power.seconds_left(100.0, 160.0, 60) == 0
    assert power.seconds_left(100.0, 500.0, 60) == 0
    assert power.countdown_text(WhenDone.SHUTDOWN, 50) == "shutting down in 50 s"
    assert power.countdown_text(WhenDone.SLEEP, 0) == "going to sleep now"
