"""The "disk nearly full" rule and its hysteresis (pure: sizes in, decisions out)."""

from __future__ import annotations

from fredica_app.views.disk import (
    MAX_FREE,
    MIN_FREE,
    RECOVER,
    GiB,
    LowSpaceAlarm,
    Usage,
    has_recovered,
    is_low,
    threshold,
)

TB = 1024**4


def disk(free: float, total: float = 100 * GiB, key: str = "a") -> Usage:
    return Usage(key, f"/{key}", int(total), int(free))


def test_the_threshold_is_three_percent_between_two_and_ten_gib() -> None:
    assert threshold(32 * GiB) == MIN_FREE == 2 * GiB  # 3 % would be under 1 GiB
    assert threshold(200 * GiB) == int(200 * GiB * 0.03)  # 6 GiB
    assert threshold(4 * TB) == MAX_FREE == 10 * GiB  # 3 % would be 120 GiB
    assert threshold(0) == MIN_FREE


def test_low_and_recovered() -> None:
    assert is_low(disk(1.9 * GiB, 32 * GiB))
    assert not is_low(disk(2 * GiB, 32 * GiB))  # exactly at the line: not under it
    assert is_low(disk(5 * GiB, 200 * GiB))
    assert not is_low(disk(7 * GiB, 200 * GiB))
    assert not is_low(disk(100 * GiB, 4 * TB))  # plenty, although under 3 %
    assert not has_recovered(disk(2.9 * GiB, 32 * GiB))
    assert has_recovered(disk(2 * GiB * RECOVER, 32 * GiB))


def test_warns_once_while_it_hovers_and_again_after_recovering() -> None:
    alarm = LowSpaceAlarm()
    assert alarm.update([disk(50 * GiB)]) == []
    low = disk(1 * GiB)
    assert alarm.update([low]) == [low]
    assert alarm.warned("a")
    # Hovering around the line, or even a little over it: quiet.
    for free in (2.5, 1.5, 3.5, 0.5, 4.0):
        assert alarm.update([disk(free * GiB)]) == [], free
    assert alarm.warned("a")
    # Recovered (space freed), then low again: warned again.
    assert alarm.update([disk(20 * GiB)]) == []
    assert not alarm.warned("a")
    assert alarm.update([disk(20 * GiB)]) == []  # recovered and fine: nothing
    again = disk(1.5 * GiB)
    assert alarm.update([again]) == [again]


def test_each_file_system_on_its_own() -> None:
    alarm = LowSpaceAlarm()
    library, data = disk(1 * GiB, key="library"), disk(80 * GiB, key="data")
    assert alarm.update([library, data]) == [library]
    assert alarm.update([library, disk(1 * GiB, key="data")]) == [disk(1 * GiB, key="data")]
    assert alarm.warned("library") and alarm.warned("data")
    assert not alarm.warned("elsewhere")
