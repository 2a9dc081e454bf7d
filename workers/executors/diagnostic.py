"""NOOP and SLEEP: exercise and benchmark the queue without media."""

from __future__ import annotations

import time
from typing import Any

from workers.executor import BaseExecutor, ExecuteResult, ExecutionContext
from workers.executors.websocket import WebSocketExecutor
from workers.records import TaskRecord
from workers.tasktypes import NOOP, SLEEP, SLEEP_SUBPROCESS, SleepPayload, TaskPayload


class NoopExecutor(BaseExecutor):
    """Completes at once; its result echoes its payload."""

    task_type = NOOP
    resumable = True
    inline = True

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        return ExecuteResult(result=dict(task.payload))

    def execute_inline(self, task: TaskRecord, payload: TaskPayload) -> dict[str, Any] | None:
        return dict(task.payload)


class SleepExecutor(BaseExecutor):
    """Sleeps ``seconds``, reporting progress. Pausable and cancellable; it checkpoints the
    time slept so that a resumed or recovered attempt only sleeps what is left."""

    task_type = SLEEP
    resumable = True
    stall_timeout = 60.0
    tick = 0.1

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        assert isinstance(ctx.payload, SleepPayload)
        total = ctx.payload.seconds
        slept = float((ctx.checkpoint or {}).get("slept", 0.0))
        await ctx.report(_percent(slept, total), f"sleeping {total - slept:.1f} s", force=True)
        first = True
        while slept < total:
            await ctx.wait_if_paused()
            step = min(self.tick, total - slept)
            started = time.monotonic()
            await ctx.sleep(step)
            slept += time.monotonic() - started
            # The first checkpoint is written at once, the later ones at most twice a second:
            # an attempt cut off in its first half second has saved what it did (a crash of
            # the engine is charged to a task only when it saved no progress).
            await ctx.report(
                _percent(slept, total),
                f"{max(0.0, total - slept):.1f} s left",
                checkpoint={"slept": min(slept, total)},
                force=first,
            )
            first = False
        return ExecuteResult(result={"slept": total})


class SleepSubprocessExecutor(WebSocketExecutor):
    """SLEEP_SUBPROCESS: the diagnostic sleep, in a child process of the endpoints server."""

    task_type = SLEEP_SUBPROCESS
    endpoint = "sleep"
    stall_timeout = 60.0


def _percent(done: float, total: float) -> float:
    return 100.0 if total <= 0 else min(100.0, 100.0 * done / total)
