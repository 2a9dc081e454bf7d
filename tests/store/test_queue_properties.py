"""Property test on the real store: random DAGs, then random sequences of what users and
workers do to them (claim and complete, claim and fail, cancel, retry a task, retry a run,
fan out). After every step nothing is stuck: every pending task is claimable now, waits for a
dependency that can still complete, or is held; no run is pending or running with nothing
that can move it; counters and ``unmet_deps`` agree with the tasks
(see tests/support/invariants.py).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.invariants import queue_problems
from tests.support.rawdb import RawDB
from tests.unit.test_dag_properties import Graph, dags
from workers.db import create_sqlite_engine
from workers.errors import InvalidState
from workers.records import Completion
from workers.spec import TaskSpec, parse_spec, prepare_run, prepare_tasks
from workers.states import TaskStatus
from workers.store import TaskStore
from workers.tasktypes import builtin_registry

ACTIONS = ["complete", "fail", "fan_out", "cancel", "retry", "retry_run", "pause", "resume"]
Step = tuple[str, int]


async def _play(db: Path, graph: Graph, steps: list[Step]) -> None:
    registry = builtin_registry()
    store = TaskStore(create_sqlite_engine(db))
    try:
        spec = {
            "tasks": [{"key": k, "type": "NOOP", "depends_on": deps} for k, deps in graph.items()]
        }
        created = await store.create_run(prepare_run(parse_spec(spec), registry))
        keys = {v: k for k, v in created.task_ids.items()}
        ids = list(keys)
        fanned = 0
        for action, n in steps:
            target = ids[n % len(ids)]
            if action in ("complete", "fail", "fan_out"):
                claimed = await store.claim("w", limit=1 + n % 3)
                for c in claimed:
                    if action == "fail":
                        await store.fail(c.id, c.lease_token, "boom", retryable=False)
                    elif action == "fan_out":
                        # A child that depends on its parent and on a random task of the run
                        # (which may have failed or been cancelled meanwhile).
                        fanned += 1
                        deps = sorted({c.task.key or "", keys[target]})
                        child = TaskSpec(key=f"fan{fanned}", type="NOOP", depends_on=deps)
                        new = prepare_tasks([child], registry, known=frozenset(deps))
                        await store.tick(
                            "w", completions=[Completion(c.id, c.lease_token, {}, new)]
                        )
                    else:
                        await store.complete(c.id, c.lease_token, {})
            else:
                try:
                    if action == "cancel":
                        await store.cancel(target)
                    elif action == "retry":
                        await store.retry(target)
                    elif action == "retry_run":
                        await store.retry_run(created.run_id)
                    else:
                        await store.set_paused(target, action == "pause")
                except InvalidState:
                    pass  # not in a state that allows it: nothing written
            problems = queue_problems(db)
            assert problems == [], f"after {action} {n}: {problems}"
            keys = {t.id: t.key or "" for t in await store.list_tasks(created.run_id)}
            ids = list(keys)
        # Whatever happened, resuming and retrying everything lets the run finish.
        await store.set_run_paused(created.run_id, False)
        run = await store.get_run(created.run_id)
        if run.failed_tasks or run.cancelled_tasks:
            await store.retry_run(created.run_id)
        for _ in range(10 * len(ids)):
            claimed = await store.claim("w", limit=10)
            if not claimed:
                break
            for c in claimed:
                await store.complete(c.id, c.lease_token, {})
        tasks = await store.list_tasks(created.run_id)
        assert {t.status for t in tasks} == {TaskStatus.COMPLETED}
        assert queue_problems(db) == []
    finally:
        await store.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    graph=dags(max_nodes=12),
    steps=st.lists(st.tuples(st.sampled_from(ACTIONS), st.integers(0, 50)), max_size=25),
)
def test_nothing_is_ever_stuck(migrated_template: Path, graph: Graph, steps: list[Step]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "fredica.db"
        shutil.copyfile(migrated_template, db)
        asyncio.run(_play(db, graph, steps))


async def test_retry_of_a_task_brings_back_the_upstream_it_needs(
    store: TaskStore, raw: RawDB
) -> None:
    """Cancel ``a``, then retry ``b`` (which depends on it): ``a`` comes back too, with the
    other tasks its cancel had cascaded to — otherwise ``b`` would wait for ever."""
    spec = {
        "tasks": [
            {"key": "a", "type": "NOOP"},
            {"key": "b", "type": "NOOP", "depends_on": ["a"]},
            {"key": "c", "type": "NOOP", "depends_on": ["a"]},
            {"key": "z", "type": "NOOP"},
        ]
    }
    created = await store.create_run(prepare_run(parse_spec(spec), builtin_registry()))
    ids = created.task_ids
    await store.cancel(ids["a"])
    await store.cancel(ids["z"])
    revived = await store.retry(ids["b"])
    assert sorted(revived) == sorted([ids["a"], ids["b"], ids["c"]])
    status = {t.key: t.status for t in await store.list_tasks(created.run_id)}
    assert status == {"a": "pending", "b": "pending", "c": "pending", "z": "cancelled"}
    assert queue_problems(raw) == []
    claimed = await store.claim("w", limit=5)
    assert [c.task.key for c in claimed] == ["a"]


async def test_a_fan_out_child_of_a_failed_task_is_cancelled_with_it(
    store: TaskStore, raw: RawDB
) -> None:
    registry = builtin_registry()
    spec = {"tasks": [{"key": "p", "type": "NOOP"}, {"key": "x", "type": "NOOP"}]}
    created = await store.create_run(prepare_run(parse_spec(spec), registry))
    claimed = {c.task.key: c for c in await store.claim("w", limit=2)}
    await store.fail(claimed["x"].id, claimed["x"].lease_token, "boom", retryable=False)
    child = prepare_tasks(
        [TaskSpec(key="late", type="NOOP", depends_on=["p", "x"])],
        registry,
        known=frozenset({"p", "x"}),
    )
    p = claimed["p"]
    await store.tick("w", completions=[Completion(p.id, p.lease_token, {}, child)])
    late = {t.key: t for t in await store.list_tasks(created.run_id)}["late"]
    assert (late.status, late.error_type) == (TaskStatus.CANCELLED, "DEPENDENCY_FAILED")
    assert queue_problems(raw) == []
    await store.retry(claimed["x"].id)  # the retry brings it back
    late = await store.get_task(late.id)
    assert late.status is TaskStatus.PENDING and late.unmet_deps == 1
