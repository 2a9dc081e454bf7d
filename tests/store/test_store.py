"""The task store on a real SQLite file: every write path and its failure cases."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.commits import counting_commits
from tests.support.rawdb import RawDB
from workers.db import create_sqlite_engine
from workers.errors import AmbiguousId, InvalidState, NotFound, SpecError
from workers.records import CreatedRun
from workers.spec import TaskSpec, parse_spec, prepare_run, prepare_tasks
from workers.states import BackoffPolicy, ErrorType, RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


async def submit(
    store: TaskStore, registry: TaskTypeRegistry, tasks: list[dict[str, Any]], **kw: Any
) -> CreatedRun:
    return await store.create_run(prepare_run(parse_spec({"tasks": tasks, **kw}), registry))


def noop(key: str, *deps: str, **kw: Any) -> dict[str, Any]:
    return {"key": key, "type": "NOOP", "depends_on": list(deps), **kw}


def rows(raw: RawDB, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    return raw.rows(sql, *args)


async def test_create_run_writes_run_tasks_and_edges(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    created = await submit(
        store, registry, [noop("a"), noop("b", "a"), noop("c", "a", "b")], template="demo"
    )
    assert set(created.task_ids) == {"a", "b", "c"} and not created.deduplicated
    run = await store.get_run(created.run_id)
    assert (run.status, run.total_tasks, run.pending_tasks, run.template) == (
        RunStatus.PENDING,
        3,
        3,
        "demo",
    )
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    assert tasks["c"].depends_on == [created.task_ids["a"], created.task_ids["b"]]
    assert [tasks[k].unmet_deps for k in "abc"] == [0, 1, 2]
    assert tasks["a"].payload == {"schema_version": 1}
    edges = rows(raw, "SELECT count(*) FROM task_dependency")
    assert edges == [(3,)]


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ([{"key": "a", "type": "TRANSMOGRIFY"}], "unknown task type 'TRANSMOGRIFY'"),
        ([noop("a", "ghost")], "'a' depends on unknown 'ghost'"),
        ([noop("a", "b"), noop("b", "a")], "dependency cycle"),
        ([noop("a", "a")], "dependency cycle"),
        ([{"key": "s", "type": "SLEEP", "payload": {"seconds": -1}}], "invalid SLEEP payload"),
        ([{"key": "s", "type": "SLEEP", "payload": {}}], "seconds: Field required"),
        ([noop("a", priority=-1)], "priority"),
        ([noop("a"), noop("a")], "duplicate task key: 'a'"),
        ([{"key": "a", "type": "NOOP", "colour": "red"}], "colour"),
        ([], "tasks"),
    ],
)
async def test_bad_specs_are_rejected_and_nothing_is_written(
    store: TaskStore,
    registry: TaskTypeRegistry,
    raw: RawDB,
    tasks: list[dict[str, Any]],
    message: str,
) -> None:
    with pytest.raises(SpecError, match=message):
        await submit(store, registry, tasks)
    assert rows(raw, "SELECT count(*) FROM task") == [(0,)]
    assert rows(raw, "SELECT count(*) FROM workflow_run") == [(0,)]


async def test_claim_order_is_priority_then_fifo(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    first = await submit(store, registry, [noop("low1"), noop("high", priority=5)])
    second = await submit(store, registry, [noop("low2"), noop("high2", priority=5)])
    order = []
    while claimed := await store.claim("w"):
        order.append(claimed[0].task.key)
    assert order == ["high", "high2", "low1", "low2"]
    assert first.run_id != second.run_id


async def test_claim_sets_lease_attempt_and_worker(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    await submit(store, registry, [noop("a")])
    [c] = await store.claim("worker-1", lease_seconds=30)
    assert c.task.status is TaskStatus.CLAIMED
    assert (c.task.attempt, c.task.worker_id, c.task.lease_token) == (1, "worker-1", c.lease_token)
    assert c.task.claimed_at is not None and c.task.lease_until is not None
    assert c.task.lease_until == pytest.approx(c.task.claimed_at + 30)
    assert await store.claim("worker-2") == []  # nothing else to claim
    events = await store.events(c.id)
    assert [e.kind for e in events] == ["claimed"]


async def test_dependencies_block_until_completed(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [noop("a"), noop("b"), noop("c", "a", "b")])
    claimed = await store.claim("w", limit=10)
    assert sorted(c.task.key for c in claimed) == ["a", "b"]
    a, b = sorted(claimed, key=lambda c: c.task.key)
    assert await store.complete(a.id, a.lease_token, {"out": "a"})
    assert await store.claim("w") == []  # c still waits for b
    assert await store.complete(b.id, b.lease_token, {"out": "b"})
    [c] = await store.claim("w")
    assert c.task.key == "c"
    assert await store.upstream_results(c.id) == {"a": {"out": "a"}, "b": {"out": "b"}}
    assert await store.complete(c.id, c.lease_token)
    run = await store.get_run(created.run_id)
    assert (run.status, run.done_tasks, run.total_tasks) == (RunStatus.COMPLETED, 3, 3)
    assert run.completed_at is not None


async def test_run_status_follows_its_tasks(store: TaskStore, registry: TaskTypeRegistry) -> None:
    created = await submit(store, registry, [noop("a"), noop("b", "a")])
    assert (await store.get_run(created.run_id)).status is RunStatus.PENDING
    [a] = await store.claim("w")
    assert (await store.get_run(created.run_id)).status is RunStatus.RUNNING
    assert await store.mark_running(a.id, a.lease_token)
    assert (await store.get_task(a.id)).started_at is not None
    await store.complete(a.id, a.lease_token)
    run = await store.get_run(created.run_id)
    assert (run.status, run.pending_tasks, run.running_tasks) == (RunStatus.PENDING, 1, 0)


async def test_resource_slots_limit_what_is_claimed(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    await submit(
        store,
        registry,
        [
            noop("g1", resource="gpu"),
            noop("g2", resource="gpu"),
            noop("c1", resource="cpu"),
            noop("c2", resource="cpu"),
        ],
    )
    claimed = await store.claim("w", slots={"gpu": 1, "cpu": 1}, limit=10)
    assert sorted(c.task.key for c in claimed) == ["c1", "g1"]
    assert await store.claim("w", slots={"gpu": 0, "net": 3}, limit=10) == []
    [c2] = await store.claim("w", slots={"cpu": 5}, limit=10)
    assert c2.task.key == "c2"


async def test_claim_with_start_folds_running_into_one_commit(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [noop("a")])
    [a] = await store.claim("w", start=True)
    task = await store.get_task(a.id)
    assert task.status is TaskStatus.RUNNING and task.started_at == task.claimed_at
    [started] = await store.events(a.id)  # claimed and started in one commit: one event
    assert started.kind == "started" and started.detail == {"worker_id": "w", "attempt": 1}
    assert (await store.get_run(created.run_id)).running_tasks == 1
    assert not await store.mark_running(a.id, a.lease_token)  # already running


async def test_paused_pending_task_is_held(store: TaskStore, registry: TaskTypeRegistry) -> None:
    created = await submit(store, registry, [noop("a"), noop("b")])
    assert await store.set_paused(created.task_ids["a"], True, reason="user")
    assert not await store.set_paused(created.task_ids["a"], True)  # already paused
    [b] = await store.claim("w", limit=5)
    assert b.task.key == "b"
    held = await store.get_task(created.task_ids["a"])
    assert held.is_paused and held.status_text == "paused: user"
    assert await store.set_paused(created.task_ids["a"], False)
    [a] = await store.claim("w")
    assert a.task.key == "a" and not a.task.is_paused
    kinds = [e.kind for e in await store.events(created.task_ids["a"])]
    assert kinds == ["paused", "resumed", "claimed"]


async def test_pause_and_resume_a_whole_run(store: TaskStore, registry: TaskTypeRegistry) -> None:
    created = await submit(store, registry, [noop("a"), noop("b")])
    assert sorted(await store.set_run_paused(created.run_id, True)) == sorted(
        created.task_ids.values()
    )
    assert await store.claim("w") == []
    await store.set_run_paused(created.run_id, False)
    assert len(await store.claim("w", limit=5)) == 2
    with pytest.raises(NotFound):
        await store.set_run_paused("nope", True)


async def test_progress_and_checkpoint_are_fenced(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    await submit(store, registry, [noop("a")])
    [a] = await store.claim("w")
    assert await store.report_progress(
        a.id, a.lease_token, progress=150, status_text="x" * 600, checkpoint={"done": 3}
    )
    task = await store.get_task(a.id)
    assert task.progress == 100.0 and len(task.status_text or "") == 512
    assert task.checkpoint == {"done": 3}
    assert not await store.report_progress(a.id, "stale-token", progress=5)
    assert (await store.get_task(a.id)).progress == 100.0
    assert await store.report_progress(a.id, a.lease_token)  # nothing to write


async def test_failed_attempt_is_retried_with_backoff(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    store.backoff = BackoffPolicy(base=10, factor=2, cap=100, jitter=0.0)
    created = await submit(store, registry, [noop("a", max_retries=2), noop("b", "a")])
    [a] = await store.claim("w")
    outcome = await store.fail(a.id, a.lease_token, "disk hiccup", ErrorType.IO_ERROR)
    assert outcome.applied and outcome.retried and outcome.next_run_at is not None
    task = await store.get_task(a.id)
    assert (task.status, task.retry_count, task.error_type) == (
        TaskStatus.PENDING,
        1,
        "IO_ERROR",
    )
    assert task.next_run_at == pytest.approx(outcome.next_run_at)
    assert outcome.next_run_at - store.now() == pytest.approx(10, abs=0.5)
    assert task.status_text == "retrying in 10 s (retry 1 of 2)"  # what comes next
    assert await store.claim("w") == []  # not due yet
    assert await store.next_retry_at() == pytest.approx(outcome.next_run_at)
    # Make it due, as the clock would.
    with raw.connect() as conn:
        conn.execute("UPDATE task SET next_run_at = 0 WHERE id = ?", (a.id,))
    [again] = await store.claim("w")
    assert again.task.attempt == 2 and again.lease_token != a.lease_token
    second = await store.fail(again.id, again.lease_token, "again", ErrorType.IO_ERROR)
    assert second.next_run_at is not None
    assert second.next_run_at - store.now() == pytest.approx(20, abs=0.5)
    assert (await store.get_task(a.id)).status_text == "retrying in 20 s (retry 2 of 2)"
    kinds = [e.kind for e in await store.events(a.id)]
    assert kinds == ["claimed", "retry_scheduled", "claimed", "retry_scheduled"]
    assert (await store.get_run(created.run_id)).status is RunStatus.PENDING


class ManualClock:
    """A store clock the test moves by hand."""

    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def expected_claims(
    pending: dict[str, Any], slots: dict[str, int] | None, limit: int, now: float
) -> list[str]:
    """What claims must return: among tasks due at ``now`` (no retry timer, or one that has
    run out) of a class with a slot left, the highest priority first, then the oldest."""
    due = [t for t in pending.values() if t.next_run_at is None or t.next_run_at <= now]
    left = dict(slots) if slots is not None else None
    picked: list[str] = []
    for t in sorted(due, key=lambda t: (-t.priority, t.created_at)):
        if len(picked) == limit:
            break
        if left is not None:
            if left.get(t.resource, 0) <= 0:
                continue
            left[t.resource] -= 1
        picked.append(t.key)
    return picked


async def test_claims_by_class_follow_priority_then_age_among_due_tasks(
    db_path: Path, registry: TaskTypeRegistry
) -> None:
    """Whatever the mix of classes, priorities and retry timers (due or not), a claim for some
    classes returns exactly what is due in those classes, priority DESC then created_at ASC."""
    import random

    clock = ManualClock()
    store = TaskStore(create_sqlite_engine(db_path), clock=clock)
    try:
        rng = random.Random(11)
        classes = ["cpu", "gpu", "io", "net"]
        specs = [
            noop(f"t{i}", resource=rng.choice(classes), priority=rng.randrange(3))
            for i in range(80)
        ]
        created = await submit(store, registry, specs)
        # A third of the tasks wait for a retry timer that has run out, a third for one that
        # has not (as a failed attempt leaves them: pending, next_run_at set).
        timers = {}
        for task_id in created.task_ids.values():
            r = rng.random()
            if r < 1 / 3:
                timers[task_id] = clock.t - rng.uniform(0.5, 50)
            elif r < 2 / 3:
                timers[task_id] = clock.t + rng.uniform(0.5, 50)
        with sqlite3.connect(db_path) as conn:
            conn.executemany(
                "UPDATE task SET next_run_at = ? WHERE id = ?", [(v, k) for k, v in timers.items()]
            )
        pending = {t.key: t for t in await store.list_tasks(created.run_id)}
        assert sum(t.next_run_at is not None for t in pending.values()) == len(timers)
        rounds: list[tuple[dict[str, int] | None, int]] = [
            ({"gpu": 1, "io": 2}, 10),
            ({"net": 5}, 2),
            ({"cpu": 1, "gpu": 1, "io": 1, "net": 1}, 4),
            (None, 3),
            ({"io": 9, "net": 9}, 5),
            ({"gpu": 0, "cpu": 2}, 10),
        ]
        promoted = False  # the first claim makes the retries that came due claimable
        for slots, limit in rounds:
            want = expected_claims(pending, slots, limit, clock.t)
            # Before that claim, a due retry of any class is reason enough to take the lock.
            assert await store.has_claimable(slots) == (bool(want) or not promoted)
            got = [c.task.key for c in await store.claim("w", slots=slots, limit=limit)]
            assert got == want, (slots, limit)
            promoted = True
            for key in got:
                del pending[key]
        # What still waits for its timer has not been taken (and the rounds did take some).
        assert any(t.next_run_at and t.next_run_at > clock.t for t in pending.values())
        assert len(pending) < len(specs)
        # Every timer runs out: the rest come in claim order, one class after another too.
        clock.t += 60
        for cls in classes:
            want = expected_claims(pending, {cls: 100}, 100, clock.t)
            got = [c.task.key for c in await store.claim("w", slots={cls: 100}, limit=100)]
            assert got == want
            for key in got:
                del pending[key]
        assert pending == {}
        assert await store.claim("w") == []
    finally:
        await store.close()


async def test_a_retry_is_not_claimed_before_its_time_and_is_after(
    db_path: Path, registry: TaskTypeRegistry
) -> None:
    clock = ManualClock()
    store = TaskStore(
        create_sqlite_engine(db_path),
        clock=clock,
        backoff=BackoffPolicy(base=10, factor=2, cap=100, jitter=0.0),
    )
    try:
        created = await submit(
            store,
            registry,
            [
                noop("first", resource="gpu", priority=9, max_retries=1),
                noop("other", resource="gpu", priority=1),
                noop("cpu", resource="cpu", priority=5),
            ],
        )
        [first] = await store.claim("w", slots={"gpu": 1})
        assert first.task.key == "first"
        outcome = await store.fail(first.id, first.lease_token, "hiccup", ErrorType.IO_ERROR)
        assert outcome.retried and outcome.next_run_at == pytest.approx(clock.t + 10)
        assert await store.next_retry_at() == pytest.approx(clock.t + 10)
        # Waiting for its timer, it does not hold back the tasks ranked after it.
        [other] = await store.claim("w", slots={"gpu": 1, "io": 1})
        assert other.task.key == "other"
        clock.t += 9.9
        assert not await store.has_claimable({"gpu": 1})
        assert await store.claim("w", slots={"gpu": 1, "io": 4}) == []
        clock.t += 0.2
        assert await store.has_claimable({"gpu": 1})
        assert await store.next_retry_at() == pytest.approx(clock.t - 0.1)
        [again] = await store.claim("w", slots={"gpu": 1, "cpu": 1}, limit=1)
        assert (again.task.key, again.task.attempt, again.task.next_run_at) == ("first", 2, None)
        assert await store.next_retry_at() is None
        [cpu] = await store.claim("w", slots={"gpu": 1, "cpu": 1})
        assert cpu.task.key == "cpu"
        task = await store.get_task(created.task_ids["first"])
        assert task.status is TaskStatus.CLAIMED and task.retry_count == 1
    finally:
        await store.close()


async def test_permanent_failure_cascades_downstream(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(
        store,
        registry,
        [noop("a", max_retries=5), noop("b", "a"), noop("c", "b"), noop("side")],
    )
    claimed = {c.task.key: c for c in await store.claim("w", limit=5)}
    a = claimed["a"]
    outcome = await store.fail(a.id, a.lease_token, "bad payload", ErrorType.PAYLOAD_ERROR)
    assert outcome.applied and not outcome.retried
    ids = created.task_ids
    assert set(outcome.cascaded) == {ids["b"], ids["c"]}
    for key in "bc":
        t = await store.get_task(ids[key])
        assert (t.status, t.error_type) == (TaskStatus.CANCELLED, "DEPENDENCY_FAILED")
    assert (await store.get_task(ids["side"])).status is TaskStatus.CLAIMED
    run = await store.get_run(created.run_id)
    assert (run.status, run.failed_tasks, run.cancelled_tasks) == (RunStatus.FAILED, 1, 2)


async def test_fail_without_retries_left_is_final(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    await submit(store, registry, [noop("a", max_retries=1), noop("b", max_retries=1)])
    [a, b] = await store.claim("w", limit=2)
    await store.report_progress(a.id, a.lease_token, status_text="downloading 40 %")
    outcome = await store.fail(a.id, a.lease_token, "x", retryable=False)
    assert not outcome.retried
    failed = await store.get_task(a.id)
    # The last progress no longer stands: it says it failed, and why it is not retried.
    assert (failed.status, failed.status_text) == (TaskStatus.FAILED, "failed, not retried")
    assert (await store.fail(b.id, b.lease_token, "y", ErrorType.IO_ERROR)).retried
    with raw.connect() as conn:  # due now
        conn.execute("UPDATE task SET next_run_at = 0 WHERE id = ?", (b.id,))
    [again] = await store.claim("w")
    assert not (await store.fail(again.id, again.lease_token, "y", ErrorType.IO_ERROR)).retried
    last = await store.get_task(b.id)
    assert (last.status, last.status_text) == (
        TaskStatus.FAILED,
        "failed: no retries left (1 of 1 used)",
    )


async def test_finishing_writes_are_fenced_by_the_lease(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    await submit(store, registry, [noop("a")])
    [a] = await store.claim("w")
    assert not await store.complete(a.id, "not-the-token", {"x": 1})
    assert not (await store.fail(a.id, "not-the-token", "boom")).applied
    assert (await store.get_task(a.id)).status is TaskStatus.CLAIMED
    assert await store.complete(a.id, a.lease_token, {"x": 1})
    # A late second write of the same attempt changes nothing.
    assert not await store.complete(a.id, a.lease_token, {"x": 2})
    assert not (await store.fail(a.id, a.lease_token, "late")).applied
    task = await store.get_task(a.id)
    assert (task.status, task.result, task.lease_token) == (TaskStatus.COMPLETED, {"x": 1}, None)


async def test_cancel_pending_claimed_and_running(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [noop("a"), noop("b"), noop("c"), noop("d", "c")])
    ids = created.task_ids
    claimed = {c.task.key: c for c in await store.claim("w", limit=2)}
    assert set(claimed) == {"a", "b"}
    await store.mark_running(claimed["b"].id, claimed["b"].lease_token)

    pending = await store.cancel(ids["c"])
    assert set(pending.cancelled) == {ids["c"], ids["d"]} and pending.was_running == ()
    assert (await store.get_task(ids["d"])).error_type == "DEPENDENCY_FAILED"
    assert (await store.get_task(ids["c"])).error_type == "CANCELLED"

    was_claimed = await store.cancel(ids["a"])
    assert was_claimed.cancelled == (ids["a"],) and was_claimed.was_running == (ids["a"],)
    running = await store.cancel(ids["b"])
    assert running.was_running == (ids["b"],)
    # The late result of the running attempt cannot overwrite the cancel.
    assert not await store.complete(ids["b"], claimed["b"].lease_token, {"late": True})
    task = await store.get_task(ids["b"])
    assert (task.status, task.result) == (TaskStatus.CANCELLED, None)
    run = await store.get_run(created.run_id)
    assert (run.status, run.cancelled_tasks) == (RunStatus.CANCELLED, 4)
    with pytest.raises(InvalidState, match="already cancelled"):
        await store.cancel(ids["a"])
    with pytest.raises(NotFound):
        await store.cancel("no-such-task")


async def test_cancel_run_cancels_every_unfinished_task(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [noop("a"), noop("b", "a"), noop("c", "b")])
    [a] = await store.claim("w")
    await store.complete(a.id, a.lease_token)
    outcome = await store.cancel_run(created.run_id)
    assert set(outcome.cancelled) == {created.task_ids["b"], created.task_ids["c"]}
    run = await store.get_run(created.run_id)
    assert (run.status, run.done_tasks, run.cancelled_tasks) == (RunStatus.CANCELLED, 1, 2)
    assert (await store.cancel_run(created.run_id)).cancelled == ()
    with pytest.raises(NotFound):
        await store.cancel_run("nope")


async def test_retry_revives_the_task_and_its_cascade(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [noop("a"), noop("b", "a"), noop("c", "b")])
    ids = created.task_ids
    [a] = await store.claim("w")
    await store.fail(a.id, a.lease_token, "boom", ErrorType.PAYLOAD_ERROR)
    assert (await store.get_run(created.run_id)).status is RunStatus.FAILED
    revived = await store.retry(ids["a"])
    assert set(revived) == set(ids.values())
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    assert all(t.status is TaskStatus.PENDING and t.error is None for t in tasks.values())
    assert [tasks[k].unmet_deps for k in "abc"] == [0, 1, 1]
    assert (await store.get_run(created.run_id)).status is RunStatus.PENDING
    # The run goes through to the end after the retry.
    while claimed := await store.claim("w"):
        await store.complete(claimed[0].id, claimed[0].lease_token)
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED
    with pytest.raises(InvalidState, match="only failed or cancelled"):
        await store.retry(ids["a"])


async def test_retry_leaves_cancelled_a_task_that_still_waits_for_another_failure(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """``join`` needs ``a`` and ``b``; both fail. Retrying ``a`` alone must not make ``join``
    (nor what follows it) pending behind the still-failed ``b``: nothing could ever claim it.
    Retrying ``b`` then brings it back."""
    created = await submit(
        store, registry, [noop("a"), noop("b"), noop("join", "a", "b"), noop("after", "join")]
    )
    ids = created.task_ids
    for c in await store.claim("w", limit=2):
        await store.fail(c.id, c.lease_token, "boom", ErrorType.PAYLOAD_ERROR)
    assert set(await store.retry(ids["a"])) == {ids["a"]}
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    assert tasks["join"].status is TaskStatus.CANCELLED
    assert tasks["after"].status is TaskStatus.CANCELLED
    assert set(await store.retry(ids["b"])) == {ids["b"], ids["join"], ids["after"]}
    while claimed := await store.claim("w"):
        await store.complete(claimed[0].id, claimed[0].lease_token)
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED


async def test_retry_run_picks_the_roots_not_the_cascade(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [noop("a"), noop("b", "a")])
    await store.cancel(created.task_ids["a"])
    assert set(await store.retry_run(created.run_id)) == set(created.task_ids.values())
    with pytest.raises(InvalidState, match="no failed or cancelled task"):
        await store.retry_run(created.run_id)


async def test_dynamic_fan_out_added_with_the_completion(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [noop("split"), noop("after", "split")])
    [split] = await store.claim("w")
    chunks = [noop(f"chunk{i}", "split") for i in range(3)]
    merge = noop("merge", *(f"chunk{i}" for i in range(3)))
    new = prepare_tasks(_specs([*chunks, merge]), registry, known=frozenset(created.task_ids))
    assert await store.complete(split.id, split.lease_token, {"chunks": 3}, new_tasks=new)
    run = await store.get_run(created.run_id)
    assert (run.total_tasks, run.pending_tasks) == (6, 5)
    claimed = await store.claim("w", limit=10)
    assert sorted(c.task.key for c in claimed) == ["after", "chunk0", "chunk1", "chunk2"]
    for c in claimed:
        await store.complete(c.id, c.lease_token)
    [m] = await store.claim("w")
    assert m.task.key == "merge" and m.task.unmet_deps == 0
    await store.complete(m.id, m.lease_token)
    assert (await store.get_run(created.run_id)).status is RunStatus.COMPLETED


def _specs(tasks: list[dict[str, Any]]) -> list[TaskSpec]:
    return [TaskSpec.model_validate(t) for t in tasks]


async def test_fan_out_rejects_a_key_the_run_already_has(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [noop("split"), noop("x")])
    claimed = {c.task.key: c for c in await store.claim("w", limit=2)}
    new = prepare_tasks(_specs([noop("x", "split")]), registry, known=frozenset(created.task_ids))
    split = claimed["split"]
    with pytest.raises(InvalidState, match="already has tasks"):
        await store.complete(split.id, split.lease_token, new_tasks=new)
    # The whole completion rolled back with it.
    assert (await store.get_task(split.id)).status is TaskStatus.CLAIMED


async def test_idempotency_key_dedupes_only_active_tasks(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    first = await submit(store, registry, [noop("a", idempotency_key="mat-1/transcode")])
    again = await submit(store, registry, [noop("a", idempotency_key="mat-1/transcode")])
    assert again.deduplicated and again.run_id == first.run_id
    assert again.task_ids == first.task_ids
    [a] = await store.claim("w")
    dup_while_claimed = await submit(
        store, registry, [noop("a", idempotency_key="mat-1/transcode")]
    )
    assert dup_while_claimed.deduplicated
    await store.complete(a.id, a.lease_token)
    fresh = await submit(store, registry, [noop("a", idempotency_key="mat-1/transcode")])
    assert not fresh.deduplicated and fresh.run_id != first.run_id


async def test_create_runs_submits_many_in_one_commit_and_dedupes_as_create_run(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """A folder's submissions in one transaction: one commit for all; a duplicate of an active
    task, or of one earlier in the same call, is that task's run, as one by one."""
    active = await submit(store, registry, [noop("a", idempotency_key="mat-0/t")])
    specs = [
        [noop("a", idempotency_key="mat-1/t")],
        [noop("a", idempotency_key="mat-0/t")],  # the active one
        [noop("a", "b"), noop("b")],  # no key: always new
        [noop("a", idempotency_key="mat-1/t")],  # the first of this call
    ]
    with counting_commits(store.engine) as commits:
        created = await store.create_runs(
            [prepare_run(parse_spec({"tasks": tasks}), registry) for tasks in specs]
        )
    assert len(commits) == 1
    assert [c.deduplicated for c in created] == [False, True, False, True]
    assert created[1].run_id == active.run_id and created[1].task_ids == active.task_ids
    assert created[3].run_id == created[0].run_id
    assert set(created[2].task_ids) == {"a", "b"}
    runs = {r.id for r in await store.list_runs()}
    assert runs == {active.run_id, created[0].run_id, created[2].run_id}
    assert await store.create_runs([]) == []


async def test_heartbeat_reports_held_paused_and_lost(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    await submit(store, registry, [noop("a"), noop("b"), noop("c")])
    a, b, c = await store.claim("w", limit=3, start=True)
    await store.set_paused(b.id, True)
    await store.cancel(c.id)
    before = (await store.get_task(a.id)).lease_until
    beat = await store.heartbeat("w", [a.id, b.id, c.id], lease_seconds=120)
    assert beat.held == {a.id, b.id} and beat.paused == {b.id} and beat.lost == {c.id}
    after = (await store.get_task(a.id)).lease_until
    assert before is not None and after is not None and after > before
    assert (await store.heartbeat("other", [a.id])).lost == {a.id}
    empty = await store.heartbeat("w", [])
    assert not empty.held and not empty.lost


async def test_group_commit_completes_each_with_its_own_fence(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [noop("a"), noop("b"), noop("c", "a", "b")])
    a, b = await store.claim("w", limit=2)
    done = await store.complete_many([(a.id, a.lease_token, {"a": 1}), (b.id, "stale", {"b": 1})])
    assert done == [True, False]
    assert (await store.get_task(created.task_ids["c"])).unmet_deps == 1


async def test_the_beginning_of_an_id_names_its_run_or_task_when_only_one_starts_so(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """The window and ``fredica runs`` show an id's first 8 characters: those (or fewer, or
    more) name the one run or task whose id starts with them; several are listed; what
    starts no id, or holds a LIKE wildcard, is not found."""
    created = await submit(store, registry, [noop(f"t{i}") for i in range(40)])
    run = await store.get_run(created.run_id[:8])
    assert run.id == created.run_id
    task_id = created.task_ids["t0"]
    assert (await store.get_task(task_id[:10])).id == task_id
    assert (await store.find(task_id[:12])).id == task_id
    # 40 ids over 16 first characters: some first character begins several of them.
    first = Counter(t[0] for t in created.task_ids.values()).most_common(1)[0][0]
    starting = sorted(t for t in created.task_ids.values() if t[0] == first)
    listed = ", ".join(starting[:5]) + (", …" if len(starting) > 5 else "")
    with pytest.raises(AmbiguousId) as caught:
        await store.get_task(first)
    assert str(caught.value) == (
        f"{first!r} is the beginning of more than one task id: {listed}; type more of it"
    )
    with pytest.raises(AmbiguousId, match="run or task id"):
        await store.find(first)
    for nothing in ("zzzz", "%", "_", ""):
        with pytest.raises(NotFound):
            await store.get_task(nothing)


async def test_reads_of_unknown_ids_say_so(store: TaskStore) -> None:
    with pytest.raises(NotFound, match="no task"):
        await store.get_task("x")
    with pytest.raises(NotFound, match="no run"):
        await store.get_run("x")
    with pytest.raises(NotFound, match="no task or run"):
        await store.find("x")
    with pytest.raises(NotFound):
        await store.list_tasks("x")
    with pytest.raises(NotFound):
        await store.retry("x")
    with pytest.raises(NotFound):
        await store.set_paused("x", True)


async def test_find_and_list_runs(store: TaskStore, registry: TaskTypeRegistry) -> None:
    one = await submit(store, registry, [noop("a")])
    two = await submit(store, registry, [noop("a")])
    assert [r.id for r in await store.list_runs()] == [two.run_id, one.run_id]
    assert (await store.find(one.run_id)).id == one.run_id
    assert (await store.find(one.task_ids["a"])).id == one.task_ids["a"]


async def test_unmet_deps_invariant_holds_after_mixed_operations(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    created = await submit(
        store,
        registry,
        [noop("a"), noop("b"), noop("c", "a"), noop("d", "a", "b"), noop("e", "c", "d")],
    )
    claimed = {c.task.key: c for c in await store.claim("w", limit=5)}
    await store.complete(claimed["a"].id, claimed["a"].lease_token)
    await store.cancel(claimed["b"].id)
    await store.retry(created.task_ids["b"])
    mismatches = rows(
        raw,
        """
        SELECT * FROM (SELECT t.key, t.unmet_deps, (
            SELECT count(*) FROM task_dependency d JOIN task p ON p.id = d.depends_on_id
            WHERE d.task_id = t.id AND p.status != 'completed') AS actual
        FROM task t) AS c WHERE c.unmet_deps != c.actual
        """,
    )
    assert mismatches == []


async def test_queued_types_are_those_of_unfinished_tasks_not_held(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    sleep = {"key": "s", "type": "SLEEP", "payload": {"seconds": 1}}
    held = {"key": "h", "type": "SLEEP_SUBPROCESS", "payload": {"seconds": 1}}
    created = await submit(store, registry, [noop("a"), sleep, held])
    assert await store.queued_types() == {"NOOP", "SLEEP", "SLEEP_SUBPROCESS"}
    await store.set_paused(created.task_ids["h"], True)
    [c] = await store.claim("w")  # the first submitted: the NOOP
    assert c.task.type == "NOOP"
    assert await store.queued_types() == {"NOOP", "SLEEP"}  # claimed: still to run
    await store.complete(c.id, c.lease_token, {})
    assert await store.queued_types() == {"SLEEP"}  # completed, or held: not queued


HOSTILE = {
    "path": "/media/caf\udce9.avi",  # a Latin-1 file name, as Python holds it
    "nul": "a\x00b",
    "escape": "\U0010fffd000041 and \\u0000 as text",
    "emoji": "😀",
    "caf\udce9": ["\x00", {"\udc80": None}],
}


async def test_any_string_a_job_returns_is_kept_as_it_was(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """Results, checkpoints and payloads keep every string — NUL, lone surrogates, the
    characters PostgreSQL's jsonb would refuse — and messages keep what a person can read."""
    created = await submit(
        store, registry, [noop("a", payload={"name": HOSTILE["path"]}), noop("b", "a")]
    )
    [a] = await store.claim("w")
    assert a.task.payload["name"] == HOSTILE["path"]
    assert await store.report_progress(a.id, a.lease_token, checkpoint=HOSTILE)
    assert (await store.get_task(a.id)).checkpoint == HOSTILE
    assert await store.complete(a.id, a.lease_token, HOSTILE)
    assert (await store.get_task(a.id)).result == HOSTILE
    [b] = await store.claim("w")
    assert b.upstream == {"a": HOSTILE}
    changes = await store.changes_since(0)
    [seen] = [c.record for c in changes.changes if getattr(c.record, "id", None) == a.id]
    assert seen.result == HOSTILE
    outcome = await store.fail(b.id, b.lease_token, "bad\x00byte in caf\udce9", "IO_ERROR")
    assert outcome.applied
    failed = await store.get_task(b.id)
    assert failed.error == "bad\ufffdbyte in caf\ufffd"
    run = await store.get_run(created.run_id)
    assert (run.done_tasks, run.failed_tasks) == (1, 1)


async def test_data_changed_tells_another_programs_commit(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    """What an idle engine looks at every half second. Another program's commit is seen
    once, and so is a submission through the same store (a window's, a watch folder's); on
    SQLite an engine's bookkeeping of its attempts (claims, progress, completions) is not,
    so it does not make the engine read its control state and look for work again."""
    assert not await store.data_changed()  # the baseline
    await submit(store, registry, [noop("a")])
    assert await store.data_changed()
    [a] = await store.claim("w")
    assert await store.report_progress(a.id, a.lease_token, progress=40.0)
    own = await store.data_changed()
    assert own is (raw.dialect == "postgresql")  # its counter moves with every write
    assert not await store.data_changed()
    with raw.connect() as conn:  # a pause from another process, as the CLI writes it
        conn.execute("UPDATE task SET is_paused = ? WHERE id = ?", (True, a.id))
    assert await store.data_changed()
    assert not await store.data_changed()  # seen once
    await store.complete(a.id, a.lease_token, {})
    assert await store.data_changed() is (raw.dialect == "postgresql")
