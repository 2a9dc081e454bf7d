"""A queue's records in words, for a person, as both clients show them: a task's state as it is
now (or how it ended), the note its job left, the files it made; durations and clock times;
any text made safe for one line. Pure: records in, strings out. The CLI's tables are built on
these (:mod:`fredica_app.cli.display`), the window's tooltips and details too.

A finished task shows how it ended — done (in how long), skipped, failed with its error,
cancelled with why — never its last status line ("transcribing 4:16 of 5:00"); "held" is said
of unfinished tasks only.
"""

from __future__ import annotations

import re
import time

from python_endpoints.text import clean_text
from workers.records import TaskRecord
from workers.states import TaskStatus

#: What a line of a terminal must not hold as it is: C0 and C1 controls (a newline in a file
#: name would start a line of its own; an escape would drive the terminal).
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown(text: str) -> str:
    """``text`` for one line of a terminal: bytes that are not UTF-8 (a file name's) as U+FFFD,
    control characters escaped (a newline as ``\\n``, others as ``\\xNN``)."""
    return _CONTROLS.sub(
        lambda c: _NAMED.get(c.group(), f"\\x{ord(c.group()):02x}"), clean_text(text)
    )


def duration(seconds: float) -> str:
    """``4.2 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0.0, seconds)
    if round(seconds, 1) < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def clock(at: float | None, now: float) -> str:
    """A local time: ``14:03:27`` today, ``2025-03-01 14:03`` another day; ``-`` for none."""
    if at is None:
        return "-"
    then, today = time.localtime(at), time.localtime(now)
    if then[:3] == today[:3]:
        return time.strftime("%H:%M:%S", then)
    return time.strftime("%Y-%m-%d %H:%M", then)


def task_state(task: TaskRecord, waiting: str | None = None) -> str:
    """What a task is doing, or how it ended. ``waiting``: why a ready task waits (derived
    from the free slots, see ``Fredica.waiting_reasons``)."""
    status = task.status
    if status is TaskStatus.COMPLETED:
        result = task.result or {}
        if result.get("skipped"):
            # A reason: the task could not apply to the material ("no audio"); none: what it
            # would have made was already there.
            return f"skipped: {result.get('reason') or 'its output is already up to date'}"
        if task.started_at is not None and task.completed_at is not None:
            return f"done in {duration(task.completed_at - task.started_at)}"
        return "done"
    if status is TaskStatus.FAILED:
        return f"failed: [{task.error_type}] {task.error}"
    if status is TaskStatus.CANCELLED:
        return f"cancelled: {task.error}" if task.error else "cancelled"
    state = status.value + (" (held)" if task.is_paused else "")
    text = task.status_text or waiting
    if text and not (task.is_paused and text == "paused"):
        state += f": {text}"
    if task.error:  # waiting for a retry: what went wrong last time
        state += f" (after [{task.error_type}] {task.error})"
    return state


def task_note(task: TaskRecord) -> str | None:
    """What a finished job left to be read (its result's ``note``): an input shorter than its
    header said, a contact sheet of fewer frames… None when it left none."""
    note = (task.result or {}).get("note") if task.status is TaskStatus.COMPLETED else None
    return note.strip() or None if isinstance(note, str) else None


def task_outputs(task: TaskRecord) -> list[str]:
    """The files its result names (a skipped task's too: they are what it would have made)."""
    outputs = (task.result or {}).get("outputs")
    return [str(p) for p in outputs] if isinstance(outputs, list) else []
