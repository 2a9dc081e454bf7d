"""The speech executors: TRANSCRIBE, EXPORT_SUBTITLES, ANALYZE and DOWNLOAD_MODEL, each on the
task endpoint of the same name.

TRANSCRIBE's checkpoint is built here from what the job streams: every ``segment`` frame is a
merged, final segment (appended), and progress ``extras`` carry how far decoding got
(``position``), the language votes so far and the stretches no decoding made out
(``unheard``). The job sends a segment before any position past
its end, so a checkpoint never claims more than the segments it holds. The next attempt gets
it back as ``params["resume"]`` and decodes from ``position`` on: a paused, crashed or
cancelled-then-retried transcription resumes at its last checkpointed segment. Segments carry
their timed words; what is handed back is kept within one frame (:func:`bounded_resume`).
"""

from __future__ import annotations

import json
from typing import Any

from workers.executor import ExecutionContext
from workers.executors.websocket import ResumingExecutor, WebSocketExecutor
from workers.records import TaskRecord
from workers.tasktypes import ANALYZE, DOWNLOAD_MODEL, EXPORT_SUBTITLES, TRANSCRIBE

#: The most of the 1 MiB ``init_param_and_run`` frame a transcription's ``resume`` may take.
#: Segments carry their timed words (~18 bytes a word, ~160 kB an hour of speech, about as
#: much as the segments themselves): past this, the earliest segments are sent without them,
#: and the transcript keeps them so (ANALYZE then times a phrase there by its segment).
RESUME_BUDGET = 768 << 10


def bounded_resume(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """``checkpoint`` as the next attempt gets it: within :data:`RESUME_BUDGET`, the words of
    its earliest segments left out when it would not be."""
    excess = len(json.dumps(checkpoint)) - RESUME_BUDGET
    if excess <= 0:
        return checkpoint
    segments = []
    for segment in checkpoint.get("segments", []):
        if excess > 0 and isinstance(segment, dict) and "words" in segment:
            excess -= len(json.dumps({"words": segment["words"]}))
            segment = {k: v for k, v in segment.items() if k != "words"}
        segments.append(segment)
    return {**checkpoint, "segments": segments}


class TranscribeExecutor(ResumingExecutor):
    task_type = TRANSCRIBE
    endpoint = "transcribe"
    #: Loading a large model or decoding a long window can be quiet for a while.
    stall_timeout = 600.0

    def params(self, task: TaskRecord, ctx: ExecutionContext) -> dict[str, Any]:
        params = super().params(task, ctx)
        if isinstance(params.get("resume"), dict):
            params["resume"] = bounded_resume(params["resume"])
        return params

    def _current(self, ctx: ExecutionContext) -> dict[str, Any]:
        checkpoint = ctx.checkpoint or {}
        return {
            "segments": list(checkpoint.get("segments", [])),
            "position": float(checkpoint.get("position", 0.0)),
            "languages": dict(checkpoint.get("languages", {})),
            "unheard": list(checkpoint.get("unheard", [])),
        }

    async def on_segment(self, ctx: ExecutionContext, data: dict[str, Any]) -> None:
        # A new dict each time: a pending database write keeps the one it was given.
        checkpoint = self._current(ctx)
        checkpoint["segments"].append(data)
        await ctx.report(checkpoint=checkpoint)

    def checkpoint_from(
        self, ctx: ExecutionContext, extras: dict[str, Any]
    ) -> dict[str, Any] | None:
        position, languages = extras.get("position"), extras.get("languages")
        unheard = extras.get("unheard")
        if not isinstance(position, int | float) and not isinstance(languages, dict):
            return None
        checkpoint = self._current(ctx)
        if isinstance(position, int | float):
            checkpoint["position"] = max(checkpoint["position"], float(position))
        if isinstance(languages, dict):
            checkpoint["languages"] = languages
        if isinstance(unheard, list):
            checkpoint["unheard"] = unheard
        return checkpoint


class ExportSubtitlesExecutor(WebSocketExecutor):
    task_type = EXPORT_SUBTITLES
    endpoint = "export_subtitles"
    resumable = True  # quick, and it rewrites everything: run it again
    stall_timeout = 300.0


class AnalyzeExecutor(WebSocketExecutor):
    task_type = ANALYZE
    endpoint = "analyze"
    resumable = True
    #: A language model on a small machine can take minutes to answer.
    stall_timeout = 1800.0


class ModelDownloadExecutor(ResumingExecutor):
    task_type = DOWNLOAD_MODEL
    endpoint = "download_model"
    stall_timeout = 300.0


SPEECH_EXECUTORS: tuple[type[WebSocketExecutor], ...] = (
    TranscribeExecutor,
    ExportSubtitlesExecutor,
    AnalyzeExecutor,
    ModelDownloadExecutor,
)
