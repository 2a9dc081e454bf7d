"""The file side of the text jobs (EXPORT_SUBTITLES, ANALYZE), in their child: TRANSCRIBE's
transcript read and checked, text outputs written to their temporary names.

Standard library only. A transcript is JSON::

    {"version": 1, "language": "en", "duration": 61.2, "model": "tiny.en",
     "segments": [{"start": 0.0, "end": 2.5, "text": "Hello there.", ...}, ...],
     "unheard": [[30.0, 34.5]]}

``language``, ``duration`` and ``model`` may be null; ``unheard`` (stretches with speech that
no decoding made out) may be missing; a segment's other keys (the decoder's
``avg_logprob``, ``no_speech_prob``, ``chunk``) are not read. A segment may have its
``words``, each ``[start, end, length]``: when it is said, and how many characters of the
segment's text it spans (the spaces before it included), in order — together they span the
whole text; transcripts written before words were kept have none. Anything else is a
``BAD_TRANSCRIPT`` that says what is wrong.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import outputs
from python_endpoints.jobs.captions import Segment, Word
from python_endpoints.serving.child import JobFailed

TRANSCRIPT_VERSION = 1
#: Times are written to the millisecond: a word may start that much before its segment.
WORD_SLACK = 0.001


@dataclass(frozen=True)
class Transcript:
    language: str | None
    duration: float | None
    model: str | None
    segments: tuple[Segment, ...]
    unheard: tuple[tuple[float, float], ...] = ()


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} is {json.dumps(value)}, not a number")
    if value < 0:
        raise ValueError(f"{what} is negative ({value})")
    return float(value)


def _span(
    start: Any, end: Any, where: str, first: str = "start", second: str = "end"
) -> tuple[float, float]:
    """Two times in seconds, the second not before the first."""
    a, b = _number(start, f"{where}: {first}"), _number(end, f"{where}: {second}")
    if b < a:
        raise ValueError(f"{where} ends ({b} s) before it starts ({a} s)")
    return a, b


def _optional_str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f'"{key}" is {json.dumps(value)}, not a string')
    return value or None


def parse_transcript(data: Any) -> Transcript:
    """Check a loaded transcript. Raises ValueError saying what is wrong (pure)."""
    if not isinstance(data, dict):
        raise ValueError(f"it holds a JSON {type(data).__name__}, not an object")
    version = data.get("version")
    if version != TRANSCRIPT_VERSION:
        raise ValueError(
            f"its version is {json.dumps(version)}; this Fredica reads version {TRANSCRIPT_VERSION}"
        )
    duration = data.get("duration")
    if duration is not None:
        duration = _number(duration, '"duration"')
    raw = data.get("segments")
    if not isinstance(raw, list):
        raise ValueError('"segments" is missing or not a list')
    segments = []
    for index, item in enumerate(raw):
        where = f"segment {index}"
        if not isinstance(item, dict):
            raise ValueError(f"{where} is not an object")
        text = item.get("text")
        start, end = _span(item.get("start"), item.get("end"), where, '"start"', '"end"')
        if not isinstance(text, str):
            raise ValueError(f'{where}: "text" is {json.dumps(text)}, not a string')
        words = _words(item["words"], text, start, end, where) if "words" in item else ()
        segments.append(Segment(start, end, text.strip(), words))
    return Transcript(
        language=_optional_str(data, "language"),
        duration=duration,
        model=_optional_str(data, "model"),
        segments=tuple(segments),
        unheard=_stretches(data.get("unheard", [])),
    )


def _shown(value: Any) -> str:
    """A value in an error message: its JSON, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _words(raw: Any, text: str, start: float, end: float, where: str) -> tuple[Word, ...]:
    """A segment's ``words``: each ``[start, end, length]``, in order, said within the
    segment, their lengths spanning its ``text`` exactly."""
    if not isinstance(raw, list):
        raise ValueError(f'{where}: "words" is {_shown(raw)}, not a list')
    words = []
    at, last = 0, start
    for index, item in enumerate(raw):
        word = f"{where}: word {index}"
        if not isinstance(item, list) or len(item) != 3:
            raise ValueError(f"{word} is {_shown(item)}, not [start, end, length]")
        a, b = _span(item[0], item[1], word)
        length = item[2]
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise ValueError(f"{word}: its length is {_shown(length)}, not a count of characters")
        if a < last - WORD_SLACK:
            raise ValueError(
                f"{word} starts ({a} s) before the word or segment before it ({last} s)"
            )
        if a > end + WORD_SLACK:
            raise ValueError(f"{word} starts ({a} s) after its segment ends ({end} s)")
        words.append(Word(a, b, text[at : at + length]))
        at, last = at + length, a
    if at != len(text):
        raise ValueError(
            f"{where}: its words span {at} characters of its text, which has {len(text)}"
        )
    return tuple(words)


def _stretches(raw: Any) -> tuple[tuple[float, float], ...]:
    if not isinstance(raw, list):
        raise ValueError(f'"unheard" is {json.dumps(raw)}, not a list')
    out = []
    for index, item in enumerate(raw):
        where = f'"unheard" {index}'
        if not isinstance(item, list) or len(item) != 2:
            raise ValueError(f"{where} is {json.dumps(item)}, not [start, end]")
        out.append(_span(item[0], item[1], where))
    return tuple(out)


def load_transcript(path: str | Path) -> Transcript:
    """Read and check a transcript. Raises :class:`JobFailed`: ``INPUT_MISSING`` when there
    is none, ``BAD_TRANSCRIPT`` when it cannot be used, ``IO_ERROR`` when it cannot be read."""
    path = Path(path)
    again = "transcribe the media again, then retry"
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError as exc:
        raise JobFailed(
            f"the transcript {path} does not exist: transcribe the media first (or again), "
            "then retry",
            ErrorType.INPUT_MISSING,
        ) from exc
    except UnicodeDecodeError as exc:
        raise JobFailed(
            f"the transcript {path.name} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
            + again,
            ErrorType.BAD_TRANSCRIPT,
        ) from exc
    except json.JSONDecodeError as exc:
        raise JobFailed(
            f"the transcript {path.name} is not valid JSON ({exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}); it may have been cut short or edited: " + again,
            ErrorType.BAD_TRANSCRIPT,
        ) from exc
    except OSError as exc:
        raise JobFailed(
            f"cannot read the transcript {path}: {exc.strerror or exc}; check that it is a "
            "readable file, then retry",
            ErrorType.IO_ERROR,
        ) from exc
    try:
        return parse_transcript(data)
    except ValueError as exc:
        raise JobFailed(
            f"the transcript {path.name} cannot be used: {exc}; " + again, ErrorType.BAD_TRANSCRIPT
        ) from None


def distinct(input: Path, output: Path) -> None:
    """Refuse to write over the input (``PAYLOAD_ERROR``)."""
    if os.path.normcase(os.path.abspath(input)) == os.path.normcase(os.path.abspath(output)):
        raise JobFailed(
            f"the output {output} is the transcript itself; choose another output path",
            ErrorType.PAYLOAD_ERROR,
        )


def write_text(path: Path, content: str) -> None:
    """Write ``content`` as UTF-8, newlines as they are (``\\n``)."""
    with outputs.writing(path), open(path, "w", encoding="utf-8", newline="") as f:
        f.write(content)


def read_text(path: Path) -> str:
    """Read back what :func:`write_text` wrote."""
    with outputs.writing(path), open(path, encoding="utf-8", newline="") as f:
        return f.read()


def verify_failed(path: Path, why: str) -> JobFailed:
    return JobFailed(f"the output {path.name} failed verification: {why}", ErrorType.VERIFY_FAILED)
