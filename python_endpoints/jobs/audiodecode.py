"""A short file's audio taken out in the job's own process with PyAV, instead of by an ffmpeg
process.

Starting ffmpeg costs about 10 ms of CPU (a large static binary mapped, its libraries set up)
before it reads a byte; taking the sound out of a one-second clip costs a few. For a folder of
voice memos that start is most of the work. The job's child already has PyAV loaded (it
probes the input with it), and PyAV is FFmpeg's own libraries: the same demuxer, decoder,
resampler (``libswresample``, with ffmpeg's defaults: what ``-ar``/``-ac`` insert) and PCM or
FLAC encoder, driven from Python. The samples written are the ones the ffmpeg command writes
(a test compares them); only the WAV's ``ISFT`` tag, the libavformat version, may differ.

Used only where nothing is lost by it (:func:`worth_in_process`): an input of at most
:data:`IN_PROCESS_UP_TO` seconds (for a long one ffmpeg's start is nothing, and its own
threads decode faster than a Python loop), and no ffmpeg chosen in the settings (that one does
all the work: it may be there for a codec PyAV's build lacks). Anything PyAV cannot do for a
file — a decoder error, a format change mid-stream, a full disk — is no verdict on the file:
the caller removes what was written and runs the ffmpeg command, which says what is wrong in
its own words as it always has. A cancel is looked at between frames; a pause needs nothing
here (the endpoint suspends the whole process, as it suspends an ffmpeg tree).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Literal

from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs.avread import create_media, open_media
from python_endpoints.jobs.outputs import AFTER_CRASH
from python_endpoints.serving.child import ChildContext

log = logging.getLogger(__name__)

#: The longest input (seconds, as its probe declares it) whose audio is taken out in-process.
IN_PROCESS_UP_TO = 30.0
#: At most this many progress reports a second.
REPORTS_PER_SECOND = 5


#: The channel layouts ffmpeg's ``-ac 1`` and ``-ac 2`` make; other counts go to ffmpeg.
LAYOUTS = {1: "mono", 2: "stereo"}


def worth_in_process(declared: float | None, params: dict[str, Any]) -> bool:
    """Whether EXTRACT_AUDIO with ``params`` on an input of ``declared`` seconds runs in
    the job's process: short, its length known, mono or stereo out, no ffmpeg chosen in the
    settings, and no earlier run on this input crashed its child (``AFTER_CRASH``: a
    decoder that crashes on a file takes the child with it; an ffmpeg process's crash is
    reported)."""
    return (
        not params.get("ffmpeg")
        and not params.get(AFTER_CRASH)
        and params.get("channels") in LAYOUTS
        and declared is not None
        and 0 < declared <= IN_PROCESS_UP_TO
    )


def extract(
    input: Path,
    stream: int,
    output: Path,
    *,
    format: Literal["wav", "flac"],
    sample_rate: int,
    channels: int,
    ctx: ChildContext,
    duration: float | None,
    verb: str,
) -> bool | None:
    """Write audio stream ``stream`` of ``input`` to ``output`` as 16-bit PCM WAV or FLAC at
    ``sample_rate`` with ``channels``: True when written, None when the job was cancelled
    (``output`` may hold a part), False when PyAV could not (logged; ``output`` may hold a
    part: the caller removes it and runs ffmpeg)."""
    import av
    import av.error

    layout = LAYOUTS[channels]
    try:
        with open_media(input) as source, create_media(output, format) as sink:
            out: Any = sink.add_stream(
                "pcm_s16le" if format == "wav" else "flac", rate=sample_rate, layout=layout
            )
            out.codec_context.format = "s16"
            resampler = av.AudioResampler(format="s16", layout=layout, rate=sample_rate)
            return _Pump(av, sink, out, resampler).run(source, stream, ctx, duration, verb)
    except (av.error.FFmpegError, OSError, ValueError, EOFError) as exc:
        log.info("%s: in-process audio extraction gave way to ffmpeg: %s", input.name, exc)
        return False


class _Pump:
    """Frames from an input's audio stream through the resampler into the output."""

    def __init__(self, av: Any, sink: Any, out: Any, resampler: Any) -> None:
        self.av, self.sink, self.out, self.resampler = av, sink, out, resampler
        self.written = 0  # samples written, at the output's rate

    def run(
        self, source: Any, stream: int, ctx: ChildContext, duration: float | None, verb: str
    ) -> bool | None:
        """:func:`extract`'s work on the opened files."""
        audio = source.streams[stream]
        throttle = ff.Throttle(1.0 / REPORTS_PER_SECOND)
        throttle.ready(time.monotonic())  # the job said 0 % as it began
        # ffmpeg ends the audio at the stream's declared length (an AAC encoder's padding of
        # its last frame is decoded, and dropped before the resampler), and the resampler's
        # delay, flushed at the end, at the input's length: so does this. A whole frame past
        # the declared length is sound a wrong header leaves out: ffmpeg decides then.
        declared = audio.duration * audio.time_base if audio.duration else None
        taken = rate_in = 0  # samples read, at the input's rate
        cap: int | None = None
        for frame in source.decode(audio):
            if ctx.cancelled:
                return None
            if not rate_in:
                rate_in = frame.sample_rate
                cap = None if declared is None else round(declared * rate_in)
            frame = self._first(frame, None if cap is None else cap - taken)
            if frame is None:
                log.info("%s: sound past its declared length", source.name)
                return False
            taken += frame.samples
            for piece in self.resampler.resample(frame):
                self._write(piece)
            if duration and frame.time is not None and throttle.ready(time.monotonic()):
                percent = min(100.0, 100.0 * frame.time / duration)
                ctx.progress(percent, ff.status_text(verb, percent, None))
        rate = self.out.codec_context.sample_rate
        length = round(taken * rate / rate_in) if rate_in else 0
        for piece in self.resampler.resample(None):
            piece = self._first(piece, length - self.written)
            if piece is None:
                break
            self._write(piece)
        self.sink.mux(self.out.encode(None))
        return True

    def _write(self, piece: Any) -> None:
        self.sink.mux(self.out.encode(piece))
        self.written += piece.samples

    def _first(self, frame: Any, room: int | None) -> Any:
        """``frame`` cut to its first ``room`` samples (None: all of them); None when there
        is no room at all."""
        if room is None or frame.samples <= room:
            return frame
        if room <= 0:
            return None
        data = frame.to_ndarray()
        width = room if frame.format.is_planar else room * frame.layout.nb_channels
        cut = self.av.AudioFrame.from_ndarray(
            data[:, :width], format=frame.format.name, layout=frame.layout.name
        )
        cut.sample_rate, cut.pts, cut.time_base = frame.sample_rate, frame.pts, frame.time_base
        return cut
