"""Hostile workflow specs and payloads, where ``fredica submit`` and the app take them: the spec
file's text, its JSON (a spec or a template's name), the run the store creates from it, and the
engine that runs what was accepted.

Whatever comes in is either a run or one :class:`~workers.errors.FredicaError` (a
:class:`SpecError` or a :class:`TemplateError`) whose message says what is wrong — never another
exception, never a run half-written, never an engine that stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fredica_app import jobs
from fredica_app.cli import main
from fredica_app.errors import FredicaError, SpecError
from fredica_app.services import Fredica, load_spec_file
from fredica_app.templates import BUILTIN
from tests.fuzz.hostile import (
    HOSTILE_JSON_TEXTS,
    fuzz,
    hostile_int,
    hostile_text,
    json_values,
    nested,
)
from workers.spec import RESOURCE_CLASSES, parse_spec, prepare_run
from workers.states import RunStatus

REGISTRY = jobs.registry()
#: What a terminal line must not hold: C0 and C1 controls.
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")

#: Values a payload's field could plausibly hold, beside hostile ones.
PLAUSIBLE = st.sampled_from(
    ["/media/clip.mkv", "/library/clip.mp4", "/library", "clip", "auto", "srt", 0, 1, 2.5, True]
)


def mostly(
    draw: st.DrawFn, good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any], odds: int = 5
) -> Any:
    """A draw from ``good``, but once in ``odds`` from ``bad``: most specs get deep into
    validation before something is wrong, some go through whole. (A boolean would shrink to
    the bad side; the first of a sampled tuple is the good one.)"""
    good_side = draw(st.sampled_from((True,) * (odds - 1) + (False,)))
    return draw(good) if good_side else draw(bad)


#: A valid payload of some types, which a draw then changes a field or two of.
VALID = {
    "NOOP": {},
    "SLEEP": {"seconds": 0.01},
    "PROBE": {"input": "/media/clip.mkv"},
    "TRANSCODE_MP4": {"input": "/media/clip.mkv", "output": "/library/clip.mp4"},
    "EXTRACT_AUDIO": {"input": "/media/clip.mkv", "output": "/library/clip.wav"},
}


@st.composite
def payloads(draw: st.DrawFn, type_name: str) -> Any:
    """A payload for ``type_name``: a valid one with some of its model's fields changed to
    plausible or hostile values, or anything."""
    task_type = REGISTRY.get(type_name)
    fields = sorted(task_type.payload_model.model_fields) if task_type else ["x"]
    changes = st.dictionaries(
        st.sampled_from(fields) | hostile_text, PLAUSIBLE | json_values(4), max_size=2
    )
    return mostly(draw, changes.map(lambda c: {**VALID.get(type_name, {}), **c}), json_values(3))


@st.composite
def specs(draw: st.DrawFn) -> Any:
    """Spec-shaped JSON: tasks whose keys, types, payloads, dependencies and options are each
    mostly right and sometimes hostile, so that validation is reached at every depth."""
    plain = draw(st.permutations("abcdef"))[: draw(st.integers(1, 5))]
    keys = [mostly(draw, st.just(k), hostile_text | st.sampled_from(plain), odds=10) for k in plain]
    tasks: list[Any] = []
    for i, key in enumerate(keys):
        type_name = mostly(
            draw, st.sampled_from(sorted(VALID)), st.sampled_from(REGISTRY.names()) | hostile_text
        )
        task: dict[str, Any] = {"key": key, "type": type_name}
        if mostly(draw, st.just(True), st.just(False)):  # left out: its defaults, if any
            task["payload"] = draw(payloads(type_name))
        if i and draw(st.booleans()):
            earlier = st.lists(st.sampled_from(keys[:i]), max_size=3)  # never a cycle
            task["depends_on"] = mostly(
                draw, earlier, st.lists(st.sampled_from(keys) | hostile_text)
            )
        for option, good, bad in (
            ("priority", st.integers(0, 10), hostile_int),
            ("max_retries", st.integers(0, 3), hostile_int),
            ("idempotency_key", st.sampled_from(["k1", "k2"]), hostile_text),
            ("resource", st.sampled_from(RESOURCE_CLASSES), hostile_text),
            ("material_id", st.just("m1"), hostile_text),
        ):
            if draw(st.integers(0, 5)) == 5:
                task[option] = mostly(draw, good, bad)
        tasks.append(mostly(draw, st.just(task), json_values(3), odds=20))
    spec: dict[str, Any] = {"tasks": tasks}
    for option, values in (
        ("template", hostile_text),
        ("material_id", hostile_text),
        ("extra", json_values(2)),
    ):
        if draw(st.integers(0, 9)) == 9:
            spec[option] = draw(values)
    return mostly(draw, st.just(spec), json_values(4), odds=10)


#: ``{"template": NAME}``, the other form ``submit`` takes, with names right and hostile.
templates = st.fixed_dictionaries(
    {"template": st.sampled_from(sorted(BUILTIN)) | hostile_text | json_values(2)},
    optional={"material_id": hostile_text | json_values(2), "tasks": json_values(2)},
)

anything = st.one_of(specs(), templates, json_values())


def assert_clear(exc: FredicaError) -> None:
    """A message a person can read on one line."""
    message = str(exc)
    assert message.strip(), f"{type(exc).__name__} without a message"
    assert "Traceback" not in message


# --- the spec file's text ----------------------------------------------------------------------


@fuzz(300)
@given(st.one_of(st.text(max_size=200), st.sampled_from(HOSTILE_JSON_TEXTS)))
@example(nested(100_000))  # RecursionError, before
@example('{"tasks": ' + "1" * 5000 + "}")  # ValueError (integer string conversion), before
def test_spec_text_is_json_or_one_spec_error(text: str) -> None:
    """What ``submit -`` reads is JSON or a :class:`SpecError` naming standard input."""
    try:
        load_spec_file("-", text)
    except SpecError as exc:
        assert_clear(exc)
        assert str(exc).startswith("standard input ")


@fuzz(150)
@given(data=st.binary(max_size=300) | st.sampled_from(HOSTILE_JSON_TEXTS).map(str.encode))
def test_spec_file_bytes_are_json_or_one_spec_error(
    data: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A spec file of any bytes (not UTF-8, a BOM, JSON too deep or too long a number) is read
    or refused with a :class:`SpecError` that names the file."""
    path = tmp_path_factory.mktemp("spec") / "spec.json"
    path.write_bytes(data)
    try:
        load_spec_file(str(path))
    except SpecError as exc:
        assert_clear(exc)
        assert str(path) in str(exc)


# --- validation, pure ----------------------------------------------------------------------------


@fuzz(300)
@given(anything)
@example({"tasks": [{"key": "a", "type": "NOOP", "payload": {"schema_version": [1]}}]})
@example({"tasks": [{"key": "a", "type": "NOOP", "payload": {"schema_version": "1"}}]})
@example({"tasks": [{"key": "a", "type": "PROBE", "payload": {"input": "/a\x00b"}}]})
def test_any_json_is_a_prepared_run_or_one_spec_error(data: Any) -> None:
    """``parse_spec`` then ``prepare_run`` (what ``submit`` does before writing anything) give a
    run whose tasks are all known, validated and in dependency order — or a
    :class:`SpecError`. (An unhashable ``schema_version`` raised ``TypeError`` before; a
    string one was "schema_version 1 is not supported (supported: 1)"; a NUL in a path was
    accepted, and its job then failed "does not exist".)"""
    try:
        prepared = prepare_run(parse_spec(data), REGISTRY)
    except SpecError as exc:
        assert_clear(exc)
        return
    seen: set[str] = set()
    for task in prepared.tasks:
        assert task.type in REGISTRY and task.resource in RESOURCE_CLASSES
        assert set(task.depends_on) <= seen, "dependencies first"
        seen.add(task.key)
        json.dumps(task.payload)  # storable


# --- the app: the store's run creation, then the engine ------------------------------------------


@contextlib.contextmanager
def app_on(data_dir: Path) -> Iterator[tuple[asyncio.Runner, Fredica]]:
    """A real app on ``data_dir``, and the loop its calls run on (hypothesis calls the test
    body once per example, synchronously)."""
    with asyncio.Runner() as runner:
        app = runner.run(_open(data_dir))
        try:
            yield runner, app
        finally:
            runner.run(app.close())


async def _open(data_dir: Path) -> Fredica:
    return Fredica.open(data_dir, thorough=False)


def same_json(a: Any, b: Any) -> bool:
    """Equal as stored (NaN equals NaN there)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@fuzz(40)
@given(data=anything)
@example(data={"template": "transcode_mp4", "material_id": "\ud800"})  # UnicodeEncodeError, before
def test_submit_creates_the_run_it_was_given_or_refuses_it_whole(
    data: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``app.submit`` on a real data directory: a run whose stored tasks are the validated
    spec's, or one :class:`FredicaError` and no run at all. (A ``material_id`` that is not
    UTF-8 raised ``UnicodeEncodeError`` from SQLite before.)"""
    with app_on(tmp_path_factory.mktemp("data")) as (runner, app):
        try:
            created = runner.run(app.submit(data))
        except FredicaError as exc:
            assert_clear(exc)
            assert runner.run(app.store.list_runs()) == []
            return
        run = runner.run(app.store.get_run(created.run_id))
        tasks = runner.run(app.store.list_tasks(created.run_id))
        assert run.total_tasks == len(tasks) == len(created.task_ids)
        if isinstance(data, dict) and "tasks" in data:
            prepared = prepare_run(parse_spec(data), REGISTRY)
            stored = {t.key: t for t in tasks}
            for task in prepared.tasks:
                assert same_json(stored[task.key].payload, task.payload)
                assert stored[task.key].priority == task.priority


#: NOOP payloads the engine echoes: hostile keys and values, NaN and huge integers included.
noop_payloads = st.dictionaries(
    hostile_text.filter(lambda k: k not in ("schema_version", "check_skip")), json_values(8)
)


@fuzz(3)
@given(payloads=st.lists(noop_payloads, min_size=10, max_size=10))
def test_the_engine_runs_every_accepted_payload_and_goes_on(
    payloads: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Runs of NOOP tasks whose payloads hold anything JSON can: those accepted (a key or a
    string that is not UTF-8 is refused) the engine runs to completion, each result the
    payload as stored, and it stops cleanly after."""
    with app_on(tmp_path_factory.mktemp("data")) as (runner, app):
        accepted: dict[str, dict[str, Any]] = {}
        for n, payload in enumerate(payloads):
            spec = {"tasks": [{"key": f"t{n}", "type": "NOOP", "payload": payload}]}
            try:
                accepted[runner.run(app.submit(spec)).run_id] = payload
            except SpecError as exc:  # a key or a string that is not UTF-8 text
                assert "NOOP payload" in str(exc)
        assert accepted

        async def until_idle() -> None:
            async with app.engine_session() as engine:
                await asyncio.wait_for(engine.run(until_idle=True), 60)

        runner.run(until_idle())
        for run_id, payload in accepted.items():
            assert runner.run(app.store.get_run(run_id)).status is RunStatus.COMPLETED
            [task] = runner.run(app.store.list_tasks(run_id))
            # As stored: JSON's (NaN and infinities are null there).
            assert same_json(task.result, task.payload)
            assert task.payload.keys() == {*payload, "schema_version"}


# --- the command -------------------------------------------------------------------------------


#: A payload key that broke the error line in two and coloured the terminal, before.
BAD_KEY = {"input": "/media/clip.mkv", "a\nb\x1b[31m": 1}


def fredica(data_dir: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--data-dir", str(data_dir), *args])
    return code, out.getvalue(), err.getvalue()


@fuzz(40)
@given(
    document=st.one_of(
        anything.map(json.dumps),
        st.sampled_from(HOSTILE_JSON_TEXTS),
        st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
    )
)
@example(document=json.dumps({"tasks": [{"key": "a", "type": "PROBE", "payload": BAD_KEY}]}))
def test_the_submit_command_prints_a_run_or_one_error_line(
    document: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``fredica submit FILE``: exit 0 and the run's id, or exit 1 and one ``fredica: error:``
    line — never an "unexpected" error (a traceback in the log), never a control character
    (a key quoted in the message printed its newline and its escape as they were, before)."""
    folder = tmp_path_factory.mktemp("submit")
    spec = folder / "spec.json"
    spec.write_text(document, encoding="utf-8", errors="surrogateescape")
    code, out, err = fredica(folder / "data", "submit", str(spec))
    if code == 0:
        assert len(out.split()) == 1 and err == ""
    else:
        assert code == 1 and out == ""
        assert err.startswith("fredica: error: ") and "unexpected" not in err, err
        assert err.endswith("\n") and not CONTROLS.search(err[:-1]), err
