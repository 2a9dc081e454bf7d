"""Hostile websocket frames, both ways: what a client sends the endpoints server (commands) and
what a server sends the engine (a job's frames) — parsed by the pure protocol, then for real: a
server on 127.0.0.1:0 fed hostile frames and hostile params, and an engine fed hostile frames by
a server of the test's own.

Every frame is a valid frame or a :class:`ProtocolError` (never another exception), every valid
one is written as strict JSON and read back equal, and neither side stops for a bad frame: the
server answers it with an ``error`` frame and serves the next, the engine fails that task
``PROTOCOL_ERROR`` and runs the next.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from python_endpoints.errorcodes import ErrorType
from python_endpoints.protocol import (
    MAX_FRAME_BYTES,
    Cancel,
    Cancelled,
    Error,
    InitData,
    InitParamAndRun,
    Pause,
    Paused,
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
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.fuzz.hostile import (
    HOSTILE_JSON_TEXTS,
    any_char,
    fuzz,
    hostile_int,
    hostile_text,
    json_values,
    nested,
)
from tests.support.process_table import assert_no_job_process_left
from workers.db import create_sqlite_engine
from workers.engine import WorkerEngine
from workers.executors.diagnostic import SleepSubprocessExecutor
from workers.executors.websocket import EndpointsAddress
from workers.spec import parse_spec, prepare_run
from workers.states import TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry, builtin_registry

TOKEN = "fuzz-token-0123456789"
PARSERS = (parse_client_frame, parse_server_frame)

#: Every field name a frame has, so that arbitrary frames get past the first checks.
FIELDS = (
    "command data protocol_version params task_id check_skip type percent status_text "
    "pausable extras reason held state paused result error error_type"
).split()
TAGS = [
    "init_param_and_run",
    "cancel",
    "pause",
    "resume",
    "status",
    "progress",
    "pause_request",
    "resume_request",
    "paused",
    "segment",
    "result",
    "error",
    "cancelled",
]


@st.composite
def frame_shaped(draw: st.DrawFn) -> dict[str, Any]:
    """JSON objects with a frame's tag and a frame's fields, their values anything."""
    frame: dict[str, Any] = draw(
        st.dictionaries(st.sampled_from(FIELDS) | hostile_text, json_values(6), max_size=5)
    )
    tag = draw(st.sampled_from(TAGS) | hostile_text)
    frame[draw(st.sampled_from(["command", "type"]))] = tag
    if draw(st.booleans()):
        frame["data"] = draw(
            st.dictionaries(st.sampled_from(FIELDS) | hostile_text, json_values(6), max_size=4)
        )
    return frame


raw_frames = st.one_of(
    st.text(any_char, max_size=200),
    st.binary(max_size=200),
    st.sampled_from(HOSTILE_JSON_TEXTS),
    frame_shaped().map(json.dumps),
    frame_shaped().map(lambda f: json.dumps(f).encode("utf-8", "surrogatepass")),
)


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def strict_json(text: str) -> Any:
    """``text`` read as JSON proper: ``NaN`` and ``Infinity`` are not JSON."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@fuzz(400)
@given(raw_frames)
@example(nested(100_000))  # RecursionError, before
@example('{"command": "cancel", "data": {"x": ' + "1" * 5000 + "}}")  # ValueError, before
def test_any_frame_is_valid_or_a_protocol_error_and_valid_ones_round_trip(
    raw: str | bytes,
) -> None:
    """Both parsers take any text or bytes: a frame, or :class:`ProtocolError`. A frame is
    written as JSON that reads back as a frame written the same way again. (Nesting past the
    recursion limit raised ``RecursionError``, an integer of 5000 digits ``ValueError``.)"""
    for parse in PARSERS:
        try:
            frame = parse(raw)
        except ProtocolError as exc:
            assert str(exc)
            continue
        text = dump(frame)
        assert dump(parse(text)) == text


# --- every frame model, built valid, both ways --------------------------------------------------

#: Text a person reads in a frame: cleaned (lone surrogates become U+FFFD), at most 512.
short_text = hostile_text.map(lambda t: t[:512])
#: Data a frame carries (params, extras, a result): anything JSON holds. (Not NaN nor infinity:
#: Python's reader takes them, and a frame holds them when it came that way, but they are no
#: JSON — written null, or as they are beside a string that is not UTF-8.)
#: Its keys are UTF-8 text (see the test of keys that are not, below).
data = st.dictionaries(hostile_text.filter(is_utf8), json_values(8, finite=True), max_size=4)

client_frames = st.one_of(
    st.builds(
        InitParamAndRun,
        data=st.builds(
            InitData,
            protocol_version=hostile_int,
            params=data,
            task_id=st.none() | hostile_text,
            check_skip=st.booleans(),
        ),
    ),
    *(st.builds(cls, data=st.none() | data) for cls in (Cancel, Pause, Resume, Status)),
)

server_frames = st.one_of(
    st.builds(
        Progress,
        percent=st.floats(0, 100),
        status_text=st.none() | short_text,
        pausable=st.none() | st.sampled_from(["always", "never", "now", "not_now"]),
        extras=data,
    ),
    st.builds(PauseRequest, reason=short_text),
    st.just(ResumeRequest()),
    st.builds(Paused, held=st.booleans()),
    st.builds(Segment, data=data),
    st.builds(
        StatusReply,
        state=st.sampled_from(["waiting", "running", "paused", "finished"]),
        percent=st.floats(0, 100),
        paused=st.booleans(),
    ),
    st.builds(Result, result=data),
    st.builds(
        Error, error=hostile_text, error_type=st.sampled_from(list(ErrorType)) | hostile_text
    ),
    st.just(Cancelled()),
)


@fuzz(300)
@given(frame=client_frames)
def test_every_client_frame_round_trips(frame: Any) -> None:
    """A command, whatever its params hold (names that are not UTF-8, controls, huge
    integers), is written as strict JSON and read back by the server equal."""
    text = dump(frame)
    strict_json(text)
    assert parse_client_frame(text) == frame


@fuzz(300)
@given(frame=server_frames)
def test_every_server_frame_round_trips(frame: Any) -> None:
    """A job's frame, whatever its text and data hold, is written as strict JSON and read
    back by the engine equal; its text a person reads is UTF-8 text (cleaned)."""
    text = dump(frame)
    strict_json(text)
    assert parse_server_frame(text) == frame
    for field in ("status_text", "reason", "error", "error_type"):
        value = getattr(frame, field, None)
        if isinstance(value, str):
            value.encode("utf-8")  # never a lone surrogate


def test_a_key_that_is_not_utf8_arrives_readable_and_the_frame_whole() -> None:
    """A data key holding a lone surrogate: the frame stays valid and its values are kept.
    The key arrives with replacement characters (pydantic writes keys so, and raises only for
    values) — or as it was when a value beside it is not UTF-8 either (then the whole frame
    goes the lossless way). Keys are names; what must keep its bytes, a path, is a value."""
    frame = parse_server_frame(dump(Result(result={"caf\udce9": 1})))
    assert isinstance(frame, Result)
    [(key, value)] = frame.result.items()
    assert is_utf8(key) and key.startswith("caf") and value == 1
    frame = parse_server_frame(dump(Result(result={"caf\udce9": "caf\udce9.mkv"})))
    assert isinstance(frame, Result) and frame.result == {"caf\udce9": "caf\udce9.mkv"}


# --- a real server, fed hostile frames ----------------------------------------------------------


def wire(raw: str | bytes) -> str | bytes:
    """``raw`` as a websocket carries it: text that is not UTF-8 (lone surrogates) cannot go
    in a text frame, so its bytes go in a binary one."""
    if isinstance(raw, str):
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            return raw.encode("utf-8", "surrogatepass")
    return raw


def refused_by_the_server(raw: str | bytes) -> bool:
    """Whether the server must answer ``raw`` with a ``PROTOCOL_ERROR`` (it is no command),
    and a websocket can carry it whole (not over the frame limit)."""
    if len(raw) > MAX_FRAME_BYTES // 2:
        return False
    try:
        parse_client_frame(raw)
    except ProtocolError:
        return True
    return False


@fuzz(2)
@given(frames=st.lists(raw_frames.filter(refused_by_the_server), min_size=60, max_size=60))
def test_a_real_server_answers_each_bad_frame_and_then_serves_the_job(
    frames: list[str | bytes],
) -> None:
    """One authenticated connection to a real server: each hostile frame gets one ``error``
    frame (``PROTOCOL_ERROR``), the connection stays open, and a job started on it after
    them completes. (A frame nested past the recursion limit, or holding an integer of 5000
    digits, broke the connection with 1011 before.)"""
    asyncio.run(_feed_the_server([*frames, nested(100_000), '{"command": ' + "1" * 5000 + "}"]))


async def _feed_the_server(frames: Sequence[str | bytes]) -> None:
    server = EndpointServer(ENDPOINTS, TOKEN)
    port = await server.start()
    try:
        async with asyncio.timeout(60):
            async with connect(
                f"ws://127.0.0.1:{port}/tasks/sleep",
                additional_headers={"Authorization": f"Bearer {TOKEN}"},
                max_size=MAX_FRAME_BYTES,
            ) as ws:
                for raw in frames:
                    await ws.send(wire(raw))
                    answer = json.loads(await ws.recv())
                    assert answer["type"] == "error", (raw, answer)
                    assert answer["error_type"] == ErrorType.PROTOCOL_ERROR
                    assert "Traceback" not in answer["error"]
                await ws.send(dump(InitParamAndRun(data=InitData(params={"seconds": 0.05}))))
                while (frame := json.loads(await ws.recv()))["type"] == "progress":
                    pass
                assert frame == {"type": "result", "result": {"slept": 0.05}}
    finally:
        await server.close()
    await assert_no_job_process_left()


#: Endpoints whose jobs, given params that name no file there is, end at once (none that
#: would reach the network with a default address).
QUICK_ENDPOINTS = (
    "probe",
    "transcode_mp4",
    "extract_audio",
    "extract_subtitles",
    "thumbnail",
    "export_subtitles",
)
PARAM_KEYS = sorted(
    {name for e in QUICK_ENDPOINTS for name in ENDPOINTS[e].params_model.model_fields}  # type: ignore[attr-defined]
)


@st.composite
def hostile_params(draw: st.DrawFn, root: str) -> dict[str, Any]:
    """Params with every key an endpoint takes, paths under ``root`` that do not exist or
    hold what no path does, the other values hostile."""
    path = st.sampled_from(["missing.mkv", "out.mp4", "out.jpg", "a\x00b", "caf\udce9", ""]).map(
        lambda name: f"{root}/{name}"
    )
    return draw(
        st.dictionaries(
            st.sampled_from(PARAM_KEYS) | hostile_text,
            path | json_values(4) | st.just("https://127.0.0.1:9/"),
            max_size=6,
        )
    )


@fuzz(1)
@given(data=st.data())
def test_hostile_params_end_every_job_with_one_final_frame(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Init frames with hostile params, on a real server that may write only under its
    folder (as the app starts it): each job ends with one final frame well within its bound
    — ``PAYLOAD_ERROR`` when the params are wrong — and the server goes on. (A NUL in an
    ``output`` or ``ffmpeg`` param killed the job's task before: no final frame, a
    connection waiting for ever.)"""
    root = tmp_path_factory.mktemp("root")
    jobs = [
        (name, data.draw(hostile_params(str(root)), label=name))
        for name in QUICK_ENDPOINTS
        for _ in range(5)
    ]
    jobs += [
        ("transcode_mp4", {"input": f"{root}/x.mkv", "output": f"{root}/a\x00.mp4"}),
        ("probe", {"input": f"{root}/x.mkv", "ffmpeg": "/a\x00"}),
        ("download", {"url": "http://127.0.0.1:9/x", "output": f"{root}/\x00"}),
    ]
    asyncio.run(_run_jobs(root, jobs))


async def _run_jobs(root: Path, jobs: list[tuple[str, dict[str, Any]]]) -> None:
    server = EndpointServer(ENDPOINTS, TOKEN, write_roots=[root])
    port = await server.start()
    try:
        for name, params in jobs:
            started = time.monotonic()
            async with (
                asyncio.timeout(30),
                connect(
                    f"ws://127.0.0.1:{port}/tasks/{name}",
                    additional_headers={"Authorization": f"Bearer {TOKEN}"},
                ) as ws,
            ):
                await ws.send(dump(InitParamAndRun(data=InitData(params=params))))
                while (frame := parse_server_frame(await ws.recv())).type not in (
                    "result",
                    "error",
                    "cancelled",
                ):
                    pass
            assert time.monotonic() - started < 20, (name, params)
            if isinstance(frame, Error):
                assert frame.error_type != ErrorType.EXECUTOR_ERROR, (name, params, frame)
                assert "Traceback" not in frame.error
                if "\x00" in json.dumps(params):
                    assert frame.error_type == ErrorType.PAYLOAD_ERROR, (name, params, frame)
    finally:
        await server.close()
    await assert_no_job_process_left()


# --- the engine, fed hostile frames by a server of the test's own -------------------------------


async def submit_sleeps(store: TaskStore, registry: TaskTypeRegistry, count: int) -> list[str]:
    spec = {
        "tasks": [
            {"key": f"s{n}", "type": "SLEEP_SUBPROCESS", "payload": {"seconds": 1}}
            for n in range(count)
        ]
    }
    created = await store.create_run(prepare_run(parse_spec(spec), registry))
    return [created.task_ids[f"s{n}"] for n in range(count)]


@fuzz(1)
@given(
    frames=st.lists(
        raw_frames.filter(lambda raw: len(raw) < MAX_FRAME_BYTES // 2),
        min_size=24,
        max_size=24,
    )
)
def test_the_engine_fails_a_task_whose_server_sends_a_bad_frame_and_goes_on(
    frames: list[str | bytes], migrated_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A server answering each task's start with a hostile frame (then a valid end): a frame
    the engine cannot read fails that task ``PROTOCOL_ERROR``, saying what the endpoint sent;
    one it can read is acted on (an ``error`` frame fails the task with its message); every
    task ends, and the engine stops when the work is done."""
    db_path = tmp_path_factory.mktemp("engine") / "fredica.db"
    shutil.copyfile(migrated_template, db_path)
    asyncio.run(_feed_the_engine(frames, db_path, builtin_registry()))


async def _feed_the_engine(
    frames: list[str | bytes], db_path: Path, registry: TaskTypeRegistry
) -> None:
    pending = list(frames)
    sent: dict[str, str | bytes] = {}

    async def hostile(ws: ServerConnection) -> None:
        init = parse_client_frame(await ws.recv())
        assert isinstance(init, InitParamAndRun) and init.data.task_id is not None
        raw = sent[init.data.task_id] = wire(pending.pop())
        await ws.send(raw)
        await ws.send(dump(Result(result={"after": "a bad frame"})))
        await ws.wait_closed()

    store = TaskStore(create_sqlite_engine(db_path))
    try:
        task_ids = await submit_sleeps(store, registry, len(frames))
        async with serve(hostile, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]

            async def address() -> EndpointsAddress:
                return EndpointsAddress("127.0.0.1", port, TOKEN)

            engine = WorkerEngine(store, [SleepSubprocessExecutor(address)], max_workers=4)
            await asyncio.wait_for(engine.run(until_idle=True), 60)
        for task_id in task_ids:
            task = await store.get_task(task_id)
            raw = sent[task_id]
            try:
                frame = parse_server_frame(raw)
            except ProtocolError:
                assert task.status is TaskStatus.FAILED, (raw, task)
                assert task.error_type == ErrorType.PROTOCOL_ERROR
                assert task.error is not None and task.error.startswith("the endpoint sent ")
                continue
            assert task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)
            if isinstance(frame, Error):
                assert task.status is TaskStatus.FAILED and task.error == frame.error
    finally:
        await store.close()
