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


async def take_run_notices(app: Fredica, limit: int = 200) -> list[RunNotice]:
    """The notices not shown yet, oldest first, each marked shown as it is taken (it is never
    returned again, to this process or another). Notices of runs removed since are dropped."""
    taken = await app.store.take_notices(limit)
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
