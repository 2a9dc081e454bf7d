"""Which runs ``fredica runs`` (and ``fredica watch``) show: the options as a
:class:`~workers.changes.RunFilter`, the page's size, and the cursor a JSON page hands on.
Pure: no I/O (the materials a ``--material`` names are looked up by the caller).

A cursor is opaque to a script: the last run's creation time and id, as ``<seconds>~<id>``;
the next page starts after it, whatever was added since (runs are listed newest first, so new
ones come before the first page, never into a later one).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Collection

from fredica_app.errors import FredicaError
from workers.changes import PageKey, RunFilter
from workers.states import RunStatus

#: A terminal shows this many runs unless told otherwise.
TERMINAL_LIMIT = 50
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_CURSOR = re.compile(r"^(\d+(?:\.\d+)?(?:e[+-]?\d+)?)~([0-9A-Za-z-]{1,64})$")


def parse_duration(text: str) -> float:
    """Seconds of ``90s``, ``30m``, ``2h``, ``1d``, ``1w``. Raises :class:`FredicaError`."""
    found = _DURATION.match(text.strip().lower())
    if found is None:
        raise FredicaError(
            f"--since {text!r}: give a duration such as 30m, 2h, 1d or 1w (s, m, h, d, w)"
        )
    return float(found[1]) * _UNITS[found[2]]


def encode_cursor(key: PageKey) -> str:
    return f"{key[0]!r}~{key[1]}"


def decode_cursor(text: str) -> PageKey:
    found = _CURSOR.match(text.strip())
    if found is None or not math.isfinite(float(found[1])):
        raise FredicaError(f"--cursor {text!r} is not a cursor `fredica runs --json` gave")
    return float(found[1]), found[2]


def page_size(args: argparse.Namespace, *, terminal: bool) -> int | None:
    """How many runs to show: ``--limit``; all with ``--all``; else
    :data:`TERMINAL_LIMIT` on a terminal (text), all otherwise (a pipe, JSON)."""
    if getattr(args, "all", False):
        return None
    limit = getattr(args, "limit", None)
    if limit is not None:
        if limit < 1:
            raise FredicaError(f"--limit is a number of runs, 1 or more (got {limit})")
        return int(limit)
    return TERMINAL_LIMIT if terminal and not args.json else None


def run_filter(
    args: argparse.Namespace,
    material_ids: Collection[str] | None,
    now: float,
    *,
    terminal: bool,
) -> RunFilter:
    """The runs ``args`` asks for; ``material_ids``: the materials its ``--material`` names
    (None: it names none)."""
    since = None if args.since is None else now - parse_duration(args.since)
    return RunFilter(
        status=tuple(RunStatus(s) for s in dict.fromkeys(args.status or ())),
        templates=tuple(dict.fromkeys(args.template or ())),
        material_ids=None if material_ids is None else frozenset(material_ids),
        since=since,
        limit=page_size(args, terminal=terminal),
        after=None if getattr(args, "cursor", None) is None else decode_cursor(args.cursor),
    )


def footer(shown: int, more: int) -> str | None:
    """The line under a cut list: how many more, and how to see them."""
    if not more:
        return None
    return f"… {more:,} more: --all or --limit N (showing {shown:,})"
