"""User settings: a pydantic model saved as JSON.

A settings file that cannot be read is never silently replaced: it is copied aside as a
timestamped backup, the defaults are used for this session, and the problem is reported (the
CLI prints it, the GUI shows it) with the file's name. The user's file stays where it was until
they save new settings.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticSerializationError

from fredica_app.errors import SettingsError
from python_endpoints.params import (
    BurnSubtitlesParams,
    ModelDownloadParams,
    TranscodeParams,
    TranscribeParams,
)


def _job_default(params: type[BaseModel], name: str) -> Any:
    """The default of a setting that fills a job's param (the job catalogue says which): the
    param's own, stated once in its params model."""
    return params.model_fields[name].default


#: A resource class's name in ``slots`` (``cpu``, ``gpu``, ``net``, ``io``; another is kept,
#: and names no task's). A constrained ``str``: it refuses text that is not UTF-8 (a lone
#: surrogate), which the engine's claim would hand SQLite.
SlotClass = Annotated[str, Field(min_length=1, max_length=64)]


class WatchFolder(BaseModel):
    """A folder whose new media files are added to the library and submitted to a template."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    folder: Path
    #: The workflow template each new file is submitted to (``fredica templates``).
    template: str = Field(default="transcode_mp4", min_length=1)
    #: Also the files in its subfolders.
    recursive: bool = True
    #: Which files: glob patterns on the name (``*.mkv``), none: every media file.
    patterns: list[str] = Field(default_factory=list)
    #: The template's parameters for each file (``{"profile": "archive"}``): checked against
    #: the template when the watching starts (``fredica templates NAME`` lists them).
    params: dict[str, str] = Field(default_factory=dict)

    @field_validator("folder")
    @classmethod
    def _absolute(cls, folder: Path) -> Path:
        if not folder.expanduser().is_absolute():
            raise ValueError(f"{folder} is not an absolute path")
        return folder.expanduser()


class PathMapEntry(BaseModel):
    """A folder of shared storage: where this machine sees it, and where the host does."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: This machine's path of the folder (``/mnt/nas``).
    local: Path
    #: The host's path of the same folder (``/srv/media``, ``\\nas\media``, ``D:\media``).
    remote: str = Field(min_length=1, max_length=4096)

    @field_validator("local")
    @classmethod
    def _absolute(cls, folder: Path) -> Path:
        if not folder.expanduser().is_absolute():
            raise ValueError(f"{folder} is not an absolute path")
        return folder.expanduser()

    @field_validator("remote")
    @classmethod
    def _remote_absolute(cls, path: str) -> str:
        windows = path.startswith("\\\\") or (len(path) > 2 and path[1] == ":" and path[2] in "\\/")
        if not (path.startswith("/") or windows) or "\0" in path:
            raise ValueError(f"{path!r} is not an absolute path on the host")
        return path


class EndpointHostEntry(BaseModel):
    """An endpoints server on another host (``fredica endpoints --host 0.0.0.0 …`` there): the
    tasks of its resource classes run on it (docs/scale-out.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: A short name, shown in the window, in ``fredica hosts`` and in errors.
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    #: ``wss://gpu-box.lan:8765`` (``ws://`` only for an address of this machine).
    url: str = Field(pattern=r"^wss?://[^/?#\s]+:[0-9]{1,5}/?$")
    #: The resource classes it serves (``gpu``): their tasks run there, never here.
    classes: list[SlotClass] = Field(min_length=1)
    #: The file that holds its token (readable by its owner only, as the server's own).
    token_file: Path
    #: The CA certificate its certificate comes from (None: the system's).
    ca_file: Path | None = None
    #: Shared storage: each folder here and where the host sees it.
    path_map: list[PathMapEntry] = Field(default_factory=list)
    #: Its models folder, for speech models when this machine's is not shared (None: the
    #: embedded model only, unless this machine's models folder is on shared storage).
    models_dir: str | None = Field(default=None, min_length=1, max_length=4096)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    schema_version: int = 1
    #: Where outputs go (a folder per material). None: ``<data dir>/library``.
    library_dir: Path | None = None
    #: Tasks running at once, all classes together.
    max_workers: int = Field(default=4, ge=1, le=64)
    #: Per-resource-class slots; a class left out gets the engine's default.
    slots: dict[SlotClass, int] = Field(default_factory=dict)
    #: ``FULL``: an acknowledged completion survives power loss. ``NORMAL`` is faster and
    #: survives an application crash but may lose the last commits on power loss.
    sqlite_synchronous: Literal["NORMAL", "FULL"] = "FULL"
    #: A shared queue on PostgreSQL, for several hosts (docs/scale-out.md):
    #: ``postgresql+psycopg://USER@HOST:5432/DB?sslmode=verify-full&sslrootcert=CA``. None:
    #: this data directory's own SQLite file. Never a password: it comes from ``PGPASSWORD``
    #: or a password file (``passfile=``). ``--db-url`` and ``$FREDICA_DB_URL`` come first.
    database_url: str | None = None
    #: How long a task stays an engine's without a renewal; an engine renews its leases with
    #: its heartbeat, at most every third of this. On a shared queue, a host that stops
    #: answering has its tasks taken over after this.
    lease_seconds: float = Field(default=30.0, ge=3, le=3600)
    #: How often an engine renews its leases and looks for leases that ran out.
    heartbeat_seconds: float = Field(default=5.0, ge=0.2, le=600)
    #: An ffmpeg binary to use instead of the bundled one.
    ffmpeg_path: Path | None = None
    #: HTTP(S) proxy for downloads.
    proxy: str | None = None
    #: What TRANSCODE_MP4 makes: ``compatible`` (H.264 High@4.1 and AAC stereo: plays on
    #: anything from the last ten years), ``modern`` (copies whatever MP4 holds: Opus, FLAC,
    #: HEVC) or ``archive`` (copies every stream, re-encodes nothing).
    mp4_profile: Literal["compatible", "modern", "archive"] = _job_default(
        TranscodeParams, "profile"
    )
    #: How many people speak in what the transcript template labels (DIARIZE); None:
    #: estimated. A template's ``--param speakers=N`` overrides it for one submission.
    diarize_speakers: int | None = Field(default=None, ge=1, le=20)
    #: Burned-in subtitles (BURN_SUBTITLES): the font family (a name the system's fonts
    #: know), its size (libass units: the picture is 288 high), the outline, and the place.
    burn_font: str = Field(
        default=_job_default(BurnSubtitlesParams, "font"),
        pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$",
    )
    burn_font_size: int = Field(default=_job_default(BurnSubtitlesParams, "font_size"), ge=6, le=96)
    burn_outline: float = Field(default=_job_default(BurnSubtitlesParams, "outline"), ge=0, le=10)
    burn_position: Literal["bottom", "top"] = _job_default(BurnSubtitlesParams, "position")
    #: What start-up does with work that was running when Fredica stopped: ``resume`` it (from
    #: its checkpoint when it can, else from the start), or ``hold`` it (paused) for review.
    on_restart: Literal["resume", "hold"] = "resume"
    #: How many crashes of Fredica a running task may live through; at the next one it fails
    #: ``INTERRUPTED`` (it may be what makes Fredica stop). A graceful stop does not count.
    max_interruptions: int = Field(default=5, ge=1, le=1_000_000)

    # --- speech-to-text ---
    #: Where Whisper models are installed (None: ``<data dir>/models``).
    models_dir: Path | None = None
    #: A model name (``tiny.en`` ships with Fredica; others are downloaded on first use into
    #: ``models_dir``) or the path of a CTranslate2 model directory.
    whisper_model: str = Field(default=_job_default(TranscribeParams, "model"), min_length=1)
    whisper_device: Literal["auto", "cpu", "cuda"] = _job_default(TranscribeParams, "device")
    #: ``auto``: float16, then float32, then int8 — the first the device takes (remembered).
    whisper_compute_type: Literal[
        "auto", "float16", "float32", "int8", "int8_float16", "int8_float32", "bfloat16"
    ] = _job_default(TranscribeParams, "compute_type")
    #: ``auto`` (detected, majority over chunks) or a language code such as ``en``.
    language: str = Field(
        default=_job_default(TranscribeParams, "language"),
        pattern=r"^(auto|[a-z]{2,3}(-[A-Za-z]+)?)$",
    )
    vad: bool = _job_default(TranscribeParams, "vad")
    beam_size: int = Field(default=_job_default(TranscribeParams, "beam_size"), ge=1, le=16)
    initial_prompt: str | None = Field(default=None, max_length=2000)
    #: On a GPU out of memory, fall back to a smaller compute type and then the CPU instead
    #: of pausing the task for you to free memory.
    allow_cpu_fallback: bool = _job_default(TranscribeParams, "allow_fallback")
    #: Where models are downloaded from (a Hugging Face compatible server).
    model_base_url: str = _job_default(ModelDownloadParams, "base_url")

    # --- analysis with a language model (optional; nothing is sent anywhere unless set) ---
    #: An OpenAI-compatible endpoint, e.g. a local Ollama: ``http://127.0.0.1:11434/v1``.
    llm_base_url: str | None = None
    llm_model: str | None = None
    #: The name of an environment variable that holds the API key (never the key itself).
    llm_api_key_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]{0,63}$")

    # --- the desktop app ---
    #: The window's language: ``auto`` (the system's when Fredica has it, else English),
    #: ``en`` or ``zh_CN`` (Simplified Chinese).
    ui_language: Literal["auto", "en", "zh_CN"] = "auto"
    #: Light or dark: ``auto`` follows the system.
    ui_theme: Literal["auto", "light", "dark"] = "auto"
    #: Closing the window while tasks run keeps Fredica running in the tray (where the
    #: desktop has one); off: closing the window quits.
    close_to_tray: bool = True
    #: Desktop notifications: a run completed or failed, work to review after a restart, the
    #: disk nearly full.
    notifications: bool = True
    #: Keep the computer from going to sleep while tasks run (released when the queue is idle
    #: or paused).
    keep_awake: bool = True
    #: Start Fredica, in the tray, when you log in.
    start_at_login: bool = False

    # --- watch folders ---
    #: Folders whose new media files are added and submitted (by the desktop app while it
    #: runs, and by ``fredica watch-folders``).
    watch_folders: list[WatchFolder] = Field(default_factory=list)
    #: Seconds a file's size and modification time must stay the same before it is taken in
    #: (a file still being written or copied is left alone until then).
    watch_settle_seconds: float = Field(default=5.0, ge=0.5, le=3600)

    # --- other hosts ---
    #: Endpoint hosts: the tasks of the resource classes they serve run there
    #: (docs/scale-out.md).
    endpoint_hosts: list[EndpointHostEntry] = Field(default_factory=list)

    # --- history (what the engine prunes when idle, and `fredica prune`) ---
    #: Days a finished run (completed, failed, cancelled) is kept after it finished, with its
    #: tasks and their timeline. 0 or None: forever.
    keep_runs_days: float | None = Field(default=30, ge=0, allow_inf_nan=False)
    #: Days a timeline event is kept, whatever its run. 0 or None: forever.
    keep_events_days: float | None = Field(default=90, ge=0, allow_inf_nan=False)

    @field_validator("database_url")
    @classmethod
    def _shared_database(cls, url: str | None) -> str | None:
        return None if url is None else check_database_url(url)


def check_database_url(url: str) -> str:
    """A shared database's URL as the settings may hold it: PostgreSQL, no password in it (a
    settings file is shown and copied; the password comes from ``PGPASSWORD`` or a password
    file). Raises ``ValueError`` saying what to change."""
    import sqlalchemy as sa

    try:
        u = sa.make_url(url)
    except Exception as exc:
        raise ValueError(f"not a database URL ({exc})") from None
    if u.get_backend_name() != "postgresql":
        raise ValueError("a shared database is PostgreSQL: postgresql+psycopg://USER@HOST:5432/DB")
    if u.password is not None or "password" in u.query:
        raise ValueError(
            "keep the password out of the URL: set PGPASSWORD, or name a password file "
            "with ?passfile=PATH (or ~/.pgpass)"
        )
    return url


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
    # ValueError: JSON's (json.JSONDecodeError), UTF-8's and an integer too long to convert.
    except (OSError, ValueError, RecursionError, ValidationError) as exc:
        backup = _backup(path)
        reason = _reason(exc)
        kept = f"a copy was kept as {backup}" if backup else "no backup could be made"
        problem = (
            f"the settings file {path} could not be read ({reason}); using the defaults for "
            f"now — {kept}. Fix the file or delete it."
        )
        return LoadedSettings(Settings(), problem, backup)


def save_settings(path: Path, settings: Settings) -> None:
    """Write atomically: a crash mid-save leaves the old file, never half a file. A path or
    text that is not UTF-8 (a folder named in Latin-1: lone surrogates) is written as
    ``\\udc..`` escapes, which read back as the same string."""
    try:
        text = settings.model_dump_json(indent=2, exclude_defaults=False)
    except PydanticSerializationError:
        text = json.dumps(settings.model_dump(mode="json"), indent=2)
    write_settings_text(path, text)


#: The settings a user sets (``schema_version`` is the file format's, not theirs).
KEYS = tuple(name for name in Settings.model_fields if name != "schema_version")


def read_settings_data(path: Path) -> dict[str, Any]:
    """The settings file's own JSON object ({} when there is no file), for changing some keys
    and leaving the others as the user wrote them. :class:`SettingsError` when it cannot be
    read (nothing is copied or changed)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise SettingsError(
            f"the settings file {path} could not be read ({_reason(exc)}); fix it with "
            "`fredica settings edit`, or delete it"
        ) from exc
    if not isinstance(data, dict):
        raise SettingsError(
            f"the settings file {path} could not be read (file: not a JSON object); fix it "
            "with `fredica settings edit`, or delete it"
        )
    return data


def validate_settings_data(data: Any) -> Settings:
    """The settings ``data`` stands for; :class:`SettingsError` with the reason
    :func:`load_settings` would give for a file holding it."""
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(_reason(exc)) from None


def write_settings_text(path: Path, text: str) -> None:
    """Write the settings file atomically (a temporary file, fsynced, renamed over it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise SettingsError(f"could not save settings to {path}: {exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SettingsError(f"could not save settings to {path}: {exc}") from exc


def closest_key(name: str) -> str | None:
    """The setting whose name is closest to ``name`` (a typo), if any is close."""
    found = difflib.get_close_matches(name, KEYS, n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_key(name: str) -> str:
    """What to say of a key that is not a setting."""
    near = closest_key(name)
    hint = f"did you mean {near!r}?" if near else "`fredica settings` lists them"
    return f"unknown setting {name!r} ({hint})"


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
    if isinstance(exc, RecursionError):
        return "its JSON is nested too deeply"
    if type(exc) is ValueError:  # what JSON's reader raises for an integer too long to convert
        return "it holds a number of more digits than can be read"
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
            return unknown_key(str(err["loc"][0]))
        where = ".".join(str(p) for p in err["loc"]) or "file"
        return f"{where}: {err['msg']}"
    return str(exc)
