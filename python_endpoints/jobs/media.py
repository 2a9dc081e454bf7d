"""Media jobs run in a child process: PROBE, TRANSCODE_MP4, EXTRACT_AUDIO, EXTRACT_SUBTITLES.

Runs in the child: standard library, PyAV and the bundled ffmpeg only. Params were validated by
the server (:mod:`python_endpoints.params`)."""

from __future__ import annotations

from typing import Any

from python_endpoints.child import ChildContext, JobFailed


def probe_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    raise JobFailed("PROBE is not implemented yet")


def transcode_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    raise JobFailed("TRANSCODE_MP4 is not implemented yet")


def extract_audio_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    raise JobFailed("EXTRACT_AUDIO is not implemented yet")


def extract_subtitles_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    raise JobFailed("EXTRACT_SUBTITLES is not implemented yet")
