"""What HTTP says about a download, and its progress in words: pure functions over header
values (ranges, validators, lengths, media types) and the speed/ETA of a transfer. No I/O."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from python_endpoints.jobs.text import format_bytes, format_duration
from python_endpoints.status import said

#: The speed is the average over this many seconds.
SPEED_WINDOW = 5.0


def part_path(output: Path) -> Path:
    """Where the body goes until it is complete."""
    return output.with_name(output.name + ".part")


@dataclass(frozen=True, slots=True)
class ContentRange:
    start: int
    end: int
    total: int | None  # None: ``/*``, the server does not know


def parse_content_range(value: str | None) -> ContentRange | None:
    """``bytes 100-199/1000`` or ``bytes 100-199/*``; None for anything else."""
    if not value:
        return None
    unit, _, spec = value.strip().partition(" ")
    span, _, size = spec.partition("/")
    first, dash, last = span.partition("-")
    if unit.lower() != "bytes" or not dash:
        return None
    try:
        start, end = int(first), int(last)
        total = None if size.strip() == "*" else int(size)
    except ValueError:
        return None
    if start < 0 or end < start or (total is not None and end >= total):
        return None
    return ContentRange(start, end, total)


def unsatisfied_length(value: str | None) -> int | None:
    """The length in a 416's ``bytes */1000``; None when absent or malformed."""
    if not value:
        return None
    unit, _, spec = value.strip().partition(" ")
    star, slash, size = spec.partition("/")
    if unit.lower() != "bytes" or star != "*" or not slash:
        return None
    try:
        return int(size)
    except ValueError:
        return None


def if_range_validator(etag: str | None, last_modified: str | None) -> str | None:
    """What to send in ``If-Range``: a strong ETag, else Last-Modified. A weak ETag never
    matches in If-Range (RFC 9110 §13.1.5), so it cannot vouch for the bytes on disk."""
    if etag and not etag.startswith("W/"):
        return etag
    return last_modified or None


def accepts(content_type: str | None, accept: Sequence[str]) -> bool:
    """Whether a body of this type is wanted: ``accept`` holds media type prefixes (``video/``);
    empty, anything but text/html — what a login page or an error page is. A response without
    a type is taken (nothing says it is wrong)."""
    if not content_type:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    if not accept:
        return media != "text/html"
    return any(media.startswith(prefix.strip().lower()) for prefix in accept)


def content_length(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        length = int(value)
    except ValueError:
        return None
    return length if length >= 0 else None


class SpeedMeter:
    """Bytes per second over the last ``window`` seconds: a moving average that forgets a burst
    or a stall within a few seconds. Fed at each progress report, not at each chunk."""

    def __init__(self, window: float = SPEED_WINDOW) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, bytes_done: int) -> None:
        self._samples.append((now, bytes_done))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self.window:
            self._samples.popleft()

    def reset(self) -> None:
        """Forget the past (after a pause, or when the .part was truncated)."""
        self._samples.clear()

    def speed(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        (t0, b0), (t1, b1) = self._samples[0], self._samples[-1]
        return max(0.0, (b1 - b0) / (t1 - t0)) if t1 > t0 else 0.0


def eta(bytes_done: int, total: int | None, speed: float) -> float | None:
    if total is None or speed <= 0:
        return None
    return max(0.0, (total - bytes_done) / speed)


def status_text(
    bytes_done: int,
    total: int | None,
    speed: float,
    left: float | None,
    model: str | None = None,
) -> str:
    """``downloading 12.3 MB of 40.0 MB, 5.1 MB/s, 6 s left`` (``downloading model small:
    12.3 MB…`` for a ``model``), as status messages."""
    done = format_bytes(bytes_done)
    text: str = (
        said("downloading", done=done)
        if model is None
        else said("downloading_model", model=model, done=done)
    )
    if total is not None:
        text += said("of_total", total=format_bytes(total))
    if speed > 0:
        text += said("rate", rate=format_bytes(speed))
    if left is not None:
        text += said("left", left=format_duration(left))
    return text


def host_of(url: str) -> str:
    """``example.com:8080`` of ``https://user@example.com:8080/a``."""
    return url.partition("://")[2].partition("/")[0].partition("?")[0].rpartition("@")[2]
