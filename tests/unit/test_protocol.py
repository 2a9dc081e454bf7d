"""The wire protocol's models: every frame both ways, and a parser that never crashes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from python_endpoints.protocol import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    Cancel,
    Cancelled,
    Error,
    InitData,
    InitParamAndRun,
    Pause,
    PauseRequest,
    Progress,
    ProtocolError,
    Result,
    Resume,
    ResumeRequest,
    Segment,
    Status,
    StatusReply,
    dump,
    parse_client_frame,
    parse_server_frame,
)


@pytest.mark.parametrize(
    "frame",
    [
        InitParamAndRun(data=InitData(params={"seconds": 1}, task_id="t")),
        Cancel(),
        Pause(),
        Resume(),
        Status(),
    ],
)
def test_client_frames_round_trip(frame: object) -> None:
    assert parse_client_frame(dump(frame)) == frame  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "frame",
    [
        Progress(percent=12.5, status_text="x", pausable="now", extras={"speed": 2}),
        PauseRequest(reason="GPU out of memory"),
        ResumeRequest(),
        Segment(data={"start": 0.0, "end": 1.5, "text": "hi"}),
        StatusReply(state="paused", percent=40, paused=True),
        Result(result={"outputs": ["a.mp4"]}),
        Error(error="boom", error_type="SUBPROCESS_CRASHED"),
        Cancelled(),
    ],
)
def test_server_frames_round_trip(frame: object) -> None:
    assert parse_server_frame(dump(frame)) == frame  # type: ignore[arg-type]


def test_the_wire_shape_is_the_documented_one() -> None:
    init = json.loads(dump(InitParamAndRun(data=InitData(params={"a": 1}))))
    assert init == {
        "command": "init_param_and_run",
        "data": {
            "protocol_version": PROTOCOL_VERSION,
            "params": {"a": 1},
            "task_id": None,
            "check_skip": False,
        },
    }
    # A client that does not ask for a skip check need not say so.
    bare = parse_client_frame('{"command": "init_param_and_run", "data": {"params": {}}}')
    assert isinstance(bare, InitParamAndRun) and bare.data.check_skip is False
    assert parse_client_frame('{"command": "cancel"}') == Cancel()
    assert json.loads(dump(PauseRequest(reason="r"))) == {"type": "pause_request", "reason": "r"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        ('{"command": "explode"}', "unknown or malformed"),
        ('{"command": "init_param_and_run", "data": {"params": 3}}', "params"),
        ('{"command": "cancel", "extra": 1}', "extra"),
        ("[]", "unknown or malformed"),
        ('"x" ', "unknown or malformed"),
    ],
)
def test_bad_client_frames_are_protocol_errors(raw: str | bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        parse_client_frame(raw)


def test_oversized_frames_are_refused_before_parsing() -> None:
    with pytest.raises(ProtocolError, match="larger than"):
        parse_client_frame(" " * (MAX_FRAME_BYTES + 1))


def test_progress_is_bounded() -> None:
    with pytest.raises(ProtocolError):
        parse_server_frame('{"type": "progress", "percent": 101}')
    with pytest.raises(ProtocolError):
        parse_server_frame('{"type": "progress", "percent": 5, "pausable": "maybe"}')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_parsers_never_crash_on_arbitrary_bytes(raw: str | bytes) -> None:
    for parse in (parse_client_frame, parse_server_frame):
        try:
            parse(raw)
        except ProtocolError:
            pass


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["command", "type", "data", "percent", "reason", "result", "x"]),
        json_values,
        max_size=4,
    )
)
def test_parsers_never_crash_on_arbitrary_json(data: dict[str, object]) -> None:
    raw = json.dumps(data)
    for parse in (parse_client_frame, parse_server_frame):
        try:
            frame = parse(raw)
        except ProtocolError:
            continue
        assert parse(dump(frame)) == frame  # whatever parses, round-trips
