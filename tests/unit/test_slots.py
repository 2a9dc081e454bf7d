"""The slot rules (pure): counting, lending a paused attempt's slot, getting it back.

The engine's tests (tests/engine/test_paused_slots.py) show the rules through a real engine;
these pin each rule down on plain values, including what only a race would reach there.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.slots import Resume, Seat, SlotTable

SLOTS = {"gpu": 1, "cpu": 3, "io": 2}


def table(max_workers: int = 4, **started: str) -> SlotTable:
    """A table with an attempt started for each ``key=resource``, in that order."""
    t = SlotTable(max_workers, SLOTS)
    for key, resource in started.items():
        t.add(key, resource)
    return t


# --- counting ---------------------------------------------------------------------------------


def test_an_empty_table_offers_every_slot_capped_by_max_workers() -> None:
    assert SlotTable(4, SLOTS).free() == (4, {"gpu": 1, "cpu": 3, "io": 2})
    assert SlotTable(2, SLOTS).free() == (2, {"gpu": 1, "cpu": 2, "io": 2})


def test_holders_count_against_their_class_and_the_total() -> None:
    t = table(a="gpu", b="cpu")
    assert t.free() == (2, {"cpu": 2, "io": 2})  # no gpu slot left: not listed


def test_a_full_engine_offers_nothing() -> None:
    t = table(max_workers=2, a="cpu", b="io")
    assert t.free() == (0, {})


def test_a_class_without_slots_counts_against_the_total_only() -> None:
    t = table(max_workers=2, a="tpu")
    assert t.free() == (1, {"gpu": 1, "cpu": 1, "io": 1})


def test_a_table_keeps_its_own_copy_of_the_slots() -> None:
    slots = {"gpu": 1}
    t = SlotTable(1, slots)
    slots["gpu"] = 5
    assert t.slots == {"gpu": 1}


def test_added_and_discarded_attempts() -> None:
    t = SlotTable(4, SLOTS)
    seat = t.add("a", "gpu")
    assert seat == Seat("gpu") and seat.held and not seat.waiting
    assert "a" in t and len(t) == 1 and t.seat("a") is seat
    t.discard("a")
    t.discard("a")  # twice: no harm
    assert "a" not in t and len(t) == 0
    t.add("b", "cpu")
    t.clear()
    assert len(t) == 0 and t.free() == (4, {"gpu": 1, "cpu": 3, "io": 2})


# --- lending a paused attempt's slot ----------------------------------------------------------


def test_a_parked_attempt_that_holds_nothing_lends_its_slot() -> None:
    t = table(a="gpu")
    assert t.parked("a", keeps_resources=False)
    assert not t.seat("a").held
    assert t.free() == (4, {"gpu": 1, "cpu": 3, "io": 2})
    # Parked again (another paused frame): it has nothing left to lend.
    assert not t.parked("a", keeps_resources=False)


def test_a_parked_attempt_that_keeps_its_resources_keeps_its_slot() -> None:
    t = table(a="gpu")
    assert not t.parked("a", keeps_resources=True)
    assert t.seat("a").held and t.free() == (3, {"cpu": 3, "io": 2})


def test_an_ended_attempt_is_left_alone() -> None:
    t = table(a="gpu")
    t.discard("a")
    assert not t.parked("a", keeps_resources=False)
    t.paused("a")
    t.running("a")
    assert t.resume("a", 1.0) is Resume.AT_ONCE
    assert "a" not in t and t.free() == (4, {"gpu": 1, "cpu": 3, "io": 2})


# --- resuming ---------------------------------------------------------------------------------


def test_an_attempt_that_kept_its_slot_goes_on_at_once() -> None:
    t = table(a="gpu")
    assert t.resume("a", 1.0) is Resume.AT_ONCE
    assert t.seat("a") == Seat("gpu", held=True)


def test_an_attempt_that_lent_its_slot_takes_a_free_one_at_once() -> None:
    t = table(a="gpu")
    t.parked("a", keeps_resources=False)
    assert t.resume("a", 1.0) is Resume.AT_ONCE
    assert t.seat("a") == Seat("gpu", held=True)


def test_an_attempt_whose_slot_was_taken_waits_then_gets_the_next_free_one() -> None:
    t = table(a="gpu")
    t.parked("a", keeps_resources=False)
    t.add("b", "gpu")  # claimed into the lent slot
    assert t.resume("a", 1.0) is Resume.WAITS
    assert t.seat("a") == Seat("gpu", held=False, waiting_since=1.0)
    # Asked again while it waits: it keeps its place in the line.
    assert t.resume("a", 2.0) is Resume.STILL_WAITS
    assert t.seat("a").waiting_since == 1.0
    assert t.grant_waiting() == []  # nothing free yet
    t.discard("b")
    assert t.grant_waiting() == ["a"]
    assert t.seat("a") == Seat("gpu", held=True)
    assert t.free() == (3, {"cpu": 3, "io": 2})


def test_the_total_limit_also_makes_a_resumed_attempt_wait() -> None:
    t = table(max_workers=2, a="gpu", b="cpu")
    t.parked("a", keeps_resources=False)
    t.add("c", "io")  # the freed place in max_workers, another class
    assert t.resume("a", 1.0) is Resume.WAITS  # its gpu slot is free, the total is not


def test_a_resume_finds_the_slot_freed_before_the_waiting_line_was_served() -> None:
    t = table(a="gpu")
    t.parked("a", keeps_resources=False)
    t.add("b", "gpu")
    assert t.resume("a", 1.0) is Resume.WAITS
    t.discard("b")
    # Resumed once more before a turn granted it the slot: it takes it now, and says so.
    assert t.resume("a", 2.0) is Resume.GRANTED
    assert t.seat("a") == Seat("gpu", held=True)


def test_a_new_pause_ends_the_wait_and_leaves_the_slot_as_it_was() -> None:
    t = table(a="gpu")
    t.parked("a", keeps_resources=False)
    t.add("b", "gpu")
    t.resume("a", 1.0)
    t.paused("a")
    assert t.seat("a") == Seat("gpu", held=False)
    t.discard("b")
    assert t.grant_waiting() == []  # it no longer waits: it is paused
    held = table(c="cpu")
    held.paused("c")
    assert held.seat("c") == Seat("cpu", held=True)


def test_an_attempt_that_goes_on_by_itself_holds_its_slot_whatever_the_count() -> None:
    t = table(max_workers=1, a="gpu")
    t.parked("a", keeps_resources=False)
    t.add("b", "gpu")
    t.resume("a", 1.0)
    t.running("a")
    assert t.seat("a") == Seat("gpu", held=True)
    assert t.free() == (-1, {})  # over the limits until one of them ends: nothing is claimed


# --- an attempt whose heavy part is done ------------------------------------------------------


def test_a_finishing_attempt_gives_its_class_slot_and_keeps_its_place_in_the_total() -> None:
    t = table(max_workers=4, a="gpu", b="cpu")
    assert t.finishing("a")  # its ffmpeg exited: the gpu slot is free for the next claim
    assert t.seat("a") == Seat("gpu", held=True, finishing=True)
    assert t.free() == (2, {"gpu": 1, "cpu": 2, "io": 2})
    t.add("c", "gpu")  # the next one claimed into it
    assert t.free() == (1, {"cpu": 1, "io": 1})
    t.discard("a")  # the first one ends: its place in the total is free
    assert t.free() == (2, {"cpu": 2, "io": 2})


def test_finishing_twice_or_after_the_end_frees_nothing_more() -> None:
    t = table(a="cpu")
    assert t.finishing("a")
    assert not t.finishing("a")
    assert t.free() == (3, {"gpu": 1, "cpu": 3, "io": 2})
    t.discard("a")
    assert not t.finishing("a")


def test_a_full_total_holds_back_the_next_claim_whatever_the_class_slot() -> None:
    t = table(max_workers=2, a="cpu", b="cpu")
    t.finishing("a")
    assert t.free() == (0, {})  # its cpu slot is free, but two attempts still run


def test_a_finishing_attempt_that_lent_its_place_takes_back_only_a_place_in_the_total() -> None:
    t = table(max_workers=3, a="gpu")
    t.parked("a", keeps_resources=False)  # paused while it checks its output
    assert not t.finishing("a")  # it held nothing: nothing freed now
    t.add("b", "gpu")  # the gpu slot is taken meanwhile
    assert t.resume("a", 1.0) is Resume.AT_ONCE  # it needs no gpu slot to finish
    assert t.seat("a") == Seat("gpu", held=True, finishing=True)
    t.add("c", "io")
    t.parked("a", keeps_resources=False)
    t.add("d", "io")  # the total is full now
    assert t.resume("a", 2.0) is Resume.WAITS
    t.discard("d")
    assert t.grant_waiting() == ["a"]


# --- the waiting line -------------------------------------------------------------------------


def _waiting_line(t: SlotTable, *keys_and_times: tuple[str, float]) -> None:
    """Park each attempt, fill its slot with a filler, resume it at the given time."""
    for key, when in keys_and_times:
        t.parked(key, keeps_resources=False)
        t.add(f"filler-{key}", t.seat(key).resource)
        assert t.resume(key, when) is Resume.WAITS


def test_freed_slots_go_to_the_longest_waiting_first() -> None:
    t = table(max_workers=8, a="cpu", b="cpu", c="cpu")
    _waiting_line(t, ("a", 3.0), ("b", 1.0), ("c", 2.0))
    t.discard("filler-a")
    t.discard("filler-c")
    assert t.grant_waiting() == ["b", "c"]  # two cpu slots free: b waited longest, then c
    assert t.seat("a").waiting_since == 3.0
    t.discard("filler-b")
    assert t.grant_waiting() == ["a"]


def test_a_tie_is_served_in_the_order_the_attempts_started() -> None:
    t = table(max_workers=2, a="cpu", b="cpu")
    _waiting_line(t, ("b", 1.0), ("a", 1.0))
    t.discard("filler-a")
    assert t.grant_waiting() == ["a"]


def test_a_cancelled_attempt_leaves_the_line_without_a_slot() -> None:
    t = table(max_workers=2, a="gpu", b="io")
    _waiting_line(t, ("a", 1.0), ("b", 2.0))
    t.discard("filler-a")
    t.discard("filler-b")
    assert t.grant_waiting(given_up={"a"}) == ["b"]
    assert t.seat("a") == Seat("gpu", held=False)
    assert t.free() == (1, {"gpu": 1, "cpu": 1, "io": 1})


def test_one_freed_slot_serves_one_waiting_attempt() -> None:
    t = table(max_workers=8, a="gpu", b="gpu")
    t.parked("a", keeps_resources=False)
    t.parked("b", keeps_resources=False)
    t.add("c", "gpu")
    assert t.resume("a", 1.0) is Resume.WAITS
    assert t.resume("b", 2.0) is Resume.WAITS
    t.discard("c")
    assert t.grant_waiting() == ["a"]
    assert t.seat("b").waiting


# --- what always holds ------------------------------------------------------------------------

EVENTS = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "discard", "park", "keep", "pause", "resume", "run", "grant", "finish"]
        ),
        st.integers(0, 5),
        st.sampled_from(["gpu", "cpu", "io"]),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(EVENTS, st.integers(1, 5))
def test_only_what_goes_on_by_itself_overruns_the_limits(
    events: list[tuple[str, int, str]], max_workers: int
) -> None:
    """Whatever happens, a slot is taken (a start into a free slot, a resume, a grant) only
    when it is free: the limits hold unless an attempt went on by itself."""
    t = SlotTable(max_workers, SLOTS)
    overrun = False
    for clock, (event, n, resource) in enumerate(events):
        key = f"k{n}"
        if event == "add":
            free_total, per_class = t.free()
            if key not in t and free_total > 0 and per_class.get(resource, 0) > 0:
                t.add(key, resource)
        elif event == "discard":
            t.discard(key)
        elif event in ("park", "keep"):
            t.parked(key, keeps_resources=event == "keep")
        elif event == "pause":
            t.paused(key)
        elif event == "resume":
            t.resume(key, float(clock))
        elif event == "finish":
            t.finishing(key)
        elif event == "run":
            overrun |= key in t and not t.seat(key).held
            t.running(key)
        else:
            for granted in t.grant_waiting():
                assert t.seat(granted).held and not t.seat(granted).waiting
        seats = [t.seat(f"k{i}") for i in range(6) if f"k{i}" in t]
        holding = [s for s in seats if s.held]
        assert all(not (s.held and s.waiting) for s in seats)
        if not overrun:
            assert len(holding) <= max_workers
            for cls, limit in SLOTS.items():
                assert sum(s.resource == cls and not s.finishing for s in holding) <= limit


@pytest.mark.parametrize("outcome", list(Resume))
def test_every_resume_outcome_has_a_distinct_value(outcome: Resume) -> None:
    assert [o for o in Resume if o.value == outcome.value] == [outcome]
