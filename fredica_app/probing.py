"""PROBE in the engine's own process: PyAV reads the file's header in a thread.

A probe opens a file and reads its container and stream headers (no decoding): a millisecond
or two of work, against the round trip a job in the endpoints server's child costs (a
connection, a child's turn, their messages). So the templates that keep a PROBE task (the
subtitles, the full pipeline: they need the file's streams before they plan) run it here.
The same function as the PROBE endpoint's (:func:`python_endpoints.jobs.avread.probe`), the
same result and the same errors (``INPUT_MISSING``, ``NOT_MEDIA``, ``IO_ERROR``).

It runs in the engine's process (``in_process``): were FFmpeg's demuxer to crash on a hostile
file, it would take the app down with it, and start-up recovery charges such an
interruption to the probe that was running, failing it ``INTERRUPTED`` past the limit
(docs/reliability.md) — the file cannot stop the queue for good. A probe cannot be paused (it
is too short to) and a cancel ends the attempt at once; the thread's read, already started,
ends by itself.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from python_endpoints.params import ProbeParams
from workers.executor import BaseExecutor, ExecuteResult, ExecutionContext
from workers.executors.websocket import skipped_upstream
from workers.records import TaskRecord
from workers.tasktypes import TaskType


class ProbeExecutor(BaseExecutor):
    """Runs PROBE tasks with PyAV, in a thread of the engine's process."""

    in_process = True
    #: An attempt cut short by the app's end runs again at the next start (a probe writes
    #: nothing: running it again is safe).
    resumable = True

    def __init__(self, task_type: TaskType, stall_timeout: float = 60.0) -> None:
        self.task_type = task_type
        self.stall_timeout = stall_timeout

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        reason = skipped_upstream(ctx.upstream)
        if reason is not None:
            return ExecuteResult(result={"skipped": True, "reason": reason, "outputs": []})
        # The engine has parsed the payload with PROBE's model, which extends ProbeParams:
        # an invalid one never reaches here (PAYLOAD_ERROR).
        payload = cast(ProbeParams, ctx.payload)
        return await asyncio.to_thread(_probe, payload.input)


def _probe(path: str) -> ExecuteResult:
    # Imported on first use: the command's start does not pay for the media modules.
    from python_endpoints.jobs.avread import probe
    from python_endpoints.serving.child import JobFailed

    try:
        info = probe(path)
    except JobFailed as exc:
        return ExecuteResult(error=str(exc), error_type=exc.error_type)
    result: dict[str, Any] = {"outputs": [], **info.as_dict()}
    return ExecuteResult(result=result)
