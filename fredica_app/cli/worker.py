"""The engine: ``worker`` runs it, ``doctor`` checks that it can run here."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections import Counter

from fredica_app.cli.output import print_json
from fredica_app.display import finished_run_line, worker_summary
from fredica_app.doctor import diagnose
from fredica_app.errors import FredicaError
from fredica_app.services import Fredica
from workers.events import Event, RunChanged

#: Run statuses a run ends in (``worker`` prints a line for each).
FINISHED_RUN_STATUSES = frozenset({"completed", "failed", "cancelled"})


async def cmd_worker(app: Fredica, args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    finished = _FinishedRuns(app)
    async with app.engine_session(max_workers=args.max_workers) as engine:
        engine.bus.subscribe(finished)
        report = engine.recovery
        if report is not None and report.total:
            print(
                f"recovered: {report.summary} (see `fredica restart-log`)",
                file=sys.stderr,
            )
        stopping: list[asyncio.Task[None]] = []

        def on_signal() -> None:
            if not stopping:
                print("stopping: letting running tasks checkpoint…", file=sys.stderr)
                stopping.append(asyncio.ensure_future(engine.stop()))

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        try:
            await engine.run(until_idle=args.until_idle)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            if stopping:
                await stopping[0]
    await finished.drain()
    elapsed = time.monotonic() - engine.stats.started_at
    stats = engine.stats
    print(worker_summary(finished.statuses, stats.completed, stats.failed, elapsed))
    return 0


class _FinishedRuns:
    """``worker``: a line for each run its engine finishes, as it finishes (an engine event;
    the line is read from the database)."""

    def __init__(self, app: Fredica) -> None:
        self.app = app
        self.statuses: Counter[str] = Counter()
        self._printing: set[asyncio.Task[None]] = set()

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunChanged) and event.status in FINISHED_RUN_STATUSES:
            job = asyncio.ensure_future(self._print(event.run_id))
            self._printing.add(job)
            job.add_done_callback(self._printing.discard)

    async def _print(self, run_id: str) -> None:
        try:
            run = await self.app.store.get_run(run_id)
        except FredicaError:  # removed meanwhile: nothing to say of it
            return
        progress = (await self.app.store.run_progress([run_id])).get(run_id)
        ids = [run.material_id] if run.material_id else []
        titles = await asyncio.to_thread(self.app.library.titles, ids)
        self.statuses[run.status.value] += 1
        print(finished_run_line(run, progress, titles.get(run.material_id or "")), flush=True)

    async def drain(self) -> None:
        """Wait for the lines still being read."""
        await asyncio.gather(*self._printing, return_exceptions=True)


async def cmd_doctor(app: Fredica, args: argparse.Namespace) -> int:
    checks = await diagnose(app)
    if args.json:
        print_json([c.as_json() for c in checks])
    else:
        for c in checks:
            mark = "ok  " if c.ok else "FAIL"
            print(f"[{mark}] {c.name}: {c.detail}" + ("" if c.ok else f"\n       fix: {c.fix}"))
    return 0 if all(c.ok for c in checks) else 1
