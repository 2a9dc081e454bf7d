"""The task-endpoint wire protocol: one websocket per running task, JSON frames.

Pure: pydantic models and parse/serialize functions, no sockets. Both the server
(:mod:`python_endpoints.serving.server`) and the engine's websocket executors use these models; they
are the only coupling between the two sides.

Client → server ``{"command": …, "data": …}``: ``init_param_and_run`` (first; carries the
protocol version and the job's params), ``cancel``, ``pause``, ``resume``, ``status``.

Server → client ``{"type": …}``: ``progress``, ``pause_request``, ``resume_request``,
``segment``, ``status``, ``result``, ``error``, ``cancelled``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)
from pydantic_core import PydanticSerializationError

from python_endpoints import status
from python_endpoints.errorcodes import ErrorType
from python_endpoints.text import clean_text

PROTOCOL_VERSION = 1
#: The largest frame either side accepts, in bytes.
MAX_FRAME_BYTES = 1 << 20

#: How far a task can be paused right now: ``always`` and ``never`` are properties of the job,
#: ``now`` / ``not_now`` say whether a pause would be honoured at this moment.
Pausable = Literal["always", "never", "now", "not_now"]


class ProtocolError(ValueError):
    """A frame that is not valid JSON, not a known frame, or too large."""


def _clean_if_text(value: Any) -> Any:
    return clean_text(value) if isinstance(value, str) else value


#: Text a person reads (a status line, an error, a reason): cleaned, never refused.
Text = Annotated[str, BeforeValidator(_clean_if_text)]


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- client -> server -----------------------------------------------------------------------


class InitData(_Frame):
    protocol_version: int = PROTOCOL_VERSION
    params: dict[str, Any] = Field(default_factory=dict)
    task_id: str | None = None
    #: Complete at once with ``{"skipped": true, "outputs": [output]}``, without starting the
    #: job, when its output is already there (the endpoint's skip rule says what that means).
    check_skip: bool = False
    #: Keep the connection open after the job's final frame, for the client's next
    #: ``init_param_and_run`` (a batch of short jobs pays one handshake, not one a job). A
    #: command that comes between two jobs belongs to the one that ended: it is ignored.
    keep_open: bool = False
    #: Send ``finishing`` when the job's heavy part is done (its ffmpeg has exited), so that
    #: the client may start its next task meanwhile. A client that does not ask never gets it.
    say_finishing: bool = False


class InitParamAndRun(_Frame):
    command: Literal["init_param_and_run"] = "init_param_and_run"
    data: InitData = Field(default_factory=InitData)


class _NoData(_Frame):
    data: dict[str, Any] | None = None


class Cancel(_NoData):
    command: Literal["cancel"] = "cancel"


class Pause(_NoData):
    command: Literal["pause"] = "pause"


class Resume(_NoData):
    command: Literal["resume"] = "resume"


class Status(_NoData):
    command: Literal["status"] = "status"


ClientFrame = Annotated[
    InitParamAndRun | Cancel | Pause | Resume | Status, Field(discriminator="command")
]

# --- server -> client -----------------------------------------------------------------------


class StatusPart(_Frame):
    """One message of a status (see :mod:`python_endpoints.status`): its id and arguments."""

    id: str = Field(pattern=status.ID_PATTERN, max_length=64)
    args: dict[
        Annotated[str, Field(max_length=32)],
        Annotated[Text, Field(max_length=status.MAX_ARG_LENGTH)],
    ] = Field(default_factory=dict, max_length=8)


class Progress(_Frame):
    type: Literal["progress"] = "progress"
    percent: float = Field(ge=0, le=100)
    status_text: Text | None = Field(default=None, max_length=512)
    #: ``status_text`` as message ids and arguments, for a client to say in its own language;
    #: absent from jobs that say plain text.
    status: list[StatusPart] | None = Field(default=None, max_length=status.MAX_PARTS)
    pausable: Pausable | None = None
    extras: dict[str, Any] = Field(default_factory=dict)


class PauseRequest(_Frame):
    """The job asks to be paused (GPU out of memory, disk nearly full…)."""

    type: Literal["pause_request"] = "pause_request"
    reason: Text = Field(max_length=512)


class ResumeRequest(_Frame):
    """The job resumed by itself after asking for a pause."""

    type: Literal["resume_request"] = "resume_request"


class Paused(_Frame):
    """The job has stopped for the pause (it waits between two pieces of work, or its process
    is suspended: sent once it has stopped, after what it sent before). ``held``: it still
    holds its resources (a model kept in GPU memory, the memory of a process suspended in the
    middle of its work), so its slot must stay taken; otherwise the engine lends the slot to
    other work until it resumes."""

    type: Literal["paused"] = "paused"
    held: bool = False


class Finishing(_Frame):
    """The job's heavy part is done (its ffmpeg has exited): what is left is light — checking
    the output and committing it to disk — so the client may give the job's slot to its next
    task. Sent at most once a job, and only to a client that asked (``say_finishing``)."""

    type: Literal["finishing"] = "finishing"


class Segment(_Frame):
    """A piece of streamed output (a transcript segment…), for whoever shows it. What a next
    attempt resumes from travels in a progress frame's ``extras["checkpoint"]``."""

    type: Literal["segment"] = "segment"
    data: dict[str, Any]


class StatusReply(_Frame):
    type: Literal["status"] = "status"
    state: Literal["waiting", "running", "paused", "finished"]
    percent: float = 0.0
    paused: bool = False


class Result(_Frame):
    type: Literal["result"] = "result"
    result: dict[str, Any]


class Error(_Frame):
    type: Literal["error"] = "error"
    error: Text
    error_type: Text = ErrorType.EXECUTOR_ERROR


class Cancelled(_Frame):
    type: Literal["cancelled"] = "cancelled"


#: What a running job sends (through the server) before its end.
JobFrame = Progress | PauseRequest | ResumeRequest | Paused | Finishing | Segment

ServerFrame = Annotated[
    JobFrame | StatusReply | Result | Error | Cancelled,
    Field(discriminator="type"),
]

_client: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)
_server: TypeAdapter[ServerFrame] = TypeAdapter(ServerFrame)


def _load(raw: str | bytes) -> Any:
    if len(raw) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(raw)} bytes is larger than {MAX_FRAME_BYTES}")
    try:
        return json.loads(raw)
    except ValueError as exc:  # not JSON, not UTF-8, an integer of more digits than Python reads
        raise ProtocolError(f"frame is not valid JSON: {exc}") from None
    except RecursionError:
        raise ProtocolError("frame is not valid JSON: nested too deeply") from None


def _describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "frame"
    return f"{where}: {err['msg']}"


def parse_client_frame(raw: str | bytes) -> InitParamAndRun | Cancel | Pause | Resume | Status:
    data = _load(raw)
    try:
        return _client.validate_python(data)
    except ValidationError as exc:
        raise ProtocolError(f"unknown or malformed command frame ({_describe(exc)})") from None


def parse_server_frame(
    raw: str | bytes,
) -> JobFrame | StatusReply | Result | Error | Cancelled:
    data = _load(raw)
    try:
        return _server.validate_python(data)
    except ValidationError as exc:
        raise ProtocolError(f"unknown or malformed frame ({_describe(exc)})") from None


def dump(frame: _Frame) -> str:
    """The frame as JSON text. A string pydantic cannot write as UTF-8 — a path whose name is
    not UTF-8 holds lone surrogates — goes as a ``\\udc..`` escape instead, which the other
    side reads back as the same string: the path stays the path."""
    try:
        return frame.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(frame.model_dump(mode="python"), separators=(",", ":"))
