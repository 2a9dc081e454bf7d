"""What the library page shows of each material, derived from plain records. Pure: no I/O, no
Qt.

- :class:`OutputBoard` follows the runs of every material (from the change bridge's snapshot
  and batches) and says, per material, how each template's newest run stands: "transcode_mp4:
  done · subtitles: running 40 %" (:func:`summary`).
- :func:`probed_materials` finds the materials a batch has just probed: their duration and
  kind are new, and the page reads the library again.
- :func:`plan_update` turns a fresh read of the library into row removals and appends, so
  that the table keeps its selection (a reset only when the order itself changed).
- Small formatters for the table's cells, and the web addresses in a piece of text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from workers.changes import Change, Tombstone
from workers.records import RunRecord, TaskRecord
from workers.states import RunStatus, TaskStatus

#: What a batch holds: entries of change sets, or bare records and tombstones.
Item = Change | RunRecord | TaskRecord | Tombstone

#: The task type whose completion fills a material's duration and kind.
PROBE = "PROBE"


class OutputState(StrEnum):
    """How a template's newest run on a material stands, in a word."""

    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: The words :func:`summary` writes, in English (the GUI passes translated ones).
WORDS: Mapping[OutputState, str] = {s: s.value for s in OutputState}


@dataclass(frozen=True, slots=True)
class Output:
    """A template's newest run on one material."""

    template: str
    state: OutputState
    #: How far it is (0 to 100) while running or paused; None otherwise, or when unknown.
    percent: float | None
    run_id: str
    created_at: float


class _Mark(NamedTuple):
    """What the board keeps of an unfinished task: its progress, whether it is held, and
    whether a worker has it (claimed or running)."""

    progress: float
    paused: bool
    working: bool


_RUN_STATES = {
    RunStatus.PENDING: OutputState.QUEUED,
    RunStatus.RUNNING: OutputState.RUNNING,
    RunStatus.COMPLETED: OutputState.DONE,
    RunStatus.FAILED: OutputState.FAILED,
    RunStatus.CANCELLED: OutputState.CANCELLED,
}
_WORKING = frozenset({TaskStatus.CLAIMED, TaskStatus.RUNNING})
_UNFINISHED = _WORKING | {TaskStatus.PENDING}


class OutputBoard:
    """The runs of every material and the unfinished tasks of those runs, kept current by
    batches of changes; :meth:`outputs` answers per material."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}
        #: material id → its run ids (a dict: ordered, so that answers never depend on hashing).
        self._by_material: dict[str, dict[str, None]] = {}
        #: run id → task id → mark, for the runs' unfinished tasks only.
        self._tasks: dict[str, dict[str, _Mark]] = {}

    def load(self, runs: Iterable[RunRecord], tasks: Iterable[TaskRecord]) -> None:
        """Start again from a snapshot's records."""
        self._runs.clear()
        self._by_material.clear()
        self._tasks.clear()
        self.apply([*runs, *tasks])

    def apply(self, batch: Iterable[Item]) -> set[str]:
        """Apply a batch; returns the materials whose outputs may read differently now."""
        touched: set[str] = set()
        for item in batch:
            record = item.record if isinstance(item, Change) else item
            if isinstance(record, RunRecord):
                self._put_run(record, touched)
            elif isinstance(record, TaskRecord):
                self._put_task(record, touched)
            elif record.kind == "run":
                self._drop_run(record.id, touched)
            else:
                self._drop_task(record.id, record.workflow_run_id, touched)
        return touched

    def material_ids(self) -> set[str]:
        """The materials that have runs."""
        return set(self._by_material)

    def outputs(self, material_id: str) -> list[Output]:
        """The newest run of each template on ``material_id``, oldest template first."""
        newest: dict[str, RunRecord] = {}
        for run_id in self._by_material.get(material_id, ()):
            run = self._runs[run_id]
            name = run.template or "spec"
            known = newest.get(name)
            if known is None or (run.created_at, run.id) > (known.created_at, known.id):
                newest[name] = run
        out = [self._output(name, run) for name, run in newest.items()]
        out.sort(key=lambda o: (o.created_at, o.template))
        return out

    # --- inside ---------------------------------------------------------------------------

    def _output(self, name: str, run: RunRecord) -> Output:
        state = _RUN_STATES[run.status]
        percent: float | None = None
        if state in (OutputState.QUEUED, OutputState.RUNNING):
            marks = self._tasks.get(run.id, {}).values()
            held = any(m.paused for m in marks)
            if held and not any(m.working and not m.paused for m in marks):
                state = OutputState.PAUSED
            elif state is OutputState.QUEUED and not any(m.working for m in marks):
                return Output(name, state, None, run.id, run.created_at)
            else:
                state = OutputState.RUNNING
            percent = _percent(run, marks)
        return Output(name, state, percent, run.id, run.created_at)

    def _put_run(self, run: RunRecord, touched: set[str]) -> None:
        if run.material_id is None:  # a spec submitted on no material: not the library's
            return
        self._runs[run.id] = run
        self._by_material.setdefault(run.material_id, {})[run.id] = None
        touched.add(run.material_id)

    def _drop_run(self, run_id: str, touched: set[str]) -> None:
        self._tasks.pop(run_id, None)
        run = self._runs.pop(run_id, None)
        if run is None or run.material_id is None:
            return
        runs = self._by_material[run.material_id]
        runs.pop(run_id, None)
        if not runs:
            del self._by_material[run.material_id]
        touched.add(run.material_id)

    def _put_task(self, task: TaskRecord, touched: set[str]) -> None:
        run_id = task.workflow_run_id
        if run_id is None:
            return
        marks = self._tasks.get(run_id)
        if task.status in _UNFINISHED:
            if marks is None:
                marks = self._tasks[run_id] = {}
            marks[task.id] = _Mark(task.progress, task.is_paused, task.status in _WORKING)
        elif marks is not None:
            marks.pop(task.id, None)
            if not marks:
                del self._tasks[run_id]
        self._touch(run_id, task.material_id, touched)

    def _drop_task(self, task_id: str, run_id: str | None, touched: set[str]) -> None:
        marks = self._tasks.get(run_id) if run_id is not None else None
        if run_id is None or marks is None or marks.pop(task_id, None) is None:
            return  # a finished task's tombstone: it was not followed
        if not marks:
            del self._tasks[run_id]
        self._touch(run_id, None, touched)

    def _touch(self, run_id: str, material_id: str | None, touched: set[str]) -> None:
        run = self._runs.get(run_id)
        if run is not None and run.material_id is not None:
            touched.add(run.material_id)
        elif material_id is not None:
            touched.add(material_id)


def _percent(run: RunRecord, marks: Iterable[_Mark]) -> float | None:
    """Done of all: a completed task counts 100, a working one its progress."""
    if not run.total_tasks:
        return None
    working = sum(m.progress for m in marks if m.working)
    return max(0.0, min(100.0, (100.0 * run.done_tasks + working) / run.total_tasks))


def summary(
    outputs: Sequence[Output],
    words: Mapping[OutputState, str] = WORDS,
    names: Mapping[str, str] | None = None,
) -> str:
    """``transcode_mp4: done · subtitles: running 40 %``; empty when there is no run.
    ``names``: what to call a template instead of its name (``Make an MP4``), where known."""
    parts = []
    for o in outputs:
        name = o.template if names is None else names.get(o.template, o.template)
        text = f"{name}: {words[o.state]}"
        if o.percent is not None:
            text += f" {o.percent:.0f} %"
        parts.append(text)
    return " · ".join(parts)


def probed_materials(batch: Iterable[Item]) -> set[str]:
    """The materials a completed PROBE task of this batch has filled."""
    out: set[str] = set()
    for item in batch:
        record = item.record if isinstance(item, Change) else item
        if (
            isinstance(record, TaskRecord)
            and record.type == PROBE
            and record.status is TaskStatus.COMPLETED
            and record.material_id is not None
        ):
            out.add(record.material_id)
    return out


# --- keeping the table's rows ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowPlan:
    """How to go from the rows shown to a fresh read: remove these ranges of rows (first,
    last; bottom up), then append these ids. Every other row keeps its place."""

    removals: tuple[tuple[int, int], ...]
    appended: tuple[str, ...]


def plan_update(shown: Sequence[str], fresh: Sequence[str]) -> RowPlan | None:
    """Removals and appends that turn ``shown`` into ``fresh``; None when the rows that stay
    changed their order (the table must be reset)."""
    fresh_set = set(fresh)
    gone = [n for n, i in enumerate(shown) if i not in fresh_set]
    kept = [i for i in shown if i in fresh_set]
    if list(fresh[: len(kept)]) != kept:
        return None
    ranges: list[tuple[int, int]] = []
    for n in gone:
        if ranges and ranges[-1][1] == n - 1:
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    return RowPlan(tuple(reversed(ranges)), tuple(fresh[len(kept) :]))


# --- cells -----------------------------------------------------------------------------------


def media_length(seconds: float | None) -> str:
    """``0:07``, ``12:05``, ``1:02:03``; empty when unknown."""
    if seconds is None:
        return ""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


_UNITS = ("KB", "MB", "GB", "TB")


def file_size(size: int | None) -> str:
    """``512 B``, ``1.5 MB``, ``12 GB`` (powers of 1024, as file managers count); empty when
    unknown."""
    if size is None:
        return ""
    if size < 1024:
        return f"{size} B"
    value, unit = size / 1024, 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.1f} {_UNITS[unit]}" if value < 100 else f"{value:.0f} {_UNITS[unit]}"


_URL = re.compile(r"https?://\S+", re.IGNORECASE)


def urls_in(text: str) -> list[str]:
    """The http(s) addresses in ``text``, once each, in order (the clipboard's, say)."""
    seen: dict[str, None] = {}
    for match in _URL.finditer(text):
        # Punctuation that ends the sentence around an address is not part of it.
        seen.setdefault(match.group(0).rstrip(".,;:!?'\">"), None)
    return list(seen)
