"""The params each endpoint takes (``init_param_and_run``'s ``data.params``). Pure models, part
of the protocol: the engine's task payloads reuse them, so both sides validate the same thing."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SleepParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seconds: float = Field(ge=0, le=24 * 3600)
    #: After this many seconds of sleep, ask for a pause (reason "requested").
    pause_after: float | None = Field(default=None, ge=0)
    #: That many seconds after its own pause request, resume by itself (absent: wait).
    resume_after: float | None = Field(default=None, ge=0)
    #: After this many seconds, crash: exit with ``exit_code``, or die by ``signal``.
    crash_after: float | None = Field(default=None, ge=0)
    exit_code: int = Field(default=3, ge=1, le=255)
    signal: Literal["SIGKILL", "SIGTERM", "SIGSEGV", "SIGABRT"] | None = None
    #: Exit 0 at the end without a result.
    exit_silently: bool = False

    @model_validator(mode="after")
    def _resume_needs_pause(self) -> SleepParams:
        if self.resume_after is not None and self.pause_after is None:
            raise ValueError("resume_after needs pause_after")
        return self


# --- media jobs (issue: the media pipeline) -------------------------------------------------
#
# Paths are absolute and chosen by the app (the material's folder under the library directory):
# a job writes only to the output paths it is given, through a temporary name next to them.


def _absolute(value: str) -> str:
    # Pure paths only (this module does no I/O): POSIX or Windows absolute.
    if not (PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute()):
        raise ValueError(f"must be an absolute path, got {value!r}")
    return value


def _http_url(url: str) -> str:
    scheme = url.split(":", 1)[0].lower()
    if scheme not in ("http", "https") or "://" not in url:
        raise ValueError(f"only http and https URLs can be downloaded, got {url!r}")
    return url


class _MediaParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: The ffmpeg binary (settings); None: the one bundled with imageio-ffmpeg.
    ffmpeg: str | None = None
    #: Refuse to start (``NO_SPACE``) unless the output's estimated size still leaves this
    #: many bytes free on its disk.
    keep_free_bytes: int = Field(default=256 << 20, ge=0)


class ProbeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: str = Field(min_length=1)

    @model_validator(mode="after")
    def _paths(self) -> ProbeParams:
        _absolute(self.input)
        return self


class TranscodeParams(_MediaParams):
    input: str = Field(min_length=1)
    #: The final .mp4 path.
    output: str = Field(min_length=1)
    #: ``auto``: stream-copy when every stream already fits MP4, re-encode otherwise.
    mode: Literal["auto", "remux", "reencode"] = "auto"
    #: Use a hardware H.264 encoder when one is present and passes a one-frame test encode.
    hardware: bool = True
    #: The hardware encoder known to work here (``"none"``: none does), so that the job need
    #: not test them. The endpoints server fills it from what it found once; None: the job
    #: tests them itself.
    hardware_encoder: str | None = Field(default=None, pattern=r"^(none|h264_[a-z0-9_]+)$")
    crf: int = Field(default=23, ge=0, le=51)
    preset: Literal[
        "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower"
    ] = "veryfast"

    @model_validator(mode="after")
    def _paths(self) -> TranscodeParams:
        _absolute(self.input)
        _absolute(self.output)
        return self


class ExtractAudioParams(_MediaParams):
    input: str = Field(min_length=1)
    #: The final .wav or .flac path.
    output: str = Field(min_length=1)
    format: Literal["wav", "flac"] = "wav"
    sample_rate: int = Field(default=16000, ge=8000, le=192000)
    channels: int = Field(default=1, ge=1, le=8)

    @model_validator(mode="after")
    def _paths(self) -> ExtractAudioParams:
        _absolute(self.input)
        _absolute(self.output)
        return self


SubtitleFormat = Literal["srt", "vtt"]


def _both_formats() -> list[SubtitleFormat]:
    return ["srt", "vtt"]


class ExtractSubtitlesParams(_MediaParams):
    input: str = Field(min_length=1)
    #: Files are written as ``<output_dir>/<stem>.<stream index>[.<language>].<format>``.
    output_dir: str = Field(min_length=1)
    stem: str = Field(min_length=1, max_length=200, pattern=r"^[^/\\]+$")
    formats: list[SubtitleFormat] = Field(default_factory=_both_formats, min_length=1)

    @model_validator(mode="after")
    def _paths(self) -> ExtractSubtitlesParams:
        _absolute(self.input)
        _absolute(self.output_dir)
        return self


class DownloadResume(BaseModel):
    """What a download saved to resume with ``Range``: the bytes on disk and the validator."""

    model_config = ConfigDict(extra="forbid")

    bytes_done: int = Field(default=0, ge=0)
    etag: str | None = None
    last_modified: str | None = None


class DownloadParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=8192)
    #: The final path; the body is streamed to ``<output>.part`` first.
    output: str = Field(min_length=1)
    proxy: str | None = None
    #: Refuse a body larger than this (bytes); None: no limit beyond the free disk space.
    max_bytes: int | None = Field(default=None, ge=1)
    #: Content types accepted (prefixes such as ``video/``); empty: anything but ``text/html``.
    accept: list[str] = Field(default_factory=list)
    timeout: float = Field(default=30.0, gt=0, le=600)
    #: Set by the engine from the task's checkpoint: continue from the bytes already on disk.
    resume: DownloadResume | None = None

    @model_validator(mode="after")
    def _check(self) -> DownloadParams:
        _http_url(self.url)
        _absolute(self.output)
        return self


class SiteDownloadParams(_MediaParams):
    """``/tasks/download_site``: a video site's page (or any URL yt-dlp understands) to one
    media file. ``ffmpeg`` (inherited) merges separate video and audio; ``keep_free_bytes``
    is checked against the size the site announces."""

    url: str = Field(min_length=1, max_length=8192)
    #: The final path; the job writes exactly there (whatever container the site serves, see
    #: :mod:`python_endpoints.jobs.site`), through temporary names next to it.
    output: str = Field(min_length=1)
    proxy: str | None = None
    #: A yt-dlp format selector. The default takes the best video with the best audio, merged
    #: by ffmpeg, or the best single file when the site has no separate streams.
    format: str = Field(default="bestvideo*+bestaudio/best", min_length=1, max_length=1000)
    #: Refuse media larger than this (bytes, every stream together); None: no limit beyond
    #: the free disk space.
    max_bytes: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> SiteDownloadParams:
        _http_url(self.url)
        _absolute(self.output)
        return self
