"""``fredica settings``: show, get, set and edit the settings file without writing JSON by hand.

Every change is validated as a whole file would be (:func:`settings.validate_settings_data`,
the messages ``load_settings`` gives) before the file is written, atomically; keys the user did
not touch stay as they wrote them. Needs no database: it works on a data directory whose
database cannot be opened.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from fredica_app.errors import FredicaError, SettingsError
from fredica_app.settings import (
    KEYS,
    Settings,
    read_settings_data,
    unknown_key,
    validate_settings_data,
    write_settings_text,
)


def check_key(key: str) -> str:
    if key not in KEYS:
        raise SettingsError(unknown_key(key))
    return key


def parse_value(key: str, text: str, data: dict[str, Any]) -> Any:
    """``text`` as JSON when it parses and the setting takes it (``8``, ``true``,
    ``{"gpu": 1}``), else as the string itself (``en``, ``http://proxy:3128``); a path
    setting's relative path is made absolute (the settings are read from any folder)."""
    if _is_path(key) and text != "null":
        return str(Path(text).expanduser().resolve())
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if value is None or isinstance(value, str) or _fits(key, value, data):
        return value
    # `initial_prompt true` means the word; `max_workers 0` is reported as the number.
    return text if _fits(key, text, data) else value


def _fits(key: str, value: Any, data: dict[str, Any]) -> bool:
    try:
        validate_settings_data({**data, key: value})
    except SettingsError:
        return False
    return True


def _is_path(key: str) -> bool:
    annotation = Settings.model_fields[key].annotation
    return annotation in (Path, Path | None)


def _load(settings_file: Path) -> tuple[dict[str, Any], Settings]:
    """The file's own keys, and the settings they make; one error naming the file if they
    are not valid."""
    data = read_settings_data(settings_file)
    try:
        return data, validate_settings_data(data)
    except SettingsError as exc:
        raise SettingsError(
            f"the settings file {settings_file} is not valid ({exc}); fix it with `fredica "
            "settings edit`"
        ) from None


def show(settings_file: Path, *, as_json: bool) -> None:
    data, settings = _load(settings_file)
    values = settings.model_dump(mode="json", include=set(KEYS))
    if as_json:
        print(json.dumps({k: values[k] for k in KEYS}, indent=2))
        return
    if settings_file.exists():
        print(f"# {settings_file}")
    else:
        print(f"# no settings file ({settings_file}): every value is the default")
    width = max(len(k) for k in KEYS)
    for key in KEYS:
        mark = "" if key in data else "  (default)"
        print(f"{key:<{width}} = {json.dumps(values[key])}{mark}")


def get(settings_file: Path, key: str) -> None:
    check_key(key)
    value = _load(settings_file)[1].model_dump(mode="json")[key]
    print(value if isinstance(value, str) else json.dumps(value))


def set_value(settings_file: Path, key: str, text: str, data_dir: Path | None = None) -> None:
    """Set ``key`` (``null``: back to its default) and save, if the result is valid. A change
    of ``start_at_login`` writes or removes the login entry first (for ``data_dir``)."""
    check_key(key)
    data = read_settings_data(settings_file)
    value = parse_value(key, text, data)
    changed = dict(data)
    if value is None:
        changed.pop(key, None)
    else:
        changed[key] = value
    try:
        settings = validate_settings_data(changed)
    except SettingsError as exc:
        _load(settings_file)  # raises if the file was not valid before: say that, naming it
        raise SettingsError(f"{exc}; the settings are unchanged") from None
    before = _current(data)
    _apply_login_entry(before, settings, data_dir)
    write_settings_text(settings_file, json.dumps(changed, indent=2))
    shown = json.dumps(settings.model_dump(mode="json")[key])
    note = " (the default)" if value is None else ""
    print(
        f"{key} = {shown}{note}; saved to {settings_file} (a running engine reads it when it "
        "starts next)"
    )


def edit(settings_file: Path, data_dir: Path | None = None) -> None:
    """Open the editor on a copy of the file; save the copy over it only once it is valid
    (and, when ``start_at_login`` changed, once the login entry is written or removed)."""
    if settings_file.exists():
        try:
            original = settings_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"cannot read the settings file {settings_file}: {exc}") from exc
    else:
        original = Settings().model_dump_json(indent=2, exclude={"schema_version"}) + "\n"
    settings_file.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".settings-edit-", suffix=".json", dir=settings_file.parent)
    draft = Path(name)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(original)
    try:
        _run_editor(draft)
        text = draft.read_text(encoding="utf-8")
    except BaseException:
        draft.unlink(missing_ok=True)
        raise
    if text == original and settings_file.exists():
        draft.unlink()
        print(f"no change to {settings_file}")
        return
    try:
        edited = validate_settings_data(json.loads(text))
    except (ValueError, SettingsError) as exc:
        kept = settings_file.with_name(settings_file.name + ".rejected")
        os.replace(draft, kept)
        reason = (
            f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            if isinstance(exc, json.JSONDecodeError)
            else str(exc)
        )
        raise SettingsError(
            f"the edited settings are not valid ({reason}); {settings_file} is unchanged, "
            f"your edit is kept in {kept}"
        ) from None
    try:
        _apply_login_entry(_current_text(original), edited, data_dir)
    except FredicaError as exc:
        kept = settings_file.with_name(settings_file.name + ".rejected")
        os.replace(draft, kept)
        raise SettingsError(
            f"{exc}; {settings_file} is unchanged, your edit is kept in {kept}"
        ) from None
    draft.unlink()
    write_settings_text(settings_file, text)
    print(f"saved {settings_file}")


def editor_argv() -> list[str]:
    """The editor to run, as an argument list: ``$VISUAL``, else ``$EDITOR`` (split like a
    shell would split them, but never run by a shell), else a common one found here."""
    for variable in ("VISUAL", "EDITOR"):
        value = os.environ.get(variable, "").strip()
        if value:
            return shlex.split(value, posix=os.name != "nt")
    for name in ("notepad",) if os.name == "nt" else ("sensible-editor", "nano", "vi"):
        found = shutil.which(name)
        if found:
            return [found]
    raise SettingsError("no editor found: set $EDITOR (e.g. `export EDITOR=nano`)")


def _run_editor(path: Path) -> None:
    argv = editor_argv()
    try:
        done = subprocess.run([*argv, str(path)], check=False)
    except OSError as exc:
        raise SettingsError(f"cannot run the editor {argv[0]!r}: {exc.strerror or exc}") from None
    if done.returncode != 0:
        raise SettingsError(
            f"the editor {argv[0]!r} exited with code {done.returncode}; the settings are unchanged"
        )


def run(
    settings_file: Path,
    action: str | None,
    key: str,
    value: str,
    as_json: bool,
    data_dir: Path | None = None,
) -> int:
    """The ``settings`` command, its arguments checked by argparse. ``data_dir``: the data
    directory a login entry opens."""
    if action == "get":
        get(settings_file, key)
    elif action == "set":
        set_value(settings_file, key, value, data_dir)
    elif action == "edit":
        edit(settings_file, data_dir)
    else:
        show(settings_file, as_json=as_json)
    return 0


def _current(data: object) -> Settings:
    """The settings ``data`` stands for; the defaults when it is not valid."""
    try:
        return validate_settings_data(data)
    except SettingsError:
        return Settings()


def _current_text(text: str) -> Settings:
    try:
        return _current(json.loads(text))
    except ValueError:
        return Settings()


def _apply_login_entry(before: Settings, after: Settings, data_dir: Path | None) -> None:
    """Write or remove the login entry when ``start_at_login`` changes (as the settings page
    does), before the file is saved: when the system refuses, nothing is saved."""
    if before.start_at_login == after.start_at_login or data_dir is None:
        return
    from fredica_app.desktop import autostart

    autostart.set_for_data_dir(after.start_at_login, data_dir)
