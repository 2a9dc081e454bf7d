"""Badges, sidebar counts and a selection's actions (pure: records in, values out)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fredica_app.views.queue_state import (
    Action,
    ActionName,
    Badge,
    BadgeCounts,
    badge,
    count_badges,
    deps_done,
    is_interrupted,
    selection_actions,
)
from tests.support.records import task_record
from workers.changes import Tombstone
from workers.records import TaskRecord
from workers.states import TaskStatus


def task(**kw: Any) -> TaskRecord:
    return task_record(**kw)


HELD = "held after a restart: review it"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"unmet_deps": 1}, Badge.WAITING),
        ({}, Badge.QUEUED),
        ({"error": "timeout", "error_type": "TIMEOUT"}, Badge.QUEUED),  # waiting for a retry
        ({"status": TaskStatus.CLAIMED}, Badge.RUNNING),
        ({"status": TaskStatus.RUNNING}, Badge.RUNNING),
        ({"status": TaskStatus.RUNNING, "is_paused": True}, Badge.PAUSED),
        ({"is_paused": True, "unmet_deps": 2}, Badge.PAUSED),
        ({"status": TaskStatus.COMPLETED, "result": {"outputs": []}}, Badge.DONE),
        ({"status": TaskStatus.COMPLETED}, Badge.DONE),
        ({"status": TaskStatus.COMPLETED, "result": {"skipped": True}}, Badge.SKIPPED),
        ({"status": TaskStatus.FAILED, "error_type": "FFMPEG_FAILED"}, Badge.FAILED),
        ({"status": TaskStatus.FAILED, "error_type": "ORPHANED"}, Badge.FAILED),
        ({"status": TaskStatus.CANCELLED}, Badge.CANCELLED),
        ({"status": TaskStatus.FAILED, "error_type": "INTERRUPTED"}, Badge.INTERRUPTED),
        ({"is_paused": True, "status_text": HELD}, Badge.INTERRUPTED),
        # Resumed after a restart: it goes on by itself, nothing is asked of the user.
        ({"status_text": "resuming after a restart"}, Badge.QUEUED),
        ({"is_paused": True, "status_text": "paused (kept across a restart)"}, Badge.PAUSED),
        # Held after a restart, then cancelled by the user: cancelled.
        ({"status": TaskStatus.CANCELLED, "is_paused": True, "status_text": HELD}, Badge.CANCELLED),
    ],
)
def test_badge(fields: dict[str, Any], expected: Badge) -> None:
    assert badge(task(**fields)) is expected


def test_interrupted_is_not_failed() -> None:
    interrupted = task(status=TaskStatus.FAILED, error_type="INTERRUPTED", error="stopped 6 times")
    failed = task(status=TaskStatus.FAILED, error_type="TIMEOUT", error="took too long")
    assert is_interrupted(interrupted) and not is_interrupted(failed)
    assert badge(interrupted) != badge(failed)


def test_the_caller_knows_better_than_a_stale_unmet_deps() -> None:
    assert badge(task(unmet_deps=1), deps_done=True) is Badge.QUEUED
    assert badge(task(), deps_done=False) is Badge.WAITING


def test_deps_done_from_what_is_known() -> None:
    done = task(id="a", status=TaskStatus.COMPLETED)
    running = task(id="b", status=TaskStatus.RUNNING)
    known = {"a": done, "b": running}
    assert deps_done(task(depends_on=["a"], unmet_deps=1), known)  # the stream's record wins
    assert not deps_done(task(depends_on=["a", "b"]), known)
    assert not deps_done(task(depends_on=["gone", "b"], unmet_deps=0), known)
    assert deps_done(task(depends_on=["a", "gone"], unmet_deps=0), known)
    assert not deps_done(task(depends_on=["a", "gone"], unmet_deps=1), known)


def test_counts_follow_a_dependency_that_completes() -> None:
    a = task(id="a", status=TaskStatus.RUNNING)
    b = task(id="b", depends_on=["a"], unmet_deps=1)
    counts = BadgeCounts([a, b])
    assert counts.counts == {Badge.RUNNING: 1, Badge.WAITING: 1}
    # The stream carries a's completion only: b's row did not change, its badge did.
    counts.apply(dataclasses.replace(a, status=TaskStatus.COMPLETED))
    assert counts.counts == {Badge.DONE: 1, Badge.QUEUED: 1}
    assert counts.badge_of("b") is Badge.QUEUED
    # a is deleted: b's own record (unmet_deps 1, from before) decides again.
    counts.apply(Tombstone("task", "a", "r-1", 10.0))
    assert counts.counts == {Badge.WAITING: 1}
    assert counts.badge_of("a") is None
    counts.apply(Tombstone("task", "a", "r-1", 11.0))  # twice: harmless
    counts.apply(Tombstone("run", "r-1", "r-1", 11.0))  # its tasks have tombstones of their own
    counts.apply(Tombstone("task", "b", "r-1", 11.0))
    assert counts.counts == {}


def test_a_dependency_shared_by_two_tasks_stays_linked_to_the_one_left() -> None:
    a = task(id="a", status=TaskStatus.RUNNING)
    b = task(id="b", depends_on=["a"], unmet_deps=1)
    c = task(id="c", depends_on=["a"], unmet_deps=1)
    counts = BadgeCounts([a, b, c])
    counts.apply(Tombstone("task", "b", "r-1", 10.0))
    # c still hears of a's completion, although b (which shared a) was removed.
    counts.apply(dataclasses.replace(a, status=TaskStatus.COMPLETED))
    assert counts.counts == {Badge.DONE: 1, Badge.QUEUED: 1}


def test_counts_follow_changed_dependencies() -> None:
    a = task(id="a", status=TaskStatus.RUNNING)
    b = task(id="b", depends_on=["a"])
    counts = BadgeCounts([a, b])
    assert counts.badge_of("b") is Badge.WAITING
    counts.apply(dataclasses.replace(b, depends_on=[]))
    assert counts.badge_of("b") is Badge.QUEUED
    counts.apply(dataclasses.replace(a, status=TaskStatus.FAILED))
    assert counts.counts == {Badge.FAILED: 1, Badge.QUEUED: 1}


IDS = ["a", "b", "c", "d", "e"]
# A small fixed DAG: each task may depend on those before it.
DEPS = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"], "e": ["d", "x"]}

records = st.builds(
    lambda i, status, paused, unmet, skipped, error_type, held, deps: task(
        id=i,
        depends_on=DEPS[i] if deps else [],
        status=status,
        is_paused=paused,
        unmet_deps=unmet,
        result={"skipped": True} if skipped else None,
        error_type=error_type,
        status_text=HELD if held else None,
    ),
    st.sampled_from(IDS),
    st.sampled_from(TaskStatus),
    st.booleans(),
    st.integers(0, 2),
    st.booleans(),
    st.sampled_from([None, "INTERRUPTED", "TIMEOUT"]),
    st.booleans(),
    st.booleans(),
)
tombstones = st.builds(
    lambda i, kind: Tombstone(kind, i, "r-1", 0.0),
    st.sampled_from(IDS),
    st.sampled_from(["task", "run"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(records, tombstones), max_size=40))
def test_counts_by_delta_equal_a_full_recount(changes: list[TaskRecord | Tombstone]) -> None:
    counts = BadgeCounts()
    rows: dict[str, TaskRecord] = {}
    for change in changes:
        counts.apply(change)
        if isinstance(change, TaskRecord):
            rows[change.id] = change
        elif change.kind == "task":
            rows.pop(change.id, None)
        expected = count_badges(rows.values())
        assert counts.counts == {b: n for b, n in expected.items() if n}
        assert all(counts.badge_of(i) is not None for i in rows)


# --- actions --------------------------------------------------------------------------------


def names(actions: list[Action]) -> list[ActionName]:
    return [a.name for a in actions]


def test_nothing_selected_allows_nothing() -> None:
    assert selection_actions([]) == []


def test_a_running_task() -> None:
    actions = selection_actions([task(status=TaskStatus.RUNNING)])
    assert actions == [Action(ActionName.PAUSE, ("t-1",)), Action(ActionName.CANCEL, ("t-1",))]


def test_a_task_that_cannot_pause_now() -> None:
    (pause, cancel) = selection_actions([task(status=TaskStatus.RUNNING, is_pausable=False)])
    assert pause.name is ActionName.PAUSE and not pause.enabled
    assert pause.reason is not None and "this task cannot pause now" in pause.reason
    assert cancel.enabled


def test_several_tasks_that_cannot_pause_now() -> None:
    selection = [
        task(id="a", status=TaskStatus.RUNNING, is_pausable=False),
        task(id="b", status=TaskStatus.RUNNING, is_pausable=False),
    ]
    pause = selection_actions(selection)[0]
    assert pause == Action(
        ActionName.PAUSE,
        ("a", "b"),
        enabled=False,
        reason="none of these tasks can pause now: their jobs cannot stop safely here",
    )


def test_pause_applies_to_those_that_can() -> None:
    selection = [
        task(id="a", status=TaskStatus.RUNNING, is_pausable=False),
        task(id="b"),
        task(id="c", is_paused=True),
    ]
    actions = selection_actions(selection)
    assert actions[0] == Action(ActionName.PAUSE, ("b",))
    assert actions[1] == Action(ActionName.RESUME, ("c",))
    assert actions[2] == Action(ActionName.CANCEL, ("a", "b", "c"))


def test_finished_tasks() -> None:
    selection = [
        task(id="done", status=TaskStatus.COMPLETED, result={"outputs": ["/m/a.srt"]}),
        task(id="failed", status=TaskStatus.FAILED, error="no audio", error_type="NO_AUDIO"),
        task(id="cancelled", status=TaskStatus.CANCELLED),
    ]
    assert selection_actions(selection) == [
        Action(ActionName.RETRY, ("failed", "cancelled")),
        Action(ActionName.OPEN_OUTPUT, ("done",)),
        Action(ActionName.COPY_ERROR, ("failed",)),
    ]


def test_a_task_held_after_a_restart_can_be_resumed() -> None:
    held = task(status=TaskStatus.PENDING, is_paused=True, status_text=HELD)
    assert names(selection_actions([held])) == [ActionName.RESUME, ActionName.CANCEL]
