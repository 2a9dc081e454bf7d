"""User settings: a pydantic model saved as JSON.

A settings file that cannot be read is never silently replaced: it is copied aside as a
timestamped backup, the defaults are used for this session, and the problem is reported (the
CLI prints it, the GUI shows it) with the file's name. The user's file stays where it was until
they save new settings.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fredica_app.errors import SettingsError


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    schema_version: int = 1
    #: Where outputs go (a folder per material). None: ``<data dir>/library``.
    library_dir: Path | None = None
    #: Tasks running at once, all classes together.
    max_workers: int = Field(default=4, ge=1, le=64)
    #: Per-resource-class slots; a class left out gets the engine's default.
    slots: dict[str, int] = Field(default_factory=dict)
    #: ``FULL``: an acknowledged completion survives power loss. ``NORMAL`` is faster and
    #: survives an application crash but may lose the last commits on power loss.
    sqlite_synchronous: Literal["NORMAL", "FULL"] = "FULL"
    #: An ffmpeg binary to use instead of the bundled one.
    ffmpeg_path: Path | None = None
    #: HTTP(S) proxy for downloads.
    proxy: str | None = None


@dataclass(frozen=True, slots=True)
class LoadedSettings:
    settings: Settings
    problem: str | None = None  # set when the file could not be used; say it to the user
    backup: Path | None = None


def load_settings(path: Path) -> LoadedSettings:
    if not path.exists():
        return LoadedSettings(Settings())
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
        return LoadedSettings(Settings.model_validate(data))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValidationError) as exc:
        backup = _backup(path)
        reason = _reason(exc)
        kept = f"a copy was kept as {backup}" if backup else "no backup could be made"
        problem = (
            f"the settings file {path} could not be read ({reason}); using the defaults for "
            f"now — {kept}. Fix the file or delete it."
        )
        return LoadedSettings(Settings(), problem, backup)


def save_settings(path: Path, settings: Settings) -> None:
    """Write atomically: a crash mid-save leaves the old file, never half a file."""
    data = settings.model_dump_json(indent=2, exclude_defaults=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise SettingsError(f"could not save settings to {path}: {exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SettingsError(f"could not save settings to {path}: {exc}") from exc


def _backup(path: Path) -> Path | None:
    backup = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        shutil.copy2(path, backup)
    except OSError:
        return None
    return backup


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "file"
        return f"{where}: {err['msg']}"
    return str(exc)
