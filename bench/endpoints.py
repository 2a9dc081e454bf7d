"""Task-endpoints benchmark: the websocket + child-process path against the same work in the
engine's own process, the progress-frame rate of the bridge, and the idle server's memory.

1. Overhead: SLEEP_SUBPROCESS tasks (``seconds`` = S) run end to end by a ``WorkerEngine``
   (``max_workers=1``) whose ``SleepSubprocessExecutor`` gets its address from an
   ``EndpointsProcess`` (``python -m python_endpoints``, the app's server child process,
   started once before timing), against plain in-process SLEEP tasks of the same length run by
   an engine of the same kind (on its own temp database). Per task: submission
   (``create_run``) -> the task's ``completed_at``, and -> ``run(until_idle=True)`` returning.
   The two lanes are interleaved in pairs (shuffled order within a pair, after one untimed
   warm-up task each); the overhead is, per pair, endpoint time - in-process time. Where the
   endpoint lane's time goes is read from the executor's side of the websocket: execute
   entered, first progress frame (the child is up), the child's "done" frame, execute
   returned. The server's own start-up (the first ``address()``) is reported apart.
2. Progress frames/s: a ``LoopEndpoint`` defined here, on an ``EndpointServer`` started in
   this process (same event loop as the clients), sends ``--frames`` progress frames as fast
   as it can, then its result. Received (a) by a bare websockets client that parses every
   frame with ``parse_server_frame``, (b) by a ``WebSocketExecutor`` subclass run through a
   ``WorkerEngine`` on a temp database (every frame goes through ``ctx.report``; database
   writes are throttled to one per ``progress_interval``). Server and client share one
   process and one core: the CPU per frame is the two sides together.
3. Memory: RSS (psutil) of a fresh ``python -m python_endpoints`` right after start-up and
   after ``--idle-seconds`` idle; its CPU over that time.

Every server and process started here is stopped; at the end no child process of the bench
may be left, nor any process seen under the endpoints servers. The target is printed as a
PASS/FAIL line; a miss does not change the exit status.

    .venv/bin/python bench/endpoints.py [--quick] [--json] [--tasks 10] [--seconds 0.5]
        [--frames 20000] [--idle-seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

import psutil
import websockets
from websockets.asyncio.client import connect

try:  # run as a script (bench/ is on sys.path) or imported as bench.<name>
    from _common import descendants, fmt_int, pct, wait_gone  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    from bench._common import descendants, fmt_int, pct, wait_gone
from fredica_app.database import open_database
from fredica_app.endpoints import EndpointsProcess
from python_endpoints.protocol import (
    InitData,
    InitParamAndRun,
    Progress,
    Result,
    dump,
    parse_server_frame,
)
from python_endpoints.serving.endpoint import LoopContext, LoopEndpoint
from python_endpoints.serving.server import EndpointServer
from workers.engine import WorkerEngine
from workers.executor import ExecuteResult, ExecutionContext
from workers.executors.diagnostic import SleepExecutor, SleepSubprocessExecutor
from workers.executors.websocket import EndpointsAddress, WebSocketExecutor
from workers.records import TaskRecord
from workers.spec import parse_spec, prepare_run
from workers.store import TaskStore
from workers.tasktypes import TaskPayload, TaskType, TaskTypeRegistry, builtin_registry

MiB = 1024 * 1024
TOKEN = "bench-endpoints-token"

# Target.
OVERHEAD_MS = 150.0  # endpoint time - in-process time, per task, end to end


def cpu_seconds() -> float:
    """CPU time of this process (every thread), user + system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def submit(store: TaskStore, registry: TaskTypeRegistry, type_: str, **payload: Any) -> str:
    spec = {"tasks": [{"key": "t", "type": type_, "payload": payload}]}
    created = await store.create_run(prepare_run(parse_spec(spec), registry))
    return created.task_ids["t"]


# --- 1. overhead of the websocket + child-process path -----------------------------------------


class Timeline:
    """When each attempt passed each point (time.time, the store's clock), by task id."""

    def __init__(self) -> None:
        self.marks: dict[str, dict[str, float]] = {}

    def mark(self, task_id: str, what: str) -> None:
        self.marks.setdefault(task_id, {}).setdefault(what, time.time())

    def wrap_report(self, task_id: str, ctx: ExecutionContext) -> None:
        """Timestamp the first progress report and the child's final "done" one."""
        report = ctx.report

        async def timed(progress: float | None = None, status_text: str | None = None, **kw: Any):
            self.mark(task_id, "first_progress")
            if status_text == "done":
                self.mark(task_id, "done")
            await report(progress, status_text, **kw)

        ctx.report = timed  # type: ignore[method-assign]


class TimedSleepSubprocess(SleepSubprocessExecutor):
    def __init__(self, address: Callable[[], Awaitable[EndpointsAddress | None]]) -> None:
        super().__init__(address)
        self.timeline = Timeline()

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        self.timeline.mark(task.id, "entered")
        self.timeline.wrap_report(task.id, ctx)
        try:
            return await super().execute(task, ctx)
        finally:
            self.timeline.mark(task.id, "returned")


class TimedSleep(SleepExecutor):
    def __init__(self) -> None:
        self.timeline = Timeline()

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        self.timeline.mark(task.id, "entered")
        try:
            return await super().execute(task, ctx)
        finally:
            self.timeline.mark(task.id, "returned")


class Lane:
    def __init__(self, name: str, type_: str, path: Path, executor: Any) -> None:
        self.name = name
        self.type = type_
        self.store = TaskStore(open_database(path))
        self.executor = executor
        self.engine = WorkerEngine(self.store, [executor], max_workers=1)
        self.rows: list[dict[str, Any]] = []
        self.problems: list[str] = []

    async def one(self, registry: TaskTypeRegistry, seconds: float) -> dict[str, Any]:
        t_submit = time.time()
        p0 = time.perf_counter()
        task_id = await submit(self.store, registry, self.type, seconds=seconds)
        self.engine.wake()
        await asyncio.wait_for(self.engine.run(until_idle=True), 60)
        returned_s = time.perf_counter() - p0
        task = await self.store.get_task(task_id)
        if task.status != "completed" or task.result != {"slept": seconds}:
            self.problems.append(f"task {task_id}: {task.status} {task.result} {task.error}")
        marks = self.executor.timeline.marks.get(task_id, {})
        done = task.completed_at if task.completed_at is not None else float("nan")
        return {
            "task_id": task_id,
            "completed_s": done - t_submit,
            "returned_s": returned_s,
            "claim_s": (task.started_at or float("nan")) - t_submit,
            "marks": {k: v - t_submit for k, v in marks.items()},
        }


async def measure_overhead(work: Path, n: int, seconds: float, seed: int) -> dict[str, Any]:
    registry = builtin_registry()
    ep = EndpointsProcess()
    seen: set[int] = set()
    out: dict[str, Any] = {}
    lanes: list[Lane] = []
    try:
        t0 = time.perf_counter()
        address = await ep.address()
        out["server_start_s"] = time.perf_counter() - t0
        assert ep.process is not None
        server_pid = ep.process.pid
        seen.add(server_pid)
        out["server_rss_after_start_mib"] = psutil.Process(server_pid).memory_info().rss / MiB
        out["server_port"] = address.port
        endpoint = Lane(
            "endpoint (SLEEP_SUBPROCESS)",
            "SLEEP_SUBPROCESS",
            work / "overhead-endpoint.db",
            TimedSleepSubprocess(ep.address),
        )
        inproc = Lane("in-process (SLEEP)", "SLEEP", work / "overhead-inproc.db", TimedSleep())
        lanes = [endpoint, inproc]
        for lane in lanes:  # warm-up, untimed: imports, first connection, first spawn
            await lane.engine.start(recover=False)
            out[f"warmup_{lane.type}_s"] = (await lane.one(registry, seconds))["completed_s"]
            seen |= descendants(server_pid)
        rng = random.Random(seed)
        pair = [endpoint, inproc]
        for i in range(n):
            rng.shuffle(pair)
            for lane in pair:
                lane.rows.append(await lane.one(registry, seconds))
                seen |= descendants(server_pid)
            print(f"# overhead pair {i + 1}/{n}", end="\r", file=sys.stderr)
        print(file=sys.stderr)
        server = psutil.Process(server_pid)
        out["server_rss_after_tasks_mib"] = server.memory_info().rss / MiB
        out["server_children_after_tasks"] = [
            " ".join(c.cmdline())[:100] for c in server.children(recursive=True)
        ]
        out["server_starts"] = ep.starts
    finally:
        for lane in lanes:
            await lane.engine.stop()
            await lane.store.close()
        await ep.stop()
    out["left_after_stop"] = await wait_gone(seen)
    out["seen_processes"] = len(seen)
    e, p = lanes[0], lanes[1]
    diffs = [a["completed_s"] - b["completed_s"] for a, b in zip(e.rows, p.rows, strict=True)]
    diffs_ret = [a["returned_s"] - b["returned_s"] for a, b in zip(e.rows, p.rows, strict=True)]
    out["tasks"] = n
    out["seconds"] = seconds
    out["diff_ms"] = {
        "p50": 1e3 * statistics.median(diffs),
        "p90": 1e3 * pct(diffs, 90),
        "max": 1e3 * max(diffs),
        "min": 1e3 * min(diffs),
    }
    out["diff_returned_ms"] = {
        "p50": 1e3 * statistics.median(diffs_ret),
        "p90": 1e3 * pct(diffs_ret, 90),
    }
    out["lanes"] = {}
    for lane in lanes:
        comp = [r["completed_s"] for r in lane.rows]
        ret = [r["returned_s"] for r in lane.rows]
        out["lanes"][lane.type] = {
            "name": lane.name,
            "completed_ms": {"p50": 1e3 * statistics.median(comp), "p90": 1e3 * pct(comp, 90)},
            "returned_ms": {"p50": 1e3 * statistics.median(ret), "p90": 1e3 * pct(ret, 90)},
            "problems": lane.problems,
            "phases_ms": phases(lane.rows, seconds),
        }
    return out


def phases(rows: list[dict[str, Any]], seconds: float) -> dict[str, float]:
    """Median time of each phase of an attempt, in ms (the sleep itself excluded)."""

    def med(a: str, b: str) -> float:
        vals = [
            r["marks"][b] - r["marks"][a] if a != "submit" else r["marks"][b]
            for r in rows
            if b in r["marks"] and (a == "submit" or a in r["marks"])
        ]
        return 1e3 * statistics.median(vals) if vals else float("nan")

    out = {"submit -> execute entered": med("submit", "entered")}
    if any("first_progress" in r["marks"] for r in rows):
        out["entered -> first progress frame (connect, spawn, child start)"] = med(
            "entered", "first_progress"
        )
        out[f"first progress -> 'done' frame, minus the {seconds:g} s sleep"] = (
            med("first_progress", "done") - 1e3 * seconds
        )
        out["'done' frame -> execute returned (child exit, reap, result)"] = med("done", "returned")
    else:
        out[f"entered -> execute returned, minus the {seconds:g} s sleep"] = (
            med("entered", "returned") - 1e3 * seconds
        )
    done = [1e3 * (r["completed_s"] - r["marks"]["returned"]) for r in rows if r["marks"]]
    out["execute returned -> completed_at (commit)"] = statistics.median(done)
    return out


# --- 2. progress frames per second ------------------------------------------------------------


class FloodEndpoint(LoopEndpoint):
    """Sends ``count`` progress frames as fast as it can, then its result."""

    name: ClassVar[str] = "flood"

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        count = int(params["count"])
        for i in range(count):
            await ctx.report_progress(100.0 * i / count, "flooding")
        return {"frames": count}


class FloodPayload(TaskPayload):
    count: int


FLOOD = TaskType("BENCH_FLOOD", FloodPayload, "io", "bench: a flood of progress frames")


class FloodExecutor(WebSocketExecutor):
    task_type = FLOOD
    endpoint = "flood"

    def __init__(self, address: Callable[[], Awaitable[EndpointsAddress | None]]) -> None:
        super().__init__(address)
        self.frames = 0
        self.db_writes = 0
        self.elapsed = 0.0

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        report, sink = ctx.report, ctx._sink

        async def counted(*args: Any, **kw: Any) -> None:
            if not done:  # the engine's own flush after execute is not a frame
                self.frames += 1
            await report(*args, **kw)

        async def counted_sink(**values: Any) -> bool:
            self.db_writes += 1
            return await sink(**values)

        ctx.report = counted  # type: ignore[method-assign]
        ctx._sink = counted_sink
        done = False
        t0 = time.perf_counter()
        try:
            return await super().execute(task, ctx)
        finally:
            self.elapsed = time.perf_counter() - t0
            done = True


async def flood_bare(port: int, count: int) -> dict[str, Any]:
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    frames = 0
    first = last = None
    result = None
    async with connect(
        f"ws://127.0.0.1:{port}/tasks/flood",
        additional_headers={"Authorization": f"Bearer {TOKEN}"},
    ) as ws:
        t_open = time.perf_counter()
        await ws.send(dump(InitParamAndRun(data=InitData(params={"count": count}))))
        async for raw in ws:
            frame = parse_server_frame(raw)
            if isinstance(frame, Progress):
                frames += 1
                last = time.perf_counter()
                if first is None:
                    first = last
            elif isinstance(frame, Result):
                result = frame.result
                break
    t1 = time.perf_counter()
    cpu = cpu_seconds() - c0
    problems = []
    if frames != count or result != {"frames": count}:
        problems.append(f"received {frames} of {count} frames, result {result}")
    span = (last or t1) - (first or t0)
    return {
        "frames": frames,
        "elapsed_s": t1 - t_open,
        "frames_per_s": frames / (t1 - t_open),
        "first_to_last_per_s": (frames - 1) / span if span > 0 else float("nan"),
        "cpu_us_per_frame": 1e6 * cpu / max(1, frames),
        "problems": problems,
    }


async def flood_engine(work: Path, port: int, count: int) -> dict[str, Any]:
    registry = builtin_registry()
    registry.register(FLOOD)

    async def source() -> EndpointsAddress:
        return EndpointsAddress("127.0.0.1", port, TOKEN)

    executor = FloodExecutor(source)
    store = TaskStore(open_database(work / "flood.db"))
    engine = WorkerEngine(store, [executor], max_workers=1, registry=registry)
    try:
        await engine.start(recover=False)
        task_id = await submit(store, registry, FLOOD.name, count=count)
        engine.wake()
        c0 = cpu_seconds()
        await asyncio.wait_for(engine.run(until_idle=True), 300)
        cpu = cpu_seconds() - c0
        task = await store.get_task(task_id)
    finally:
        await engine.stop()
        await store.close()
    problems = []
    if task.status != "completed" or task.result != {"frames": count}:
        problems.append(f"task {task.status}, result {task.result}, error {task.error}")
    if executor.frames != count:
        problems.append(f"ctx.report called {executor.frames} times for {count} frames")
    return {
        "frames": executor.frames,
        "elapsed_s": executor.elapsed,
        "frames_per_s": executor.frames / executor.elapsed if executor.elapsed else 0.0,
        "db_writes": executor.db_writes,
        "cpu_us_per_frame": 1e6 * cpu / max(1, executor.frames),
        "problems": problems,
    }


async def measure_frames(work: Path, count: int) -> dict[str, Any]:
    server = EndpointServer({FloodEndpoint.name: FloodEndpoint}, TOKEN)
    port = await server.start()
    try:
        await flood_bare(port, min(count, 500))  # warm-up
        bare = await flood_bare(port, count)
        engine = await flood_engine(work, port, count)
        sessions_left = len(server.sessions)
    finally:
        await server.close()
    return {"count": count, "bare": bare, "engine": engine, "sessions_left": sessions_left}


# --- 3. memory of an idle endpoints server ---------------------------------------------------


async def measure_idle_server(idle_seconds: float) -> dict[str, Any]:
    ep = EndpointsProcess()
    seen: set[int] = set()
    try:
        t0 = time.perf_counter()
        await ep.address()
        start_s = time.perf_counter() - t0
        assert ep.process is not None
        proc = psutil.Process(ep.process.pid)
        seen.add(proc.pid)
        rss0 = proc.memory_info().rss / MiB
        uss0 = proc.memory_full_info().uss / MiB
        cpu0 = sum(proc.cpu_times()[:2])
        await asyncio.sleep(idle_seconds)
        rss1 = proc.memory_info().rss / MiB
        uss1 = proc.memory_full_info().uss / MiB
        cpu1 = sum(proc.cpu_times()[:2])
        seen |= descendants(proc.pid)
        children = len(seen) - 1
    finally:
        await ep.stop()
    return {
        "start_s": start_s,
        "idle_seconds": idle_seconds,
        "rss_start_mib": rss0,
        "rss_idle_mib": rss1,
        "uss_start_mib": uss0,
        "uss_idle_mib": uss1,
        "idle_cpu_s": cpu1 - cpu0,
        "children": children,
        "left_after_stop": await wait_gone(seen),
    }


# --- report -----------------------------------------------------------------------------------


def table(rows: list[tuple[str, str, str, str]]) -> str:
    head = ("measure", "value", "detail", "target")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    out = [" | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def report_rows(out: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    ov, fr, idle = out["overhead"], out["frames"], out["idle"]
    rows = []
    d, dr = ov["diff_ms"], ov["diff_returned_ms"]
    rows.append(
        (
            f"overhead per task, {ov['tasks']} pairs of {ov['seconds']:g} s sleeps: "
            "endpoint - in-process (submit -> completed_at)",
            f"p50 {d['p50']:.0f} ms, p90 {d['p90']:.0f} ms",
            f"min {d['min']:.0f}, max {d['max']:.0f} ms; submit -> run() returned: "
            f"p50 {dr['p50']:.0f}, p90 {dr['p90']:.0f} ms",
            f"< {OVERHEAD_MS:g} ms",
        )
    )
    for lane in ov["lanes"].values():
        c, r = lane["completed_ms"], lane["returned_ms"]
        rows.append(
            (
                f"  {lane['name']}: submit -> completed_at",
                f"p50 {c['p50']:.0f} ms, p90 {c['p90']:.0f} ms",
                f"-> run() returned p50 {r['p50']:.0f} ms, p90 {r['p90']:.0f} ms",
                "",
            )
        )
        for phase, ms in lane["phases_ms"].items():
            rows.append((f"    {phase}", f"{ms:.1f} ms", "median", ""))
    rows.append(
        (
            "  warm-up task (untimed): endpoint / in-process",
            f"{1e3 * ov['warmup_SLEEP_SUBPROCESS_s']:.0f} / {1e3 * ov['warmup_SLEEP_s']:.0f} ms",
            "submit -> completed_at",
            "",
        )
    )
    rows.append(
        (
            "endpoints server start-up (first address())",
            f"{1e3 * ov['server_start_s']:.0f} ms",
            f"again for the idle test: {1e3 * idle['start_s']:.0f} ms",
            "info",
        )
    )
    rows.append(
        (
            f"  server RSS after {2 * (ov['tasks'] + 1)} tasks (info)",
            f"{ov['server_rss_after_tasks_mib']:.1f} MiB",
            f"{ov['server_rss_after_start_mib']:.1f} MiB after start-up; children then: "
            f"{len(ov['server_children_after_tasks'])}",
            "",
        )
    )
    b, e = fr["bare"], fr["engine"]
    rows.append(
        (
            f"progress frames, bare client + parse_server_frame ({fmt_int(fr['count'])})",
            f"{b['frames_per_s']:,.0f} frames/s",
            f"client parse span {b['first_to_last_per_s']:,.0f}/s; CPU "
            f"{b['cpu_us_per_frame']:.0f} us/frame (server + client, one process)",
            "info",
        )
    )
    rows.append(
        (
            f"progress frames, engine: WebSocketExecutor -> ctx.report ({fmt_int(fr['count'])})",
            f"{e['frames_per_s']:,.0f} frames/s",
            f"{e['db_writes']} progress writes in {e['elapsed_s']:.2f} s; CPU "
            f"{e['cpu_us_per_frame']:.0f} us/frame (server + engine, one process)",
            "info",
        )
    )
    rows.append(
        (
            "idle server RSS: after start-up / after "
            f"{idle['idle_seconds']:g} s idle (python -m python_endpoints)",
            f"{idle['rss_start_mib']:.1f} / {idle['rss_idle_mib']:.1f} MiB",
            f"USS {idle['uss_start_mib']:.1f} / {idle['uss_idle_mib']:.1f} MiB; idle CPU "
            f"{idle['idle_cpu_s']:.3f} s; children {idle['children']}",
            "info",
        )
    )
    return rows


def checks(out: dict[str, Any]) -> list[dict[str, Any]]:
    ov, fr, idle = out["overhead"], out["frames"], out["idle"]
    problems = [f"{lane['name']}: {p}" for lane in ov["lanes"].values() for p in lane["problems"]]
    problems += [f"frames ({k}): {p}" for k in ("bare", "engine") for p in fr[k]["problems"]]
    if fr["sessions_left"]:
        problems.append(f"{fr['sessions_left']} sessions left on the flood server")
    if ov["server_starts"] != 1:
        problems.append(f"the endpoints server was started {ov['server_starts']} times")
    leftovers = ov["left_after_stop"] + idle["left_after_stop"] + out["children_at_end"]
    return [
        {
            "name": f"endpoint overhead per task, end to end (spawn included): p50 and p90 < "
            f"{OVERHEAD_MS:g} ms",
            "ok": ov["diff_ms"]["p50"] < OVERHEAD_MS and ov["diff_ms"]["p90"] < OVERHEAD_MS,
            "detail": f"p50 {ov['diff_ms']['p50']:.0f} ms, p90 {ov['diff_ms']['p90']:.0f} ms",
        },
        {
            "name": "every task and flood completed as expected",
            "ok": not problems,
            "detail": "; ".join(problems) or "all completed with the expected results",
        },
        {
            "name": "no process left: no child of the bench, none of the servers' descendants",
            "ok": not leftovers,
            "detail": "; ".join(leftovers)
            or f"0 children of pid {os.getpid()}; {ov['seen_processes']} + "
            f"{idle['children'] + 1} server-side processes seen, all gone",
        },
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="4 pairs, 5,000 frames, 5 s idle")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    p.add_argument("--tasks", type=int, help="task pairs (default 10; --quick: 4)")
    p.add_argument("--seconds", type=float, default=0.5, help="sleep per task (default 0.5)")
    p.add_argument("--frames", type=int, help="progress frames (default 20000; --quick: 5000)")
    p.add_argument("--idle-seconds", type=float, help="idle server time (default 10; --quick: 5)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tmpdir", help="where to make the temporary directory")
    args = p.parse_args(argv)
    q = args.quick
    args.tasks = args.tasks or (4 if q else 10)
    args.frames = args.frames or (5_000 if q else 20_000)
    if args.idle_seconds is None:
        args.idle_seconds = 5.0 if q else 10.0
    return args


async def run_all(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    print("# overhead", file=sys.stderr)
    out["overhead"] = await measure_overhead(work, args.tasks, args.seconds, args.seed)
    print("# frames", file=sys.stderr)
    out["frames"] = await measure_frames(work, args.frames)
    print(f"# idle server {args.idle_seconds:g} s", file=sys.stderr)
    out["idle"] = await measure_idle_server(args.idle_seconds)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="fredica-endpoints-bench-", dir=args.tmpdir))
    try:
        out = asyncio.run(run_all(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    children = psutil.Process().children(recursive=True)
    out["children_at_end"] = [f"{c.pid} ({' '.join(c.cmdline())[:80]})" for c in children]
    elapsed = time.perf_counter() - started
    load_after = os.getloadavg()
    print(
        "Task-endpoints benchmark (websocket + spawn child vs in-process; max_workers=1)\n"
        f"Python {sys.version.split()[0]}, websockets {websockets.__version__}, psutil "
        f"{psutil.__version__}, {os.cpu_count()} cores; load average {load_before[0]:.2f} "
        f"before, {load_after[0]:.2f} after"
    )
    print()
    print(table(report_rows(out)))
    print()
    print(f"time: total {elapsed:.0f} s; temp directory removed: {not work.exists()}")
    print(
        f"process check: {len(children)} child process(es) of the bench left"
        + (f": {', '.join(out['children_at_end'])}" if children else "")
    )
    print()
    found = checks(out)
    for c in found:
        print(f"{'PASS' if c['ok'] else 'FAIL'}  {c['name']}: {c['detail']}")
    if args.json:
        for lane in out["overhead"]["lanes"].values():
            lane.pop("rows", None)
        print(
            json.dumps(
                {
                    "cores": os.cpu_count(),
                    "load_average": [load_before, load_after],
                    **out,
                    "checks": found,
                    "elapsed_s": elapsed,
                },
                indent=2,
                default=str,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
