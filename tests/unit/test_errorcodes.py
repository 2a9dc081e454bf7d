"""One enum of error types: shared by the engine and the endpoints, spelled nowhere else.

The values are stored in ``task.error_type`` and sent in ``error`` frames, so they never change;
every code the jobs, the server and the engine use is a member, and the source never spells one
out as a bare string again (a typo there would be a new, silently unknown error type).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import python_endpoints.errorcodes as errorcodes
import workers.states
from python_endpoints.errorcodes import ErrorType
from workers.states import NON_RETRYABLE

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("python_endpoints", "workers")
CODES = frozenset(member.value for member in ErrorType)

#: Every value released so far: stored in databases and sent on the wire, so none may change
#: or go (new ones may be added).
RELEASED = frozenset(
    {
        "CANCELLED",
        "AWAITING_CREDENTIAL",
        "PAYLOAD_ERROR",
        "DEPENDENCY_FAILED",
        "NO_EXECUTOR",
        "INTERRUPTED",
        "ORPHANED",
        "STALLED",
        "EXECUTOR_ERROR",
        "SUBPROCESS_CRASHED",
        "CONNECTION_LOST",
        "PROTOCOL_ERROR",
        "NETWORK_ERROR",
        "IO_ERROR",
        "UNSUPPORTED_MEDIA",
        "NO_SPACE",
        "INPUT_MISSING",
        "NOT_MEDIA",
        "NO_AUDIO",
        "VERIFY_FAILED",
        "INPUT_DAMAGED",
        "FFMPEG_FAILED",
        "HTTP_ERROR",
        "MODEL_MISSING",
        "BAD_TRANSCRIPT",
        "LLM_UNREACHABLE",
        "LLM_ERROR",
        "MODEL_LOAD_FAILED",
        "OUT_OF_MEMORY",
        "BAD_RESULT",
    }
)


def test_the_engine_uses_the_endpoints_enum_itself() -> None:
    assert workers.states.ErrorType is ErrorType


def test_no_released_value_changed_and_each_value_is_its_name() -> None:
    assert RELEASED <= CODES
    assert all(member.value == member.name for member in ErrorType)
    # A member goes wherever a plain string went: the database, JSON, an f-string.
    assert isinstance(ErrorType.IO_ERROR, str) and f"{ErrorType.IO_ERROR}" == "IO_ERROR"


def test_the_never_retried_types_are_members() -> None:
    assert NON_RETRYABLE <= CODES


def _member_comments() -> dict[str, str]:
    """Each member's ``#:`` comment, read from the module's source."""
    source = Path(errorcodes.__file__).read_text(encoding="utf-8")
    lines = source.splitlines()
    (enum,) = (n for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    comments: dict[str, str] = {}
    for node in enum.body:
        if isinstance(node, ast.Assign):
            (target,) = node.targets
            assert isinstance(target, ast.Name)
            above = lines[node.lineno - 2].strip()
            before = lines[node.lineno - 3].strip()
            assert above.startswith("#: "), f"{target.id} has no comment"
            assert not before.startswith("#:"), f"{target.id}: one line of comment, not more"
            comments[target.id] = above.removeprefix("#: ")
    return comments


def test_every_member_says_what_it_means_and_whether_it_is_retried() -> None:
    comments = _member_comments()
    assert set(comments) == {member.name for member in ErrorType}
    for name, comment in comments.items():
        never = comment.endswith("Never retried.")
        assert never == (name in NON_RETRYABLE), f"{name}: {comment!r} disagrees with the engine"
        assert never or re.search(r"(Not r|R)etried\b", comment), f"{name}: retried or not?"
        assert len(comment.split(".")[0]) > 10, f"{name}: say what it means"


# -- no bare literal ---------------------------------------------------------------------------


def _prose(tree: ast.AST) -> set[int]:
    """The string constants that are text, not values: docstrings and an f-string's pieces."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
        elif isinstance(node, ast.JoinedStr):
            found.update(id(part) for part in node.values)
    return found


def bare_codes(source: str) -> list[tuple[int, str]]:
    """Where ``source`` spells an error code as a string of its own: ``(line, code)`` sorted.

    Only a string constant whose whole value is a member's value counts — an argument
    (``JobFailed(msg, "IO_ERROR")``, ``error_type="…"``), a default, a return, an assignment, a
    comparison, an element of a set or a key of a dict. A message or an SQL text that mentions a
    code among other words, an f-string's text and a docstring are prose, not a code.
    """
    tree = ast.parse(source)
    prose = _prose(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in CODES
        and id(node) not in prose
    )


FLAGGED = """
def f(x):
    raise JobFailed("the disk is full", "NO_SPACE")
    g(error_type="PROTOCOL_ERROR")
    if x.error_type == "CANCELLED":
        return "HTTP_ERROR"
    TRANSIENT = frozenset({"IO_ERROR"})
    ADVICE = {"NETWORK_ERROR": "check the connection"}
def h(error_type: str = "EXECUTOR_ERROR"): ...
"""

PROSE = '''
"""Fails ``NO_SPACE`` when the disk is full."""
def f(x):
    """Or IO_ERROR."""
    log(f"IO_ERROR{x}", "the task failed NETWORK_ERROR", "UPDATE task SET error_type = 'ORPHANED'")
    return ErrorType.PAYLOAD_ERROR, "DOWNLOAD_SITE", "io_error", "SIGKILL"
'''


def test_the_scanner_finds_bare_codes_and_only_them() -> None:
    assert bare_codes(FLAGGED) == [
        (3, "NO_SPACE"),
        (4, "PROTOCOL_ERROR"),
        (5, "CANCELLED"),
        (6, "HTTP_ERROR"),
        (7, "IO_ERROR"),
        (8, "NETWORK_ERROR"),
        (9, "EXECUTOR_ERROR"),
    ]
    assert bare_codes(PROSE) == []


def _sources() -> Iterator[Path]:
    enum_module = Path(errorcodes.__file__).resolve()
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.resolve() != enum_module:
                yield path


def test_no_error_code_is_spelled_out_outside_the_enum() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {code!r} (write ErrorType.{code})"
        for path in _sources()
        for line, code in bare_codes(path.read_text(encoding="utf-8"))
    ]
    assert found == []


# -- the documents ------------------------------------------------------------------------------


def test_every_code_the_protocol_names_is_a_member() -> None:
    # protocol.md spells error types in backticks, task types without them.
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([A-Z][A-Z0-9_]{3,})`", text))
    assert named, "the protocol names no error type"
    assert named <= CODES, f"not members: {sorted(named - CODES)}"


def _media_error_table() -> dict[str, str]:
    """media.md's table of errors: each type and its "retried" column (yes or no)."""
    text = (ROOT / "docs" / "media.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|[^|\n]*\| (yes|no) \|", text, re.M))


def test_the_media_error_table_is_there() -> None:
    assert len(_media_error_table()) >= 10


@pytest.mark.parametrize("code", sorted(_media_error_table()))
def test_the_media_error_table_agrees_with_the_engine(code: str) -> None:
    assert code in CODES
    retried = _media_error_table()[code]
    assert (retried == "no") == (code in NON_RETRYABLE), f"{code}: the table says {retried}"
