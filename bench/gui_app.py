"""GUI benchmark: the whole window (``fredica_app.gui``), offscreen, on real data directories.

1. Launch: a fresh Python process builds ``GuiApp`` on a new data directory, starts it and
   waits until the window is visible and has been painted; the figure runs from just before
   ``Popen`` (parent's clock) to that paint (child's ``time.time()``). Baseline, measured the
   same way in the same run: a process that imports ``PySide6.QtWidgets`` and shows an empty
   ``QWidget``. Targets: < 1.5 s, and at most 0.8 s more than the baseline (medians of 3).
2. Opening 10,000 tasks: a data directory of 1,000 runs of 10 NOOP tasks in its SQLite file
   (the queue paused, so that nothing runs them), then ``AppHost`` + ``MainWindow`` on it,
   the window shown and painted first; from ``host.start()`` until the queue page's task
   model holds 10,000 rows and its view has painted them. Target: < 1 s (median of 3).
3. A burst of 1,000 progress events over those 10,000 rows, all marked running first:
   emitted on the window's feed as the bridge batches them (80 ms apart, ~80 rows each; and
   all in one batch); each emit (every page's slot) + repaint of the task view's visible rows
   is timed on the GUI thread (wall time; its own CPU time is printed beside it, to tell a
   busy GUI thread from a busy machine). Target: max < 50 ms, p99 < 20 ms.
4. Idle with a running queue: 50 SLEEP tasks of 120 s run in the window's engine
   (max_workers 50, io slots 50); the GUI thread's CPU time (``time.thread_time()`` read on
   it) over 10 s of its event loop; the whole process's for context. Target: < 3 % of one core.
5. A big library: 2,000 real clips (``bench/batch.py --part short``'s, made once) imported as
   ``fredica add`` does, and an ``extract_subtitles`` run for each (PROBE + EXTRACT_SUBTITLES:
   2,000 runs, 4,000 tasks), the queue paused. Opening: from ``host.start()`` until the
   library page holds the 2,000 materials and the queue page the 4,000 tasks, the library
   painted (median of 3; target < 1 s). Scrolling: the library's table, then the queue's
   task view, scrolled a wheel step (3 rows) at a time from top to bottom and back, 400 steps
   each, every step repainted on the GUI thread (wall time per step; target p99 < 20 ms).

Parts 2 to 5 run in the bench's process with the app's garbage collection: automatic
collection off, the GUI thread collecting by a timer (``fredica_app.gui.collector``);
``--interpreter-gc`` leaves it to the interpreter, in whichever thread, for comparison.

    .venv/bin/python bench/gui_app.py [--quick] [--only N] [--interpreter-gc]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from subprocess import PIPE, Popen
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import psutil
from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QObject, QTimer, qVersion
from PySide6.QtWidgets import QWidget

from bench._common import pct
from fredica_app.gui.app import make_qapplication
from fredica_app.gui.bridge import INTERVAL_MS
from fredica_app.gui.collector import GuiThreadCollector
from fredica_app.gui.host import AppHost
from fredica_app.gui.window import MainWindow
from fredica_app.paths import resolve_paths
from fredica_app.services import Fredica
from workers.changes import Change
from workers.spec import parse_spec, prepare_run
from workers.states import TaskStatus

#: The child of part 1: ``fredica`` (GuiApp on a data directory) or ``baseline`` (an empty
#: QWidget); prints ``time.time()`` once the window is visible and painted.
CHILD = r"""
import sys, time
from PySide6.QtCore import QEvent, QEventLoop, QObject, QTimer
mode, data_dir = sys.argv[1], sys.argv[2]
if mode == "fredica":
    from fredica_app.gui.app import GuiApp, make_qapplication
    qapp = make_qapplication()
    gui = GuiApp(qapp, data_dir)
    window, start = gui.window, gui.start
else:
    from PySide6.QtWidgets import QApplication, QWidget
    qapp, gui, window = QApplication(sys.argv[:1]), None, QWidget()
    start = window.show
loop, painted = QEventLoop(), []
class Painted(QObject):
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and window.isVisible() and not painted:
            painted.append(True)
            loop.quit()  # once this event (the whole frame) is done
        return False
window.installEventFilter(watcher := Painted())
start()
QTimer.singleShot(60_000, loop.quit)
if not painted:
    loop.exec()
print(repr(time.time()) if painted else "timeout", flush=True)
if gui is not None:
    gui.host.shutdown()
    gui.host.join(30)
"""

Row = tuple[str, str, str, str]


def launch(mode: str) -> float:
    """Seconds from just before ``Popen`` to the child's window painted."""
    with tempfile.TemporaryDirectory(prefix="fredica-bench-") as d:
        started = time.time()
        proc = Popen([sys.executable, "-c", CHILD, mode, d], stdout=PIPE, stderr=PIPE, text=True)
        out, err = proc.communicate(timeout=180)
    if proc.returncode != 0 or out.split()[:1] in ([], ["timeout"]):
        raise RuntimeError(f"{mode} child failed ({proc.returncode}): {out}{err[-2000:]}")
    return float(out.split()[0]) - started


def part_launch(rounds: int) -> list[Row]:
    base: list[float] = []
    fred: list[float] = []
    for _ in range(rounds):  # interleaved: both see the same load of the machine
        base.append(launch("baseline"))
        fred.append(launch("fredica"))
    b, f = statistics.median(base), statistics.median(fred)
    print(f"  launch s: fredica {fmt(fred)}; baseline {fmt(base)}")
    what = f"launch → window painted (median of {rounds})"
    return [
        (what, f"{f:.2f} s", "< 1.5 s", verdict(f < 1.5)),
        ("  baseline: PySide6 empty QWidget", f"{b:.2f} s (Fredica {f / b:.1f}x)", "—", ""),
        ("  Fredica less the baseline", f"{f - b:.2f} s", "≤ 0.8 s", verdict(f - b <= 0.8)),
    ]


# --- data directories ------------------------------------------------------------------------


async def fill(d: Path, runs: int, per_run: int, task: dict[str, Any], paused: bool) -> None:
    """``runs`` runs of ``per_run`` tasks made through the store, as ``fredica submit`` does;
    the queue ``paused`` (``fredica pause-queue``) or not."""
    app = Fredica.open(d)
    try:
        for r in range(runs):
            tasks = [{"key": f"r{r}-t{i}", **task} for i in range(per_run)]
            await app.store.create_run(prepare_run(parse_spec({"tasks": tasks}), app.registry))
        app.set_queue_paused(paused)
    finally:
        await app.close()


def run_loop(seconds: float, tick: Callable[[], bool] | None = None, ms: int = 50) -> None:
    """Run the event loop for ``seconds`` at most; ``tick`` every ``ms`` ends it by saying True."""
    loop = QEventLoop()
    timer = QTimer()
    if tick is not None:
        timer.timeout.connect(lambda: loop.quit() if tick() else None)
        timer.start(ms)
    QTimer.singleShot(round(seconds * 1000), loop.quit)
    loop.exec()
    timer.stop()


class PaintWatch(QObject):
    """Quits ``loop`` at a paint of the widget it filters once ``ready()`` (the loop returns
    when that paint is done)."""

    def __init__(self, loop: QEventLoop, ready: Callable[[], bool]) -> None:
        super().__init__()
        self.loop, self.ready = loop, ready

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self.ready():
            self.loop.quit()
        return False


def until_painted(widget: QWidget, ready: Callable[[], bool] = lambda: True) -> None:
    """Run the event loop until ``widget`` has been painted with ``ready()`` true."""
    loop = QEventLoop()
    watch = PaintWatch(loop, ready)
    widget.installEventFilter(watch)
    widget.update()
    QTimer.singleShot(120_000, loop.quit)
    loop.exec()
    widget.removeEventFilter(watch)


def open_window(d: Path, rows: int) -> tuple[AppHost, MainWindow, float]:
    """Show a window on ``d`` (painted, empty), start its host; seconds from ``host.start()``
    until the task model holds ``rows`` rows and the task view has painted them."""
    host = AppHost(d)
    window = MainWindow(host, d)
    window.nav.setCurrentRow(MainWindow.QUEUE)
    window.show()
    viewport = window.queue.tasks_view.viewport()
    until_painted(viewport)
    model = window.queue.tasks
    started = time.perf_counter()
    host.start()
    until_painted(viewport, lambda: model.rowCount() >= rows)
    elapsed = time.perf_counter() - started
    if model.rowCount() < rows:
        raise RuntimeError(f"the task model has {model.rowCount()} rows, not {rows}")
    return host, window, elapsed


def close_window(host: AppHost, window: MainWindow) -> None:
    window.retire()
    host.shutdown()
    if not host.join(60):
        raise RuntimeError("the host did not stop within 60 s")
    QCoreApplication.processEvents()
    window.deleteLater()
    host.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()


def part_open(d: Path, rounds: int) -> list[Row]:
    times = []
    for _ in range(rounds):
        host, window, elapsed = open_window(d, 10_000)
        ran = sum(t.status is not TaskStatus.PENDING for t in window.queue.tasks.records)
        close_window(host, window)
        times.append(elapsed)
    m = statistics.median(times)
    print(f"  open s: {fmt(times)} (tasks not pending at the end of the last: {ran})")
    return [(f"open 10,000 tasks → rows shown (median of {rounds})",
             f"{m:.2f} s", "< 1 s", verdict(m < 1.0))]  # fmt: skip


# --- bursts ----------------------------------------------------------------------------------


def part_burst(d: Path, rounds: int) -> list[Row]:
    host, window, _ = open_window(d, 10_000)
    view = window.queue.tasks_view
    viewport = view.viewport()
    records = {t.id: t for t in window.queue.tasks.records}
    ids = list(records)
    seq = 0
    cpu: list[float] = []  # the GUI thread's own CPU time, beside the wall time it stalls

    def timed(batch: list[Change]) -> float:
        started, own = time.perf_counter(), time.thread_time()
        window.feed.changes.emit(batch)
        viewport.repaint()
        cpu.append(time.thread_time() - own)
        return time.perf_counter() - started

    def change(task_id: str, **fields: Any) -> Change:
        nonlocal seq
        seq += 1
        new = records[task_id] = replace(records[task_id], **fields)
        return Change(seq, new)

    now = time.time()
    running = dict(status=TaskStatus.RUNNING, progress=1.0, attempt=1, claimed_at=now,
                   started_at=now, status_text="sleeping")  # fmt: skip
    mark = timed([change(i, **running) for i in ids])
    visible = view.rowAt(viewport.height() - 1) + 1
    assert view.isVisible() and visible > 0, "the task view is not shown"
    print(
        f"  {len(ids):,} rows marked running in one batch: {mark * 1000:.0f} ms (no target); "
        f"{visible} rows visible; {window.running_tasks:,} running as the window counts"
    )
    rng = random.Random(1)
    scenarios = {"burst, 80 ms batches of ~80": 80, "burst, all in one batch": 1000}
    out: list[Row] = []
    for name, per_batch in scenarios.items():
        stalls: list[float] = []
        del cpu[:]
        for _ in range(rounds):
            events = []
            for _ in range(1000):  # a tenth on the visible rows, so that they repaint
                i = ids[rng.randrange(visible)] if rng.random() < 0.1 else rng.choice(ids)
                done = min(100.0, records[i].progress + rng.random())
                events.append(change(i, progress=done, status_text=f"{120 - done:.1f} s left"))
            # One entry per row and batch, its latest state (as the bridge hands them over).
            chunks = [events[n : n + per_batch] for n in range(0, 1000, per_batch)]
            batches = [list({c.record.id: c for c in chunk}.values()) for chunk in chunks]

            def tick(batches: list[list[Change]] = batches, stalls: list[float] = stalls) -> bool:
                stalls.append(timed(batches.pop(0)))
                return not batches

            run_loop(60, tick, INTERVAL_MS)  # a batch every 80 ms, as the bridge's timer
        mx, p = max(stalls) * 1000, pct(stalls, 99) * 1000
        print(f"  {name}: {len(stalls)} batches, median {statistics.median(stalls) * 1000:.1f} ms,"
              f" p99 {p:.1f} ms, max {mx:.1f} ms; GUI-thread CPU per batch: median "
              f"{statistics.median(cpu) * 1000:.1f} ms, max {max(cpu) * 1000:.1f} ms")  # fmt: skip
        out.append((f"{name}: max / p99 ({len(stalls)} batches)", f"{mx:.1f} / {p:.1f} ms",
                    "< 50 / < 20 ms", verdict(mx < 50 and p < 20)))  # fmt: skip
    close_window(host, window)
    return out


# --- idle ------------------------------------------------------------------------------------


def part_idle(seconds: float) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="fredica-bench-") as tmp:
        d = Path(tmp)
        settings = resolve_paths(d).ensure().settings_file
        settings.write_text('{"max_workers": 50, "slots": {"io": 50}}')  # SLEEP is "io"
        asyncio.run(fill(d, 1, 50, {"type": "SLEEP", "payload": {"seconds": 120}}, False))
        host, window, _ = open_window(d, 50)
        try:
            run_loop(60, lambda: window.running_tasks == 50)
            if window.running_tasks != 50:
                raise RuntimeError(f"{window.running_tasks} tasks run, not 50")
            batches: list[int] = []
            window.feed.changes.connect(lambda b: batches.append(len(b)))
            proc = psutil.Process()
            c0, gui0, w0 = proc.cpu_times(), time.thread_time(), time.perf_counter()
            run_loop(seconds)
            c1, gui1, w1 = proc.cpu_times(), time.thread_time(), time.perf_counter()
            still = window.running_tasks
        finally:
            close_window(host, window)
    wall = w1 - w0
    gui = 100 * (gui1 - gui0) / wall
    whole = 100 * (c1.user + c1.system - c0.user - c0.system) / wall
    print(f"  idle {wall:.1f} s: {len(batches)} batches of changes ({sum(batches)} rows), "
          f"{still} tasks running at the end")  # fmt: skip
    what = f"idle, 50 tasks running: GUI thread CPU ({wall:.0f} s)"
    return [
        (what, f"{gui:.2f} %", "< 3 %", verdict(gui < 3)),
        ("  whole process CPU (engine included)", f"{whole:.1f} %", "—", ""),
    ]


# --- the table -------------------------------------------------------------------------------


# --- a big library ---------------------------------------------------------------------------


async def fill_library(d: Path, clips: list[Path]) -> tuple[int, int]:
    """Import ``clips`` and submit an ``extract_subtitles`` run for each, the queue paused:
    how many materials and runs."""
    app = Fredica.open(d)
    try:
        app.set_queue_paused(True)
        report = await app.import_items([str(clips[0].parent)])
        for material in report.materials:
            await app.submit_for_material(material, "extract_subtitles")
        return len(report.materials), len(await app.store.list_runs(None))
    finally:
        await app.close()


def scroll_steps(view: Any, steps: int) -> list[float]:
    """Scroll ``view`` a wheel step at a time, down to its end and back up, ``steps`` times;
    milliseconds per step, each repainted before the next."""
    bar = view.verticalScrollBar()
    step = 3 * max(1, view.sizeHintForRow(0) if hasattr(view, "sizeHintForRow") else 20)
    viewport = view.viewport()
    bar.setValue(0)
    viewport.repaint()
    times, direction = [], 1
    for _ in range(steps):
        if bar.value() >= bar.maximum():
            direction = -1
        elif bar.value() <= bar.minimum():
            direction = 1
        started = time.perf_counter()
        bar.setValue(bar.value() + direction * step)
        viewport.repaint()
        QCoreApplication.processEvents()
        times.append((time.perf_counter() - started) * 1000)
    return times


def part_library(rounds: int, steps: int) -> list[Row]:
    from bench._batch_short import short_clips

    clips = short_clips(2000)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="fredica-bench-") as tmp:
        d = Path(tmp)
        started = time.perf_counter()
        materials, runs = asyncio.run(fill_library(d, clips))
        print(f"  {materials} materials, {runs} runs made in {time.perf_counter() - started:.1f} s")
        opened: list[float] = []
        scrolls: dict[str, list[float]] = {"library": [], "queue": []}
        for n in range(rounds):
            host = AppHost(d)
            window = MainWindow(host, d)
            window.nav.setCurrentRow(MainWindow.LIBRARY)
            window.show()
            # The page, empty (its table is hidden until it has rows: waiting for the
            # table's paint here waited out until_painted's two minutes).
            until_painted(window.library)
            viewport = window.library.table.viewport()
            library, tasks = window.library.model, window.queue.tasks
            begun = time.perf_counter()
            host.start()

            def ready(library: Any = library, tasks: Any = tasks) -> bool:
                return bool(library.rowCount() >= materials and tasks.rowCount() >= 2 * runs)

            until_painted(viewport, ready)
            opened.append(time.perf_counter() - begun)
            if n == rounds - 1:
                scrolls["library"] = scroll_steps(window.library.table, steps)
                window.nav.setCurrentRow(MainWindow.QUEUE)
                until_painted(window.queue.tasks_view.viewport())
                scrolls["queue"] = scroll_steps(window.queue.tasks_view, steps)
            close_window(host, window)
    m = statistics.median(opened)
    print(f"  open s: {fmt(opened)}")
    what = f"open {materials:,} materials, {runs:,} runs, {2 * runs:,} tasks (median of {rounds})"
    rows.append((what, f"{m:.2f} s", "< 1 s", verdict(m < 1.0)))
    for name, times in scrolls.items():
        p99, worst = pct(times, 99), max(times)
        rows.append((f"scroll the {name}, {len(times)} wheel steps: p99 (max {worst:.1f} ms)",
                     f"{p99:.1f} ms", "< 20 ms", verdict(p99 < 20)))  # fmt: skip
    return rows


def fmt(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def verdict(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 launch, 1 open, 2 bursts, 5 s idle")
    parser.add_argument("--only", type=int, choices=[1, 2, 3, 4, 5], help="run this part only")
    parser.add_argument(
        "--interpreter-gc",
        action="store_true",
        help="parts 2-5: collect garbage as the interpreter does, in any thread (for comparison)",
    )
    args = parser.parse_args()
    parts = [args.only] if args.only else [1, 2, 3, 4, 5]
    rows: list[Row] = []
    if 1 in parts:
        rows += part_launch(1 if args.quick else 3)
    qapp = make_qapplication([sys.argv[0]])  # in-process parts: the app's own settings
    # …and its garbage collection, on the GUI thread only (GuiApp.collector): a collection
    # there is a stall of the GUI thread the figures must include.
    collector = GuiThreadCollector()
    if not args.interpreter_gc:
        collector.start()
    cpus = psutil.cpu_count()
    print(f"  Qt {qVersion()} ({qapp.platformName()}, {qapp.style().name()}), {cpus} CPUs")
    if {2, 3} & set(parts):
        with tempfile.TemporaryDirectory(prefix="fredica-bench-") as tmp:
            d = Path(tmp)
            started = time.perf_counter()
            asyncio.run(fill(d, 1000, 10, {"type": "NOOP"}, True))  # nothing runs them
            print(f"  10,000 tasks made in {time.perf_counter() - started:.1f} s")
            if 2 in parts:
                rows += part_open(d, 1 if args.quick else 3)
            if 3 in parts:
                rows += part_burst(d, 2 if args.quick else 5)
    if 4 in parts:
        rows += part_idle(5.0 if args.quick else 10.0)
    if 5 in parts:
        rows += part_library(1 if args.quick else 3, 100 if args.quick else 400)
    if collector.running:
        collector.stop()
        print(f"  collections on the GUI thread, by generation: {collector.collections}")
    table = [("what", "figure", "target", "result"), *rows]
    widths = [max(len(r[n]) for r in table) for n in range(4)]
    print()
    for r in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
