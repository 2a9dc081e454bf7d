"""The one label a progress bar carries: the percent first, then what the job says it is doing
— without the percent a status text may already hold ("transcoding 60 % (13.5x)" would read
"60 % · transcoding 60 % (13.5x)")."""

from __future__ import annotations

import re

#: A percent figure inside a status text ("60 %", "60%", "12.5 %"), with the space before it.
_PERCENT = re.compile(r"\s*\b\d+(?:[.,]\d+)?\s?%")
_SPACES = re.compile(r"\s{2,}")


def without_percent(text: str) -> str:
    """``text`` with its percent figures taken out (and the spaces they leave tidied)."""
    if "%" not in text:
        return text
    return _SPACES.sub(" ", _PERCENT.sub("", text)).strip(" ·:,")


def bar_label(percent: float, text: str) -> str:
    """``"60 % · transcoding (13.5x)"``: the bar's percent once, then the status text."""
    label = f"{percent:.0f} %"
    rest = without_percent(text)
    return f"{label} · {rest}" if rest else label
