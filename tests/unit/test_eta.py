"""Speed and time left from progress samples (pure: numbers in, numbers out)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fredica_app.views.eta import WINDOW, SpeedMeter, _slope, format_eta


def fed(samples: list[tuple[float, float]], **kw: float) -> SpeedMeter:
    meter = SpeedMeter(**kw)
    for at, percent in samples:
        meter.add(at, percent)
    return meter


def test_unknown_with_fewer_than_two_samples() -> None:
    assert SpeedMeter().eta is None
    assert fed([(0, 10)]).eta is None
    assert fed([(0, 10)]).speed is None


def test_steady_progress() -> None:
    meter = fed([(t, t * 0.5) for t in range(11)])  # 0.5 %/s, at 5 %
    assert meter.speed == pytest.approx(0.5)
    assert meter.eta == pytest.approx(190.0)


def test_no_progress_is_unknown_not_infinite() -> None:
    assert fed([(0, 40), (5, 40), (10, 40)]).eta is None


def test_finished_is_zero_never_negative() -> None:
    meter = fed([(0, 90), (1, 99), (2, 120)])  # a job that overshoots: clamped to 100
    assert meter.eta == 0.0


def test_reports_from_the_past_are_ignored_the_same_instant_replaced() -> None:
    meter = fed([(0, 0), (10, 10), (5, 90), (10, 20)])
    assert meter.speed == pytest.approx(2.0)


def test_the_window_moves_on() -> None:
    # Slow for a minute, then fast: only the last ~30 s count.
    slow = [(float(t), t * 0.1) for t in range(61)]
    fast = [(60.0 + t, 6.0 + t * 1.0) for t in range(1, 41)]
    meter = fed(slow + fast)
    assert meter.speed == pytest.approx(1.0)


def test_sparse_reports_keep_an_anchor_before_the_window() -> None:
    meter = fed([(0, 0), (60, 30), (120, 60)], window=WINDOW)
    assert meter.speed == pytest.approx(0.5)


def test_a_pause_is_not_slowness() -> None:
    meter = fed([(t, float(t)) for t in range(11)])  # 1 %/s
    meter.pause()
    assert meter.eta is None
    meter.add(100, 10)  # reported while paused: ignored
    meter.resume()
    assert not meter.paused
    meter.add(600, 10)
    assert meter.eta is None  # one sample since the resume
    meter.add(601, 11)
    meter.add(602, 12)
    assert meter.speed == pytest.approx(1.0)  # the ten minutes paused do not count


def test_paused_until_resumed() -> None:
    meter = SpeedMeter()
    meter.pause()
    assert meter.paused


def test_starting_again_restarts_the_window() -> None:
    meter = fed([(0, 50), (10, 60), (20, 5)])
    assert meter.eta is None
    meter.add(30, 15)
    assert meter.speed == pytest.approx(1.0)


def test_jitter_does_not_restart_the_window() -> None:
    meter = fed([(0, 10), (1, 11), (2, 10.5), (3, 13)])
    assert meter.speed is not None
    assert meter.speed == pytest.approx(0.9, abs=0.2)


def test_going_back_within_the_jitter_is_no_progress() -> None:
    assert fed([(0, 10), (10, 9)]).eta is None


def test_jittery_samples_give_a_stable_estimate() -> None:
    # 0.2 %/s reported at uneven times with ±1 % of noise: every estimate once the window is
    # full stays within 20 % of the truth (500 s at 0 %), where the two-point estimate swings.
    rng = random.Random(7)
    meter = SpeedMeter()
    at, estimates = 0.0, []
    while at < 200:
        at += rng.uniform(0.2, 2.0)
        meter.add(at, 0.2 * at + rng.uniform(-1, 1))
        if at > WINDOW and meter.eta is not None:
            estimates.append(meter.eta + at)  # the whole duration it implies
    assert estimates
    assert all(400 <= e <= 600 for e in estimates)


def test_the_rate_in_the_jobs_own_unit() -> None:
    meter = SpeedMeter()
    meter.add(0, 0, amount=0)
    meter.add(1, 1)  # a report without the amount does not spoil the rate
    meter.add(2, 2, amount=4_000_000)
    assert meter.rate == pytest.approx(2_000_000)
    assert SpeedMeter().rate is None


def test_all_samples_at_one_instant_say_nothing() -> None:
    meter = fed([(5, 10)])
    meter.add(5, 20)
    assert meter.speed is None
    assert _slope([(1.0, 1.0), (1.0, 2.0)]) is None  # the same guard, for any caller


@given(
    st.lists(
        st.tuples(st.floats(0, 1e4, allow_nan=False), st.floats(-50, 150, allow_nan=False)),
        max_size=40,
    )
)
def test_never_negative(samples: list[tuple[float, float]]) -> None:
    meter = fed(sorted(samples))
    eta = meter.eta
    assert eta is None or eta >= 0.0
    speed = meter.speed
    assert speed is None or speed > 0.0


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (-3, "0 s"),
        (45.2, "45 s"),
        (59.6, "1 min 00 s"),
        (190, "3 min 10 s"),
        (3599.4, "59 min 59 s"),
        (3720, "1 h 02 min"),
        (36_000, "10 h 00 min"),
    ],
)
def test_format_eta(seconds: float | None, text: str) -> None:
    assert format_eta(seconds) == text
