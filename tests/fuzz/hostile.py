"""Hostile values for the fuzz tests: JSON-ish data holding what breaks careless code (lone
surrogates, control characters, NUL, huge and non-finite numbers, deep nesting), file names of
any bytes, and the settings every fuzz test runs under.

Every fuzz test is bounded and reproducible: a fixed number of examples, derandomized (the
same examples on every run and every machine), no example database written, no deadline (the
shared CI machines are slow and uneven; a hang is caught by the tests' own timeouts).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st


def fuzz(examples: int) -> settings:
    """The settings of a fuzz test that tries ``examples`` inputs."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


#: Strings that broke code elsewhere, or could: empty, NUL, controls, lone surrogates (an
#: undecodable file name's bytes, a JSON ``\\udc..`` escape), a path's tricks, a long one.
NASTY_TEXT = (
    "",
    "\x00",
    "a\x00b",
    "\n",
    "\r\n\t\x1b[31m",
    "\x7f\x85\x9f",
    "\udc80",
    "caf\udce9",
    "\ud800",
    "\udfff\ud800",
    "\ufffd",
    "\u202e\u200b\ufeff",
    "..",
    "../../etc/passwd",
    "/",
    "%",
    "fsbytes:%ff",
    "字幕",
    "x" * 600,
)

#: Every code point, surrogates included.
any_char = st.characters(codec=None, exclude_categories=())

hostile_text = st.one_of(st.sampled_from(NASTY_TEXT), st.text(any_char, max_size=40))

#: Integers a JSON document may hold: small, at the 64-bit edges, and beyond them.
hostile_int = st.one_of(
    st.integers(-1000, 1000),
    st.sampled_from([2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**30]),
    st.integers(),
)

#: Floats a JSON reader may give (Python's reads ``NaN`` and ``Infinity`` too).
hostile_float = st.floats(allow_nan=True, allow_infinity=True)

json_scalars = st.one_of(st.none(), st.booleans(), hostile_int, hostile_float, hostile_text)
finite_scalars = st.one_of(
    st.none(),
    st.booleans(),
    hostile_int,
    st.floats(allow_nan=False, allow_infinity=False),
    hostile_text,
)


def json_values(max_leaves: int = 12, *, finite: bool = False) -> st.SearchStrategy[object]:
    """Any value a JSON reader could give, with hostile scalars and keys; ``finite``: no NaN
    nor infinity (which JSON cannot hold: they are sent as null)."""
    return st.recursive(
        finite_scalars if finite else json_scalars,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(hostile_text, children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def nested(depth: int, leaf: str = "0") -> str:
    """JSON text of lists nested ``depth`` deep: deeper than the interpreter recurses."""
    return "[" * depth + leaf + "]" * depth


#: JSON text no sane writer makes, each of which once raised something other than a clear
#: error: nesting past the recursion limit, an integer past the digits Python converts.
HOSTILE_JSON_TEXTS = (
    nested(100_000),
    '{"a": ' + nested(50_000) + "}",
    "1" * 5000,
    '{"tasks": ' + "9" * 5000 + "}",
    "",
    "\ufeff{}",
    "NaN",
    "[1, 2",
    '{"a": 1, "a": 2}',
    '"\\ud800"',
)

#: The bytes a file name may hold on POSIX: any but ``/`` and NUL.
NAME_BYTES = bytes(b for b in range(1, 256) if b != ord("/"))


def name_bytes(min_size: int = 1, max_size: int = 60) -> st.SearchStrategy[bytes]:
    """A file name's bytes (not ``.`` nor ``..``, which name folders)."""
    return (
        st.lists(st.sampled_from(NAME_BYTES), min_size=min_size, max_size=max_size)
        .map(bytes)
        .filter(lambda b: b not in (b".", b".."))
    )


def file_name(stem: bytes, suffix: str) -> str:
    """The name Python holds for ``stem`` + ``suffix`` (undecodable bytes as surrogates)."""
    return os.fsdecode(stem + suffix.encode())
