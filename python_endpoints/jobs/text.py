"""How jobs write sizes, durations and URLs in their status texts and messages. Pure, standard
library only: a job's child (yt-dlp's) and the server's download endpoints share it, so that
every download reads the same."""

from __future__ import annotations

import math


def format_bytes(n: float) -> str:
    """``512 B``, ``12.3 MB`` (decimal units, as browsers and file managers show them)."""
    if n < 1000:
        return f"{n:.0f} B"
    for unit in ("kB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            break
    return f"{n:.1f} {unit}"


def format_duration(seconds: float) -> str:
    """``6 s``, ``3 min 20 s``, ``12 min``, ``1 h 5 min``."""
    s = math.ceil(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s < 600 else f"{round(s / 60)} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def shown(url: str) -> str:
    """A URL for a message: without credentials, and not endless (signed URLs are long)."""
    scheme, sep, rest = url.partition("://")
    if sep:
        authority, slash, path = rest.partition("/")
        url = f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"
    return url if len(url) <= 200 else url[:197] + "..."
