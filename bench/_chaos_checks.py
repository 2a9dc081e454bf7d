"""The chaos run's invariants, checked from outside: the database file (read-only SQL), the
process table and the files. Each check appends what it finds wrong to a list of violations."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import av
import psutil

from python_endpoints.jobs.outputs import parse_temp

#: How far an output's length may be from its input's (the longest audio or video stream).
LENGTH_TOLERANCE = 0.5


def query(data: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(data / "fredica.db", timeout=60)) as conn:
        return conn.execute(sql, args).fetchall()


def left_processes(data: Path) -> list[psutil.Process]:
    """Processes whose command line names the data directory (the worker, its server, the
    job children) and those of its jobs' ffmpeg, which name a file inside it."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            if p.info["status"] != psutil.STATUS_ZOMBIE and any(
                str(data.parent) in part for part in p.info["cmdline"] or ()
            ):
                found.append(p)
    return found


def wait_gone(data: Path, within: float = 20.0) -> list[psutil.Process]:
    deadline = time.monotonic() + within
    while True:
        left = left_processes(data)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


class Seen:
    """What the database held after earlier cycles: none of it may go."""

    def __init__(self) -> None:
        self.tasks: set[str] = set()
        self.runs: set[str] = set()
        self.materials: set[str] = set()

    def check(self, data: Path, cycle: int, violations: list[str]) -> None:
        tasks = {t for (t,) in query(data, "SELECT id FROM task")}
        runs = {r for (r,) in query(data, "SELECT id FROM workflow_run")}
        materials = {m for (m,) in query(data, "SELECT id FROM material")}
        for name, before, now in (
            ("task", self.tasks, tasks),
            ("run", self.runs, runs),
            ("material", self.materials, materials),
        ):
            gone = before - now
            if gone:
                violations.append(f"cycle {cycle}: {len(gone)} {name}(s) gone: {sorted(gone)[:3]}")
        self.tasks, self.runs, self.materials = tasks, runs, materials


def check_cycle(data: Path, seen: Seen, cycle: int, violations: list[str]) -> None:
    left = wait_gone(data)
    if left:
        names = [f"{p.pid} {' '.join(_cmdline(p))[:80]}" for p in left]
        violations.append(f"cycle {cycle}: processes left: {names}")
        for p in left:
            with contextlib.suppress(psutil.Error):
                p.kill()
    (ok,) = query(data, "PRAGMA integrity_check")[0]
    if ok != "ok":
        violations.append(f"cycle {cycle}: integrity_check: {ok}")
    seen.check(data, cycle, violations)


def _cmdline(p: psutil.Process) -> list[str]:
    with contextlib.suppress(psutil.Error):
        return p.cmdline()
    return []


def length(path: Path, kind: str | None = None) -> float:
    """The longest audio or video stream of ``path`` (of ``kind`` only, if given), seconds."""
    with av.open(str(path), metadata_errors="replace") as container:
        best = 0.0
        for s in container.streams:
            if s.type in ("audio", "video") and (kind is None or s.type == kind):
                if s.duration is not None and s.time_base is not None:
                    best = max(best, float(s.duration * s.time_base))
        if not best and container.duration:
            best = container.duration / 1_000_000
        return best


def check_end(
    data: Path, run_ids: list[str], watch_files: list[Path], served: Path, violations: list[str]
) -> dict[str, int]:
    """The end state: every run completed, every task completed once, every output verified,
    every watched file submitted once, no temporary file. Returns how many of each kind of
    output were verified."""
    statuses = dict(query(data, "SELECT id, status FROM workflow_run"))
    for run_id in run_ids:
        if statuses.get(run_id) != "completed":
            violations.append(f"run {run_id} ended {statuses.get(run_id)}")
    twice = query(
        data,
        "SELECT task_id, count(*) FROM task_event WHERE kind = 'completed' "
        "GROUP BY task_id HAVING count(*) != 1",
    )
    violations += [f"task {t} completed {n} times" for t, n in twice]
    unfinished = query(
        data,
        "SELECT id, type, status, error_type, interruptions, charged_interruptions, error "
        "FROM task WHERE status != 'completed'",
    )
    violations += [
        f"task {t} ({kind}) {s} ({e}; {n} interruptions, {c} charged): {(err or '')[:200]}"
        for t, kind, s, e, n, c, err in unfinished
    ]
    verified: dict[str, int] = {}
    for task_type, payload in query(data, "SELECT type, payload FROM task"):
        problem = verify(task_type, json.loads(payload or "{}"), served)
        if problem is None:
            continue
        if problem:
            violations.append(problem)
        else:
            verified[task_type] = verified.get(task_type, 0) + 1
    _check_watched(data, watch_files, statuses, violations)
    # What an attempt writes before its output is verified: none left once all is done.
    temporaries = [p for p in data.parent.rglob("*") if p.is_file() and parse_temp(p.name)]
    violations += [f"temporary file left: {p.relative_to(data.parent)}" for p in temporaries]
    return verified


def verify(task_type: str, payload: dict[str, Any], served: Path) -> str | None:
    """What is wrong with a completed task's output ('' when it is right; None when the type
    makes no file)."""
    if task_type in ("TRANSCODE_MP4", "EXTRACT_AUDIO"):
        out, source = Path(payload["output"]), Path(payload["input"])
        if not out.exists():
            return f"{out.name} missing"
        with av.open(str(out), metadata_errors="replace") as container:
            kinds = {s.type for s in container.streams}
        wanted = {"video", "audio"} if task_type == "TRANSCODE_MP4" else {"audio"}
        if not wanted <= kinds:
            return f"{out.name} holds {sorted(kinds)}"
        a, b = length(out), length(source)
        if abs(a - b) > LENGTH_TOLERANCE:
            return f"{out.name} lasts {a:.2f} s, its input {b:.2f} s"
        return ""
    if task_type == "DOWNLOAD":
        out = Path(payload["output"])
        original = served / payload["url"].rsplit("/", 1)[-1]
        if not out.exists():
            return f"download {out.name} missing"
        if _sha(out) != _sha(original):
            return f"download {out.name} differs from what was served"
        return ""
    if task_type == "TRANSCRIBE":
        out = Path(payload["output"])
        if not out.exists():
            return f"transcript {out.name} missing"
        segments = json.loads(out.read_text(encoding="utf-8")).get("segments")
        return "" if segments else f"transcript {out.name} has no segment"
    if task_type == "EXPORT_SUBTITLES":
        srt = Path(payload["output_dir"]) / f"{payload['stem']}.srt"
        return "" if srt.exists() and srt.stat().st_size else f"{srt.name} missing or empty"
    return None


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_watched(
    data: Path, watch_files: list[Path], statuses: dict[str, str], violations: list[str]
) -> None:
    """Each file written into the watch folder became one material with one completed run."""
    rows = query(
        data,
        "SELECT m.source, r.id FROM material m LEFT JOIN workflow_run r ON r.material_id = m.id",
    )
    runs: dict[str, list[str]] = {}
    for source, run_id in rows:
        runs.setdefault(str(source), []).append(run_id)
    for path in watch_files:
        found = runs.get(str(path), [])
        if len(found) != 1:
            violations.append(f"watched file {path.name}: {len(found)} run(s)")
        elif statuses.get(found[0]) != "completed":
            violations.append(f"watched file {path.name}: its run ended {statuses.get(found[0])}")
