"""When the disk is "nearly full", and when to say so again.

Media work writes big files: a transcode of an hour of video is gigabytes, and a job that
meets a full disk fails (``NO_SPACE``). The desktop app looks at the free space of the
library folder and of the data directory every minute and warns once when it runs low.

The rule, for one file system:

- *low* when its free space is under :func:`threshold` of its size: 3 % of it, but never
  less than 2 GiB (a small disk: a single output may need that much) and never more than
  10 GiB (a large one: 3 % of 4 TB would warn with 120 GB still free);
- *recovered* only when the free space climbs back over :data:`RECOVER` times that
  threshold. Between the two nothing changes: free space that hovers around the line (a
  job writing, a temporary file removed) does not warn again and again. A file system warns
  again only after it has recovered and then run low once more.

Pure: sizes in, decisions out; the GUI measures (``shutil.disk_usage``) and shows.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

GiB = 1024**3
#: Free space under this is always low.
MIN_FREE = 2 * GiB
#: The share of the file system's size that is low, between the two bounds.
SHARE = 0.03
#: Free space over this is never low, whatever the share says.
MAX_FREE = 10 * GiB
#: A low file system has recovered when its free space is this many times the threshold.
RECOVER = 1.5


@dataclass(frozen=True, slots=True)
class Usage:
    """One measured file system: ``key`` says which (a device number: two folders on the
    same disk are one file system), ``path`` a folder on it, for the message."""

    key: Hashable
    path: str
    total: int
    free: int


def threshold(total: int) -> int:
    """The free space, in bytes, under which a file system of ``total`` bytes is low."""
    return max(MIN_FREE, min(MAX_FREE, int(total * SHARE)))


def is_low(usage: Usage) -> bool:
    return usage.free < threshold(usage.total)


def has_recovered(usage: Usage) -> bool:
    return usage.free >= threshold(usage.total) * RECOVER


class LowSpaceAlarm:
    """Which file systems to warn about now, with hysteresis (see the module's docstring)."""

    def __init__(self) -> None:
        self._low: set[Hashable] = set()

    def update(self, usages: Iterable[Usage]) -> list[Usage]:
        """The measured file systems that have just run low (warn about these); the ones
        already warned about stay quiet until they recover."""
        warn: list[Usage] = []
        for usage in usages:
            if usage.key in self._low:
                if has_recovered(usage):
                    self._low.discard(usage.key)
            elif is_low(usage):
                self._low.add(usage.key)
                warn.append(usage)
        return warn

    def warned(self, key: Hashable) -> bool:
        """Whether ``key`` has been warned about and has not recovered since."""
        return key in self._low
