"""The garbage collector on the GUI thread (``fredica_app.gui.collector``): cycles another
thread leaves are finalized on the GUI thread, the generations' rules hold, and the
interpreter's own collection comes back as it was."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from fredica_app.gui.collector import GuiThreadCollector


class Cycle:
    """An object only the cyclic collector can free; says on which thread it was."""

    def __init__(self, seen: list[str]) -> None:
        self.seen = seen
        self.me = self

    def __del__(self) -> None:
        self.seen.append(threading.current_thread().name)


def leave_a_cycle_then_churn_elsewhere(kept: list[Any]) -> list[str]:
    """A cycle left on this thread, then thousands of containers made (and ``kept``) on
    another: the allocations that set a collection off. What finalized the cycle, where."""
    seen: list[str] = []
    gc.collect()  # the youngest generation's count starts at zero
    Cycle(seen)
    worker = threading.Thread(target=lambda: kept.extend([n] for n in range(20_000)))
    worker.name = "worker"
    worker.start()
    worker.join()
    return seen


@pytest.fixture
def interpreter_collects(_collect_on_the_gui_thread: Any) -> Iterator[None]:
    """The folder's own collector stopped: the interpreter collects, as outside the app, and
    no collector but a test's own collects on this thread."""
    thresholds = gc.get_threshold()
    _collect_on_the_gui_thread.stop()
    assert gc.isenabled()
    yield
    gc.set_threshold(*thresholds)


def test_without_it_a_worker_thread_finalizes_what_the_gui_thread_left(
    interpreter_collects: None,
) -> None:
    # The hazard itself, so that the next test proves something.
    assert gc.isenabled()
    assert leave_a_cycle_then_churn_elsewhere([]) == ["worker"]


def test_with_it_the_gui_thread_finalizes_it(qtbot: Any, interpreter_collects: None) -> None:
    collector = GuiThreadCollector(interval_ms=20)
    collector.start()
    try:
        assert not gc.isenabled()
        kept: list[Any] = []
        seen = leave_a_cycle_then_churn_elsewhere(kept)
        assert seen == []  # the worker's allocations collected nothing
        qtbot.waitUntil(lambda: seen == ["MainThread"], timeout=5_000)
        assert collector.collections[0] >= 1
    finally:
        collector.stop()
    assert gc.isenabled()  # given back as it was


def test_stop_collects_and_leaves_a_disabled_collector_disabled(
    interpreter_collects: None,
) -> None:
    gc.disable()
    collector = GuiThreadCollector()
    collector.start()
    seen: list[str] = []
    Cycle(seen)
    collector.stop()
    assert seen == ["MainThread"]
    assert not gc.isenabled()
    collector.stop()  # twice: nothing more
    gc.enable()


def test_a_block_that_turns_collection_back_on_is_overruled(
    interpreter_collects: None,
) -> None:
    collector = GuiThreadCollector()
    collector.start()
    try:
        gc.enable()  # as a block that restores what it found at its start would
        collector.check()
        assert not gc.isenabled()
    finally:
        collector.stop()


def test_generations_are_collected_by_their_thresholds(interpreter_collects: None) -> None:
    collector = GuiThreadCollector()
    collector.start()
    try:
        gc.set_threshold(100, 2, 2)
        gc.collect()
        assert collector.check() is None  # nothing past a threshold
        kept = [[n] for n in range(500)]
        assert collector.check() == 0
        for _ in range(3):
            kept += [[n] for n in range(500)]
            gc.collect(0)
        assert gc.get_count()[1] > 2
        assert collector.check() == 1
        # The oldest generation's count is past its threshold, but few objects reached it
        # since the start: no full collection (CPython's own rule), the middle one instead.
        gc.collect(1)
        gc.collect(1)
        assert gc.get_count()[2] > 2
        assert collector.check() != 2
        assert collector.collections[2] == 0
        # Many long-lived objects since: now a full collection.
        oldest = len(gc.get_objects(generation=2))
        kept += [[n] for n in range(oldest // 4 + 1_000)]
        gc.collect(1)
        gc.collect(1)
        assert collector.check() == 2
        assert collector.collections[2] == 1
        del kept
    finally:
        collector.stop()
