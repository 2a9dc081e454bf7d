"""Readable captions from a transcript's segments. PURE: plain functions over plain values, no
I/O (an import-linter contract); :mod:`python_endpoints.jobs.export` is the shell that reads
the transcript and writes the files.

The rules (their knobs are :class:`CaptionRules`, the ``ExportSubtitlesParams`` of
:mod:`python_endpoints.params`):

- a cue has at most ``max_lines`` lines of at most ``max_line_chars`` characters, broken
  between words; a word longer than a line gets a line of its own (words are never cut);
- a cue's lines are balanced, and a break after punctuation is preferred;
- a segment too long for one cue is split into several, its time shared by character count;
- a cue longer than ``max_cue_seconds`` is split in two (again if need be); a single word is
  shown that long at most;
- a cue shorter than ``min_cue_seconds`` is extended into the silence before the next cue,
  never over it;
- cues never overlap and keep the segments' order (by start; ties keep their order): when
  segments overlap, the earlier cue ends where the later one starts;
- empty segments are dropped; every word of the others is in exactly one cue, in order.

Times are integer milliseconds (what SRT and WebVTT can say), so that the rules hold exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

#: A line may break after these (a clause ends there); closing quotes and brackets after
#: them are looked through. (Full-width punctuation included, on purpose.)
CLAUSE_ENDS = (".", ",", "!", "?", ";", ":", "…", "。", "，", "！", "？", "、", "；", "：")  # noqa: RUF001
_CLOSERS = "\"')]}»”’」』"  # noqa: RUF001
#: Plain text: a new paragraph where speech pauses longer than this (seconds).
PARAGRAPH_PAUSE = 2.0
#: The caption of a stretch with speech that no decoding made out.
INAUDIBLE = "[inaudible]"


@dataclass(frozen=True)
class Word:
    """A word of a segment: seconds, and the characters of the segment's text it spans, the
    spaces before it included (a word without them is joined to the one before it:
    ``round`` and ``-trip``)."""

    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Segment:
    """A transcript segment: seconds, and what was said; its words with their times when the
    transcript has them (in order, together they spell ``text``, give or take the spaces
    around it)."""

    start: float
    end: float
    text: str
    words: tuple[Word, ...] = ()
    #: Who says it (from 1), when the speakers were found (DIARIZE); None otherwise.
    speaker: int | None = None


@dataclass(frozen=True)
class Cue:
    """A caption: milliseconds, and its lines; who says it, when known."""

    start: int
    end: int
    lines: tuple[str, ...]
    speaker: int | None = None

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass(frozen=True)
class CaptionRules:
    """How cues are cut: EXPORT_SUBTITLES's params of the same names (their defaults are the
    params model's)."""

    max_line_chars: int
    max_lines: int
    max_cue_seconds: float
    min_cue_seconds: float


def to_ms(seconds: float) -> int:
    return round(seconds * 1000)


def ends_clause(word: str) -> bool:
    return word.rstrip(_CLOSERS).endswith(CLAUSE_ENDS)


def with_unheard(
    segments: Iterable[Segment], unheard: Iterable[tuple[float, float]]
) -> list[Segment]:
    """``segments`` and, where speech could not be made out, an :data:`INAUDIBLE` segment:
    a reader of the captions sees that something was said there."""
    return ordered([*segments, *(Segment(a, b, INAUDIBLE) for a, b in unheard)])


def ordered(segments: Iterable[Segment]) -> list[Segment]:
    """The segments captions and text are made of: the non-empty ones, by start time (a
    stable sort: segments that start together keep their order)."""
    return sorted((s for s in segments if s.text.strip()), key=lambda s: s.start)


# --- lines ------------------------------------------------------------------------------------


def count_lines(words: Sequence[str], width: int) -> int:
    """The fewest lines ``words`` take at ``width`` characters a line (greedy is optimal)."""
    lines, used = 0, 0
    for word in words:
        if lines and used + 1 + len(word) <= width:
            used += 1 + len(word)
        else:
            lines, used = lines + 1, len(word)
    return lines


def wrap(words: Sequence[str], width: int) -> list[str]:
    """``words`` in as few lines as they need, balanced (the sum of the squared line lengths
    is the least), preferring to break after punctuation."""
    if not words:
        return []
    needed = count_lines(words, width)
    if needed == 1:
        return [" ".join(words)]
    n, bonus = len(words), (0.3 * width) ** 2
    # best[lines][j]: the cost of words[:j] in that many lines; start[lines][j]: where the
    # last of those lines starts.
    best = [[math.inf] * (n + 1) for _ in range(needed + 1)]
    start = [[0] * (n + 1) for _ in range(needed + 1)]
    best[0][0] = 0.0
    for lines in range(1, needed + 1):
        for j in range(1, n + 1):
            size = -1
            for i in range(j - 1, -1, -1):
                size += 1 + len(words[i])
                if size > width and i < j - 1:
                    break  # too long (a word alone may be: it cannot be cut)
                if best[lines - 1][i] == math.inf:
                    continue
                cost = best[lines - 1][i] + size * size
                if i and ends_clause(words[i - 1]):
                    cost -= bonus
                if cost < best[lines][j]:
                    best[lines][j], start[lines][j] = cost, i
    out, j = [], n
    for lines in range(needed, 0, -1):
        i = start[lines][j]
        out.append(" ".join(words[i:j]))
        j = i
    return out[::-1]


# --- cues of one segment ----------------------------------------------------------------------


def _fit(words: Sequence[str], i: int, width: int, max_lines: int) -> int:
    """How many words from ``words[i]`` on fit in one cue (at least one)."""
    lines, used, n = 0, 0, 0
    for k in range(i, len(words)):
        size = len(words[k])
        if lines and used + 1 + size <= width:
            used += 1 + size
        else:
            if lines == max_lines:
                break
            lines, used = lines + 1, size
        n += 1
    return n


def _chars(words: Sequence[str], i: int, j: int) -> int:
    return sum(len(w) + 1 for w in words[i:j])


def split_words(words: Sequence[str], width: int, max_lines: int) -> list[tuple[int, int]]:
    """Cut ``words`` into cues that fit (``max_lines`` lines of ``width``): the word ranges
    ``(i, j)``. As few cues as fit; the last two share their words evenly (no orphan word at
    the end); elsewhere a cue ends after punctuation when that keeps it at least half full."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(words)
    while i < n:
        j = i + _fit(words, i, width, max_lines)
        if j < n:
            if _fit(words, j, width, max_lines) == n - j:
                j = _share(words, i, j, n, width, max_lines)
            else:
                half = i + math.ceil((j - i) / 2)
                j = next((k for k in range(j, half - 1, -1) if ends_clause(words[k - 1])), j)
        out.append((i, j))
        i = j
    return out


def _share(words: Sequence[str], i: int, j: int, n: int, width: int, max_lines: int) -> int:
    # words[i:j] and words[j:n] each fit a cue. Move the break back (never forward: words[i:j]
    # is all that fits) while the rest still fits, to the most even split, punctuation helping.
    best, best_cost = j, math.inf
    bonus = 0.5 * width
    k = j
    while k > i and _fit(words, k, width, max_lines) == n - k:
        cost: float = abs(_chars(words, i, k) - _chars(words, k, n))
        if ends_clause(words[k - 1]):
            cost -= bonus
        if cost < best_cost:
            best, best_cost = k, cost
        k -= 1
    return best


def _halve(words: Sequence[str], offsets: Sequence[int], a: int, b: int) -> int:
    # A break in (a, b) near the middle of the characters, punctuation helping.
    middle = (offsets[a] + offsets[b]) / 2
    bonus = 0.25 * (offsets[b] - offsets[a])

    def cost(k: int) -> float:
        return abs(offsets[k] - middle) - (bonus if ends_clause(words[k - 1]) else 0)

    return min(range(a + 1, b), key=cost)


def segment_cues(
    start: int, end: int, words: Sequence[str], rules: CaptionRules
) -> list[tuple[int, int, list[str]]]:
    """One segment (ms) as timed pieces ``(start, end, words)``: cut to fit a cue, then to
    last at most ``max_cue_seconds``. A piece's time is the segment's, shared by characters."""
    if not words:
        return []
    offsets = [0]
    for word in words:
        offsets.append(offsets[-1] + len(word) + 1)
    total, span = offsets[-1], end - start
    max_ms = max(1, to_ms(rules.max_cue_seconds))

    def at(k: int) -> int:
        return start + (2 * span * offsets[k] + total) // (2 * total)

    out: list[tuple[int, int, list[str]]] = []

    def place(a: int, b: int) -> None:
        if at(b) - at(a) <= max_ms:
            out.append((at(a), at(b), list(words[a:b])))
        elif b - a == 1:
            out.append((at(a), at(a) + max_ms, [words[a]]))  # one word, shown that long at most
        else:
            k = _halve(words, offsets, a, b)
            place(a, k)
            place(k, b)

    for a, b in split_words(words, rules.max_line_chars, rules.max_lines):
        place(a, b)
    return out


# --- cues of a transcript ---------------------------------------------------------------------


def build_cues(
    segments: Iterable[Segment], rules: CaptionRules, duration: float | None = None
) -> list[Cue]:
    """Captions for ``segments`` by the rules of this module. ``duration`` (seconds, the
    media's) bounds how far the last cue may be extended."""
    pieces: list[tuple[int, int, list[str], int | None]] = []
    for segment in ordered(segments):
        start = to_ms(segment.start)
        end = max(start, to_ms(segment.end))
        pieces += [
            (a, b, words, segment.speaker)
            for a, b, words in segment_cues(start, end, segment.text.split(), rules)
        ]
    placed: list[tuple[int, int, list[str], int | None]] = []
    for start, end, words, speaker in pieces:
        if placed and start < placed[-1][1]:
            # Overlapping segments: end the earlier cue here (it lasts a millisecond at least).
            p_start, _, p_words, p_speaker = placed[-1]
            cut = max(start, p_start + 1)
            placed[-1] = (p_start, cut, p_words, p_speaker)
            start = cut
        placed.append((start, max(end, start + 1), words, speaker))
    min_ms = to_ms(rules.min_cue_seconds)
    cues = []
    for index, (start, end, words, speaker) in enumerate(placed):
        if end - start < min_ms:
            target = start + min_ms
            if index + 1 < len(placed):
                target = min(target, placed[index + 1][0])
            elif duration is not None:
                target = min(target, to_ms(duration))
            end = max(end, target)
        cues.append(Cue(start, end, tuple(wrap(words, rules.max_line_chars)), speaker))
    return cues


# --- speakers ---------------------------------------------------------------------------------


def _who(start: float, end: float, turns: Sequence[tuple[float, float, int]]) -> int | None:
    """The speaker of the turn that overlaps ``[start, end]`` most; of the nearest turn when
    none does (a word in a pause between turns); None when there are none."""
    if not turns:
        return None
    overlap = [(min(end, b) - max(start, a), s) for a, b, s in turns]
    best, speaker = max(overlap)
    if best > 0:
        return speaker
    middle = (start + end) / 2
    return min(turns, key=lambda t: min(abs(middle - t[0]), abs(middle - t[1])))[2]


def with_speakers(
    segments: Iterable[Segment], turns: Sequence[tuple[float, float, int]]
) -> list[Segment]:
    """``segments`` labelled with who speaks (``turns``: ``(start, end, speaker)``): a segment
    with word times is split where its words change speaker, each word going to the turn it
    overlaps most; one without, whole, to the turn it overlaps most."""
    out: list[Segment] = []
    for segment in ordered(segments):
        if not segment.words:
            out.append(replace(segment, speaker=_who(segment.start, segment.end, turns)))
            continue
        groups: list[list[Word]] = []
        speakers: list[int | None] = []
        for word in segment.words:
            who = _who(word.start, word.end, turns)
            if not groups or speakers[-1] != who:
                groups.append([])
                speakers.append(who)
            groups[-1].append(word)
        for words, who in zip(groups, speakers, strict=True):
            text = "".join(w.text for w in words).strip()
            start = segment.start if words[0] is segment.words[0] else words[0].start
            end = segment.end if words[-1] is segment.words[-1] else words[-1].end
            out.append(Segment(start, end, text, tuple(words), who))
    return out


def speaker_label(speaker: int, names: Mapping[str, str] | None = None) -> str:
    """How a speaker is called: the name given to it, else ``Speaker N``."""
    return (names or {}).get(str(speaker)) or f"Speaker {speaker}"


# --- plain text -------------------------------------------------------------------------------


def paragraphs(
    segments: Iterable[Segment],
    pause: float = PARAGRAPH_PAUSE,
    names: Mapping[str, str] | None = None,
) -> list[str]:
    """The transcript as paragraphs: a new one where speech pauses longer than ``pause``, and
    where the speaker changes (then starting ``Speaker N: ``, or the name given)."""
    out: list[list[str]] = []
    last_end: float | None = None
    last_speaker: int | None = None
    for segment in ordered(segments):
        text = " ".join(segment.text.split())
        changed = segment.speaker is not None and segment.speaker != last_speaker
        if last_end is None or segment.start - last_end > pause or changed:
            out.append([])
            if segment.speaker is not None:
                out[-1].append(speaker_label(segment.speaker, names) + ":")
        out[-1].append(text)
        last_end = segment.end if last_end is None else max(last_end, segment.end)
        last_speaker = segment.speaker
    return [" ".join(texts) for texts in out]


def plain_text(
    segments: Iterable[Segment],
    pause: float = PARAGRAPH_PAUSE,
    names: Mapping[str, str] | None = None,
) -> str:
    """Paragraphs separated by a blank line, ending with a newline ("" when there is none)."""
    parts = paragraphs(segments, pause, names)
    return "\n\n".join(parts) + "\n" if parts else ""


def markdown(
    title: str,
    segments: Iterable[Segment],
    pause: float = PARAGRAPH_PAUSE,
    names: Mapping[str, str] | None = None,
) -> str:
    """The transcript as Markdown to paste into a document: a heading, then its paragraphs
    (:func:`paragraphs`), who speaks in bold."""
    said = list(segments)
    speakers = {speaker_label(s.speaker, names) for s in said if s.speaker is not None}
    lines = [f"# {_markdown_text(title)}", ""]
    for paragraph in paragraphs(said, pause, names):
        head, sep, rest = paragraph.partition(": ")
        if sep and head in speakers:
            lines += [f"**{_markdown_text(head)}:** {_markdown_text(rest)}", ""]
        else:
            lines += [_markdown_text(paragraph), ""]
    return "\n".join(lines)


def _markdown_text(text: str) -> str:
    """``text`` with the characters Markdown would read as markup escaped."""
    for mark in "\\`*_[]<>#|":
        text = text.replace(mark, "\\" + mark)
    return text
