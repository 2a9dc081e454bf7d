"""ANALYZE's decisions. PURE: no I/O and no network (an import-linter contract);
:mod:`python_endpoints.jobs.analyze` is the shell that runs YAKE, calls the model and writes.

- where a key phrase is said: :class:`SpokenText`;
- what a language model is sent: :func:`build_prompt` (a transcript too long for one request
  is shortened to lines spread evenly over it, and the prompt says so);
- reading its answer: :func:`completion_content`, :func:`parse_reply` (JSON found in prose or
  in ``` fences, chapters' starts read, clamped to the duration and sorted);
- when to try again: :func:`retry_delay`.
"""

from __future__ import annotations

import bisect
import ipaddress
import json
import math
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from python_endpoints.jobs.captions import Segment, ordered

#: A transcript sent to a model is shortened to about this many characters (~6,000 tokens:
#: room for the answer in the 8k context of a small local model).
MAX_TRANSCRIPT_CHARS = 24_000
#: A single line sent is cut at this many characters.
MAX_LINE_CHARS = 600
MAX_TITLE_CHARS = 200
#: Waits between attempts: BACKOFF_BASE · 2^attempt, at most BACKOFF_MAX; a server's
#: Retry-After is followed up to RETRY_AFTER_MAX seconds.
BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0
RETRY_AFTER_MAX = 30.0


# --- key phrases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpokenText:
    """The transcript as one text (segments joined by a space), knowing when each character
    is said: when its word starts, where the transcript has the segment's words, else when
    its segment does."""

    text: str
    #: Where each segment's text starts in ``text``, and each of its words (when known)...
    offsets: tuple[int, ...]
    #: ...and when it is said.
    starts: tuple[float, ...]

    @classmethod
    def of(cls, segments: Iterable[Segment]) -> SpokenText:
        parts: list[str] = []
        offsets: list[int] = []
        starts: list[float] = []
        at = 0
        for segment in ordered(segments):
            text = " ".join(segment.text.split())
            parts.append(text)
            offsets.append(at)
            starts.append(segment.start)
            offsets_, starts_ = _word_starts(segment, text, at)
            offsets += offsets_
            starts += starts_
            at += len(text) + 1
        return cls(" ".join(parts), tuple(offsets), tuple(starts))

    def times(self, phrase: str) -> list[float]:
        """When ``phrase`` is said: when the word it begins in starts (the start of the
        segment where the transcript has no words), in order, once each. Case-insensitive,
        whole words, any punctuation or spacing between them (a phrase may run from one
        segment into the next)."""
        words = phrase.split()
        if not words or not self.text:
            return []
        pattern = r"(?<!\w)" + r"\W+".join(re.escape(w) for w in words) + r"(?!\w)"
        out: list[float] = []
        last = -1
        for match in re.finditer(pattern, self.text, re.IGNORECASE):
            # The last of equal offsets: a segment's first word rather than the segment.
            index = bisect.bisect_right(self.offsets, match.start()) - 1
            if index != last:
                out.append(round(float(self.starts[index]), 3))
                last = index
        return out


def _word_starts(segment: Segment, text: str, at: int) -> tuple[list[int], list[float]]:
    """Where each of ``segment``'s words starts in the joined text (``text``: the segment's
    own with its spaces made single, starting at ``at``), and when it is said; none when its
    words do not spell its text."""
    offsets: list[int] = []
    starts: list[float] = []
    spelled = ""
    space = False  # a space is due before the next word
    for word in segment.words:
        if not word.text.strip():
            space = space or bool(word.text)
            continue
        if (space or word.text[0].isspace()) and spelled:
            spelled += " "
        offsets.append(at + len(spelled))
        starts.append(word.start)
        spelled += " ".join(word.text.split())
        space = word.text[-1].isspace()
    if spelled != text:
        return [], []
    return offsets, starts


def covered(phrase: str, by: Iterable[str]) -> bool:
    """Whether ``phrase``'s words appear, in a row, in one of the phrases ``by`` (``"neural"``
    in ``"neural networks"``): a phrase that adds nothing to a better one."""
    words = phrase.lower().split()
    for other in by:
        others = other.lower().split()
        if any(others[i : i + len(words)] == words for i in range(len(others) - len(words) + 1)):
            return True
    return False


# --- the prompt -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    #: Lines (segments) sent, of how many.
    sent: int
    total: int

    @property
    def truncated(self) -> bool:
        return self.sent < self.total

    @property
    def note(self) -> str | None:
        if not self.truncated:
            return None
        return (
            f"the transcript was too long for one request: {self.sent} of its {self.total} "
            "segments, spread evenly over it, were sent to the model"
        )


def _line(segment: Segment) -> str:
    text = " ".join(segment.text.split())
    if len(text) > MAX_LINE_CHARS:
        text = text[: MAX_LINE_CHARS - 1].rstrip() + "…"
    return f"[{segment.start:.1f}] {text}"


def shorten(lines: Sequence[str], max_chars: int) -> list[str]:
    """``lines`` if they fit in ``max_chars``; else as many as fit, spread evenly over them
    (the first always kept)."""
    size = sum(len(line) + 1 for line in lines)
    if size <= max_chars:
        return list(lines)
    n = len(lines)
    keep = max(1, n * max_chars // size)
    while True:
        picked = [lines[i * n // keep] for i in range(keep)]
        if keep == 1 or sum(len(line) + 1 for line in picked) <= max_chars:
            return picked
        keep = max(1, keep * 9 // 10)


SYSTEM_PROMPT = (
    "You summarize transcripts of recordings. You answer with one JSON object and nothing else."
)


def build_prompt(
    segments: Iterable[Segment],
    language: str | None,
    duration: float | None,
    max_chars: int = MAX_TRANSCRIPT_CHARS,
) -> Prompt:
    """The chat messages asking for ``{"summary": ..., "chapters": [{"start", "title"}]}``."""
    lines = [_line(s) for s in ordered(segments)]
    sent = shorten(lines, max_chars)
    length = f" of {duration:.0f} seconds" if duration else ""
    shortened = (
        f" The transcript is long: only {len(sent)} of its {len(lines)} lines are shown, "
        "spread evenly over it."
        if len(sent) < len(lines)
        else ""
    )
    tongue = f'the language of the transcript ("{language}")' if language else "its language"
    body = "\n".join(sent)
    user = (
        f"Here is the transcript of a recording{length}. Each line starts with the time, in "
        f"seconds, at which it is said.{shortened}\n\n<transcript>\n{body}\n</transcript>\n\n"
        "Summarize it in a few sentences, and divide it into chapters by topic (between 2 "
        "and 10, fewer for a short recording; the first starts at 0), each with a short "
        f"title. Write in {tongue}. Answer with this JSON object and nothing else:\n"
        '{"summary": "...", "chapters": [{"start": <seconds>, "title": "..."}]}'
    )
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
    return Prompt(messages, len(sent), len(lines))


# --- the answer -------------------------------------------------------------------------------


def completion_content(data: Any) -> str:
    """The text of an OpenAI chat completion. Raises ValueError when it is not one."""
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ValueError("it has no choices[0].message.content") from None
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise ValueError("its message content is not text")
    return content


_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def find_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a model's answer: the whole answer, a fenced block, or the first
    object in the prose that has ``summary`` or ``chapters`` (else the first object)."""
    text = _THINKING.sub("", text).strip()
    candidates = [text, *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    first: dict[str, Any] | None = None
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            if "summary" in value or "chapters" in value:
                return value
            first = first or value
    return first


def parse_time(value: Any) -> float | None:
    """Seconds from a number, ``"75"``, ``"75.5s"``, ``"1:15"`` or ``"0:01:15"``; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    text = value.strip().lower().removesuffix("s").strip()
    try:
        if ":" in text:
            seconds = 0.0
            for part in text.split(":"):
                seconds = seconds * 60 + float(part)
        else:
            seconds = float(text)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) else None


@dataclass(frozen=True)
class Reply:
    summary: str | None
    chapters: list[dict[str, Any]]


def parse_reply(content: str, duration: float | None) -> Reply:
    """Read a model's answer. Chapters without a title or a readable start are dropped; the
    starts are clamped to ``[0, duration]`` and sorted. Raises ValueError when there is no
    JSON object with a summary or chapters in it."""
    found = find_json_object(content)
    if found is None:
        raise ValueError("it holds no JSON object")
    summary = found.get("summary")
    summary = " ".join(summary.split()) if isinstance(summary, str) else None
    chapters: list[dict[str, Any]] = []
    raw = found.get("chapters")
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        start = parse_time(item.get("start", item.get("time")))
        title = item.get("title", item.get("name"))
        if start is None or not isinstance(title, str) or not title.strip():
            continue
        start = max(0.0, start if duration is None else min(start, duration))
        chapters.append(
            {"start": round(start, 3), "title": " ".join(title.split())[:MAX_TITLE_CHARS]}
        )
    chapters.sort(key=lambda c: c["start"])
    if not summary and not chapters:
        raise ValueError('its JSON has neither a "summary" nor "chapters"')
    return Reply(summary or None, chapters)


def server_message(body: str, limit: int = 300) -> str:
    """What an HTTP error's body says: OpenAI's ``error.message``, Ollama's ``error``, or
    the text itself, on one line."""
    message: Any = body
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            message = error if isinstance(error, str) else json.dumps(error)
    text = " ".join(str(message).split()) or "no message"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def chat_url(base_url: str) -> str:
    """The chat completions URL of an OpenAI-compatible API: ``…/v1/chat/completions``."""
    return base_url.rstrip("/") + "/chat/completions"


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (``localhost``, 127.0.0.0/8, ``::1``): a local model
    is never reached through a proxy from the environment."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- retries ----------------------------------------------------------------------------------


def retryable_status(status: int) -> bool:
    """A status worth another attempt: the server is overloaded or failed (429, 5xx)."""
    return status == 429 or status >= 500


def retry_delay(attempt: int, retry_after: str | None = None) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (``attempt`` counts from 0)."""
    delay = min(BACKOFF_MAX, BACKOFF_BASE * 2.0**attempt)
    if retry_after is not None:
        try:
            asked = float(retry_after)
        except ValueError:
            asked = None  # an HTTP date: back off as usual
        if asked is not None and math.isfinite(asked) and asked >= 0:
            delay = min(RETRY_AFTER_MAX, asked)
    return delay
