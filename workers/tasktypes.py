"""Task types: a name, a validated payload with a schema version, and a resource class.

The registry is what a submitted spec is checked against. Executors (issue of the engine)
attach behaviour to these names; a type can be known here before any executor runs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from python_endpoints.params import (
    AnalyzeParams,
    DownloadParams,
    ExportSubtitlesParams,
    ExtractAudioParams,
    ExtractSubtitlesParams,
    ModelDownloadParams,
    ProbeParams,
    SiteDownloadParams,
    SleepParams,
    TranscodeParams,
    TranscribeParams,
)

#: The payload key that carries its schema version.
SCHEMA_VERSION_KEY = "schema_version"


class TaskPayload(BaseModel):
    """Base of every payload model. ``schema_version`` lets an upgraded Fredica refuse an old
    task whose meaning changed, instead of running it wrongly."""

    model_config = ConfigDict(extra="forbid")

    SCHEMA_VERSION: ClassVar[int] = 1
    SUPPORTED_VERSIONS: ClassVar[frozenset[int]] = frozenset({1})

    schema_version: int = Field(default=1, ge=1)
    #: Complete at once with ``{"skipped": true}`` when the executor finds valid outputs.
    check_skip: bool = False


class UnsupportedPayloadVersion(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class TaskType:
    name: str
    payload_model: type[TaskPayload]
    resource: str = "cpu"
    description: str = ""

    def validate_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload as stored: validated, defaults filled, the schema version set.

        Raises ``ValueError`` with a readable message.
        """
        data = dict(payload)
        data.setdefault(SCHEMA_VERSION_KEY, self.payload_model.SCHEMA_VERSION)
        stored = self.parse_payload(data).model_dump(mode="json", exclude_defaults=True)
        stored[SCHEMA_VERSION_KEY] = data[SCHEMA_VERSION_KEY]
        return stored

    def parse_payload(self, payload: dict[str, Any]) -> TaskPayload:
        """Parse a stored payload; reject a schema version this Fredica does not support."""
        version = payload.get(SCHEMA_VERSION_KEY, 1)
        if version not in self.payload_model.SUPPORTED_VERSIONS:
            supported = ", ".join(map(str, sorted(self.payload_model.SUPPORTED_VERSIONS)))
            raise UnsupportedPayloadVersion(
                f"{self.name} payload schema_version {version} is not supported by this "
                f"version of Fredica (supported: {supported})"
            )
        try:
            return self.payload_model.model_validate(payload)
        except ValidationError as exc:
            msgs = [
                f"{'.'.join(str(p) for p in e['loc']) or 'payload'}: {e['msg']}"
                for e in exc.errors()[:5]
            ]
            raise ValueError("; ".join(msgs)) from None


@dataclass
class TaskTypeRegistry:
    _types: dict[str, TaskType] = field(default_factory=dict)

    def register(self, task_type: TaskType) -> TaskType:
        if task_type.name in self._types:
            raise ValueError(f"task type {task_type.name!r} is already registered")
        self._types[task_type.name] = task_type
        return task_type

    def get(self, name: str) -> TaskType | None:
        return self._types.get(name)

    def names(self) -> list[str]:
        return sorted(self._types)

    def __iter__(self) -> Iterator[TaskType]:
        return iter(self._types.values())

    def __contains__(self, name: object) -> bool:
        return name in self._types


# --- Diagnostic task types: exercise and benchmark the queue without media. ---


class NoopPayload(TaskPayload):
    """Anything goes: NOOP's result echoes its payload."""

    model_config = ConfigDict(extra="allow")


class SleepPayload(TaskPayload):
    seconds: float = Field(ge=0, le=7 * 24 * 3600)


# The diagnostic types use the ``io`` class: they take no CPU worth a ``cpu`` slot.
NOOP = TaskType("NOOP", NoopPayload, "io", "completes at once; its result echoes its payload")
SLEEP = TaskType(
    "SLEEP", SleepPayload, "io", "sleeps `seconds`, reporting progress; pausable, cancellable"
)


class SleepSubprocessPayload(TaskPayload, SleepParams):
    """The ``/tasks/sleep`` endpoint's params (python_endpoints.params.SleepParams)."""


SLEEP_SUBPROCESS = TaskType(
    "SLEEP_SUBPROCESS",
    SleepSubprocessPayload,
    "io",
    "SLEEP in a child process behind the endpoints server; can pause itself, crash, or exit "
    "without a result, to exercise the whole chain",
)


# --- Media task types: each runs on a task endpoint (python_endpoints.params has the fields).


class ProbePayload(TaskPayload, ProbeParams):
    pass


class TranscodePayload(TaskPayload, TranscodeParams):
    pass


class ExtractAudioPayload(TaskPayload, ExtractAudioParams):
    pass


class ExtractSubtitlesPayload(TaskPayload, ExtractSubtitlesParams):
    pass


class DownloadPayload(TaskPayload, DownloadParams):
    pass


class SiteDownloadPayload(TaskPayload, SiteDownloadParams):
    pass


PROBE = TaskType(
    "PROBE", ProbePayload, "io", "reads streams, codecs, duration and subtitles (PyAV)"
)
TRANSCODE_MP4 = TaskType(
    "TRANSCODE_MP4",
    TranscodePayload,
    "cpu",
    "an MP4: stream copy when the codecs fit, else H.264/AAC; pausable",
)
EXTRACT_AUDIO = TaskType(
    "EXTRACT_AUDIO", ExtractAudioPayload, "cpu", "16 kHz mono WAV (or FLAC) for speech-to-text"
)
EXTRACT_SUBTITLES = TaskType(
    "EXTRACT_SUBTITLES",
    ExtractSubtitlesPayload,
    "io",
    "every embedded text subtitle stream to SRT and WebVTT",
)
DOWNLOAD = TaskType(
    "DOWNLOAD",
    DownloadPayload,
    "net",
    "HTTP(S) download to a .part file, resumed with Range after a pause, crash or error",
)

DOWNLOAD_SITE = TaskType(
    "DOWNLOAD_SITE",
    SiteDownloadPayload,
    "net",
    "a video page's media, with yt-dlp (the optional `sites` extra); resumed after an error",
)

MEDIA_TYPES = (PROBE, TRANSCODE_MP4, EXTRACT_AUDIO, EXTRACT_SUBTITLES, DOWNLOAD, DOWNLOAD_SITE)


# --- Speech-to-text and what is made of it.


class TranscribePayload(TaskPayload, TranscribeParams):
    pass


class ExportSubtitlesPayload(TaskPayload, ExportSubtitlesParams):
    pass


class AnalyzePayload(TaskPayload, AnalyzeParams):
    pass


class ModelDownloadPayload(TaskPayload, ModelDownloadParams):
    pass


# TRANSCRIBE's class is ``cpu`` unless it runs on a GPU: the app sets ``gpu`` then.
TRANSCRIBE = TaskType(
    "TRANSCRIBE",
    TranscribePayload,
    "cpu",
    "speech to text with faster-whisper; segments stream out and are checkpointed, so it "
    "resumes where it stopped",
)
EXPORT_SUBTITLES = TaskType(
    "EXPORT_SUBTITLES",
    ExportSubtitlesPayload,
    "io",
    "SRT, WebVTT, text and JSON from a transcript, with readable line lengths and durations",
)
ANALYZE = TaskType(
    "ANALYZE",
    AnalyzePayload,
    "cpu",
    "key phrases with their times (offline), and a summary with chapters when an "
    "OpenAI-compatible endpoint is configured",
)
DOWNLOAD_MODEL = TaskType(
    "DOWNLOAD_MODEL",
    ModelDownloadPayload,
    "net",
    "a Whisper model by name into the models folder: resumable, verified, never half-installed",
)

SPEECH_TYPES = (TRANSCRIBE, EXPORT_SUBTITLES, ANALYZE, DOWNLOAD_MODEL)


def builtin_registry() -> TaskTypeRegistry:
    """A registry with the diagnostic and media types. Later layers register theirs on top."""
    registry = TaskTypeRegistry()
    for task_type in (NOOP, SLEEP, SLEEP_SUBPROCESS, *MEDIA_TYPES, *SPEECH_TYPES):
        registry.register(task_type)
    return registry
