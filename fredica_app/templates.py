"""Workflow templates: named, described task graphs, as data.

A template expands to a :class:`workers.spec.WorkflowSpec`. Payload strings may hold
placeholders that are filled for one material when it is submitted: ``{input}`` (the media
file), ``{output_dir}`` (the material's folder under the library), ``{stem}`` (a file-name-safe
title), ``{url}`` (a URL material's address). Nothing else is interpreted.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fredica_app.errors import TemplateError
from workers.spec import TaskSpec, WorkflowSpec

PLACEHOLDER = re.compile(r"\{(input|output_dir|stem|url)\}")


class Template(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    tasks: list[TaskSpec] = Field(min_length=1)
    #: What it runs on: nothing (diagnostic), a local media file, or a URL to download.
    source: Literal["none", "file", "url"] = "none"

    def expand(
        self,
        *,
        material_id: str | None = None,
        values: dict[str, str] | None = None,
        idempotent: bool = False,
    ) -> WorkflowSpec:
        """The spec for one submission. ``values`` fill the placeholders; ``idempotent`` gives
        every task the key ``<template>:<material>:<task key>``, so that submitting the same
        template for the same material while a run of it is active returns that run."""
        tasks = []
        for t in self.tasks:
            payload = _fill(t.payload, values or {})
            key = (
                f"{self.name}:{material_id}:{t.key}"
                if idempotent and material_id
                else t.idempotency_key
            )
            # Fresh lists and dicts: a caller may adjust its spec without touching the template.
            tasks.append(
                t.model_copy(
                    update={
                        "payload": payload,
                        "idempotency_key": key,
                        "depends_on": list(t.depends_on),
                    }
                )
            )
        return WorkflowSpec(template=self.name, material_id=material_id, tasks=tasks)


def _fill(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            try:
                return values[m.group(1)]
            except KeyError:
                raise TemplateError(f"the template needs a value for {{{m.group(1)}}}") from None

        return PLACEHOLDER.sub(sub, value)
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


def _t(key: str, type_: str, *deps: str, **payload: Any) -> TaskSpec:
    return TaskSpec(key=key, type=type_, depends_on=list(deps), payload=payload)


def _job(key: str, type_: str, *deps: str, **payload: Any) -> TaskSpec:
    """A media job: one retry, so that a job interrupted by a crash or a lost connection is
    run again at the next start (errors in the input itself are never retried)."""
    return TaskSpec(key=key, type=type_, depends_on=list(deps), payload=payload, max_retries=1)


def _probe(*deps: str) -> TaskSpec:
    return _job("probe", "PROBE", *deps, input="{input}")


def _transcode(*deps: str) -> TaskSpec:
    return _job(
        "transcode",
        "TRANSCODE_MP4",
        *deps,
        input="{input}",
        output="{output_dir}/{stem}.mp4",
        check_skip=True,
    )


def _extract_audio(*deps: str) -> TaskSpec:
    return _job(
        "extract_audio",
        "EXTRACT_AUDIO",
        *deps,
        input="{input}",
        output="{output_dir}/{stem}.16k.wav",
        check_skip=True,
    )


def _extract_subtitles(*deps: str) -> TaskSpec:
    return _job(
        "extract_subtitles",
        "EXTRACT_SUBTITLES",
        *deps,
        input="{input}",
        output_dir="{output_dir}",
        stem="{stem}",
    )


_AUDIO = "{output_dir}/{stem}.16k.wav"
_TRANSCRIPT = "{output_dir}/{stem}.transcript.json"


def _transcribe(*deps: str) -> TaskSpec:
    # The speech settings (model, device, language…) are added when it is submitted.
    return _job("transcribe", "TRANSCRIBE", *deps, input=_AUDIO, output=_TRANSCRIPT)


def _export_subtitles(*deps: str) -> TaskSpec:
    return _job(
        "export_subtitles",
        "EXPORT_SUBTITLES",
        *deps,
        transcript=_TRANSCRIPT,
        output_dir="{output_dir}",
        stem="{stem}",
    )


def _analyze(*deps: str) -> TaskSpec:
    return _job(
        "analyze",
        "ANALYZE",
        *deps,
        transcript=_TRANSCRIPT,
        output="{output_dir}/{stem}.analysis.json",
    )


# Network hiccups are worth a few automatic retries; the download resumes from its .part file.
_DOWNLOAD = TaskSpec(
    key="download",
    type="DOWNLOAD",
    payload={"url": "{url}", "output": "{input}", "check_skip": True},
    max_retries=3,
)

BUILTIN: dict[str, Template] = {
    t.name: t
    for t in [
        Template(
            name="transcode_mp4",
            source="file",
            description=(
                "Probe the file, then make an MP4 next to the material's other outputs: a "
                "stream copy when the codecs already fit MP4, else H.264/AAC"
            ),
            tasks=[_probe(), _transcode("probe")],
        ),
        Template(
            name="download_transcode",
            source="url",
            description=("Download an http(s) URL (resumable), probe it, then make an MP4 of it"),
            tasks=[_DOWNLOAD, _probe("download"), _transcode("probe")],
        ),
        Template(
            name="extract_audio",
            source="file",
            description="Probe the file, then extract its audio as 16 kHz mono WAV",
            tasks=[_probe(), _extract_audio("probe")],
        ),
        Template(
            name="extract_subtitles",
            source="file",
            description=(
                "Probe the file, then write every embedded text subtitle track as SRT and WebVTT"
            ),
            tasks=[_probe(), _extract_subtitles("probe")],
        ),
        Template(
            name="media",
            source="file",
            description=(
                "Probe, then side by side: an MP4, the audio as 16 kHz WAV and the embedded "
                "subtitles (no speech-to-text: see full)"
            ),
            tasks=[
                _probe(),
                _transcode("probe"),
                _extract_audio("probe"),
                _extract_subtitles("probe"),
            ],
        ),
        Template(
            name="subtitles",
            source="file",
            description=(
                "Extract the audio, transcribe it with Whisper (resumable), then write "
                "subtitles: SRT, WebVTT, text and JSON"
            ),
            tasks=[
                _extract_audio(),
                _transcribe("extract_audio"),
                _export_subtitles("transcribe"),
            ],
        ),
        Template(
            name="full",
            source="file",
            description=(
                "Everything: probe, then side by side an MP4, the embedded subtitles, and the "
                "audio transcribed into subtitles and analysed (key phrases; a summary and "
                "chapters when a language model is configured)"
            ),
            tasks=[
                _probe(),
                _transcode("probe"),
                _extract_subtitles("probe"),
                _extract_audio("probe"),
                _transcribe("extract_audio"),
                _export_subtitles("transcribe"),
                _analyze("transcribe"),
            ],
        ),
        Template(
            name="diagnostic",
            description=(
                "A small fan-out/fan-in DAG of diagnostic tasks: prepare, three sleeps side "
                "by side (two in the engine, one in a child process of the endpoints server), "
                "then a merge"
            ),
            tasks=[
                _t("prepare", "NOOP", step="prepare"),
                _t("sleep_a", "SLEEP", "prepare", seconds=1.0),
                _t("sleep_b", "SLEEP", "prepare", seconds=1.5),
                _t("sleep_child", "SLEEP_SUBPROCESS", "prepare", seconds=1.0),
                _t("merge", "NOOP", "sleep_a", "sleep_b", "sleep_child", step="merge"),
            ],
        ),
        Template(
            name="noop_chain",
            description="Ten NOOP tasks, each depending on the previous one",
            tasks=[_t("n0", "NOOP")] + [_t(f"n{i}", "NOOP", f"n{i - 1}") for i in range(1, 10)],
        ),
    ]
}


def with_download_first(template: Template, download: TaskSpec) -> Template:
    """``template`` for a URL: ``download`` first, and every task that had no dependency
    depends on it."""
    tasks = [download] + [
        t if t.depends_on else t.model_copy(update={"depends_on": [download.key]})
        for t in template.tasks
    ]
    return template.model_copy(update={"tasks": tasks, "source": "url"})


def get_template(name: str) -> Template:
    try:
        return BUILTIN[name]
    except KeyError:
        known = ", ".join(sorted(BUILTIN))
        raise TemplateError(f"unknown template {name!r} (known: {known})") from None
