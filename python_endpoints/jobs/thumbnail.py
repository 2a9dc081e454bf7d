"""THUMBNAIL: a contact sheet — one JPEG of a video's pictures at evenly spaced times.

Runs in a child process, like the other media jobs (:mod:`python_endpoints.jobs.media`, whose
ffmpeg runner, space check and failure messages it uses): standard library, PyAV through
:mod:`python_endpoints.jobs.avread` and the bundled ffmpeg. Its decisions — when the pictures
are taken, the tiles' size, ffmpeg's argv — are pure functions in
:mod:`python_endpoints.jobs.ffmpeg` (*a contact sheet*).

The steps: probe the input; decode its first picture (how it is shown: the tiles take that
shape, and a video that decodes nothing fails here, before ffmpeg runs); pick the frames —
ffmpeg seeks to each time, so a long film costs no more than a short clip — into small
lossless pieces; lay them out as one JPEG under a temporary name; read it back (it must decode
to the size planned); rename it into place and write its sidecar, so that a run with the same
input and params can be skipped. The pieces and the temporary JPEG are removed however the
job ends. A cancel is seen while ffmpeg runs; a pause suspends the process tree (the
endpoint's ``suspend_on_pause``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import avread, media, outputs
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs.media import (
    check_space,
    distinct,
    ffmpeg_binary,
    ffmpeg_failed,
    make_dir,
    run_ffmpeg,
)
from python_endpoints.serving.child import ChildContext, JobFailed
from python_endpoints.status import said

THUMBNAIL = "THUMBNAIL"

#: The share of the job's progress that picking the frames takes (laying them out is quick).
PICK_SPAN = 95.0


def warm_up(endpoint: str) -> None:
    """In a warm spare, what the other media jobs' warm-up does: PyAV imported, the bundled
    ffmpeg found."""
    media.warm_up(endpoint)


def _video_stream(info: ff.MediaInfo) -> ff.StreamInfo | None:
    """The video a sheet shows: the default one, else the first (cover art is not video)."""
    videos = [s for s in info.streams if s.is_main_video]
    return next((s for s in videos if s.default), videos[0] if videos else None)


def _no_video(input: Path, info: ff.MediaInfo) -> JobFailed:
    kind = "an audio file" if info.kind == "audio" else "a file without pictures"
    cover = (
        " (its cover art is a still picture, not video)"
        if any(s.attached_pic for s in info.streams)
        else ""
    )
    return JobFailed(
        f"{input.name} has no video stream{cover}: it is {kind}, so there are no frames to "
        "make a contact sheet of; choose a video file",
        ErrorType.UNSUPPORTED_MEDIA,
    )


def thumbnail_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """THUMBNAIL: ``frames`` pictures of the video, taken at evenly spaced times over the
    longest audio or video stream, ``columns`` to a row, each ``width`` pixels wide, as one
    JPEG at ``output``. See :mod:`python_endpoints.jobs.thumbnail`."""
    input, output = Path(params["input"]), Path(params["output"])
    distinct(input, output)
    info = avread.probe(params["input"])
    stream = _video_stream(info)
    if stream is None:
        raise _no_video(input, info)
    if not stream.decodable:
        raise JobFailed(
            f"{input.name}: its video ({stream.codec}) cannot be decoded by this ffmpeg; "
            "set another ffmpeg in the settings",
            ErrorType.UNSUPPORTED_MEDIA,
        )
    picture = avread.first_picture(input, stream.index)
    if picture is None:
        raise JobFailed(
            f"{input.name}: no picture of its video stream {stream.index} ({stream.codec}) "
            "can be decoded; check that the file plays, a repaired or re-downloaded copy may "
            "work",
            ErrorType.INPUT_DAMAGED,
        )
    frames = params["frames"]
    try:
        layout = ff.sheet_layout(
            frames,
            params["columns"],
            params["width"],
            ff.shown_size(picture.width, picture.height, picture.sar, picture.rotation),
        )
    except ff.SheetTooLarge as exc:
        raise JobFailed(f"{input.name}: {exc}", ErrorType.PAYLOAD_ERROR) from None
    duration = info.playing_duration
    times = ff.sheet_times(frames, duration, stream.duration, stream.fps)
    # Each picture stands for a slice of the media: ffmpeg's progress counts the seconds of
    # media covered (and its speed means something).
    step = duration / frames if duration else 1.0
    binary = ffmpeg_binary(params)
    make_dir(output.parent)
    check_space(output.parent, ff.sheet_bytes(layout), params["keep_free_bytes"])
    part = outputs.part_id(params)
    temp = outputs.temp_path(output, part)
    picking = _Picking(binary, input, stream.index, times, layout, step)
    runs = ff.pick_runs(frames, picture.width, picture.height)
    # One piece per run that seeks, and one more for a decode of the whole video.
    pieces = [outputs.sheet_piece_path(output, part, n) for n in range(len(runs) + 1)]
    try:
        if ctx.cancelled:
            return None
        found = picking.by_seeking(ctx, runs, pieces[:-1])
        if found is None:
            return None
        picked = sum(count for _, count in found)
        if ff.decode_whole(picked, frames, duration):
            again = picking.by_decoding(ctx, pieces[-1], picked)
            if again is None:
                return None
            if again[1] > picked:
                found, picked = [again], again[1]
        if not picked:
            raise JobFailed(
                f"{input.name}: ffmpeg found no picture at any of the {frames} times of its "
                f"video stream {stream.index}; check that the file plays, a repaired or "
                "re-downloaded copy may work",
                ErrorType.INPUT_DAMAGED,
            )
        ctx.progress(PICK_SPAN, said("step.laying_out"))
        usable = [str(piece) for piece, count in found if count]
        run = run_ffmpeg(
            ff.sheet_args(binary, usable, layout, str(temp)),
            ctx,
            duration=None,
            verb=said("step.laying_out"),
            span=(PICK_SPAN, 100.0),
        )
        if run.cancelled:
            return None
        if run.returncode:
            raise ffmpeg_failed(run, f"laying out the contact sheet of {input.name}")
        _verify(temp, output.name, layout)
        with outputs.writing(output):
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)
        for piece in pieces:
            outputs.remove_quietly(piece)
    with outputs.writing(output):
        outputs.write_sidecar(output, input, THUMBNAIL, params)
    ctx.progress(100.0, said("done"))
    result: dict[str, Any] = {
        "outputs": [str(output)],
        "frames": picked,
        "columns": layout.columns,
        "rows": layout.rows,
        "width": layout.width,
        "height": layout.height,
        "tile_width": layout.tile_width,
        "tile_height": layout.tile_height,
        "times": times,
        "duration": duration,
        "bytes": output.stat().st_size,
    }
    if picked < frames:
        result["note"] = (
            f"{frames - picked} of the {frames} frames could not be found (the video is "
            "damaged or ends early there): their tiles are black"
        )
    return result


@dataclass(frozen=True)
class _Picking:
    """How the frames of one sheet are picked into pieces (FFV1 in NUT files) for
    :func:`ff.sheet_args` to lay out."""

    binary: str
    input: Path
    stream: int
    times: list[float]
    layout: ff.SheetLayout
    #: The media's length over the sheet's frames: what a picked frame stands for.
    step: float

    def by_seeking(
        self, ctx: ChildContext, runs: list[range], pieces: list[Path]
    ) -> list[tuple[Path, int]] | None:
        """Seek to each time, in one ffmpeg run per range of ``runs``, each writing its piece.
        Each piece with the pictures found in it (a seek may find none: a file damaged there,
        a stream without a keyframe after that time); None when the job was cancelled."""
        frames = len(self.times)
        found = []
        ctx.progress(0.0, said("step.picking_frames"))
        for n, (run_frames, piece) in enumerate(zip(runs, pieces, strict=True)):
            # Several runs (100 frames of 4K) each say their own percent: say which one it is.
            verb = (
                said("step.picking_frames_part", part=n + 1, parts=len(runs))
                if len(runs) > 1
                else said("step.picking_frames")
            )
            args = ff.pick_frames_args(
                self.binary,
                str(self.input),
                self.stream,
                self.times[run_frames.start : run_frames.stop],
                self.layout,
                str(piece),
                step=self.step,
            )
            span = (PICK_SPAN * run_frames.start / frames, PICK_SPAN * run_frames.stop / frames)
            run = run_ffmpeg(args, ctx, duration=self.step * len(run_frames), verb=verb, span=span)
            if run.cancelled:
                return None
            if run.returncode:
                raise ffmpeg_failed(run, f"picking frames of {self.input.name}")
            found.append((piece, avread.count_pictures(piece)))
        return found

    def by_decoding(self, ctx: ChildContext, piece: Path, picked: int) -> tuple[Path, int] | None:
        """Decode the whole video instead, taking the first picture at or after each time;
        the piece with the pictures found in it, or None when the job was cancelled."""
        frames = len(self.times)
        verb = said("step.decoding_whole")
        ctx.progress(0.0, said("seeking_missed", picked=picked, frames=frames) + verb)
        args = ff.decode_whole_args(
            self.binary,
            str(self.input),
            self.stream,
            self.times,
            self.layout,
            str(piece),
            step=self.step,
        )
        run = run_ffmpeg(args, ctx, duration=self.step * frames, verb=verb, span=(0.0, PICK_SPAN))
        if run.cancelled:
            return None
        if run.returncode:
            raise ffmpeg_failed(run, f"decoding the video of {self.input.name}")
        return piece, avread.count_pictures(piece)


def _verify(path: Path, name: str, layout: ff.SheetLayout) -> None:
    """The sheet must decode, as a JPEG of the size planned, before it is put in place."""
    sheet = avread.first_picture(path)
    if sheet is None:
        raise avread.verify_failed(name, "it cannot be read back as a picture")
    if sheet.codec != "mjpeg" or (sheet.width, sheet.height) != (layout.width, layout.height):
        raise avread.verify_failed(
            name,
            f"it is a {sheet.width}x{sheet.height} {sheet.codec} picture, a "
            f"{layout.width}x{layout.height} JPEG was expected",
        )
