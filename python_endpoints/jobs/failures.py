"""What a failed ffmpeg run means: its error type, its cause in words, what the user can do,
and the lines of its stderr that say why. Pure: lines and an exit status in, a verdict out.

The rule that decides retries: ffmpeg is deterministic. What the input causes — damaged data,
a codec or a format this ffmpeg cannot handle — fails the same way every time, so it gets an
error type that is never retried (``INPUT_DAMAGED``, ``UNSUPPORTED_MEDIA``, ``FFMPEG_FAILED``
for a failure no known cause explains, ``NO_SPACE`` which the user must fix). Only what could
go differently on a second try is retried: ffmpeg killed from outside (the system out of
memory, another program), an I/O or network error while reading or writing, memory that ran
out (:data:`TRANSIENT`).

ffmpeg runs with ``-loglevel error``: every line it writes is an error, and the first ones
usually name the cause ("height not divisible by 2 (720x405)"), the last ones only how it ended
("Nothing was written into output file"). :class:`StderrLog` keeps both ends of a long stderr;
:func:`explaining_lines` picks what a message quotes.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from python_endpoints.errorcodes import ErrorType

#: Error types of failures that a second attempt could escape (the engine retries them). Every
#: other type :func:`classify` gives is permanent (the engine's list of types never retried
#: holds them; a test keeps the two in agreement).
TRANSIENT = frozenset(
    {
        ErrorType.SUBPROCESS_CRASHED,
        ErrorType.IO_ERROR,
        ErrorType.NETWORK_ERROR,
        ErrorType.OUT_OF_MEMORY,
    }
)

#: Signals by which a process crashes on its own (a bug, on this input): another try crashes
#: the same way. Any other signal came from outside (a kill, the OOM killer, a shutdown).
CRASH_SIGNALS = frozenset({"SIGSEGV", "SIGABRT", "SIGBUS", "SIGFPE", "SIGILL", "SIGSYS"})

#: How many lines a message quotes, and how long each may be.
QUOTED_LINES = 5
QUOTED_WIDTH = 200


@dataclass(frozen=True)
class Failure:
    """A classified ffmpeg failure."""

    error_type: str
    #: What went wrong, in words ("the input is damaged").
    cause: str
    #: What the user can do.
    advice: str
    #: The lines of ffmpeg's stderr that say why (see :func:`explaining_lines`).
    lines: tuple[str, ...] = ()

    @property
    def retryable(self) -> bool:
        return self.error_type in TRANSIENT


@dataclass(frozen=True)
class _Rule:
    error_type: str
    cause: str
    advice: str
    patterns: tuple[str, ...]


_DAMAGED_ADVICE = "check that the file plays to the end; a repaired or re-downloaded copy may work"
_UNSUPPORTED_ADVICE = "convert it with another program, or set another ffmpeg in the settings"

#: Matched against every kept line (lower case, addresses removed): see :func:`classify`.
RULES: tuple[_Rule, ...] = (
    _Rule(
        ErrorType.NO_SPACE,
        "the disk is full",
        "free some space, then retry",
        ("no space left on device", "disk quota exceeded"),
    ),
    _Rule(
        ErrorType.OUT_OF_MEMORY,
        "memory ran out",
        "close other programs: another attempt may succeed",
        ("cannot allocate memory", "out of memory"),
    ),
    _Rule(
        ErrorType.NETWORK_ERROR,
        "a network connection failed",
        "check the connection: another attempt may succeed",
        (
            "connection reset",
            "connection refused",
            "connection timed out",
            "network is unreachable",
            "temporary failure in name resolution",
        ),
    ),
    _Rule(
        ErrorType.IO_ERROR,
        "reading or writing a file failed",
        "check the disk and the folder's permissions: another attempt may succeed",
        ("input/output error", "stale file handle", "read-only file system", "permission denied"),
    ),
    _Rule(
        ErrorType.UNSUPPORTED_MEDIA,
        "its frame size is odd, and the encoder needs even dimensions",
        _UNSUPPORTED_ADVICE,
        ("not divisible by 2",),
    ),
    _Rule(
        ErrorType.UNSUPPORTED_MEDIA,
        "this ffmpeg cannot decode or encode one of its streams",
        _UNSUPPORTED_ADVICE,
        (
            r"decoder \(.*\) not found",
            "decoder not found",
            "encoder not found",
            "unknown decoder",
            "unknown encoder",
            "no decoder for",
        ),
    ),
    _Rule(
        ErrorType.UNSUPPORTED_MEDIA,
        "one of its streams cannot be stored in the output's format",
        _UNSUPPORTED_ADVICE,
        (
            "not currently supported in container",
            "could not find tag for codec",
            "codec not currently supported",
        ),
    ),
    _Rule(
        ErrorType.UNSUPPORTED_MEDIA,
        "it uses something this ffmpeg does not support",
        _UNSUPPORTED_ADVICE,
        ("not supported", "unsupported", "not implemented", "invalid pixel format"),
    ),
    _Rule(
        ErrorType.INPUT_DAMAGED,
        "the input is damaged",
        _DAMAGED_ADVICE,
        (
            "invalid data found when processing input",
            "corrupt",
            "error while decoding",
            "invalid nal unit",
            "missing picture",
            "truncat",
            "header missing",
            "moov atom not found",
            "partial file",
            "non-existing pps",
            "decode_slice_header error",
            "error splitting the input",
            "concealing",
            "invalid frame",
            "damaged",
            "unexpected end of file",
            "premature end",
        ),
    ),
)

#: The first rules are about the machine (disk, memory, network, files), the others about the
#: input.
_RESOURCE_RULES = 4

_ADDRESS = re.compile(r" @ 0x[0-9a-f]+", re.IGNORECASE)
_REPEATED = re.compile(r"^\s*last message repeated \d+ times?\s*$", re.IGNORECASE)


def tidy(line: str) -> str:
    """A stderr line without the noise: ``[libx264 @ 0x55d0…] x`` → ``[libx264] x``."""
    return _ADDRESS.sub("", line).strip()


def _meaningful(lines: Sequence[str]) -> list[str]:
    return [t for t in (tidy(line) for line in lines) if t and not _REPEATED.match(t)]


def _first_match(rule: _Rule, lines: Sequence[str]) -> int | None:
    for i, line in enumerate(lines):
        lowered = line.lower()
        if any(re.search(p, lowered) for p in rule.patterns):
            return i
    return None


def explaining_lines(
    lines: Sequence[str], first: int | None = None, limit: int = QUOTED_LINES
) -> tuple[str, ...]:
    """The lines a message quotes, in their order: ``lines[first]`` (the one that decided the
    classification), the first line, lines that mention an error, then the last line — at most
    ``limit``, each shortened to :data:`QUOTED_WIDTH` characters, without repeats."""
    picked: list[int] = []

    def pick(i: int) -> None:
        if 0 <= i < len(lines) and i not in picked and len(picked) < limit:
            picked.append(i)

    if first is not None:
        pick(first)
    pick(0)
    # Keep room for the last line: how it ended.
    for i, line in enumerate(lines):
        if len(picked) >= limit - 1:
            break
        if "error" in line.lower():
            pick(i)
    pick(len(lines) - 1)
    seen: set[str] = set()
    out = []
    for i in sorted(picked):
        text = lines[i]
        if text in seen:
            continue
        seen.add(text)
        out.append(text if len(text) <= QUOTED_WIDTH else text[: QUOTED_WIDTH - 1] + "…")
    return tuple(out)


def classify(stderr: Sequence[str], returncode: int, signal: str | None = None) -> Failure:
    """What a failed ffmpeg run means, from its stderr (the kept lines), its exit status and,
    when it died by a signal, the signal's name (``SIGKILL``)."""
    lines = _meaningful(stderr)
    if returncode < 0 or signal is not None:
        name = signal or f"signal {-returncode}"
        if name in CRASH_SIGNALS:
            return Failure(
                ErrorType.FFMPEG_FAILED,
                f"ffmpeg crashed ({name}) on this input",
                "the same input crashes it again; try another ffmpeg in the settings, or "
                "convert the file with another program",
                explaining_lines(lines),
            )
        return Failure(
            ErrorType.SUBPROCESS_CRASHED,
            f"ffmpeg was killed ({name}) by another program or by the system (memory?)",
            "another attempt may succeed",
            explaining_lines(lines),
        )
    # A resource that failed decides whatever else ffmpeg said; among the input's faults the
    # earliest line decides (ffmpeg's first complaint is the cause, the rest follow from it).
    for rule in RULES[:_RESOURCE_RULES]:
        at = _first_match(rule, lines)
        if at is not None:
            return Failure(
                rule.error_type, rule.cause, rule.advice, explaining_lines(lines, first=at)
            )
    found = [
        (at, k, rule)
        for k, rule in enumerate(RULES[_RESOURCE_RULES:])
        if (at := _first_match(rule, lines)) is not None
    ]
    if found:
        at, _, rule = min(found, key=lambda f: (f[0], f[1]))
        return Failure(rule.error_type, rule.cause, rule.advice, explaining_lines(lines, first=at))
    if returncode == 255 and not lines:
        # What ffmpeg does on SIGTERM or SIGINT: exit 255, saying nothing at -loglevel error.
        return Failure(
            ErrorType.SUBPROCESS_CRASHED,
            "ffmpeg was stopped by another program or by the system",
            "another attempt may succeed",
        )
    return Failure(
        ErrorType.FFMPEG_FAILED,
        "ffmpeg stopped with an error",
        "the same input fails the same way; check that it plays, or convert it with another "
        "program",
        explaining_lines(lines),
    )


class StderrLog:
    """The lines of a stderr worth keeping: the first ``head`` ones (the cause) and the last
    ``tail`` ones (how it ended). A damaged input can make ffmpeg write thousands of lines."""

    def __init__(self, head: int = 20, tail: int = 40) -> None:
        self._head: list[str] = []
        self._limit = head
        self._tail: deque[str] = deque(maxlen=tail)
        self.dropped = 0

    def add(self, line: str) -> None:
        if len(self._head) < self._limit:
            self._head.append(line)
            return
        if self._tail.maxlen is not None and len(self._tail) == self._tail.maxlen:
            self.dropped += 1
        self._tail.append(line)

    @property
    def lines(self) -> list[str]:
        return [*self._head, *self._tail]
