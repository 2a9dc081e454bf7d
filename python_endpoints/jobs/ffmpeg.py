"""What the media jobs decide, as plain functions over plain values: which streams fit MP4,
the plan of a transcode, ffmpeg's argv for each job, the ``-encoders`` listing, the
``-progress`` stream, tolerances and space estimates.

Pure (an import-linter contract): no I/O, no ``os``, no ``subprocess``. The shell that runs
ffmpeg and opens files with PyAV is :mod:`python_endpoints.jobs.media`.

Decisions written down here:

- A stream *fits* MP4 when its codec can be stream-copied into an MP4 that common players
  read: video h264/hevc/av1/mpeg4, audio aac/mp3/ac3/eac3/opus/flac/alac.
- ``mode="auto"`` copies every stream that fits and re-encodes the others (video to H.264,
  audio to AAC): an MKV whose H.264 video fits but whose Vorbis audio does not keeps its video
  untouched. The result's ``mode`` is ``remux`` when no audio or video stream was re-encoded.
  ``mode="reencode"`` re-encodes every audio and video stream; ``mode="remux"`` refuses a
  stream that does not fit.
- Text subtitle streams become ``mov_text`` (MP4's own text track: players show it, and it
  costs nothing to convert). Bitmap subtitles (PGS, DVD), cover art, data and attachment
  streams are dropped: MP4 has no good place for them. The plan says what was dropped.
- An audio stream without a sample rate carries no sound (a transport stream can declare audio
  it never sends): it is treated as absent — dropped from a transcode, never extracted.
- An output *profile* decides what fits (see :func:`fits_profile`): ``compatible`` (the
  default) copies only H.264 High/Main/Baseline at level 4.1 or below in yuv420p and AAC-LC
  in at most two channels, and re-encodes anything else to exactly that (libx264 High@4.1
  yuv420p, AAC stereo) — an MP4 that TVs, phones, older Apple devices and editors play.
  ``modern`` copies whatever MP4 holds (the MP4 rule above). ``archive`` re-encodes
  nothing: a stream that cannot go into MP4 as it is (a codec, a bitmap subtitle) is refused.
- ``max_height`` and ``max_fps`` scale a taller picture down (keeping its aspect, to even
  dimensions) and drop frames above the rate; a stream above either is re-encoded.
  ``loudness`` normalises every audio stream to EBU R128 in two passes (``loudnorm``: a
  measuring pass, then a linear gain with the measured values) and so re-encodes it.
- Re-encoded video is padded to even dimensions: H.264 in 4:2:0 needs them (720x405 → 720x406,
  one black line; no pixel is lost or resampled).
- Durations are the longest audio or video stream's, never the container's: Matroska counts
  a subtitle that runs past the picture in its duration, MP4 does not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from python_endpoints.languages import three_letter
from python_endpoints.status import said

MP4_VIDEO_CODECS = frozenset({"h264", "hevc", "av1", "mpeg4"})
MP4_AUDIO_CODECS = frozenset({"aac", "mp3", "ac3", "eac3", "opus", "flac", "alac"})
#: Text subtitle codecs by name, for when the decoder's own "text" property is unknown.
TEXT_SUBTITLE_CODECS = frozenset({"subrip", "srt", "ass", "ssa", "mov_text", "webvtt", "text"})

#: Demuxers that take any text file for ANSI or BIN art (by its extension, ``.txt`` among
#: them): for Fredica such a file is not media.
TEXT_ART_FORMATS = frozenset({"tty", "bin", "xbin", "adf", "idf"})

CPU_H264_ENCODER = "libx264"
#: Hardware H.264 encoders, best first. One is used only if it passes a one-frame test encode.
HARDWARE_H264_ENCODERS = (
    "h264_nvenc",
    "h264_qsv",
    "h264_videotoolbox",
    "h264_amf",
    "h264_vaapi",
)
AAC_BITRATE = "192k"
#: How often ffmpeg writes a ``-progress`` block (seconds).
PROGRESS_PERIOD = 0.2

Mode = Literal["auto", "remux", "reencode"]
Profile = Literal["compatible", "modern", "archive"]

#: What the ``compatible`` profile copies: H.264 in these profiles (as FFmpeg names them) at
#: this level or below, in this pixel format; AAC in this profile, at most in stereo.
COMPATIBLE_H264_PROFILES = frozenset({"High", "Main", "Baseline", "Constrained Baseline"})
COMPATIBLE_LEVEL = 41
COMPATIBLE_PIX_FMT = "yuv420p"
COMPATIBLE_AAC_PROFILE = "LC"
COMPATIBLE_CHANNELS = 2
#: EBU R128's targets: integrated loudness (LUFS), true peak (dBTP), loudness range (LU).
LOUDNESS_TARGET = -23.0
LOUDNESS_TRUE_PEAK = -1.0
LOUDNESS_RANGE = 7.0
#: loudnorm works at 192 kHz internally; its output is resampled to this.
LOUDNESS_SAMPLE_RATE = 48000
SubtitleFormat = Literal["srt", "vtt"]


class UnsupportedMedia(ValueError):
    """The input cannot be turned into what the job makes (no video stream, a codec that
    cannot be decoded, a stream that cannot be copied in ``remux`` mode)."""


# --- what a probe found -----------------------------------------------------------------------


@dataclass(frozen=True)
class StreamInfo:
    """One stream of a probed file."""

    index: int
    #: ``video``, ``audio``, ``subtitle``, ``data`` or ``attachment``.
    type: str
    codec: str
    language: str | None = None
    title: str | None = None
    width: int | None = None
    height: int | None = None
    fps: float | None = None
    sample_rate: int | None = None
    channels: int | None = None
    #: The installed FFmpeg libraries can decode it (needed to re-encode, not to copy).
    decodable: bool = True
    #: A text subtitle stream (as opposed to a bitmap one).
    text: bool = False
    #: Cover art: a still picture attached to an audio file, not a video.
    attached_pic: bool = False
    default: bool = False
    #: Seconds, when the container says.
    duration: float | None = None
    #: A declared audio stream without a sample rate: no packet of it was found (a transport
    #: stream that declares audio it never sends). Treated as absent.
    empty: bool = False
    #: The codec's profile as FFmpeg names it (``High``, ``High 10``, ``LC``), when known.
    profile: str | None = None
    #: The codec's level (H.264: 41 for 4.1), when known.
    level: int | None = None
    #: A video stream's pixel format (``yuv420p``), when known.
    pix_fmt: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The stream as PROBE reports it."""
        out: dict[str, Any] = {
            "index": self.index,
            "type": self.type,
            "codec": self.codec,
            "language": self.language,
            "title": self.title,
        }
        if self.type == "video":
            out.update(width=self.width, height=self.height, fps=self.fps)
            if self.attached_pic:
                out["attached_pic"] = True
        elif self.type == "audio":
            out.update(sample_rate=self.sample_rate, channels=self.channels)
            if self.empty:
                out["empty"] = True
        elif self.type == "subtitle":
            out["text"] = self.text
        return out

    @property
    def is_main_video(self) -> bool:
        return self.type == "video" and not self.attached_pic

    @property
    def is_sound(self) -> bool:
        """An audio stream that carries sound (not an :attr:`empty` one)."""
        return self.type == "audio" and not self.empty

    @property
    def plays(self) -> bool:
        """A stream whose length is the media's: real video or sound."""
        return self.is_main_video or self.is_sound


#: Image formats ffmpeg takes a file for by its extension alone (real pictures are recognised
#: by their content and read by the ``*_pipe`` demuxers, or have a frame size).
GUESSED_FORMATS = frozenset({"image2"})
#: Codecs that hold raw data whose shape ffmpeg cannot know without being told.
RAW_CODECS = frozenset({"rawvideo"})


def longest(streams: Iterable[StreamInfo]) -> float | None:
    """The longest duration among streams that play (see :attr:`StreamInfo.plays`)."""
    return max((s.duration for s in streams if s.plays and s.duration), default=None)


@dataclass(frozen=True)
class Chapter:
    """A chapter the container marks: from ``start`` to ``end`` (seconds), and its title."""

    start: float
    end: float
    title: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "title": self.title}


def chapter(start: int, end: int, time_base: Any, metadata: Mapping[str, str]) -> Chapter | None:
    """A container's chapter (times in ``time_base`` units, as FFmpeg gives them), or None
    for one that makes no sense (no time base, ending before it starts)."""
    if not time_base or end < start:
        return None
    title = metadata.get("title") or metadata.get("TITLE") or None
    return Chapter(round(float(start * time_base), 3), round(float(end * time_base), 3), title)


@dataclass(frozen=True)
class MediaInfo:
    """A probed file: container format, duration (seconds, None when unknown), size, streams,
    and its chapters when it marks any."""

    format: str
    duration: float | None
    size: int
    streams: tuple[StreamInfo, ...] = field(default_factory=tuple)
    chapters: tuple[Chapter, ...] = ()

    @property
    def is_media(self) -> bool:
        """Whether it has a video, audio or subtitle stream, and is not text read as art."""
        if self.format in TEXT_ART_FORMATS:
            return False
        return any(s.type in ("video", "audio", "subtitle") for s in self.streams)

    @property
    def kind(self) -> Literal["video", "audio", "other"]:
        """``video`` if it has a real video stream (not just cover art), ``audio`` if it has
        sound only; still images (``image2``, ``*_pipe`` formats) are ``other``."""
        if self.format == "image2" or self.format.endswith("_pipe"):
            return "other"
        if any(s.is_main_video for s in self.streams):
            return "video"
        if any(s.is_sound for s in self.streams):
            return "audio"
        return "other"

    @property
    def playing_duration(self) -> float | None:
        """How long it plays: its longest video or audio stream, else what the container says
        (a subtitle that runs past the picture does not count)."""
        return longest(self.streams) or self.duration

    @property
    def guessed_as(self) -> str | None:
        """What ffmpeg only guessed this file to be, by its extension, when it found nothing it
        could read in it: headerless audio taken for an image (``.raw``), a garbage ``.png``.
        None for a file ffmpeg recognised."""
        if self.format not in GUESSED_FORMATS:
            return None
        for s in self.of_type("video"):
            if s.codec in RAW_CODECS:
                return f"an image sequence of raw video ({self.format}, {s.codec})"
            if not s.width or not s.height:
                return f"an image sequence ({self.format}, {s.codec}) with no picture in it"
        return None

    def of_type(self, kind: str) -> list[StreamInfo]:
        return [s for s in self.streams if s.type == kind]

    @property
    def text_subtitles(self) -> list[StreamInfo]:
        return [s for s in self.streams if s.type == "subtitle" and s.text]

    def main_audio(self) -> StreamInfo | None:
        """The audio stream a job extracts: the default one, else the first (streams without
        sound left out)."""
        audio = [s for s in self.streams if s.is_sound]
        return next((s for s in audio if s.default), audio[0] if audio else None)

    def as_dict(self) -> dict[str, Any]:
        """PROBE's result (without ``outputs``)."""
        return {
            "format": self.format,
            "duration": self.duration,
            "size": self.size,
            "kind": self.kind,
            "subtitles": len(self.text_subtitles),
            "streams": [s.as_dict() for s in self.streams],
            "chapters": [c.as_dict() for c in self.chapters],
        }


def is_text_subtitle(codec: str, text_property: bool | None) -> bool:
    """Whether a subtitle codec is text: the decoder's own property when known."""
    if text_property is not None:
        return text_property
    return codec in TEXT_SUBTITLE_CODECS


# --- the MP4 rule and a transcode's plan ------------------------------------------------------


def fits_mp4(stream: StreamInfo) -> bool:
    """Whether an audio or video stream can be stream-copied into an MP4."""
    if stream.type == "video":
        return stream.codec in MP4_VIDEO_CODECS
    if stream.type == "audio":
        return stream.codec in MP4_AUDIO_CODECS
    return False


def all_fit_mp4(streams: Iterable[StreamInfo]) -> bool:
    """Whether every audio and video stream (cover art aside) fits MP4: a pure remux."""
    return all(fits_mp4(s) for s in streams if s.is_main_video or s.type == "audio")


def fits_profile(stream: StreamInfo, profile: Profile) -> bool:
    """Whether an audio or video stream is copied as it is under an output profile:
    ``compatible`` copies only what plays everywhere (see the module's docstring), ``modern``
    and ``archive`` whatever fits MP4."""
    if not fits_mp4(stream) or profile != "compatible":
        return fits_mp4(stream)
    if stream.type == "video":
        return (
            stream.codec == "h264"
            and stream.profile in COMPATIBLE_H264_PROFILES
            and stream.level is not None
            and 0 < stream.level <= COMPATIBLE_LEVEL
            and stream.pix_fmt == COMPATIBLE_PIX_FMT
        )
    return (
        stream.codec == "aac"
        and stream.profile == COMPATIBLE_AAC_PROFILE
        and stream.channels is not None
        and stream.channels <= COMPATIBLE_CHANNELS
    )


@dataclass(frozen=True)
class Limits:
    """What a transcode's output may not exceed: a picture height and a frame rate (None:
    as the input), and whether audio is normalised in loudness."""

    max_height: int | None = None
    max_fps: float | None = None
    loudness: bool = False

    def video_filters(self, stream: StreamInfo) -> tuple[str, ...]:
        """The filters that bring a video stream within the limits (none: it is within)."""
        filters: list[str] = []
        if self.max_height and stream.height and stream.height > self.max_height:
            # -2: the width that keeps the aspect, rounded to even.
            filters.append(f"scale=-2:{self.max_height - self.max_height % 2}")
        if self.max_fps and stream.fps and stream.fps > self.max_fps + 0.01:
            filters.append(f"fps={self.max_fps:g}")
        return tuple(filters)


NO_LIMITS = Limits()


@dataclass(frozen=True)
class StreamPlan:
    """What happens to one input stream: copied, or encoded to ``codec``."""

    index: int
    type: str
    action: Literal["copy", "encode"]
    #: The output codec: the input's for a copy; ``h264``, ``aac`` or ``mov_text`` otherwise.
    codec: str
    #: Filters before the encoder (a video's scale and fps; see :class:`Limits`).
    filters: tuple[str, ...] = ()


@dataclass(frozen=True)
class TranscodePlan:
    """A transcode, stream by stream, in output order; and what was left out."""

    streams: tuple[StreamPlan, ...]
    #: ``(index, why)`` of the input streams left out.
    dropped: tuple[tuple[int, str], ...] = ()

    @property
    def mode(self) -> Literal["remux", "reencode"]:
        encoded = any(s.action == "encode" and s.type in ("video", "audio") for s in self.streams)
        return "reencode" if encoded else "remux"

    @property
    def encodes_video(self) -> bool:
        return any(s.action == "encode" and s.type == "video" for s in self.streams)

    def encoded_audio(self) -> list[int]:
        """The input indices of the audio streams that are re-encoded."""
        return [s.index for s in self.streams if s.action == "encode" and s.type == "audio"]

    def count(self, kind: str) -> int:
        """How many output streams of a type (``video``, ``audio``, ``subtitle``)."""
        return sum(1 for s in self.streams if s.type == kind)


#: Why an :attr:`~StreamInfo.empty` audio stream is left out.
EMPTY_AUDIO = "an audio stream without sound: no packet of it found (no sample rate)"


def plan_transcode(
    streams: Sequence[StreamInfo],
    mode: Mode,
    profile: Profile = "modern",
    limits: Limits = NO_LIMITS,
) -> TranscodePlan:
    """Decide, stream by stream, what an MP4 transcode does (see the module's docstring).
    Raises :class:`UnsupportedMedia` when there is no video or a stream cannot be handled."""
    if profile == "archive":
        if mode == "reencode" or limits != NO_LIMITS:
            raise UnsupportedMedia(
                "the archive profile copies every stream as it is: it cannot re-encode, "
                "scale, change the frame rate or normalise loudness; use profile compatible"
            )
        mode = "remux"
    if not any(s.is_main_video for s in streams):
        raise UnsupportedMedia(
            "the input has no video stream, so it cannot become an MP4 video; "
            "extract its audio instead"
        )
    planned: list[StreamPlan] = []
    dropped: list[tuple[int, str]] = []
    for s in streams:
        if s.type == "audio" and s.empty:
            dropped.append((s.index, EMPTY_AUDIO))
        elif s.is_main_video or s.type == "audio":
            target = "h264" if s.type == "video" else "aac"
            filters = limits.video_filters(s) if s.type == "video" else ()
            fits = fits_profile(s, profile) and not filters
            fits = fits and not (s.type == "audio" and limits.loudness)
            if mode == "remux" and not fits:
                advice = (
                    "use profile modern (it re-encodes what MP4 cannot hold) or compatible"
                    if profile == "archive"
                    else "use mode auto or reencode"
                )
                raise UnsupportedMedia(
                    f"stream {s.index} ({s.type} {_described(s)}) cannot be copied into "
                    f"{'a compatible' if profile == 'compatible' else 'an'} MP4 as it is; {advice}"
                )
            if fits and mode != "reencode":
                planned.append(StreamPlan(s.index, s.type, "copy", s.codec))
                continue
            if not s.decodable:
                raise UnsupportedMedia(
                    f"stream {s.index} ({s.type} {s.codec}) cannot be decoded by this ffmpeg, "
                    "so it cannot be re-encoded; set another ffmpeg in the settings"
                )
            planned.append(StreamPlan(s.index, s.type, "encode", target, filters))
        elif s.type == "video":
            dropped.append((s.index, "cover art"))
        elif s.type == "subtitle" and s.text:
            planned.append(StreamPlan(s.index, s.type, "encode", "mov_text"))
        elif s.type == "subtitle" and profile == "archive":
            raise UnsupportedMedia(
                f"stream {s.index} (bitmap subtitles, {s.codec}) cannot go into an MP4; "
                "use profile modern or compatible (they drop it), or keep the original file"
            )
        elif s.type == "subtitle":
            dropped.append((s.index, f"bitmap subtitles ({s.codec}) do not fit MP4"))
        else:
            dropped.append((s.index, f"{s.type} stream"))
    return TranscodePlan(tuple(planned), tuple(dropped))


def _described(s: StreamInfo) -> str:
    """``h264 High 10 level 5.1 yuv420p10le``: what decides whether a stream fits."""
    parts = [s.codec, s.profile or ""]
    if s.type == "video" and s.level and s.level > 0:
        parts.append(f"level {s.level / 10:g}")
    parts.append(s.pix_fmt or "")
    if s.type == "audio" and s.channels:
        parts.append(f"{s.channels} channels")
    return " ".join(p for p in parts if p)


# --- argv -------------------------------------------------------------------------------------


def _head(ffmpeg: str) -> list[str]:
    # -nostdin: ffmpeg must never read the terminal; -y: the temporary name may be left over
    # from a crashed attempt and is ours to overwrite.
    return [ffmpeg, "-hide_banner", "-nostdin", "-y", "-loglevel", "error"]


def _progress() -> list[str]:
    return ["-nostats", "-progress", "pipe:1", "-stats_period", str(PROGRESS_PERIOD)]


def hardware_input_args(encoder: str) -> list[str]:
    """Options before ``-i`` that an encoder needs (a hardware device)."""
    if encoder == "h264_vaapi":
        return ["-init_hw_device", "vaapi=va", "-filter_hw_device", "va"]
    return []


#: Pads a picture to even dimensions (H.264 in 4:2:0 needs them; libx264 refuses 720x405).
#: A picture already even is left as it is; a stream whose size changes midway is padded
#: again at each change (ffmpeg sets its filters up anew).
EVEN_SIZE = "pad=ceil(iw/2)*2:ceil(ih/2)*2"


def video_encoder_args(
    encoder: str,
    stream: int | str,
    crf: int,
    preset: str,
    *,
    filters: Sequence[str] = (),
    compatible: bool = False,
) -> list[str]:
    """Options that encode output stream ``stream`` (an index, or ``v`` for every video
    stream) to H.264 with ``encoder`` at a quality comparable to libx264's ``crf``, after
    ``filters`` (a scale, an fps). ``compatible``: High profile, level 4.1 (an encoder that
    refuses them fails, and the job falls back to libx264)."""
    k = str(stream)
    args = [f"-c:{k}", encoder]
    if compatible:
        args += [f"-profile:{k}", "high", f"-level:{k}", "4.1"]
    graph = ",".join([*at_offset(filters, 0.0), EVEN_SIZE])
    if encoder in (CPU_H264_ENCODER, "libx264rgb"):
        args += [f"-preset:{k}", preset, f"-crf:{k}", str(crf)]
    elif encoder == "h264_nvenc":
        args += [f"-rc:{k}", "vbr", f"-cq:{k}", str(crf)]
    elif encoder == "h264_qsv":
        args += [f"-global_quality:{k}", str(crf)]
    elif encoder == "h264_amf":
        args += [f"-rc:{k}", "cqp", f"-qp_i:{k}", str(crf), f"-qp_p:{k}", str(crf)]
    elif encoder == "h264_videotoolbox":
        # -q:v runs 1..100, higher is better; crf 23 maps to about 65.
        args += [f"-q:{k}", str(max(1, min(100, 111 - 2 * crf)))]
    if encoder == "h264_vaapi":
        args += [f"-filter:{k}", f"{graph},format=nv12,hwupload", f"-qp:{k}", str(crf)]
    else:
        # 4:2:0 8-bit: what every player decodes (a 10-bit or 4:4:4 source would otherwise
        # give a High 10 / High 4:4:4 stream that many cannot play).
        args += [f"-filter:{k}", graph, f"-pix_fmt:{k}", "yuv420p"]
    return args


def add_track_args(
    ffmpeg: str,
    input: str,
    subtitles: str,
    output: str,
    *,
    keep: Sequence[int],
    language: str | None,
) -> list[str]:
    """ffmpeg's argv for an MP4 of ``input``'s streams ``keep``, copied, with the subtitle
    file ``subtitles`` as one more text track (``mov_text``, MP4's: players let the viewer
    turn it on and off), in ``language`` (None: undetermined)."""
    args = [*_head(ffmpeg), *_progress(), "-i", input, "-i", subtitles]
    for index in keep:
        args += ["-map", f"0:{index}"]
    args += ["-map", "1:0", "-c", "copy", "-c:s", "mov_text"]
    track = sum(1 for _ in keep)  # the new track comes last
    args += [f"-metadata:s:{track}", f"language={three_letter(language)}"]
    return [*args, "-movflags", "+faststart", "-f", "mp4", output]


#: Where a burn filter's offset goes (:func:`burn_filter`): the time of the input the encode
#: starts at — 0 for a whole encode, the segment's start for a segment.
OFFSET = "@OFFSET@"


def burn_filter(
    name: str,
    *,
    font: str | None = None,
    size: int = 18,
    outline: float = 1.5,
    top: bool = False,
) -> str:
    """The filters that draw the subtitles of file ``name`` (a plain file name: ffmpeg runs in
    its folder, so no path has to be escaped for the filter graph) into the picture, with
    libass. The frames' times are moved by :data:`OFFSET` first and back after, so that a
    segment encoded from a later point of the input shows the cues of its own times. ``font``
    (None: the file's own styles, an ASS file's) sets the style of every cue: family, size,
    outline and place (bottom or top centre)."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise ValueError(f"not a plain file name: {name!r}")
    subtitles = f"subtitles=filename={name}"
    if font is not None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 ._-]*", font):
            raise ValueError(f"not a font family name: {font!r}")
        style = (
            f"FontName={font},FontSize={size},Outline={outline:g},BorderStyle=1,"
            # force_style takes SSA's (legacy) alignment numbers: 2 bottom centre, 6 top.
            f"Alignment={6 if top else 2},MarginV=16"
        )
        subtitles += f":force_style='{style}'"
    return f"setpts=PTS+{OFFSET}/TB,{subtitles},setpts=PTS-STARTPTS"


def at_offset(filters: Sequence[str], seconds: float) -> list[str]:
    """``filters`` with a burn filter's :data:`OFFSET` set to ``seconds``."""
    return [f.replace(OFFSET, f"{seconds:.6f}") for f in filters]


@dataclass(frozen=True)
class Loudness:
    """What loudnorm's measuring pass found in one audio stream (its ``print_format=json``)."""

    input_i: float
    input_tp: float
    input_lra: float
    input_thresh: float
    target_offset: float


def _loudnorm_targets() -> str:
    return f"I={LOUDNESS_TARGET:g}:TP={LOUDNESS_TRUE_PEAK:g}:LRA={LOUDNESS_RANGE:g}"


def loudness_measure_args(ffmpeg: str, input: str, stream: int) -> list[str]:
    """ffmpeg's argv for loudnorm's first pass over audio stream ``stream``: it decodes the
    audio to nowhere and prints what it measured as JSON on stderr (at the ``info`` level,
    see :func:`parse_loudnorm`)."""
    args = [ffmpeg, "-hide_banner", "-nostdin", "-y", "-loglevel", "info", *_progress()]
    args += ["-i", input, "-map", f"0:{stream}", "-vn", "-sn", "-dn"]
    args += ["-filter:a", f"loudnorm={_loudnorm_targets()}:print_format=json"]
    return [*args, "-f", "null", "-"]


_LOUDNORM_KEYS = ("input_i", "input_tp", "input_lra", "input_thresh", "target_offset")


def parse_loudnorm(lines: Sequence[str]) -> Loudness | None:
    """The last JSON object loudnorm printed among ``lines`` (ffmpeg's stderr), or None when
    there is none or it holds no finite numbers (silence measures ``-inf``)."""
    end = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip() == "}"), None)
    if end is None:
        return None
    start = next((i for i in range(end, -1, -1) if lines[i].strip() == "{"), None)
    if start is None:
        return None
    values: dict[str, float] = {}
    for line in lines[start + 1 : end]:
        key, sep, value = line.partition(":")
        key = key.strip().strip('"')
        if sep and key in _LOUDNORM_KEYS:
            number = _float(value.strip().rstrip(",").strip('"'))
            if number is None:
                return None
            values[key] = number
    if set(values) != set(_LOUDNORM_KEYS):
        return None
    return Loudness(**values)


def loudnorm_filter(measured: Loudness) -> str:
    """loudnorm's second pass: the measured values, a linear gain (no dynamic compression
    when the targets allow it), resampled back from loudnorm's 192 kHz."""
    m = measured
    return (
        f"loudnorm={_loudnorm_targets()}:measured_I={m.input_i:g}:measured_TP={m.input_tp:g}"
        f":measured_LRA={m.input_lra:g}:measured_thresh={m.input_thresh:g}"
        f":offset={m.target_offset:g}:linear=true,aresample={LOUDNESS_SAMPLE_RATE}"
    )


def transcode_args(
    ffmpeg: str,
    input: str,
    output: str,
    plan: TranscodePlan,
    *,
    encoder: str = CPU_H264_ENCODER,
    crf: int = 23,
    preset: str = "veryfast",
    compatible: bool = False,
    loudness: Mapping[int, Loudness] | None = None,
) -> list[str]:
    """ffmpeg's argv for a transcode to MP4 following ``plan``, written to ``output``.
    ``compatible``: re-encoded video is High@4.1, re-encoded audio stereo. ``loudness``: the
    measured loudness of each re-encoded audio stream (by input index) to normalise it."""
    args = [*_head(ffmpeg), *_progress()]
    if plan.encodes_video:
        args += hardware_input_args(encoder)
    args += ["-i", input]
    for s in plan.streams:
        args += ["-map", f"0:{s.index}"]
    for k, s in enumerate(plan.streams):
        if s.action == "copy":
            args += [f"-c:{k}", "copy"]
            if s.codec == "hevc":
                args += [f"-tag:{k}", "hvc1"]  # what Apple's players require of HEVC in MP4
        elif s.type == "video":
            args += video_encoder_args(
                encoder, k, crf, preset, filters=s.filters, compatible=compatible
            )
        elif s.type == "audio":
            args += [f"-c:{k}", "aac", f"-b:{k}", AAC_BITRATE]
            if compatible:
                args += [f"-ac:{k}", str(COMPATIBLE_CHANNELS)]
            if loudness and s.index in loudness:
                args += [f"-filter:{k}", loudnorm_filter(loudness[s.index])]
        else:
            args += [f"-c:{k}", s.codec]
    return [*args, "-movflags", "+faststart", "-f", "mp4", output]


def extract_audio_args(
    ffmpeg: str,
    input: str,
    output: str,
    *,
    stream: int,
    format: Literal["wav", "flac"] = "wav",
    sample_rate: int = 16000,
    channels: int = 1,
) -> list[str]:
    """ffmpeg's argv for one audio stream to 16-bit PCM WAV or FLAC at a rate and channels."""
    args = [*_head(ffmpeg), *_progress(), "-i", input, "-map", f"0:{stream}"]
    args += ["-ar", str(sample_rate), "-ac", str(channels)]
    if format == "wav":
        # RF64 past 4 GiB only (about 37 h at 16 kHz mono): a plain WAV otherwise.
        args += ["-c:a", "pcm_s16le", "-rf64", "auto", "-f", "wav"]
    else:
        args += ["-c:a", "flac", "-sample_fmt", "s16", "-f", "flac"]
    return [*args, output]


SUBTITLE_MUXERS: dict[str, tuple[str, str]] = {"srt": ("srt", "srt"), "vtt": ("webvtt", "webvtt")}


def extract_subtitles_args(
    ffmpeg: str, input: str, outputs: Sequence[tuple[int, SubtitleFormat, str]]
) -> list[str]:
    """ffmpeg's argv that writes each ``(stream index, format, path)`` in one pass over the
    input. Timestamps are the stream's own (``-c:s srt`` re-times nothing)."""
    args = [*_head(ffmpeg), *_progress(), "-i", input]
    for index, fmt, path in outputs:
        codec, muxer = SUBTITLE_MUXERS[fmt]
        args += ["-map", f"0:{index}", "-c:s", codec, "-f", muxer, path]
    return args


#: Video codecs whose frames can carry closed captions (CEA-608, or CEA-708 carrying 608:
#: ATSC A/53 in H.264 and HEVC SEI, MPEG-2 user data) — TV recordings, HLS, DVDs.
CAPTION_CODECS = frozenset({"h264", "hevc", "mpeg2video", "mpeg1video"})
#: The label of a movie source's captions output (the video's label + ``+subcc``).
_CAPTIONS_LABEL = "out0+subcc"


def _quote_option(value: str) -> str:
    # A filter option's value, read literally: inside '…' nothing is special but ' itself.
    return "'" + value.replace("'", "'\\''") + "'"


def _escape_graph(text: str) -> str:
    # The filter's arguments inside a filtergraph: these end or quote a filter's arguments.
    return "".join("\\" + c if c in "\\'[],;" else c for c in text)


def captions_graph(input: str, stream: int) -> str:
    """A lavfi graph that decodes video stream ``stream`` of ``input`` and outputs the closed
    captions its frames carry as a subtitle stream (``eia_608``): the ``movie`` source with
    ``+subcc``. The path is escaped for both levels of ffmpeg's parsing (the filter's options,
    then the graph), so any file name works."""
    options = f"filename={_quote_option(input)}:stream_index={stream}"
    return f"movie={_escape_graph(options)}[{_CAPTIONS_LABEL}]"


def extract_captions_args(
    ffmpeg: str, input: str, stream: int, outputs: Sequence[tuple[SubtitleFormat, str]]
) -> list[str]:
    """ffmpeg's argv that writes the closed captions of video stream ``stream`` to each
    ``(format, path)``, in one pass. The video is decoded (captions ride in its frames) and
    thrown away; mapping it to a null output keeps ``-progress`` moving with it."""
    args = [*_head(ffmpeg), *_progress(), "-f", "lavfi", "-i", captions_graph(input, stream)]
    for fmt, path in outputs:
        codec, muxer = SUBTITLE_MUXERS[fmt]
        args += ["-map", "0:s", "-c:s", codec, "-f", muxer, path]
    return [*args, "-map", "0:v", "-c:v", "wrapped_avframe", "-f", "null", "-"]


#: What ffmpeg's caption decoder leaves in an SRT that a player would show or obey: its
#: positioning override (``{\\an7}``: top left) and its monospace font.
_CAPTION_MARKUP = re.compile(r"\{\\[^}]*\}|</?font[^>]*>")


def tidy_captions(srt: str) -> str:
    """An SRT of closed captions without the decoder's markup: plain text, where the player
    puts subtitles."""
    return _CAPTION_MARKUP.sub("", srt)


def encoders_args(ffmpeg: str) -> list[str]:
    """The argv that lists an ffmpeg's encoders (see :func:`parse_encoders`)."""
    return [ffmpeg, "-hide_banner", "-nostdin", "-encoders"]


def trial_encode_args(ffmpeg: str, encoder: str) -> list[str]:
    """A one-frame encode to nowhere: does ``encoder`` actually work on this machine?"""
    return [
        *_head(ffmpeg),
        *hardware_input_args(encoder),
        "-f",
        "lavfi",
        "-i",
        "color=size=256x256:duration=0.1",
        "-frames:v",
        "1",
        *video_encoder_args(encoder, "v", 23, "veryfast"),
        "-f",
        "null",
        "-",
    ]


def parse_encoders(text: str) -> dict[str, str]:
    """``ffmpeg -encoders`` → ``{name: kind}``, kind ``V``, ``A`` or ``S``. The listing is a
    legend, a line of dashes, then `` V....D name  description`` lines."""
    out: dict[str, str] = {}
    listing = False
    for line in text.splitlines():
        parts = line.split()
        if not listing:
            listing = bool(parts) and set(parts[0]) == {"-"}
            continue
        if len(parts) >= 2 and len(parts[0]) == 6 and parts[0][0] in "VAS":
            out[parts[1]] = parts[0][0]
    return out


def hardware_candidates(encoders: dict[str, str]) -> list[str]:
    """The hardware H.264 encoders this ffmpeg was built with, best first (not yet tested)."""
    return [e for e in HARDWARE_H264_ENCODERS if encoders.get(e) == "V"]


#: The files that show a hardware encoder's driver on Linux; it can work only where one of
#: them exists: NVIDIA's control device or its loaded kernel module (whose device files
#: ``nvidia-modprobe`` may make only at the first use), WSL 2's GPU, else a DRM device for
#: the others. Most servers and virtual machines have none, and are spared the test encodes.
LINUX_DEVICES: dict[str, tuple[str, ...]] = {
    "h264_nvenc": ("/dev/nvidiactl", "/proc/driver/nvidia", "/dev/dxg"),
    "h264_qsv": ("/dev/dri",),
    "h264_amf": ("/dev/dri",),
    "h264_vaapi": ("/dev/dri",),
}


def could_work(encoder: str, platform: str, present: Collection[str]) -> bool:
    """Whether a hardware encoder could work on this system (``sys.platform``), where these
    of :data:`LINUX_DEVICES`' files exist: VideoToolbox only on macOS; on Linux, only with
    one of its devices; elsewhere, only a test encode tells."""
    if encoder == "h264_videotoolbox":
        return platform == "darwin"
    if platform.startswith("linux"):
        return any(device in present for device in LINUX_DEVICES.get(encoder, ()))
    return True


# --- -progress --------------------------------------------------------------------------------


def parse_clock(value: str) -> float | None:
    """``HH:MM:SS.ffffff`` (possibly negative, as ffmpeg writes before the first packet) to
    seconds; None for ``N/A`` or anything else."""
    value = value.strip()
    sign = -1.0 if value.startswith("-") else 1.0
    parts = value.lstrip("-").split(":")
    if len(parts) != 3:
        return None
    try:
        hours, minutes, seconds = int(parts[0]), int(parts[1]), float(parts[2])
    except ValueError:
        return None
    total = hours * 3600 + minutes * 60 + seconds
    return sign * total if math.isfinite(total) else None


def _float(value: str) -> float | None:
    try:
        number = float(value.strip().rstrip("x"))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class ProgressSnapshot:
    """One ``-progress`` block: output time reached (seconds, never decreasing), speed (times
    real time, None when unknown), and whether ffmpeg is done."""

    out_time: float
    speed: float | None
    done: bool

    def percent(self, duration: float | None) -> float:
        if self.done:
            return 100.0
        if not duration or duration <= 0:
            return 0.0
        return min(100.0, max(0.0, 100.0 * self.out_time / duration))


class ProgressParser:
    """Feed ffmpeg's ``-progress`` lines; get a snapshot at the end of each block.

    ``out_time`` is clamped to the running maximum: with several streams ffmpeg reports the
    time of whichever stream it just wrote, which can go backwards. ``N/A`` is skipped.
    ``out_time_ms`` is in microseconds too (an old ffmpeg misnomer)."""

    def __init__(self) -> None:
        self.out_time = 0.0
        self.speed: float | None = None

    def _reached(self, seconds: float | None) -> None:
        if seconds is not None and seconds > self.out_time:
            self.out_time = seconds

    def feed(self, line: str) -> ProgressSnapshot | None:
        key, sep, value = line.strip().partition("=")
        if not sep:
            return None
        if key in ("out_time_us", "out_time_ms"):
            micro = _float(value)
            self._reached(None if micro is None else micro / 1e6)
        elif key == "out_time":
            self._reached(parse_clock(value))
        elif key == "speed":
            self.speed = _float(value)
        elif key == "progress":
            return ProgressSnapshot(self.out_time, self.speed, value.strip() == "end")
        return None


def status_text(verb: str, percent: float, speed: float | None) -> str:
    """``transcoding 42 % (3.1x)``: a :class:`~python_endpoints.status.Said` when ``verb``
    is one."""
    text = verb + said("percent", percent=f"{percent:.0f}")
    if speed is not None and speed > 0:
        text += said("speed", speed=f"{speed:.1f}" if speed < 100 else f"{speed:.0f}")
    return text


class Throttle:
    """At most one report per ``interval`` seconds; the clock is passed in."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._last: float | None = None

    def ready(self, now: float) -> bool:
        if self._last is not None and now - self._last < self.interval:
            return False
        self._last = now
        return True


# --- judging the result -----------------------------------------------------------------------


def duration_tolerance(expected: float) -> float:
    """How far an output's duration may be from the input's: 0.5 s or 2 %, the larger (a
    remux rounds to whole packets, and an encoder pads its last audio frame)."""
    return max(0.5, 0.02 * expected)


def duration_ok(actual: float | None, expected: float | None) -> bool:
    """Whether an output lasts as long as expected, within :func:`duration_tolerance`."""
    if expected is None or expected <= 0:
        return True  # the input did not say: nothing to compare with
    if actual is None:
        return False
    return abs(actual - expected) <= duration_tolerance(expected)


DurationVerdict = Literal["ok", "input_shorter", "input_longer", "mismatch"]


def duration_verdict(
    output: float | None, declared: float | None, holds: float | None = None
) -> DurationVerdict:
    """Judge an output's length. ``declared``: what the input's header says its streams last;
    ``holds``: what they actually hold (measured only when the first comparison fails).
    ``ok``: as declared. ``input_shorter``/``input_longer``: not as declared, but as long as
    what the input holds — the header is wrong, the output has all there is. ``mismatch``: the
    output lost something the input holds."""
    if duration_ok(output, declared):
        return "ok"
    if holds is not None and duration_ok(output, holds):
        assert declared is not None  # duration_ok(…, None) is True
        return "input_shorter" if holds < declared else "input_longer"
    return "mismatch"


# --- disk space -------------------------------------------------------------------------------

#: What a subtitle file may take: text, far below this.
SUBTITLE_FILE_BYTES = 1 << 20


def estimate_output_bytes(
    job: str,
    *,
    input_size: int,
    duration: float | None,
    sample_rate: int = 16000,
    channels: int = 1,
    audio_format: str = "wav",
    files: int = 1,
) -> int:
    """A generous estimate of what a job writes, to refuse to start without room for it.
    A transcode: the input's size (a remux is about that; an H.264 re-encode at the default
    quality is rarely larger). Audio: the PCM size (FLAC about 60 % of it)."""
    if job == "TRANSCODE_MP4":
        return input_size
    if job == "EXTRACT_AUDIO":
        pcm = int((duration or 0.0) * sample_rate * channels * 2) + 4096
        return pcm if audio_format == "wav" else int(pcm * 0.6) + 4096
    if job == "EXTRACT_SUBTITLES":
        return SUBTITLE_FILE_BYTES * files
    return 0


def has_room(free: int, needed: int, keep_free: int) -> bool:
    """Whether writing ``needed`` bytes still leaves ``keep_free`` bytes free."""
    return free - needed >= keep_free


def human_bytes(n: float) -> str:
    """``3.0 GiB``: a size for a message."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


# --- a contact sheet (THUMBNAIL) --------------------------------------------------------------
#
# Frames are *picked* by seeking, never by decoding the whole video: ffmpeg opens the input
# once per frame, each with its own ``-ss`` (an accurate seek: it decodes from the keyframe
# before that time and keeps the first picture at or after it), so a sheet of a two-hour film
# costs what a sheet of a minute does. Each picture is scaled to fit its tile, centred on
# black (the tile has the shape of the video as it is shown: its pixels' aspect ratio and its
# rotation applied, as ffmpeg applies them), and the pictures are written, in order, to a
# small lossless file. A second ffmpeg run lays them out in rows (``tile``) as one JPEG.
#
# ffmpeg keeps every input's decoder until it exits (about four decoded pictures each: 33 MB
# an input for 4K video), so frames are picked in runs of at most :data:`PICK_MEMORY`: one run
# for a sheet of any ordinary video, several for 100 frames of 4K.

#: The largest sheet made, a side and in all: JPEG allows 65535 pixels a side, but viewers
#: and browsers refuse pictures far smaller than that.
SHEET_MAX_SIDE = 16384
SHEET_MAX_PIXELS = 64_000_000
#: The sheet's JPEG quality (ffmpeg's ``-q:v``: 2 is the best, 31 the worst).
SHEET_QUALITY = 3
#: What a run that picks frames may take in memory (see :func:`pick_runs`).
PICK_MEMORY = 768 << 20
#: The frame rate assumed when a video does not say its own.
ASSUMED_FPS = 25.0
#: The picture size assumed when a video does not say its own (for the memory estimate).
ASSUMED_SIZE = (1920, 1080)
#: A video this long or shorter (seconds) is decoded whole when seeking missed some of its
#: frames (see :func:`decode_whole`).
DECODE_WHOLE_SECONDS = 600.0


class SheetTooLarge(ValueError):
    """The sheet asked for would be larger than :data:`SHEET_MAX_SIDE` or
    :data:`SHEET_MAX_PIXELS`."""


@dataclass(frozen=True)
class SheetLayout:
    """Where the pictures of a contact sheet go: ``frames`` tiles of ``tile_width`` x
    ``tile_height`` pixels, ``columns`` to a row, in ``rows`` rows (the last one may be short,
    its empty tiles black)."""

    frames: int
    columns: int
    rows: int
    tile_width: int
    tile_height: int

    @property
    def width(self) -> int:
        return self.columns * self.tile_width

    @property
    def height(self) -> int:
        return self.rows * self.tile_height


def shown_size(width: int, height: int, sar: float = 1.0, rotation: int = 0) -> tuple[float, float]:
    """How a picture of ``width`` x ``height`` pixels is shown: its width stretched by its
    sample aspect ratio (a DVD's 720x480 is shown 16:9 or 4:3), turned a quarter when its
    display matrix says so (a phone's portrait video is stored landscape)."""
    shown = (width * (sar if sar > 0 else 1.0), float(height))
    return (shown[1], shown[0]) if rotation % 180 == 90 else shown


def sheet_layout(
    frames: int, columns: int, tile_width: int, shown: tuple[float, float]
) -> SheetLayout:
    """The layout of a sheet of ``frames`` pictures shown as ``shown`` (width, height), each
    ``tile_width`` wide (even) with the height that keeps its shape, rounded to even (JPEG
    stores colour at half resolution). Never more columns than frames. Raises
    :class:`SheetTooLarge`."""
    used = max(1, min(columns, frames))
    rows = math.ceil(frames / used)
    shown_width, shown_height = shown
    ratio = shown_height / shown_width if shown_width > 0 and shown_height > 0 else 9 / 16
    tile_height = max(2, 2 * round(tile_width * ratio / 2))
    layout = SheetLayout(frames, used, rows, tile_width, tile_height)
    if (
        max(layout.width, layout.height) > SHEET_MAX_SIDE
        or layout.width * layout.height > SHEET_MAX_PIXELS
    ):
        raise SheetTooLarge(
            f"the sheet would be {layout.width}x{layout.height} pixels ({used} columns of "
            f"{tile_width}x{tile_height} tiles, {rows} rows), more than a picture viewers open "
            f"({SHEET_MAX_SIDE} pixels a side, {SHEET_MAX_PIXELS // 1_000_000} megapixels); "
            "ask for fewer frames, more columns or a smaller width"
        )
    return layout


def sheet_times(
    frames: int,
    duration: float | None,
    video_end: float | None = None,
    fps: float | None = None,
) -> list[float]:
    """When the sheet's pictures are taken, in seconds: the middle of each of ``frames``
    equal slices of ``duration`` (the longest audio or video stream's) — evenly spaced, and
    never the very first picture (often black) nor the very last. None later than 1.5 frames
    before ``video_end`` (the video stream's own end, when known): a seek past the last
    picture finds nothing, so a clip with fewer pictures than ``frames`` shows some of them
    twice rather than leave tiles empty. A still picture or an unknown duration: all at 0."""
    if not duration or duration <= 0:
        return [0.0] * frames
    end = video_end if video_end and video_end > 0 else duration
    latest = max(0.0, end - 1.5 / (fps if fps and fps > 0 else ASSUMED_FPS))
    return [round(min((i + 0.5) * duration / frames, latest), 6) for i in range(frames)]


def pick_runs(frames: int, width: int | None, height: int | None) -> list[range]:
    """The frames (by number) each ffmpeg run picks: as many as fit in :data:`PICK_MEMORY`,
    an input costing about four decoded pictures of ``width`` x ``height`` (4:2:0) plus 2 MiB
    of demuxer and decoder."""
    w, h = (width, height) if width and height else ASSUMED_SIZE
    per_input = 4 * w * h * 3 // 2 + (2 << 20)
    size = max(1, min(frames, PICK_MEMORY // per_input))
    return [range(start, min(start + size, frames)) for start in range(0, frames, size)]


def sheet_bytes(layout: SheetLayout) -> int:
    """A generous estimate of what a sheet takes on the disk, its picked frames included
    (lossless, about a byte a pixel) until it is made."""
    tiles = layout.frames * layout.tile_width * layout.tile_height
    return 2 * tiles + (1 << 20)


def _fit(layout: SheetLayout) -> str:
    # Scaled to fit its tile, pixels made square (reset_sar weighs the input's aspect ratio),
    # even sizes (4:2:0), then centred on black.
    w, h = layout.tile_width, layout.tile_height
    return (
        f"scale={w}:{h}:force_original_aspect_ratio=decrease:force_divisible_by=2:reset_sar=1,"
        f"pad={w}:{h}:-1:-1:color=black,setsar=1"
    )


def _pieces_out(output: str) -> list[str]:
    """Where the picked pictures go: ``output``, one frame each, in FFV1 in NUT (lossless,
    small, quick to read back), their timestamps as the filter graph set them."""
    return ["-map", "[picked]", "-fps_mode", "passthrough", "-c:v", "ffv1", "-f", "nut", output]


def pick_frames_args(
    ffmpeg: str,
    input: str,
    stream: int,
    times: Sequence[float],
    layout: SheetLayout,
    output: str,
    *,
    step: float = 1.0,
) -> list[str]:
    """ffmpeg's argv that picks one picture of video stream ``stream`` at each of ``times``
    (an input per time, each seeking there), fits each to its tile, and writes them in order to
    ``output`` (FFV1 in NUT: lossless, small, quick to read back). The n-th picture is stamped
    ``n * step`` seconds (``step``: the media's length over the sheet's frames), so that
    ffmpeg's ``-progress`` says how much of the media the run has covered."""
    args = [*_head(ffmpeg), *_progress()]
    for t in times:
        # One decoding thread an input: the inputs are decoded one after the other anyway,
        # and threads multiply the memory each keeps.
        args += ["-threads", "1", "-ss", f"{t:.6f}", "-i", input]
    fit = _fit(layout)
    chains = [f"[{i}:{stream}]trim=end_frame=1,{fit}[f{i}]" for i in range(len(times))]
    joined = "".join(f"[f{i}]" for i in range(len(times)))
    graph = ";".join(
        [
            *chains,
            f"{joined}concat=n={len(times)}:v=1:a=0,settb=1/1000,setpts=N*{step:.6f}/TB[picked]",
        ]
    )
    return [*args, "-filter_complex", graph, *_pieces_out(output)]


def decode_whole(picked: int, frames: int, duration: float | None) -> bool:
    """Whether to pick the frames again by decoding the whole video, after seeking found
    ``picked`` of ``frames``. A seek finds nothing after the last keyframe of a stream: in a
    transport stream, which has no index, a clip with one keyframe yields no picture at all
    (and a clip's last slices none after its last keyframe). Decoding it whole finds them, at
    the cost of reading every frame: always when seeking found nothing, else only for a video
    of at most :data:`DECODE_WHOLE_SECONDS` (a long one with a damaged stretch keeps its
    black tiles rather than be decoded for an hour)."""
    if picked >= frames:
        return False
    return picked == 0 or (duration or 0.0) <= DECODE_WHOLE_SECONDS


def decode_whole_args(
    ffmpeg: str,
    input: str,
    stream: int,
    times: Sequence[float],
    layout: SheetLayout,
    output: str,
    *,
    step: float = 1.0,
) -> list[str]:
    """What :func:`pick_frames_args` writes, found by decoding video stream ``stream`` from
    its start instead of seeking: the first picture at or after each of ``times`` (evenly
    spaced by ``step`` from the first), at most one a picture. A register of ``select``
    holds how far the next time is."""
    first = times[0] if times else 0.0
    pick = f"select='if(gte(t,{first:.6f}+ld(0)),st(0,ld(0)+{step:.6f}))'"
    chain = (
        f"[0:{stream}]{pick},{_fit(layout)},settb=1/1000,setpts=N*{step:.6f}/TB,"
        f"trim=end_frame={len(times)}[picked]"
    )
    return [
        *_head(ffmpeg),
        *_progress(),
        "-i",
        input,
        "-filter_complex",
        chain,
        *_pieces_out(output),
    ]


def sheet_args(ffmpeg: str, pieces: Sequence[str], layout: SheetLayout, output: str) -> list[str]:
    """ffmpeg's argv that lays the pictures of ``pieces`` (what :func:`pick_frames_args`
    wrote), in order, out in rows as one JPEG. Fewer pictures than the layout's frames leave
    its last tiles black: the sheet keeps its size. No ``-progress``: the sheet is written at
    the end, in a moment."""
    args = _head(ffmpeg)
    for piece in pieces:
        args += ["-i", piece]
    tile = f"tile={layout.columns}x{layout.rows}:nb_frames={layout.frames}"
    inputs = "".join(f"[{i}:v]" for i in range(len(pieces)))
    joined = f"{inputs}concat=n={len(pieces)}:v=1:a=0," if len(pieces) > 1 else inputs
    return [
        *args,
        "-filter_complex",
        f"{joined}{tile}[sheet]",
        "-map",
        "[sheet]",
        "-frames:v",
        "1",
        "-q:v",
        str(SHEET_QUALITY),
        "-f",
        "mjpeg",
        output,
    ]
