"""Check what Fredica needs and say how to fix what is missing (``fredica doctor`` prints it)."""

from __future__ import annotations

import asyncio
import difflib
import importlib
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fredica_app.services import Fredica


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


async def diagnose(app: Fredica) -> list[Check]:
    checks = [_data_dir(app), await _database(app), _engine(app), _ffmpeg(app)]
    if checks[-1].ok:
        checks.append(await asyncio.to_thread(_hardware_encoders, app))
        checks.append(await asyncio.to_thread(_subtitle_drawing, app))
    checks.append(await _endpoints(app))
    checks += await _endpoint_hosts(app)
    checks += [_module("av", "PyAV (media probing)"), _module("faster_whisper", "faster-whisper")]
    checks.append(_speech_models(app))
    checks.append(_settings(app))
    checks.append(_logs(app))
    return checks


def _settings(app: Fredica) -> Check:
    path = app.paths.settings_file
    if app.settings_problem:
        return Check(
            "settings", False, app.settings_problem, "`fredica settings edit`, or delete the file"
        )
    if not path.exists():
        return Check(
            "settings",
            True,
            f"no settings file: using the defaults (`fredica settings set KEY VALUE` creates "
            f"{path})",
        )
    return Check("settings", True, str(path))


def _logs(app: Fredica) -> Check:
    paths = app.paths
    if not os.access(paths.log_dir, os.W_OK):
        return Check("logs", False, f"{paths.log_dir} is not writable", "fix its permissions")
    return Check(
        "logs",
        True,
        f"{paths.log_file} (the app and its engine); {paths.endpoints_log_file.name} beside it "
        "(the endpoints server and its jobs)",
    )


def _data_dir(app: Fredica) -> Check:
    d = app.paths.data_dir
    if not os.access(d, os.W_OK):
        return Check("data directory", False, f"{d} is not writable", "choose --data-dir")
    free = shutil.disk_usage(d).free
    detail = f"{d} ({free / 2**30:.1f} GiB free)"
    if free < 1 * 2**30:
        return Check("data directory", False, detail, "free some disk space (< 1 GiB left)")
    return Check("data directory", True, detail)


async def _database(app: Fredica) -> Check:
    runs = await app.store.list_runs(limit=1_000_000)
    if app.database_shown is not None:  # the shared queue: its URL, never its password
        hosts = {w.host for w in await app.hosts()}
        return Check(
            "database",
            True,
            f"{app.database_shown} (PostgreSQL, shared; {len(runs)} runs; "
            f"engines on {len(hosts)} host{'' if len(hosts) == 1 else 's'})",
        )
    return Check("database", True, f"{app.paths.database} ({len(runs)} runs)")


def _engine(app: Fredica) -> Check:
    held = app.lock.is_held_elsewhere()
    here = "an engine is running" if held else "no engine is running"
    if app.database_shown is not None:
        here += " on this data directory (`fredica hosts` lists every host's)"
    return Check("engine", True, here)


async def _endpoints(app: Fredica) -> Check:
    """The whole chain: start the endpoints server, run a zero-second sleep in a child
    process over an authenticated websocket, stop it."""
    from workers.executors.websocket import EndpointsAddress, run_job

    try:
        address: EndpointsAddress = await app.endpoints.address()
        result = await run_job(address, "sleep", {"seconds": 0}, within=60)
    except Exception as exc:
        return Check(
            "endpoints",
            False,
            f"the task endpoints do not work: {exc}",
            "run `fredica endpoints` to see the server's own error",
        )
    finally:
        await app.endpoints.stop()
    return Check("endpoints", True, f"server on 127.0.0.1:{address.port}; sleep job: {result}")


async def _endpoint_hosts(app: Fredica) -> list[Check]:
    """Each endpoint host of the settings, reached and its shared folders checked now."""
    from fredica_app.endpoint_hosts import check_hosts

    checks = []
    for state in await check_hosts(app.settings.endpoint_hosts):
        what = f"{state['url']} ({', '.join(state['classes'])})"
        if state["problem"]:
            checks.append(
                Check(
                    f"endpoint host {state['name']}",
                    False,
                    f"{what}: {state['problem']}",
                    "fix its entry in endpoint_hosts, or start its server (docs/scale-out.md)",
                )
            )
        else:
            shared = ", ".join(p["local"] for p in state["paths"]) or "no shared folder"
            checks.append(Check(f"endpoint host {state['name']}", True, f"{what}; {shared}"))
    return checks


def _ffmpeg(app: Fredica) -> Check:
    configured = app.settings.ffmpeg_path
    if configured is not None:
        if configured.is_file() and os.access(configured, os.X_OK):
            return Check("ffmpeg", True, f"{configured} (from settings)")
        return Check(
            "ffmpeg",
            False,
            f"{configured} is not an executable file",
            "fix ffmpeg_path in settings, or remove it to use the bundled one",
        )
    from python_endpoints.jobs.media import bundled_ffmpeg

    try:
        exe = bundled_ffmpeg()
    except Exception as exc:
        return Check(
            "ffmpeg",
            False,
            f"the bundled ffmpeg is missing ({exc})",
            "reinstall Fredica (imageio-ffmpeg), or set ffmpeg_path in settings",
        )
    return Check("ffmpeg", True, str(exe))


def _hardware_encoders(app: Fredica) -> Check:
    """Which hardware H.264 encoders ffmpeg lists, and which of them work here (a one-frame
    test encode, as TRANSCODE_MP4 does before using one). Informational: libx264 on the CPU
    is always there."""
    from python_endpoints.jobs import ffmpeg as ff
    from python_endpoints.jobs.media import encoder_works, ffmpeg_binary, list_encoders

    binary = ffmpeg_binary({"ffmpeg": str(app.settings.ffmpeg_path or "") or None})
    listed = ff.hardware_candidates(list_encoders(binary))
    working = [e for e in listed if encoder_works(binary, e)]
    if working:
        return Check("hardware encoders", True, f"{', '.join(working)} (verified)")
    if listed:
        detail = f"none works here ({', '.join(listed)} listed but failed a test encode): libx264"
    else:
        detail = "none listed: libx264 on the CPU"
    return Check("hardware encoders", True, detail)


def _subtitle_drawing(app: Fredica) -> Check:
    """Whether BURN_SUBTITLES can draw Latin and CJK text here: libass in the ffmpeg, and
    fonts (fontconfig, the system's) with the glyphs: a cue of each burned into a frame."""
    from python_endpoints.jobs.media import ffmpeg_binary, renders_subtitles

    binary = ffmpeg_binary({"ffmpeg": str(app.settings.ffmpeg_path or "") or None})
    latin = renders_subtitles(binary, "Subtitles")
    if latin is None:
        return Check(
            "burned-in subtitles",
            False,
            "this ffmpeg has no libass (no subtitles filter): subtitles cannot be burned in",
            "remove ffmpeg_path from the settings to use the bundled ffmpeg, which has it",
        )
    if not latin:
        return Check(
            "burned-in subtitles",
            False,
            "libass draws no text: it finds no font",
            "install a font (Debian: fonts-dejavu-core; fonts-noto-cjk for CJK)",
        )
    if not renders_subtitles(binary, "字幕"):
        return Check(
            "burned-in subtitles",
            True,
            "libass draws Latin text; no font here has CJK glyphs (Chinese, Japanese, Korean "
            "cues would be blank)",
            "install a CJK font (Debian: fonts-noto-cjk)",
        )
    return Check("burned-in subtitles", True, "libass draws Latin and CJK text")


def _speech_models(app: Fredica) -> Check:
    """The Whisper models installed (the embedded one included), and whether the configured
    one can be used."""
    from fredica_app import models

    installed = models.list_models(app.models_dir)
    listing = ", ".join(f"{m.name} ({m.size / 1e6:.0f} MB, {m.source})" for m in installed)
    wanted = app.settings.whisper_model
    if models.is_model_name(wanted):
        if any(m.name == wanted for m in installed):
            return Check("speech models", True, f"{listing}; using {wanted}")
        if wanted in models.DOWNLOADABLE:
            return Check(
                "speech models",
                True,
                f"{listing or 'none'}; {wanted} is not installed: it is downloaded into "
                f"{app.models_dir} from {app.settings.model_base_url} the first time it is "
                "needed",
            )
        near = difflib.get_close_matches(wanted, models.DOWNLOADABLE, n=1)
        return Check(
            "speech models",
            False,
            f"whisper_model {wanted!r} is not a model Fredica has or can download: not "
            f"installed in {app.models_dir}, not the embedded {models.EMBEDDED}, and not a "
            "name it downloads",
            (f"did you mean {near[0]}? " if near else "")
            + "`fredica settings set whisper_model NAME` with one of "
            + ", ".join(models.DOWNLOADABLE)
            + " (or a CTranslate2 model directory)",
        )
    if (Path(wanted) / "model.bin").is_file():
        return Check("speech models", True, f"{listing}; using the model in {wanted}")
    return Check(
        "speech models",
        False,
        f"whisper_model {wanted!r} is neither a model name nor a model directory (no model.bin)",
        "set whisper_model in settings to a name such as tiny.en or small, or to a "
        "CTranslate2 model directory",
    )


def _module(name: str, label: str) -> Check:
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        return Check(label, False, f"cannot import {name}: {exc}", "reinstall Fredica")
    return Check(label, True, f"{name} {getattr(module, '__version__', '')}".strip())
