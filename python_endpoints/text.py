"""Text a person reads, made safe to store and show. Pure, standard library only (the quick
readers of the CLI import it without pydantic)."""

from __future__ import annotations

import re

__all__ = ["clean_text", "is_text"]


def is_text(text: str) -> bool:
    """Whether ``text`` can be stored and shown as it is: no lone surrogate (what an argument
    or a file name's bytes that are not UTF-8 become). No id Fredica makes holds one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(text: str) -> str:
    """``text`` as it can be stored and shown: every lone surrogate (and NUL, which
    PostgreSQL's text refuses) replaced by U+FFFD.

    A lone surrogate is what Python makes of a file name's byte that is not UTF-8 (``café``
    in Latin-1 becomes ``caf`` + U+DCE9), or what a JSON ``\\udc..`` escape gives: SQLite, a
    terminal and Qt all refuse to encode it. Bytes escaped that way are decoded back first, so
    whatever of them is UTF-8 reads as it should. A message is for people: this loses nothing
    a person could read. (Paths and results are stored losslessly instead, as ASCII JSON.)"""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    return text if is_text(text) else _SURROGATES.sub(_decoded, text)


#: A run of the surrogates undecodable bytes become (U+DC80 to U+DCFF), or any other one.
_SURROGATES = re.compile("[\udc80-\udcff]+|[\ud800-\udfff]")


def _decoded(found: re.Match[str]) -> str:
    run = found.group()
    if "\udc80" <= run[0] <= "\udcff":  # bytes: whatever of them is UTF-8 reads as text
        return run.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return "\ufffd"
