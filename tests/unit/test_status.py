"""Status texts as message ids and arguments (:mod:`python_endpoints.status`)."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest

from python_endpoints import status
from python_endpoints.status import MESSAGES, Said, parts_of, render, said

ROOT = Path(__file__).resolve().parents[2]


def test_a_said_text_is_its_english_words_and_knows_its_parts() -> None:
    text = said("step.transcoding") + said("percent", percent=42) + said("speed", speed="3.1")
    assert text == "transcoding 42 % (3.1x)" and isinstance(text, Said)
    assert parts_of(text) == [
        {"id": "step.transcoding", "args": {}},
        {"id": "percent", "args": {"percent": "42"}},
        {"id": "speed", "args": {"speed": "3.1"}},
    ]


def test_joined_with_plain_text_the_structure_is_dropped() -> None:
    after = said("step.transcoding") + " now"
    before = "now " + said("step.transcoding")
    assert (after, before) == ("transcoding now", "now transcoding")
    assert parts_of(after) is None and parts_of(before) is None
    assert parts_of("plain words") is None and parts_of(None) is None


def test_an_unknown_message_or_a_missing_argument_is_a_bug() -> None:
    with pytest.raises(KeyError, match="no status message 'nothing'"):
        said("nothing")
    with pytest.raises(KeyError, match="needs"):
        said("writing")  # {name} not given


def test_too_long_a_chain_is_sent_as_plain_text() -> None:
    text = said("done")
    for _ in range(status.MAX_PARTS):
        text += said("done")
    assert isinstance(text, Said) and parts_of(text) is None


def test_render_translates_each_part_and_falls_back_to_english() -> None:
    parts = parts_of(said("step.transcoding") + said("percent", percent=42))
    assert parts is not None
    chinese = {"transcoding": "转码中"}
    assert render(parts, lambda e: chinese.get(e, e)) == "转码中 42 %"
    # A translation naming an argument the message has not, or malformed: its English.
    assert render(parts, lambda e: "{nope}" if e == " {percent} %" else e) == "transcoding 42 %"
    assert render(parts, lambda e: "{" if e == " {percent} %" else e) == "transcoding 42 %"
    assert render(parts, lambda e: "{0}" if e == " {percent} %" else e) == "transcoding 42 %"
    # A part this build does not know (a newer server): nothing to translate from.
    assert render([{"id": "from.the.future", "args": {}}], lambda e: e) is None
    assert render([{"id": 3, "args": {}}], lambda e: e) is None
    assert render([{"id": "done", "args": ["not", "a", "mapping"]}], lambda e: e) is None
    assert render([{"id": "done"}], lambda e: e) == "done"


def test_every_message_has_a_well_formed_template_and_id() -> None:
    for message_id, template in MESSAGES.items():
        assert re.fullmatch(status.ID_PATTERN, message_id), message_id
        names = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
        assert all(re.fullmatch("[a-z_]+", n) for n in names), template
        assert said(message_id, **dict.fromkeys(names, "x")) == template.format(
            **dict.fromkeys(names, "x")
        )


REPORTERS = {"progress", "report_progress", "_report", "_send"}


def _plain_texts(path: Path) -> list[str]:
    """Calls in ``path`` that report a status as a literal or an f-string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in REPORTERS and name != "Progress":
            continue
        for arg in [*node.args, *(k.value for k in node.keywords if k.arg == "status_text")]:
            if isinstance(arg, ast.JoinedStr) or (
                isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_job_reports_its_status_in_plain_words() -> None:
    """Every status a job reports is made of messages the window can translate: none is a
    literal or an f-string (a new one must be added to the catalogue)."""
    sample = ROOT / "tests" / "unit" / "_plain_status_sample.py"
    sample.write_text(
        'ctx.progress(0.0, f"at {x}")\nctx.progress(1.0, said("done"))\n'
        'emit(Progress(percent=0, status_text="waiting"))\nctx.report_progress(0, "x")\n'
    )
    try:
        hits = _plain_texts(sample)
    finally:
        sample.unlink()
    assert sorted(h.rsplit(":", 1)[1] for h in hits) == ["1", "3", "4"]
    sources = sorted((ROOT / "python_endpoints").rglob("*.py"))
    assert len(sources) > 30
    plain = [hit for path in sources for hit in _plain_texts(path)]
    assert plain == []
