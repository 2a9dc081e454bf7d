"""The engine: ``worker`` runs it, ``doctor`` checks that it can run here.

``worker --until-idle --then ACTION`` acts once the engine has stopped and its summary is
printed: a desktop notification (a line on standard error when there is no notifier), or
sleep or shut down after a countdown that Ctrl-C or SIGTERM cancels
(:mod:`fredica_app.desktop.power` has the commands).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections import Counter

from fredica_app.cli.display import finished_run_line, note_lines, worker_summary
from fredica_app.cli.shapes import print_json
from fredica_app.desktop import power
from fredica_app.desktop.power import CommandRunner, WhenDone
from fredica_app.errors import FredicaError
from fredica_app.services import Fredica
from fredica_app.services.doctor import diagnose
from workers.events import EngineHeld, Event, RunChanged

#: Run statuses a run ends in (``worker`` prints a line for each).
FINISHED_RUN_STATUSES = frozenset({"completed", "failed", "cancelled"})

#: What runs ``--then``'s commands (the notifier, sleep, shut down); tests put a fake here.
RUN_COMMAND: CommandRunner = power.run_command
#: The system whose commands ``--then`` runs (tests pretend to be another).
PLATFORM = sys.platform
#: ``--then sleep|shutdown``: the seconds left to cancel, and between two lines saying so.
COUNTDOWN_SECONDS: float = power.COUNTDOWN_SECONDS
COUNTDOWN_STEP: float = 10.0
#: The exit status of wrong usage (as argparse's).
EXIT_USAGE = 2


async def cmd_worker(app: Fredica, args: argparse.Namespace) -> int:
    then = WhenDone(args.then or WhenDone.NOTHING)
    if args.then is not None and not args.until_idle:
        sys.stderr.write(
            f"{args.usage}fredica worker: error: --then needs --until-idle (without it the "
            "worker runs until it is stopped: the queue is never done)\n"
        )
        return EXIT_USAGE
    loop = asyncio.get_running_loop()
    finished = FinishedRuns(app)
    async with app.engine_session(max_workers=args.max_workers, start_endpoints=True) as engine:
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
    summary = worker_summary(finished.statuses, stats.completed, stats.failed, elapsed)
    print(summary, flush=True)
    if stopping:  # stopped by the user, not done: nothing to do "when done"
        return 0
    return await _when_done(then, summary)


async def _when_done(then: WhenDone, summary: str) -> int:
    """``--then``: what to do now that the queue is done (the summary is printed)."""
    if then is WhenDone.NOTIFY:
        if not power.notify("Fredica: the queue is done", summary, RUN_COMMAND, PLATFORM):
            print(f"fredica: the queue is done: {summary}", file=sys.stderr)
        return 0
    if not then.powers_off:  # nothing, quit: this command ends either way
        return 0
    power.power_command(then, PLATFORM)  # an unknown system is refused before the countdown
    cancelled_by = await _countdown(then)
    if cancelled_by is not None:
        print("cancelled: the computer stays on", file=sys.stderr)
        return 130 if cancelled_by == signal.SIGINT else 0
    print(power.countdown_text(then, 0), file=sys.stderr, flush=True)
    power.perform(then, RUN_COMMAND, PLATFORM)
    return 0


async def _countdown(then: WhenDone) -> signal.Signals | None:
    """A line every ``COUNTDOWN_STEP`` seconds until ``COUNTDOWN_SECONDS`` have passed; the
    signal (SIGINT, SIGTERM) that cancelled it, or None when it ran out."""
    loop = asyncio.get_running_loop()
    got: asyncio.Future[signal.Signals] = loop.create_future()

    def on_signal(sig: signal.Signals) -> None:
        if not got.done():
            got.set_result(sig)

    watched = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: Ctrl-C raises instead
            loop.add_signal_handler(sig, on_signal, sig)
            watched.append(sig)
    try:
        started = loop.time()
        lines = 0
        while (left := power.seconds_left(started, loop.time(), COUNTDOWN_SECONDS)) > 0:
            print(
                f"{power.countdown_text(then, left)} — press Ctrl-C to cancel",
                file=sys.stderr,
                flush=True,
            )
            lines += 1
            until = min(started + lines * COUNTDOWN_STEP, started + COUNTDOWN_SECONDS)
            await asyncio.wait({got}, timeout=max(0.0, until - loop.time()))
            if got.done():
                return got.result()
        return None
    finally:
        for sig in watched:
            loop.remove_signal_handler(sig)


class FinishedRuns:
    """``worker`` and ``watch-folders``: a line for each run their engine finishes, as it
    finishes (an engine event; the line is read from the database)."""

    def __init__(self, app: Fredica) -> None:
        self.app = app
        self.statuses: Counter[str] = Counter()
        self._printing: set[asyncio.Task[None]] = set()

    def __call__(self, event: Event) -> None:
        if isinstance(event, EngineHeld):
            if event.reason is None:
                print("fredica: the database can be written again: going on", file=sys.stderr)
            else:
                print(
                    f"fredica: waiting: {event.reason}; running tasks go on, nothing new starts "
                    "until the database can be written",
                    file=sys.stderr,
                    flush=True,
                )
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
        lines = [finished_run_line(run, progress, titles.get(run.material_id or ""))]
        if progress is not None and progress.notes:  # what its jobs left to be read
            lines += ["  " + line for line in note_lines(await self.app.store.list_tasks(run_id))]
        print("\n".join(lines), flush=True)

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
