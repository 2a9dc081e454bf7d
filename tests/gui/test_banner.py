"""The restart banner after a real crash: a ``fredica worker`` killed with SIGKILL while two
SLEEP tasks run, then a window's host opened on its data directory. The banner says what
recovery did, and its buttons change the restart log's dispositions in the store."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest
from PySide6.QtWidgets import QPushButton

from fredica_app.gui.banner import DARK, LIGHT, RestartBanner, needs_review
from fredica_app.gui.host import AppHost, Mode
from tests.gui.hosting import call
from workers.records import RestartLogEntry, TaskRecord
from workers.states import TaskStatus

pytestmark = pytest.mark.slow

WAIT = 60_000  # ms: a shared two-core machine
SPEC = {
    "tasks": [
        {"key": "a", "type": "SLEEP", "payload": {"seconds": 600}},
        {"key": "b", "type": "SLEEP", "payload": {"seconds": 600}},
    ]
}


CLI = [sys.executable, "-m", "fredica_app.cli"]


def running_tasks(data: Path) -> int:
    with contextlib.closing(sqlite3.connect(data / "fredica.db", timeout=30)) as conn:
        row = conn.execute("SELECT count(*) FROM task WHERE status = 'running'").fetchone()
    return int(row[0])


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory whose worker was killed (SIGKILL) while two SLEEP tasks ran; each
    test works on a copy."""
    root = tmp_path_factory.mktemp("crash")
    data = root / "data"
    spec = root / "spec.json"
    spec.write_text(json.dumps(SPEC))
    submit = subprocess.run(
        [*CLI, "--data-dir", str(data), "submit", str(spec), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert submit.returncode == 0, submit.stderr
    with (root / "worker.log").open("w") as log:
        worker = subprocess.Popen([*CLI, "--data-dir", str(data), "worker"], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while running_tasks(data) < 2:
            assert time.monotonic() < deadline, (root / "worker.log").read_text()
            time.sleep(0.1)
        children = psutil.Process(worker.pid).children(recursive=True)
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(30)
    assert worker.returncode == -signal.SIGKILL
    for child in children:  # an endpoints server, had it started one: not left behind
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    psutil.wait_procs(children, timeout=30)
    return data


@contextlib.contextmanager
def opened(
    qtbot: Any, crashed: Path, tmp_path: Path, sql: str = "", **settings: Any
) -> Iterator[Any]:
    """A host (its engine recovers) and a banner on a copy of the crashed data directory,
    ``sql`` run on its database first."""
    data = tmp_path / "data"
    shutil.copytree(crashed, data)
    (data / "settings.json").write_text(json.dumps(settings))
    if sql:
        with contextlib.closing(sqlite3.connect(data / "fredica.db")) as conn, conn:
            conn.execute(sql)
    host = AppHost(data)
    banner = RestartBanner(host)
    qtbot.addWidget(banner)
    host.state_changed.connect(banner.on_state)
    host.start()
    try:
        qtbot.waitUntil(lambda: host.state.mode is Mode.ENGINE, timeout=WAIT)
        yield host, banner
    finally:
        host.shutdown()
        assert host.join(60), "the host's thread did not end"


def pending(host: Any) -> list[RestartLogEntry]:
    return call(host, lambda app: app.store.restart_log(only_pending=True))


def dispositions(host: Any) -> list[str]:
    return sorted(e.disposition for e in call(host, lambda app: app.store.restart_log()))


def tasks(host: Any) -> dict[str, TaskRecord]:
    """The tasks of the restart log's entries, as they are now."""

    async def read(app: Any) -> dict[str, TaskRecord]:
        entries = await app.store.restart_log()
        return {e.task_id: await app.store.get_task(e.task_id) for e in entries}

    return call(host, read)


def test_held_tasks_show_and_retry_all_resumes_them(
    qtbot: Any, crashed: Path, tmp_path: Path
) -> None:
    with opened(qtbot, crashed, tmp_path, on_restart="hold") as (host, banner):
        assert host.state.recovery.held == 2
        qtbot.waitUntil(lambda: not banner.isHidden(), timeout=WAIT)
        text = banner.message.text()
        assert text.startswith("Fredica stopped unexpectedly: 2 task(s) were interrupted")
        assert "2 held for review" in text
        assert [e.action for e in pending(host)] == ["held", "held"]
        banner.retry_all_button.click()
        qtbot.waitUntil(banner.isHidden, timeout=WAIT)
        assert pending(host) == []
        assert dispositions(host) == ["retried", "retried"]
        assert [t.is_paused for t in tasks(host).values()] == [False, False]


def test_resumed_tasks_show_and_dismiss_all_dismisses_them(
    qtbot: Any, crashed: Path, tmp_path: Path
) -> None:
    with opened(qtbot, crashed, tmp_path) as (host, banner):
        qtbot.waitUntil(lambda: not banner.isHidden(), timeout=WAIT)
        assert "2 task(s) were interrupted — 2 resumed." in banner.message.text()
        banner.dismiss_all_button.click()
        qtbot.waitUntil(banner.isHidden, timeout=WAIT)
        assert pending(host) == []
        assert dispositions(host) == ["dismissed", "dismissed"]


def test_review_lists_the_entries_with_a_retry_and_a_dismiss_each(
    qtbot: Any, crashed: Path, tmp_path: Path
) -> None:
    with opened(qtbot, crashed, tmp_path, on_restart="hold") as (host, banner):
        qtbot.waitUntil(lambda: not banner.isHidden(), timeout=WAIT)
        assert banner.list.isHidden()
        banner.review_button.click()
        assert not banner.list.isHidden()
        assert banner.list.topLevelItemCount() == 2
        row = banner.list.topLevelItem(0)
        assert row.text(banner.TASK).startswith("SLEEP · ")
        assert row.text(banner.STOPPED).startswith("running at ")
        first, second = pending(host)
        # The crash was charged to the task unless it had saved a checkpoint already (each
        # SLEEP saves one every half second): the row says which.
        note = " · not charged" if first.not_charged else " · charged 1 of 5"
        assert first.charged == (1, 5) or first.not_charged
        assert row.text(banner.RECOVERY) == "held for review" + note
        assert row.text(banner.NOW) == "held"
        retry = banner.list.findChild(QPushButton, f"retry-{first.id}")
        assert retry is not None and retry.isEnabled()
        retry.click()
        qtbot.waitUntil(lambda: len(pending(host)) == 1, timeout=WAIT)
        qtbot.waitUntil(lambda: banner.list.topLevelItemCount() == 1, timeout=WAIT)
        assert "1 task(s) were interrupted — 1 held for review." in banner.message.text()
        dismiss = banner.list.findChild(QPushButton, f"dismiss-{second.id}")
        dismiss.click()
        qtbot.waitUntil(banner.isHidden, timeout=WAIT)
        log = {e.task_id: e.disposition for e in call(host, lambda app: app.store.restart_log())}
        assert log == {first.task_id: "retried", second.task_id: "dismissed"}
        now = tasks(host)
        assert not now[first.task_id].is_paused  # resumed: it runs again
        assert now[second.task_id].is_paused  # dismissed: still held
        assert now[second.task_id].status is TaskStatus.PENDING


def test_a_task_that_failed_interrupted_is_retried(
    qtbot: Any, crashed: Path, tmp_path: Path
) -> None:
    # As if it had lived through 5 crashes already: this one is over the limit.
    bump = (
        "UPDATE task SET interruptions = 5, charged_interruptions = 5, checkpoint_seq = 0, "
        "checkpoint = NULL WHERE key = 'a'"
    )
    with opened(qtbot, crashed, tmp_path, sql=bump, on_restart="hold") as (host, banner):
        qtbot.waitUntil(lambda: not banner.isHidden(), timeout=WAIT)
        assert "1 held for review, 1 failed." in banner.message.text()
        failed = next(e for e in pending(host) if e.action == "failed")
        assert tasks(host)[failed.task_id].status is TaskStatus.FAILED
        banner.review_button.click()
        retry = banner.list.findChild(QPushButton, f"retry-{failed.id}")
        assert retry.isEnabled() and retry.toolTip() == "Run it again"
        retry.click()
        qtbot.waitUntil(lambda: len(pending(host)) == 1, timeout=WAIT)
        again = tasks(host)[failed.task_id]
        assert again.status in (TaskStatus.PENDING, TaskStatus.CLAIMED, TaskStatus.RUNNING)
        assert (again.retry_count, again.error_type) == (0, None)


def log_entry(detail: str) -> RestartLogEntry:
    """A restart-log entry of a SLEEP that recovery resumed, with ``detail``."""
    return RestartLogEntry(
        id=1,
        session_id="s",
        task_id="t",
        task_type="SLEEP",
        workflow_run_id="r",
        material_id=None,
        status_at_restart="running",
        progress=40.0,
        action="resumed",
        disposition="pending_review",
        detail=detail,
        created_at=0.0,
        updated_at=0.0,
    )


def test_the_review_list_tells_a_charged_crash_from_one_not_charged(
    qtbot: Any, tmp_path: Path
) -> None:
    banner = RestartBanner(AppHost(tmp_path))
    qtbot.addWidget(banner)
    entry = log_entry("crash: charged: 2 of 5 (interruption 4 in all)")
    assert banner.charge_note(entry) == " · charged 2 of 5"
    elsewhere = "crash: interrupted, not charged (its work runs in another process); …"
    assert banner.charge_note(replace(entry, detail=elsewhere)) == " · not charged"
    assert banner.charge_note(replace(entry, detail="graceful stop, not counted; …")) == ""
    assert banner.charge_note(replace(entry, detail=None)) == ""


def test_after_a_graceful_stop_it_does_not_say_crash(qtbot: Any, tmp_path: Path) -> None:
    banner = RestartBanner(AppHost(tmp_path))
    qtbot.addWidget(banner)
    entry = log_entry("graceful stop, not counted; charged so far: 0 of 5")
    assert banner.headline([entry]) == "Fredica was closed while 1 task(s) ran — 1 resumed."
    # A task the user's quitting left, and that simply resumed, is nobody's concern: no
    # banner for it; one held or failed by that recovery, or left by a crash, is.
    assert not needs_review(entry)
    assert needs_review(replace(entry, action="held"))
    assert needs_review(replace(entry, action="failed"))
    assert needs_review(replace(entry, detail="crash: charged: 1 of 5 (interruption 1 in all)"))
    odd = replace(entry, action="migrated", detail="crash")
    assert banner.headline([entry, odd]) == (
        "Fredica stopped unexpectedly: 2 task(s) were interrupted — 1 resumed, 1 migrated."
    )


def test_nothing_to_review_nothing_shown(qtbot: Any, app_host: Any) -> None:
    banner = RestartBanner(app_host)
    qtbot.addWidget(banner)
    with qtbot.waitSignal(banner.refreshed, timeout=WAIT):
        banner.on_state(app_host.state)
    assert banner.isHidden()


def test_inside_the_window_the_bar_follows_a_change_of_theme(qtbot: Any, tmp_path: Path) -> None:
    from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

    from fredica_app.gui import theme

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    parent = QWidget()
    qtbot.addWidget(parent)
    banner = RestartBanner(AppHost(tmp_path))
    QVBoxLayout(parent).addWidget(banner)
    parent.show()
    banner.show()
    try:
        theme.apply(app, "dark")
        assert DARK[0] in banner.styleSheet()
        # Qt does not tell a child with a style sheet of its own that the palette changed.
        theme.apply(app, "light")
        assert LIGHT[0] in banner.styleSheet()
    finally:
        theme.apply(app, "light")
