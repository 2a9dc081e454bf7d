"""Cheap identity of a media file: size + mtime + a hash of its first and last blocks.

Never a full hash: a multi-GB recording is fingerprinted in two small reads. The library
dedupes by :func:`fingerprint`; the watch folders by :func:`content_fingerprint`, the same
without the mtime, so that touching or copying a file with the same bytes is the same file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

BLOCK = 64 * 1024

#: What the library imports from a folder (a single file of another type is refused with a
#: clear message; PROBE is the judge of what really is media).
MEDIA_EXTENSIONS = frozenset(
    {
        # video
        ".mp4", ".m4v", ".mkv", ".webm", ".mov", ".avi", ".wmv", ".flv", ".mpg", ".mpeg",
        ".ts", ".m2ts", ".mts", ".3gp", ".ogv",
        # audio
        ".mp3", ".m4a", ".aac", ".wav", ".flac", ".ogg", ".opus", ".wma", ".aiff", ".aif",
    }
)  # fmt: skip
AUDIO_EXTENSIONS = frozenset(
    {".mp3", ".m4a", ".aac", ".wav", ".flac", ".ogg", ".opus", ".wma", ".aiff", ".aif"}
)


#: A subtitle file named on its own is a material too (of kind ``subtitles``): what
#: translate_subtitles runs on. A folder's are not taken in: they go with its videos.
SUBTITLE_EXTENSIONS = frozenset({".srt", ".vtt", ".ass", ".ssa"})


def is_media_name(path: Path) -> bool:
    return path.suffix.lower() in MEDIA_EXTENSIONS


def is_subtitle_name(path: Path) -> bool:
    return path.suffix.lower() in SUBTITLE_EXTENSIONS


def kind_from_name(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in AUDIO_EXTENSIONS:
        return "audio"
    if suffix in SUBTITLE_EXTENSIONS:
        return "subtitles"
    return "video" if suffix in MEDIA_EXTENSIONS else "unknown"


def fingerprint(path: Path) -> str:
    """``<size>-<mtime_ns>-<blake2b of the first and last 64 KiB>``."""
    st, digest = _head_and_tail(path)
    return f"{st.st_size}-{st.st_mtime_ns}-{digest}"


def content_fingerprint(path: Path) -> str:
    """``<size>-<blake2b of the first and last 64 KiB>``: :func:`fingerprint` without the
    mtime — a touch, or a copy that does not keep the mtime, leaves it as it was."""
    st, digest = _head_and_tail(path)
    return f"{st.st_size}-{digest}"


def _head_and_tail(path: Path) -> tuple[os.stat_result, str]:
    """The open file's status and the hash of its first and last blocks (both of the same
    file, even if another takes its name meanwhile)."""
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as f:
        st = os.fstat(f.fileno())
        h.update(f.read(BLOCK))
        if st.st_size > 2 * BLOCK:
            f.seek(-BLOCK, os.SEEK_END)
            h.update(f.read(BLOCK))
    return st, h.hexdigest()


def is_url(text: str) -> bool:
    """Whether a source is an address to download rather than a path."""
    return text.lower().startswith(("http://", "https://"))
