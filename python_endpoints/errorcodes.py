"""Every error type a task can fail with: one enum for the jobs, the server and the engine.

An error type is what a failed attempt is classified as. The jobs raise it, the server sends it
in an ``error`` frame, the engine stores it in ``task.error_type`` and decides from it whether
the attempt is retried (``workers.states.NON_RETRYABLE`` holds the types never retried). Its
value is the wire and database spelling, so a value never changes once released; a member is a
``str`` and goes wherever a plain string went.

Standard library only: a job's child process imports this module, and must start fast.

Each member says what it means and whether a failure of that type is retried. "Retried" means
up to the task's ``max_retries``, with backoff; "never retried" means whatever ``max_retries``
says, because another attempt would fail the same way.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorType(StrEnum):
    """How a failed attempt is classified (the ``error_type`` of a task and of an ``error``)."""

    #: The user cancelled the task (a cancelled task, not a failed one). Never retried.
    CANCELLED = "CANCELLED"
    #: A credential the job needs is not set (an API key's variable is empty). Never retried.
    AWAITING_CREDENTIAL = "AWAITING_CREDENTIAL"
    #: The request is invalid: params, a payload version, a refused path or binary. Never retried.
    PAYLOAD_ERROR = "PAYLOAD_ERROR"
    #: Cancelled because a task it depends on failed for good. Never retried.
    DEPENDENCY_FAILED = "DEPENDENCY_FAILED"
    #: No executor handles the task's type in this build. Never retried.
    NO_EXECUTOR = "NO_EXECUTOR"
    #: Fredica crashed too often while the task ran; recovery fails it itself. Not retried.
    INTERRUPTED = "INTERRUPTED"
    #: Recovery found the task's workflow run gone. Never retried.
    ORPHANED = "ORPHANED"
    #: The attempt reported nothing for longer than its stall timeout. Retried.
    STALLED = "STALLED"
    #: The job's own exception; a tool it needs cannot start. Retried (not a refused handshake).
    EXECUTOR_ERROR = "EXECUTOR_ERROR"
    #: The job's process, or a process it ran, died: exit code, signal, no result. Retried.
    SUBPROCESS_CRASHED = "SUBPROCESS_CRASHED"
    #: The engine cannot reach the endpoints server, or lost the connection to it. Retried.
    CONNECTION_LOST = "CONNECTION_LOST"
    #: The task's endpoints server stopped, not the job: it is queued again. Not retried.
    SERVER_STOPPED = "SERVER_STOPPED"
    #: A malformed or unexpected frame (the server answers it and goes on). Retried.
    PROTOCOL_ERROR = "PROTOCOL_ERROR"
    #: A network read failed: refused, reset, timed out, a 5xx or a 429. Retried.
    NETWORK_ERROR = "NETWORK_ERROR"
    #: Reading or writing a file failed (I/O error, permission, vanished folder). Retried.
    IO_ERROR = "IO_ERROR"
    #: The input holds nothing the job can use as asked (codec, no video, a page). Never retried.
    UNSUPPORTED_MEDIA = "UNSUPPORTED_MEDIA"
    #: The disk is full, or would keep less free space than the job needs. Never retried.
    NO_SPACE = "NO_SPACE"
    #: An input file is not there (moved, renamed, deleted). Never retried.
    INPUT_MISSING = "INPUT_MISSING"
    #: The input is not a media file FFmpeg can read, or holds no stream. Never retried.
    NOT_MEDIA = "NOT_MEDIA"
    #: The input has no audio stream with sound in it. Never retried.
    NO_AUDIO = "NO_AUDIO"
    #: An output (a download, a transcript) failed its check after it was written. Retried.
    VERIFY_FAILED = "VERIFY_FAILED"
    #: The input holds damaged data (ffmpeg says so, or no subtitle cue reads). Never retried.
    INPUT_DAMAGED = "INPUT_DAMAGED"
    #: ffmpeg failed on the input, or lost part of it, for no cause known. Never retried.
    FFMPEG_FAILED = "FFMPEG_FAILED"
    #: A server refused for good: a 4xx, a bad redirect, a site's refusal. Never retried.
    HTTP_ERROR = "HTTP_ERROR"
    #: The speech model asked for is not installed. Never retried.
    MODEL_MISSING = "MODEL_MISSING"
    #: A transcript file cannot be read as one (bad segments or words). Never retried.
    BAD_TRANSCRIPT = "BAD_TRANSCRIPT"
    #: The language model's server cannot be reached. Retried.
    LLM_UNREACHABLE = "LLM_UNREACHABLE"
    #: The language model refused the request or answered something unreadable. Retried.
    LLM_ERROR = "LLM_ERROR"
    #: The speech model is installed but cannot be loaded. Never retried.
    MODEL_LOAD_FAILED = "MODEL_LOAD_FAILED"
    #: The job, or a tool it ran, ran out of memory. Retried.
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    #: What the executor returned cannot be recorded (not JSON, a bad fan-out). Never retried.
    BAD_RESULT = "BAD_RESULT"
