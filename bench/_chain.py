"""The harness the media and speech benches share: one engine, one endpoints server, a store
that counts progress writes, executors that time the frames they get, and CPU helpers."""

from __future__ import annotations

import asyncio
import itertools
import resource
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench._common import descendants, wait_gone
from fredica_app import jobs
from fredica_app.database import open_database
from fredica_app.endpoints import EndpointsProcess
from workers.engine import WorkerEngine
from workers.executor import ExecuteResult, ExecutionContext, TaskExecutor
from workers.executors.websocket import EndpointExecutor, EndpointsAddress, WebSocketExecutor
from workers.records import TaskRecord
from workers.spec import parse_spec, prepare_run
from workers.store import TaskStore

TASK_TIMEOUT = 900.0

Address = Callable[[], Awaitable[EndpointsAddress | None]]


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_children() -> float:
    """CPU of this process's children that were waited for (and of theirs)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def proc_cpu(pid: int, *, reaped: bool = False) -> float:
    """A process's CPU seconds; with ``reaped``, its waited-for descendants' too."""
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    total = t.user + t.system
    return total + (t.children_user + t.children_system if reaped else 0.0)


def tree_cpu(pid: int) -> float:
    """CPU seconds of a live process, its reaped descendants and its live descendants."""
    total = proc_cpu(pid, reaped=True)
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return total
    return total + sum(proc_cpu(k.pid) for k in kids)


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def max_in_window(times: list[float], window: float = 1.0) -> int:
    """The most of ``times`` in any half-open interval ``[t, t + window)``."""
    ts = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(ts):
        while ts[j] <= t - window:
            j += 1
        best = max(best, i - j + 1)
    return best


# --- the chain: a store that counts progress writes, executors that time their frames ----------


class CountingStore(TaskStore):
    """Counts the ``report_progress`` calls that update the task's row, by task (one with
    nothing to write returns before any UPDATE; one whose lease was lost updates nothing)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.writes: dict[str, list[float]] = {}

    async def report_progress(
        self,
        task_id: str,
        lease_token: str,
        *,
        progress: float | None = None,
        status_text: str | None = None,
        is_pausable: bool | None = None,
        checkpoint: dict[str, Any] | None = None,
    ) -> bool:
        written = await super().report_progress(
            task_id,
            lease_token,
            progress=progress,
            status_text=status_text,
            is_pausable=is_pausable,
            checkpoint=checkpoint,
        )
        if written and any(v is not None for v in (progress, status_text, is_pausable, checkpoint)):
            self.writes.setdefault(task_id, []).append(time.time())
        return written


@dataclass
class Frame:
    at: float  # time.time(), the store's clock
    percent: float | None
    text: str | None


@dataclass
class Timeline:
    """When each attempt entered and left ``execute``, and every progress frame it got."""

    marks: dict[str, dict[str, float]] = field(default_factory=dict)
    frames: dict[str, list[Frame]] = field(default_factory=dict)

    def mark(self, task_id: str, what: str) -> None:
        self.marks.setdefault(task_id, {}).setdefault(what, time.time())

    def wrap_report(self, task_id: str, ctx: ExecutionContext) -> None:
        report = ctx.report
        frames = self.frames.setdefault(task_id, [])

        async def timed(
            progress: float | None = None, status_text: str | None = None, **kw: Any
        ) -> None:
            if kw.get("force"):  # the engine's flush after execute, not a frame
                self.mark(task_id, "flush")
            else:
                frames.append(Frame(time.time(), progress, status_text))
            await report(progress, status_text, **kw)

        ctx.report = timed  # type: ignore[method-assign]


class TimedMixin(WebSocketExecutor):
    def __init__(self, address: Address, timeline: Timeline, *args: Any, **kw: Any) -> None:
        super().__init__(address, *args, **kw)
        self.timeline = timeline

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        self.timeline.mark(task.id, "entered")
        self.timeline.wrap_report(task.id, ctx)
        try:
            return await super().execute(task, ctx)
        finally:
            self.timeline.mark(task.id, "returned")


class TimedEndpoint(TimedMixin, EndpointExecutor):
    """A job of the catalogue, run on its endpoint, timed."""


def timed_jobs(address: Address, timeline: Timeline, *task_types: str) -> list[TaskExecutor]:
    """The app's executors of ``task_types`` (fredica_app.jobs), timed."""
    timed: list[TaskExecutor] = []
    for executor in jobs.executors(address):
        if isinstance(executor, EndpointExecutor) and executor.task_type.name in task_types:
            timed.append(
                TimedEndpoint(
                    address,
                    timeline,
                    executor.task_type,
                    executor.endpoint,
                    resumes=executor.resumes,
                    stall_timeout=executor.stall_timeout,
                )
            )
    return timed


#: Makes the chain's (timed) executors from the server's address and the timeline.
MakeExecutors = Callable[[Address, "Timeline"], list[TaskExecutor]]


class Chain:
    """One store, one engine (``max_workers=1``), one endpoints server, for every lane; the
    engine runs the executors ``executors(address, timeline)`` makes (timed ones)."""

    def __init__(self, work: Path, out_dir: Path, executors: MakeExecutors) -> None:
        self.registry = jobs.registry()
        self.endpoints = EndpointsProcess(write_roots=[out_dir])
        self.store = CountingStore(open_database(work / "bench.db"))
        self.timeline = Timeline()
        made = executors(self.endpoints.address, self.timeline)
        self.engine = WorkerEngine(self.store, made, max_workers=1)
        self.server_pid = 0
        self.seen: set[int] = set()
        self.problems: list[str] = []

    async def start(self) -> float:
        t0 = time.perf_counter()
        await self.endpoints.address()
        start_s = time.perf_counter() - t0
        assert self.endpoints.process is not None
        self.server_pid = self.endpoints.process.pid
        self.seen.add(self.server_pid)
        await self.engine.start(recover=False)
        return start_s

    async def stop(self) -> list[str]:
        try:
            await self.engine.stop()
            await self.store.close()
        finally:
            self.seen |= descendants(self.server_pid)
            await self.endpoints.stop()
        return await wait_gone(self.seen)

    def children(self) -> set[int]:
        kids = descendants(self.server_pid)
        self.seen |= kids
        return kids

    async def settle(self, within: float = 30.0) -> float:
        """Wait until the server's tree and this process use no CPU (a spare is ready)."""
        t0 = time.perf_counter()
        last = tree_cpu(self.server_pid) + cpu_self()
        while time.perf_counter() - t0 < within:
            await asyncio.sleep(0.25)
            now = tree_cpu(self.server_pid) + cpu_self()
            if now - last < 0.01:
                break
            last = now
        self.children()
        return time.perf_counter() - t0

    async def run(self, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Submit one task and run the engine until idle; the task, its timings and CPU."""
        before = self.children()
        server0, self0 = tree_cpu(self.server_pid), cpu_self()
        t_submit = time.time()
        p0 = time.perf_counter()
        spec = {"tasks": [{"key": "t", "type": type_, "payload": payload}]}
        created = await self.store.create_run(prepare_run(parse_spec(spec), self.registry))
        task_id = created.task_ids["t"]
        self.engine.wake()
        await asyncio.wait_for(self.engine.run(until_idle=True), TASK_TIMEOUT)
        wall = time.perf_counter() - p0
        server_cpu, self_cpu = tree_cpu(self.server_pid) - server0, cpu_self() - self0
        task = await self.store.get_task(task_id)
        if task.status != "completed":
            self.problems.append(f"{type_} {task_id}: {task.status} {task.error_type} {task.error}")
        new = self.children() - before

        def rel(t: float | None) -> float:
            return float("nan") if t is None else t - t_submit

        frames = self.timeline.frames.get(task_id, [])
        return {
            "task_id": task_id,
            "task": task,
            "t_submit": t_submit,
            "wall_s": wall,
            "claimed_s": rel(task.claimed_at),
            "started_s": rel(task.started_at),
            "completed_s": rel(task.completed_at),
            "running_s": (task.completed_at or 0.0) - (task.started_at or 0.0),
            "marks": {k: v - t_submit for k, v in self.timeline.marks.get(task_id, {}).items()},
            "frames": [Frame(f.at - t_submit, f.percent, f.text) for f in frames],
            "writes": [t - t_submit for t in self.store.writes.get(task_id, [])],
            "server_tree_cpu_s": server_cpu,
            "bench_cpu_s": self_cpu,
            "new_children": sorted(new),
        }

    def spare_cpu(self, pids: list[int]) -> float:
        """Start-up CPU of the warm spares started during a run (they idle afterwards)."""
        return sum(proc_cpu(p) for p in pids)


def writes_summary(row: dict[str, Any]) -> dict[str, Any]:
    writes, running = row["writes"], row["running_s"]
    flush = row["marks"].get("flush", float("inf"))
    return {
        "writes": len(writes),
        "flush_writes": sum(1 for t in writes if t >= flush),
        "running_s": running,
        "per_s": len(writes) / running if running > 0 else float("nan"),
        "per_s_no_flush": sum(1 for t in writes if t < flush) / running
        if running > 0
        else float("nan"),
        "max_1s": max_in_window(writes),
        "min_gap_s": min((b - a for a, b in itertools.pairwise(writes)), default=None),
    }


def strip(row: dict[str, Any]) -> dict[str, Any]:
    """A row for --json: no records, frames as lists."""
    out = {k: v for k, v in row.items() if k not in ("task", "frames")}
    out["frames"] = [[round(f.at, 3), f.percent, f.text] for f in row["frames"]]
    out["result"] = row["task"].result
    return out


def table(rows: list[tuple[str, str, str, str]]) -> str:
    head = ("measure", "value", "detail", "target")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    out = [" | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)
