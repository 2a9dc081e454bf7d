"""When a file in a watch folder is ready to be taken in, and which files are candidates at
all — decided from plain values (PURE: no I/O; the watcher stats the files and feeds this).

A file being written or copied grows, or at least has its modification time move, while it is
written. So a file is *settled* once it has been seen with the same size and mtime for
``settle`` seconds: two observations that far apart, nothing changed in between that anyone
saw. No file-locking trick tells this on every system (a copy over the network, a camera's
card, a browser's download all look different), and the wait is cheap next to what is done
with the file afterwards.

:class:`SettleTracker` reports each settled file once; a file that changes after that (new
bytes, or merely touched) is watched again and reported again when it settles — whether it is
submitted again is for the content fingerprint to say, not for this module. A file that
vanishes is forgotten.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from fredica_app.library.fingerprint import MEDIA_EXTENSIONS

#: Names that programs give to a file while they write it, renamed when it is complete:
#: browsers (``.part``, ``.crdownload``, ``.download``), downloaders and torrent clients
#: (``.partial``, ``.!qb``, ``.!ut``, ``.opdownload``), SFTP clients (``.filepart``), editors
#: and tools (``.tmp``, ``.temp``, ``.swp``). Compared in lower case.
PARTIAL_SUFFIXES = (
    ".part",
    ".partial",
    ".crdownload",
    ".download",
    ".opdownload",
    ".filepart",
    ".!qb",
    ".!ut",
    ".tmp",
    ".temp",
    ".swp",
)


def is_hidden(name: str) -> bool:
    """A hidden file or folder (``.name``): never watched, as the library's import skips them
    (Fredica's own temporary outputs are such names)."""
    return name.startswith(".")


def is_partial(name: str) -> bool:
    """A name that says the file is still being written or is temporary: a partial-download
    suffix, a backup's ``~`` suffix, an office lock file's ``~$`` prefix."""
    lower = name.lower()
    return lower.endswith(PARTIAL_SUFFIXES) or name.endswith("~") or name.startswith("~$")


def matches(name: str, patterns: Sequence[str]) -> bool:
    """Whether ``name`` matches one of the glob ``patterns`` (``*.mkv``, ``GH01*``), whatever
    the case of either; no patterns match every name."""
    if not patterns:
        return True
    lower = name.lower()
    return any(fnmatch.fnmatchcase(lower, p.lower()) for p in patterns)


def is_candidate(name: str, patterns: Sequence[str] = ()) -> bool:
    """Whether a file of this name in a watch folder is taken in once it settles: a media
    file (by its extension, as the library's folder import judges it) that matches the
    folder's patterns, neither hidden nor partial. The patterns narrow the media files, they
    do not add other kinds: ``GH01*`` takes a camera's videos, not its thumbnails."""
    if is_hidden(name) or is_partial(name):
        return False
    suffix = PurePath(name).suffix.lower()
    return suffix in MEDIA_EXTENSIONS and matches(name, patterns)


@dataclass(frozen=True, slots=True)
class Observation:
    """A file as one look at it found it."""

    path: PurePath
    size: int
    mtime_ns: int


@dataclass(slots=True)
class _Watched:
    size: int
    mtime_ns: int
    #: When it was first seen with this size and mtime.
    since: float
    #: When it was last seen so.
    last: float
    reported: bool = False


class SettleTracker:
    """The files of one watch folder that are being watched until they settle.

    Feed it what each look finds (:meth:`observe`, :meth:`sync` for a full scan,
    :meth:`forget` for what is gone); :meth:`settled` then says which files have been seen
    unchanged for ``settle`` seconds, each once until it changes again. Times are any
    monotonic clock's seconds, as long as one clock is used.
    """

    def __init__(self, settle: float) -> None:
        if settle < 0:
            raise ValueError(f"settle must be 0 or more seconds, not {settle}")
        self.settle = settle
        self._files: dict[PurePath, _Watched] = {}

    def __len__(self) -> int:
        return len(self._files)

    def __contains__(self, path: object) -> bool:
        return path in self._files

    def observe(self, path: PurePath, size: int, mtime_ns: int, now: float) -> None:
        """The file at ``path`` has this size and mtime at ``now``. A file not seen before,
        or seen with another size or mtime, starts its wait again (and is reported again once
        it settles, even if it had been)."""
        seen = self._files.get(path)
        if seen is None or (seen.size, seen.mtime_ns) != (size, mtime_ns):
            self._files[path] = _Watched(size, mtime_ns, since=now, last=now)
        elif now > seen.last:
            seen.last = now

    def forget(self, path: PurePath) -> None:
        """``path`` is gone: the file, or a folder and every file watched under it."""
        for watched in [p for p in self._files if p == path or p.is_relative_to(path)]:
            del self._files[watched]

    def sync(self, observations: Iterable[Observation], now: float) -> None:
        """A full scan found these files (every candidate of the folder): observe each, and
        forget the files it did not find."""
        found = set()
        for o in observations:
            self.observe(o.path, o.size, o.mtime_ns, now)
            found.add(o.path)
        for gone in [p for p in self._files if p not in found]:
            del self._files[gone]

    def settled(self) -> list[PurePath]:
        """The files seen unchanged for ``settle`` seconds and not reported since they last
        changed, sorted; each is reported once (until it changes again)."""
        out = []
        for path, seen in self._files.items():
            if not seen.reported and seen.last - seen.since >= self.settle:
                seen.reported = True
                out.append(path)
        return sorted(out)

    def unsettled(self) -> list[PurePath]:
        """The files still waiting to settle, sorted: the ones to look at again soon."""
        return sorted(p for p, seen in self._files.items() if not seen.reported)

    def rearm(self, path: PurePath) -> None:
        """Report ``path`` again the next time :meth:`settled` is asked, if it is still
        watched and settled (what could not be done with it may be tried again)."""
        seen = self._files.get(path)
        if seen is not None:
            seen.reported = False
