"""The change stream's values: what a viewer asks for and what it gets back. Pure: no I/O.

A viewer loads a :class:`Snapshot` (pages of runs and tasks, and the cursor at which they were
read), then asks for the changes since that cursor again and again. Each :class:`ChangeSet`
holds the *current* state of every run and task that changed since the cursor — one entry per
row however often it changed, in the order of their last change — and the ids of the rows
deleted since, with the cursor to ask from next. Applying a change set is an upsert (or a
removal) by id, so applying one twice, or over a page read after the cursor, is harmless.

The numbers come from the database (workers.models, "the change stream"): every visible change
of a row gets the next one, whoever writes it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from workers.records import RunRecord, TaskRecord
from workers.states import RunStatus, TaskStatus

#: Where a page ends: the last row's ``(created_at, id)``; the next page starts after it.
PageKey = tuple[float, str]

ChangeKind = Literal["run", "task", "deleted"]


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A task or a run that was deleted (retention, ``fredica remove``)."""

    #: ``task`` or ``run``.
    kind: Literal["task", "run"]
    id: str
    #: The deleted task's run (a deleted run: its own id).
    workflow_run_id: str | None
    #: Unix seconds.
    deleted_at: float


@dataclass(frozen=True, slots=True)
class Change:
    """One entry of a change set: the row as it is now, stamped ``seq`` by its last change."""

    seq: int
    record: RunRecord | TaskRecord | Tombstone

    @property
    def kind(self) -> ChangeKind:
        if isinstance(self.record, RunRecord):
            return "run"
        if isinstance(self.record, TaskRecord):
            return "task"
        return "deleted"


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """What changed after a cursor, up to :attr:`cursor`."""

    #: Ask from here next time.
    cursor: int
    #: In the order of their last change; one entry per row.
    changes: tuple[Change, ...] = ()
    #: The set was cut at its limit: more changes are already there, ask again at once.
    more: bool = False

    @property
    def runs(self) -> list[RunRecord]:
        return [c.record for c in self.changes if isinstance(c.record, RunRecord)]

    @property
    def tasks(self) -> list[TaskRecord]:
        return [c.record for c in self.changes if isinstance(c.record, TaskRecord)]

    @property
    def deleted(self) -> list[Tombstone]:
        return [c.record for c in self.changes if isinstance(c.record, Tombstone)]


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a snapshot (or ``fredica runs``) reads: newest first, one page of ``limit``
    (None: all)."""

    #: Only these runs (None: any).
    ids: Collection[str] | None = None
    #: Only runs in these statuses (empty: any).
    status: Collection[RunStatus] = ()
    material_id: str | None = None
    limit: int | None = 1000
    #: The previous page's :attr:`Snapshot.next_runs`.
    after: PageKey | None = None
    #: Only runs of these templates (empty: any).
    templates: Collection[str] = ()
    #: Only runs of these materials (None: any; empty: none).
    material_ids: Collection[str] | None = None
    #: Only runs created at or after this (Unix seconds).
    since: float | None = None

    def accepts(self, run: RunRecord) -> bool:
        """Whether ``run`` is one of the runs this filter reads (its page aside)."""
        return (
            (self.ids is None or run.id in self.ids)
            and (not self.status or run.status in self.status)
            and (self.material_id is None or run.material_id == self.material_id)
            and (not self.templates or run.template in self.templates)
            and (self.material_ids is None or run.material_id in self.material_ids)
            and (self.since is None or run.created_at >= self.since)
        )


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """Which tasks a snapshot reads: oldest first (a run's spec order), a page of ``limit``."""

    #: Only tasks of these runs (None: any).
    run_ids: Collection[str] | None = None
    #: Only tasks in these statuses (empty: any).
    status: Collection[TaskStatus] = ()
    limit: int | None = 1000
    #: The previous page's :attr:`Snapshot.next_tasks`.
    after: PageKey | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Pages of runs and tasks read in one read transaction, and the stream's cursor then:
    following the changes from :attr:`cursor` misses nothing that changed after the read.

    A viewer that reads several pages at different times follows from the smallest of their
    cursors (re-applying a change is harmless)."""

    cursor: int
    runs: tuple[RunRecord, ...] = ()
    tasks: tuple[TaskRecord, ...] = ()
    #: Where the next page of runs starts; None on the last page.
    next_runs: PageKey | None = None
    next_tasks: PageKey | None = None


def run_ended(run: RunRecord) -> bool:
    """Whether every task of the run has finished (a failed run may still have some running)."""
    return run.pending_tasks + run.claimed_tasks + run.running_tasks == 0
