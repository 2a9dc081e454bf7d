"""What the CLI shows a person: tables whose columns fit their content (wide characters count
double), runs and their tasks, the worker's lines, the restart log. Pure: records in, lines out
(the commands print them). A task's state and the rest of what both clients say of a record
come from :mod:`fredica_app.views.records`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from rich.cells import cell_len

from fredica_app.views.records import clock, duration, shown, task_note, task_outputs, task_state
from workers.records import RestartLogEntry, RunProgress, RunRecord, TaskRecord
from workers.states import RunStatus, TaskStatus

_FINISHED_RUN = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)
#: A title longer than this is cut in a table (the whole one is in ``materials``).
TITLE_WIDTH = 40


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


def shorten(text: str, width: int = TITLE_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# --- tasks ----------------------------------------------------------------------------------


def task_progress(task: TaskRecord) -> str:
    """Its percentage while it can still move or once done; nothing for a failed or cancelled
    task (the figure it stopped at says nothing of the outcome)."""
    if task.status in (TaskStatus.FAILED, TaskStatus.CANCELLED):
        return "-"
    return f"{100.0 if task.status is TaskStatus.COMPLETED else task.progress:.1f} %"


def note_lines(tasks: Iterable[TaskRecord]) -> list[str]:
    """``warning: KEY: NOTE``, one line per task that finished with a note."""
    return [
        f"warning: {shown(t.key or t.id[:8])}: {shown(note)}"
        for t in tasks
        if (note := task_note(t)) is not None
    ]


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
