"""JSON that PostgreSQL's ``jsonb`` can hold, without losing a character.

``jsonb`` refuses two things JSON text may carry and Fredica's values do carry: the NUL
character (``\\u0000``) and lone surrogates (``\\udce9``: how Python keeps a file name's byte
that is not UTF-8 — the store keeps paths losslessly). On PostgreSQL, every string in a JSON
value is therefore written with those characters (and the escape character itself) spelled
as :data:`ESC` and six hex digits of their code point, and read back as they were. ESC is a
private-use character of plane 16 that text does not contain; one that did is spelled too,
so reading back is exact. A value without any of them — nearly all — is written as
``json.dumps`` writes it (one regular-expression search of the text decides).

Pure: no I/O. Used by the PostgreSQL engine (``workers.db``: SQLAlchemy's and psycopg's JSON
dumps and loads) and by the store's hot path there.
"""

from __future__ import annotations

import json
import re
from typing import Any

ESC = "\U0010fffd"
_BAD = re.compile("[\x00\ud800-\udfff\U0010fffd]")
#: In ASCII JSON text: NUL, and any surrogate escape (ESC, and an emoji, are written as a
#: pair of them: those take the slow way, and come out as they went in).
_SUSPECT = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_SPELLED = re.compile(ESC + "([0-9a-f]{6})")


def dumps(value: Any) -> str:
    text = json.dumps(value)
    if _SUSPECT.search(text) is None:
        return text
    return json.dumps(_encode(value))


def loads(text: str | bytes) -> Any:
    if isinstance(text, bytes | bytearray | memoryview):
        text = bytes(text).decode("utf-8")
    value = json.loads(text)
    if ESC not in text and "\\udbff\\udffd" not in text.lower():
        return value
    return _decode(value)


def _spell(match: re.Match[str]) -> str:
    return f"{ESC}{ord(match.group()):06x}"


def _encode(value: Any) -> Any:
    if isinstance(value, str):
        return _BAD.sub(_spell, value)
    if isinstance(value, dict):
        return {_encode(k): _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, str):
        return _SPELLED.sub(lambda m: chr(int(m.group(1), 16)), value) if ESC in value else value
    if isinstance(value, dict):
        return {_decode(k): _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value
