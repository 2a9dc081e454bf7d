"""Named crash points, for fault-injection tests of what survives a crash.

Set ``FREDICA_CRASH_AT=<point>`` (or ``<point>:<n>`` for the n-th time it is reached) and the
process kills itself with SIGKILL there — no cleanup, no flush, exactly like a power cut or
``kill -9`` at that instant. Unset (always, outside tests) it costs one dictionary lookup.

Points: ``after_claim`` (a claim is committed; its executors have not started),
``before_commit`` (attempts have finished; their results are not committed yet),
``after_commit`` (results committed; nothing else done).
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "FREDICA_CRASH_AT"

_spec = os.environ.get(CRASH_ENV, "")
_point, _, _nth = _spec.partition(":")
_remaining = int(_nth) if _nth.isdigit() else 1


def crash_point(name: str) -> None:
    global _remaining
    if _point and name == _point:
        _remaining -= 1
        if _remaining <= 0:
            os.kill(os.getpid(), signal.SIGKILL)
