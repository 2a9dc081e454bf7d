"""What a job says it is doing, as message ids and their arguments, so that a client can say it
in its user's language.

A job reports ``said("transcoding")`` rather than ``"transcoding"``: a :class:`Said` is the
English text (a ``str``: logs, the CLI and older clients read it as before) that also knows
the messages it is made of. Pieces join with ``+`` — ``said("step.transcoding") +
said("percent", percent=42)`` — and stay a :class:`Said`; joined with a plain ``str``, the
structure is dropped and the text alone is left. The ``progress`` frame carries the parts as
``status`` (:func:`parts_of`), beside ``status_text``; the window translates each part's
template (``Status`` context, :data:`MESSAGES` marked for ``lupdate``) and fills in its
arguments (:func:`render`), falling back to the English text wherever a translation is missing
or broken.

Arguments are text, already formatted ("12.3 MB", "3:20", "42"): a figure's unit is the same
in every language here, and a file's name is never translated.

Pure: standard library only.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

#: A message id: lowercase words joined by dots and underscores.
ID_PATTERN: Final = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$"
#: Limits a frame's ``status`` is held to (see :mod:`python_endpoints.protocol`).
MAX_PARTS: Final = 8
MAX_ARG_LENGTH: Final = 512


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    """Marks ``text`` for ``lupdate`` (context ``Status``); returns it as it is."""
    return text


#: Every message a job may say, id → its English template (``{name}``: an argument).
MESSAGES: Final[Mapping[str, str]] = {
    # Shared
    "done": QT_TRANSLATE_NOOP("Status", "done"),
    "percent": QT_TRANSLATE_NOOP("Status", " {percent} %"),
    "speed": QT_TRANSLATE_NOOP("Status", " ({speed}x)"),
    "writing": QT_TRANSLATE_NOOP("Status", "writing {name}"),
    "reading_transcript": QT_TRANSLATE_NOOP("Status", "reading the transcript"),
    "waiting_for_writer": QT_TRANSLATE_NOOP("Status", "waiting: another task is writing {names}"),
    "made_meanwhile": QT_TRANSLATE_NOOP(
        "Status", "done: {name} was made meanwhile by another task, from the same input"
    ),
    # Media jobs
    "probed": QT_TRANSLATE_NOOP("Status", "probed"),
    "skipped": QT_TRANSLATE_NOOP("Status", "skipped: "),
    "no_video_stream": QT_TRANSLATE_NOOP("Status", "{name} has no video stream"),
    "no_audio_stream": QT_TRANSLATE_NOOP("Status", "{name} has no audio stream"),
    "no_audio_with_sound": QT_TRANSLATE_NOOP(
        "Status",
        "{name} has no audio stream with sound (stream {stream} declares audio but carries none)",
    ),
    "finding_encoder": QT_TRANSLATE_NOOP("Status", "looking for a hardware encoder"),
    "encoder_fallback": QT_TRANSLATE_NOOP("Status", " (hardware encoder failed, using the CPU)"),
    "step.transcoding": QT_TRANSLATE_NOOP("Status", "transcoding"),
    "step.remuxing": QT_TRANSLATE_NOOP("Status", "remuxing"),
    "step.measuring_loudness": QT_TRANSLATE_NOOP("Status", "measuring loudness"),
    "step.extracting_audio": QT_TRANSLATE_NOOP("Status", "extracting audio"),
    "step.extracting_subtitles": QT_TRANSLATE_NOOP("Status", "extracting subtitles"),
    "step.extracting_captions": QT_TRANSLATE_NOOP("Status", "extracting captions"),
    "step.encoding_audio": QT_TRANSLATE_NOOP("Status", "encoding the audio"),
    "step.joining": QT_TRANSLATE_NOOP("Status", "joining"),
    "step.laying_out": QT_TRANSLATE_NOOP("Status", "laying out the sheet"),
    "step.picking_frames": QT_TRANSLATE_NOOP("Status", "picking frames"),
    "step.finding_speakers": QT_TRANSLATE_NOOP("Status", "finding who speaks"),
    "step.picking_frames_part": QT_TRANSLATE_NOOP(
        "Status", "picking frames (part {part} of {parts})"
    ),
    "step.decoding_whole": QT_TRANSLATE_NOOP("Status", "decoding the whole video"),
    "no_text_subtitles": QT_TRANSLATE_NOOP("Status", "no text subtitles"),
    "segments_done": QT_TRANSLATE_NOOP("Status", "transcoding: {done} of {total} segments done"),
    "audio_encoded": QT_TRANSLATE_NOOP("Status", "audio encoded"),
    "seeking_missed": QT_TRANSLATE_NOOP(
        "Status", "seeking found {picked} of the {frames} frames: "
    ),
    # Speech
    "reading_audio": QT_TRANSLATE_NOOP("Status", "reading the audio"),
    "loading_model": QT_TRANSLATE_NOOP("Status", "loading the model {model}"),
    "loading_model_again": QT_TRANSLATE_NOOP("Status", "loading the model {model} again"),
    "checking_transcript": QT_TRANSLATE_NOOP("Status", "checking the transcript"),
    "transcribing": QT_TRANSLATE_NOOP("Status", "transcribing {position} of {duration}"),
    "unheard": QT_TRANSLATE_NOOP(
        "Status", "{seconds} s of speech from {start} could not be made out"
    ),
    "paused_unloaded": QT_TRANSLATE_NOOP("Status", "paused; the model {model} is unloaded"),
    "gpu_out_of_memory": QT_TRANSLATE_NOOP("Status", "GPU out of memory: waiting to be resumed"),
    "out_of_memory_fallback": QT_TRANSLATE_NOOP(
        "Status", "out of memory: loading the model as {compute_type} on {device}"
    ),
    # Transcripts, subtitles, analysis
    "finding_key_phrases": QT_TRANSLATE_NOOP("Status", "finding key phrases"),
    "asking_model": QT_TRANSLATE_NOOP("Status", "asking {model} for a summary and chapters"),
    "waiting_for_model": QT_TRANSLATE_NOOP("Status", "waiting for {model} ({seconds} s)"),
    "reading_subtitles": QT_TRANSLATE_NOOP("Status", "reading the subtitles"),
    "building_glossary": QT_TRANSLATE_NOOP(
        "Status", "listing names and terms with {model} (part {part} of {parts})"
    ),
    "translating_chunk": QT_TRANSLATE_NOOP(
        "Status", "translating cues {first}-{last} of {cues} with {model}"
    ),
    # Downloads
    "connecting": QT_TRANSLATE_NOOP("Status", "connecting to {host}"),
    "downloading": QT_TRANSLATE_NOOP("Status", "downloading {done}"),
    "downloading_model": QT_TRANSLATE_NOOP("Status", "downloading model {model}: {done}"),
    "downloading_stream": QT_TRANSLATE_NOOP(
        "Status", "downloading {stream} {number} of {count}: {done}"
    ),
    "of_total": QT_TRANSLATE_NOOP("Status", " of {total}"),
    "of_about": QT_TRANSLATE_NOOP("Status", " of ~{total}"),
    "rate": QT_TRANSLATE_NOOP("Status", ", {rate}/s"),
    "left": QT_TRANSLATE_NOOP("Status", ", {left} left"),
    "downloaded": QT_TRANSLATE_NOOP("Status", "downloaded {size}"),
    "looking_for_video": QT_TRANSLATE_NOOP("Status", "looking for the video at {url}"),
    "merging": QT_TRANSLATE_NOOP("Status", "merging video and audio"),
    "repairing": QT_TRANSLATE_NOOP("Status", "repairing the container"),
    "post_processing": QT_TRANSLATE_NOOP("Status", "post-processing ({name})"),
    "listing_model": QT_TRANSLATE_NOOP("Status", "listing model {model} at {host}"),
    "installing_model": QT_TRANSLATE_NOOP("Status", "installing model {model}"),
    "paused_at": QT_TRANSLATE_NOOP("Status", "paused at {done} of {total} (model {model})"),
    # The diagnostic job
    "sleeping": QT_TRANSLATE_NOOP("Status", "sleeping {seconds} s"),
    "seconds_left": QT_TRANSLATE_NOOP("Status", "{seconds} s left"),
}

#: One part of a status: a message id and its arguments.
Part = tuple[str, Mapping[str, str]]


class Said(str):
    """A status text (its English words) that knows the messages it is made of."""

    parts: tuple[Part, ...]

    def __new__(cls, parts: Sequence[Part]) -> Said:
        made = super().__new__(cls, "".join(_english(i, a) for i, a in parts))
        made.parts = tuple(parts)
        return made

    def __add__(self, other: str) -> str:
        if isinstance(other, Said):
            return Said(self.parts + other.parts)
        return str(self) + other

    def __radd__(self, other: str) -> str:
        return other + str(self)


def said(message_id: str, **args: object) -> Said:
    """The message ``message_id`` (a key of :data:`MESSAGES`) with ``args``, as text."""
    if message_id not in MESSAGES:
        raise KeyError(f"no status message {message_id!r}")
    return Said([(message_id, {k: str(v) for k, v in args.items()})])


def parts_of(text: str | None) -> list[dict[str, Any]] | None:
    """What a ``progress`` frame's ``status`` says of ``text``: its parts, or None when it is
    plain text (or too long a chain to send)."""
    if not isinstance(text, Said) or len(text.parts) > MAX_PARTS:
        return None
    return [{"id": i, "args": dict(a)} for i, a in text.parts]


def render(parts: Sequence[Mapping[str, Any]], template: Callable[[str], str]) -> str | None:
    """The parts in words: each message's template as ``template`` gives it (a translation of
    its English one), its arguments filled in. A part whose id is unknown, or whose template
    names an argument it does not have, is said in English; None when no part is known."""
    out = []
    for part in parts:
        message_id, args = part.get("id"), part.get("args") or {}
        english = MESSAGES.get(message_id) if isinstance(message_id, str) else None
        if english is None or not isinstance(args, Mapping):
            return None
        out.append(_fill(template(english), args) or _fill(english, args) or english)
    return "".join(out)


_FORMATTER = string.Formatter()
_NAMES = re.compile(r"\{([a-z_]+)\}")


def _fill(template: str, args: Mapping[str, Any]) -> str | None:
    """``template`` with ``args`` in it; None when it names one not given (or is malformed)."""
    try:
        names = {field for _, field, _, _ in _FORMATTER.parse(template) if field is not None}
    except ValueError:
        return None
    if not names <= set(args) or any(not _NAMES.fullmatch("{" + n + "}") for n in names):
        return None
    return template.format_map({n: str(args[n]) for n in names})


def _english(message_id: str, args: Mapping[str, str]) -> str:
    filled = _fill(MESSAGES[message_id], args)
    if filled is None:
        raise KeyError(f"status message {message_id!r} needs {MESSAGES[message_id]!r}: {args}")
    return filled
