"""Immutable snapshots of rows, returned by the store. Nothing here touches the database."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Self

from workers.states import RunStatus, TaskStatus

if TYPE_CHECKING:
    from workers.spec import PreparedTask


class _FromRow:
    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Self:
        names = _field_names(cls)
        return cls(**{k: row[k] for k in names if k in row})


_FIELD_CACHE: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_CACHE.get(cls)
    if names is None:
        names = _FIELD_CACHE[cls] = tuple(f.name for f in fields(cls))
    return names


@dataclass(frozen=True, slots=True)
class TaskRecord(_FromRow):
    id: str
    key: str | None
    type: str
    workflow_run_id: str | None
    material_id: str | None
    status: TaskStatus
    priority: int
    depends_on: list[str]
    payload: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    error_type: str | None
    idempotency_key: str | None
    retry_count: int
    max_retries: int
    progress: float
    is_paused: bool
    is_pausable: bool
    created_at: float
    claimed_at: float | None
    started_at: float | None
    completed_at: float | None
    heartbeat_at: float | None
    unmet_deps: int
    attempt: int
    interruptions: int
    charged_interruptions: int
    lease_token: str | None
    worker_id: str | None
    lease_until: float | None
    next_run_at: float | None
    resource: str
    status_text: str | None
    checkpoint: dict[str, Any] | None
    #: ``status_text`` as message ids and arguments (see the task table's column).
    status_parts: list[dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class RunRecord(_FromRow):
    id: str
    material_id: str | None
    template: str | None
    status: RunStatus
    total_tasks: int
    done_tasks: int
    pending_tasks: int
    claimed_tasks: int
    running_tasks: int
    failed_tasks: int
    cancelled_tasks: int
    created_at: float
    completed_at: float | None

    @property
    def counts(self) -> dict[TaskStatus, int]:
        return {
            TaskStatus.PENDING: self.pending_tasks,
            TaskStatus.CLAIMED: self.claimed_tasks,
            TaskStatus.RUNNING: self.running_tasks,
            TaskStatus.COMPLETED: self.done_tasks,
            TaskStatus.FAILED: self.failed_tasks,
            TaskStatus.CANCELLED: self.cancelled_tasks,
        }


@dataclass(frozen=True, slots=True)
class RunProgress:
    """How far a run's tasks are, for a person (``fredica runs``)."""

    #: When its first task started; None while none has.
    started_at: float | None = None
    #: Its tasks that can still complete or have (not failed, not cancelled).
    live_tasks: int = 0
    #: Their progress added up: a completed task counts 100.
    progress_sum: float = 0.0
    #: Its unfinished tasks that are held (paused).
    held: int = 0
    #: Its completed tasks whose result holds a note for the user (``result.note``).
    notes: int = 0

    @property
    def fraction(self) -> float | None:
        """Done of what can be done, 0 to 1; None when nothing can."""
        return min(1.0, self.progress_sum / (100.0 * self.live_tasks)) if self.live_tasks else None


@dataclass(frozen=True, slots=True)
class EventRecord(_FromRow):
    id: int
    task_id: str
    workflow_run_id: str | None
    at: float
    kind: str
    detail: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class ClaimedTask:
    """What a worker holds after a claim: the task and the token that fences its writes."""

    task: TaskRecord
    lease_token: str
    #: The results of the tasks it depends on, read in the claim's transaction.
    upstream: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.task.id


@dataclass(frozen=True, slots=True)
class CreatedRun:
    run_id: str
    task_ids: dict[str, str]  # spec key -> task id
    deduplicated: bool


@dataclass(frozen=True, slots=True)
class FailOutcome:
    """What became of a failed attempt."""

    applied: bool  # False: the lease was no longer ours (cancelled, recovered) — nothing written
    retried: bool = False
    next_run_at: float | None = None
    cascaded: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CancelOutcome:
    cancelled: tuple[str, ...]  # ids that became cancelled, the cascade included
    was_running: tuple[str, ...]  # of those, the ones a worker held: their executor must stop


@dataclass(frozen=True, slots=True)
class HeartbeatOutcome:
    held: frozenset[str]  # still ours
    paused: frozenset[str]  # still ours, and a pause was asked for
    lost: frozenset[str]  # no longer ours: cancelled or taken over; stop working on them
    #: The lease token each held task has now: an attempt with another token lost its lease
    #: (the task was cancelled, retried and claimed again since).
    tokens: Mapping[str, str] = field(default_factory=dict)
    #: The engine was asked to drain (``fredica drain``): finish, claim nothing more.
    draining: bool = False

    @classmethod
    def of(
        cls, asked: Iterable[str], ours: Iterable[tuple[str, bool, str | None]]
    ) -> HeartbeatOutcome:
        """From the ids asked about and the ``(id, is_paused, lease_token)`` of those still
        ours."""
        rows = list(ours)
        held = frozenset(task_id for task_id, _, _ in rows)
        return cls(
            held=held,
            paused=frozenset(task_id for task_id, paused, _ in rows if paused),
            lost=frozenset(asked) - held,
            tokens={task_id: token for task_id, _, token in rows if token is not None},
        )


@dataclass(frozen=True, slots=True)
class ProgressWrite:
    """A running attempt's latest progress, status text or pausability, written with the
    engine's next turn (``values``: the keywords of ``TaskStore.report_progress``)."""

    task_id: str
    lease_token: str
    values: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Completion:
    """A successful attempt to record."""

    task_id: str
    lease_token: str
    result: dict[str, Any] | None = None
    new_tasks: tuple[PreparedTask, ...] = ()  # dynamic fan-out, added with the completion


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed attempt to record."""

    task_id: str
    lease_token: str
    error: str
    error_type: str
    retryable: bool = True


@dataclass(frozen=True, slots=True)
class TickOutcome:
    """What one engine transaction did: recorded outcomes, in order, and new claims."""

    completed: tuple[bool, ...]
    failed: tuple[FailOutcome, ...]
    claimed: tuple[ClaimedTask, ...]
    #: Completions whose fan-out could not be added: recorded as failures instead.
    rejected: tuple[tuple[Failure, FailOutcome], ...] = ()
    #: When the earliest waiting retry becomes due, after this transaction.
    next_retry_at: float | None = None
    #: Tasks claimed, run inline and completed within this same transaction.
    inline: tuple[ClaimedTask, ...] = ()
    #: The last claim found fewer claimable tasks than it had slots for.
    exhausted: bool = True


#: Called on the store's thread with a task just claimed: its result (a dict) when it was run
#: inline, or None to start it the usual way. See :meth:`TaskStore.tick`.
InlineRunner = Callable[[ClaimedTask], dict[str, Any] | None]


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What start-up recovery did: how many tasks got each restart-log action."""

    session_id: str
    #: Were running, resumable: back to pending with their checkpoints.
    resumed: int = 0
    #: Were running, not resumable: back to pending, to start from the beginning.
    restarted: int = 0
    #: Were claimed, never started: back to pending.
    requeued: int = 0
    #: Were running: held (paused) for the user's review (``on_restart = "hold"``).
    held: int = 0
    #: Were paused: still paused.
    kept_paused: int = 0
    #: Their interruption limit was reached: failed ``INTERRUPTED``.
    failed: int = 0
    #: Their run no longer exists: failed ``ORPHANED``.
    orphaned: int = 0
    failed_ids: tuple[str, ...] = ()
    #: Of all these, how many a crash left (the rest a graceful stop): the app says so.
    crashed: int = 0

    @property
    def total(self) -> int:
        return (
            self.resumed
            + self.restarted
            + self.requeued
            + self.held
            + self.kept_paused
            + self.failed
            + self.orphaned
        )

    @property
    def summary(self) -> str:
        """One line for a person: "2 resumed, 1 restarted from the start, 0 held, 0 failed"
        (the rarer actions only when they happened)."""
        parts = [
            f"{self.resumed} resumed",
            f"{self.restarted} restarted from the start",
            f"{self.held} held",
            f"{self.failed} failed",
        ]
        rare = [
            (self.requeued, "requeued (never started)"),
            (self.kept_paused, "kept paused"),
            (self.orphaned, "orphaned"),
        ]
        parts += [f"{n} {text}" for n, text in rare if n]
        return ", ".join(parts)


#: How the restart log's detail of a crash begins when it was charged to its task ("crash:
#: charged: 2 of 5 (interruption 3 in all)…"), and when it was not (recovery writes them).
CHARGED = "crash: charged: "
NOT_CHARGED = "crash: interrupted, not charged"


@dataclass(frozen=True, slots=True)
class RestartLogEntry(_FromRow):
    id: int
    session_id: str
    task_id: str
    task_type: str
    workflow_run_id: str | None
    material_id: str | None
    status_at_restart: str
    progress: float
    action: str
    disposition: str
    detail: str | None
    created_at: float
    updated_at: float
    #: The home of the engine that held the task (several hosts on one database).
    home_id: str | None = None

    @property
    def charged(self) -> tuple[int, int] | None:
        """``(n, limit)`` when the crash was charged to the task (its ``n``-th charged one of
        at most ``limit``); None when it was not, or no crash is told of."""
        detail = self.detail or ""
        if not detail.startswith(CHARGED):
            return None
        n, _, rest = detail.removeprefix(CHARGED).partition(" of ")
        limit = rest.split(" ", 1)[0]
        return (int(n), int(limit)) if n.isdigit() and limit.isdigit() else None

    @property
    def not_charged(self) -> bool:
        """The crash interrupted the task without being charged to it."""
        return (self.detail or "").startswith(NOT_CHARGED)


@dataclass(frozen=True, slots=True)
class NoticeRecord(_FromRow):
    """A run's end to tell the user of (the ``notice`` table)."""

    id: int
    kind: str
    workflow_run_id: str
    created_at: float
    shown_at: float | None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What an engine says of itself when it registers (``TaskStore.register_worker``)."""

    id: str
    host: str
    home_id: str
    pid: int
    build: str
    slots: Mapping[str, int]
    #: Task type → the newest payload version this build understands.
    task_types: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class WorkerRecord(_FromRow):
    """An engine as the queue knows it (``fredica hosts``)."""

    id: str
    host: str
    home_id: str
    pid: int
    build: str
    slots: dict[str, int]
    task_types: dict[str, int]
    draining: bool
    started_at: float
    heartbeat_at: float
    stopped_at: float | None
    #: Tasks it holds now (claimed or running).
    running: int = 0
