"""The pure part of TRANSLATE_SUBTITLES: chunks, prompts, answers, the glossary, the
checkpoint — plain values, no I/O (the job, :mod:`python_endpoints.jobs.translate`, asks the
model and writes the files).

The cues are sent :data:`chunks <chunks>` at a time, each chunk with the cues around it for
context (those before with their translations so far) and the glossary of names and terms:
first built from the whole file (:func:`glossary_prompts`, the text in parts within a budget),
then grown by each chunk's answer. A prompt is JSON, so that any model can read it and a test
server can answer it; the answer must be JSON too::

    {"cues": [{"n": 12, "text": "…"}, …], "glossary": {"term": "translation"}}

with exactly the numbers asked for, in order, one text each (:func:`read_answer`): an answer
with another count or numbering is refused — the chunk is asked again, then fails — rather
than lines shifted onto other cues. Timings never go to the model: each cue keeps its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CHECKPOINT_VERSION = 1
#: The most characters of subtitle text one glossary request carries.
GLOSSARY_BUDGET = 12_000
#: The most glossary entries sent with a chunk, and kept.
GLOSSARY_SIZE = 200

LANGUAGES = {
    "ar": "Arabic", "bg": "Bulgarian", "cs": "Czech", "da": "Danish", "de": "German",
    "el": "Greek", "en": "English", "es": "Spanish", "et": "Estonian", "fa": "Persian",
    "fi": "Finnish", "fr": "French", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian",
    "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "ko": "Korean",
    "lt": "Lithuanian", "lv": "Latvian", "nb": "Norwegian Bokmål", "nl": "Dutch",
    "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak",
    "sl": "Slovenian", "sr": "Serbian", "sv": "Swedish", "th": "Thai", "tr": "Turkish",
    "uk": "Ukrainian", "vi": "Vietnamese", "zh": "Chinese",
}  # fmt: skip


def language_name(code: str) -> str:
    """``French`` for ``fr``; a code it does not know as it is (the model knows more)."""
    base = code.split("-")[0].lower()
    return LANGUAGES.get(base, code) + (f" ({code})" if "-" in code else "")


@dataclass(frozen=True, slots=True)
class Chunk:
    """Cues ``[start, end)`` (indexes from 0) to translate in one request."""

    index: int
    start: int
    end: int


def chunks(count: int, size: int) -> list[Chunk]:
    """``count`` cues in chunks of ``size`` (the last may be smaller, never below half of
    ``size`` unless it is the only one: a short tail joins the chunk before)."""
    out: list[Chunk] = []
    start = 0
    while start < count:
        end = min(count, start + size)
        if count - end and count - end < size // 2:
            end = count
        out.append(Chunk(len(out), start, end))
        start = end
    return out


# --- prompts ---------------------------------------------------------------------------------


def glossary_prompts(texts: Sequence[str], target: str) -> list[list[dict[str, str]]]:
    """The requests that build the glossary from the whole file: its text in parts of at most
    :data:`GLOSSARY_BUDGET` characters, one request each."""
    parts: list[list[str]] = [[]]
    size = 0
    for text in texts:
        line = " ".join(text.split())
        if size and size + len(line) > GLOSSARY_BUDGET:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += len(line) + 1
    system = (
        "You prepare the translation of a video's subtitles into "
        f"{language_name(target)}. List the names of people, places and organisations, and "
        "the recurring or technical terms, with how each is to be written in "
        f"{language_name(target)} (a name usually stays as it is). Answer with JSON only: "
        '{"glossary": {"term": "translation"}} — at most 60 entries, none for common words.'
    )
    return [
        [
            {"role": "system", "content": system},
            {"role": "user", "content": json.dumps({"subtitles": part}, ensure_ascii=False)},
        ]
        for part in parts
        if part
    ]


def chunk_prompt(
    texts: Sequence[str],
    done: Mapping[int, str],
    chunk: Chunk,
    context: int,
    source: str | None,
    target: str,
    glossary: Mapping[str, str],
    problem: str | None = None,
) -> list[dict[str, str]]:
    """The request for ``chunk``: its cues numbered (from 1 over the whole file), the
    ``context`` cues before (with their translations when done) and after, the glossary.
    ``problem``: what was wrong with the last answer, said again when it is asked again."""
    from_language = f" from {language_name(source)}" if source else ""
    system = (
        f"You translate a video's subtitles{from_language} into {language_name(target)}. "
        "Translate each cue of `translate` as a whole, naturally and concisely (it is read "
        "while the video plays), keeping the meaning, the tone and any speaker label "
        "(`ANA:`). Use the glossary's spellings. `before` and `after` are the cues around "
        "them, for context only: do not translate them. Answer with JSON only: "
        '{"cues": [{"n": <number>, "text": "<translation>"}], "glossary": {"term": '
        '"translation"}} — exactly one entry per cue of `translate`, the same numbers in the '
        "same order, never merging or splitting cues; `glossary` holds only new names or "
        "terms (or is empty)."
    )
    before = range(max(0, chunk.start - context), chunk.start)
    after = range(chunk.end, min(len(texts), chunk.end + context))
    request: dict[str, Any] = {
        "glossary": dict(list(glossary.items())[:GLOSSARY_SIZE]),
        "before": [
            {"n": i + 1, "text": texts[i], **({"translation": done[i]} if i in done else {})}
            for i in before
        ],
        "translate": [{"n": i + 1, "text": texts[i]} for i in range(chunk.start, chunk.end)],
        "after": [{"n": i + 1, "text": texts[i]} for i in after],
    }
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": json.dumps(request, ensure_ascii=False)},
    ]
    if problem:
        messages.append(
            {
                "role": "user",
                "content": f"Your last answer could not be used: {problem}. Answer again with "
                f"exactly {chunk.end - chunk.start} cues, numbered {chunk.start + 1} to "
                f"{chunk.end}.",
            }
        )
    return messages


# --- answers ---------------------------------------------------------------------------------

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def _json_object(content: str) -> dict[str, Any]:
    """The JSON object of an answer (a Markdown code fence around it allowed)."""
    text = _FENCE.sub("", content.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the answer is not JSON")
    try:
        found = json.loads(text[start : end + 1])
    except ValueError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc})") from None
    if not isinstance(found, dict):
        raise ValueError("the answer is not a JSON object")
    return found


def read_glossary(content: str) -> dict[str, str]:
    """The glossary of an answer to :func:`glossary_prompts`'s request. Raises ValueError."""
    return _entries(_json_object(content).get("glossary"))


def _entries(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        return {}
    return {
        " ".join(str(k).split())[:80]: " ".join(str(v).split())[:80]
        for k, v in raw.items()
        if isinstance(k, str) and isinstance(v, str) and k.strip() and v.strip()
    }


@dataclass(frozen=True, slots=True)
class Answer:
    """A chunk's translations (in its cues' order) and the new glossary entries."""

    texts: list[str]
    glossary: dict[str, str]


def read_answer(content: str, chunk: Chunk) -> Answer:
    """The answer for ``chunk``: exactly its cues, numbered as sent, in order, each a text.
    Raises ValueError saying what is wrong (its count, a number, an empty text)."""
    found = _json_object(content)
    cues = found.get("cues")
    if not isinstance(cues, list):
        raise ValueError("the answer has no list of cues")
    wanted = list(range(chunk.start + 1, chunk.end + 1))
    if len(cues) != len(wanted):
        raise ValueError(
            f"{len(cues)} cue(s) answered for the {len(wanted)} sent "
            f"({chunk.start + 1} to {chunk.end})"
        )
    texts = []
    for number, cue in zip(wanted, cues, strict=True):
        if not isinstance(cue, Mapping) or cue.get("n") != number:
            got = cue.get("n") if isinstance(cue, Mapping) else cue
            raise ValueError(f"cue {number} is answered as {got!r}: the numbering differs")
        text = cue.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"cue {number} has no text")
        texts.append(text.strip())
    return Answer(texts, _entries(found.get("glossary")))


def merged(glossary: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """``glossary`` with ``new``'s terms it did not have (a term keeps its first spelling),
    at most :data:`GLOSSARY_SIZE`."""
    out = dict(glossary)
    known = {k.casefold() for k in out}
    for term, translation in new.items():
        if len(out) >= GLOSSARY_SIZE:
            break
        if term.casefold() not in known:
            out[term] = translation
            known.add(term.casefold())
    return out


# --- the checkpoint --------------------------------------------------------------------------


def checkpoint_key(texts: Sequence[str], settings: Mapping[str, Any]) -> dict[str, Any]:
    """What a checkpoint's translations depend on: the cues' text and the settings that
    shape the chunks and the answers."""
    import hashlib

    digest = hashlib.sha256("\x1e".join(texts).encode("utf-8")).hexdigest()[:32]
    return {"cues": len(texts), "text": digest, **dict(settings)}


def resumed(
    resume: object, key: Mapping[str, Any], plan: Sequence[Chunk]
) -> tuple[dict[int, list[str]], dict[str, str]]:
    """The chunks done (index -> their translations) and the glossary of a checkpoint of this
    translation; nothing of one of another (its key differs) or damaged."""
    if not isinstance(resume, Mapping) or resume.get("version") != CHECKPOINT_VERSION:
        return {}, {}
    if resume.get("key") != dict(key):
        return {}, {}
    sizes = {c.index: c.end - c.start for c in plan}
    done: dict[int, list[str]] = {}
    raw = resume.get("chunks")
    for index, texts in raw.items() if isinstance(raw, Mapping) else []:
        if not str(index).isdigit() or int(index) not in sizes:
            continue
        if isinstance(texts, list) and len(texts) == sizes[int(index)]:
            if all(isinstance(t, str) and t.strip() for t in texts):
                done[int(index)] = list(texts)
    glossary = _entries(resume.get("glossary"))
    return done, glossary


def checkpoint(
    key: Mapping[str, Any], done: Mapping[int, list[str]], glossary: Mapping[str, str]
) -> dict[str, Any]:
    return {
        "version": CHECKPOINT_VERSION,
        "key": dict(key),
        "glossary": dict(glossary),
        "chunks": {str(i): list(t) for i, t in sorted(done.items())},
    }


def lines_of(text: str, width: int) -> tuple[str, ...]:
    """A translation as a cue's lines: the model's line breaks kept; one long line of words
    wrapped at ``width`` characters into two (a text without spaces — Chinese, Japanese —
    stays one line)."""
    kept = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if len(kept) != 1 or len(kept[0]) <= width or " " not in kept[0]:
        return tuple(kept)
    words = kept[0].split(" ")
    best, first = len(kept[0]), 1
    for i in range(1, len(words)):
        left, right = " ".join(words[:i]), " ".join(words[i:])
        if max(len(left), len(right)) < best:
            best, first = max(len(left), len(right)), i
    return (" ".join(words[:first]), " ".join(words[first:]))
