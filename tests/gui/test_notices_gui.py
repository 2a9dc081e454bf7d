"""What the desktop app notifies, over real data directories: runs finished by a headless
``fredica worker`` while no window was open are told once at the next start and never again
(not after a crash of the app that showed them either); runs finishing while the window is
open are told once each, a failed one with what failed, a burst in one summary; a restart
to review once; a full disk at once, and a disk nearly full once until it recovers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest

from fredica_app.gui.app import GuiApp
from fredica_app.gui.host import AppHost, Mode
from fredica_app.gui.notices import DiskWatch, first_line, measure
from fredica_app.gui.notify import Notifier, Shown
from fredica_app.services import Fredica
from fredica_app.views.disk import GiB, Usage
from tests.gui.factory import make_task
from tests.gui.hosting import call
from tests.support.host import fill, small_disk
from workers.changes import Change
from workers.states import ErrorType, TaskStatus

pytestmark = pytest.mark.slow

WAIT = 60_000  # ms: a shared two-core machine
EXE = str(Path(sys.executable).parent / "fredica")
NOOP = {"tasks": [{"key": "a", "type": "NOOP"}]}


def fredica(data: Path, *args: str) -> str:
    done = subprocess.run(
        [EXE, "--data-dir", str(data), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def finish_headless(data: Path, tmp_path: Path, *, cli: bool = False) -> str:
    """A NOOP run finished by a headless ``fredica worker`` (no window open); its id.
    Submitted with ``fredica submit`` (``cli``), or in this process (quicker)."""
    if cli:
        path = tmp_path / "spec.json"
        path.write_text(json.dumps(NOOP))
        run_id = json.loads(fredica(data, "submit", str(path), "--json"))["run_id"]
    else:
        run_id = asyncio.run(submit(data, [NOOP]))[0]
    fredica(data, "worker", "--until-idle")
    return str(run_id)


async def submit(data: Path, specs: list[dict[str, Any]]) -> list[str]:
    app = Fredica.open(data)
    try:
        return [(await app.submit(spec)).run_id for spec in specs]
    finally:
        await app.close()


@contextmanager
def started(qtbot: Any, qapp: Any, data: Path) -> Iterator[tuple[GuiApp, list[Any]]]:
    """The desktop app on ``data`` (offscreen: no tray, no notification server), and the
    takes of notices it made; until its first take is done. Quit at the end."""
    gui = GuiApp(qapp, data)
    qtbot.addWidget(gui.window)
    takes: list[Any] = []
    gui.notices.taken.connect(takes.append)
    gui.start()
    try:
        qtbot.waitUntil(lambda: len(takes) >= 1, timeout=WAIT)
        yield gui, takes
    finally:
        if gui.host.state.mode is not Mode.STOPPED:
            gui.quit()
        assert gui.host.join(60), "the host's thread did not end"


def runs_told(gui: GuiApp) -> list[Shown]:
    return [s for s in gui.notifier.shown if s.title.startswith(("Done:", "Failed:"))]


def take_again(qtbot: Any, gui: GuiApp, takes: list[Any]) -> list[Any]:
    """Take now, and wait for it: what it found."""
    before = len(takes)
    gui.notices.take()
    qtbot.waitUntil(lambda: len(takes) > before, timeout=WAIT)
    return list(takes[-1])


# --- durable notices ------------------------------------------------------------------------


def test_a_run_a_headless_worker_finished_is_told_once_at_the_next_start(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    run_id = finish_headless(data, tmp_path, cli=True)

    with started(qtbot, qapp, data) as (gui, takes):
        assert [n.run_id for n in takes[0]] == [run_id]
        # A spec's run has neither a material nor a template: its id names it.
        assert gui.notifier.shown == [
            Shown(f"Done: {run_id[:8]}", "The run has finished.", "toast", run_id)
        ]
        assert take_again(qtbot, gui, takes) == []
        assert len(gui.notifier.shown) == 1

    with started(qtbot, qapp, data) as (gui, takes):
        assert takes == [[]]
        assert gui.notifier.shown == []


def test_with_notifications_off_the_notices_are_taken_all_the_same(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    run_id = finish_headless(data, tmp_path)
    (data / "settings.json").write_text(json.dumps({"notifications": False}))
    with started(qtbot, qapp, data) as (gui, takes):
        assert [n.run_id for n in takes[0]] == [run_id]  # taken: marked shown
        assert gui.notifier.shown == []
    (data / "settings.json").write_text(json.dumps({"notifications": True}))
    with started(qtbot, qapp, data) as (gui, takes):
        assert takes == [[]] and gui.notifier.shown == []  # no pile of old ones


CHILD = textwrap.dedent(
    """
    import json, sys
    from fredica_app.gui.app import GuiApp, make_qapplication

    qapp = make_qapplication()
    gui = GuiApp(qapp, sys.argv[1])

    def said(shown):
        print(json.dumps({"title": shown.title, "run_id": shown.run_id}), flush=True)

    gui.notifier.delivered.connect(said)
    gui.start()
    qapp.exec()
    """
)


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the app showed nothing in time"
    return proc.stdout.readline()


def test_a_notice_shown_before_the_app_was_killed_is_not_shown_again(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    run_id = finish_headless(data, tmp_path)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        shown = json.loads(read_line(child, 120))
        assert shown == {"title": f"Done: {run_id[:8]}", "run_id": run_id}
        children = psutil.Process(child.pid).children(recursive=True)
    finally:
        os.kill(child.pid, signal.SIGKILL)  # no graceful anything
        child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    for process in children:  # an endpoints server, had it started one: not left behind
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(children, timeout=30)

    with started(qtbot, qapp, data) as (gui, takes):
        assert takes == [[]]
        assert runs_told(gui) == []


# --- while the window is open ---------------------------------------------------------------


def spec_of(n: int, kind: str = "NOOP") -> dict[str, Any]:
    return {"tasks": [{"key": f"t{n}", "type": kind}]}


def test_runs_finishing_while_the_window_is_open(qtbot: Any, qapp: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with started(qtbot, qapp, data) as (gui, takes):
        assert takes == [[]]
        host = gui.host

        # One run: one notification, told once.
        created = call(host, lambda app: app.submit(spec_of(1)))
        qtbot.waitUntil(lambda: len(runs_told(gui)) == 1, timeout=WAIT)
        assert runs_told(gui)[0] == Shown(
            f"Done: {created.run_id[:8]}", "The run has finished.", "toast", created.run_id
        )
        assert take_again(qtbot, gui, takes) == []
        assert len(runs_told(gui)) == 1

        # A failed run says what failed: the task's type and the first line of its error.
        spec = {
            "tasks": [
                {"key": "nap", "type": "SLEEP", "payload": {"seconds": 1.5}},
                {"key": "broken", "type": "NOOP", "depends_on": ["nap"]},
            ]
        }
        failed = call(host, lambda app: app.submit(spec))
        broken = failed.task_ids["broken"]

        async def break_payload(app: Any) -> None:
            # As if written by a newer Fredica: the engine fails it with PAYLOAD_ERROR.
            def write() -> None:
                with app.store.engine.begin() as conn:
                    conn.exec_driver_sql(
                        "UPDATE task SET payload = '{\"schema_version\": 9}' WHERE id = ?",
                        (broken,),
                    )

            await asyncio.to_thread(write)

        call(host, break_payload)
        qtbot.waitUntil(lambda: len(runs_told(gui)) == 2, timeout=WAIT)
        task = call(host, lambda app: app.store.get_task(broken))
        assert task.status is TaskStatus.FAILED and task.error
        told = runs_told(gui)[1]
        assert told.title == f"Failed: {failed.run_id[:8]}" and told.run_id == failed.run_id
        assert told.body == f"NOOP failed: {first_line(task.error)}"
        assert "\n" not in told.body

        # A burst of five: one summary, whose click opens the queue.
        call(host, lambda app: app.control.pause_queue())
        for n in range(5):
            call(host, lambda app, n=n: app.submit(spec_of(10 + n)))
        shown_before = len(gui.notifier.shown)
        call(host, lambda app: app.control.resume_queue())
        qtbot.waitUntil(lambda: len(gui.notifier.shown) > shown_before, timeout=WAIT)
        summary = gui.notifier.shown[shown_before:]
        assert summary == [Shown("5 run(s) finished", "5 completed", "toast", None)]
        assert take_again(qtbot, gui, takes) == []
        assert len(gui.notifier.shown) == shown_before + 1


def test_more_than_three_left_while_closed_are_one_summary(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"

    asyncio.run(
        submit(data, [*(spec_of(n) for n in range(4)), {"tasks": [{"key": "x", "type": "NOOP"}]}])
    )
    with contextlib.closing(sqlite3.connect(data / "fredica.db", timeout=30)) as conn, conn:
        conn.execute("UPDATE task SET payload = '{\"schema_version\": 9}' WHERE key = 'x'")
    fredica(data, "worker", "--until-idle")
    with started(qtbot, qapp, data) as (gui, takes):
        assert len(takes[0]) == 5
        assert gui.notifier.shown == [
            Shown("5 run(s) finished while Fredica was closed", "4 completed, 1 failed", "toast")
        ]
        opened: list[bool] = []
        gui.notifier.show_queue.connect(lambda: opened.append(True))
        assert gui.notifier.toasts is not None
        [toast] = gui.notifier.toasts.toasts
        toast.link.linkActivated.emit("show")
        assert opened == [True]
        assert gui.window.nav.currentRow() == gui.window.QUEUE


def test_thousands_left_while_closed_are_counted_true_in_the_summary(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    """The take tells a part in detail and counts them all: the summary says the counts."""
    with started(qtbot, qapp, tmp_path / "data") as (gui, _):
        gui.notices.tell([], total=2000, failed=5, while_closed=True)
        title = "2000 run(s) finished while Fredica was closed"
        assert gui.notifier.shown == [Shown(title, "1995 completed, 5 failed", "toast")]


# --- a restart to review ----------------------------------------------------------------------


def test_a_restart_to_review_is_told_once_at_start(qtbot: Any, qapp: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps({"tasks": [{"key": "a", "type": "SLEEP", "payload": {"seconds": 600}}]})
    )
    fredica(data, "submit", str(spec))
    (data / "settings.json").write_text(json.dumps({"on_restart": "hold"}))
    worker = subprocess.Popen(
        [EXE, "--data-dir", str(data), "worker"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not running_count(data):
            assert time.monotonic() < deadline, "the worker did not start the task"
            time.sleep(0.1)
        children = psutil.Process(worker.pid).children(recursive=True)
    finally:
        os.kill(worker.pid, signal.SIGKILL)  # a crash
        worker.wait(30)
    for process in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(children, timeout=30)

    with started(qtbot, qapp, data) as (gui, takes):
        title = "Work to review after a restart"
        qtbot.waitUntil(lambda: any(s.title == title for s in gui.notifier.shown), timeout=WAIT)
        [told] = [s for s in gui.notifier.shown if s.title == title]
        assert told.body == (
            "Fredica stopped unexpectedly: 1 task(s) were interrupted — 1 held for review."
        )
        banner = gui.window.banner.message  # says the same, once it has read the log too
        qtbot.waitUntil(lambda: banner.text() == told.body, timeout=WAIT)
        # A new state of the host (say, attached and back) does not tell it again.
        gui.notices.on_state(gui.host.state)
        assert take_again(qtbot, gui, takes) == []
        assert [s.title for s in gui.notifier.shown].count(title) == 1


def running_count(data: Path) -> int:
    with contextlib.closing(sqlite3.connect(data / "fredica.db", timeout=30)) as conn:
        row = conn.execute("SELECT count(*) FROM task WHERE status = 'running'").fetchone()
    return int(row[0])


# --- the disk ---------------------------------------------------------------------------------


def test_a_task_failing_for_a_full_disk_is_told_at_once(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    with started(qtbot, qapp, tmp_path / "data") as (gui, _takes):
        full = make_task(
            1,
            type="TRANSCODE_MP4",
            status=TaskStatus.FAILED,
            error_type=ErrorType.NO_SPACE,
            error="the disk is full (writing /media/out.mp4); free some space, then retry\nmore",
        )
        gui.window.feed.changes.emit([Change(1, full)])
        [told] = gui.notifier.shown
        assert told.title == "The disk is full" and told.run_id == "run-0001"
        assert told.body == (
            "TRANSCODE_MP4: the disk is full (writing /media/out.mp4); free some space, then retry"
        )
        # The same task again, or others failing for it right after: not told again.
        gui.window.feed.changes.emit([Change(2, full)])
        gui.window.feed.changes.emit([Change(3, replace(full, id="task-00002"))])
        other = replace(full, id="task-00003", error_type=ErrorType.NETWORK_ERROR)
        gui.window.feed.changes.emit([Change(4, other)])
        assert len(gui.notifier.shown) == 1


def test_a_full_data_disk_under_the_window_s_engine_is_told_and_waited_out(
    qtbot: Any, qapp: Any, tmp_path: Path
) -> None:
    """The data directory on a small filesystem of its own (a tmpfs, mounted as root), filled
    while the window's engine runs: a bar says why nothing new starts, one urgent
    notification says it too; space back, the bar goes and every run completes."""
    with small_disk(tmp_path / "disk", "6m") as disk:
        data = disk / "data"
        sleep_then = {
            "tasks": [{"key": "s", "type": "SLEEP", "payload": {"seconds": 0.4}}]
            + [{"key": f"n{i}", "type": "NOOP", "depends_on": ["s"]} for i in range(4)]
        }
        ids = asyncio.run(submit(data, [sleep_then] * 8))
        with started(qtbot, qapp, data) as (gui, _takes):
            bar = gui.window.held_bar
            qtbot.waitUntil(lambda: completed_count(data) >= 5, timeout=WAIT)
            ballast = fill(disk)
            qtbot.waitUntil(bar.isVisible, timeout=WAIT)
            assert "the disk that holds the database is full" in bar.text()
            [told] = [s for s in gui.notifier.shown if s.title == "Fredica is waiting"]
            assert "nothing new starts" in told.body
            ballast.unlink()
            qtbot.waitUntil(lambda: not bar.isVisible(), timeout=WAIT)
            qtbot.waitUntil(lambda: completed_count(data) == 8 * 5, timeout=WAIT)
            assert [s.title for s in gui.notifier.shown].count("Fredica is waiting") == 1
        with contextlib.closing(sqlite3.connect(data / "fredica.db")) as conn:
            statuses = dict(conn.execute("SELECT id, status FROM workflow_run").fetchall())
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert {statuses[i] for i in ids} == {"completed"}


def completed_count(data: Path) -> int:
    with contextlib.closing(sqlite3.connect(data / "fredica.db", timeout=30)) as conn:
        row = conn.execute("SELECT count(*) FROM task WHERE status = 'completed'").fetchone()
    return int(row[0])


def test_the_disk_nearly_full_is_told_once_until_it_recovers(
    qtbot: Any, data_dir: Path, app_host: AppHost
) -> None:
    free: list[float] = [50 * GiB]
    asked: list[list[Path]] = []

    def fake_measure(folders: Any) -> list[Usage]:
        """The library's disk, as full as the test says (a real full disk cannot be made
        here)."""
        asked.append(list(folders))
        return [Usage("disk", "/media/library", 100 * GiB, int(free[0]))]

    notifier = Notifier(bus=None)
    watch = DiskWatch(app_host, notifier, interval_ms=3_600_000, measure=fake_measure)
    measured: list[Any] = []
    watch.measured.connect(measured.append)

    def check() -> None:
        before = len(measured)
        watch.check()
        qtbot.waitUntil(lambda: len(measured) > before, timeout=WAIT)

    watch.start()  # measures at once
    qtbot.waitUntil(lambda: len(measured) == 1, timeout=WAIT)
    app = app_host.app
    assert app is not None
    assert asked[0] == [Path(app.library_dir), Path(app.paths.data_dir)]
    assert notifier.shown == []
    free[0] = 1.5 * GiB
    check()
    assert notifier.shown == [
        Shown(
            "The disk is nearly full",
            "1.5 GB free on the disk of /media/library. Tasks that write there fail when it "
            "is full.",
            "log",
        )
    ]
    for gib in (2.5, 1.0, 3.5):  # hovering around the line: quiet
        free[0] = gib * GiB
        check()
    assert len(notifier.shown) == 1
    free[0] = 20 * GiB  # space freed
    check()
    free[0] = 1 * GiB
    check()
    assert len(notifier.shown) == 2
    watch.stop()


def test_measuring_the_disks_of_folders(tmp_path: Path) -> None:
    library = tmp_path / "library"
    library.mkdir()
    not_yet = tmp_path / "data" / "not" / "made"  # measured on its nearest parent
    [usage] = measure([library, not_yet])  # one file system, once
    assert usage.path == str(library)
    assert usage.key == os.stat(tmp_path).st_dev
    assert 0 < usage.free <= usage.total


def test_a_finished_run_is_told_by_its_workflow_s_name(qtbot: Any, qapp: Any) -> None:
    from fredica_app.gui.host import AppHost
    from fredica_app.gui.notices import NoticeWatcher
    from fredica_app.gui.notify import Notifier
    from fredica_app.services.notices import RunNotice

    watcher = NoticeWatcher(AppHost(None), Notifier())
    done = RunNotice(1, "run_completed", "run-1", "clip", "transcode_mp4", 0.0)
    assert watcher.describe(done) == ("Done: clip", "Make an MP4: finished.")
    unknown = RunNotice(2, "run_completed", "run-2", "clip", "my_own", 0.0)
    assert watcher.describe(unknown) == ("Done: clip", "my_own: finished.")
