"""What the media jobs read with PyAV: an input's streams (the probe), the closed captions its
video may carry, what its streams really hold, and an output read back to verify it.

Every file is opened through :func:`open_media`, which decodes tags that are not UTF-8
leniently: old AVI, RealMedia and WMA files carry Latin-1 tags, ffmpeg copies them into its
outputs, and PyAV raises ``UnicodeDecodeError`` on them otherwise — in the probe, and again in
the verification of an output that ffmpeg made.

Runs in a job's child: standard library, PyAV and the pure decisions of
:mod:`python_endpoints.jobs.ffmpeg` only. PyAV is imported where used (a warm spare imports it
ahead: see :func:`python_endpoints.jobs.media.warm_up`): the job catalogue, which the app
imports for every command, imports the jobs' modules, not what they run with.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs import wavfile
from python_endpoints.serving.child import JobFailed

if TYPE_CHECKING:
    from av.container import InputContainer, OutputContainer

#: How much of a video is decoded to find closed captions: a recording that has them carries
#: caption data (or its padding) in every frame from the first one.
CAPTION_PROBE_FRAMES = 150
CAPTION_PROBE_SECONDS = 10.0


def open_media(path: Path | str, format: str | None = None) -> InputContainer:
    """Open a media file for reading, its tags decoded leniently (a byte that is not UTF-8
    becomes U+FFFD). Every job opens media here."""
    import av

    return av.open(str(path), format=format, metadata_errors="replace")


def create_media(path: Path | str, format: str) -> OutputContainer:
    """Open a file for PyAV to write in ``format`` (a short file's audio, taken out in the
    job's process: :mod:`python_endpoints.jobs.audiodecode`). Media is opened here only."""
    import av

    return av.open(str(path), "w", format=format)


# --- probing ----------------------------------------------------------------------------------


def probe(path: str) -> ff.MediaInfo:
    """Read a file's container and streams with PyAV (no decoding). Raises :class:`JobFailed`:
    ``INPUT_MISSING`` when there is no such file, ``NOT_MEDIA`` when FFmpeg cannot read it or
    only guessed by its name what it is."""
    import av.error

    p = Path(path)
    if not p.exists():
        raise JobFailed(
            f"the input {path} does not exist: it was moved, renamed or deleted; "
            "put it back or import it again, then retry",
            ErrorType.INPUT_MISSING,
        )
    if not p.is_file():
        raise JobFailed(f"the input {path} is not a file; choose a media file", ErrorType.NOT_MEDIA)
    try:
        container = open_media(p)
    except FileNotFoundError as exc:
        raise JobFailed(
            f"the input {path} disappeared while being read; put it back, then retry",
            ErrorType.INPUT_MISSING,
        ) from exc
    except PermissionError as exc:
        raise JobFailed(
            f"cannot read {path}: permission denied; give Fredica read access, then retry",
            ErrorType.IO_ERROR,
        ) from exc
    except (av.error.FFmpegError, OSError) as exc:
        raise JobFailed(
            f"{p.name} is not a media file FFmpeg can read ({reason(exc)}); "
            "check that it is a complete video or audio file",
            ErrorType.NOT_MEDIA,
        ) from exc
    with container:
        streams = tuple(_stream_info(s) for s in container.streams)
        duration = container.duration / 1e6 if container.duration else None
        format_name = container.format.name
        chapters = _chapters(container)
    if duration is None:  # the container does not say: its longest stream may
        duration = max((s.duration for s in streams if s.duration), default=None)
    info = ff.MediaInfo(format_name, duration, p.stat().st_size, streams, chapters)
    guessed = info.guessed_as
    if guessed is not None:
        raise JobFailed(
            f"{p.name} is not a media file FFmpeg can read: it only guessed from the file's "
            f"name that it is {guessed}, and found nothing it could decode. Headerless audio "
            "or video (raw PCM, YUV) says nothing of its format: convert it to a WAV or a "
            "video file with its sample rate, channels or frame size given",
            ErrorType.NOT_MEDIA,
        )
    if not info.is_media:
        raise JobFailed(
            f"{p.name} is not a media file (FFmpeg finds no video, audio or subtitles in it); "
            "choose a video or audio file",
            ErrorType.NOT_MEDIA,
        )
    return info


def reason(exc: BaseException) -> str:
    """An OS or FFmpeg error in words."""
    return str(getattr(exc, "strerror", None) or exc)


def _chapters(container: Any) -> tuple[ff.Chapter, ...]:
    """The container's chapters; none when PyAV cannot read them (a probe describes what it
    can and never fails for chapters)."""
    found = []
    for raw in _attr(container.chapters) or ():
        try:
            made = ff.chapter(
                int(raw["start"]), int(raw["end"]), raw["time_base"], dict(raw["metadata"])
            )
        except (KeyError, TypeError, ValueError):
            continue
        if made is not None:
            found.append(made)
    return tuple(found)


def _stream_info(stream: Any) -> ff.StreamInfo:
    from av.stream import Disposition

    # PyAV's streams differ by type (and data/attachment streams may have no codec context):
    # read each attribute defensively, a probe must describe whatever it finds.
    cc: Any = getattr(stream, "codec_context", None)
    codec = _attr(lambda: cc.codec.canonical_name) or _attr(lambda: cc.name) or "unknown"
    metadata = dict(_attr(lambda: stream.metadata) or {})
    language = _attr(lambda: stream.language) or metadata.get("language")
    flags = int(_attr(lambda: stream.disposition) or 0)
    kind = str(_attr(lambda: stream.type) or "data")
    duration: float | None
    if stream.duration and stream.time_base:
        duration = float(stream.duration * stream.time_base)
    else:
        duration = ff.parse_clock(str(metadata.get("DURATION") or metadata.get("duration") or ""))
    decodable = _decodable(codec)
    info: dict[str, Any] = {}
    # What decides whether the compatible profile copies a stream (see ff.fits_profile).
    profile = _attr(lambda: cc.profile) or None
    level = _attr(lambda: cc.level)
    if kind == "video":
        rate = _attr(lambda: stream.average_rate) or _attr(lambda: stream.guessed_rate)
        info = {
            "width": _attr(lambda: cc.width) or None,
            "height": _attr(lambda: cc.height) or None,
            "fps": round(float(rate), 3) if rate else None,
            "profile": str(profile) if profile else None,
            "level": int(level) if isinstance(level, int) and level > 0 else None,
            "pix_fmt": _attr(lambda: cc.format.name) or None,
        }
    elif kind == "audio":
        info = {
            "sample_rate": _attr(lambda: cc.sample_rate) or None,
            "channels": _attr(lambda: cc.layout.nb_channels) or None,
            "profile": str(profile) if profile else None,
        }
        # FFmpeg reads a stream's sample rate from its first packets: none means none came
        # (an undecodable codec may say nothing either: that one is reported as such).
        info["empty"] = decodable and not info["sample_rate"]
    elif kind == "subtitle":
        info = {"text": ff.is_text_subtitle(codec, _attr(lambda: bool(cc.codec.text_sub)))}
    return ff.StreamInfo(
        index=int(stream.index),
        type=kind,
        codec=codec,
        language=None if not language or language == "und" else str(language),
        title=metadata.get("title") or None,
        decodable=decodable,
        attached_pic=bool(flags & Disposition.attached_pic.value),
        default=bool(flags & Disposition.default.value),
        duration=duration,
        **info,
    )


def _attr(get: Callable[[], Any]) -> Any:
    import av.error

    try:
        return get()
    except (AttributeError, ValueError, TypeError, av.error.FFmpegError):
        return None


def _decodable(codec: str) -> bool:
    import av

    try:
        av.codec.Codec(codec, "r")
    except (av.codec.codec.UnknownCodecError, ValueError):
        return False
    return True


def has_captions(path: str, index: int) -> bool:
    """Whether video stream ``index`` carries closed captions (ATSC A/53 caption data in its
    frames), from its first frames. Decodes at most :data:`CAPTION_PROBE_FRAMES` frames or
    :data:`CAPTION_PROBE_SECONDS`; a stream that cannot be decoded has none."""
    import av.error

    try:
        with open_media(path) as container:
            stream = container.streams[index]
            if not isinstance(stream, av.VideoStream):
                return False
            stream.thread_type = "AUTO"
            for count, frame in enumerate(container.decode(stream)):
                if any(_side_data_name(sd) == "A53_CC" for sd in frame.side_data):
                    return True
                seconds = frame.time if frame.time is not None else 0.0
                if count + 1 >= CAPTION_PROBE_FRAMES or seconds >= CAPTION_PROBE_SECONDS:
                    break
    except (av.error.FFmpegError, OSError, IndexError, ValueError):
        return False
    return False


def _side_data_name(side_data: Any) -> str:
    kind = getattr(side_data, "type", None)
    return str(getattr(kind, "name", kind))


def holds(path: str, indices: Collection[int]) -> float | None:
    """How long streams ``indices`` of a file actually last, whatever its header says: the
    longest of them, each the sum of its packets' durations (what a decoder turns into
    pictures or sound; a stretch missing in the middle does not count), or the span of its
    timestamps when packets say no duration. Demuxes the whole file, decodes nothing. None when
    it cannot be read."""
    import av.error

    wanted = set(indices)
    summed: dict[int, float] = {}
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    timed: dict[int, bool] = {}
    try:
        container = open_media(path)
    except (av.error.FFmpegError, OSError):
        return None
    with container:
        streams = [s for s in container.streams if s.index in wanted]
        # A file cut short ends in an error where its data ends: what came before counts.
        with contextlib.suppress(av.error.FFmpegError, OSError):
            for packet in container.demux(streams):
                if packet.pts is None or packet.time_base is None:
                    continue
                i = packet.stream.index
                base = float(packet.time_base)
                span = (packet.duration or 0) * base
                start = packet.pts * base
                summed[i] = summed.get(i, 0.0) + span
                first[i] = min(first.get(i, start), start)
                last[i] = max(last.get(i, start + span), start + span)
                timed[i] = timed.get(i, True) and bool(packet.duration)
    lengths = [summed[i] if timed[i] else last[i] - first[i] for i in summed]
    return max(lengths, default=None)


# --- reading an output back -------------------------------------------------------------------


@dataclass(frozen=True)
class Verified:
    """An output that passed :func:`verify_media`: how long it lasts, and what the result
    should say of the input (None, or that its header is wrong)."""

    duration: float | None
    note: str | None = None
    declared: float | None = None


def verify_failed(name: str, why: str, error_type: str = ErrorType.FFMPEG_FAILED) -> JobFailed:
    """An output that is not what its input should give. Never retried: ffmpeg makes the same
    output of the same input again."""
    return JobFailed(f"the output {name} failed verification: {why}", error_type)


def verify_media(
    path: Path,
    fmt: str,
    *,
    name: str,
    declared: float | None,
    input_holds: Callable[[], float | None],
    streams: dict[str, int],
    sample_rate: int | None = None,
    channels: int | None = None,
) -> Verified:
    """Check a written output (``path``, to be put in place as ``name``): it opens, has
    ``streams`` (type → count) and the audio format asked for, and lasts as long as the input.

    Lengths are those of the longest audio or video stream, never the container's. The output
    must last what the input's header ``declared``; when it does not, the input is measured
    (``input_holds``, which demuxes it): an output as long as what the input holds is right —
    the header promised more (or less) than the file holds, and the result says so. Raises
    ``FFMPEG_FAILED`` otherwise (the output lost something the input holds)."""
    if fmt == "wav":
        actual: float | None = _read_back_wav(path, name, streams, sample_rate, channels)
    else:
        actual = _read_back(path, fmt, name, streams, sample_rate, channels)
    verdict = ff.duration_verdict(actual, declared)
    if verdict == "ok":
        return Verified(actual)
    measured = input_holds()
    verdict = ff.duration_verdict(actual, declared, measured)
    lasts = "an unknown time" if actual is None else f"{actual:.2f} s"
    if verdict == "mismatch" or measured is None or declared is None:
        holds_text = "" if measured is None else f", and holds {measured:.2f} s"
        raise verify_failed(
            name,
            f"it lasts {lasts} where the input's header says {declared or 0:.2f} s"
            f"{holds_text}: ffmpeg lost part of the input; check that the input plays to the "
            "end, or convert it with another program",
        )
    which = "shorter" if verdict == "input_shorter" else "longer"
    return Verified(
        actual,
        f"the input is {which} than its header claims: it holds {measured:.2f} s where its "
        f"header says {declared:.2f} s; the output has all of it ({lasts})",
        declared,
    )


def _read_back(
    path: Path,
    fmt: str,
    name: str,
    streams: dict[str, int],
    sample_rate: int | None,
    channels: int | None,
) -> float | None:
    """Open the output with PyAV, check its streams and audio format: how long it lasts."""
    import av.error

    try:
        container = open_media(path, format=fmt)
    except (av.error.FFmpegError, OSError) as exc:
        raise verify_failed(name, f"it cannot be read back ({reason(exc)})") from exc
    with container:
        by_stream = [
            float(s.duration * s.time_base)
            for s in container.streams
            if s.type in ("audio", "video") and s.duration and s.time_base
        ]
        actual = max(by_stream, default=None)
        if actual is None and container.duration:
            actual = container.duration / 1e6
        for kind, count in streams.items():
            found = sum(1 for s in container.streams if s.type == kind)
            if found != count:
                raise verify_failed(name, f"it has {found} {kind} streams, {count} expected")
        if sample_rate or channels:
            audio = container.streams.audio[0]
            got = (audio.codec_context.sample_rate, audio.codec_context.layout.nb_channels)
            _check_audio(name, got, sample_rate, channels)
    return actual


def _read_back_wav(
    path: Path,
    name: str,
    streams: dict[str, int],
    sample_rate: int | None,
    channels: int | None,
) -> float:
    """What :func:`_read_back` checks, from a WAV file's header (:mod:`.wavfile`)."""
    try:
        header = wavfile.read(path)
    except (wavfile.WavError, OSError) as exc:
        raise verify_failed(name, f"it cannot be read back ({reason(exc)})") from exc
    for kind, count in streams.items():
        found = 1 if kind == "audio" else 0  # a WAV file holds one audio stream
        if found != count:
            raise verify_failed(name, f"it has {found} {kind} streams, {count} expected")
    _check_audio(name, (header.sample_rate, header.channels), sample_rate, channels)
    return header.duration


def _check_audio(
    name: str, got: tuple[int, int], sample_rate: int | None, channels: int | None
) -> None:
    if got != (sample_rate or got[0], channels or got[1]):
        raise verify_failed(name, f"it has {got[0]} Hz and {got[1]} channels")


def count_cues(path: Path, fmt: ff.SubtitleFormat) -> int:
    """The cues in a subtitle file, read back with PyAV (0 for an empty or unreadable one)."""
    import av.error

    try:
        container = open_media(path, format=ff.SUBTITLE_MUXERS[fmt][1])
    except (av.error.FFmpegError, OSError):
        return 0
    with container:
        if not container.streams.subtitles:
            return 0
        stream = container.streams.subtitles[0]
        return sum(1 for packet in container.demux(stream) if packet.size)


def count_packets(path: str, index: int) -> int:
    """How many packets with data stream ``index`` of a file has."""
    with open_media(path) as container:
        stream = container.streams[index]
        return sum(1 for packet in container.demux(stream) if packet.size)


# --- pictures (a contact sheet) ---------------------------------------------------------------

#: How many packets of a video stream are read, at most, to find its first picture.
FIRST_PICTURE_PACKETS = 300


@dataclass(frozen=True)
class Picture:
    """The first picture a video stream decodes to: its codec, its size in pixels, and how it
    is shown — its sample aspect ratio (1.0: square pixels) and the rotation its display
    matrix gives it (degrees counter-clockwise)."""

    codec: str
    width: int
    height: int
    sar: float = 1.0
    rotation: int = 0


def first_picture(path: Path | str, index: int | None = None) -> Picture | None:
    """Decode the first picture of video stream ``index`` (None: the first video stream) of a
    file — a video, or a picture such as a JPEG. None when it has none that decodes within
    :data:`FIRST_PICTURE_PACKETS` packets, or cannot be read."""
    import av.error

    try:
        with open_media(path) as container:
            stream = container.streams.video[0] if index is None else container.streams[index]
            if not isinstance(stream, av.VideoStream):
                return None
            for count, packet in enumerate(container.demux(stream)):
                for frame in packet.decode():
                    cc = stream.codec_context
                    sar = cc.sample_aspect_ratio or stream.sample_aspect_ratio
                    return Picture(
                        codec=cc.name,
                        width=frame.width,
                        height=frame.height,
                        sar=float(sar) if sar else 1.0,
                        rotation=round(frame.rotation or 0),
                    )
                if count >= FIRST_PICTURE_PACKETS:
                    break
    except (av.error.FFmpegError, OSError, IndexError, ValueError, TypeError):
        return None
    return None


def count_pictures(path: Path | str) -> int:
    """How many pictures the first video stream of a file holds (packets with data: one a
    picture in the files Fredica writes), 0 for a file that has none or cannot be read — an
    ffmpeg run that found no picture may write an empty file, or none."""
    import av.error

    try:
        with open_media(path) as container:
            if not container.streams.video:
                return 0
            stream = container.streams.video[0]
            return sum(1 for packet in container.demux(stream) if packet.size)
    except (av.error.FFmpegError, OSError):
        return 0
