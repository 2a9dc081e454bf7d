"""A task's state as a user sees it, the sidebar's counts of them, and what a selection allows.

The badge refines the stored status with what a user cares about: a pending task either
*waits* for its dependencies or is *queued* for a slot; a completed one is *done* or was
*skipped*; and work that a restart cut off and that now needs the user is *interrupted*,
never *failed*. Recovery says so on the task itself (the restart log only keeps the history):
it fails a task that keeps being cut off with the error type ``INTERRUPTED``, and it holds a
cut-off task for review (``on_restart = "hold"``) with the status text "held after a restart:
review it". A cut-off task that simply goes on again (resumed, restarted, requeued) is queued
like any other: nothing is asked of the user.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from fredica_app.views.records import task_outputs
from workers.changes import Tombstone
from workers.records import TaskRecord
from workers.states import ACTIVE, ErrorType, TaskStatus

#: The status text recovery gives a task it holds for the user's review.
HELD_AFTER_RESTART = "held after a restart"


class Badge(StrEnum):
    WAITING = "waiting"
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"
    INTERRUPTED = "interrupted"


def is_interrupted(task: TaskRecord) -> bool:
    """Whether recovery stopped this task for the user: failed ``INTERRUPTED`` or held after a
    restart (until the user resumes it)."""
    if task.status is TaskStatus.FAILED:
        return task.error_type == ErrorType.INTERRUPTED
    return (
        task.is_paused
        and task.status in ACTIVE
        and (task.status_text or "").startswith(HELD_AFTER_RESTART)
    )


def badge(task: TaskRecord, deps_done: bool | None = None) -> Badge:
    """What the task's row shows. ``deps_done``: whether its dependencies have all completed,
    when the caller knows (from the dependencies' records it holds, which may be newer than
    this record within a batch of changes); None: trust the record's ``unmet_deps`` (the change
    stream carries its changes)."""
    status = task.status
    if is_interrupted(task):
        return Badge.INTERRUPTED
    if status is TaskStatus.COMPLETED:
        return Badge.SKIPPED if (task.result or {}).get("skipped") else Badge.DONE
    if status is TaskStatus.FAILED:
        return Badge.FAILED
    if status is TaskStatus.CANCELLED:
        return Badge.CANCELLED
    if task.is_paused:  # held by the user: that matters more than why it would wait
        return Badge.PAUSED
    if status is not TaskStatus.PENDING:  # claimed: it has its slot and is starting
        return Badge.RUNNING
    if deps_done is None:
        deps_done = task.unmet_deps == 0
    return Badge.QUEUED if deps_done else Badge.WAITING


def deps_done(task: TaskRecord, known: Mapping[str, TaskRecord]) -> bool:
    """Whether ``task``'s dependencies have completed, as far as ``known`` tells: one known and
    unfinished says no; all known and completed says yes; otherwise (some are not loaded, or
    were deleted) the record's own ``unmet_deps`` decides."""
    unknown = False
    for dep_id in task.depends_on:
        dep = known.get(dep_id)
        if dep is None:
            unknown = True
        elif dep.status is not TaskStatus.COMPLETED:
            return False
    return task.unmet_deps == 0 if unknown else True


def count_badges(tasks: Iterable[TaskRecord]) -> Counter[Badge]:
    """Every badge counted from scratch (what :class:`BadgeCounts` keeps up to date)."""
    known = {t.id: t for t in tasks}
    return Counter(badge(t, deps_done(t, known)) for t in known.values())


class BadgeCounts:
    """The sidebar's counts per badge, kept by ±1 as changes arrive.

    A change touches the changed task and the tasks that depend on it (their badge can move
    between waiting and queued without any change of their own row), never all rows."""

    def __init__(self, tasks: Iterable[TaskRecord] = ()) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._badges: dict[str, Badge] = {}
        self._dependents: dict[str, set[str]] = {}
        self._counts: Counter[Badge] = Counter()
        for task in tasks:
            self.apply(task)

    @property
    def counts(self) -> Mapping[Badge, int]:
        """Badge → how many tasks show it (badges no task shows are absent)."""
        return {b: n for b, n in self._counts.items() if n}

    def badge_of(self, task_id: str) -> Badge | None:
        return self._badges.get(task_id)

    def apply(self, record: TaskRecord | Tombstone) -> None:
        """A task's new record, or its tombstone (a run's tombstone changes nothing here:
        each of its tasks has one of its own)."""
        if isinstance(record, Tombstone):
            if record.kind == "task":
                self._remove(record.id)
            return
        previous = self._tasks.get(record.id)
        if previous is not None and previous.depends_on != record.depends_on:
            self._unlink(previous)
        if previous is None or previous.depends_on != record.depends_on:
            for dep_id in record.depends_on:
                self._dependents.setdefault(dep_id, set()).add(record.id)
        self._tasks[record.id] = record
        self._rebadge(record.id)
        self._rebadge_dependents(record.id)

    def _remove(self, task_id: str) -> None:
        previous = self._tasks.pop(task_id, None)
        if previous is None:
            return
        self._unlink(previous)
        self._counts[self._badges.pop(task_id)] -= 1
        self._rebadge_dependents(task_id)

    def _unlink(self, task: TaskRecord) -> None:
        for dep_id in task.depends_on:
            dependents = self._dependents[dep_id]
            dependents.discard(task.id)
            if not dependents:
                del self._dependents[dep_id]

    def _rebadge_dependents(self, task_id: str) -> None:
        # Only known tasks are linked (a removed one is unlinked first).
        for dependent in self._dependents.get(task_id, ()):
            self._rebadge(dependent)

    def _rebadge(self, task_id: str) -> None:
        task = self._tasks[task_id]
        new = badge(task, deps_done(task, self._tasks))
        old = self._badges.get(task_id)
        if old is new:
            return
        if old is not None:
            self._counts[old] -= 1
        self._counts[new] += 1
        self._badges[task_id] = new


# --- what a selection allows ----------------------------------------------------------------


class ActionName(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"
    RETRY = "retry"
    OPEN_OUTPUT = "open output"
    COPY_ERROR = "copy error"


@dataclass(frozen=True, slots=True)
class Action:
    """An action the selection's menu offers."""

    name: ActionName
    #: The selected tasks it applies to (a disabled action: the ones it would apply to).
    task_ids: tuple[str, ...]
    enabled: bool = True
    #: Why it is disabled; None when enabled.
    reason: str | None = None


def selection_actions(tasks: Sequence[TaskRecord]) -> list[Action]:
    """The actions some selected task can take, in menu order, each with the tasks it applies
    to. Pause is offered for unfinished tasks that are not held, and disabled, with a reason,
    when every one of them says it cannot pause now (``is_pausable`` False)."""
    unfinished = [t for t in tasks if t.status in ACTIVE]
    actions: list[Action] = []
    pausable = [t for t in unfinished if not t.is_paused]
    if pausable:
        now = _ids(t for t in pausable if t.is_pausable)
        if now:
            actions.append(Action(ActionName.PAUSE, now))
        else:
            reason = (
                "this task cannot pause now: its job cannot stop safely at this point"
                if len(pausable) == 1
                else "none of these tasks can pause now: their jobs cannot stop safely here"
            )
            actions.append(Action(ActionName.PAUSE, _ids(pausable), enabled=False, reason=reason))
    offers = (
        (ActionName.RESUME, (t for t in unfinished if t.is_paused)),
        (ActionName.CANCEL, unfinished),
        (ActionName.RETRY, (t for t in tasks if t.status in _RETRYABLE)),
        (ActionName.OPEN_OUTPUT, (t for t in tasks if task_outputs(t))),
        (ActionName.COPY_ERROR, (t for t in tasks if t.error)),
    )
    for name, applies in offers:
        ids = _ids(applies)
        if ids:
            actions.append(Action(name, ids))
    return actions


_RETRYABLE = (TaskStatus.FAILED, TaskStatus.CANCELLED)


def _ids(tasks: Iterable[TaskRecord]) -> tuple[str, ...]:
    return tuple(t.id for t in tasks)
