"""Speech-to-text decisions, PURE: plain functions and one small state machine over plain
values, no I/O. :mod:`python_endpoints.jobs.transcribe` is the shell that decodes the audio,
runs the model and feeds what it decodes through here.

Windows and merging
    Long media are decoded in windows of ``chunk_seconds`` that overlap by
    ``overlap_seconds`` (:func:`plan_windows`); the last one may be shorter. The nominal *cut*
    between window k and k+1 is the middle of their overlap. A decoded segment is kept from
    the window whose *territory* holds its midpoint: window k's territory ends at its cut;
    window k+1's starts where window k actually stopped (the *position*, at most the cut).
    Nothing is kept whose midpoint lies before the position (it is merged already: a
    duplicate), and a kept segment that starts a little before it is clipped to it. So the
    merged transcript is ordered, never overlaps itself, and has no gap or duplicate at a cut
    (:class:`Merger`).

    When the decoder timed the words (the job asks it to), the rule is applied to each word
    instead of the whole segment: a segment that straddles a cut keeps its words before the
    cut, and the next window gives the rest; the merged segment keeps its words, with their
    times (what ANALYZE times a phrase by). Whisper's segments can last 30 s, and one cut
    off by a window's end takes the window's end as its own, whatever its text covers: judged
    whole, it would lose or repeat words at a cut unless the overlap were twice the longest
    segment.

What is final, and when
    Within one window segments come in time order, so a kept segment is final the moment it
    is decoded: it is streamed at once (a ``segment`` frame). The *position* — everything
    before it is merged for good, decoding resumes there — is the end of the last kept
    segment while a window is decoded, and moves to the window's end of territory when the
    window is done (or to the start of the first word past the cut, when that is earlier).
    It only grows; a kept segment never starts before a position reported earlier, and is
    sent before any position past its end. The first word past the cut ends the window
    early: the rest belongs to the next window.

Resuming
    A checkpoint is ``{"segments", "position", "languages", "unheard"}``. Decoding resumes at
    the later of its position and its last segment's end (a progress report may have been
    throttled away after the last segment), with its segments already merged; the first
    window starts a little earlier, with the last merged phrase (:func:`plan_from`).

Also here: the language vote, the transcript's coverage check, the compute-type orders to
load a model with and to fall back to after a GPU out of memory, and the status line.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from python_endpoints.status import said

#: Windows shorter than this at the media's end are not worth planning (float dust).
_EPSILON = 1e-6

# --- windows ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """A slice of the media decoded in one go, in seconds of the media."""

    #: Its number in the transcript (kept in each segment's ``chunk``).
    index: int
    start: float
    end: float
    #: Where its territory ends: the middle of its overlap with the next window, or the
    #: media's end for the last window.
    cut: float
    last: bool


def plan_windows(
    duration: float,
    chunk_seconds: float,
    overlap_seconds: float,
    start: float = 0.0,
    first_index: int = 0,
) -> list[Window]:
    """The windows that cover ``[start, duration]``: ``chunk_seconds`` long, each starting
    ``overlap_seconds`` before the previous one ends; the last one ends at ``duration`` (and
    may be short). None when ``start`` is at or past the end."""
    if chunk_seconds <= 0 or overlap_seconds < 0 or 2 * overlap_seconds >= chunk_seconds:
        raise ValueError("need chunk_seconds > 0 and 0 <= overlap_seconds < chunk_seconds / 2")
    step = chunk_seconds - overlap_seconds
    windows: list[Window] = []
    if start + _EPSILON >= duration:
        return windows
    while True:
        i = len(windows)
        begin = start + i * step  # multiplied, not summed: no drift over hours
        end = begin + chunk_seconds
        if end + _EPSILON >= duration:
            windows.append(Window(first_index + i, begin, duration, duration, True))
            return windows
        windows.append(Window(first_index + i, begin, end, end - overlap_seconds / 2, False))


def plan_from(
    duration: float,
    chunk_seconds: float,
    overlap_seconds: float,
    position: float,
    first_index: int = 0,
    lead_in: float | None = None,
) -> list[Window]:
    """The windows that decode what is left after ``position``, where decoding stopped
    part-way (a pause, a crash, a stretch to decode again). With ``lead_in`` (the start of the
    last merged segment: where a phrase begins) at most ``overlap_seconds`` before the
    position, the first window starts there: a window that starts in the middle of a
    sentence often loses what follows (the decoder skips what it cannot place), one that
    starts with a whole phrase goes on from it; the merge drops what it decodes again before
    the position."""
    if position + _EPSILON >= duration:
        return []
    start = position
    if lead_in is not None and position - overlap_seconds <= lead_in < position:
        start = lead_in
    return plan_windows(duration, chunk_seconds, overlap_seconds, start, first_index)


# --- segments and the merge ---------------------------------------------------------------------


@dataclass(frozen=True)
class RawWord:
    """A word of a decoded segment: times in seconds from its window's start; the text with
    its leading space, as the decoder spells it."""

    start: float
    end: float
    text: str


@dataclass(frozen=True)
class RawSegment:
    """A segment as the decoder gives it: times in seconds from its window's start, and its
    words when the decoder timed them (the merge then splits the segment at a cut)."""

    start: float
    end: float
    text: str
    avg_logprob: float = 0.0
    no_speech_prob: float = 0.0
    words: tuple[RawWord, ...] = ()


def word_lengths(text: str, words: Sequence[str]) -> list[int] | None:
    """How many characters of ``text`` (a segment's text, stripped) each of its ``words``
    spans, as the decoder spells them (with their leading space): the spaces before a word
    are its own, so the lengths add up to the text's. None when the words do not spell the
    text."""
    joined = "".join(words)
    if joined.strip() != text:
        return None
    at = -(len(joined) - len(joined.lstrip()))  # where the next word starts in ``text``
    lengths = []
    for word in words:
        lengths.append(max(0, min(len(text), at + len(word)) - max(0, at)))
        at += len(word)
    return lengths


def segment_dict(
    start: float,
    end: float,
    text: str,
    avg_logprob: float,
    no_speech_prob: float,
    chunk: int,
    words: Sequence[tuple[float, float, str]] = (),
) -> dict[str, Any]:
    """A merged segment as it is streamed, checkpointed and written: times in seconds of the
    media (to the millisecond), the text stripped, the decoder's confidence, the window; and
    when the decoder timed its words (and they spell the text), ``words``: ``[start, end,
    length]`` each, ``length`` the characters of the text it spans (see
    :func:`word_lengths`). The text is not repeated: a checkpoint holds every segment, and
    has to fit in one frame."""
    stripped = text.strip()
    segment: dict[str, Any] = {
        "start": round(start, 3),
        "end": round(end, 3),
        "text": stripped,
        "avg_logprob": round(avg_logprob, 4),
        "no_speech_prob": round(no_speech_prob, 4),
        "chunk": chunk,
    }
    lengths = word_lengths(stripped, [t for _, _, t in words]) if words else None
    if lengths:
        timed = [
            [round(a, 3), round(max(a, b), 3), n]
            for (a, b, _), n in zip(words, lengths, strict=True)
            if n
        ]
        if timed:
            segment["words"] = timed
    return segment


class Verdict(enum.Enum):
    #: Merged: stream it now, it is final.
    KEEP = "keep"
    #: Not this window's (before its territory), a duplicate of what is merged, or empty.
    DROP = "drop"
    #: Past the window's cut: the rest of the window belongs to the next one; stop decoding it.
    STOP = "stop"


class Merger:
    """The transcript as it grows, window by window: feed each window's decoded segments in
    order between :meth:`begin` and :meth:`finish` (or :meth:`abandon`)."""

    def __init__(
        self,
        duration: float,
        segments: Iterable[Mapping[str, Any]] = (),
        position: float = 0.0,
        languages: Mapping[str, float] | None = None,
        unheard: Iterable[Sequence[float]] = (),
    ) -> None:
        self.duration = duration
        self.segments: list[dict[str, Any]] = [dict(s) for s in segments]
        last_end = float(self.segments[-1]["end"]) if self.segments else 0.0
        #: Everything before it is merged for good; decoding resumes here.
        self.position = min(duration, max(position, last_end))
        self.resumed_from = self.position
        #: Seconds of speech merged per language (the vote), and the best probability the
        #: detector gave each in this run (the tie-break).
        self.languages: dict[str, float] = {k: float(v) for k, v in (languages or {}).items()}
        self.probabilities: dict[str, float] = {}
        #: Stretches with speech that no decoding made out, even on a second try.
        self.unheard: list[tuple[float, float]] = [(float(a), float(b)) for a, b in unheard]
        self._window: Window | None = None
        self._beyond: float | None = None
        self._language: str | None = None

    @property
    def lead_in(self) -> float | None:
        """Where the last merged segment starts (a phrase's beginning), if any."""
        return float(self.segments[-1]["start"]) if self.segments else None

    @classmethod
    def resume(cls, duration: float, checkpoint: Mapping[str, Any] | None) -> Merger:
        """A merger that continues from a checkpoint (the params' ``resume``), or from 0."""
        if not checkpoint:
            return cls(duration)
        return cls(
            duration,
            checkpoint.get("segments") or (),
            float(checkpoint.get("position") or 0.0),
            checkpoint.get("languages") or {},
            checkpoint.get("unheard") or (),
        )

    @property
    def next_chunk(self) -> int:
        """The number of the next window: after those of the segments merged already."""
        return max((int(s.get("chunk", -1)) for s in self.segments), default=-1) + 1

    def extras(self) -> dict[str, Any]:
        """What a progress frame carries for the checkpoint: ``position``, ``languages`` and
        ``unheard``."""
        return {
            "position": round(self.position, 3),
            "languages": dict(self.languages),
            "unheard": [[a, b] for a, b in self.unheard],
        }

    def begin(self, window: Window, language: str | None, probability: float) -> None:
        """Start merging ``window``, decoded as ``language`` (detected with ``probability``)."""
        self._window = window
        self._beyond = None
        self._language = language
        # A window planned to start after the position (it never is) leaves no gap behind.
        self.position = max(self.position, window.start)
        if language:
            self.languages.setdefault(language, 0.0)
            self.probabilities[language] = max(self.probabilities.get(language, 0.0), probability)

    def offer(self, raw: RawSegment) -> tuple[Verdict, dict[str, Any] | None]:
        """Judge the window's next decoded segment: the part of it that is merged (returned as
        it is streamed, or None), and whether to go on (KEEP, DROP) or stop the window (STOP).

        The unit judged by its midpoint is the word when the segment has timed words, else
        the whole segment: a segment that straddles the cut keeps its words before the cut
        and leaves the rest to the next window."""
        window = self._current("offer")
        units = self._placed(window, raw)
        kept, beyond = self._judge(window, units)
        if beyond is not None and self._beyond is None:
            self._beyond = beyond
        whole = len(kept) == len(units)
        text = (raw.text if whole else "".join(t for _, _, t in kept)).strip()
        if not kept or not text:
            return (Verdict.DROP if beyond is None else Verdict.STOP), None
        segment = segment_dict(
            kept[0][0],
            kept[-1][1],
            text,
            raw.avg_logprob,
            raw.no_speech_prob,
            window.index,
            kept if raw.words else (),
        )
        self.segments.append(segment)
        self.position = max(self.position, segment["end"])
        if self._language:
            self.languages[self._language] += segment["end"] - segment["start"]
        return (Verdict.KEEP if beyond is None else Verdict.STOP), segment

    def first_kept(self, raw: RawSegment) -> float | None:
        """Where the part of ``raw`` that :meth:`offer` would merge starts (None: nothing of
        it would be). The job looks there for a stretch the decoder skipped."""
        window = self._current("first_kept")
        kept, _ = self._judge(window, self._placed(window, raw))
        return kept[0][0] if kept else None

    def reach(self) -> float:
        """Where :meth:`finish` moves the position: the end of the window's territory, or the
        start of the first word it saw past the cut when that is earlier."""
        window = self._current("reach")
        if window.last:
            return self.duration
        # To the millisecond, as segments are: nothing kept later can start before it.
        return round(window.cut if self._beyond is None else min(window.cut, self._beyond), 3)

    def finish(self) -> float:
        """The window is decoded: move the position to :meth:`reach`. Returns it."""
        self.position = max(self.position, self.reach())
        self._window = None
        return self.position

    def mark_unheard(self, start: float, end: float) -> None:
        """Record a stretch with speech that decoding again did not make out either."""
        self.unheard.append((round(start, 3), round(end, 3)))

    def _current(self, method: str) -> Window:
        if self._window is None:
            raise RuntimeError(f"{method}() outside a window: call begin() first")
        return self._window

    def _judge(
        self, window: Window, units: Sequence[tuple[float, float, str]]
    ) -> tuple[list[tuple[float, float, str]], float | None]:
        """The units merged (clipped to the position, then to each other), and the start of
        the first one past the cut (None: none is)."""
        kept: list[tuple[float, float, str]] = []
        floor = self.position
        for start, end, text in units:
            middle = (start + end) / 2
            if middle >= window.cut and not window.last:
                return kept, start
            if middle < floor:
                continue
            kept.append((max(start, floor), end, text))
            floor = end
        return kept, None

    @staticmethod
    def _placed(window: Window, raw: RawSegment) -> list[tuple[float, float, str]]:
        """The units judged by their midpoint (the words, or the whole segment), in seconds
        of the media, clipped to the window."""
        placed = []
        for unit in raw.words or (RawWord(raw.start, raw.end, raw.text),):
            end = min(window.end, window.start + max(0.0, unit.end))
            placed.append((min(end, window.start + max(0.0, unit.start)), end, unit.text))
        return placed

    def abandon(self) -> None:
        """The window failed part-way (out of memory): what was merged stays, and so does the
        position; decoding starts again from there."""
        self._window = None


# --- language ---------------------------------------------------------------------------------


def vote(
    seconds: Mapping[str, float],
    probabilities: Mapping[str, float],
    fixed: str | None = None,
) -> tuple[str | None, float | None]:
    """The transcript's language: ``fixed`` when one was asked for, else the language with
    the most seconds of speech, ties broken by the detector's probability (then by name).
    ``(None, None)`` when nothing was detected."""
    if fixed:
        return fixed, 1.0
    if not seconds:
        return None, None
    best = max(sorted(seconds), key=lambda lang: (seconds[lang], probabilities.get(lang, 0.0)))
    return best, probabilities.get(best)


# --- verification -----------------------------------------------------------------------------

#: The transcript may stop this many seconds before the media ends without a look at the tail.
COVERAGE_TOLERANCE = 2.0
#: Speech the voice detector finds after the transcript's end (past the tolerance) that makes
#: the transcript incomplete; less is a breath, a click, music the detector took for speech.
MISSED_SPEECH = 2.0


def speech_seconds(spans: Sequence[tuple[float, float]]) -> float:
    """How long the voice detector's spans last, together."""
    return sum(max(0.0, b - a) for a, b in spans)


def needs_tail_check(last_end: float | None, duration: float) -> bool:
    """Whether the audio after the last segment must be searched for speech."""
    return duration - (last_end or 0.0) > COVERAGE_TOLERANCE


def check_coverage(
    last_end: float | None, duration: float, tail_speech: Sequence[tuple[float, float]]
) -> str | None:
    """Whether a transcript covers the media: None when it does (it ends within
    :data:`COVERAGE_TOLERANCE` of the end, or what follows its end is silence, or there is no
    speech at all), else what is wrong. ``tail_speech``: the voice detector's speech, in
    seconds of the media, after ``last_end`` (None: no segment, the whole media)."""
    end = last_end or 0.0
    if not needs_tail_check(last_end, duration):
        return None
    from_ = end + COVERAGE_TOLERANCE
    missed = [(max(a, from_), min(b, duration)) for a, b in tail_speech if min(b, duration) > from_]
    total = sum(b - a for a, b in missed)
    if total < MISSED_SPEECH:
        return None
    first = min(a for a, _ in missed)
    if last_end is None:
        return (
            f"the transcript is empty, but there is speech in the audio ({total:.0f} s from "
            f"{clock(first)} of {clock(duration)}); the model could not make it out: try a "
            "larger model or another language setting, then retry"
        )
    return (
        f"the transcript stops at {clock(end)} of {clock(duration)}, but there is speech after "
        f"it ({total:.0f} s from {clock(first)}); the audio may be damaged or the model lost "
        "track: check that the audio plays to the end, then retry (a larger model may help)"
    )


# --- devices and compute types ----------------------------------------------------------------

#: ``auto``: the first of these the device supports (after the one remembered for it).
AUTO_ORDER = ("float16", "float32", "int8")
#: Bytes per weight, roughly: a fallback after an out of memory goes to a smaller one.
_SIZE = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int8_float32": 1,
    "int8_float16": 1,
    "int8_bfloat16": 1,
    "int8": 1,
}
#: Which smaller type to prefer, when the device supports several.
_SMALLER_ORDER = ("float16", "bfloat16", "int8_float16", "int8_bfloat16", "int8", "int8_float32")
#: What CTranslate2 raises on a CUDA out of memory (``RuntimeError``).
CUDA_OOM_MESSAGE = "CUDA failed with error out of memory"


def choose_device(requested: str, cuda_devices: int) -> str:
    """``auto``: CUDA when a device is there, else the CPU."""
    if requested == "auto":
        return "cuda" if cuda_devices > 0 else "cpu"
    return requested


def load_order(requested: str, supported: Collection[str], remembered: str | None) -> list[str]:
    """The compute types to try, in order: the one asked for; or for ``auto``,
    :data:`AUTO_ORDER` filtered by what the device supports, the remembered one first."""
    if requested != "auto":
        return [requested]
    order = [t for t in AUTO_ORDER if t in supported]
    if remembered and remembered in supported:
        order = [remembered, *(t for t in order if t != remembered)]
    return order


def load_candidates(
    device: str,
    cuda_devices: int,
    compute_type: str,
    allow_fallback: bool,
    supported: Mapping[str, Collection[str]],
    remembered: Mapping[str, str],
) -> list[tuple[str, str]]:
    """``(device, compute type)`` pairs to load the model with, in order. A GPU that fails
    them all is followed by the CPU when the device was ``auto`` or a fallback is allowed."""
    chosen = choose_device(device, cuda_devices)
    out = [
        (chosen, t)
        for t in load_order(compute_type, supported.get(chosen, ()), remembered.get(chosen))
    ]
    if chosen != "cpu" and (device == "auto" or allow_fallback):
        out += [
            ("cpu", t) for t in load_order("auto", supported.get("cpu", ()), remembered.get("cpu"))
        ]
    return out


def smaller_type(current: str, supported: Collection[str]) -> str | None:
    """The next compute type that needs less memory than ``current`` on this device."""
    size = _SIZE.get(current, 4)
    return next((t for t in _SMALLER_ORDER if t in supported and _SIZE[t] < size), None)


def after_out_of_memory(
    device: str,
    compute_type: str,
    supported: Mapping[str, Collection[str]],
    remembered: Mapping[str, str],
) -> tuple[str, str] | None:
    """Where to reload after running out of memory: a smaller compute type on the same
    device, then the CPU; None when there is nowhere left."""
    smaller = smaller_type(compute_type, supported.get(device, ()))
    if smaller is not None:
        return device, smaller
    if device != "cpu":
        order = load_order("auto", supported.get("cpu", ()), remembered.get("cpu"))
        if order:
            return "cpu", order[0]
    return None


def fallback_chain(
    device: str,
    compute_type: str,
    supported: Mapping[str, Collection[str]],
    remembered: Mapping[str, str],
) -> list[tuple[str, str]]:
    """Every place to reload at after an out of memory, in order (the next one is tried
    when a reload fails too): :func:`after_out_of_memory`, repeatedly."""
    chain: list[tuple[str, str]] = []
    here = after_out_of_memory(device, compute_type, supported, remembered)
    while here is not None:
        chain.append(here)
        here = after_out_of_memory(*here, supported, remembered)
    return chain


def is_out_of_memory(message: str) -> bool:
    """Whether an error from the model says the GPU ran out of memory."""
    text = message.lower()
    return "out of memory" in text or "cublas_status_alloc_failed" in text


# --- reporting --------------------------------------------------------------------------------


def clock(seconds: float) -> str:
    """``12:03``, ``1:02:03``: a time in the media, for a person."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def percent(position: float, duration: float) -> float:
    return 100.0 if duration <= 0 else min(100.0, 100.0 * position / duration)


def status_text(position: float, duration: float, speed: float | None) -> str:
    """``transcribing 3:20 of 45:10 (1.8x)``, as status messages."""
    text: str = said("transcribing", position=clock(position), duration=clock(duration))
    if speed is not None and speed > 0:
        text += said("speed", speed=f"{speed:.1f}")
    return text


def transcript_document(
    language: str | None,
    duration: float,
    model: str,
    segments: Sequence[Mapping[str, Any]],
    unheard: Sequence[tuple[float, float]] = (),
) -> dict[str, Any]:
    """The transcript file's content (version 1; read by EXPORT_SUBTITLES and ANALYZE):
    the segments as merged (with their ``words`` when timed: :func:`segment_dict`);
    ``unheard`` lists the stretches with speech that no decoding made out."""
    return {
        "version": 1,
        "language": language,
        "duration": round(duration, 3),
        "model": model,
        "segments": [dict(s) for s in segments],
        "unheard": [[a, b] for a, b in unheard],
    }
