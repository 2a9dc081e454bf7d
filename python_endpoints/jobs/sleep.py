"""``/tasks/sleep``: a diagnostic job in a child process that can take every path a real job can
— progress, a pause it asks for itself (and a resume it does itself), a crash by exit code or
by signal, an exit without a result, the word that its heavy part is done, a flood on
standard output as a talkative library's — so that each is tested for real, and ``fredica
doctor`` can check the whole chain.

This module runs in the child: standard library only. Its params were validated by the server
(:class:`python_endpoints.params.SleepParams`)."""

from __future__ import annotations

import os
import signal
import sys
import time
from types import SimpleNamespace
from typing import Any

from python_endpoints.serving.child import ChildContext
from python_endpoints.status import said

TICK = 0.05
REPORT_EVERY = 0.1

#: The last job asked that its child take no other (``not_reusable``).
_not_reusable = False


def reusable() -> bool:
    return not _not_reusable


def sleep_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    defaults = {
        "pause_after": None,
        "resume_after": None,
        "crash_after": None,
        "exit_code": 3,
        "signal": None,
        "exit_silently": False,
        "not_reusable": False,
        "finishing_after": None,
        "chatter": 0,
    }
    p = SimpleNamespace(**{**defaults, **params})
    slept = 0.0
    asked = False
    last_report = 0.0
    ctx.progress(0.0, said("sleeping", seconds=f"{p.seconds:.1f}"))
    if p.chatter:
        line = "chatter " + "x" * 91 + "\n"  # 100 bytes
        sys.stdout.write(line * (p.chatter // len(line)) + line[: p.chatter % len(line)])
        sys.stdout.flush()
    while slept < p.seconds and not ctx.cancelled:
        if not ctx.wait_if_paused(TICK):
            continue  # paused: no sleep counted
        step = min(TICK, p.seconds - slept)
        time.sleep(step)
        slept += step
        if p.crash_after is not None and slept >= p.crash_after:
            if p.signal is not None:
                os.kill(os.getpid(), signal.Signals[p.signal])
            os._exit(p.exit_code)
        if time.monotonic() - last_report >= REPORT_EVERY:
            last_report = time.monotonic()
            ctx.progress(
                100.0 * slept / p.seconds if p.seconds else 100.0,
                said("seconds_left", seconds=f"{p.seconds - slept:.1f}"),
            )
        if p.finishing_after is not None and slept >= p.finishing_after:
            ctx.finishing()  # said once, however often it is called
        if p.pause_after is not None and not asked and slept >= p.pause_after:
            asked = True
            ctx.request_pause("requested", p.resume_after)
    if ctx.cancelled:
        return None
    ctx.progress(100.0, said("done"))
    if p.exit_silently:
        return None
    global _not_reusable
    _not_reusable = p.not_reusable
    return {"slept": p.seconds}
