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
    Finishing,
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
from python_endpoints.text import clean_text


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
            "keep_open": False,
            "say_finishing": False,
        },
    }
    # A client that does not ask for a skip check, to keep the connection or to be told when
    # a job's heavy part is done need not say so (an older client does not).
    bare = parse_client_frame('{"command": "init_param_and_run", "data": {"params": {}}}')
    assert isinstance(bare, InitParamAndRun)
    assert (bare.data.check_skip, bare.data.keep_open, bare.data.say_finishing) == (False,) * 3
    assert json.loads(dump(Finishing())) == {"type": "finishing"}
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


# --- text a person reads: cleaned, never refused ---


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("plain, and ünïcode 字", "plain, and ünïcode 字"),
        ("caf\udce9.avi", "caf\ufffd.avi"),  # a Latin-1 byte of a file name
        ("\udcc3\udca9t\udce9", "\u00e9t\ufffd"),  # UTF-8 bytes escaped: read back as text
        ("half a pair: \ud800!", "half a pair: \ufffd!"),  # no byte makes this one
        ("\udce9\udfff\udcc3\udca9", "\ufffd\ufffd\u00e9"),
        ("a NUL\x00 in caf\udce9", "a NUL\ufffd in caf\ufffd"),  # PostgreSQL refuses NUL
    ],
)
def test_clean_text_replaces_what_cannot_be_encoded(text: str, clean: str) -> None:
    assert clean_text(text) == clean


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
@settings(max_examples=300, deadline=None)
def test_clean_text_always_gives_encodable_text_and_keeps_what_was(text: str) -> None:
    cleaned = clean_text(text)
    cleaned.encode("utf-8")  # never raises
    assert clean_text(cleaned) == cleaned
    assert "\x00" not in cleaned  # PostgreSQL's text refuses NUL
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return
    assert cleaned == text.replace("\x00", "\ufffd")  # nothing else to clean


def test_frames_with_unencodable_text_are_cleaned_not_refused() -> None:
    """A job's status line or error naming a file that is not UTF-8 (before, a progress frame
    holding one was refused as malformed, and an error frame let it through to the store)."""
    progress = parse_server_frame(
        '{"type": "progress", "percent": 5, "status_text": "reading caf\\udce9.avi"}'
    )
    assert isinstance(progress, Progress) and progress.status_text == "reading caf\ufffd.avi"
    error = parse_server_frame(
        '{"type": "error", "error": "no caf\\udce9", "error_type": "X\\ud800"}'
    )
    assert isinstance(error, Error) and (error.error, error.error_type) == (
        "no caf\ufffd",
        "X\ufffd",
    )
    pause = parse_server_frame('{"type": "pause_request", "reason": "full: \\udcff"}')
    assert isinstance(pause, PauseRequest) and pause.reason == "full: \ufffd"
    # A result is data, not a message: kept as it came (a path stays the path it is).
    result = parse_server_frame('{"type": "result", "result": {"output": "caf\\udce9.mp4"}}')
    assert isinstance(result, Result) and result.result == {"output": "caf\udce9.mp4"}
