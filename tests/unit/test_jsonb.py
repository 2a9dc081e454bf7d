"""workers.jsonb: any JSON value Fredica may hold goes through PostgreSQL's jsonb and comes
back as it was — NUL, lone surrogates (a file name's bytes that are not UTF-8), the escape
character itself, emoji — and what has none of them is written as json.dumps writes it."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from workers import jsonb


def refused_by_jsonb(value: object) -> bool:
    """Whether a string of ``value`` holds what jsonb refuses: NUL, a lone surrogate."""
    if isinstance(value, str):
        return "\x00" in value or re.search("[\ud800-\udfff]", value) is not None
    if isinstance(value, dict):
        return any(refused_by_jsonb(k) or refused_by_jsonb(v) for k, v in value.items())
    if isinstance(value, list):
        return any(refused_by_jsonb(v) for v in value)
    return False


text = st.text(
    alphabet=st.characters(codec=None, blacklist_categories=()),  # surrogates included
    max_size=20,
) | st.sampled_from(["\x00", "caf\udce9.avi", jsonb.ESC, jsonb.ESC + "000041", "😀", "\\u0000"])
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)


@given(values)
@settings(max_examples=400)
def test_every_value_comes_back_as_it_went(value: object) -> None:
    written = jsonb.dumps(value)
    assert not refused_by_jsonb(json.loads(written))  # nothing jsonb refuses is left
    assert jsonb.loads(written) == value
    # (as PostgreSQL gives jsonb back: text with the characters themselves, not escapes)
    assert jsonb.loads(json.dumps(json.loads(written), ensure_ascii=False)) == value


def test_plain_values_are_written_as_json_dumps_writes_them() -> None:
    value = {"path": "/media/clip.mkv", "n": [1, 2.5, None], "ok": True, "名": "音声"}
    assert jsonb.dumps(value) == json.dumps(value)
    assert jsonb.loads(jsonb.dumps(value)) == value
    assert jsonb.loads(b'{"a": 1}') == {"a": 1}
