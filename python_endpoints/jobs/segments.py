"""Re-encodes that resume: the video encoded in segments cut at keyframes, joined losslessly.

A re-encode of a long film interrupted near its end (a quit, a crash, a reboot) would start
again from zero. Instead TRANSCODE_MP4, when it re-encodes the video of an input that lasts at
least two segments (``segment_seconds``, four minutes by default), works in pieces:

1. The *rest* — every stream but the video (audio encoded or copied, text subtitles to
   ``mov_text``) — is made once, whole, into one file: an audio stream cut at the joints
   would gain a gap or a click there (an AAC frame's priming samples at each start).
2. The video is cut at keyframes of the input (found through its index with PyAV: a seek
   per cut, nothing decoded) into segments of about ``segment_seconds``; each is encoded by
   its own ffmpeg run (``-ss`` before ``-i``: ffmpeg seeks to the keyframe and decodes from
   there), read back and its duration checked, flushed to the disk (file and folder), and only
   then listed in the checkpoint the job sends (``extras.checkpoint`` of a progress frame).
3. The segments are joined with ffmpeg's concat demuxer, stream-copied (``-c copy``), with the
   rest's streams; the whole is verified against the input as a one-pass encode is.

A next attempt gets the checkpoint back as ``params["resume"]``. When it was made from the same
input (size and mtime) with the same encoder, quality, segment length and streams, the
segments and the rest file it lists are reused — each if it is still there with the size the
checkpoint recorded — and only the missing segments are encoded. Otherwise the files it lists
are removed and the job starts over. Segment files are temporary files next to the output
(:func:`python_endpoints.jobs.outputs.piece_path`), named by the part id of the attempt that
made them: a resumed attempt finds them by the names in the checkpoint, and the sweep of what
earlier attempts left spares exactly those (:func:`python_endpoints.jobs.outputs.leftover_parts`).

Each frame of the input belongs to exactly one segment: segment *k* starts at cut *k* (a
keyframe's time, rounded down to the microsecond so that the keyframe is never trimmed) and
lasts until half a frame before cut *k+1*. The segments' own timestamps start at 0 and the
concat demuxer places each after the one before: the joined video has the one-pass encode's
frames and timestamps. Each segment starts with an IDR frame (an encoder starts that way): a
few more keyframes than a one-pass encode (0.6 % in size on a 12 s clip cut every 3 s).

Remux and audio extraction are fast enough to run again: only a video re-encode is segmented.
Segments run one after the other in the job's one child, so the job's ``io``/``cpu`` resources
are what they were.

The first part (cuts, the checkpoint's shape, ffmpeg's argv, the concat list) is pure; the
second reads keyframes with PyAV and runs ffmpeg through the job's runner.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import avread, outputs
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs.failures import classify
from python_endpoints.serving.child import ChildContext
from python_endpoints.status import said

#: The checkpoint's version: a checkpoint of another version is not reused.
CHECKPOINT_VERSION = 1
#: Where the job's percent goes: the rest file, the segments, the join.
REST_SPAN = (0.0, 5.0)
SEGMENTS_SPAN = (5.0, 97.0)
JOIN_SPAN = (97.0, 100.0)


# --- pure: cuts, checkpoint, argv -------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """Segment ``index`` of the video: from ``start`` (seconds from the input's start) to
    ``end`` (None: to the end)."""

    index: int
    start: float
    end: float | None

    def expected(self, duration: float | None) -> float | None:
        """How long it should last (None when the input's length is unknown)."""
        end = self.end if self.end is not None else duration
        return None if end is None else max(0.0, end - self.start)


def cut_points(keyframes: Sequence[float], duration: float | None, target: float) -> list[float]:
    """Where segments start after the first: keyframe times at least ``target`` seconds
    apart; a last segment shorter than half ``target`` joins the one before it."""
    cuts: list[float] = []
    last = 0.0
    for t in sorted(keyframes):
        if t - last >= target:
            cuts.append(t)
            last = t
    if cuts and duration is not None and duration - cuts[-1] < target / 2:
        cuts.pop()
    return cuts


def plan_segments(cuts: Sequence[float]) -> list[Segment]:
    """The segments ``cuts`` make: the first from the start, the last to the end."""
    starts = [0.0, *cuts]
    return [
        Segment(i, start, starts[i + 1] if i + 1 < len(starts) else None)
        for i, start in enumerate(starts)
    ]


def worth_segmenting(duration: float | None, target: float) -> bool:
    """Whether an encode is long enough to be cut: two segments at least."""
    return duration is not None and target > 0 and duration >= 2 * target


def checkpoint_key(
    input_stat: Mapping[str, int],
    plan: ff.TranscodePlan,
    *,
    encoder: str,
    crf: int,
    preset: str,
    target: float,
    compatible: bool = False,
    loudness: bool = False,
) -> dict[str, Any]:
    """What a checkpoint's files depend on: a checkpoint with another key is not reused."""
    key = {
        "input": dict(input_stat),
        "encoder": encoder,
        "crf": crf,
        "preset": preset,
        "compatible": compatible,
        "loudness": loudness,
        "segment_seconds": target,
        "streams": [[s.index, s.type, s.action, s.codec, *s.filters] for s in plan.streams],
    }
    # As it comes back from the queue: JSON (tuples become lists).
    result: dict[str, Any] = json.loads(json.dumps(key))
    return result


def new_checkpoint(
    key: dict[str, Any], cuts: Sequence[float], frame: float, length: float | None
) -> dict[str, Any]:
    """A checkpoint with nothing done yet: the cuts, the length of a frame and of the video
    (what the keyframe scan found, so that a resumed attempt need not scan again)."""
    return {
        "version": CHECKPOINT_VERSION,
        "key": key,
        "cuts": list(cuts),
        "frame": frame,
        "length": length,
        "segments": [],
        "rest": None,
    }


def with_segment(checkpoint: dict[str, Any], index: int, file: str, size: int) -> dict[str, Any]:
    """``checkpoint`` with segment ``index`` done (a new dict: the one sent stays as it was)."""
    done = [s for s in checkpoint["segments"] if s["index"] != index]
    done.append({"index": index, "file": file, "bytes": size})
    return {**checkpoint, "segments": sorted(done, key=lambda s: s["index"])}


def with_rest(checkpoint: dict[str, Any], file: str, size: int) -> dict[str, Any]:
    """``checkpoint`` with the rest file done."""
    return {**checkpoint, "rest": {"file": file, "bytes": size}}


def matches(resume: object, key: dict[str, Any]) -> bool:
    """Whether ``resume`` is a checkpoint of this encode (same version and key)."""
    return (
        isinstance(resume, dict)
        and resume.get("version") == CHECKPOINT_VERSION
        and resume.get("key") == key
        and isinstance(resume.get("cuts"), list)
        and all(isinstance(t, int | float) for t in resume["cuts"])
        and isinstance(resume.get("frame"), int | float)
        and isinstance(resume.get("length"), int | float | None)
        and isinstance(resume.get("segments"), list)
    )


def listed_files(resume: object) -> list[str]:
    """The file names a checkpoint lists (the segments', the rest's)."""
    return sorted(outputs.resumed_pieces(resume))


def concat_list(files: Sequence[str]) -> str:
    """The concat demuxer's list of ``files`` (names relative to the list's folder)."""
    lines = ["ffconcat version 1.0"]
    for name in files:
        lines.append("file '" + name.replace("'", "'\\''") + "'")
    return "\n".join(lines) + "\n"


def _seconds(value: float, rounding: Callable[[float], float]) -> str:
    return f"{rounding(value * 1e6) / 1e6:.6f}"


def _head(ffmpeg: str) -> list[str]:
    return [
        *[ffmpeg, "-hide_banner", "-nostdin", "-y", "-loglevel", "error"],
        *["-nostats", "-progress", "pipe:1", "-stats_period", str(ff.PROGRESS_PERIOD)],
    ]


def segment_args(
    ffmpeg: str,
    input: str,
    output: str,
    segment: Segment,
    *,
    video: ff.StreamPlan,
    frame: float,
    encoder: str,
    crf: int,
    preset: str,
    compatible: bool = False,
) -> list[str]:
    """ffmpeg's argv for one segment of video stream ``video``: from its start (rounded down
    to the microsecond, so that the keyframe there is kept) to half a ``frame`` before its
    end (so that the frame at the next cut is the next segment's)."""
    args = [*_head(ffmpeg), *ff.hardware_input_args(encoder)]
    if segment.start > 0:
        args += ["-ss", _seconds(segment.start, math.floor)]
    args += ["-i", input, "-map", f"0:{video.index}", "-an", "-sn", "-dn"]
    filters = ff.at_offset(video.filters, math.floor(segment.start * 1e6) / 1e6)
    args += ff.video_encoder_args(encoder, 0, crf, preset, filters=filters, compatible=compatible)
    if segment.end is not None:
        args += ["-t", _seconds(segment.end - segment.start - frame / 2, round)]
    return [*args, "-f", "mp4", output]


def rest_plan(plan: ff.TranscodePlan) -> ff.TranscodePlan:
    """The plan of the rest file: every stream of ``plan`` but the video."""
    return ff.TranscodePlan(tuple(s for s in plan.streams if s.type != "video"))


def rest_args(
    ffmpeg: str,
    input: str,
    output: str,
    plan: ff.TranscodePlan,
    *,
    compatible: bool = False,
    loudness: Mapping[int, ff.Loudness] | None = None,
) -> list[str]:
    """ffmpeg's argv for the rest file: every stream but the video, as the one-pass encode
    would make it."""
    return ff.transcode_args(
        ffmpeg,
        input,
        output,
        rest_plan(plan),
        encoder="copy",
        compatible=compatible,
        loudness=loudness,
    )


def join_args(ffmpeg: str, concat: str, rest: str | None, output: str) -> list[str]:
    """ffmpeg's argv that joins the segments listed in ``concat`` and the rest file's streams
    into ``output``, copying every packet."""
    args = [*_head(ffmpeg), "-f", "concat", "-safe", "0", "-i", concat]
    if rest is not None:
        args += ["-i", rest]
    args += ["-map", "0:v:0"]
    if rest is not None:
        args += ["-map", "1"]
    return [*args, "-c", "copy", "-movflags", "+faststart", "-f", "mp4", output]


def segment_lasts(
    segment: Segment, actual: float | None, expected: float | None, frame: float
) -> bool:
    """Whether a segment read back lasts what it should: one between two cuts their distance,
    to a frame; the last one as long as the input's video still lasts (within the usual
    tolerance: a header may be off)."""
    if expected is None:
        return actual is not None
    if segment.end is None:
        return ff.duration_ok(actual, expected)
    return actual is not None and abs(actual - expected) <= 1.5 * frame


def output_frame(video: ff.StreamPlan, frame: float) -> float:
    """The length of an output frame: the input's, or longer after an ``fps`` filter."""
    for f in video.filters:
        if f.startswith("fps="):
            with contextlib.suppress(ValueError):
                return max(frame, 1.0 / float(f.removeprefix("fps=")))
    return frame


def progress_at(done: float, total: float | None) -> float:
    """The job's percent once ``done`` seconds of video are encoded."""
    low, high = SEGMENTS_SPAN
    if not total:
        return low
    return low + (high - low) * min(1.0, done / total)


# --- I/O: keyframes, segment runs ---------------------------------------------------------------


def keyframe_times(path: str, index: int, target: float) -> tuple[list[float], float, float | None]:
    """Keyframes of video stream ``index`` where segments of ``target`` seconds can start
    (seconds from the input's start, as ffmpeg's ``-ss`` counts them): from the last one
    found, a seek through the container's index to ``target`` seconds on, then the first
    keyframe packet from there — a couple of groups of pictures read per cut, nothing
    decoded, however long the input. Also: the length of one frame, how long the stream
    lasts (None when the input does not say)."""
    with avread.open_media(path) as container:
        stream = container.streams[index]
        base = stream.time_base
        origin = (container.start_time or 0) / 1e6
        rate = stream.average_rate or stream.guessed_rate
        frame = float(1 / rate) if rate else 0.04
        length: float | None = None
        if stream.duration and base:
            length = float(stream.duration * base)
        elif container.duration:
            length = container.duration / 1e6 - origin
        times: list[float] = []
        if base is None:
            return times, frame, length
        wanted = target
        while length is None or wanted < length:
            container.seek(int((wanted + origin) / base), stream=stream, backward=True)
            found = None
            for packet in container.demux(stream):
                if packet.pts is None or not packet.is_keyframe:
                    continue
                t = float(packet.pts * base) - origin
                if t >= wanted - frame / 2:
                    found = t
                    break
            if found is None:
                break
            times.append(found)
            wanted = found + target
    return times, frame, length


class Ran(Protocol):
    """How an ffmpeg run ended (:class:`python_endpoints.jobs.media.FfmpegRun`)."""

    @property
    def returncode(self) -> int: ...
    @property
    def cancelled(self) -> bool: ...
    @property
    def stderr(self) -> list[str]: ...


class Runner(Protocol):
    """How the job runs ffmpeg (:func:`python_endpoints.jobs.media.run_ffmpeg`)."""

    def __call__(
        self,
        args: list[str],
        ctx: ChildContext,
        *,
        duration: float | None,
        verb: str,
        span: tuple[float, float] = ...,
    ) -> Ran: ...


@dataclass
class SegmentedEncode:
    """The segmented re-encode of ``input`` into ``temp`` (which the job verifies and puts in
    place as ``output``), resuming from the checkpoint ``resume``."""

    ctx: ChildContext
    binary: str
    input: Path
    output: Path
    temp: Path
    plan: ff.TranscodePlan
    crf: int
    preset: str
    compatible: bool
    #: Segment length asked for (seconds).
    target: float
    part: str
    resume: object
    runner: Runner
    #: The job's percent this encode fills.
    span: tuple[float, float] = (0.0, 100.0)
    #: Segments encoded by this attempt, and reused from the last one (for the result).
    encoded: int = 0
    reused: int = 0
    #: The checkpoint as last sent (None before the first run).
    checkpoint: dict[str, Any] | None = None

    def _piece(self, name: str) -> Path:
        return outputs.piece_path(self.output, self.part, name)

    def _percent(self, percent: float) -> float:
        low, high = self.span
        return low + (high - low) * percent / 100.0

    def _intact(self, entry: object) -> dict[str, Any] | None:
        """A checkpoint entry whose file is a piece of this output, there, of the size
        recorded."""
        if not isinstance(entry, dict):
            return None
        file, size = entry.get("file"), entry.get("bytes")
        if not isinstance(file, str) or not outputs.is_piece_of(self.output, file):
            return None
        try:
            return entry if (self.output.parent / file).stat().st_size == size else None
        except OSError:
            return None

    def _discard(self, checkpoint: object) -> None:
        for name in outputs.resumed_pieces(checkpoint):
            if outputs.is_piece_of(self.output, name):
                outputs.remove_quietly(self.output.parent / name)

    def _send(self, checkpoint: dict[str, Any], percent: float, text: str) -> None:
        self.checkpoint = checkpoint
        self.ctx.progress(self._percent(percent), text, extras={"checkpoint": checkpoint})

    def _sync(self, path: Path) -> int:
        with outputs.writing(path):
            outputs.fsync_file(path)
            outputs.fsync_dir(path.parent)
            return path.stat().st_size

    def _start(self, key: dict[str, Any], video: int) -> dict[str, Any]:
        """The checkpoint to go on from: the last one's intact pieces when it is of this
        encode (its files that are not intact removed), else a new one (the last one's files
        removed)."""
        last = self.checkpoint if self.checkpoint is not None else self.resume
        if matches(last, key):
            assert isinstance(last, dict)
            checkpoint = new_checkpoint(key, last["cuts"], float(last["frame"]), last["length"])
            for entry in map(self._intact, last["segments"]):
                if entry is not None and isinstance(entry.get("index"), int):
                    checkpoint = with_segment(
                        checkpoint, entry["index"], entry["file"], entry["bytes"]
                    )
            rest = self._intact(last.get("rest"))
            if rest is not None:
                checkpoint = with_rest(checkpoint, rest["file"], rest["bytes"])
            stale = outputs.resumed_pieces(last) - outputs.resumed_pieces(checkpoint)
            for name in stale:
                outputs.remove_quietly(self.output.parent / name)
            return checkpoint
        self._discard(last)
        keyframes, frame, length = keyframe_times(str(self.input), video, self.target)
        return new_checkpoint(key, cut_points(keyframes, length, self.target), frame, length)

    def execute(self, encoder: str, loudness: Mapping[int, ff.Loudness] | None = None) -> Ran:
        """Make ``temp`` with ``encoder``: what the last ffmpeg run did (a failed or
        cancelled one stops the encode). The pieces done stay for a next attempt."""
        video = next(s for s in self.plan.streams if s.type == "video")
        key = checkpoint_key(
            _stat(self.input),
            self.plan,
            encoder=encoder,
            crf=self.crf,
            preset=self.preset,
            target=self.target,
            compatible=self.compatible,
            loudness=bool(loudness),
        )
        checkpoint = self._start(key, video.index)
        frame, length = float(checkpoint["frame"]), checkpoint["length"]
        segments = plan_segments(checkpoint["cuts"])
        done = {s["index"]: s["file"] for s in checkpoint["segments"]}
        self.reused = sum(1 for s in segments if s.index in done)
        self._send(checkpoint, 0.0, said("segments_done", done=len(done), total=len(segments)))
        has_rest = bool(rest_plan(self.plan).streams)
        # Made by this run, not yet in the checkpoint: removed if the run stops.
        current: Path | None = None
        concat = self._piece("concat.txt")
        try:
            if has_rest and checkpoint["rest"] is None:
                current = self._piece("rest.mp4")
                args = rest_args(
                    self.binary,
                    str(self.input),
                    str(current),
                    self.plan,
                    compatible=self.compatible,
                    loudness=loudness,
                )
                span = (self._percent(REST_SPAN[0]), self._percent(REST_SPAN[1]))
                run = self._run(args, duration=length, verb=said("step.encoding_audio"), span=span)
                while self._out_of_space(run, current, len(done), len(segments)):
                    run = self._run(
                        args, duration=length, verb=said("step.encoding_audio"), span=span
                    )
                if run.cancelled or run.returncode:
                    return run
                checkpoint = with_rest(checkpoint, current.name, self._sync(current))
                current = None
                self._send(checkpoint, REST_SPAN[1], said("audio_encoded"))
            for segment in segments:
                if segment.index in done:
                    continue
                current = self._piece(f"seg{segment.index:05d}.mp4")
                run = self._segment(segment, current, video, encoder, frame, length)
                while self._out_of_space(run, current, len(done), len(segments)):
                    run = self._segment(segment, current, video, encoder, frame, length)
                if run.cancelled or run.returncode:
                    return run
                done[segment.index] = current.name
                size = self._sync(current)
                checkpoint = with_segment(checkpoint, segment.index, current.name, size)
                current = None
                self.encoded += 1
                finished = sum((s.expected(length) or 0.0) for s in segments if s.index in done)
                self._send(
                    checkpoint,
                    progress_at(finished, length),
                    said("segments_done", done=len(done), total=len(segments)),
                )
            with outputs.writing(concat):
                concat.write_text(concat_list([done[s.index] for s in segments]), "utf-8")
            rest = checkpoint["rest"]
            args = join_args(
                self.binary,
                str(concat),
                None if rest is None else str(self.output.parent / rest["file"]),
                str(self.temp),
            )
            span = (self._percent(JOIN_SPAN[0]), self._percent(JOIN_SPAN[1]))
            return self._run(args, duration=length, verb=said("step.joining"), span=span)
        finally:
            if current is not None:
                outputs.remove_quietly(current)
            outputs.remove_quietly(concat)

    def _out_of_space(self, run: Ran, piece: Path, done: int, total: int) -> bool:
        """When ``run`` failed because the disk is full: remove its piece, ask for a pause
        saying why (the pieces done stay, and the checkpoint that lists them), and wait.
        True once resumed (the piece is made again); False when it failed for another
        reason, or the wait ended in a cancel."""
        if run.cancelled or not run.returncode:
            return False
        if classify(run.stderr, run.returncode).error_type != ErrorType.NO_SPACE:
            return False
        outputs.remove_quietly(piece)
        self.ctx.request_pause(
            f"the disk of {self.output.parent} is full: free some space, then resume the task; "
            f"it goes on from the {done} of {total} segments done"
        )
        return not self.ctx.cancelled

    def _run(
        self, args: list[str], *, duration: float | None, verb: str, span: tuple[float, float]
    ) -> Ran:
        return self.runner(args, self.ctx, duration=duration, verb=verb, span=span)

    def _segment(
        self,
        segment: Segment,
        path: Path,
        video: ff.StreamPlan,
        encoder: str,
        frame: float,
        length: float | None,
    ) -> Ran:
        expected = segment.expected(length)
        args = segment_args(
            self.binary,
            str(self.input),
            str(path),
            segment,
            video=video,
            frame=frame,
            encoder=encoder,
            crf=self.crf,
            preset=self.preset,
            compatible=self.compatible,
        )
        low = self._percent(progress_at(segment.start, length))
        high = self._percent(progress_at(segment.start + (expected or 0.0), length))
        run = self._run(args, duration=expected, verb=said("step.transcoding"), span=(low, high))
        if run.cancelled or run.returncode:
            return run
        actual = segment_duration(path)
        if not segment_lasts(segment, actual, expected, output_frame(video, frame)):
            raise avread.verify_failed(
                self.output.name,
                f"segment {segment.index + 1} lasts {actual or 0:.3f} s where "
                f"{expected or 0:.3f} s was expected: ffmpeg lost part of the input; check that "
                "the input plays to the end, or convert it with another program",
            )
        return run

    def remove_pieces(self) -> None:
        """Once the output is in place: the segments and the rest file are of no more use."""
        self._discard(self.checkpoint)

    def summary(self) -> dict[str, Any]:
        """What the result says of the segments."""
        total = len(plan_segments(self.checkpoint["cuts"])) if self.checkpoint else 0
        return {"segments": total, "segments_encoded": self.encoded, "segments_reused": self.reused}


def segment_duration(path: Path) -> float | None:
    """How long a segment's video lasts, read back with PyAV."""
    import av.error  # where used: importing the job's modules stays cheap (see avread)

    try:
        with avread.open_media(path, format="mp4") as container:
            stream = container.streams.video[0]
            if stream.duration and stream.time_base:
                return float(stream.duration * stream.time_base)
            return container.duration / 1e6 if container.duration else None
    except (av.error.FFmpegError, OSError, IndexError) as exc:
        raise avread.verify_failed(
            path.name, f"a segment cannot be read back ({avread.reason(exc)})"
        ) from exc


def _stat(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
