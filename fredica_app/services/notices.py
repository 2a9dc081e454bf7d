"""What the desktop app tells the user of finished runs: each notice the store kept (written in
the transaction that ended the run), taken once and dressed with the material's name and what
failed.

The words a notification shows are the GUI's (translated there); this gives it the facts.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from workers.errors import NotFound
from workers.records import NoticeRecord
from workers.states import TaskStatus

if TYPE_CHECKING:
    from fredica_app.services.app import Fredica

NoticeKind = Literal["run_completed", "run_failed"]


@dataclass(frozen=True, slots=True)
class RunNotice:
    """A run that completed or failed, for a notification."""

    id: int
    kind: NoticeKind
    run_id: str
    #: The material's title; the template's name when the run has no material.
    title: str
    template: str | None
    #: When the run ended (Unix seconds).
    finished_at: float
    #: A failed run: the type of its first failed task and its error.
    failed_task: str | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.kind == "run_failed"


@dataclass(frozen=True, slots=True)
class TakenNotices:
    """The notices taken at once: the first ones, told in detail, and how many runs finished
    in all (and failed) — the true counts, however many were taken."""

    notices: list[RunNotice]
    total: int
    failed: int


#: Notices taken at once beyond the detailed ones, only to be counted.
COUNTED_AT_ONCE = 5000
#: At most this many takes to count what is left (notices keep coming while a queue runs).
COUNTING_TAKES = 100


async def take_run_notices(app: Fredica, limit: int = 200) -> TakenNotices:
    """The notices not shown yet, each marked shown as it is taken (it is never returned
    again, to this process or another): the oldest ``limit`` in detail (notices of runs
    removed since are dropped), and the counts of them all."""
    taken = await app.store.take_notices(limit)
    counted = list(taken)
    if len(taken) == limit:  # more than are told in detail: count the rest
        for _ in range(COUNTING_TAKES):
            more = await app.store.take_notices(COUNTED_AT_ONCE)
            counted += more
            if len(more) < COUNTED_AT_ONCE:
                break
    detailed = await _detailed(app, taken)
    failed = sum(1 for n in counted if n.kind == "run_failed")
    return TakenNotices(detailed, len(counted), failed)


async def _detailed(app: Fredica, taken: list[NoticeRecord]) -> list[RunNotice]:
    notices: list[RunNotice] = []
    runs = {}
    for notice in taken:
        try:
            runs[notice.id] = await app.store.get_run(notice.workflow_run_id)
        except NotFound:
            continue
    material_ids = [r.material_id for r in runs.values() if r.material_id]
    titles = await asyncio.to_thread(app.library.titles, material_ids) if material_ids else {}
    for notice in taken:
        run = runs.get(notice.id)
        if run is None:
            continue
        failed_task = error = None
        if notice.kind == "run_failed":
            failed = [
                t for t in await app.store.list_tasks(run.id) if t.status is TaskStatus.FAILED
            ]
            if failed:
                first = min(failed, key=lambda t: t.completed_at or 0.0)
                failed_task, error = first.type, first.error
        title = titles.get(run.material_id or "") or run.template or run.id[:8]
        notices.append(
            RunNotice(
                id=notice.id,
                kind="run_failed" if notice.kind == "run_failed" else "run_completed",
                run_id=run.id,
                title=title,
                template=run.template,
                finished_at=notice.created_at,
                failed_task=failed_task,
                error=error,
            )
        )
    return notices
