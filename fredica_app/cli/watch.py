"""``fredica watch [RUN_ID] [--json]``: the queue's changes as they happen, whoever makes them
(an engine in a ``worker``, the app, a command).

Without a run it prints what changes from now on, until Ctrl-C. With one it prints the run and
its tasks as they are, then their changes, and exits once every task of the run has finished
(or the run is deleted). A line per change of a row: a row that changes several times between
two reads of the stream shows its latest state once (progress is written at most twice a
second per task).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from fredica_app.cli.display import task_progress
from fredica_app.cli.process import on_signals
from fredica_app.cli.run_filter import run_filter
from fredica_app.cli.shapes import run_json, task_json
from fredica_app.services import Fredica
from fredica_app.services.queries import Queries, RunFilter, TaskFilter
from fredica_app.views.records import task_state
from workers.changes import Change, Tombstone, run_ended
from workers.errors import NotFound
from workers.records import RunRecord, TaskRecord

#: Prints one change (a line of text or of JSON).
_Show = Callable[[Change], None]


async def cmd_watch(app: Fredica, args: argparse.Namespace) -> int:
    """Print the change stream until Ctrl-C (exit 0) or, with a run, until the run ends."""
    show = _json_line if args.json else _human_line
    queries = Queries(app.store)
    stop = asyncio.Event()
    named = None
    if args.material is not None:
        named = await asyncio.to_thread(app.library.matching, args.material)
    wanted = run_filter(args, named, time.time(), terminal=False)
    if wanted != ANY_RUN:
        show = _Filtered(app, wanted, show)
    with on_signals(lambda _sig: stop.set()):
        run_id = None if args.run_id is None else (await app.store.get_run(args.run_id)).id
        watching = asyncio.create_task(_watch(queries, run_id, show))
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({watching, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for job in (watching, stopped):
                job.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stopped
        if watching.done() and not watching.cancelled():
            watching.result()  # the database failed, or no such run: say so
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    return 0


#: What the options ask for when none is given.
ANY_RUN = RunFilter(limit=None)


class _Filtered:
    """Shows only the changes of the runs ``wanted`` accepts: a run's when it does, a task's
    when its run does (its own state matching ``--status``), a deletion when its run was shown
    (or is not known here)."""

    def __init__(self, app: Fredica, wanted: RunFilter, show: _Show) -> None:
        self.app, self.show = app, show
        self.wanted = replace(wanted, status=())  # a run's other conditions
        self.states = {s.value for s in wanted.status}
        self.runs: dict[str, RunRecord] = {}

    def __call__(self, change: Change) -> None:
        record = change.record
        if isinstance(record, RunRecord):
            self.runs[record.id] = record
            if self.wanted.accepts(record) and self._state(record.status.value):
                self.show(change)
        elif isinstance(record, TaskRecord):
            run = self.runs.get(record.workflow_run_id or "")
            if run is not None and self.wanted.accepts(run) and self._state(record.status.value):
                self.show(change)
        else:
            run = self.runs.get(record.workflow_run_id or "")
            if run is None or self.wanted.accepts(run):
                self.show(change)

    def _state(self, value: str) -> bool:
        return not self.states or value in self.states

    async def know(self, run_ids: set[str]) -> None:
        """Read the runs of these tasks that it has not seen yet."""
        for run_id in run_ids - set(self.runs):
            with contextlib.suppress(NotFound):
                self.runs[run_id] = await self.app.store.get_run(run_id)


async def _watch(queries: Queries, run_id: str | None, show: _Show) -> None:
    if run_id is None:
        cursor = await queries.cursor()
    else:
        snap = await queries.snapshot(
            RunFilter(ids=[run_id], limit=None), TaskFilter(run_ids=[run_id], limit=None)
        )
        if not snap.runs:
            raise NotFound(f"no run {run_id}")
        records: list[RunRecord | TaskRecord] = [*snap.runs, *snap.tasks]
        for row in records:
            show(Change(snap.cursor, row))
        _flush()
        if run_ended(snap.runs[0]):
            return
        cursor = snap.cursor
    async for changes in queries.follow(cursor, run_id):
        ended = False
        if isinstance(show, _Filtered):  # a task's run, to know whether it is shown
            await show.know({t.workflow_run_id for t in changes.tasks if t.workflow_run_id})
        for change in changes.changes:
            show(change)
            record = change.record
            if run_id is not None and isinstance(record, RunRecord):
                ended = run_ended(record)
            if run_id is not None and isinstance(record, Tombstone) and record.kind == "run":
                ended = True
        _flush()
        if ended:
            return


# --- output ---------------------------------------------------------------------------------


def _json_line(change: Change) -> None:
    record = change.record
    if isinstance(record, RunRecord):
        data = run_json(record)
    elif isinstance(record, TaskRecord):
        data = task_json(record)
    else:
        data = {
            "kind": record.kind,
            "id": record.id,
            "workflow_run_id": record.workflow_run_id,
            "deleted_at": record.deleted_at,
        }
    print(json.dumps({"kind": change.kind, "seq": change.seq, "record": data}))


def _human_line(change: Change) -> None:
    at = time.time()
    stamp = time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at * 1000) % 1000:03d}"
    record = change.record
    if isinstance(record, RunRecord):
        what = record.template or "spec"
        line = (
            f"run   {record.id[:8]}  {record.status.value}  "
            f"{record.done_tasks}/{record.total_tasks} done  {what}"
        )
    elif isinstance(record, TaskRecord):
        run = (record.workflow_run_id or "-")[:8]
        line = (
            # Padded like `fredica run`'s table, so that a run's lines read as columns.
            f"task  {run}  {record.key or record.id[:8]:<17} {record.type:<17} "
            f"{task_progress(record):>7}  {task_state(record)}"
        )
    else:
        run = (record.workflow_run_id or "-")[:8]
        line = f"gone  {run}  {record.kind} {record.id} deleted"
    print(f"{stamp}  {line}")


def _flush() -> None:
    # Whoever reads a pipe sees each set of changes as it comes, not when a buffer fills.
    sys.stdout.flush()
