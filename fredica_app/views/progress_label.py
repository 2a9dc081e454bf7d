"""The one label a progress bar carries: the percent first, then what the job says it is doing
— without the percent a status text may already hold ("transcoding 60 % (13.5x)" would read
"60 % · transcoding 60 % (13.5x)")."""

from __future__ import annotations

import re
from collections.abc import Callable

#: A percent figure inside a status text ("60 %", "60%", "12.5 %"), with the space before it.
_PERCENT = re.compile(r"\s*\b\d+(?:[.,]\d+)?\s?%")
_SPACES = re.compile(r"\s{2,}")
#: A status's last bracketed part (a speed, "(13.5x)"), with the space before it.
_LAST_BRACKET = re.compile(r"\s*\([^()]*\)\s*$")
#: Between a bar label's percent and the status text.
SEPARATOR = " · "


def without_percent(text: str) -> str:
    """``text`` with its percent figures taken out (and the spaces they leave tidied)."""
    if "%" not in text:
        return text
    return _SPACES.sub(" ", _PERCENT.sub("", text)).strip(" ·:,")


def bar_label(percent: float, text: str) -> str:
    """``"60 % · transcoding (13.5x)"``: the bar's percent once, then the status text."""
    label = f"{percent:.0f} %"
    rest = without_percent(text)
    return f"{label}{SEPARATOR}{rest}" if rest else label


def fitted_label(
    label: str, width: int, advance: Callable[[str], int], elide: Callable[[str, int], str]
) -> str:
    """``label`` as it fits in ``width`` pixels (``advance`` measures a text, ``elide`` cuts
    one with an ellipsis): whole when it fits; else without the status's last bracket (the
    speed: "60 % · transcoding"); else its first part alone — the percent, or a count —
    ("60 %", not "60 % · tra…": a cut word says nothing); else cut."""
    if advance(label) <= width:
        return label
    head, _, rest = label.partition(SEPARATOR)
    if not rest:
        return elide(label, width)
    shorter = _LAST_BRACKET.sub("", rest)
    if shorter and shorter != rest and advance(head + SEPARATOR + shorter) <= width:
        return head + SEPARATOR + shorter
    return head if advance(head) <= width else elide(label, width)
