"""Start-up recovery on a real database: what a dead session left behind is taken over."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fredica_app.errors import DatabaseLocked
from fredica_app.lock import DataDirLock
from tests.support.rawdb import raw_of
from workers.engine import WorkerEngine
from workers.executors.diagnostic import NoopExecutor, SleepExecutor
from workers.records import WorkerInfo
from workers.spec import parse_spec, prepare_run
from workers.states import ErrorType, RunStatus, TaskStatus
from workers.store import TaskStore
from workers.tasktypes import TaskTypeRegistry


async def submit(store: TaskStore, registry: TaskTypeRegistry, tasks: list[dict[str, Any]]) -> Any:
    return await store.create_run(prepare_run(parse_spec({"tasks": tasks}), registry))


def sleep(key: str, seconds: float, *deps: str, **kw: Any) -> dict[str, Any]:
    return {
        "key": key,
        "type": "SLEEP",
        "payload": {"seconds": seconds},
        "depends_on": list(deps),
        **kw,
    }


def task(key: str, type_: str, *deps: str, **kw: Any) -> dict[str, Any]:
    return {
        "key": key,
        "type": type_,
        "payload": {"seconds": 1},
        "depends_on": list(deps),
        **kw,
    }


def set_interruptions(store: TaskStore, task_id: str, n: int, charged: int | None = None) -> None:
    """``n`` interruptions in all, ``charged`` of them (default: all) charged."""
    with raw_of(store).connect() as conn:
        conn.execute(
            "UPDATE task SET interruptions = ?, charged_interruptions = ? WHERE id = ?",
            (n, n if charged is None else charged, task_id),
        )


async def test_recovery_of_each_kind_of_unfinished_task(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """Nothing here has a retry (max_retries 0, the default): an interruption uses none."""
    created = await submit(
        store,
        registry,
        [
            sleep("claimed", 1),
            sleep("resumable", 1),
            # Not resumable in this recovery: it starts again from the beginning.
            task("not_resumable", "SLEEP_SUBPROCESS"),
            sleep("released", 1),  # stopped by a graceful shutdown
            sleep("worn", 1),  # at its limit: this crash is one too many
            sleep("worn_released", 1),  # at its limit too, but stopped gracefully
            sleep("paused", 1),
            sleep("after_worn", 1, "worn"),
            sleep("waiting", 1, "resumable"),
        ],
    )
    ids = created.task_ids
    held = {c.task.key: c for c in await store.claim("dead-worker", limit=7)}
    assert set(held) == {
        "claimed",
        "resumable",
        "not_resumable",
        "released",
        "worn",
        "worn_released",
        "paused",
    }
    for key in set(held) - {"claimed"}:
        await store.mark_running(held[key].id, held[key].lease_token)
    for key in ("resumable", "not_resumable"):
        await store.report_progress(
            ids[key], held[key].lease_token, progress=40, checkpoint={"slept": 0.4}
        )
    await store.set_paused(ids["paused"], True)
    set_interruptions(store, ids["worn"], 5)
    set_interruptions(store, ids["worn_released"], 5)
    released = [(ids[k], held[k].lease_token) for k in ("released", "worn_released")]
    assert await store.release_for_shutdown(released) == 2

    report = await store.recover("session-2", resumable_types=["SLEEP"], in_process_types=["SLEEP"])
    assert (report.resumed, report.restarted, report.requeued, report.held) == (3, 1, 1, 0)
    assert (report.kept_paused, report.failed, report.orphaned, report.total) == (1, 1, 0, 7)
    assert report.failed_ids == (ids["worn"],)
    # What a crash left (claimed, running, worn), not what a graceful stop released or a
    # pause held: what the app tells the user about.
    assert report.crashed == 4
    assert report.summary == (
        "3 resumed, 1 restarted from the start, 0 held, 1 failed, "
        "1 requeued (never started), 1 kept paused"
    )

    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    state = {k: (t.status, t.retry_count, t.interruptions, t.checkpoint) for k, t in tasks.items()}
    P = TaskStatus.PENDING
    assert state["claimed"] == (P, 0, 0, None)  # never started: nothing counted
    # Running when the app crashed: back to pending with its checkpoint, no retry used, one
    # interruption counted.
    assert state["resumable"] == (P, 0, 1, {"slept": 0.4})
    assert tasks["resumable"].progress == 40
    # Not resumable: from the start — checkpoint and progress cleared; no retry used either.
    assert state["not_resumable"] == (P, 0, 1, None)
    assert tasks["not_resumable"].progress == 0
    # A graceful stop is not counted, not even at the limit.
    assert state["released"] == (P, 0, 0, None)
    assert state["worn_released"] == (P, 0, 5, None)
    assert tasks["paused"].status is P and tasks["paused"].is_paused
    assert tasks["paused"].interruptions == 0
    for key in ("claimed", "resumable", "not_resumable", "released", "worn_released"):
        assert not tasks[key].is_paused
        assert tasks[key].lease_token is None and tasks[key].worker_id is None
    assert tasks["resumable"].status_text == "resuming after a restart"
    assert tasks["not_resumable"].status_text == "starting again after a restart"
    worn = tasks["worn"]
    assert (worn.status, worn.error_type, worn.interruptions, worn.retry_count) == (
        TaskStatus.FAILED,
        ErrorType.INTERRUPTED,
        6,
        0,
    )
    assert worn.error == (
        "Fredica stopped 6 times while this task ran; it may be what makes it stop: "
        "retry it to try again"
    )
    assert tasks["after_worn"].error_type == ErrorType.DEPENDENCY_FAILED
    assert tasks["waiting"].status is TaskStatus.PENDING
    run = await store.get_run(created.run_id)
    assert (run.status, run.pending_tasks, run.running_tasks, run.claimed_tasks) == (
        RunStatus.FAILED,
        7,
        0,
        0,
    )
    assert (run.failed_tasks, run.cancelled_tasks) == (1, 1)

    log = {e.task_id: e for e in await store.restart_log()}
    assert set(log) == {ids[k] for k in held}
    actions = {k: (log[ids[k]].action, log[ids[k]].status_at_restart) for k in held}
    assert actions == {
        "claimed": ("requeued", "claimed"),
        "resumable": ("resumed", "running"),
        "not_resumable": ("restarted", "running"),
        "released": ("resumed", "running"),
        "worn": ("failed", "running"),
        "worn_released": ("resumed", "running"),
        "paused": ("kept_paused", "running"),
    }
    entry = log[ids["resumable"]]
    assert (entry.progress, entry.disposition) == (40.0, "pending_review")
    assert entry.detail is not None
    # It saved a checkpoint in the attempt the crash cut off: it was getting on, not charged.
    assert entry.detail.startswith(
        "crash: interrupted, not charged (it saved progress since its last interruption); "
        "charged so far: 0 of 5, 1 in all"
    )
    assert (log[ids["not_resumable"]].detail or "").startswith(
        "crash: interrupted, not charged (its work runs in another process); "
        "charged so far: 0 of 5, 1 in all"
    )
    assert (log[ids["worn"]].detail or "").startswith("crash: charged: 6 of 5 (interruption 6")
    assert (log[ids["worn_released"]].detail or "").startswith(
        "graceful stop, not counted; charged so far: 5 of 5"
    )
    assert (log[ids["claimed"]].detail or "").startswith("crash, not counted; charged so far: 0")
    assert "recovered" in [e.kind for e in await store.events(ids["resumable"])]

    # A second recovery finds nothing to do.
    again = await store.recover("session-3", resumable_types=["SLEEP"])
    assert again.total == 0

    # The user acts on the log: retrying settles the entry, dismissing the rest.
    await store.retry(ids["worn"])
    log = {e.task_id: e for e in await store.restart_log()}
    assert log[ids["worn"]].disposition == "retried"
    assert await store.set_disposition(None, "dismissed") == 6
    assert await store.restart_log(only_pending=True) == []


async def test_the_interruption_limit_counts_crashes_only(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """A task whose work runs in the engine's process and that saves nothing: every crash
    while it runs is charged to it, a graceful stop never."""
    created = await submit(store, registry, [sleep("s", 10), sleep("after", 1, "s")])
    ids = created.task_ids
    seen = []
    for n, graceful in enumerate([False, True, True, False, False]):
        [held] = await store.claim("dead", start=True)
        assert held.id == ids["s"]
        await store.report_progress(held.id, held.lease_token, progress=10.0 * n)
        if graceful:
            assert await store.release_for_shutdown([(held.id, held.lease_token)]) == 1
        report = await store.recover(
            f"session-{n}", ["SLEEP"], in_process_types=["SLEEP"], max_interruptions=2
        )
        task = await store.get_task(ids["s"])
        seen.append((report.resumed, report.failed, task.status, task.charged_interruptions))
    P, F = TaskStatus.PENDING, TaskStatus.FAILED
    # Crash, stop, stop, crash: 2 interruptions, the limit. The next crash is one too many.
    assert seen == [(1, 0, P, 1), (1, 0, P, 1), (1, 0, P, 1), (1, 0, P, 2), (0, 1, F, 3)]
    task = await store.get_task(ids["s"])
    assert (task.error_type, task.retry_count, task.interruptions) == (
        ErrorType.INTERRUPTED,
        0,
        3,
    )
    assert (task.error or "").startswith("Fredica stopped 3 times while this task ran")
    after = await store.get_task(ids["after"])
    assert (after.status, after.error_type) == (TaskStatus.CANCELLED, ErrorType.DEPENDENCY_FAILED)


async def test_an_interruption_is_charged_only_to_a_task_that_could_have_caused_it(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """Three tasks live through the same crashes, six of them, with a limit of 2: one whose
    work runs in the engine's process and that saves nothing (charged, failed at the third),
    one in the engine's process that saves a checkpoint between crashes (never charged), one
    whose work runs in another process (never charged). The last two go on."""
    created = await submit(
        store,
        registry,
        [sleep("stuck", 10), sleep("getting_on", 10), task("elsewhere", "SLEEP_SUBPROCESS")],
    )
    ids = created.task_ids
    for n in range(6):
        claims = {c.task.key: c for c in await store.claim("dead", limit=3, start=True)}
        if "getting_on" in claims:
            c = claims["getting_on"]
            await store.report_progress(c.id, c.lease_token, checkpoint={"slept": n + 1.0})
        await store.recover(
            f"session-{n}", ["SLEEP"], in_process_types=["SLEEP"], max_interruptions=2
        )
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    summary = {
        k: (t.status, t.interruptions, t.charged_interruptions, t.retry_count)
        for k, t in tasks.items()
    }
    P, F = TaskStatus.PENDING, TaskStatus.FAILED
    assert summary == {
        "stuck": (F, 3, 3, 0),
        "getting_on": (P, 6, 0, 0),
        "elsewhere": (P, 6, 0, 0),
    }
    assert tasks["getting_on"].checkpoint == {"slept": 6.0}
    details = [e.detail or "" for e in await store.restart_log() if e.task_id == ids["stuck"]]
    assert [d.split(" (")[0] for d in details] == [
        "crash: charged: 1 of 2",
        "crash: charged: 2 of 2",
        "crash: charged: 3 of 2",
    ]
    later = [e.detail or "" for e in await store.restart_log() if e.task_id == ids["elsewhere"]]
    assert later[-1].startswith(
        "crash: interrupted, not charged (its work runs in another process); "
        "charged so far: 0 of 2, 6 in all"
    )


async def test_a_task_saving_progress_is_charged_again_once_it_stops_saving(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [sleep("s", 10)])
    charged = []
    for n, saves in enumerate([True, False, True, False, False]):
        [held] = await store.claim("dead", start=True)
        if saves:
            await store.report_progress(held.id, held.lease_token, checkpoint={"slept": n})
        await store.recover(f"s{n}", ["SLEEP"], in_process_types=["SLEEP"], max_interruptions=5)
        charged.append((await store.get_task(created.task_ids["s"])).charged_interruptions)
    assert charged == [0, 1, 1, 2, 3]


async def test_uncharged_interruptions_have_a_ceiling_where_the_task_is_held(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [task("elsewhere", "SLEEP_SUBPROCESS")])
    task_id = created.task_ids["elsewhere"]
    set_interruptions(store, task_id, 98, charged=0)
    for n, action in enumerate(["resumed", "held"]):
        await store.set_paused(task_id, False)
        assert [c.id for c in await store.claim("dead", start=True)] == [task_id]
        report = await store.recover(
            f"s{n}", ["SLEEP_SUBPROCESS"], in_process_types=["SLEEP"], max_total_interruptions=100
        )
        assert (report.resumed, report.held, report.failed) == (
            (1, 0, 0) if action == "resumed" else (0, 1, 0)
        )
    held_task = await store.get_task(task_id)
    assert (held_task.status, held_task.is_paused, held_task.interruptions) == (
        TaskStatus.PENDING,
        True,
        100,
    )
    assert held_task.status_text == "held: interrupted 100 times in all; resume it to try again"
    entry = [e for e in await store.restart_log() if e.task_id == task_id][-1]
    assert entry.action == "held"
    assert "; held: interrupted 100 times in all" in (entry.detail or "")
    assert held_task.error_type is None  # held for review, never failed
    # Resumed by the user, it runs again.
    await store.set_paused(task_id, False)
    assert [c.id for c in await store.claim("w")] == [task_id]


async def test_on_restart_hold_holds_interrupted_work_for_review(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(
        store,
        registry,
        [sleep("crashed", 1), sleep("released", 1), sleep("worn", 1), sleep("claimed", 1)],
    )
    ids = created.task_ids
    held = {c.task.key: c for c in await store.claim("dead", limit=4)}
    for key in ("crashed", "released", "worn"):
        await store.mark_running(held[key].id, held[key].lease_token)
    for key in ("crashed", "released"):  # "worn" saves nothing: its crash is charged
        await store.report_progress(ids[key], held[key].lease_token, checkpoint={"slept": 0.5})
    await store.release_for_shutdown([(ids["released"], held["released"].lease_token)])
    set_interruptions(store, ids["worn"], 5)

    report = await store.recover("s2", ["SLEEP"], in_process_types=["SLEEP"], hold=True)
    assert (report.held, report.requeued, report.failed, report.resumed) == (2, 1, 1, 0)
    tasks = {t.key: t for t in await store.list_tasks(created.run_id)}
    for key in ("crashed", "released"):
        t = tasks[key]
        assert (t.status, t.is_paused, t.checkpoint) == (TaskStatus.PENDING, True, {"slept": 0.5})
        assert t.status_text == "held after a restart: review it"
    assert (tasks["crashed"].interruptions, tasks["released"].interruptions) == (1, 0)
    # The limit still applies; a task that never started is not held.
    assert tasks["worn"].error_type == ErrorType.INTERRUPTED
    assert tasks["claimed"].status is TaskStatus.PENDING and not tasks["claimed"].is_paused
    log = {e.task_id: e.action for e in await store.restart_log()}
    assert [log[ids[k]] for k in ("crashed", "released", "worn", "claimed")] == [
        "held",
        "held",
        "failed",
        "requeued",
    ]
    # Only what was never started is claimable until the user resumes the held tasks.
    assert [c.id for c in await store.claim("w", limit=4)] == [ids["claimed"]]
    await store.set_paused(ids["crashed"], False)
    assert [c.id for c in await store.claim("w", limit=4)] == [ids["crashed"]]


async def test_release_for_shutdown_is_fenced_by_the_lease(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [sleep("a", 1), sleep("b", 1), sleep("c", 1)])
    ids = created.task_ids
    a, b, c = await store.claim("w1", limit=3, start=True)
    assert await store.complete(c.id, c.lease_token)
    # a with its token; b with a stale token; c finished; an unknown id.
    marked = await store.release_for_shutdown(
        [(a.id, a.lease_token), (b.id, "stale"), (c.id, c.lease_token), ("nope", "x")]
    )
    assert marked == 1
    ta, tb = await store.get_task(a.id), await store.get_task(b.id)
    # Released: still running and ours (recovery takes it over), only the lease's end cleared.
    assert (ta.status, ta.lease_token, ta.worker_id, ta.lease_until) == (
        TaskStatus.RUNNING,
        a.lease_token,
        "w1",
        None,
    )
    assert tb.status is TaskStatus.RUNNING and tb.lease_until is not None
    assert (await store.get_task(c.id)).status is TaskStatus.COMPLETED
    assert await store.release_for_shutdown([]) == 0

    await store.recover("s2", ["SLEEP"], in_process_types=["SLEEP"])
    ta, tb = await store.get_task(a.id), await store.get_task(b.id)
    assert (ta.interruptions, tb.interruptions) == (0, 1)
    log = {e.task_id: e.detail or "" for e in await store.restart_log()}
    assert log[ids["a"]].startswith("graceful stop")
    assert log[ids["b"]].startswith("crash: charged: 1 of 5")


async def test_orphans_fail(store: TaskStore, registry: TaskTypeRegistry) -> None:
    created = await submit(store, registry, [sleep("a", 1)])
    with raw_of(store).connect() as conn:  # a run deleted by hand, leaving its task behind
        conn.execute("DELETE FROM workflow_run WHERE id = ?", (created.run_id,))
    report = await store.recover("s", resumable_types=["SLEEP"])
    assert report.orphaned == 1
    task = await store.get_task(created.task_ids["a"])
    assert (task.status, task.error_type) == (TaskStatus.FAILED, ErrorType.ORPHANED)


async def test_engine_start_recovers_and_resumes_a_sleep_from_its_checkpoint(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [sleep("s", 1.0)])  # no retry
    # An engine of this home (this host's data directory) that died: on a shared database
    # the next engine of the home takes its work over at once, without waiting for leases.
    await store.register_worker(WorkerInfo("dead", "here", "home", 1, "", {}, {}))
    [held] = await store.claim("dead", start=True)
    await store.report_progress(held.id, held.lease_token, checkpoint={"slept": 0.9})
    engine = WorkerEngine(store, [NoopExecutor(), SleepExecutor()], home_id="home")
    report = await engine.start()
    assert report is not None and report.resumed == 1
    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.wait_for(engine.run(until_idle=True), 10)
    took = loop.time() - began
    await engine.stop()
    task = await store.get_task(created.task_ids["s"])
    assert task.status is TaskStatus.COMPLETED and task.attempt == 2
    assert (task.retry_count, task.interruptions) == (0, 1)
    assert took < 0.8  # slept only the 0.1 s that was left, not the whole second


async def test_shutdown_leaves_running_work_to_recovery(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    created = await submit(store, registry, [sleep("long", 30)])
    engine = WorkerEngine(store, [SleepExecutor()])
    await engine.start()
    runner = asyncio.create_task(engine.run())
    for _ in range(200):
        if engine.running_ids:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.7)
    await engine.stop(drain_timeout=0.2)
    await asyncio.wait_for(runner, 5)
    task = await store.get_task(created.task_ids["long"])
    if store.shared:
        # Several hosts: requeued at once (another host may take it now), from its
        # checkpoint, with no interruption counted; the restart log says so.
        assert (task.status, task.interruptions, task.error_type) == (
            TaskStatus.PENDING,
            0,
            None,
        )
        assert (task.checkpoint or {}).get("slept", 0) > 0 and task.lease_token is None
        [entry] = await store.restart_log()
        assert entry.action == "resumed" and (entry.detail or "").startswith("graceful stop")
        return
    # Not cancelled, not failed: still running in the database, with a checkpoint.
    assert task.status is TaskStatus.RUNNING and task.error_type is None
    # (How much it slept depends on the machine's load; that its checkpoint was flushed
    # at the stop does not.)
    assert (task.checkpoint or {}).get("slept", 0) > 0
    # Marked as stopped gracefully: the lease was given up, so it is no crash.
    assert task.lease_until is None and task.lease_token is not None
    second = WorkerEngine(store, [SleepExecutor()])
    report = await second.start()
    assert report is not None and report.resumed == 1
    task = await store.get_task(task.id)
    assert (task.status, task.retry_count, task.interruptions) == (TaskStatus.PENDING, 0, 0)
    [entry] = await store.restart_log()
    assert (entry.detail or "").startswith("graceful stop")


async def test_shutdown_does_not_wait_for_a_paused_attempt(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """A paused attempt cannot finish: the drain does not wait for it; it stays paused and
    running in the database, for recovery to keep it held."""
    created = await submit(store, registry, [sleep("held", 30, max_retries=1)])
    engine = WorkerEngine(store, [SleepExecutor()])
    await engine.start()
    runner = asyncio.create_task(engine.run())
    for _ in range(200):
        if engine.running_ids:
            break
        await asyncio.sleep(0.02)
    await engine.pause(created.task_ids["held"])
    loop = asyncio.get_running_loop()
    began = loop.time()
    await engine.stop(drain_timeout=20)
    await asyncio.wait_for(runner, 5)
    assert loop.time() - began < 5
    task = await store.get_task(created.task_ids["held"])
    if store.shared:  # requeued at once, still paused (held until the user resumes it)
        assert task.status is TaskStatus.PENDING and task.is_paused and task.error_type is None
        return
    assert task.status is TaskStatus.RUNNING and task.is_paused and task.error_type is None
    report = await WorkerEngine(store, [SleepExecutor()]).start()
    assert report is not None and report.kept_paused == 1


def test_data_dir_lock_is_exclusive(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path / "engine.lock").acquire()
    assert DataDirLock(tmp_path / "engine.lock").is_held_elsewhere()
    with pytest.raises(DatabaseLocked, match=r"already running .*pid"):
        DataDirLock(tmp_path / "engine.lock").acquire()
    first.release()
    with DataDirLock(tmp_path / "engine.lock"):
        pass
    assert not DataDirLock(tmp_path / "engine.lock").is_held_elsewhere()


async def test_a_task_whose_server_keeps_stopping_is_held_at_the_ceiling_not_failed(
    store: TaskStore, registry: TaskTypeRegistry
) -> None:
    """``SERVER_STOPPED`` (the endpoints server died under the attempt): queued again with no
    retry used, until the interruptions in all reach the ceiling; then held for review."""
    created = await submit(store, registry, [task("elsewhere", "SLEEP_SUBPROCESS")])
    task_id = created.task_ids["elsewhere"]
    set_interruptions(store, task_id, 98, charged=0)
    outcomes = []
    for _ in range(2):
        [held] = await store.claim("w", start=True)
        outcomes.append(
            await store.fail(held.id, held.lease_token, "the server stopped", "SERVER_STOPPED")
        )
        with raw_of(store).connect() as conn:  # due now: no waiting out the second's delay
            conn.execute("UPDATE task SET next_run_at = NULL WHERE id = ?", (task_id,))
    assert all(o.applied and o.retried for o in outcomes)
    t = await store.get_task(task_id)
    assert (t.status, t.is_paused, t.interruptions, t.charged_interruptions, t.retry_count) == (
        TaskStatus.PENDING,
        True,
        100,
        0,
        0,
    )
    assert t.status_text == "held: interrupted 100 times in all; resume it to try again"
    assert t.error_type is None
    events = [e for e in await store.events(task_id) if e.kind == "interrupted"]
    assert [e.detail["held"] for e in events if e.detail] == [False, True]
    assert await store.claim("w") == []  # held: nothing claims it until it is resumed
