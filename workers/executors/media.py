"""The media executors: each runs its task on a task endpoint of the same name.

The payloads carry absolute paths chosen by the app. ``can_skip`` (for ``check_skip``) asks
the job's sidecar whether a verified output of the same input and params is already in place:
a stat of two files, never a hash of the media.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from python_endpoints.jobs import outputs
from workers.executors.websocket import ResumingExecutor, WebSocketExecutor
from workers.records import TaskRecord
from workers.tasktypes import (
    DOWNLOAD,
    DOWNLOAD_SITE,
    EXTRACT_AUDIO,
    EXTRACT_SUBTITLES,
    PROBE,
    TRANSCODE_MP4,
)


class _FileJobExecutor(WebSocketExecutor):
    """A job with one ``input`` and one ``output`` file."""

    resumable = True  # an interrupted job starts again (the retry removes its temp file)
    stall_timeout = 120.0

    async def can_skip(self, task: TaskRecord) -> bool:
        output, source = task.payload.get("output"), task.payload.get("input")
        if not isinstance(output, str) or not isinstance(source, str):
            return False
        return await asyncio.to_thread(
            outputs.output_is_current, output, source, self.endpoint, self.params_for_skip(task)
        )

    def params_for_skip(self, task: TaskRecord) -> dict[str, Any]:
        return {k: v for k, v in task.payload.items() if k not in ("schema_version", "check_skip")}

    def skipped_result(self, task: TaskRecord) -> dict[str, Any]:
        return _skipped(task)


class ProbeExecutor(WebSocketExecutor):
    task_type = PROBE
    endpoint = "probe"
    resumable = True
    stall_timeout = 60.0


class TranscodeExecutor(ResumingExecutor, _FileJobExecutor):
    """A long re-encode goes by segments; the checkpoint lists those done, and the next
    attempt gets it back as ``params["resume"]`` (python_endpoints/jobs/segments.py)."""

    task_type = TRANSCODE_MP4
    endpoint = "transcode_mp4"


class ExtractAudioExecutor(_FileJobExecutor):
    task_type = EXTRACT_AUDIO
    endpoint = "extract_audio"


class ExtractSubtitlesExecutor(WebSocketExecutor):
    task_type = EXTRACT_SUBTITLES
    endpoint = "extract_subtitles"
    resumable = True
    stall_timeout = 120.0


class _CompleteOutput(WebSocketExecutor):
    """``can_skip``: its final path only ever holds a complete output (renamed into place
    last), so its existence is enough."""

    async def can_skip(self, task: TaskRecord) -> bool:
        output = task.payload.get("output")
        return isinstance(output, str) and await asyncio.to_thread(Path(output).is_file)

    def skipped_result(self, task: TaskRecord) -> dict[str, Any]:
        return _skipped(task)


def _skipped(task: TaskRecord) -> dict[str, Any]:
    """A skipped job's result names its output, as a job that ran does (the endpoints server's
    skip after waiting for another writer says the same)."""
    output = task.payload.get("output")
    return {"skipped": True, "outputs": [output] if isinstance(output, str) else []}


class DownloadExecutor(ResumingExecutor, _CompleteOutput):
    """Resumes from the bytes on disk: the checkpoint (saved from the endpoint's progress) holds
    the validator that tells whether the ``.part`` file still belongs to the same resource."""

    task_type = DOWNLOAD
    endpoint = "download"
    stall_timeout = 120.0


class SiteDownloadExecutor(_CompleteOutput):
    """A video page's media with yt-dlp; its partial files stay for the retry to continue."""

    task_type = DOWNLOAD_SITE
    endpoint = "download_site"
    resumable = True
    stall_timeout = 300.0  # extraction of a page can take a while before any progress


MEDIA_EXECUTORS: tuple[type[WebSocketExecutor], ...] = (
    ProbeExecutor,
    TranscodeExecutor,
    ExtractAudioExecutor,
    ExtractSubtitlesExecutor,
    DownloadExecutor,
    SiteDownloadExecutor,
)
