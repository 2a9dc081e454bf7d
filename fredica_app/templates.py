"""Workflow templates: named, described task graphs, as data.

A template expands to a :class:`workers.spec.WorkflowSpec`. Payload strings may hold
placeholders that are filled for one material when it is submitted: ``{input}`` (the media
file), ``{output_dir}`` (the material's folder under the library), ``{stem}`` (a file-name-safe
title), ``{url}`` (a URL material's address). Nothing else is interpreted.

A template declares its *parameters* (:class:`TemplateParam`): a name the user gives a value
to for one submission (``--param profile=archive``), and the task params it sets. A value is
validated as the job validates that param (its params model's field), and one not given is
left to the settings (the job's catalogue row fills it) or the job's own default: the
settings are the defaults of every submission, a parameter changes one.
"""

from __future__ import annotations

import hashlib
import json
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from fredica_app.errors import TemplateError
from fredica_app.library.fingerprint import is_url
from workers.spec import TaskSpec, WorkflowSpec

PLACEHOLDER = re.compile(r"\{(input|output_dir|stem|url|subtitles)\}")


class TemplateParam(BaseModel):
    """A value a template takes for one submission, and where it goes."""

    model_config = ConfigDict(frozen=True)

    #: The name the user gives it (``--param NAME=VALUE``).
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    #: What it is, in a line.
    description: str
    #: The task params it sets: (task key, param name) pairs; the first says how its value is
    #: validated (that task's job's params model).
    targets: tuple[tuple[str, str], ...] = Field(min_length=1)
    #: The setting whose value stands when it is not given (None: the job's default).
    setting: str | None = None
    #: Task params it takes the place of when given: (task key, param name) pairs removed
    #: (``track`` instead of a subtitle file).
    clears: tuple[tuple[str, str], ...] = ()
    #: Tasks that run only when it is given (``speakers``: the diarization); without it they
    #: are left out, and so are the dependencies on them and ``with_it``.
    adds: tuple[str, ...] = ()
    #: Task params set only when it is given: (task key, param name, value), placeholders
    #: filled (the export's ``speakers`` file).
    with_it: tuple[tuple[str, str, Any], ...] = ()


class Template(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    tasks: list[TaskSpec] = Field(min_length=1)
    #: What it runs on: nothing (diagnostic), a local media file, or a URL to download. Must
    #: agree with its payloads: a template whose payloads name a placeholder runs on a source.
    source: Literal["none", "file", "url"] = "none"
    #: What it takes for one submission (see the module's doc).
    params: tuple[TemplateParam, ...] = ()
    #: It runs on a subtitle file too (a material of kind ``subtitles``); others refuse one.
    subtitle_files: bool = False

    @model_validator(mode="after")
    def _params_name_its_tasks(self) -> Template:
        keys = {t.key: t.type for t in self.tasks}
        for param in self.params:
            for key, name in param.targets:
                if key not in keys:
                    raise ValueError(f"template {self.name!r}: {param.name} sets unknown {key!r}")
                _field(keys[key], name)  # the job takes it
        return self

    def param(self, name: str) -> TemplateParam:
        for param in self.params:
            if param.name == name:
                return param
        raise TemplateError(
            f"template {self.name!r} has no parameter {name!r}: it {self._has_params()}"
        )

    def _has_params(self) -> str:
        if not self.params:
            return "takes no parameter"
        return "takes " + ", ".join(f"{p.name} ({self.values_of(p)})" for p in self.params)

    def values_of(self, param: TemplateParam) -> str:
        """What ``param`` takes, in a few words: its choices, or its kind."""
        key, name = param.targets[0]
        field = _field(self._type_of(key), name)
        choices = _choices(field.annotation)
        if choices:
            return "|".join(str(c) for c in choices)
        if field.annotation is bool:
            return "true|false"
        if field.annotation in (int, float) or _choices_kind(field.annotation) in ("int", "float"):
            return "a number"
        return "text"

    def required(self, param: TemplateParam) -> bool:
        """Whether a submission must give ``param``: its job has no default for it, and no
        setting stands in (one that adds its tasks is never: without it they are left out)."""
        key, name = param.targets[0]
        field = _field(self._type_of(key), name)
        return not param.adds and param.setting is None and field.is_required()

    def job_default(self, param: TemplateParam) -> Any:
        """What ``param``'s job takes when it is not given (None: nothing, or required)."""
        key, name = param.targets[0]
        field = _field(self._type_of(key), name)
        return None if field.is_required() else field.get_default(call_default_factory=True)

    def _type_of(self, key: str) -> str:
        return next(t.type for t in self.tasks if t.key == key)

    def bind(self, given: Mapping[str, str]) -> dict[str, Any]:
        """``given`` (``NAME=VALUE`` strings, as a user types them) checked: each a parameter
        of the template, each value one its job takes. Raises :class:`TemplateError`, one line
        naming the template's parameters. Returns the values as the jobs take them."""
        bound: dict[str, Any] = {}
        for name, text in given.items():
            param = self.param(name)
            key, target = param.targets[0]
            field = _field(self._type_of(key), target)
            try:
                form: Any = typing.Annotated[field.annotation, field]
                adapter: TypeAdapter[Any] = TypeAdapter(form)
                bound[name] = adapter.validate_python(text, strict=False)
            except ValidationError as exc:
                error = exc.errors()[0]
                # A choice's message lists the choices; a pattern's is regex: say it in words.
                why = error["msg"] if error["type"] == "literal_error" else param.description
                raise TemplateError(
                    f"template {self.name!r}: {name}={text!r} is not a value it takes ({why}); "
                    f"it {self._has_params()}"
                ) from None
        for param in self.params:
            if param.name not in bound and self.required(param):
                raise TemplateError(
                    f"template {self.name!r} needs --param {param.name}=VALUE "
                    f"({param.description}); it {self._has_params()}"
                )
        return bound

    @model_validator(mode="after")
    def _source_agrees_with_payloads(self) -> Template:
        if (self.source != "none") != self.needs_source:
            raise ValueError(
                f"template {self.name!r}: source {self.source!r} but its payloads "
                + ("name placeholders" if self.needs_source else "name no placeholder")
            )
        return self

    def needs_subtitles(self, params: Mapping[str, Any] | None = None) -> bool:
        """Whether expanding it with ``params`` needs a subtitle file (``{subtitles}``)."""
        cleared = {c for name in (params or {}) for c in self.param(name).clears}
        return any(
            "{subtitles}" in json.dumps(v)
            for t in self.tasks
            for k, v in t.payload.items()
            if (t.key, k) not in cleared
        )

    @property
    def needs_source(self) -> bool:
        """Whether it runs on a material: its payloads name a placeholder (the material's
        file, output folder, stem or URL)."""
        return any(_names_placeholder(t.payload) for t in self.tasks)

    @property
    def takes(self) -> str:
        """What it runs on, for a person."""
        if self.subtitle_files:
            return "a subtitle file (SRT, WebVTT, ASS), a media file or an http(s) URL"
        return {
            "none": "no media file or URL",
            "file": "a media file or an http(s) URL",
            "url": "an http(s) URL",
        }[self.source]

    def check_sources(self, items: Sequence[str]) -> None:
        """Refuse, with one line naming the template and what it takes, sources it cannot run
        on: any for a template that runs on nothing, none for one that needs one, a local
        file for one that downloads a URL. Nothing is imported before this passes."""
        if not self.needs_source and items:
            takers = ", ".join(n for n, t in BUILTIN.items() if t.needs_source)
            raise TemplateError(
                f"template {self.name!r} takes {self.takes}, but was given {items[0]}: leave "
                f"it out, or pick a template for media ({takers})"
            )
        if self.needs_source and not items:
            raise TemplateError(
                f"template {self.name!r} needs {self.takes}: give a PATH or URL (or --sample)"
            )
        if self.source == "url":
            local = [i for i in items if not is_url(i)]
            if local:
                raise TemplateError(
                    f"template {self.name!r} needs {self.takes}, but {local[0]} is a local "
                    "file (for a file, try transcode_mp4)"
                )

    def expand(
        self,
        *,
        material_id: str | None = None,
        values: dict[str, str] | None = None,
        idempotent: bool = False,
        params: Mapping[str, Any] | None = None,
    ) -> WorkflowSpec:
        """The spec for one submission. ``values`` fill the placeholders; ``params`` (from
        :meth:`bind`) set the task params of the template's parameters; ``idempotent`` gives
        every task the key ``<template>:<material>:<task key>`` (and a digest of ``params``
        when there are any), so that submitting the same template with the same parameters
        for the same material while a run of it is active returns that run."""
        params = dict(params or {})
        sets: dict[str, dict[str, Any]] = {}
        cleared: set[tuple[str, str]] = set()
        for name, value in params.items():
            for task_key, added, fixed in self.param(name).with_it:
                sets.setdefault(task_key, {})[added] = _fill(fixed, values or {})
            for task_key, target in self.param(name).targets:
                sets.setdefault(task_key, {})[target] = value
            cleared.update(self.param(name).clears)
        left_out = {key for p in self.params if p.name not in params for key in p.adds}
        digest = ""
        if params:
            text = json.dumps(params, sort_keys=True, default=str)
            digest = ":" + hashlib.sha256(text.encode()).hexdigest()[:12]
        tasks = []
        for t in self.tasks:
            if t.key in left_out:
                continue
            kept = {k: v for k, v in t.payload.items() if (t.key, k) not in cleared}
            payload = {**_fill(kept, values or {}), **sets.get(t.key, {})}
            key = (
                f"{self.name}:{material_id}:{t.key}{digest}"
                if idempotent and material_id
                else t.idempotency_key
            )
            # Fresh lists and dicts: a caller may adjust its spec without touching the template.
            tasks.append(
                t.model_copy(
                    update={
                        "payload": payload,
                        "idempotency_key": key,
                        "depends_on": [d for d in t.depends_on if d not in left_out],
                    }
                )
            )
        return WorkflowSpec(template=self.name, material_id=material_id, tasks=tasks)


def _field(task_type: str, name: str) -> Any:
    """The params model's field ``name`` of the job of ``task_type``."""
    from fredica_app.jobs import JOBS

    job = JOBS.get(task_type)
    if job is None or name not in job.params.model_fields:
        raise ValueError(f"{task_type} takes no param {name!r}")
    return job.params.model_fields[name]


def _choices(annotation: Any) -> tuple[Any, ...]:
    """The values of a ``Literal`` (within an optional), else ()."""
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is Literal:
            return typing.get_args(arg)
    return ()


def _choices_kind(annotation: Any) -> str:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return args[0].__name__ if len(args) == 1 and isinstance(args[0], type) else ""


def _names_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return PLACEHOLDER.search(value) is not None
    if isinstance(value, dict):
        return any(_names_placeholder(v) for v in value.values())
    if isinstance(value, list):
        return any(_names_placeholder(v) for v in value)
    return False


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


def _transcode(*deps: str, or_skip: bool = False) -> TaskSpec:
    """``or_skip``: a material without video completes the task as skipped ("no video")
    instead of failing it — in a template that makes other things of it too."""
    more = {"if_no_video": "skip"} if or_skip else {}
    return _job(
        "transcode",
        "TRANSCODE_MP4",
        *deps,
        input="{input}",
        output="{output_dir}/{stem}.mp4",
        check_skip=True,
        **more,
    )


def _extract_audio(*deps: str, or_skip: bool = False) -> TaskSpec:
    """``or_skip``: a material without sound completes the task as skipped ("no audio"), and
    the tasks that need the audio with it, instead of failing the run."""
    more = {"if_no_audio": "skip"} if or_skip else {}
    return _job(
        "extract_audio",
        "EXTRACT_AUDIO",
        *deps,
        input="{input}",
        output="{output_dir}/{stem}.16k.wav",
        check_skip=True,
        **more,
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


_TURNS = "{output_dir}/{stem}.speakers.json"


def _diarize(*deps: str) -> TaskSpec:
    return _job("diarize", "DIARIZE", *deps, input=_AUDIO, output=_TURNS)


def _analyze(*deps: str) -> TaskSpec:
    return _job(
        "analyze",
        "ANALYZE",
        *deps,
        transcript=_TRANSCRIPT,
        output="{output_dir}/{stem}.analysis.json",
    )


def _translate(*deps: str, input: str) -> TaskSpec:
    return _job(
        "translate",
        "TRANSLATE_SUBTITLES",
        *deps,
        input=input,
        output_dir="{output_dir}",
        stem="{stem}",
    )


#: The parameters of every template that re-encodes, and of every one that transcribes.
_PROFILE = TemplateParam(
    name="profile",
    description="the MP4 profile: compatible (plays everywhere), modern (copies more), archive "
    "(copies every stream, never re-encodes)",
    targets=(("transcode", "profile"),),
    setting="mp4_profile",
)
_SPEECH = (
    TemplateParam(
        name="language",
        description="the language spoken: auto (detected), or a code such as en, fr, zh",
        targets=(("transcribe", "language"),),
        setting="language",
    ),
    TemplateParam(
        name="model",
        description="the Whisper model: tiny.en (embedded), base, small, medium, large-v3…",
        targets=(("transcribe", "model"),),
        setting="whisper_model",
    ),
)

#: The subtitles say who speaks, when asked: the diarization runs then (subtitles).
_SPEAKERS = TemplateParam(
    name="speakers",
    description="say who speaks: how many people (0: estimated); without it, no speakers",
    targets=(("diarize", "speakers"),),
    adds=("diarize",),
    with_it=(("export_subtitles", "speakers", _TURNS),),
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
                "An MP4 next to the material's other outputs: a stream copy when the codecs "
                "already fit MP4, else H.264/AAC"
            ),
            tasks=[_transcode()],
            params=(_PROFILE,),
        ),
        Template(
            name="download_transcode",
            source="url",
            description=("Download an http(s) URL (resumable), then make an MP4 of it"),
            tasks=[_DOWNLOAD, _transcode("download")],
            params=(_PROFILE,),
        ),
        Template(
            name="extract_audio",
            source="file",
            description="Extract the audio as 16 kHz mono WAV",
            tasks=[_extract_audio()],
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
            name="thumbnail",
            source="file",
            description="A contact sheet: one JPEG of 12 frames at evenly spaced times",
            tasks=[
                _job(
                    "thumbnail",
                    "THUMBNAIL",
                    input="{input}",
                    output="{output_dir}/{stem}.thumbnails.jpg",
                    check_skip=True,
                )
            ],
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
                _transcode("probe", or_skip=True),
                _extract_audio("probe", or_skip=True),
                _extract_subtitles("probe"),
            ],
            params=(_PROFILE,),
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
                _diarize("extract_audio"),
                _export_subtitles("transcribe", "diarize"),
                _translate("export_subtitles", input="{output_dir}/{stem}.srt"),
            ],
            params=(
                *_SPEECH,
                _SPEAKERS,
                TemplateParam(
                    name="translate_to",
                    description="also translate the subtitles into this language (fr, de, "
                    "zh…) with the settings' language model: NAME.LANG.srt and .vtt",
                    targets=(("translate", "lang"),),
                    adds=("translate",),
                ),
            ),
        ),
        Template(
            name="transcript",
            source="file",
            description=(
                "Who said what: the audio transcribed and its speakers found (offline), then a "
                "speaker-labelled transcript as text, Markdown, SRT, WebVTT and JSON"
            ),
            tasks=[
                _extract_audio(),
                _transcribe("extract_audio"),
                _diarize("extract_audio"),
                _job(
                    "export_subtitles",
                    "EXPORT_SUBTITLES",
                    "transcribe",
                    "diarize",
                    transcript=_TRANSCRIPT,
                    output_dir="{output_dir}",
                    stem="{stem}",
                    speakers=_TURNS,
                    formats=["txt", "md", "srt", "vtt", "json"],
                ),
            ],
            params=(
                *_SPEECH,
                TemplateParam(
                    name="speakers",
                    description="how many people speak (default: estimated, up to 8)",
                    targets=(("diarize", "speakers"),),
                ),
            ),
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
                _transcode("probe", or_skip=True),
                _extract_subtitles("probe"),
                _extract_audio("probe", or_skip=True),
                _transcribe("extract_audio"),
                _export_subtitles("transcribe"),
                _analyze("transcribe"),
            ],
            params=(_PROFILE, *_SPEECH),
        ),
        Template(
            name="translate_subtitles",
            source="file",
            subtitle_files=True,
            description=(
                "Subtitles in another language with the settings' language model (a local "
                "Ollama, say): a subtitle file, or a video's subtitles — beside it, or made by "
                "the subtitles template — as NAME.LANG.srt and .vtt, cue times kept"
            ),
            tasks=[_translate(input="{subtitles}")],
            params=(
                TemplateParam(
                    name="lang",
                    description="the language to translate into: fr, de, es, zh, pt-BR…",
                    targets=(("translate", "lang"),),
                ),
                TemplateParam(
                    name="bilingual",
                    description="both lines in each cue, the original above the translation",
                    targets=(("translate", "bilingual"),),
                ),
            ),
        ),
        Template(
            name="burn_subtitles",
            source="file",
            description=(
                "An MP4 with subtitles drawn into the picture: the subtitle file beside the "
                "video (talk.srt or talk.en.srt for talk.mkv), or an embedded track"
            ),
            tasks=[
                _probe(),
                _job(
                    "burn",
                    "BURN_SUBTITLES",
                    "probe",
                    input="{input}",
                    output="{output_dir}/{stem}.subtitled.mp4",
                    subtitles="{subtitles}",
                    check_skip=True,
                ),
            ],
            params=(
                TemplateParam(
                    name="track",
                    description="burn the video's own subtitle track N (from 0) instead of a file",
                    targets=(("burn", "track"),),
                    clears=(("burn", "subtitles"),),
                ),
                TemplateParam(
                    name="profile",
                    description="the MP4 profile: compatible (plays everywhere) or modern",
                    targets=(("burn", "profile"),),
                ),
            ),
        ),
        Template(
            name="add_subtitles",
            source="file",
            description=(
                "An MP4 of the video with the subtitle file beside it (talk.srt or talk.en.srt "
                "for talk.mkv) as a track the viewer can turn on; nothing re-encoded"
            ),
            tasks=[
                _probe(),
                _job(
                    "add_track",
                    "ADD_SUBTITLE_TRACK",
                    "probe",
                    input="{input}",
                    subtitles="{subtitles}",
                    output="{output_dir}/{stem}.with-subtitles.mp4",
                    check_skip=True,
                ),
            ],
            params=(
                TemplateParam(
                    name="language",
                    description="the track's language (eng, fra…); default: from the file's "
                    "name (talk.en.srt), else undetermined",
                    targets=(("add_track", "language"),),
                ),
            ),
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
