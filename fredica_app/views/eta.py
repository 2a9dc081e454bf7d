"""Speed and time left of a running task, from the progress it reports.

A :class:`SpeedMeter` keeps the samples of about the last 30 seconds and fits a straight line
through them (least squares): a job that reports in bursts, or a clock that ticks unevenly,
moves the slope much less than it moves the difference between the first and last sample.
The window starts again when the task pauses (a pause is not slowness) and when its progress
falls back by more than jitter would (it started again, after a restart or a retry). With
fewer than two samples, no progress in the window, or while paused, there is no estimate:
the GUI shows "—".
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

#: How much history the speed is measured over, in seconds.
WINDOW = 30.0
#: A fall of progress larger than this (percentage points) means the task started again; a
#: smaller one is jitter of the report and stays in the fit.
RESTART_DROP = 2.0
#: What the GUI shows for "unknown".
UNKNOWN = "—"


@dataclass(frozen=True, slots=True)
class Sample:
    """One progress report: when (seconds, any monotonic clock), how far (0 to 100), and, when the
    job says it, how much of its work in its own unit (bytes, seconds of media)."""

    at: float
    percent: float
    amount: float | None = None


class SpeedMeter:
    """The speed of one task over a moving window of its progress samples."""

    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self._samples: deque[Sample] = deque()
        self._paused = False

    def add(self, at: float, percent: float, amount: float | None = None) -> None:
        """A progress report. Reports while paused, or older than the last one, are ignored."""
        if self._paused:
            return
        percent = min(100.0, max(0.0, percent))
        samples = self._samples
        if samples:
            last = samples[-1]
            if at < last.at:
                return
            if percent < last.percent - RESTART_DROP:  # it started again: the past says nothing
                samples.clear()
            elif at == last.at:  # the same instant twice: the newer figure wins
                samples.pop()
        samples.append(Sample(at, percent, amount))
        # Keep one sample at or before the window's start, so that a job reporting less often
        # than the window still has two points to measure between.
        cutoff = at - self.window
        while len(samples) > 2 and samples[1].at <= cutoff:
            samples.popleft()

    def pause(self) -> None:
        """The task paused: forget the window, and ignore reports until :meth:`resume`."""
        self._paused = True
        self._samples.clear()

    def resume(self) -> None:
        """The task goes on: the window starts afresh from the next report."""
        self._paused = False

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def speed(self) -> float | None:
        """Percent per second; None when unknown (see the module's docstring)."""
        return _slope([(s.at, s.percent) for s in self._samples])

    @property
    def rate(self) -> float | None:
        """The job's own unit per second (bytes/s, seconds of media per second), from the
        samples that carry an amount; None when unknown."""
        return _slope([(s.at, s.amount) for s in self._samples if s.amount is not None])

    @property
    def eta(self) -> float | None:
        """Seconds left at the current speed, never negative; None when unknown."""
        speed = self.speed
        if speed is None:
            return None
        return max(0.0, 100.0 - self._samples[-1].percent) / speed


def _slope(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope through ``points``; None unless it is positive."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var <= 0.0:
        return None
    slope = sum((t - mean_t) * (v - mean_v) for t, v in points) / var
    # Flat or (within the jitter) going back: no progress to extrapolate from.
    return slope if slope > 0.0 else None


def format_eta(seconds: float | None) -> str:
    """``1 h 02 min``, ``3 min 10 s``, ``45 s``; ``—`` when unknown."""
    if seconds is None:
        return UNKNOWN
    whole = round(max(0.0, seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
