"""Paths and settings: overrides, atomic saves, and a corrupt file that is neither fatal nor
silently reset."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fredica_app.cli import main
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


# --- `fredica settings` -------------------------------------------------------------------


def settings_cmd(
    capsys: pytest.CaptureFixture[str], data: Path, *args: str
) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), "settings", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_settings_show_get_and_set_without_editing_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "settings.json"
    code, out, _ = settings_cmd(capsys, tmp_path, "--json")
    assert code == 0 and json.loads(out) == Settings().model_dump(
        mode="json", exclude={"schema_version"}
    )
    code, out, _ = settings_cmd(capsys, tmp_path)
    assert code == 0 and out.startswith(f"# no settings file ({path})")
    assert "max_workers          = 4  (default)\n" in out

    monkeypatch.chdir(tmp_path)
    for key, value in [
        ("max_workers", "8"),  # JSON: a number
        ("vad", "false"),
        ("slots", '{"gpu": 2}'),
        ("language", "en"),  # not JSON: the text itself
        ("initial_prompt", "true"),  # JSON, but the setting takes text: the word
        ("library_dir", "out"),  # a path setting: made absolute
    ]:
        code, out, err = settings_cmd(capsys, tmp_path, "set", key, value)
        assert code == 0 and err == "" and out.startswith(f"{key} = "), err
    expected = {
        "max_workers": 8,
        "vad": False,
        "slots": {"gpu": 2},
        "language": "en",
        "initial_prompt": "true",
        "library_dir": str(tmp_path / "out"),
    }
    assert json.loads(path.read_text()) == expected  # only what was set, nothing else
    assert load_settings(path).problem is None
    assert settings_cmd(capsys, tmp_path, "get", "max_workers")[1] == "8\n"
    assert settings_cmd(capsys, tmp_path, "get", "language")[1] == "en\n"
    assert settings_cmd(capsys, tmp_path, "get", "slots")[1] == '{"gpu": 2}\n'
    code, out, _ = settings_cmd(capsys, tmp_path)
    assert "max_workers          = 8\n" in out and "whisper_model        = " in out

    code, out, _ = settings_cmd(capsys, tmp_path, "set", "max_workers", "null")
    assert code == 0 and out.startswith("max_workers = 4 (the default)")
    assert "max_workers" not in json.loads(path.read_text())
    assert not list(tmp_path.glob(".settings-*"))  # written through a temporary file


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["set", "max_worker", "3"], "unknown setting 'max_worker' (did you mean 'max_workers'?)"),
        (
            ["get", "whisper_modle"],
            "unknown setting 'whisper_modle' (did you mean 'whisper_model'?)",
        ),
        (
            ["set", "max_workers", "0"],
            "max_workers: Input should be greater than or equal to 1; the settings are unchanged",
        ),
        (["set", "on_restart", "later"], "on_restart: Input should be 'resume' or 'hold'"),
    ],
)
def test_settings_refuses_unknown_keys_and_invalid_values_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"max_workers": 2}')
    code, out, err = settings_cmd(capsys, tmp_path, *args)
    assert code == 1 and out == ""
    assert err.startswith(f"fredica: error: {message}") and err.count("\n") == 1, err
    assert path.read_text() == '{"max_workers": 2}'


def test_a_settings_file_with_a_misspelt_key_names_the_closest_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"max_worker": 2}')
    code, _, err = main_runs(capsys, tmp_path)
    assert code == 0 and "unknown setting 'max_worker' (did you mean 'max_workers'?)" in err
    for args in ([], ["get", "vad"], ["set", "vad", "false"]):
        code, out, err = settings_cmd(capsys, tmp_path, *args)
        assert code == 1 and out == ""
        assert err == (
            f"fredica: error: the settings file {path} is not valid (unknown setting "
            "'max_worker' (did you mean 'max_workers'?)); fix it with `fredica settings edit`\n"
        )
    assert path.read_text() == '{"max_worker": 2}'


def main_runs(capsys: pytest.CaptureFixture[str], data: Path) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), "runs"])
    out, err = capsys.readouterr()
    return code, out, err


EDITOR_SCRIPT = """
import json, sys
path = sys.argv[-1]
data = json.load(open(path))
data.update(json.loads(sys.argv[1]))
json.dump(data, open(path, "w"))
"""


def test_settings_edit_runs_the_editor_without_a_shell_and_saves_only_what_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tmp_path / "my editor"
    scripts.mkdir()
    editor = scripts / "edit.py"
    editor.write_text(EDITOR_SCRIPT)
    marker = tmp_path / "a-shell-ran-this"
    path = tmp_path / "settings.json"

    def use_editor(change: dict[str, object]) -> None:
        # Quoted like a shell would want; the `;` would start a second command in a shell.
        monkeypatch.setenv(
            "EDITOR",
            f"{sys.executable} '{editor}' '{json.dumps(change)}' ; touch {marker}",
        )

    monkeypatch.delenv("VISUAL", raising=False)
    use_editor({"max_workers": 3})
    code, out, err = settings_cmd(capsys, tmp_path, "edit")
    assert code == 0 and out == f"saved {path}\n", err
    assert json.loads(path.read_text())["max_workers"] == 3  # a new file starts from the defaults
    assert not marker.exists()

    use_editor({"max_workers": "many"})
    before = path.read_text()
    code, out, err = settings_cmd(capsys, tmp_path, "edit")
    assert code == 1 and out == ""
    kept = tmp_path / "settings.json.rejected"
    assert err == (
        "fredica: error: the edited settings are not valid (max_workers: Input should be a valid "
        f"integer, unable to parse string as an integer); {path} is unchanged, your edit is "
        f"kept in {kept}\n"
    )
    assert path.read_text() == before and json.loads(kept.read_text())["max_workers"] == "many"
    assert not marker.exists()

    # $VISUAL comes first; an editor that cannot be run is one line.
    monkeypatch.setenv("VISUAL", str(tmp_path / "no-such-editor"))
    code, _, err = settings_cmd(capsys, tmp_path, "edit")
    assert code == 1 and err.startswith("fredica: error: cannot run the editor")
    assert path.read_text() == before
    assert not list(tmp_path.glob(".settings-*"))  # no draft left behind


def test_settings_set_start_at_login_writes_and_removes_the_login_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    entry = config / "autostart" / "fredica.desktop"
    code, _, err = settings_cmd(capsys, tmp_path, "set", "start_at_login", "true")
    assert code == 0, err
    text = entry.read_text()
    assert "--data-dir" in text and str(tmp_path) in text  # opens this data directory
    code, _, err = settings_cmd(capsys, tmp_path, "set", "start_at_login", "false")
    assert code == 0, err
    assert not entry.exists()
    # A login entry the system will not take: said, and the setting not saved.
    entry.mkdir()  # a folder in the way of the file
    code, _, err = settings_cmd(capsys, tmp_path, "set", "start_at_login", "true")
    assert code == 1 and "start-at-login entry" in err
    assert json.loads((tmp_path / "settings.json").read_text())["start_at_login"] is False


def test_settings_edit_of_start_at_login_writes_the_entry_or_keeps_the_edit_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    entry = config / "autostart" / "fredica.desktop"
    editor = tmp_path / "edit.py"
    editor.write_text(EDITOR_SCRIPT)
    path = tmp_path / "settings.json"
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv(
        "EDITOR", f"{sys.executable} {editor} '{json.dumps({'start_at_login': True})}'"
    )
    code, _, err = settings_cmd(capsys, tmp_path, "edit")
    assert code == 0, err
    assert entry.is_file() and json.loads(path.read_text())["start_at_login"] is True
    # Turned off where the entry cannot be removed (a folder in its place): nothing saved.
    entry.unlink()
    entry.mkdir()
    monkeypatch.setenv(
        "EDITOR", f"{sys.executable} {editor} '{json.dumps({'start_at_login': False})}'"
    )
    code, _, err = settings_cmd(capsys, tmp_path, "edit")
    assert code == 1 and "start-at-login entry" in err and "settings.json.rejected" in err
    assert json.loads(path.read_text())["start_at_login"] is True
    assert json.loads((tmp_path / "settings.json.rejected").read_text())["start_at_login"] is False
