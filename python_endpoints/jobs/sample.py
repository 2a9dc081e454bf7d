"""Short test clips made with the bundled ffmpeg (``fredica sample OUT``, and the tests).

Kinds:

- ``mkv`` — H.264 video (testsrc2) + Opus stereo audio (a tone that changes every second) + an
  SRT subtitle track in English with the cues of :func:`sample_cues`. Every codec fits MP4, so
  ``TRANSCODE_MP4`` with ``mode="auto"`` *remuxes* it (the SRT track becomes ``mov_text``):
  the common case of a recording or a download in Matroska. Force ``mode="reencode"`` for the
  H.264/AAC path.
- ``mp4`` — H.264 + AAC, no subtitles: remuxes too, and has nothing for EXTRACT_SUBTITLES.
- ``legacy`` — MPEG-2 video + MP2 audio + the SRT track, in Matroska: nothing fits MP4, so
  ``TRANSCODE_MP4`` re-encodes it (H.264/AAC), as it would an old DVD rip or a capture.
- ``noaudio`` — the ``mkv`` without its audio.
- ``corrupt`` — the ``mkv`` cut in half: it still probes (Matroska states its duration up
  front) but holds half of it, so a transcode makes an MP4 of that half and says that the
  input is shorter than its header claims.
- ``text`` — a plain text file: not media.

With ``speech=True`` the audio is a spoken clip instead of the tones: ``assets/speech-en.opus``
("Hello from Fredica. This is a second cue. The quick brown fox jumps over the lazy dog.
Speech becomes subtitles.", 9.6 s), looped to the clip's length — what ``fredica sample`` and
``fredica process --sample`` use, so that speech-to-text has words to find on a fresh machine.
The clip ships with the project (see ``assets/README.md``): no text-to-speech engine needed.

The file is written to a temporary name next to ``out`` and renamed into place.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from python_endpoints.jobs import outputs
from python_endpoints.jobs.media import bundled_ffmpeg

KINDS = ("mkv", "mp4", "legacy", "noaudio", "corrupt", "text")
SPEECH = Path(__file__).parent / "assets" / "speech-en.opus"
SAMPLE_TIMEOUT = 300.0


def sample_cues(seconds: float) -> list[tuple[float, float, str]]:
    """The subtitle cues of a sample of that length: ``(start, end, text)``, whole
    milliseconds, two of them at least (squeezed into clips shorter than 4 s)."""
    scale = min(1.0, seconds / 4.0)
    cues = [(0.5, 1.75, "Hello from Fredica"), (2.0, 3.25, "A second cue")]
    return [(round(a * scale, 3), round(b * scale, 3), text) for a, b, text in cues]


def _srt_time(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def srt_text(cues: list[tuple[float, float, str]]) -> str:
    return "".join(
        f"{i}\n{_srt_time(a)} --> {_srt_time(b)}\n{text}\n\n"
        for i, (a, b, text) in enumerate(cues, 1)
    )


def _args(
    ffmpeg: str,
    kind: str,
    seconds: float,
    size: tuple[int, int],
    srt: str,
    out: str,
    speech: bool = False,
) -> list[str]:
    width, height = size
    video = f"testsrc2=size={width}x{height}:rate=25:duration={seconds}"
    # A tone that steps up every second: a transcript or a waveform shows where it is cut.
    tones = "sin(2*PI*(220+110*floor(t))*t)|sin(2*PI*(330+110*floor(t))*t)"
    tone_input = ["-f", "lavfi", "-i", f"aevalsrc={tones}:s=48000:d={seconds}"]
    speech_input = ["-stream_loop", "-1", "-i", str(SPEECH)]
    audio = speech_input if speech else tone_input
    args = [ffmpeg, "-hide_banner", "-nostdin", "-y", "-loglevel", "error"]
    args += ["-f", "lavfi", "-i", video]
    if kind == "mp4":
        args += [*audio, "-map", "0:v", "-map", "1:a"]
        args += ["-c:a", "aac", "-b:a", "128k", "-ar", "48000"]
    else:
        if kind != "noaudio":
            args += audio
        args += ["-i", srt, "-map", "0:v"]
        if kind == "legacy":
            args += ["-map", "1:a", "-c:a", "mp2", "-b:a", "192k"]
        elif kind != "noaudio":
            args += ["-map", "1:a", "-c:a", "libopus", "-b:a", "96k"]
        args += ["-map", f"{1 if kind == 'noaudio' else 2}:s", "-c:s", "srt"]
        args += ["-metadata:s:s:0", "language=eng", "-metadata:s:s:0", "title=English"]
    if kind == "legacy":
        args += ["-c:v", "mpeg2video", "-q:v", "4", "-pix_fmt", "yuv420p", "-g", "25"]
    else:
        args += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "25"]
    if kind != "noaudio":
        args += ["-ar", "48000"]
    # The looped speech is endless: the clip ends with its video.
    args += ["-t", f"{seconds}"]
    return [*args, "-f", "mp4" if kind == "mp4" else "matroska", out]


def make_sample(
    out: Path,
    seconds: float = 10.0,
    *,
    ffmpeg: str | None = None,
    kind: str = "mkv",
    size: tuple[int, int] = (320, 240),
    speech: bool = False,
) -> Path:
    """Write a test clip of ``kind`` (see the module's docstring) to ``out``; return ``out``."""
    if kind not in KINDS:
        raise ValueError(f"unknown sample kind {kind!r}; one of {', '.join(KINDS)}")
    if seconds <= 0:
        raise ValueError("a sample lasts more than 0 seconds")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    temp = outputs.temp_path(out, outputs.new_part_id())
    try:
        if kind == "text":
            # Long enough for FFmpeg's text-art demuxer to claim it (as it would claim notes).
            temp.write_text("This is not a media file.\n" * 100, encoding="utf-8")
        else:
            _encode(ffmpeg or bundled_ffmpeg(), kind, seconds, size, temp, speech)
        if kind == "corrupt":
            with open(temp, "r+b") as f:
                f.truncate(os.fstat(f.fileno()).st_size // 2)
        os.replace(temp, out)
    finally:
        outputs.remove_quietly(temp)
    return out


def _encode(
    ffmpeg: str, kind: str, seconds: float, size: tuple[int, int], temp: Path, speech: bool
) -> None:
    with tempfile.TemporaryDirectory(prefix="fredica-sample-") as scratch:
        srt = Path(scratch) / "cues.srt"
        srt.write_text(srt_text(sample_cues(seconds)), encoding="utf-8")
        args = _args(
            ffmpeg,
            "mkv" if kind == "corrupt" else kind,
            seconds,
            size,
            str(srt),
            str(temp),
            speech,
        )
        done = subprocess.run(args, capture_output=True, timeout=SAMPLE_TIMEOUT, check=False)
    if done.returncode:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise RuntimeError(f"ffmpeg could not make the sample: {' | '.join(message)}")
