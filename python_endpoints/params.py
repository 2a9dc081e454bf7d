"""The params each endpoint takes (``init_param_and_run``'s ``data.params``). Pure models, part
of the protocol: the engine's task payloads reuse them, so both sides validate the same thing."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator


def _path(text: str) -> str:
    if not text:
        raise ValueError("must not be empty")
    if "\0" in text:
        raise ValueError("must not hold a NUL character (no file's path does)")
    return text


#: A path: not empty, no NUL, and any ``str`` Python holds a file name as — one that is not
#: UTF-8 carries lone surrogates, which a length-constrained ``str`` of pydantic refuses.
PathText = Annotated[str, AfterValidator(_path)]


def path_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``model`` that name a file or folder: typed :data:`PathText`, and
    ``models_dir`` (optional, so a plain ``str | None``)."""
    names = [
        name
        for name, info in model.model_fields.items()
        if any(getattr(m, "func", None) is _path for m in info.metadata)
    ]
    if "models_dir" in model.model_fields and "models_dir" not in names:
        names.append("models_dir")
    return tuple(names)


class _Params(BaseModel):
    """An endpoint's params, or a part of them (a checkpoint): unknown fields refused. Each
    model is built at its first use, not at import: a process uses a few of them, and
    building them all took ~10 ms of every start of the app and of the server."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class PathProbeParams(_Params):
    """``/tasks/path_probe``: does this server see a client's shared folder where the client's
    path map says (:mod:`python_endpoints.serving.pathprobe`)?"""

    #: The probe file the client wrote, in this server's terms.
    input: PathText
    #: Where to write the answer (beside it): the client reads it back.
    output: PathText
    #: What the probe file holds, and what to answer.
    expect: str = Field(pattern=r"^[0-9a-f]{32}$")
    reply: str = Field(pattern=r"^[0-9a-f]{32}$")


class SleepParams(_Params):
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
    #: After this many seconds, say ``finishing`` (its heavy part done) and sleep on.
    finishing_after: float | None = Field(default=None, ge=0)
    #: Bytes written on standard output at its start, in lines, as a talkative library would.
    chatter: int = Field(default=0, ge=0, le=64 * 1024 * 1024)
    #: Say after the result that its child may not take another job (the ``reusable()`` a
    #: job module may have).
    not_reusable: bool = False

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


class _MediaParams(_Params):
    #: The ffmpeg binary (settings); None: the one bundled with imageio-ffmpeg.
    ffmpeg: str | None = None
    #: Refuse to start (``NO_SPACE``) unless the output's estimated size still leaves this
    #: many bytes free on its disk.
    keep_free_bytes: int = Field(default=256 << 20, ge=0)


class ProbeParams(_Params):
    input: PathText

    @model_validator(mode="after")
    def _paths(self) -> ProbeParams:
        _absolute(self.input)
        return self


class TranscodeParams(_MediaParams):
    input: PathText
    #: The final .mp4 path.
    output: PathText
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
    #: An input without video: ``fail`` (``UNSUPPORTED_MEDIA``), or ``skip`` — complete with
    #: ``{"skipped": true, "reason": "no video"}`` (a template that makes other things of it).
    if_no_video: Literal["fail", "skip"] = "fail"
    #: What the MP4 must play on: ``compatible`` (H.264 High@4.1 yuv420p, AAC-LC stereo —
    #: anything from the last ten years), ``modern`` (copies whatever MP4 holds: Opus, FLAC,
    #: HEVC, AV1), ``archive`` (copies every stream, re-encodes nothing, refuses what MP4
    #: cannot hold). See :mod:`python_endpoints.jobs.ffmpeg`.
    profile: Literal["compatible", "modern", "archive"] = "compatible"
    #: A taller picture is scaled down to this height (aspect kept, even dimensions).
    max_height: int | None = Field(default=None, ge=144, le=8640)
    #: A faster frame rate is brought down to this.
    max_fps: float | None = Field(default=None, ge=1, le=240)
    #: Normalise the audio's loudness (EBU R128, two passes); re-encodes it.
    loudness: bool = False
    #: A video re-encode of an input that lasts two of these (seconds) or more goes by
    #: segments of about this length, which a next attempt resumes from (what an interrupted
    #: encode may lose at most).
    segment_seconds: float = Field(default=240.0, ge=1.0)
    #: The checkpoint of an earlier attempt of a segmented re-encode (given by the queue).
    resume: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _paths(self) -> TranscodeParams:
        _absolute(self.input)
        _absolute(self.output)
        if self.profile == "archive" and (
            self.mode == "reencode" or self.max_height or self.max_fps or self.loudness
        ):
            raise ValueError(
                "profile archive copies every stream as it is: it takes no mode reencode, "
                "max_height, max_fps or loudness"
            )
        return self


class BurnSubtitlesParams(TranscodeParams):
    """BURN_SUBTITLES: TRANSCODE_MP4's params, the video always re-encoded with the subtitles
    drawn into the picture: from a subtitle file (SRT, WebVTT or ASS) or an embedded text
    track of the input."""

    #: The subtitle file; None: ``track``.
    subtitles: PathText | None = None
    #: The input's text subtitle track, counted from 0 among its subtitle tracks; None:
    #: ``subtitles``.
    track: int | None = Field(default=None, ge=0, le=99)
    #: The style of SRT and WebVTT cues (an ASS file keeps its own): a font family the system
    #: has (fontconfig's name), its size in the player's units (libass: 288 lines high), the
    #: outline's width, and where the cues go.
    font: str = Field(default="Sans", pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$")
    font_size: int = Field(default=18, ge=6, le=96)
    outline: float = Field(default=1.5, ge=0, le=10)
    position: Literal["bottom", "top"] = "bottom"
    mode: Literal["auto", "remux", "reencode"] = "reencode"

    @model_validator(mode="after")
    def _paths(self) -> BurnSubtitlesParams:  # TranscodeParams' check, for a burn
        _absolute(self.input)
        _absolute(self.output)
        if (self.subtitles is None) == (self.track is None):
            raise ValueError("give the subtitles to burn: a subtitle file or a track, not both")
        if self.subtitles is not None:
            _absolute(self.subtitles)
        if self.profile == "archive":
            raise ValueError(
                "the archive profile never re-encodes, and burning subtitles re-encodes the "
                "video: choose compatible or modern"
            )
        if self.mode != "reencode":
            raise ValueError("burning subtitles re-encodes the video: mode must be reencode")
        return self


class AddSubtitleTrackParams(_MediaParams):
    """ADD_SUBTITLE_TRACK: an MP4 of the input with a subtitle file as one more selectable
    text track; nothing re-encoded."""

    input: PathText
    #: The subtitle file (SRT, WebVTT or ASS).
    subtitles: PathText
    #: The final .mp4 path.
    output: PathText
    #: The track's language (ISO 639-2, ``eng``; a two-letter code is taken from a file named
    #: ``talk.en.srt``); None: from the file's name, else undetermined.
    language: str | None = Field(default=None, pattern=r"^[a-z]{2,3}$")

    @model_validator(mode="after")
    def _paths(self) -> AddSubtitleTrackParams:
        for path in (self.input, self.subtitles, self.output):
            _absolute(path)
        return self


class ExtractAudioParams(_MediaParams):
    input: PathText
    #: The final .wav or .flac path.
    output: PathText
    format: Literal["wav", "flac"] = "wav"
    sample_rate: int = Field(default=16000, ge=8000, le=192000)
    channels: int = Field(default=1, ge=1, le=8)
    #: An input without sound: ``fail`` (``NO_AUDIO``), or ``skip`` — complete with
    #: ``{"skipped": true, "reason": "no audio"}``, and so do the tasks that need the audio.
    if_no_audio: Literal["fail", "skip"] = "fail"

    @model_validator(mode="after")
    def _paths(self) -> ExtractAudioParams:
        _absolute(self.input)
        _absolute(self.output)
        return self


SubtitleFormat = Literal["srt", "vtt"]


def _both_formats() -> list[SubtitleFormat]:
    return ["srt", "vtt"]


class ExtractSubtitlesParams(_MediaParams):
    input: PathText
    #: Files are written as ``<output_dir>/<stem>.<stream index>[.<language>].<format>``.
    output_dir: PathText
    stem: str = Field(min_length=1, max_length=200, pattern=r"^[^/\\]+$")
    formats: list[SubtitleFormat] = Field(default_factory=_both_formats, min_length=1)

    @model_validator(mode="after")
    def _paths(self) -> ExtractSubtitlesParams:
        _absolute(self.input)
        _absolute(self.output_dir)
        return self


class DownloadResume(_Params):
    """What a download saved to resume with ``Range``: the bytes on disk and the validator."""

    bytes_done: int = Field(default=0, ge=0)
    etag: str | None = None
    last_modified: str | None = None


class DownloadParams(_Params):
    url: str = Field(min_length=1, max_length=8192)
    #: The final path; the body is streamed to ``<output>.part`` first.
    output: PathText
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
    output: PathText
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


class ThumbnailParams(_MediaParams):
    """``/tasks/thumbnail``: a contact sheet, one JPEG of ``frames`` pictures of the video
    taken at evenly spaced times, ``columns`` to a row, each ``width`` pixels wide (its height
    follows the picture's shape). See :mod:`python_endpoints.jobs.thumbnail`."""

    input: PathText
    #: The final .jpg (or .jpeg) path.
    output: PathText
    frames: int = Field(default=12, ge=1, le=100)
    columns: int = Field(default=4, ge=1, le=20)
    #: Even: a JPEG's colour is stored at half the resolution of its brightness, and a
    #: picture scaled to an odd width cannot be centred in its tile without a half pixel.
    width: int = Field(default=320, ge=32, le=1920, multiple_of=2)

    @model_validator(mode="after")
    def _paths(self) -> ThumbnailParams:
        _absolute(self.input)
        _absolute(self.output)
        if not self.output.lower().endswith((".jpg", ".jpeg")):
            raise ValueError(f"output must be a .jpg file, got {self.output!r}")
        return self


# --- speech-to-text (issue: speech-to-text and subtitles) -------------------------------------

#: A model's name as Whisper names them (``tiny.en``, ``small``, ``large-v3``, ``distil-large-v3``).
MODEL_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"


class TranscribeResume(_Params):
    """What a transcription saved (the task's checkpoint: what the job sent last in a progress
    frame's ``extras.checkpoint``): the merged segments so far and how far decoding got."""

    #: Merged, final segments (``start``, ``end``, ``text`` and the decoder's extras), in order.
    segments: list[dict[str, Any]] = Field(default_factory=list)
    #: Seconds of the media decoded and merged for good: decoding resumes here.
    position: float = Field(default=0.0, ge=0)
    #: Language votes so far: language -> seconds of speech decoded in it.
    languages: dict[str, float] = Field(default_factory=dict)
    #: Stretches ``[start, end]`` with speech that decoding twice did not make out.
    unheard: list[tuple[float, float]] = Field(default_factory=list)


class TranscribeParams(_Params):
    #: The audio (or any media with audio) to transcribe: EXTRACT_AUDIO's 16 kHz WAV.
    input: PathText
    #: The merged transcript, JSON (``<stem>.transcript.json``), written atomically at the end.
    output: PathText
    #: A model name (``tiny.en`` is embedded; others are looked up in ``models_dir``) or the
    #: absolute path of a CTranslate2 model directory.
    model: str = Field(default="tiny.en", min_length=1, max_length=4096)
    models_dir: str | None = None
    device: Literal["auto", "cpu", "cuda"] = "auto"
    #: ``auto``: float16, then float32, then int8 — the first the device loads (remembered per
    #: device in ``models_dir``).
    compute_type: Literal[
        "auto", "float16", "float32", "int8", "int8_float16", "int8_float32", "bfloat16"
    ] = "auto"
    #: ``auto``: detected per chunk, the majority wins; or a language code (``en``, ``fr``).
    language: str = Field(default="auto", pattern=r"^(auto|[a-z]{2,3}(-[A-Za-z]+)?)$")
    vad: bool = True
    beam_size: int = Field(default=5, ge=1, le=16)
    initial_prompt: str | None = Field(default=None, max_length=2000)
    #: Long media are decoded in windows of ``chunk_seconds`` overlapping by
    #: ``overlap_seconds``; segments are merged by their midpoint.
    chunk_seconds: float = Field(default=300.0, ge=10, le=3600)
    overlap_seconds: float = Field(default=60.0, ge=0, le=600)
    #: On a GPU out of memory: fall back to a smaller compute type, then to the CPU (True), or
    #: ask for a pause with the reason (False: the user frees memory and resumes).
    allow_fallback: bool = False
    #: While paused, unload the model (its memory freed; the engine lends the task's slot to
    #: other work) and load it again on resume. None: on a GPU only — a paused job then frees
    #: the GPU. On the CPU the model stays in memory (the CPU slot is lent all the same).
    unload_on_pause: bool | None = None
    cpu_threads: int = Field(default=0, ge=0, le=256)
    #: Set by the engine from the task's checkpoint: continue from there.
    resume: TranscribeResume | None = None

    @model_validator(mode="after")
    def _check(self) -> TranscribeParams:
        _absolute(self.input)
        _absolute(self.output)
        if self.models_dir is not None:
            _absolute(self.models_dir)
        if self.overlap_seconds >= self.chunk_seconds / 2:
            raise ValueError("overlap_seconds must be less than half of chunk_seconds")
        # An English-only model (tiny.en, base.en…: its name says so) cannot transcribe
        # another language: refused when the task is submitted, not when it runs (the job
        # checks the model's files too, for a model given by its path).
        name = self.model.replace("\\", "/").rsplit("/", 1)[-1]
        if name.endswith(".en") and self.language.split("-")[0] not in ("auto", "en"):
            raise ValueError(
                f"the model {name} knows English only, and the language is {self.language}: "
                "choose a multilingual model (small, medium, large-v3…) or the language auto "
                "or en"
            )
        return self


#: ``md``: Markdown to paste into a document (who speaks in bold); not made unless asked for.
TranscriptFormat = Literal["srt", "vtt", "txt", "json", "md"]


def _all_transcript_formats() -> list[TranscriptFormat]:
    return ["srt", "vtt", "txt", "json"]


class DiarizeParams(_Params):
    """DIARIZE: who speaks when in an audio track (docs/diarization.md)."""

    #: The audio (EXTRACT_AUDIO's 16 kHz WAV, or any media with sound).
    input: PathText
    #: The turns, JSON (``<stem>.speakers.json``), written whole at the end.
    output: PathText
    #: How many people speak; None or 0: estimated (up to 8).
    speakers: int | None = Field(default=None, ge=0, le=20)
    #: Windows embedded between two checkpoints (400: five minutes of speech), each lot a
    #: piece next to the output that a next attempt reuses.
    checkpoint_windows: int = Field(default=400, ge=8, le=100_000)
    #: The checkpoint of an earlier attempt (the queue hands it back): the lots it lists are
    #: reused when they are of the same audio.
    resume: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _paths(self) -> DiarizeParams:
        _absolute(self.input)
        _absolute(self.output)
        return self


class ExportSubtitlesParams(_Params):
    #: TRANSCRIBE's transcript JSON.
    transcript: PathText
    #: Files are written as ``<output_dir>/<stem>.<format>`` (``.transcript.txt`` for text…).
    output_dir: PathText
    stem: str = Field(min_length=1, max_length=200, pattern=r"^[^/\\]+$")
    formats: list[TranscriptFormat] = Field(default_factory=_all_transcript_formats, min_length=1)
    #: Readable captions: at most this many characters per line and lines per cue…
    max_line_chars: int = Field(default=42, ge=10, le=200)
    max_lines: int = Field(default=2, ge=1, le=4)
    #: …shown between these many seconds (a long segment is split, a short one extended when
    #: there is room before the next).
    max_cue_seconds: float = Field(default=7.0, gt=0, le=60)
    min_cue_seconds: float = Field(default=1.0, ge=0, le=10)
    #: DIARIZE's turns (``<stem>.speakers.json``): each segment and word gets its speaker,
    #: the subtitles say who speaks. None: no speakers.
    speakers: PathText | None = None
    #: What to call speakers (``{"1": "Ana"}``; ``Speaker N`` otherwise).
    speaker_names: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> ExportSubtitlesParams:
        _absolute(self.transcript)
        _absolute(self.output_dir)
        if self.speakers is not None:
            _absolute(self.speakers)
        if self.min_cue_seconds > self.max_cue_seconds:
            raise ValueError("min_cue_seconds must not exceed max_cue_seconds")
        return self


class LLMParams(_Params):
    """An OpenAI-compatible chat endpoint (e.g. a local Ollama: ``http://127.0.0.1:11434/v1``)."""

    base_url: str = Field(min_length=1, max_length=2048)
    model: str = Field(min_length=1, max_length=256)
    #: The API key itself is never in a payload: the name of an environment variable of the
    #: endpoints server that holds it (None: no key, as a local server wants).
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]{0,63}$")
    timeout: float = Field(default=120.0, gt=0, le=3600)
    retries: int = Field(default=2, ge=0, le=10)

    @model_validator(mode="after")
    def _check(self) -> LLMParams:
        _http_url(self.base_url)
        return self


class AnalyzeParams(_Params):
    transcript: PathText
    #: The analysis, JSON (``<stem>.analysis.json``).
    output: PathText
    #: How many key phrases to keep.
    keywords: int = Field(default=15, ge=1, le=200)
    #: ``auto``: the transcript's language.
    language: str = Field(default="auto", pattern=r"^(auto|[a-z]{2,3}(-[A-Za-z]+)?)$")
    #: A summary and chapter titles from this endpoint; None: offline keywords only, and no
    #: network call at all.
    llm: LLMParams | None = None

    @model_validator(mode="after")
    def _check(self) -> AnalyzeParams:
        _absolute(self.transcript)
        _absolute(self.output)
        return self


class TranslateSubtitlesParams(_Params):
    """TRANSLATE_SUBTITLES: subtitles in another language, through a chat endpoint."""

    #: SRT, WebVTT or ASS subtitles, or a Fredica transcript (JSON).
    input: PathText
    #: Files are written as ``<output_dir>/<stem>.<lang>.<format>``.
    output_dir: PathText
    stem: str = Field(min_length=1, max_length=200, pattern=r"^[^/\\]+$")
    #: The language to translate into (``fr``, ``zh``, ``pt-BR``).
    lang: str = Field(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")
    #: The subtitles' language (``auto``: the model tells; a transcript says its own).
    source_language: str = Field(default="auto", pattern=r"^(auto|[a-z]{2,3}(-[A-Za-z]+)?)$")
    formats: list[SubtitleFormat] = Field(default_factory=_both_formats, min_length=1)
    #: Both lines in each cue: the original above, the translation below.
    bilingual: bool = False
    #: Cues per request, and cues before and after it sent as context.
    chunk_cues: int = Field(default=40, ge=1, le=500)
    context_cues: int = Field(default=5, ge=0, le=50)
    #: Build a glossary of names and terms from the whole file first.
    glossary: bool = True
    #: A chunk whose answer cannot be used (another cue count, numbering, not JSON) is asked
    #: again this many times, then the task fails.
    chunk_retries: int = Field(default=2, ge=0, le=10)
    #: A translated line longer than this (in characters) is wrapped into two.
    max_line_chars: int = Field(default=42, ge=10, le=200)
    #: The settings' language model; None (none set) fails the task at once, saying which
    #: setting to set.
    llm: LLMParams | None = None
    #: The checkpoint of an earlier attempt (the chunks translated, the glossary).
    resume: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check(self) -> TranslateSubtitlesParams:
        _absolute(self.input)
        _absolute(self.output_dir)
        return self


class ModelDownloadParams(_Params):
    """A Whisper model in CTranslate2 format, fetched by name into ``models_dir/<name>``."""

    name: str = Field(pattern=MODEL_NAME_PATTERN)
    models_dir: PathText
    #: Where models are published (a Hugging Face compatible server) and the repository that
    #: holds ``name`` (``{name}`` is replaced).
    base_url: str = Field(default="https://huggingface.co", min_length=1)
    repository: str = Field(default="Systran/faster-whisper-{name}", min_length=1, max_length=256)
    revision: str = Field(default="main", pattern=r"^[A-Za-z0-9._-]{1,128}$")
    proxy: str | None = None
    timeout: float = Field(default=30.0, gt=0, le=600)
    #: Set by the engine from the task's checkpoint (the files done and the bytes of the
    #: current one): continue from there.
    resume: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _check(self) -> ModelDownloadParams:
        _absolute(self.models_dir)
        _http_url(self.base_url)
        return self
