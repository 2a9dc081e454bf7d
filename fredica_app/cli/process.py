"""``fredica process``: import, submit, run (or follow) until the run ends, with live progress.

When no engine runs on the data directory, one is started here (with the endpoints server) and
stopped once the run has ended. When one does (a ``worker`` or the app), the run is submitted to
it and followed through the database. Ctrl-C holds the run's unfinished tasks (running jobs are
paused, then the engine stops without waiting for them) and says how to continue.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from fredica_app.cli.display import note_lines, task_columns, task_label
from fredica_app.errors import (
    DatabaseLocked,
    FredicaError,
    MediaImportError,
    NoSubtitlesFor,
    TemplateError,
)
from fredica_app.services import Fredica
from fredica_app.services.queries import Queries
from fredica_app.views.records import task_outputs, task_state
from workers.changes import RunFilter, TaskFilter
from workers.records import RunRecord, TaskRecord
from workers.states import TaskStatus, is_terminal

POLL = 0.25


@dataclass
class Outcome:
    runs: list[RunRecord]
    tasks: dict[str, list[TaskRecord]]
    #: "done" (every task ended) or "paused" (Ctrl-C held it).
    ended_by: str = "done"

    @property
    def completed(self) -> bool:
        return self.ended_by == "done" and all(r.status.value == "completed" for r in self.runs)


def sample_path(app: Fredica) -> Path:
    return app.paths.data_dir / "samples" / "fredica-sample.mkv"


async def ensure_sample(app: Fredica) -> Path:
    """The sample clip, generated with the bundled ffmpeg the first time it is needed."""
    from python_endpoints.jobs.sample import make_sample

    path = sample_path(app)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(make_sample, path, ffmpeg=_ffmpeg(app), speech=True)
    return path


def _ffmpeg(app: Fredica) -> str | None:
    return str(app.settings.ffmpeg_path) if app.settings.ffmpeg_path else None


@dataclass
class _Interrupts:
    """Ctrl-C and SIGTERM. In a terminal the first Ctrl-C pauses the run in place and asks;
    a second one, a SIGTERM, or a Ctrl-C without a terminal to ask on, quits."""

    count: int = 0
    terminated: bool = False
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def __call__(self, sig: signal.Signals = signal.SIGINT) -> None:
        self.count += 1
        self.terminated |= sig is not signal.SIGINT
        self.event.set()

    @property
    def may_ask(self) -> bool:
        """Whether to pause in place and ask, rather than quit."""
        return self.count == 1 and not self.terminated and _interactive()

    def reset(self) -> None:
        self.count = 0
        self.event.clear()


def _interactive() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty() and sys.platform != "win32"
    except ValueError:  # stdin closed
        return False


@contextlib.contextmanager
def on_signals(handler: Callable[[signal.Signals], object]) -> Iterator[None]:
    """Ctrl-C and SIGTERM call ``handler`` (with the signal) on the running loop instead of
    raising, for the duration of the block (where the platform or the thread allows it)."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # Windows, non-main thread
            loop.add_signal_handler(sig, handler, sig)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def _enter_or_interrupt(interrupts: _Interrupts) -> bool:
    """Wait for Enter on the terminal (True) or another Ctrl-C / SIGTERM (False)."""
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    enter = asyncio.Event()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if b"\n" in data or b"\r" in data or not data:
            enter.set()

    interrupts.event.clear()
    loop.add_reader(fd, readable)
    try:
        waiters = {
            asyncio.ensure_future(enter.wait()),
            asyncio.ensure_future(interrupts.event.wait()),
        }
        _, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for waiter in pending:
            waiter.cancel()
    finally:
        loop.remove_reader(fd)
    return enter.is_set() and interrupts.count == 1


async def process(
    app: Fredica,
    items: list[str],
    template: str,
    *,
    priority: int = 0,
    console: Console | None = None,
    params: Mapping[str, str] | None = None,
) -> Outcome:
    console = console or Console(stderr=True)
    report = await app.import_items(items)
    if not report.materials:
        raise MediaImportError(f"no media found in {', '.join(items)}")
    run_ids: list[str] = []
    submitted = await app.submit_for_materials(
        report.materials, template, priority=priority, params=params, passed_over=(NoSubtitlesFor,)
    )
    for material, created in zip(report.materials, submitted, strict=True):
        if isinstance(created, FredicaError):  # a batch goes on without it, saying so
            console.print(f"[yellow]skipped {created}[/]")
            continue
        if created.deduplicated:
            console.print(
                f"[yellow]{material.title}: a run of {template} is already active "
                f"({created.run_id}); following it[/]"
            )
            await app.control.resume(created.run_id)
        run_ids.append(created.run_id)
    if not run_ids:
        raise TemplateError("nothing submitted: no video had its subtitles beside it")
    return await run_or_follow(app, run_ids, console)


async def run_or_follow(
    app: Fredica, run_ids: list[str], console: Console | None = None
) -> Outcome:
    """Run submitted runs to their end with live progress: on an engine started here when
    none runs on the data directory, else by following the one that runs (``worker``, the
    app). Ctrl-C as described in the module's docstring."""
    console = console or Console(stderr=True)
    interrupts = _Interrupts()
    with on_signals(interrupts):
        if app.lock.is_held_elsewhere():
            console.print("an engine already runs on this data directory: following the run")
            return await _follow_then_settle(app, run_ids, interrupts, console)
        try:
            async with app.engine_session(start_endpoints=True) as engine:
                runner = asyncio.create_task(engine.run())
                try:
                    return await _follow_then_settle(app, run_ids, interrupts, console, runner)
                finally:
                    await engine.stop()
                    await runner
        except DatabaseLocked:  # another engine started in between
            return await _follow_then_settle(app, run_ids, interrupts, console)


async def _follow_then_settle(
    app: Fredica,
    run_ids: list[str],
    interrupts: _Interrupts,
    console: Console,
    runner: asyncio.Task[None] | None = None,
) -> Outcome:
    """Follow the runs. In a terminal, a first Ctrl-C pauses them in place (running jobs
    are paused, ffmpeg suspended) and asks: Enter resumes them where they were, a second
    Ctrl-C quits. Quitting (that, a SIGTERM, a Ctrl-C with no terminal to ask on) leaves the
    runs held. When our own engine stops with an error (the database failed), raise it."""

    async def hold(paused: bool) -> None:
        for rid in run_ids:
            # The front door tells our own engine directly (its running jobs are paused at
            # once), or writes the database for the engine of another process.
            await (app.control.pause(rid) if paused else app.control.resume(rid))

    while True:
        ended_by = await _follow(app, run_ids, interrupts, console, runner)
        if ended_by != "paused":
            break
        if not interrupts.may_ask:
            console.print("[yellow]holding the run: its running jobs are paused[/]")
            await hold(True)
            break
        await hold(True)
        console.print(
            "[yellow]paused — Enter resumes, Ctrl-C again leaves the run held and quits[/]"
        )
        if not await _enter_or_interrupt(interrupts):
            console.print("[yellow]holding the run: its running jobs are paused[/]")
            break
        await hold(False)
        console.print("resumed")
        interrupts.reset()
    # One read for the whole batch, not two per run.
    snap = await Queries(app.store).snapshot(
        RunFilter(ids=run_ids, limit=None), TaskFilter(run_ids=run_ids, limit=None)
    )
    by_id = {r.id: r for r in snap.runs}
    tasks: dict[str, list[TaskRecord]] = {rid: [] for rid in run_ids}
    for t in sorted(snap.tasks, key=lambda t: (t.created_at, t.id)):
        if t.workflow_run_id in tasks:
            tasks[t.workflow_run_id].append(t)
    return Outcome([by_id[rid] for rid in run_ids if rid in by_id], tasks, ended_by)


async def _follow(
    app: Fredica,
    run_ids: list[str],
    interrupts: _Interrupts,
    console: Console,
    runner: asyncio.Task[None] | None = None,
) -> str:
    """Show the runs' tasks until every one has ended ("done") or Ctrl-C ("paused")."""
    display = Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=24),
        TextColumn("{task.percentage:>5.1f} %"),
        TextColumn("{task.fields[state]}"),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    )
    bars: dict[str, TaskID] = {}
    seen: dict[str, str] = {}
    ended_by = "done"
    # The change stream, not the whole runs every time: a read of a counter when nothing moved;
    # and only the tasks that changed are drawn again (a folder's batch is thousands of lines).
    follower = Queries(app.store).follower(run_ids)
    await follower.start()
    widths = task_columns(follower.changed)
    with display:
        while True:
            if follower.changed:
                grown = task_columns(follower.changed)
                wider = (max(widths[0], grown[0]), max(widths[1], grown[1]))
                redraw = follower.changed
                if wider != widths:  # every line again, in the new columns
                    widths = wider
                    redraw = [t for ts in follower.tasks.values() for t in ts]
                for t in redraw:
                    _show(display, bars, seen, t, console, widths)
            if interrupts.count:
                ended_by = "paused"
                break
            if runner is not None and runner.done():
                runner.result()  # the engine stopped under us: its error ends the command
                break
            if follower.ended:
                break
            await follower.wait(POLL, interrupts.event)
    # What the jobs left to be read (an input shorter than its header said…), once, at the end.
    for line in note_lines(t for ts in follower.tasks.values() for t in ts):
        console.print(line, style="yellow", markup=False, highlight=False)
    return ended_by


def _show(
    display: Progress,
    bars: dict[str, TaskID],
    seen: dict[str, str],
    t: TaskRecord,
    console: Console,
    widths: tuple[int, int],
) -> None:
    """One task's line: its state as it is now (a finished task, how it ended)."""
    state = task_state(t)
    progress = 100.0 if t.status is TaskStatus.COMPLETED else t.progress
    label = task_label(t, widths)
    if t.id not in bars:
        bars[t.id] = display.add_task(label, total=100, state="")
    display.update(bars[t.id], description=label, completed=progress, state=state)
    held = t.is_paused and not is_terminal(t.status)
    change = f"{t.status.value}{' (held)' if held else ''}"
    if not console.is_terminal and seen.get(t.id) != change:
        # No live display (a pipe, a log file): a line per change of status, not of progress.
        seen[t.id] = change
        print(f"{label}  {state}", file=sys.stderr)
        for path in task_outputs(t):
            print(f"{' ' * widths[0]}  → {path}", file=sys.stderr)
