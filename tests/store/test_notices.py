"""Notices of finished runs: written in the transaction that ends the run, taken once."""

from __future__ import annotations

from typing import Any

from tests.support.rawdb import RawDB
from workers.records import CreatedRun
from workers.spec import parse_spec, prepare_run
from workers.states import ErrorType
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


async def submit(store: TaskStore, registry: TaskTypeRegistry, *keys: str) -> CreatedRun:
    spec = {"tasks": [{"key": k, "type": "NOOP"} for k in keys]}
    return await store.create_run(prepare_run(parse_spec(spec), registry))


async def finish_all(store: TaskStore) -> None:
    while claimed := await store.claim("w"):
        await store.complete(claimed[0].id, claimed[0].lease_token)


def notices(raw: RawDB) -> list[tuple[Any, ...]]:
    return [
        (k, r, bool(shown))
        for k, r, shown in raw.rows(
            "SELECT kind, workflow_run_id, shown_at IS NOT NULL FROM notice ORDER BY id"
        )
    ]


async def test_a_run_that_completes_leaves_one_notice_taken_once(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    created = await submit(store, registry, "a", "b")
    [a] = await store.claim("w")
    await store.complete(a.id, a.lease_token)
    assert notices(raw) == []  # half done: nothing to tell
    await finish_all(store)
    assert notices(raw) == [("run_completed", created.run_id, False)]
    [taken] = await store.take_notices()
    assert (taken.kind, taken.workflow_run_id, taken.shown_at is not None) == (
        "run_completed",
        created.run_id,
        True,
    )
    assert await store.take_notices() == []  # never twice
    assert notices(raw) == [("run_completed", created.run_id, True)]


async def test_a_failed_run_then_retried_to_completion_leaves_the_latest_end_only(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    created = await submit(store, registry, "a")
    [a] = await store.claim("w")
    await store.fail(a.id, a.lease_token, "boom", ErrorType.PAYLOAD_ERROR)
    assert notices(raw) == [("run_failed", created.run_id, False)]
    await store.retry(a.id)
    await finish_all(store)
    # The failure was never shown: the completion replaces it.
    assert notices(raw) == [("run_completed", created.run_id, False)]


async def test_a_shown_notice_stays_and_a_later_end_adds_another(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    created = await submit(store, registry, "a")
    [a] = await store.claim("w")
    await store.fail(a.id, a.lease_token, "boom", ErrorType.PAYLOAD_ERROR)
    await store.take_notices()
    await store.retry(a.id)
    await finish_all(store)
    assert notices(raw) == [
        ("run_failed", created.run_id, True),
        ("run_completed", created.run_id, False),
    ]


async def test_a_cancelled_run_leaves_no_notice(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    created = await submit(store, registry, "a")
    await store.cancel_run(created.run_id)
    assert notices(raw) == []


async def test_removing_a_run_removes_its_notices(
    store: TaskStore, registry: TaskTypeRegistry, raw: RawDB
) -> None:
    created = await submit(store, registry, "a")
    kept = await submit(store, registry, "b")
    await finish_all(store)
    assert len(notices(raw)) == 2
    await store.delete_run(created.run_id)
    assert notices(raw) == [("run_completed", kept.run_id, False)]
