"""Media jobs run in a child process: PROBE, TRANSCODE_MP4, EXTRACT_AUDIO, EXTRACT_SUBTITLES.

Runs in the child: standard library, PyAV and the bundled ffmpeg only. Params were validated by
the server (:mod:`python_endpoints.params`). The decisions (which streams are copied, ffmpeg's
argv, progress parsing, tolerances) are pure functions in :mod:`python_endpoints.jobs.ffmpeg`;
where outputs go and how they are put in place, in :mod:`python_endpoints.jobs.outputs`. This
module is the shell around them: it probes with PyAV, runs ffmpeg, verifies, commits.

Every output goes through a temporary name and is renamed into place only once verified with
PyAV; a failed or cancelled job removes its temporary files and leaves the final path alone.
ffmpeg is started through :func:`python_endpoints.child.start_process`, so it dies with the
child however the child dies. A cancel is seen by polling ``ctx.cancelled`` while ffmpeg runs;
a pause needs nothing here: the endpoint suspends the whole process tree, ffmpeg included.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import av
import av.error
import imageio_ffmpeg
from av.stream import Disposition

from python_endpoints.child import ChildContext, JobFailed, start_process, untrack_process
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs import outputs

PROBE = "PROBE"
TRANSCODE_MP4 = "TRANSCODE_MP4"
EXTRACT_AUDIO = "EXTRACT_AUDIO"
EXTRACT_SUBTITLES = "EXTRACT_SUBTITLES"

#: Free space a job leaves on the disk by default (params: ``keep_free_bytes``).
DEFAULT_KEEP_FREE = 256 << 20
#: How often the job looks at the cancel flag while ffmpeg runs.
POLL = 0.1
#: At most this many progress reports a second.
REPORTS_PER_SECOND = 5
#: Lines of ffmpeg's stderr kept, and quoted in an error.
STDERR_KEPT = 40
STDERR_QUOTED = 5
#: A short ffmpeg run (the encoder list, a one-frame test encode) that takes longer is stuck.
QUICK_TIMEOUT = 30.0
#: Seconds a terminated ffmpeg gets to exit before it is killed.
STOP_GRACE = 2.0


# --- probing ----------------------------------------------------------------------------------


def probe(path: str) -> ff.MediaInfo:
    """Read a file's container and streams with PyAV (no decoding). Raises :class:`JobFailed`:
    ``INPUT_MISSING`` when there is no such file, ``NOT_MEDIA`` when FFmpeg cannot read it."""
    p = Path(path)
    if not p.exists():
        raise JobFailed(
            f"the input {path} does not exist: it was moved, renamed or deleted; "
            "put it back or import it again, then retry",
            "INPUT_MISSING",
        )
    if not p.is_file():
        raise JobFailed(f"the input {path} is not a file; choose a media file", "NOT_MEDIA")
    try:
        container = av.open(str(p), metadata_errors="replace")
    except FileNotFoundError as exc:
        raise JobFailed(
            f"the input {path} disappeared while being read; put it back, then retry",
            "INPUT_MISSING",
        ) from exc
    except PermissionError as exc:
        raise JobFailed(
            f"cannot read {path}: permission denied; give Fredica read access, then retry",
            "IO_ERROR",
        ) from exc
    except (av.error.FFmpegError, OSError) as exc:
        raise JobFailed(
            f"{p.name} is not a media file FFmpeg can read ({_reason(exc)}); "
            "check that it is a complete video or audio file",
            "NOT_MEDIA",
        ) from exc
    with container:
        streams = tuple(_stream_info(s) for s in container.streams)
        duration = container.duration / 1e6 if container.duration else None
        format_name = container.format.name
    if duration is None:  # the container does not say: its longest stream may
        duration = max((s.duration for s in streams if s.duration), default=None)
    info = ff.MediaInfo(format_name, duration, p.stat().st_size, streams)
    if not info.is_media:
        raise JobFailed(
            f"{p.name} is not a media file (FFmpeg finds no video, audio or subtitles in it); "
            "choose a video or audio file",
            "NOT_MEDIA",
        )
    return info


def _reason(exc: BaseException) -> str:
    return str(getattr(exc, "strerror", None) or exc)


def _stream_info(stream: Any) -> ff.StreamInfo:
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
    info: dict[str, Any] = {}
    if kind == "video":
        rate = _attr(lambda: stream.average_rate) or _attr(lambda: stream.guessed_rate)
        info = {
            "width": _attr(lambda: cc.width) or None,
            "height": _attr(lambda: cc.height) or None,
            "fps": round(float(rate), 3) if rate else None,
        }
    elif kind == "audio":
        info = {
            "sample_rate": _attr(lambda: cc.sample_rate) or None,
            "channels": _attr(lambda: cc.layout.nb_channels) or None,
        }
    elif kind == "subtitle":
        info = {"text": ff.is_text_subtitle(codec, _attr(lambda: bool(cc.codec.text_sub)))}
    return ff.StreamInfo(
        index=int(stream.index),
        type=kind,
        codec=codec,
        language=None if not language or language == "und" else str(language),
        title=metadata.get("title") or None,
        decodable=_decodable(codec),
        attached_pic=bool(flags & Disposition.attached_pic.value),
        default=bool(flags & Disposition.default.value),
        duration=duration,
        **info,
    )


def _attr(get: Callable[[], Any]) -> Any:
    try:
        return get()
    except (AttributeError, ValueError, TypeError, av.error.FFmpegError):
        return None


def _decodable(codec: str) -> bool:
    try:
        av.codec.Codec(codec, "r")
    except (av.codec.codec.UnknownCodecError, ValueError):
        return False
    return True


# --- running ffmpeg ---------------------------------------------------------------------------


def ffmpeg_binary(params: dict[str, Any]) -> str:
    """The ffmpeg to run: the params' (the settings'), else the one imageio-ffmpeg bundles."""
    if params.get("ffmpeg"):
        return str(params["ffmpeg"])
    try:
        return str(imageio_ffmpeg.get_ffmpeg_exe())
    except RuntimeError as exc:
        raise JobFailed(
            f"no ffmpeg found ({exc}); set the path of an ffmpeg binary in the settings",
            "EXECUTOR_ERROR",
        ) from exc


@dataclass(frozen=True)
class FfmpegRun:
    """How an ffmpeg run ended."""

    returncode: int
    #: The last lines of its stderr.
    stderr: list[str]
    cancelled: bool


def _start(args: list[str]) -> subprocess.Popen[bytes]:
    try:
        return start_process(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise JobFailed(
            f"cannot run ffmpeg {args[0]!r}: {_reason(exc)}; fix the ffmpeg path in the "
            "settings, or clear it to use the bundled ffmpeg",
            "EXECUTOR_ERROR",
        ) from exc


def _pump(stream: IO[bytes] | None, sink: Callable[[str], None]) -> None:
    if stream is None:
        return
    for raw in iter(stream.readline, b""):
        sink(raw.decode("utf-8", "replace").rstrip())


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate, then kill: a terminated ffmpeg still writes its trailer, briefly."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait()


def run_ffmpeg(
    args: list[str], ctx: ChildContext, *, duration: float | None, verb: str
) -> FfmpegRun:
    """Run ffmpeg (with ``-progress pipe:1`` in ``args``), reporting progress at most 5 times
    a second, and stop it if the job is cancelled."""
    process = _start(args)
    lines: queue.Queue[str | None] = queue.Queue()
    stderr: collections.deque[str] = collections.deque(maxlen=STDERR_KEPT)

    def read_progress() -> None:
        _pump(process.stdout, lines.put)
        lines.put(None)

    readers = [
        threading.Thread(target=read_progress, daemon=True),
        threading.Thread(target=_pump, args=(process.stderr, stderr.append), daemon=True),
    ]
    for reader in readers:
        reader.start()
    parser = ff.ProgressParser()
    throttle = ff.Throttle(1.0 / REPORTS_PER_SECOND)
    cancelled = False
    with process:  # closes its pipes on the way out
        try:
            while True:
                if ctx.cancelled:
                    cancelled = True
                    break
                try:
                    line = lines.get(timeout=POLL)
                except queue.Empty:
                    continue
                if line is None:
                    break
                snapshot = parser.feed(line)
                if snapshot is not None and (snapshot.done or throttle.ready(time.monotonic())):
                    percent = snapshot.percent(duration)
                    ctx.progress(percent, ff.status_text(verb, percent, snapshot.speed))
        finally:
            _stop(process)
            for reader in readers:
                reader.join()
            untrack_process(process)
    return FfmpegRun(process.returncode, list(stderr), cancelled)


def _run_quick(args: list[str]) -> tuple[int, str]:
    """A short ffmpeg run: its exit code and stdout (-1 when it could not run in time)."""
    try:
        process = start_process(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return -1, ""
    with process:
        try:
            out, _ = process.communicate(timeout=QUICK_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return -1, ""
        finally:
            untrack_process(process)
    return process.returncode, out.decode("utf-8", "replace")


def list_encoders(binary: str) -> dict[str, str]:
    """The encoders an ffmpeg binary was built with (``{name: V|A|S}``)."""
    code, out = _run_quick(ff.encoders_args(binary))
    return ff.parse_encoders(out) if code == 0 else {}


def encoder_works(binary: str, encoder: str) -> bool:
    """Whether ``encoder`` encodes one frame on this machine. A hardware encoder is listed
    whenever ffmpeg was built with it, with or without the GPU and driver it needs."""
    return _run_quick(ff.trial_encode_args(binary, encoder))[0] == 0


_hardware: dict[str, str | None] = {}


def hardware_encoder(binary: str) -> str | None:
    """The best hardware H.264 encoder that works here, or None; tested once per binary for
    the life of this process."""
    if binary not in _hardware:
        candidates = ff.hardware_candidates(list_encoders(binary))
        _hardware[binary] = next((e for e in candidates if encoder_works(binary, e)), None)
    return _hardware[binary]


def warm_up(endpoint: str) -> None:
    """In a warm spare, before its job arrives: find the bundled ffmpeg (imageio-ffmpeg runs
    ``ffmpeg -version`` once per process, ~20 ms) so that the job does not wait for it."""
    with contextlib.suppress(JobFailed):
        ffmpeg_binary({})


def _ffmpeg_failed(run: FfmpegRun, what: str) -> JobFailed:
    kind = ff.classify_failure(run.stderr)
    tail = " | ".join(line for line in run.stderr[-STDERR_QUOTED:] if line) or "no message"
    advice = {
        "NO_SPACE": "the disk is full; free some space, then retry",
        "NOT_MEDIA": "the input is damaged or not media; check that it plays",
        "UNSUPPORTED_MEDIA": "this ffmpeg cannot decode the input; set another in the settings",
    }.get(kind, "check that the input plays to the end, then retry")
    return JobFailed(
        f"ffmpeg failed while {what} (exit code {run.returncode}): {tail}; {advice}", kind
    )


# --- space, verification, committing ----------------------------------------------------------


def check_space(directory: Path, needed: int, keep_free: int) -> None:
    """Refuse to start without room for the output (``NO_SPACE``)."""
    free = shutil.disk_usage(directory).free
    if not ff.has_room(free, needed, keep_free):
        raise JobFailed(
            f"not enough free space in {directory}: the output needs about "
            f"{ff.human_bytes(needed)}, {ff.human_bytes(free)} is free and "
            f"{ff.human_bytes(keep_free)} must stay free; free some space or move the library "
            "to a larger disk, then retry",
            "NO_SPACE",
        )


def _verify_failed(path: Path, why: str) -> JobFailed:
    return JobFailed(f"the output {path.name} failed verification: {why}", "VERIFY_FAILED")


def verify_media(
    path: Path,
    fmt: str,
    *,
    duration: float | None,
    streams: dict[str, int],
    sample_rate: int | None = None,
    channels: int | None = None,
) -> float | None:
    """Check a written output with PyAV: it opens, has ``streams`` (type → count), lasts as
    long as ``duration`` (within :func:`~python_endpoints.jobs.ffmpeg.duration_tolerance`),
    and has the audio format asked for. Returns its duration."""
    try:
        container = av.open(str(path), format=fmt)
    except (av.error.FFmpegError, OSError) as exc:
        raise _verify_failed(path, f"it cannot be read back ({_reason(exc)})") from exc
    with container:
        actual = container.duration / 1e6 if container.duration else None
        for kind, count in streams.items():
            found = sum(1 for s in container.streams if s.type == kind)
            if found != count:
                raise _verify_failed(path, f"it has {found} {kind} streams, {count} expected")
        if sample_rate or channels:
            audio = container.streams.audio[0]
            got = (audio.codec_context.sample_rate, audio.codec_context.layout.nb_channels)
            if got != (sample_rate or got[0], channels or got[1]):
                raise _verify_failed(path, f"it has {got[0]} Hz and {got[1]} channels")
    if not ff.duration_ok(actual, duration):
        lasts = "an unknown time" if actual is None else f"{actual:.2f} s"
        raise _verify_failed(
            path,
            f"it lasts {lasts} where the input lasts {duration:.2f} s; the input may be "
            "damaged or cut short: check that it plays to the end, then retry",
        )
    return actual


def count_cues(path: Path, fmt: ff.SubtitleFormat) -> int:
    """The cues in a subtitle file, read back with PyAV (0 for an empty or unreadable one)."""
    try:
        container = av.open(str(path), format=ff.SUBTITLE_MUXERS[fmt][1])
    except (av.error.FFmpegError, OSError):
        return 0
    with container:
        if not container.streams.subtitles:
            return 0
        stream = container.streams.subtitles[0]
        return sum(1 for packet in container.demux(stream) if packet.size)


def _count_packets(path: str, index: int) -> int:
    with av.open(path) as container:
        stream = container.streams[index]
        return sum(1 for packet in container.demux(stream) if packet.size)


def _distinct(input: Path, output: Path) -> None:
    if os.path.normcase(os.path.abspath(input)) == os.path.normcase(os.path.abspath(output)):
        raise JobFailed(
            f"the output {output} is the input itself; choose another output path",
            "PAYLOAD_ERROR",
        )


def _make_dir(directory: Path) -> None:
    with outputs.writing(directory):
        directory.mkdir(parents=True, exist_ok=True)


def _size(path: Path) -> int:
    return path.stat().st_size


# --- the jobs ---------------------------------------------------------------------------------


def probe_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """PROBE: streams, container format, duration (s), size, kind, text subtitle count."""
    info = probe(params["input"])
    ctx.progress(100.0, "probed")
    return {"outputs": [], **info.as_dict()}


def transcode_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """TRANSCODE_MP4: stream-copy what fits MP4, re-encode the rest to H.264/AAC, text
    subtitles to mov_text, faststart; verify; put in place. See
    :mod:`python_endpoints.jobs.ffmpeg` for the rules."""
    input, output = Path(params["input"]), Path(params["output"])
    _distinct(input, output)
    info = probe(params["input"])
    try:
        plan = ff.plan_transcode(info.streams, params.get("mode", "auto"))
    except ff.UnsupportedMedia as exc:
        raise JobFailed(f"{input.name}: {exc}", "UNSUPPORTED_MEDIA") from None
    binary = ffmpeg_binary(params)
    _make_dir(output.parent)
    needed = ff.estimate_output_bytes(TRANSCODE_MP4, input_size=info.size, duration=info.duration)
    check_space(output.parent, needed, params.get("keep_free_bytes", DEFAULT_KEEP_FREE))
    encoder = "copy"
    if plan.encodes_video:
        known = params.get("hardware_encoder")
        if not params.get("hardware", True) or known == "none":
            encoder = ff.CPU_H264_ENCODER
        elif known:
            encoder = str(known)
        else:
            ctx.progress(0.0, "looking for a hardware encoder")
            encoder = hardware_encoder(binary) or ff.CPU_H264_ENCODER
    verb = "transcoding" if plan.mode == "reencode" else "remuxing"
    temp = outputs.temp_path(output, outputs.part_id(params))

    def attempt(with_encoder: str) -> FfmpegRun:
        args = ff.transcode_args(
            binary,
            str(input),
            str(temp),
            plan,
            encoder=with_encoder,
            crf=int(params.get("crf", 23)),
            preset=str(params.get("preset", "veryfast")),
        )
        return run_ffmpeg(args, ctx, duration=info.duration, verb=verb)

    try:
        if ctx.cancelled:
            return None
        ctx.progress(0.0, verb)
        run = attempt(encoder)
        if run.returncode and not run.cancelled and encoder not in ("copy", ff.CPU_H264_ENCODER):
            # The hardware encoder passed its one-frame test but failed on the real thing
            # (a driver, a size it does not take): once more on the CPU.
            encoder = ff.CPU_H264_ENCODER
            outputs.remove_quietly(temp)
            ctx.progress(0.0, f"{verb} (hardware encoder failed, using the CPU)")
            run = attempt(encoder)
        if run.cancelled:
            return None
        if run.returncode:
            raise _ffmpeg_failed(run, f"{verb} {input.name}")
        streams = {kind: plan.count(kind) for kind in ("video", "audio", "subtitle")}
        duration = verify_media(temp, "mp4", duration=info.duration, streams=streams)
        with outputs.writing(output):
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)
    with outputs.writing(output):
        outputs.write_sidecar(output, input, TRANSCODE_MP4, params)
    ctx.progress(100.0, "done")
    return {
        "outputs": [str(output)],
        "mode": plan.mode,
        "video_encoder": encoder,
        "duration": duration,
        "bytes": _size(output),
        "dropped": [{"index": i, "reason": why} for i, why in plan.dropped],
    }


def extract_audio_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """EXTRACT_AUDIO: the main audio stream to 16-bit PCM WAV (or FLAC) at the rate and
    channels asked for (16 kHz mono by default: what speech-to-text wants)."""
    input, output = Path(params["input"]), Path(params["output"])
    _distinct(input, output)
    info = probe(params["input"])
    stream = info.main_audio()
    if stream is None:
        raise JobFailed(
            f"{input.name} has no audio stream, so there is no audio to extract; "
            "check that it is the right file",
            "NO_AUDIO",
        )
    if not stream.decodable:
        raise JobFailed(
            f"{input.name}: its audio ({stream.codec}) cannot be decoded by this ffmpeg; "
            "set another ffmpeg in the settings",
            "UNSUPPORTED_MEDIA",
        )
    fmt = params.get("format", "wav")
    rate, channels = int(params.get("sample_rate", 16000)), int(params.get("channels", 1))
    expected = stream.duration or info.duration
    binary = ffmpeg_binary(params)
    _make_dir(output.parent)
    needed = ff.estimate_output_bytes(
        EXTRACT_AUDIO,
        input_size=info.size,
        duration=expected,
        sample_rate=rate,
        channels=channels,
        audio_format=fmt,
    )
    check_space(output.parent, needed, params.get("keep_free_bytes", DEFAULT_KEEP_FREE))
    temp = outputs.temp_path(output, outputs.part_id(params))
    args = ff.extract_audio_args(
        binary,
        str(input),
        str(temp),
        stream=stream.index,
        format=fmt,
        sample_rate=rate,
        channels=channels,
    )
    try:
        if ctx.cancelled:
            return None
        ctx.progress(0.0, "extracting audio")
        run = run_ffmpeg(args, ctx, duration=expected, verb="extracting audio")
        if run.cancelled:
            return None
        if run.returncode:
            raise _ffmpeg_failed(run, f"extracting the audio of {input.name}")
        duration = verify_media(
            temp,
            fmt,
            duration=expected,
            streams={"audio": 1, "video": 0},
            sample_rate=rate,
            channels=channels,
        )
        with outputs.writing(output):
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)
    with outputs.writing(output):
        outputs.write_sidecar(output, input, EXTRACT_AUDIO, params)
    ctx.progress(100.0, "done")
    return {
        "outputs": [str(output)],
        "duration": duration,
        "bytes": _size(output),
        "format": fmt,
        "sample_rate": rate,
        "channels": channels,
        "stream": stream.index,
    }


def extract_subtitles_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """EXTRACT_SUBTITLES: every embedded text subtitle stream to SRT and/or WebVTT, with the
    stream's own timestamps. Bitmap subtitles are skipped (and listed as such); a file with no
    text subtitles is a success with no outputs."""
    input, output_dir = Path(params["input"]), Path(params["output_dir"])
    info = probe(params["input"])
    skipped = [
        {"index": s.index, "codec": s.codec, "reason": "bitmap subtitles cannot become text"}
        for s in info.of_type("subtitle")
        if not s.text
    ]
    streams = info.text_subtitles
    if not streams:
        ctx.progress(100.0, "no text subtitles")
        return {"outputs": [], "streams": [], "skipped": skipped}
    formats: list[ff.SubtitleFormat] = list(dict.fromkeys(params.get("formats", ["srt", "vtt"])))
    stem = str(params["stem"])
    files = {
        (s.index, fmt): outputs.subtitle_path(output_dir, stem, s.index, s.language, fmt)
        for s in streams
        for fmt in formats
    }
    part = outputs.part_id(params)
    temps = {key: outputs.temp_path(final, part) for key, final in files.items()}
    binary = ffmpeg_binary(params)
    _make_dir(output_dir)
    needed = ff.estimate_output_bytes(
        EXTRACT_SUBTITLES, input_size=info.size, duration=info.duration, files=len(files)
    )
    check_space(output_dir, needed, params.get("keep_free_bytes", DEFAULT_KEEP_FREE))
    args = ff.extract_subtitles_args(
        binary, str(input), [(index, fmt, str(temp)) for (index, fmt), temp in temps.items()]
    )
    report: list[dict[str, Any]] = []
    keep: list[tuple[Path, Path]] = []  # (temporary, final)
    try:
        if ctx.cancelled:
            return None
        ctx.progress(0.0, "extracting subtitles")
        run = run_ffmpeg(args, ctx, duration=info.duration, verb="extracting subtitles")
        if run.cancelled:
            return None
        if run.returncode:
            raise _ffmpeg_failed(run, f"extracting the subtitles of {input.name}")
        for s in streams:
            cues = {fmt: count_cues(temps[s.index, fmt], fmt) for fmt in formats}
            if not any(cues.values()) and _count_packets(str(input), s.index):
                raise _verify_failed(
                    files[s.index, formats[0]],
                    f"no cue could be read back from subtitle stream {s.index} ({s.codec}); "
                    "the stream may be damaged",
                )
            if min(cues.values()) != max(cues.values()):
                raise _verify_failed(
                    files[s.index, formats[0]], f"the formats disagree on the cues: {cues}"
                )
            written = [files[s.index, fmt] for fmt in formats] if cues[formats[0]] else []
            keep += [(temps[s.index, fmt], files[s.index, fmt]) for fmt in formats if written]
            report.append(
                {
                    "index": s.index,
                    "codec": s.codec,
                    "language": s.language,
                    "files": [str(f) for f in written],
                    "cues": cues[formats[0]],
                }
            )
        # Verified all, then moved all: a failure above leaves no final file behind.
        for temp, final in keep:
            with outputs.writing(final):
                outputs.commit(temp, final)
    finally:
        for temp in temps.values():
            outputs.remove_quietly(temp)
    for _, final in keep:
        with outputs.writing(final):
            outputs.write_sidecar(final, input, EXTRACT_SUBTITLES, params)
    ctx.progress(100.0, "done")
    return {
        "outputs": [str(final) for _, final in keep],
        "streams": report,
        "skipped": skipped,
    }
