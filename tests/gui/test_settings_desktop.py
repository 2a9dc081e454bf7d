"""The settings page's desktop options over a real application host: the tray, notification,
keep-awake and start-at-login boxes, and the watch folders table — saved to the settings
file, refused beside their fields when they are not valid (the file untouched), and the
login entry written into (and removed from) a temporary XDG config folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QComboBox

from fredica_app.gui import settings_work as work
from fredica_app.gui.settings_form import PARAMS, PATTERNS, TEMPLATE, WATCH_TEMPLATES
from fredica_app.gui.settings_page import SettingsPage
from fredica_app.settings import load_settings
from tests.gui.hosting import call
from tests.gui.test_settings_page import error_of, save

# The settings page's fixture and helpers (``as page``: the fixture is meant to be here).
from tests.gui.test_settings_page import page as page

WAIT = 60_000  # ms: a shared two-core machine
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the XDG autostart entry is Linux's"
)


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's login entry goes to a temporary XDG config folder, never the user's."""
    home = tmp_path / "xdg-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


@pytest.fixture
def settings_file(data_dir: Path) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "settings.json"
    path.write_text(json.dumps({"max_workers": 3}))
    return path


def fake_folder_dialog(page: SettingsPage, answer: str | None) -> list[str]:
    """Patch the page's folder dialog (the FAKE answers ``answer``); the titles it was asked
    with."""
    asked: list[str] = []

    def choose_directory(title: str, start: str) -> str | None:
        asked.append(title)
        return answer

    page.choose_directory = choose_directory  # type: ignore[method-assign]
    return asked


def template_combo(page: SettingsPage, row: int) -> QComboBox:
    combo = page.form.watch_table.cellWidget(row, TEMPLATE)
    assert isinstance(combo, QComboBox)
    return combo


def test_the_desktop_boxes_show_the_file_and_save_to_it(
    qtbot: Any, page: SettingsPage, settings_file: Path, app_host: Any
) -> None:
    boxes = page.form.desktop_boxes
    assert {k: b.isChecked() for k, b in boxes.items()} == {
        "close_to_tray": True,
        "notifications": True,
        "keep_awake": True,
        "start_at_login": False,
    }
    boxes["close_to_tray"].setChecked(False)
    boxes["notifications"].setChecked(False)
    boxes["keep_awake"].setChecked(False)
    saved = save(qtbot, page)
    assert saved.errors == {}
    assert saved.changed == {"close_to_tray", "notifications", "keep_awake"}
    data = json.loads(settings_file.read_text())
    assert data == {
        "max_workers": 3,
        "close_to_tray": False,
        "notifications": False,
        "keep_awake": False,
    }
    live = call(app_host, _settings)
    assert (live.close_to_tray, live.notifications) == (False, False)  # in force now
    assert live.keep_awake is True  # read when the engine starts
    status = page.status.text()
    assert "In force now: Close to tray, Notifications." in status
    assert "next time Fredica starts: Keep awake" in status
    assert "for new work" not in status


async def _settings(app: Any) -> Any:
    return app.settings


def test_a_watch_folder_added_with_the_dialog_is_saved_and_read_back(
    qtbot: Any, page: SettingsPage, settings_file: Path, tmp_path: Path
) -> None:
    f = page.form
    assert f.watch_table.rowCount() == 0
    asked = fake_folder_dialog(page, str(tmp_path / "incoming"))
    f.watch_add.click()
    assert asked == ["Watch a folder"]
    assert f.watch_table.rowCount() == 1
    combo = template_combo(page, 0)
    assert [combo.itemData(i) for i in range(combo.count())] == list(WATCH_TEMPLATES)
    assert "download_transcode" not in WATCH_TEMPLATES and "diagnostic" not in WATCH_TEMPLATES
    assert combo.currentData() == "transcode_mp4"
    combo.setCurrentIndex(combo.findData("subtitles"))
    recursive = f.watch_recursive(0)
    assert recursive is not None and recursive.isChecked()
    recursive.setChecked(False)
    f.watch_table.item(0, PATTERNS).setText(" *.mkv,, *.MP4 ")
    f.watch_table.item(0, PARAMS).setText("profile=archive")  # not a parameter of subtitles
    f.watch_settle_seconds.setValue(12.5)
    assert save(qtbot, page).settings is None
    assert "Folder 1: template 'subtitles' has no parameter 'profile'" in (
        error_of(page, "watch_folders") or ""
    )
    f.watch_table.item(0, PARAMS).setText("language")
    assert save(qtbot, page).settings is None
    assert "Folder 1: write each parameter as name=value" in (error_of(page, "watch_folders") or "")
    f.watch_table.item(0, PARAMS).setText(" language = fr , model=base")
    saved = save(qtbot, page)
    assert saved.errors == {}
    assert saved.changed == {"watch_folders", "watch_settle_seconds"}
    s = load_settings(settings_file).settings
    assert len(s.watch_folders) == 1
    watched = s.watch_folders[0]
    assert watched.folder == tmp_path / "incoming"
    assert (watched.template, watched.recursive, watched.patterns) == (
        "subtitles", False, ["*.mkv", "*.MP4"],
    )  # fmt: skip
    assert watched.params == {"language": "fr", "model": "base"}
    assert s.watch_settle_seconds == 12.5
    assert "Watch folders" in page.status.text()

    # Read back as saved; then removed.
    with qtbot.waitSignal(page.loaded, timeout=WAIT):
        page.revert_button.click()
    assert f.watch_table.rowCount() == 1
    assert template_combo(page, 0).currentData() == "subtitles"
    assert f.watch_table.item(0, PATTERNS).text() == "*.mkv, *.MP4"
    assert f.watch_table.item(0, PARAMS).text() == "language=fr, model=base"
    assert not f.watch_recursive(0).isChecked()  # type: ignore[union-attr]
    assert not f.watch_remove.isEnabled()
    f.watch_table.selectRow(0)
    assert f.watch_remove.isEnabled()
    f.watch_remove.click()
    assert f.watch_table.rowCount() == 0
    assert save(qtbot, page).errors == {}
    assert load_settings(settings_file).settings.watch_folders == []


def test_a_cancelled_dialog_adds_nothing(page: SettingsPage) -> None:
    fake_folder_dialog(page, None)
    page.form.watch_add.click()
    assert page.form.watch_table.rowCount() == 0


def test_bad_watch_entries_are_refused_under_their_fields_and_nothing_is_written(
    qtbot: Any, page: SettingsPage, settings_file: Path, tmp_path: Path
) -> None:
    before = settings_file.read_bytes()
    f = page.form
    fake_folder_dialog(page, "relative/incoming")
    f.watch_add.click()
    fake_folder_dialog(page, str(tmp_path / "ok"))
    f.watch_add.click()
    fake_folder_dialog(page, str(tmp_path / "emptied"))
    f.watch_add.click()
    f.watch_table.item(2, 0).setText("  ")
    f.watch_settle_seconds.setValue(0.2)
    saved = save(qtbot, page)
    assert saved.settings is None
    message = error_of(page, "watch_folders") or ""
    assert "Folder 1: give a full path" in message
    assert "Folder 2" not in message
    assert "Folder 3: choose a folder" in message
    assert error_of(page, "watch_settle_seconds") == "At least 0.5"
    assert settings_file.read_bytes() == before
    assert "Nothing was saved" in page.status.text()
    # Corrected, it saves and the messages go.
    f.watch_table.item(0, 0).setText(str(tmp_path / "incoming"))
    f.watch_table.removeRow(2)
    f.watch_settle_seconds.setValue(0.5)
    assert save(qtbot, page).errors == {}
    assert error_of(page, "watch_folders") is None
    assert error_of(page, "watch_settle_seconds") is None
    folders = load_settings(settings_file).settings.watch_folders
    assert [w.folder for w in folders] == [tmp_path / "incoming", tmp_path / "ok"]


def test_a_template_that_takes_no_file_is_shown_and_refused(
    qtbot: Any, data_dir: Path, app_host: Any, tmp_path: Path
) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "settings.json"
    path.write_text(
        json.dumps({"watch_folders": [{"folder": str(tmp_path), "template": "diagnostic"}]})
    )
    before = path.read_bytes()
    page = SettingsPage(app_host)
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: page.current is not None, timeout=WAIT)
    assert template_combo(page, 0).currentData() == "diagnostic"  # as the file has it
    save(qtbot, page)
    assert "diagnostic does not take a media file" in (error_of(page, "watch_folders") or "")
    assert path.read_bytes() == before


def test_a_watch_folders_model_error_names_its_row(page: SettingsPage) -> None:
    error = work.FieldError("value_error", "not absolute", {"row": "1", "field": "folder"})
    assert page.message("watch_folders", error) == "Folder 2: not absolute"


@linux_only
def test_start_at_login_writes_the_entry_and_unticked_removes_it(
    qtbot: Any, page: SettingsPage, settings_file: Path, config_home: Path, data_dir: Path
) -> None:
    entry = config_home / "autostart" / "fredica.desktop"
    box = page.form.desktop_boxes["start_at_login"]
    box.setChecked(True)
    saved = save(qtbot, page)
    assert saved.errors == {} and saved.changed == {"start_at_login"}
    assert entry.is_file()
    exec_line = next(x for x in entry.read_text().splitlines() if x.startswith("Exec="))
    # This data directory is not the default one: the entry names it.
    assert f"--data-dir {data_dir} gui --minimized" in exec_line
    assert load_settings(settings_file).settings.start_at_login is True
    assert "In force now: Start at login." in page.status.text()
    # Saving again without a change leaves the entry alone; unticked, it goes.
    entry.write_text(entry.read_text() + "# mine\n")
    save(qtbot, page)
    assert entry.read_text().endswith("# mine\n")
    box.setChecked(False)
    assert save(qtbot, page).errors == {}
    assert not entry.exists()
    assert load_settings(settings_file).settings.start_at_login is False


@linux_only
def test_a_login_entry_that_cannot_be_written_is_said_and_nothing_is_saved(
    qtbot: Any,
    page: SettingsPage,
    settings_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocker))  # autostart/ cannot be made in it
    before = settings_file.read_bytes()
    page.form.desktop_boxes["start_at_login"].setChecked(True)
    page.form.desktop_boxes["notifications"].setChecked(False)
    saved = save(qtbot, page)
    assert set(saved.errors) == {"start_at_login"}
    message = error_of(page, "start_at_login") or ""
    assert "could not write the start-at-login entry" in message and str(blocker) in message
    assert settings_file.read_bytes() == before
    assert "Nothing was saved" in page.status.text()
    assert page.problem.isHidden()  # shown under its field, not above the form


def test_the_burned_in_subtitles_style_is_saved_and_a_bad_font_name_refused(
    qtbot: Any, page: SettingsPage, settings_file: Path
) -> None:
    f = page.form
    assert (f.burn_font.text(), f.burn_font_size.value()) == ("Sans", 18)
    f.burn_font.setText("Noto Sans CJK SC")
    f.burn_font_size.setValue(24)
    f.burn_outline.setValue(2.5)
    f.burn_position.setCurrentIndex(f.burn_position.findData("top"))
    saved = save(qtbot, page)
    assert saved.errors == {}
    s = load_settings(settings_file).settings
    assert (s.burn_font, s.burn_font_size, s.burn_outline, s.burn_position) == (
        "Noto Sans CJK SC", 24, 2.5, "top",
    )  # fmt: skip
    before = settings_file.read_bytes()
    f.burn_font.setText("Sans'; rm")  # no quote may reach a filter's style
    assert save(qtbot, page).settings is None
    assert error_of(page, "burn_font")
    assert settings_file.read_bytes() == before
