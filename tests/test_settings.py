"""Paths and settings: overrides, atomic saves, and a corrupt file that is neither fatal nor
silently reset."""

from __future__ import annotations

from pathlib import Path

import pytest

from fredica_app.errors import SettingsError
from fredica_app.paths import ENV_DATA_DIR, resolve_paths
from fredica_app.settings import Settings, load_settings, save_settings


def test_data_dir_argument_beats_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_DATA_DIR, str(tmp_path / "env"))
    assert resolve_paths(tmp_path / "arg").data_dir == (tmp_path / "arg").resolve()
    env = resolve_paths()
    assert env.data_dir == (tmp_path / "env").resolve()
    assert env.settings_file.parent == env.data_dir  # everything under the one folder
    assert env.cache_dir.is_relative_to(env.data_dir)
    assert env.log_dir.is_relative_to(env.data_dir)


def test_platform_dirs_when_nothing_is_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_DATA_DIR)
    paths = resolve_paths()
    assert "fredica" in str(paths.data_dir).lower()
    assert paths.database.name == "fredica.db"


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    loaded = load_settings(tmp_path / "settings.json")
    assert loaded.settings == Settings() and loaded.problem is None


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "settings.json"
    save_settings(path, Settings(max_workers=7, slots={"gpu": 2}, proxy="http://127.0.0.1:3128"))
    loaded = load_settings(path)
    assert loaded.problem is None
    assert (loaded.settings.max_workers, loaded.settings.slots) == (7, {"gpu": 2})
    assert (loaded.settings.on_restart, loaded.settings.max_interruptions) == ("resume", 5)
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]  # no temp file left


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"max_workers": 4,,}', "not valid JSON at line 1"),
        ('{"max_workers": 0}', "max_workers"),
        ('{"max_interruptions": 0}', "max_interruptions"),
        ('{"on_restart": "later"}', "on_restart"),
        ('{"colour": "blue"}', "colour"),
        (b"\xff\xfe\x00garbage", "utf-8"),
    ],
)
def test_corrupt_file_is_reported_backed_up_and_left_in_place(
    tmp_path: Path, content: str | bytes, reason: str
) -> None:
    path = tmp_path / "settings.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    original = path.read_bytes()
    loaded = load_settings(path)
    assert loaded.settings == Settings()
    assert loaded.problem is not None
    assert str(path) in loaded.problem and reason in loaded.problem
    assert loaded.backup is not None and loaded.backup.read_bytes() == original
    assert path.read_bytes() == original  # never silently replaced


def test_save_failure_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SettingsError, match="could not save settings to"):
        save_settings(blocker / "settings.json", Settings())
