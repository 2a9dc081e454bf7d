"""A heartbeat (or a read of what other processes wrote) answers about the attempts that ran
when it was asked. An attempt claimed while the answer was on its way is not in it, and must
not be taken for lost: stopped without a write, its task would stay ``running`` in the queue
and ``worker --until-idle`` would exit with it so. Real engine, real SQLite file; the store's
heartbeat is held back until a new attempt has been claimed, as a busy store thread does.
(The other such read, of what other processes wrote, is made by the engine's loop while it
waits: nothing is claimed meanwhile.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.engine.test_engine import engine_for, submit
from workers.records import HeartbeatOutcome
from workers.states import TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


async def test_an_attempt_claimed_during_a_heartbeat_is_not_taken_for_lost(
    store: TaskStore, registry: TaskTypeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await submit(
        store, registry, [{"key": "a", "type": "SLEEP", "payload": {"seconds": 1.5}}]
    )
    engine = engine_for(store, max_workers=2, heartbeat_interval=0.2)
    real = store.heartbeat
    held_back: list[list[str]] = []

    async def slow(worker_id: str, task_ids: Any, *args: Any) -> HeartbeatOutcome:
        asked = list(task_ids)
        answer = await real(worker_id, asked, *args)
        if not held_back:
            # The first answer arrives only once another attempt has been claimed.
            held_back.append(asked)
            second = await submit(
                store, registry, [{"key": "b", "type": "SLEEP", "payload": {"seconds": 0.5}}]
            )
            engine.wake()
            b = second.task_ids["b"]
            for _ in range(500):
                if b in engine.running_ids:
                    break
                await asyncio.sleep(0.01)
            assert b in engine.running_ids and b not in asked
        return answer

    monkeypatch.setattr(store, "heartbeat", slow)
    await asyncio.wait_for(engine.run(until_idle=True), 20)
    assert held_back, "the slowed call never ran"
    for run in await store.list_runs():
        assert run.status.value == "completed", run
    [*tasks] = [t for run in await store.list_runs() for t in await store.list_tasks(run.id)]
    assert [t.status for t in tasks] == [TaskStatus.COMPLETED] * 2
    assert first.task_ids["a"] in {t.id for t in tasks}
