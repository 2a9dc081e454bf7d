"""What the settings page asks of the application, run on the host's loop (``AppHost.call``):
reading and saving the settings file, finding the ffmpeg in use and its hardware encoders,
downloading a speech model through the queue. No Qt here.

Saving changes only the keys the page shows, and keeps the others as the file has them (as
``fredica settings set`` does); the whole result is validated with the settings model before
anything is written, and written atomically. Afterwards the application's :attr:`settings`
take the values it reads when work is *submitted* (:data:`LIVE_KEYS`): those apply to new runs
at once. The others are read when the application opens or its engine starts
(:data:`RESTART_KEYS`) and apply at the next start: the engine has no way to change its limits
while it runs, and the endpoints server was started with its ffmpeg, its writable folders and
the API key variable it lets jobs read.

Saving a change of ``start_at_login`` writes or removes the login entry first
(:mod:`fredica_app.desktop.autostart`, off the host's loop in a thread): when the system
refuses, nothing is saved and the reason shows under the field.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from fredica_app import models
from fredica_app.desktop import autostart
from fredica_app.errors import FredicaError, SettingsError
from fredica_app.settings import Settings, read_settings_data, write_settings_text
from fredica_app.views.encoders import Encoder, hardware_encoders, parse_version
from python_endpoints.jobs import ffmpeg as ff
from workers.records import TaskRecord
from workers.spec import TaskSpec, WorkflowSpec, prepare_run

#: The settings the page edits.
FORM_KEYS = (
    "library_dir",
    "max_workers",
    "slots",
    "ffmpeg_path",
    "whisper_model",
    "whisper_device",
    "whisper_compute_type",
    "language",
    "burn_font",
    "burn_font_size",
    "burn_outline",
    "burn_position",
    "llm_base_url",
    "llm_model",
    "llm_api_key_env",
    "proxy",
    "ui_language",
    "ui_theme",
    "close_to_tray",
    "notifications",
    "keep_awake",
    "start_at_login",
    "watch_folders",
    "watch_settle_seconds",
)

if TYPE_CHECKING:
    from fredica_app.services import Fredica
#: Read from ``app.settings`` when work is submitted (``jobs.app_values``): a saved change
#: applies to new runs at once. ``ui_language`` and ``ui_theme`` apply at once too: the page
#: says so (``language_changed``, ``theme_changed``) and the application follows.
LIVE_KEYS = frozenset(
    {
        "whisper_model",
        "whisper_device",
        "whisper_compute_type",
        "language",
        "burn_font",
        "burn_font_size",
        "burn_outline",
        "burn_position",
        "llm_base_url",
        "llm_model",
        "proxy",
        "ui_language",
        "ui_theme",
        "close_to_tray",
        "notifications",
        "start_at_login",
        "watch_folders",
        "watch_settle_seconds",
    }
)
#: Of :data:`LIVE_KEYS`, the desktop's own, in force at once rather than for new work: the
#: tray and the notifier read them from ``app.settings`` when they act, the application host
#: starts watching anew within a second of a change of the watch folders, and the login entry
#: is written by the save itself. (``keep_awake`` is read when the engine starts.)
AT_ONCE_KEYS = frozenset(
    {"close_to_tray", "notifications", "start_at_login", "watch_folders", "watch_settle_seconds"}
)
#: Read when the application opens or its engine starts: a change applies at the next start.
#: (``library_dir`` too: the endpoints server may write only into the folders it was started
#: with, so new outputs cannot go to a new library folder before then.)
RESTART_KEYS = frozenset(FORM_KEYS) - LIVE_KEYS
#: The resource classes whose slots the page sets (a file may name others: they are kept).
SLOT_CLASSES = ("cpu", "gpu", "net", "io")
#: Seconds an ffmpeg gets to list its encoders or encode a test frame.
FFMPEG_TIMEOUT = 20.0
#: The key of a model download's task in its run.
DOWNLOAD_KEY = "download_model"


@dataclass(frozen=True, slots=True)
class Loaded:
    """The settings file as the page shows it."""

    settings_file: Path
    #: The file's values, or the defaults when it cannot be used (``problem`` says why).
    settings: Settings
    problem: str | None
    #: Where outputs and models go when the settings name no folder.
    default_library_dir: Path
    models_dir: Path
    #: The speech models installed (the embedded one included).
    installed_models: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FieldError:
    """The settings model's complaint about one setting."""

    #: pydantic's error type (``greater_than_equal``, ``string_pattern_mismatch``…).
    type: str
    message: str
    #: The rule's figures, e.g. ``{"ge": "1"}``.
    context: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Saved:
    """What a save did: nothing but ``errors`` (by key; ``slots.cpu`` for a slot) when the
    values are not valid; else the settings written and the keys whose value changed."""

    errors: dict[str, FieldError] = field(default_factory=dict)
    settings: Settings | None = None
    changed: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class FfmpegFound:
    """The ffmpeg in use and what it offers."""

    binary: str
    bundled: bool
    version: str | None = None
    #: The hardware encoders it was built with (whether the machine has what they need or
    #: not).
    hardware: tuple[Encoder, ...] = ()
    #: Those H.264 ones (what TRANSCODE_MP4 would use) that encoded a test frame here.
    working_h264: tuple[str, ...] = ()
    #: Why it could not be run, if it could not.
    error: str | None = None


async def load(app: Fredica) -> Loaded:
    """Read the settings file (not ``app.settings``: the file may have changed since)."""
    path = app.paths.settings_file
    problem = None
    try:
        data = await asyncio.to_thread(read_settings_data, path)
        settings = Settings.model_validate(data)
    except (SettingsError, ValidationError) as exc:
        problem = str(exc) if isinstance(exc, SettingsError) else _first_error(exc)
        settings = Settings()
    installed = await asyncio.to_thread(models.list_models, app.models_dir)
    return Loaded(
        path,
        settings,
        problem,
        app.paths.default_library_dir,
        app.models_dir,
        tuple(m.name for m in installed),
    )


def merge(data: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The file's ``data`` with the page's ``values``: a None value removes its key (back to
    the default); a default value is written only over a key the file has, so that a file
    keeps naming only what the user chose."""
    defaults = Settings()
    merged = dict(data)
    if isinstance(values.get("slots"), dict) and isinstance(data.get("slots"), dict):
        others = {k: v for k, v in data["slots"].items() if k not in SLOT_CLASSES}
        values = {**values, "slots": {**others, **values["slots"]}}
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        elif key in merged or value != getattr(defaults, key):
            merged[key] = value
    return merged


async def save(app: Fredica, values: dict[str, Any], *, check_only: bool = False) -> Saved:
    """Validate the settings file with ``values`` in it; when valid, write it and put the
    :data:`LIVE_KEYS` in force. Nothing is written when it is not, nor with ``check_only``
    (the form found problems of its own: the model's are wanted beside them)."""
    path = app.paths.settings_file
    try:
        data = await asyncio.to_thread(read_settings_data, path)
    except SettingsError:
        data = {}  # unreadable: load_settings kept a copy aside; the page's values replace it
    try:
        before = Settings.model_validate(data)
    except ValidationError:
        before = Settings()
    merged = merge(data, values)
    try:
        after = Settings.model_validate(merged)
    except ValidationError as exc:
        return Saved(errors=field_errors(exc))
    if check_only:
        return Saved()
    login = after.start_at_login if after.start_at_login != before.start_at_login else None
    if login is not None:
        try:
            await asyncio.to_thread(set_start_at_login, app, login)
        except FredicaError as exc:
            return Saved(errors={"start_at_login": FieldError("autostart", str(exc))})
    try:
        await asyncio.to_thread(write_settings_text, path, json.dumps(merged, indent=2))
    except SettingsError:
        if login is not None:  # the file still says the opposite: so should the system
            with contextlib.suppress(FredicaError):
                await asyncio.to_thread(set_start_at_login, app, not login)
        raise
    changed = frozenset(k for k in FORM_KEYS if getattr(before, k) != getattr(after, k))
    live = {k: getattr(after, k) for k in LIVE_KEYS}
    app.settings = app.settings.model_copy(update=live)
    return Saved(settings=after, changed=changed)


def set_start_at_login(app: Fredica, enabled: bool) -> None:
    """Write (or remove) the login entry that starts this Fredica, on this data directory,
    in the tray. Blocking: run it in a thread."""
    autostart.set_for_data_dir(enabled, app.paths.data_dir)


def field_errors(exc: ValidationError) -> dict[str, FieldError]:
    """The first complaint about each setting (``slots.cpu`` for a slot's), by key. A watch
    folder's says which in its context: ``row`` (from 0) and ``field``."""
    errors: dict[str, FieldError] = {}
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]] or ["settings"]
        key = ".".join(loc[:2]) if loc[0] == "slots" and len(loc) > 1 else loc[0]
        message = "not a setting" if err["type"] == "extra_forbidden" else str(err["msg"])
        context = {k: str(v) for k, v in err.get("ctx", {}).items()}
        if loc[0] == "watch_folders" and len(loc) > 1:
            context.update(row=loc[1], field=loc[2] if len(loc) > 2 else "")
        errors.setdefault(key, FieldError(err["type"], message, context))
    return errors


def _first_error(exc: ValidationError) -> str:
    key, error = next(iter(field_errors(exc).items()))
    return f"the settings file is not valid ({key}: {error.message}); the defaults are shown"


# --- ffmpeg -----------------------------------------------------------------------------------


def _bundled_ffmpeg() -> str:
    from python_endpoints.jobs.media import bundled_ffmpeg  # where used: it runs ffmpeg

    return bundled_ffmpeg()


async def detect_ffmpeg(configured: str | None) -> FfmpegFound:
    """The ffmpeg ``configured`` (a path), else the bundled one: its version, the hardware
    encoders it lists, and which of its H.264 ones encode a test frame on this machine."""
    if configured:
        binary, bundled = configured, False
    else:
        try:
            binary, bundled = await asyncio.to_thread(_bundled_ffmpeg), True
        except Exception as exc:  # imageio-ffmpeg's RuntimeError, an import error
            return FfmpegFound("", True, error=f"the bundled ffmpeg is missing ({exc})")
    try:
        code, out = await _run([binary, "-version"])
        version = parse_version(out) if code == 0 else None
        code, out = await _run(ff.encoders_args(binary))
    except OSError as exc:
        return FfmpegFound(binary, bundled, error=exc.strerror or str(exc))
    if code != 0:
        return FfmpegFound(binary, bundled, version, error=f"ffmpeg -encoders failed ({code})")
    hardware = hardware_encoders(out)
    working = []
    for encoder in ff.hardware_candidates({e.name: e.kind for e in hardware}):
        with contextlib.suppress(OSError):
            if (await _run(ff.trial_encode_args(binary, encoder)))[0] == 0:
                working.append(encoder)
    return FfmpegFound(binary, bundled, version, tuple(hardware), tuple(working))


async def _run(argv: list[str]) -> tuple[int, str]:
    """Run ``argv`` (never through a shell): its exit code (-1: timed out) and its stdout.
    A run that times out, or whose caller goes away, is killed."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        # No console window flashing up under a windowed app (Windows).
        creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
    )
    try:
        async with asyncio.timeout(FFMPEG_TIMEOUT):
            out, _ = await process.communicate()
    except TimeoutError:
        return -1, ""
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    return int(process.returncode or 0), out.decode("utf-8", "replace")


# --- speech models ----------------------------------------------------------------------------


async def download_model(app: Fredica, name: str) -> str:
    """Queue the download of the speech model ``name`` (a DOWNLOAD_MODEL task, its params
    from the settings, as a transcription's own download gets them); its task's id. Asking
    again while it is queued or running gives the same task."""
    task = TaskSpec(
        key=DOWNLOAD_KEY,
        type="DOWNLOAD_MODEL",
        payload={"name": name},
        max_retries=3,
        idempotency_key=f"settings:{DOWNLOAD_KEY}:{name}",
    )
    from fredica_app import jobs  # the job catalogue: once the application is open

    jobs.fill_from_settings(task, jobs.app_values(app.settings, app.models_dir))
    spec = WorkflowSpec(template=DOWNLOAD_KEY, tasks=[task])
    created = await app.store.create_run(prepare_run(spec, app.registry))
    return created.task_ids[DOWNLOAD_KEY]


async def task_record(app: Fredica, task_id: str) -> TaskRecord:
    return await app.store.get_task(task_id)


async def installed_models(app: Fredica) -> tuple[str, ...]:
    found = await asyncio.to_thread(models.list_models, app.models_dir)
    return tuple(m.name for m in found)
