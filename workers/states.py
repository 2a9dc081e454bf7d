"""The task state machine, retry decisions and run-status derivation.

Pure: plain values in, plain values out. The store applies these rules as compare-and-set
updates (``UPDATE … WHERE status IN (sources_for(target))``); the engine asks
:func:`retry_decision` what to do with a failed attempt.

::

    pending ──► claimed ──► running ──► completed
       ▲  │        │  │        │  │
       │  │        │  └────────┼──┴──► failed ──┐
       │  └────────┴───────────┴─────► cancelled┤
       └────────────────────────────────────────┘   (retry, recovery requeue)

``is_paused`` is orthogonal to the status: a paused pending task is held (never claimed), a
paused running task has been asked to pause by its executor.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

# One enum for the endpoints and the engine: the engine-only types (DEPENDENCY_FAILED,
# STALLED, …) live there too, so a job and the queue cannot spell a type two ways. Re-exported:
# the engine's code says ``workers.states.ErrorType``.
from python_endpoints.errorcodes import ErrorType as ErrorType


class TaskStatus(StrEnum):
    PENDING = "pending"
    CLAIMED = "claimed"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: Error types that are final whatever ``max_retries`` says (:class:`ErrorType` says, for each
#: type, whether it is in this set).
NON_RETRYABLE: frozenset[str] = frozenset(
    {
        ErrorType.CANCELLED,
        ErrorType.AWAITING_CREDENTIAL,
        ErrorType.PAYLOAD_ERROR,
        ErrorType.DEPENDENCY_FAILED,
        ErrorType.NO_EXECUTOR,
        ErrorType.ORPHANED,
        # The input or the request is wrong: another attempt would fail the same way. The
        # user fixes the cause (frees space, fixes the URL) and retries by hand.
        ErrorType.INPUT_MISSING,
        ErrorType.NOT_MEDIA,
        ErrorType.NO_AUDIO,
        # ffmpeg on the same input fails the same way (python_endpoints.jobs.failures).
        ErrorType.INPUT_DAMAGED,
        ErrorType.FFMPEG_FAILED,
        ErrorType.UNSUPPORTED_MEDIA,
        ErrorType.NO_SPACE,
        ErrorType.HTTP_ERROR,
        ErrorType.MODEL_MISSING,
        ErrorType.BAD_TRANSCRIPT,
        ErrorType.MODEL_LOAD_FAILED,
        ErrorType.BAD_RESULT,
    }
)

TERMINAL: frozenset[TaskStatus] = frozenset(
    {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
)
ACTIVE: frozenset[TaskStatus] = frozenset(
    {TaskStatus.PENDING, TaskStatus.CLAIMED, TaskStatus.RUNNING}
)

TRANSITIONS: Mapping[TaskStatus, frozenset[TaskStatus]] = {
    # pending -> running: claim and start folded into one commit (nothing observable between).
    # pending -> failed: an orphan found by recovery.
    TaskStatus.PENDING: frozenset(
        {TaskStatus.CLAIMED, TaskStatus.RUNNING, TaskStatus.CANCELLED, TaskStatus.FAILED}
    ),
    # claimed -> completed: a skipped task, or claim and run folded into one commit.
    # claimed -> pending: recovery of a claim whose worker died before starting it.
    TaskStatus.CLAIMED: frozenset(
        {
            TaskStatus.RUNNING,
            TaskStatus.PENDING,
            TaskStatus.COMPLETED,
            TaskStatus.FAILED,
            TaskStatus.CANCELLED,
        }
    ),
    # running -> pending: a retry scheduled with backoff, or recovery requeueing it.
    TaskStatus.RUNNING: frozenset(
        {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.PENDING}
    ),
    TaskStatus.COMPLETED: frozenset(),
    # A user's retry of a finished-but-unsuccessful task.
    TaskStatus.FAILED: frozenset({TaskStatus.PENDING}),
    TaskStatus.CANCELLED: frozenset({TaskStatus.PENDING}),
}


class InvalidTransition(ValueError):
    """A status change the state machine does not allow."""

    def __init__(self, source: TaskStatus, target: TaskStatus) -> None:
        super().__init__(f"a task cannot go from {source.value!r} to {target.value!r}")
        self.source = source
        self.target = target


def can_transition(source: TaskStatus, target: TaskStatus) -> bool:
    return target in TRANSITIONS[source]


def check_transition(source: TaskStatus, target: TaskStatus) -> None:
    if not can_transition(source, target):
        raise InvalidTransition(source, target)


def sources_for(target: TaskStatus) -> tuple[TaskStatus, ...]:
    """Every status from which ``target`` may be reached: the ``IN (…)`` of a CAS update."""
    return tuple(s for s in TaskStatus if target in TRANSITIONS[s])


def is_terminal(status: TaskStatus) -> bool:
    return status in TERMINAL


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Exponential backoff with jitter: ``base * factor**retry_count``, capped, then jittered.

    ``jitter`` is the fraction of the delay that is random ("equal jitter" at 0.5): the delay
    lies in ``[d * (1 - jitter), d]``, so retries of tasks that failed together spread out
    without any of them retrying sooner than half the nominal delay.
    """

    base: float = 2.0
    factor: float = 2.0
    cap: float = 300.0
    jitter: float = 0.5

    def delay(self, retry_count: int, rand: float) -> float:
        try:
            grown = self.base * self.factor ** max(0, retry_count)
        except OverflowError:  # a huge retry count: far past the cap anyway
            grown = math.inf if self.base > 0 else 0.0
        return min(self.cap, grown) * (1.0 - self.jitter * rand)


@dataclass(frozen=True, slots=True)
class RetryDecision:
    retry: bool
    delay: float = 0.0
    reason: str = ""


def retry_decision(
    error_type: str | None,
    retry_count: int,
    max_retries: int,
    rand: float,
    policy: BackoffPolicy = BackoffPolicy(),
) -> RetryDecision:
    """Decide what happens to a failed attempt.

    ``retry_count`` is how many retries were already scheduled; ``rand`` is a number in
    ``[0, 1)`` supplied by the caller so that this stays deterministic under test.
    """
    if error_type in NON_RETRYABLE:
        return RetryDecision(False, reason=f"{error_type} is never retried")
    if retry_count >= max_retries:
        return RetryDecision(False, reason=f"no retries left ({retry_count}/{max_retries})")
    return RetryDecision(True, policy.delay(retry_count, rand), f"retry {retry_count + 1}")


#: The status text of a running task asked to pause, until its attempt has stopped for it.
PAUSING = "pausing…"


def failure_status(
    decision: RetryDecision, error_type: str | None, retry_count: int, max_retries: int
) -> str:
    """What the task of a failed attempt says next (its ``status_text``): when it is retried,
    or that it is not, and why. The arguments are those :func:`retry_decision` was given
    (``max_retries`` 0 for an error its executor says no retry can fix). A job's own message
    says only what is true whatever comes next (what it kept, what to check); this says
    what comes next."""
    if decision.retry:
        return f"retrying in {decision.delay:.0f} s (retry {retry_count + 1} of {max_retries})"
    if error_type in NON_RETRYABLE:
        return f"failed, not retried ({error_type}: another attempt would fail the same way)"
    if max_retries <= 0:
        return "failed, not retried"
    return f"failed: no retries left ({max_retries} of {max_retries} used)"


def derive_run_status(counts: Mapping[TaskStatus, int]) -> RunStatus:
    """A run's status from how many of its tasks are in each status.

    Any failed task fails the run; all completed completes it; when everything is finished and
    something was cancelled (none failed) the run is cancelled; anything claimed or running makes
    it running; otherwise it is pending. An empty run is completed.
    """
    if counts.get(TaskStatus.FAILED, 0) > 0:
        return RunStatus.FAILED
    unfinished = sum(counts.get(s, 0) for s in ACTIVE)
    if unfinished == 0:
        if counts.get(TaskStatus.CANCELLED, 0) > 0:
            return RunStatus.CANCELLED
        return RunStatus.COMPLETED
    if counts.get(TaskStatus.CLAIMED, 0) + counts.get(TaskStatus.RUNNING, 0) > 0:
        return RunStatus.RUNNING
    return RunStatus.PENDING
