"""What the queue keeps of its history, and what a prune removed. Pure: no I/O.

A finished run (completed, failed or cancelled, with no task of it still pending, claimed or
running) is deleted with everything that belongs to it — its tasks, their dependency edges,
their timeline events and their restart-log entries — once it finished ``keep_runs`` seconds
ago. Timeline events older than ``keep_events`` seconds are deleted too, whatever their run.
``None`` keeps them forever. The change stream's tombstones (what a viewer following changes
learns of deleted rows) go after ``keep_tombstones`` seconds: a viewer whose cursor is older
than that takes a new snapshot.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    #: Seconds a finished run is kept after it finished; None: forever.
    keep_runs: float | None = 30 * DAY
    #: Seconds a timeline event is kept; None: forever.
    keep_events: float | None = 90 * DAY
    #: An engine prunes when it is idle, at most once per this many seconds.
    every: float = 3600.0
    #: Seconds the change stream's tombstones are kept; None: forever. Not a setting: a
    #: viewer away for longer than this reloads what it shows.
    keep_tombstones: float | None = 7 * DAY

    @classmethod
    def from_days(
        cls, runs_days: float | None, events_days: float | None, *, every: float = 3600.0
    ) -> RetentionPolicy:
        """From the settings' days: 0 or None keeps forever."""
        return cls(_seconds(runs_days), _seconds(events_days), every)

    @property
    def keeps_everything(self) -> bool:
        return self.keep_runs is None and self.keep_events is None


def _seconds(days: float | None) -> float | None:
    if days is None or days == 0:
        return None
    if days < 0:
        raise ValueError(f"a retention period cannot be negative (got {days} days)")
    return days * DAY


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What a prune removed (or, with ``dry_run``, would remove)."""

    runs: int = 0
    tasks: int = 0
    dependencies: int = 0
    #: Timeline events of the runs removed.
    events: int = 0
    restart_log: int = 0
    #: Notices of the runs removed (shown or not).
    notices: int = 0
    #: Timeline events removed for their age, of runs that are kept.
    old_events: int = 0
    #: Engines' rows (``fredica hosts --all``) of engines gone for as long as a finished run
    #: is kept — stopped, or silent since (crashed) — that hold no task.
    workers: int = 0
    #: Write transactions it took (none for a dry run).
    transactions: int = 0
    #: The longest of them held the write lock this long (information, never a promise).
    longest_transaction_ms: float = 0.0
    dry_run: bool = False

    @property
    def removed(self) -> int:
        """Rows removed (or that would be), all tables together."""
        return (
            self.runs
            + self.tasks
            + self.dependencies
            + self.events
            + self.restart_log
            + self.notices
            + self.old_events
            + self.workers
        )

    def as_json(self) -> dict[str, Any]:
        return asdict(self)
