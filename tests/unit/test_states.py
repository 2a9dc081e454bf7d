"""The task state machine, backoff, retry decisions and run-status derivation (pure)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.states import (
    ACTIVE,
    NON_RETRYABLE,
    TERMINAL,
    TRANSITIONS,
    BackoffPolicy,
    ErrorType,
    InvalidTransition,
    RetryDecision,
    RunStatus,
    TaskStatus,
    can_transition,
    check_transition,
    derive_run_status,
    failure_status,
    is_terminal,
    retry_decision,
    sources_for,
)

P = TaskStatus.PENDING
CL = TaskStatus.CLAIMED
R = TaskStatus.RUNNING
CO = TaskStatus.COMPLETED
F = TaskStatus.FAILED
CA = TaskStatus.CANCELLED

# The documented state machine, written out independently of the module's table.
EXPECTED_ALLOWED: dict[TaskStatus, set[TaskStatus]] = {
    P: {CL, R, CA, F},
    CL: {R, P, CO, F, CA},
    R: {CO, F, CA, P},
    CO: set(),
    F: {P},
    CA: {P},
}

ALL_PAIRS = list(itertools.product(TaskStatus, TaskStatus))
ALLOWED_PAIRS = [(s, t) for s, t in ALL_PAIRS if t in EXPECTED_ALLOWED[s]]
FORBIDDEN_PAIRS = [(s, t) for s, t in ALL_PAIRS if t not in EXPECTED_ALLOWED[s]]


def _pair_id(pair: tuple[TaskStatus, TaskStatus]) -> str:
    return f"{pair[0].value}->{pair[1].value}"


# --- transition table ---


def test_table_covers_every_status_and_matches_the_documented_machine() -> None:
    assert set(TRANSITIONS) == set(TaskStatus)
    assert {s: set(t) for s, t in TRANSITIONS.items()} == EXPECTED_ALLOWED


def test_pair_lists_partition_all_36_pairs() -> None:
    assert len(ALLOWED_PAIRS) == 15
    assert len(FORBIDDEN_PAIRS) == 21
    assert len(ALL_PAIRS) == len(TaskStatus) ** 2 == 36


@pytest.mark.parametrize("pair", ALLOWED_PAIRS, ids=_pair_id)
def test_allowed_transition(pair: tuple[TaskStatus, TaskStatus]) -> None:
    source, target = pair
    assert can_transition(source, target) is True
    assert check_transition(source, target) is None


@pytest.mark.parametrize("pair", FORBIDDEN_PAIRS, ids=_pair_id)
def test_forbidden_transition(pair: tuple[TaskStatus, TaskStatus]) -> None:
    source, target = pair
    assert can_transition(source, target) is False
    with pytest.raises(InvalidTransition) as info:
        check_transition(source, target)
    err = info.value
    assert err.source is source
    assert err.target is target
    assert str(err) == f"a task cannot go from {source.value!r} to {target.value!r}"


def test_invalid_transition_is_a_value_error_with_readable_message() -> None:
    with pytest.raises(ValueError, match=r"^a task cannot go from 'completed' to 'running'$"):
        check_transition(CO, R)


@pytest.mark.parametrize("status", list(TaskStatus), ids=str)
def test_no_status_transitions_to_itself(status: TaskStatus) -> None:
    assert not can_transition(status, status)


def test_completed_is_absorbing_and_other_terminals_only_requeue() -> None:
    assert not any(can_transition(CO, t) for t in TaskStatus)
    for status in (F, CA):
        assert [t for t in TaskStatus if can_transition(status, t)] == [P]


def test_every_status_reachable_from_pending_and_every_status_can_finish() -> None:
    reachable = {P}
    frontier = [P]
    while frontier:
        for nxt in TRANSITIONS[frontier.pop()]:
            if nxt not in reachable:
                reachable.add(nxt)
                frontier.append(nxt)
    assert reachable == set(TaskStatus)
    for status in ACTIVE:
        assert TRANSITIONS[status] & TERMINAL, status


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (P, (CL, R, F, CA)),
        (CL, (P,)),
        (R, (P, CL)),
        (CO, (CL, R)),
        (F, (P, CL, R)),
        (CA, (P, CL, R)),
    ],
    ids=lambda v: v.value if isinstance(v, TaskStatus) else None,
)
def test_sources_for(target: TaskStatus, expected: tuple[TaskStatus, ...]) -> None:
    result = sources_for(target)
    assert isinstance(result, tuple)
    assert result == expected  # in enum declaration order


@pytest.mark.parametrize("target", list(TaskStatus), ids=str)
def test_sources_for_agrees_with_can_transition(target: TaskStatus) -> None:
    assert set(sources_for(target)) == {s for s in TaskStatus if can_transition(s, target)}


@pytest.mark.parametrize(
    ("status", "terminal"),
    [(P, False), (CL, False), (R, False), (CO, True), (F, True), (CA, True)],
    ids=lambda v: v.value if isinstance(v, TaskStatus) else None,
)
def test_is_terminal(status: TaskStatus, terminal: bool) -> None:
    assert is_terminal(status) is terminal


def test_terminal_and_active_partition_the_statuses() -> None:
    assert TERMINAL | ACTIVE == set(TaskStatus)
    assert not TERMINAL & ACTIVE


# --- BackoffPolicy.delay ---


def test_delay_without_jitter_grows_exponentially() -> None:
    policy = BackoffPolicy(base=2.0, factor=2.0, cap=1000.0, jitter=0.0)
    assert [policy.delay(n, 0.999) for n in range(6)] == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]


def test_delay_uses_base_and_factor() -> None:
    policy = BackoffPolicy(base=1.5, factor=3.0, cap=1e9, jitter=0.0)
    assert policy.delay(0, 0.0) == pytest.approx(1.5)
    assert policy.delay(3, 0.0) == pytest.approx(1.5 * 27)


def test_delay_is_capped() -> None:
    policy = BackoffPolicy(base=2.0, factor=2.0, cap=300.0, jitter=0.0)
    assert policy.delay(7, 0.0) == 256.0
    assert policy.delay(8, 0.0) == 300.0  # 512 capped
    assert policy.delay(50, 0.0) == 300.0


def test_cap_applies_before_jitter() -> None:
    policy = BackoffPolicy(base=2.0, factor=2.0, cap=300.0, jitter=0.5)
    assert policy.delay(20, 0.5) == pytest.approx(300.0 * 0.75)
    assert policy.delay(20, 0.0) == 300.0


def test_jitter_bounds_with_default_policy() -> None:
    policy = BackoffPolicy()
    assert (policy.base, policy.factor, policy.cap, policy.jitter) == (2.0, 2.0, 300.0, 0.5)
    nominal = 8.0  # 2 * 2**2
    assert policy.delay(2, 0.0) == nominal
    assert policy.delay(2, 0.5) == pytest.approx(nominal * 0.75)
    # rand -> 1 approaches, but never goes below, nominal * (1 - jitter)
    assert policy.delay(2, 0.999999) == pytest.approx(nominal * 0.5, rel=1e-5)
    assert policy.delay(2, 0.999999) >= nominal * 0.5


def test_delay_decreases_as_rand_increases() -> None:
    policy = BackoffPolicy(jitter=0.5)
    delays = [policy.delay(3, r / 10) for r in range(10)]
    assert delays == sorted(delays, reverse=True)
    assert len(set(delays)) == 10


def test_negative_retry_count_is_treated_as_zero() -> None:
    policy = BackoffPolicy(base=3.0, factor=2.0, jitter=0.0)
    assert policy.delay(-5, 0.0) == policy.delay(0, 0.0) == 3.0


def test_policy_is_frozen() -> None:
    policy = BackoffPolicy()
    with pytest.raises(AttributeError):
        policy.base = 1.0  # type: ignore[misc]


@settings(max_examples=200, deadline=None)
@given(
    base=st.floats(0.01, 100.0),
    factor=st.floats(1.0, 4.0),
    cap=st.floats(0.01, 10_000.0),
    jitter=st.floats(0.0, 1.0),
    retry_count=st.integers(0, 60),
    rand=st.floats(0.0, 1.0, exclude_max=True),
)
def test_delay_lies_within_jitter_bounds_and_is_monotone(
    base: float, factor: float, cap: float, jitter: float, retry_count: int, rand: float
) -> None:
    policy = BackoffPolicy(base=base, factor=factor, cap=cap, jitter=jitter)
    nominal = min(cap, base * factor**retry_count)
    delay = policy.delay(retry_count, rand)
    assert delay <= nominal * (1 + 1e-12)
    assert delay >= nominal * (1 - jitter) * (1 - 1e-12)
    assert delay <= cap * (1 + 1e-12)
    # For the same random draw, a later retry never waits less.
    assert policy.delay(retry_count + 1, rand) >= delay * (1 - 1e-12)


def test_delay_with_huge_retry_count_returns_the_cap() -> None:
    assert BackoffPolicy(jitter=0.0).delay(2000, 0.0) == 300.0
    assert BackoffPolicy(base=1, factor=10, cap=60, jitter=0.0).delay(10**6, 0.0) == 60.0


def test_delay_just_below_and_at_the_cap_exponent() -> None:
    policy = BackoffPolicy(base=2.0, factor=2.0, cap=256.0, jitter=0.0)
    assert policy.delay(6, 0.0) == 128.0
    assert policy.delay(7, 0.0) == 256.0
    assert policy.delay(8, 0.0) == 256.0
    uneven = BackoffPolicy(base=1.0, factor=3.0, cap=100.0, jitter=0.0)
    assert [uneven.delay(n, 0.0) for n in (3, 4, 5, 10_000)] == [27.0, 81.0, 100.0, 100.0]


def test_delay_with_a_factor_of_one_is_constant() -> None:
    policy = BackoffPolicy(base=5.0, factor=1.0, cap=300.0, jitter=0.0)
    assert [policy.delay(n, 0.0) for n in (0, 1, 10, 10_000)] == [5.0, 5.0, 5.0, 5.0]


def test_delay_with_a_factor_below_one_shrinks() -> None:
    policy = BackoffPolicy(base=8.0, factor=0.5, cap=300.0, jitter=0.0)
    assert [policy.delay(n, 0.0) for n in (0, 1, 2, 3)] == [8.0, 4.0, 2.0, 1.0]
    assert policy.delay(10_000, 0.0) == 0.0


def test_delay_with_base_at_or_above_cap_is_the_cap() -> None:
    assert BackoffPolicy(base=60.0, cap=60.0, jitter=0.0).delay(5, 0.0) == 60.0
    assert BackoffPolicy(base=500.0, cap=300.0, jitter=0.0).delay(0, 0.0) == 300.0
    assert BackoffPolicy(base=500.0, cap=300.0, jitter=0.5).delay(3, 0.5) == 225.0


@pytest.mark.parametrize(
    "policy",
    [BackoffPolicy(base=60.0, cap=60.0, jitter=0.0), BackoffPolicy(base=500.0, cap=300.0)],
    ids=["base-equals-cap", "base-above-cap"],
)
def test_delay_with_huge_retry_count_and_base_at_or_above_cap(policy: BackoffPolicy) -> None:
    assert policy.delay(2000, 0.0) <= policy.cap


# --- retry_decision ---

EXPECTED_NON_RETRYABLE = {
    ErrorType.CANCELLED,
    ErrorType.AWAITING_CREDENTIAL,
    ErrorType.PAYLOAD_ERROR,
    ErrorType.DEPENDENCY_FAILED,
    ErrorType.NO_EXECUTOR,
    ErrorType.ORPHANED,
    # The input or the request is wrong: another attempt would fail the same way.
    ErrorType.INPUT_MISSING,
    ErrorType.NOT_MEDIA,
    ErrorType.NO_AUDIO,
    ErrorType.INPUT_DAMAGED,
    ErrorType.FFMPEG_FAILED,
    ErrorType.UNSUPPORTED_MEDIA,
    ErrorType.NO_SPACE,
    ErrorType.HTTP_ERROR,
    ErrorType.MODEL_MISSING,
    ErrorType.BAD_TRANSCRIPT,
    ErrorType.MODEL_LOAD_FAILED,
    # What the executor returned cannot be recorded: the same code returns it again.
    ErrorType.BAD_RESULT,
}
RETRYABLE = [e for e in ErrorType if e not in EXPECTED_NON_RETRYABLE]


def test_non_retryable_set() -> None:
    assert set(NON_RETRYABLE) == EXPECTED_NON_RETRYABLE
    assert len(RETRYABLE) == len(ErrorType) - 18


@pytest.mark.parametrize("error_type", sorted(EXPECTED_NON_RETRYABLE), ids=str)
@pytest.mark.parametrize("as_plain_str", [False, True], ids=["enum", "str"])
def test_non_retryable_error_never_retries(error_type: ErrorType, as_plain_str: bool) -> None:
    value = str(error_type.value) if as_plain_str else error_type
    decision = retry_decision(value, retry_count=0, max_retries=100, rand=0.0)
    assert decision.retry is False
    assert decision.delay == 0.0
    assert decision.reason == f"{error_type.value} is never retried"


@pytest.mark.parametrize("error_type", RETRYABLE, ids=str)
def test_retryable_error_retries_while_retries_remain(error_type: ErrorType) -> None:
    decision = retry_decision(str(error_type.value), retry_count=0, max_retries=1, rand=0.0)
    assert decision == RetryDecision(True, 2.0, "retry 1")


def test_unclassified_error_retries() -> None:
    assert retry_decision(None, 0, 3, 0.0).retry is True
    assert retry_decision("SOMETHING_NEW", 0, 3, 0.0).retry is True


def test_retries_stop_at_max_retries() -> None:
    max_retries = 3
    decisions = [retry_decision("IO_ERROR", n, max_retries, 0.0) for n in range(6)]
    assert [d.retry for d in decisions] == [True, True, True, False, False, False]
    assert [d.reason for d in decisions[:3]] == ["retry 1", "retry 2", "retry 3"]
    assert decisions[3] == RetryDecision(False, 0.0, "no retries left (3/3)")
    assert decisions[5].reason == "no retries left (5/3)"


def test_zero_max_retries_never_retries() -> None:
    decision = retry_decision(ErrorType.NETWORK_ERROR, 0, 0, 0.5)
    assert decision == RetryDecision(False, 0.0, "no retries left (0/0)")


def test_a_failed_attempt_says_what_comes_next() -> None:
    def status(error_type: str, retry_count: int, max_retries: int) -> str:
        decision = retry_decision(error_type, retry_count, max_retries, 0.0)
        return failure_status(decision, error_type, retry_count, max_retries)

    assert status("NETWORK_ERROR", 0, 3) == "retrying in 2 s (retry 1 of 3)"
    assert status("NETWORK_ERROR", 2, 3) == "retrying in 8 s (retry 3 of 3)"
    assert status("NETWORK_ERROR", 3, 3) == "failed: no retries left (3 of 3 used)"
    assert status("NETWORK_ERROR", 0, 0) == "failed, not retried"
    assert status("HTTP_ERROR", 0, 3) == (
        "failed, not retried (HTTP_ERROR: another attempt would fail the same way)"
    )


def test_non_retryable_wins_over_remaining_retries_and_exhaustion() -> None:
    assert retry_decision("ORPHANED", 5, 3, 0.0).reason == "ORPHANED is never retried"


def test_retry_delay_grows_and_uses_policy_and_rand() -> None:
    policy = BackoffPolicy(base=1.0, factor=3.0, cap=50.0, jitter=0.5)
    delays = [retry_decision("STALLED", n, 10, 0.0, policy).delay for n in range(6)]
    assert delays == [1.0, 3.0, 9.0, 27.0, 50.0, 50.0]
    jittered = retry_decision("STALLED", 2, 10, 0.5, policy)
    assert jittered.delay == pytest.approx(9.0 * 0.75)


def test_default_policy_is_used_when_none_given() -> None:
    assert retry_decision("IO_ERROR", 3, 10, 0.0).delay == 16.0


def test_retry_decision_defaults() -> None:
    decision = RetryDecision(False)
    assert (decision.delay, decision.reason) == (0.0, "")


# --- derive_run_status ---


def _counts(**by_name: int) -> dict[TaskStatus, int]:
    return {TaskStatus(name): n for name, n in by_name.items()}


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        # failed wins over everything
        (_counts(failed=1), RunStatus.FAILED),
        (_counts(failed=1, completed=5), RunStatus.FAILED),
        (_counts(failed=1, running=3, pending=2, claimed=1), RunStatus.FAILED),
        (_counts(failed=2, cancelled=4), RunStatus.FAILED),
        # all completed
        (_counts(completed=7), RunStatus.COMPLETED),
        (_counts(completed=7, failed=0, cancelled=0, pending=0), RunStatus.COMPLETED),
        # finished with a cancel, no failure
        (_counts(cancelled=1), RunStatus.CANCELLED),
        (_counts(completed=9, cancelled=1), RunStatus.CANCELLED),
        # something still claimed or running
        (_counts(running=1), RunStatus.RUNNING),
        (_counts(claimed=1), RunStatus.RUNNING),
        (_counts(claimed=1, pending=4, completed=2), RunStatus.RUNNING),
        (_counts(running=1, cancelled=3), RunStatus.RUNNING),
        # only pending left (possibly with finished ones)
        (_counts(pending=1), RunStatus.PENDING),
        (_counts(pending=2, completed=3), RunStatus.PENDING),
        (_counts(pending=2, cancelled=1), RunStatus.PENDING),
        (_counts(pending=1, running=0, claimed=0), RunStatus.PENDING),
        # an empty run
        ({}, RunStatus.COMPLETED),
        (_counts(pending=0, running=0, completed=0), RunStatus.COMPLETED),
    ],
)
def test_derive_run_status(counts: dict[TaskStatus, int], expected: RunStatus) -> None:
    assert derive_run_status(counts) is expected


def test_derive_run_status_accepts_plain_string_keys() -> None:
    # Counts read back from the database are keyed by the stored strings.
    assert derive_run_status({"failed": 1}) is RunStatus.FAILED  # type: ignore[dict-item]
    assert derive_run_status({"running": 1}) is RunStatus.RUNNING  # type: ignore[dict-item]
    assert derive_run_status({"cancelled": 1}) is RunStatus.CANCELLED  # type: ignore[dict-item]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(list(TaskStatus)), st.integers(0, 5)))
def test_derive_run_status_matches_the_rules(counts: dict[TaskStatus, int]) -> None:
    def n(*statuses: TaskStatus) -> int:
        return sum(counts.get(s, 0) for s in statuses)

    status = derive_run_status(counts)
    assert (status is RunStatus.FAILED) == (n(F) > 0)
    if n(F) == 0:
        assert (status is RunStatus.COMPLETED) == (n(P, CL, R, CA) == 0)
        assert (status is RunStatus.CANCELLED) == (n(P, CL, R) == 0 and n(CA) > 0)
        assert (status is RunStatus.RUNNING) == (n(CL, R) > 0)
        assert (status is RunStatus.PENDING) == (n(P) > 0 and n(CL, R) == 0)


def test_delay_without_growth_or_above_the_cap() -> None:
    assert BackoffPolicy(base=5, factor=1, cap=100, jitter=0.0).delay(50, 0.0) == 5.0
    assert BackoffPolicy(base=500, factor=2, cap=100, jitter=0.0).delay(3, 0.0) == 100.0
