"""What the CLI shows a person: tables whose columns fit their content, a task's state as it is
now, durations and clock times. Pure: records in, lines out (the CLI and ``process`` print them).

A finished task shows how it ended — done (in how long), skipped, failed with its error,
cancelled with why — never its last status line ("transcribing 4:16 of 5:00"); "held" is said
of unfinished tasks only.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence

from rich.cells import cell_len

from python_endpoints.text import clean_text
from workers.records import RestartLogEntry, RunProgress, RunRecord, TaskRecord
from workers.states import RunStatus, TaskStatus

_FINISHED_RUN = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)
#: A title longer than this is cut in a table (the whole one is in ``materials``).
TITLE_WIDTH = 40


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


def table(
    header: Sequence[str], rows: Iterable[Sequence[str]], *, right: Iterable[int] = ()
) -> list[str]:
    """Lines of a table: a header, then the rows, each column as wide as its widest cell
    (wide characters count double), two spaces apart; ``right``: columns aligned right."""
    body = [[shown(c) for c in r] for r in rows]
    widths = [max(cell_len(c) for c in column) for column in zip(header, *body, strict=True)]
    flush_right = set(right)
    lines = []
    for row in [list(header), *body]:
        cells = []
        for i, (cell, width) in enumerate(zip(row, widths, strict=True)):
            pad = " " * (width - cell_len(cell))
            cells.append(pad + cell if i in flush_right else cell + pad)
        lines.append("  ".join(cells).rstrip())
    return lines


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


def shorten(text: str, width: int = TITLE_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# --- tasks ----------------------------------------------------------------------------------


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


def task_progress(task: TaskRecord) -> str:
    """Its percentage while it can still move or once done; nothing for a failed or cancelled
    task (the figure it stopped at says nothing of the outcome)."""
    if task.status in (TaskStatus.FAILED, TaskStatus.CANCELLED):
        return "-"
    return f"{100.0 if task.status is TaskStatus.COMPLETED else task.progress:.1f} %"


def task_note(task: TaskRecord) -> str | None:
    """What a finished job left to be read (its result's ``note``): an input shorter than its
    header said, a contact sheet of fewer frames… None when it left none."""
    note = (task.result or {}).get("note") if task.status is TaskStatus.COMPLETED else None
    return note.strip() or None if isinstance(note, str) else None


def note_lines(tasks: Iterable[TaskRecord]) -> list[str]:
    """``warning: KEY: NOTE``, one line per task that finished with a note."""
    return [
        f"warning: {shown(t.key or t.id[:8])}: {shown(note)}"
        for t in tasks
        if (note := task_note(t)) is not None
    ]


def task_outputs(task: TaskRecord) -> list[str]:
    """The files its result names (a skipped task's too: they are what it would have made)."""
    outputs = (task.result or {}).get("outputs")
    return [str(p) for p in outputs] if isinstance(outputs, list) else []


def run_lines(
    run: RunRecord,
    tasks: Sequence[TaskRecord],
    waiting: Mapping[str, str] | None = None,
    *,
    title: str | None = None,
) -> list[str]:
    """A run and its tasks: a line for the run, a table of the tasks, each task's outputs
    under it."""
    took = ""
    started = [t.started_at for t in tasks if t.started_at is not None]
    if started and run.status in _FINISHED_RUN:
        elapsed = run_elapsed(run, RunProgress(min(started)), time.time())
        took = "" if elapsed is None else f" in {duration(elapsed)}"
    what = (run.template or "spec") + (f" · {shown(title)}" if title else "")
    lines = [
        f"run {run.id}  {what}  {run.status.value}{took}  {run.done_tasks}/{run.total_tasks} done"
    ]
    rows = [
        [t.key or t.id, t.type, task_progress(t), task_state(t, (waiting or {}).get(t.id))]
        for t in tasks
    ]
    rendered = table(["TASK", "TYPE", "PROGRESS", "STATE"], rows, right={2})
    lines.append("  " + rendered[0])
    for task, line in zip(tasks, rendered[1:], strict=True):
        lines.append("  " + line)
        lines += [f"      → {path}" for path in task_outputs(task)]
        if (note := task_note(task)) is not None:
            lines.append(f"      warning: {shown(note)}")
    return lines


def task_columns(tasks: Iterable[TaskRecord]) -> tuple[int, int]:
    """The widths of the key and type columns of a live display of these tasks."""
    keys, types = [0], [0]
    for t in tasks:
        keys.append(cell_len(t.key or t.id[:8]))
        types.append(cell_len(t.type))
    return max(keys), max(types)


def task_label(task: TaskRecord, widths: tuple[int, int]) -> str:
    key = task.key or task.id[:8]
    return f"{key}{' ' * (widths[0] - cell_len(key))}  {task.type:<{widths[1]}}"


# --- runs -----------------------------------------------------------------------------------


def run_elapsed(run: RunRecord, progress: RunProgress | None, now: float) -> float | None:
    """Seconds from its first task's start to its end, or to now while it is active; None
    when no task of it has started."""
    started = progress.started_at if progress else None
    if started is None:
        return None
    if run.status in _FINISHED_RUN and run.completed_at is not None:
        return run.completed_at - started
    return now - started


def run_eta(
    run: RunRecord, progress: RunProgress | None, now: float, *, queue_paused: bool
) -> float | None:
    """Seconds left at the pace so far, when the progress allows a guess: it started, moves
    (not held, the queue not paused) and is between 1 % and 100 %."""
    if run.status in _FINISHED_RUN or progress is None or queue_paused or progress.held:
        return None
    elapsed, fraction = run_elapsed(run, progress, now), progress.fraction
    if elapsed is None or fraction is None or not 0.01 <= fraction < 1.0 or elapsed < 1.0:
        return None
    return elapsed * (1.0 - fraction) / fraction


def runs_lines(
    runs: Sequence[RunRecord],
    progress: Mapping[str, RunProgress],
    titles: Mapping[str, str],
    now: float,
    *,
    queue_paused: bool = False,
) -> list[str]:
    """``fredica runs``: whether the queue is paused, then a table of the runs."""
    lines = []
    if queue_paused:
        lines.append(
            "the queue is paused: no new task starts until `fredica resume-queue` "
            "(running tasks go on)"
        )
    if not runs:
        return [*lines, "no runs yet"]
    rows = []
    for r in runs:
        p = progress.get(r.id)
        status = r.status.value
        if p is not None and p.held and r.status not in _FINISHED_RUN:
            status += " (held)"
        if p is not None and p.notes:
            status += " (warning)" if p.notes == 1 else f" ({p.notes} warnings)"
        tasks = f"{r.done_tasks}/{r.total_tasks}"
        if r.failed_tasks:
            tasks += f", {r.failed_tasks} failed"
        if r.cancelled_tasks:
            tasks += f", {r.cancelled_tasks} cancelled"
        fraction = p.fraction if p is not None else None
        elapsed = run_elapsed(r, p, now)
        eta = run_eta(r, p, now, queue_paused=queue_paused)
        rows.append(
            [
                r.id,
                status,
                tasks,
                "-" if fraction is None else f"{fraction * 100:.0f} %",
                r.template or "-",
                shorten(titles.get(r.material_id or "", "-")),
                clock(p.started_at if p else None, now),
                "-" if elapsed is None else duration(elapsed),
                "-" if eta is None else f"~{duration(eta)}",
            ]
        )
    header = ["RUN", "STATUS", "TASKS", "PROGRESS", "TEMPLATE", "MATERIAL", "STARTED", "ELAPSED"]
    return lines + table([*header, "ETA"], rows, right={3, 7, 8})


def finished_run_line(run: RunRecord, progress: RunProgress | None, title: str | None) -> str:
    """``worker``: one line when a run it ran has ended."""
    elapsed = run_elapsed(run, progress, run.completed_at or run.created_at)
    what = (run.template or "spec") + (f" · {shown(title)}" if title else "")
    took = "" if elapsed is None else f"  in {duration(elapsed)}"
    return (
        f"{run.status.value:<9}  {what}  {run.done_tasks}/{run.total_tasks} tasks{took}  "
        f"(run {run.id})"
    )


def worker_summary(
    runs: Mapping[str, int], tasks_completed: int, tasks_failed: int, elapsed: float
) -> str:
    """``worker``: what it did, at the end. ``runs``: finished runs by status."""
    finished = sum(runs.values())
    parts = [f"{runs.get(s.value, 0)} {s.value}" for s in _FINISHED_RUN if runs.get(s.value)]
    run_text = f"{finished} run(s) finished" + (f" ({', '.join(parts)})" if parts else "")
    task_text = f"{tasks_completed} task(s) completed" + (
        f", {tasks_failed} failed" if tasks_failed else ""
    )
    return f"{run_text}; {task_text}; in {duration(elapsed)}"


# --- the restart log ------------------------------------------------------------------------


def restart_log_lines(entries: Sequence[RestartLogEntry]) -> list[str]:
    if not entries:
        return ["nothing was recovered"]
    rows = [
        [
            f"#{e.id}",
            e.action,
            e.disposition,
            e.task_type,
            e.status_at_restart,
            f"{e.progress:.1f} %",
            e.task_id,
            e.detail or "",
        ]
        for e in entries
    ]
    header = ["ENTRY", "ACTION", "DISPOSITION", "TYPE", "WAS", "PROGRESS", "TASK", "DETAIL"]
    return table(header, rows, right={5})
