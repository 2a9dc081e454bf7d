"""The settings page over a real application host: it shows the file, refuses what the settings
model refuses (each message beside its field, the file untouched), saves what it accepts, and
finds the bundled ffmpeg."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fredica_app.gui.host import AppHost
from fredica_app.gui.settings_page import SettingsPage
from fredica_app.settings import load_settings
from tests.gui.hosting import call
from workers.states import TaskStatus

WAIT = 60_000  # ms: a shared two-core machine

FILE = {
    "max_workers": 3,
    "slots": {"gpu": 2, "tpu": 1},
    "proxy": "http://proxy.example:3128",
    "whisper_model": "small",
    "language": "fr",
    "llm_base_url": "http://127.0.0.1:11434/v1",
    "llm_model": "llama3.1",
    "beam_size": 3,  # not on the page: a save keeps it
}


@pytest.fixture
def settings_file(data_dir: Path) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "settings.json"
    path.write_text(json.dumps(FILE, indent=2))
    return path


@pytest.fixture
def page(qtbot: Any, settings_file: Path, app_host: Any) -> SettingsPage:
    page = SettingsPage(app_host)
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: page.current is not None, timeout=WAIT)
    return page


def save(qtbot: Any, page: SettingsPage) -> Any:
    with qtbot.waitSignal(page.saved, timeout=WAIT) as saved:
        page.save_button.click()
    return saved.args[0]


def error_of(page: SettingsPage, key: str) -> str | None:
    """The message under the field of ``key``, None when none shows."""
    label = page.form.errors[key]
    return None if label.isHidden() else label.text()


def test_the_page_shows_the_files_values(page: SettingsPage) -> None:
    f = page.form
    assert f.max_workers.value() == 3
    assert f.slot_edits["gpu"].text() == "2"
    assert f.slot_edits["cpu"].text() == ""
    assert f.slot_edits["cpu"].placeholderText().startswith("default: ")
    assert f.proxy.text() == "http://proxy.example:3128"
    assert f.whisper_model.currentText() == "small"
    assert f.language.text() == "fr"
    assert f.llm_model.text() == "llama3.1"
    assert f.llm_api_key_env.text() == ""
    assert f.ui_language.currentData() == "auto"
    assert f.library_dir.text() == ""
    assert "library" in f.library_dir.placeholderText()
    assert "tiny.en" in f.installed_models  # the embedded model
    assert f.model_download.isEnabled()  # small: not installed, downloadable
    assert page.problem.isHidden()


def test_invalid_values_are_refused_beside_their_fields_and_nothing_is_written(
    qtbot: Any, page: SettingsPage, settings_file: Path
) -> None:
    before = settings_file.read_bytes()
    f = page.form
    f.max_workers.setValue(0)
    f.language.setText("english!!")
    f.llm_api_key_env.setText("lower")
    saved = save(qtbot, page)
    assert set(saved.errors) == {"max_workers", "language", "llm_api_key_env"}
    assert error_of(page, "max_workers") == "At least 1"
    assert "language code" in (error_of(page, "language") or "")
    assert "environment variable" in (error_of(page, "llm_api_key_env") or "")
    assert error_of(page, "proxy") is None
    assert settings_file.read_bytes() == before
    assert "Nothing was saved" in page.status.text()
    # Corrected, it saves, and the messages go.
    f.max_workers.setValue(5)
    f.language.setText("de")
    f.llm_api_key_env.setText("OLLAMA_KEY")
    assert save(qtbot, page).errors == {}
    assert all(error_of(page, key) is None for key in f.errors)
    assert load_settings(settings_file).settings.max_workers == 5


def test_what_the_form_refuses_shows_with_what_the_model_refuses(
    qtbot: Any, page: SettingsPage, settings_file: Path
) -> None:
    before = settings_file.read_bytes()
    page.form.slot_edits["cpu"].setText("two")
    page.form.library_dir.setText("relative/folder")
    page.form.max_workers.setValue(65)
    saved = save(qtbot, page)
    assert saved.settings is None  # checked, not written
    assert error_of(page, "slots.cpu") == "A whole number, 1 or more"
    assert "full path" in (error_of(page, "library_dir") or "")
    assert error_of(page, "max_workers") == "At most 64"
    assert settings_file.read_bytes() == before
    # The form's problems alone still write nothing.
    page.form.max_workers.setValue(4)
    assert save(qtbot, page).errors == {}
    assert settings_file.read_bytes() == before
    assert error_of(page, "max_workers") is None and error_of(page, "slots.cpu")


def test_a_valid_change_is_written_and_read_back(
    qtbot: Any, page: SettingsPage, settings_file: Path, app_host: Any, tmp_path: Path
) -> None:
    f = page.form
    f.max_workers.setValue(6)
    f.slot_edits["cpu"].setText("2")
    f.slot_edits["gpu"].setText("")
    f.whisper_model.setCurrentText("base")
    f.whisper_device.setCurrentIndex(f.whisper_device.findData("cpu"))
    f.language.setText("")
    f.proxy.setText("")
    f.library_dir.setText(str(tmp_path / "media"))
    saved = save(qtbot, page)
    assert saved.errors == {}
    s = load_settings(settings_file).settings
    assert s.max_workers == 6
    assert s.slots == {"cpu": 2, "tpu": 1}  # a class the page does not show is kept
    assert (s.whisper_model, s.whisper_device, s.language) == ("base", "cpu", "auto")
    assert s.proxy is None
    assert s.library_dir == tmp_path / "media"
    data = json.loads(settings_file.read_text())
    assert data["beam_size"] == 3  # not on the page: kept as the file had it
    assert "language" not in data and "proxy" not in data  # cleared: back to the default
    assert "ui_language" not in data  # a default the file did not name is not written
    # Read at submit time: in force at once. Read at start: not before the next start.
    live = call(app_host, _settings)
    assert (live.whisper_model, live.whisper_device, live.language) == ("base", "cpu", "auto")
    assert live.max_workers == 3 and live.library_dir is None
    status = page.status.text()
    assert "In force now" in status and "Speech model" in status
    assert "next time Fredica starts" in status and "Tasks at once" in status


async def _settings(app: Any) -> Any:
    return app.settings


def test_changing_the_interface_language_emits_language_changed(
    qtbot: Any, page: SettingsPage, settings_file: Path
) -> None:
    f = page.form
    f.ui_language.setCurrentIndex(f.ui_language.findData("zh_CN"))
    with qtbot.waitSignal(page.language_changed, timeout=WAIT) as changed:
        page.save_button.click()
    assert changed.args == ["zh_CN"]
    assert load_settings(settings_file).settings.ui_language == "zh_CN"
    # Saving again without a change of language says nothing of it.
    with qtbot.assertNotEmitted(page.language_changed):
        save(qtbot, page)


def test_changing_the_colours_emits_theme_changed(
    qtbot: Any, page: SettingsPage, settings_file: Path
) -> None:
    f = page.form
    f.ui_theme.setCurrentIndex(f.ui_theme.findData("dark"))
    with (
        qtbot.waitSignal(page.theme_changed, timeout=WAIT) as changed,
        qtbot.assertNotEmitted(page.language_changed),
    ):
        page.save_button.click()
    assert changed.args == ["dark"]
    assert load_settings(settings_file).settings.ui_theme == "dark"
    assert "Colours" in page.status.text() and "next time" not in page.status.text()


def test_revert_reads_the_file_again(qtbot: Any, page: SettingsPage) -> None:
    page.form.max_workers.setValue(9)
    page.form.language.setText("bad!")
    with qtbot.waitSignal(page.loaded, timeout=WAIT):
        page.revert_button.click()
    assert page.form.max_workers.value() == 3
    assert page.form.language.text() == "fr"


def test_detect_finds_the_bundled_ffmpeg(qtbot: Any, page: SettingsPage) -> None:
    with qtbot.waitSignal(page.detected, timeout=WAIT) as detected:
        page.form.ffmpeg_detect.click()
    found = detected.args[0]
    assert found.error is None
    assert found.bundled and Path(found.binary).is_file()
    assert found.version
    # Whatever this build lists, only hardware encoders, and only listed H.264 ones work.
    assert all(e.backend for e in found.hardware)
    assert set(found.working_h264) <= {e.name for e in found.hardware}
    text = page.form.ffmpeg_result.text()
    assert found.binary in text and "bundled" in text
    assert page.form.ffmpeg_detect.isEnabled()


def test_detect_says_when_the_ffmpeg_cannot_run(
    qtbot: Any, page: SettingsPage, tmp_path: Path
) -> None:
    page.form.ffmpeg_path.setText(str(tmp_path / "no-ffmpeg"))
    with qtbot.waitSignal(page.detected, timeout=WAIT) as detected:
        page.form.ffmpeg_detect.click()
    assert detected.args[0].error
    assert page.form.ffmpeg_result.text().startswith("Cannot use")


def test_download_queues_a_model_download_and_follows_its_task(
    qtbot: Any, page: SettingsPage, app_host: Any
) -> None:
    # The queue is paused: the task is queued and followed, but nothing is fetched.
    call(app_host, lambda app: app.control.pause_queue())
    f = page.form
    f.whisper_model.setCurrentText("base")
    assert f.model_download.isEnabled()
    f.model_download.click()
    qtbot.waitUntil(lambda: "waiting in the queue" in f.model_status.text(), timeout=WAIT)
    assert not f.model_progress.isHidden()
    task_id = page._download
    assert task_id is not None
    task = call(app_host, lambda app: app.store.get_task(task_id))
    models_dir = call(app_host, _models_dir)
    assert task.type == "DOWNLOAD_MODEL" and task.status is TaskStatus.PENDING
    assert task.payload["name"] == "base"
    assert task.payload["models_dir"] == str(models_dir)
    call(app_host, lambda app: app.control.cancel(task_id))
    qtbot.waitUntil(lambda: "did not finish" in f.model_status.text(), timeout=WAIT)
    assert f.model_progress.isHidden() and f.model_download.isEnabled()


async def _models_dir(app: Any) -> Path:
    return Path(app.models_dir)


def test_an_unreadable_file_is_said_and_replaced_by_a_save(
    qtbot: Any, data_dir: Path, app_host: Any
) -> None:
    path = data_dir / "settings.json"
    path.write_text("{ not json")
    page = SettingsPage(app_host)
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: page.current is not None, timeout=WAIT)
    assert not page.problem.isHidden() and "not valid JSON" in page.problem.text()
    assert page.form.max_workers.value() == 4  # the defaults
    page.form.max_workers.setValue(2)
    assert save(qtbot, page).errors == {}
    assert json.loads(path.read_text()) == {"max_workers": 2}
    assert page.problem.isHidden()


def test_before_the_application_is_open_nothing_waits_for_it(qtbot: Any, tmp_path: Path) -> None:
    page = SettingsPage(AppHost(tmp_path))  # never started
    qtbot.addWidget(page)
    assert not page.save_button.isEnabled()
    page.revert_button.click()  # would block the GUI thread if it called the host
    assert "not open yet" in page.status.text()
    page.form.ffmpeg_detect.click()
    assert "not open yet" in page.form.ffmpeg_result.text()
    assert page.form.ffmpeg_detect.isEnabled()
    assert page.current is None


def _wheel(widget: Any, steps: int) -> bool:
    """``steps`` notches of a mouse wheel over the middle of ``widget`` (down when negative):
    whether the widget took it (not accepted: Qt passes a real wheel on to the parents, the
    page's scroll area)."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    middle = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(
        middle,
        QPointF(widget.mapToGlobal(middle.toPoint())),
        QPoint(),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)
    return event.isAccepted()


def test_a_wheel_over_a_choice_the_user_has_not_clicked_leaves_it_for_the_page(
    qtbot: Any, page: SettingsPage
) -> None:
    """A wheel turned over a box the user has not clicked is left to the page, which scrolls
    (Qt passes a wheel no widget took on to the parents; seen under Xvfb); it changed the
    box's value under the pointer before. Once the box has the focus, the wheel is the box's."""
    page.show()
    qtbot.waitExposed(page)
    form = page.form
    boxes = [form.ui_theme, form.whisper_model, form.max_workers, form.burn_font_size]
    before = [b.currentIndex() if hasattr(b, "currentIndex") else b.value() for b in boxes]
    for box in boxes:
        assert not _wheel(box, -1)
        assert not _wheel(box, 1)
    after = [b.currentIndex() if hasattr(b, "currentIndex") else b.value() for b in boxes]
    assert after == before
    workers = form.max_workers
    workers.setFocus()
    qtbot.waitUntil(workers.hasFocus, timeout=WAIT)
    assert _wheel(workers, 1)
    assert workers.value() == before[2] + 1
