"""Media benchmark: what the task chain (engine -> websocket -> endpoints server -> job child ->
ffmpeg) adds to a transcode, remux against re-encode, download throughput against curl, and
the rate of progress writes to the database.

All tasks run on one ``WorkerEngine`` (``max_workers=1``) over a fresh temp database, with the
app's executors of TRANSCODE_MP4 and DOWNLOAD (``fredica_app/jobs.py``) reaching one real
``EndpointsProcess`` (``python -m python_endpoints``, ``write_roots`` = the output folder),
started once before any timing (its start-up is reported apart). Every lane gets one untimed
warm-up run first. The machine may be shared: lanes are interleaved in pairs (shuffled order
within a pair), the ratios are the medians of the per-pair ratios, and before each timed run
the bench waits until the endpoints server's process tree is idle (a warm spare child, started
by the server when a job takes the previous one, may still be importing).

1. Chain overhead: TRANSCODE_MP4 (``mode="auto"``, ``hardware=False``: libx264 on both sides)
   of a ``legacy`` sample (MPEG-2 + MP2 + SRT in Matroska: everything is re-encoded) through
   the chain, timed from ``create_run`` to ``engine.run(until_idle=True)`` returning, against
   the same ffmpeg argv run directly (asyncio subprocess, both pipes read, stdin closed). The
   argv is the job's own, built with ``python_endpoints.jobs.ffmpeg.transcode_args`` from the
   same probe and plan, down to the output path (the job's temporary
   ``.*.<part id>.fredica-part.mp4`` name); during the warm-up the job's real ffmpeg command
   line is read with psutil and compared (but for the part id, unique to each run). Where the
   chain's time goes comes from the frames the executor receives (probe done, ffmpeg
   started, ffmpeg's last ``-progress`` block, the job's "done" after PyAV verification and
   the fsync'd rename) and from the task's own timestamps (``claimed_at``,
   ``completed_at``; ``started_at`` is stamped with the claim). CPU seconds of both lanes (the
   direct ffmpeg; the server tree with its reaped job child and ffmpeg, the warm spare the
   server starts meanwhile, and this process) show what competes with ffmpeg. Also shown:
   the ratio of each lane's best run, less sensitive to other tenants' load.
2. Remux against re-encode: TRANSCODE_MP4 of an ``mp4`` sample (H.264 + AAC) with
   ``mode="remux"`` and ``mode="reencode"``, both through the chain, interleaved.
3. Download: a DOWNLOAD task through the chain (the endpoint reads the body in a thread with
   a blocking httpx client, fsyncs the ``.part`` in the background every 32 MB and at the end,
   then renames it) against ``curl -s -o FILE URL``, both from ``tests/support/httpserver.py``'s
   ``HTTPTestServer`` on 127.0.0.1 (a Python threaded server, in this process), serving
   ``--download-mb`` MB of random bytes. Both files are compared with the served bytes
   (sha256). curl does not fsync: the time an fsync of its file takes afterwards is measured
   apart, and the target compares Fredica with curl + that fsync (both durable); ``os.sync()``
   runs between lanes so that one lane's dirty pages are not written back during the next.
   Against curl alone the ratio is shown with its bound: the "disk alone" lane writes the same
   bytes and fsyncs them, no network, and no downloader that fsyncs can beat it. Then Fredica
   and curl again at a link rate (``--link-mb-s``, default 125 MB/s = 1 Gbit/s: the server
   throttles), where the disk is not the limit; target there: Fredica / curl. CPU: this
   process (the HTTP server, and in the Fredica lane the engine too), the endpoints server,
   curl. Two more lanes (info) show what the client library allows here: a bare
   ``httpx.AsyncClient`` (64 KiB reads in an event loop) and a bare blocking ``httpx.Client``
   with 1 MiB reads, each in a child process, timed from the request to the file closed. In
   the Fredica lane the ``.part``'s size is polled (every 20 ms) to split the body from the
   final fsync and rename.
4. Progress writes: a ``TaskStore`` subclass counts the ``report_progress`` calls that write
   (an UPDATE of the task row; one with nothing to write is not counted) during the chain
   transcodes of (1): writes per second over the task's running time (``started_at`` ->
   ``completed_at``), and the most in any 1 s window.

The targets are printed as PASS/FAIL lines; a miss does not change the exit status. Every
process started here is stopped; at the end no child process of the bench may be left, nor
any process seen under the endpoints server.

    .venv/bin/python bench/media.py [--quick] [--json] [--rounds 3] [--seconds 60]
        [--download-mb 200] [--link-mb-s 125]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import av
import imageio_ffmpeg
import psutil

try:  # the repository's root is on sys.path when imported as bench.<name>, not as a script
    from tests.support.httpserver import HTTPTestServer, Route, make_body
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.support.httpserver import HTTPTestServer, Route, make_body
from bench._chain import (
    Address,
    Chain,
    Frame,
    Timeline,
    cpu_children,
    cpu_self,
    med,
    proc_cpu,
    strip,
    table,
    timed_jobs,
    writes_summary,
)
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs import media, outputs
from python_endpoints.jobs.httpfacts import part_path
from python_endpoints.jobs.sample import make_sample
from python_endpoints.params import TranscodeParams
from workers.executor import TaskExecutor
from workers.records import TaskRecord

MB = 1_000_000  # sizes and throughputs in decimal megabytes, as curl counts them

# Targets.
CHAIN_RATIO = 1.05  # chain wall time / direct ffmpeg wall time
REMUX_SPEEDUP = 10.0  # re-encode wall time / remux wall time, both through the chain
DOWNLOAD_RATIO = 0.9  # Fredica MB/s / curl MB/s
WRITES_PER_S = 2.0  # progress writes per running task per second


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def size_of(path: Path) -> int | None:
    """The file's size, None when there is no such file."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def fsync_file(path: Path) -> float:
    """fsync a written file; how long it took (nan when there is no such file)."""
    t0 = time.perf_counter()
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return float("nan")
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def remove(*paths: Path) -> None:
    for p in paths:
        p.unlink(missing_ok=True)


# --- the chain's executors -------------------------------------------------------------------


def media_executors(address: Address, timeline: Timeline) -> list[TaskExecutor]:
    return timed_jobs(address, timeline, "TRANSCODE_MP4", "DOWNLOAD")


# --- 1 + 4. the chain against the direct ffmpeg ------------------------------------------------


def job_argv(source: Path, output: Path, payload: dict[str, Any], part: str) -> list[str]:
    """The ffmpeg argv ``transcode_job`` runs for this payload (``hardware=False``) as the run
    of part id ``part``, built with its own pure builder from the same probe and plan."""
    # The params as the server hands them to the job: validated, defaults filled.
    params = TranscodeParams.model_validate(payload).model_dump()
    info = media.probe(str(source))
    limits = ff.Limits(
        max_height=params["max_height"], max_fps=params["max_fps"], loudness=params["loudness"]
    )
    plan = ff.plan_transcode(info.streams, params["mode"], params["profile"], limits)
    encoder = ff.CPU_H264_ENCODER if plan.encodes_video else "copy"
    return ff.transcode_args(
        media.ffmpeg_binary(params),
        str(source),
        str(outputs.temp_path(output, part)),
        plan,
        encoder=encoder,
        crf=params["crf"],
        preset=params["preset"],
        compatible=params["profile"] == "compatible",
    )


async def run_direct(argv: list[str], written: Path) -> dict[str, Any]:
    c0 = cpu_children()
    p0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await proc.communicate()
    wall = time.perf_counter() - p0
    cpu = cpu_children() - c0
    problems = []
    size = size_of(written)
    if proc.returncode or size is None:
        tail = err.decode("utf-8", "replace").strip()[-300:]
        problems.append(f"direct ffmpeg exited {proc.returncode}: {tail}")
    remove(written)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "bytes": size,
        "progress_blocks": out.count(b"progress="),
        "problems": problems,
    }


def without_part_id(argv: list[str] | None) -> list[str] | None:
    """``argv`` with the part id of its temporary output (unique to each run) blanked out."""
    if argv is None:
        return None
    out = []
    for arg in argv:
        parsed = outputs.parse_temp(Path(arg).name)
        final = Path(arg).with_name(parsed[0]) if parsed else None
        out.append(str(outputs.temp_path(final, "0" * 8)) if final else arg)
    return out


async def capture_ffmpeg(server_pid: int, binary: str, done: asyncio.Event) -> list[str] | None:
    """The command line of the first ffmpeg seen under the server (psutil, every 20 ms)."""
    while not done.is_set():
        for p in psutil.Process(server_pid).children(recursive=True):
            try:
                cmd = p.cmdline()
            except psutil.Error:
                continue
            if cmd and cmd[0] == binary and "-progress" in cmd:
                return cmd
        await asyncio.sleep(0.02)
    return None


def transcode_phases(row: dict[str, Any], verb: str) -> dict[str, float]:
    """Where a chain transcode's time went (seconds from submission, as marks)."""
    frames: list[Frame] = row["frames"]
    marks = row["marks"]
    nan = float("nan")
    first = frames[0].at if frames else nan
    started = next((f.at for f in frames if f.text == verb), nan)
    ran = [f.at for f in frames if f.text and f.text.startswith(verb + " ")]
    ffmpeg_end = ran[-1] if ran else nan
    done = next((f.at for f in frames if f.text == "done"), nan)
    entered, returned = marks.get("entered", nan), marks.get("returned", nan)
    return {
        "submit -> claimed_at (create_run, wake, the claim)": row["claimed_s"],
        "claimed_at -> execute entered (claim commit, payload parse)": entered - row["claimed_s"],
        "entered -> first frame (connect, hand the job to the spare, PyAV probe)": first - entered,
        "first frame -> ffmpeg started (plan, space check)": started - first,
        "ffmpeg started -> its last -progress block (ffmpeg's run)": ffmpeg_end - started,
        "last -progress -> 'done' (ffmpeg exit, PyAV verify, fsync + rename, sidecar)": done
        - ffmpeg_end,
        "'done' -> execute returned (child exit and reap, result frame)": returned - done,
        "returned -> completed_at (completion commit)": row["completed_s"] - returned,
        "completed_at -> run() returned": row["wall_s"] - row["completed_s"],
    }


def median_phases(rows: list[dict[str, Any]], verb: str) -> dict[str, float]:
    per = [transcode_phases(r, verb) for r in rows]
    return {k: 1e3 * med([p[k] for p in per]) for k in per[0]} if per else {}


def check_transcode(
    chain: Chain, row: dict[str, Any], output: Path, mode: str, encoder: str
) -> None:
    task: TaskRecord = row["task"]
    result = task.result or {}
    if task.status == "completed" and (
        result.get("mode") != mode or result.get("video_encoder") != encoder or not output.is_file()
    ):
        chain.problems.append(f"transcode {task.id}: unexpected result {result}")
    leftovers = outputs.leftover_parts("TRANSCODE_MP4", {"output": str(output)})
    remove(output, outputs.sidecar_path(output), *leftovers)


async def measure_chain(
    chain: Chain, source: Path, out_dir: Path, rounds: int, rng: random.Random
) -> dict[str, Any]:
    output = out_dir / "transcode.mp4"
    payload = {"input": str(source), "output": str(output), "hardware": False}
    part = outputs.new_part_id()
    argv = job_argv(source, output, payload, part)
    temp = outputs.temp_path(output, part)
    out: dict[str, Any] = {"argv_builder": argv}

    # Warm-up, untimed: page cache, the endpoint's first job, the first warm spare. The job's
    # real ffmpeg argv is read meanwhile.
    await chain.settle()
    out["warmup_direct_s"] = (await run_direct(argv, temp))["wall_s"]
    await chain.settle()
    seen = asyncio.Event()
    catcher = asyncio.create_task(capture_ffmpeg(chain.server_pid, argv[0], seen))
    warm = await chain.run("TRANSCODE_MP4", payload)
    seen.set()
    out["argv_job"] = await catcher
    out["argv_identical"] = without_part_id(out["argv_job"]) == without_part_id(argv)
    out["warmup_chain_s"] = warm["wall_s"]
    check_transcode(chain, warm, output, "reencode", ff.CPU_H264_ENCODER)

    direct: list[dict[str, Any]] = []
    chained: list[dict[str, Any]] = []
    for i in range(rounds):
        lanes = ["direct", "chain"]
        rng.shuffle(lanes)
        for lane in lanes:
            await chain.settle()
            if lane == "direct":
                direct.append(await run_direct(argv, temp))
            else:
                row = await chain.run("TRANSCODE_MP4", payload)
                check_transcode(chain, row, output, "reencode", ff.CPU_H264_ENCODER)
                await chain.settle()  # the spare it started is ready: its start-up CPU is known
                row["spare_cpu_s"] = chain.spare_cpu(row["new_children"])
                chained.append(row)
        print(f"# chain pair {i + 1}/{rounds} ({'/'.join(lanes)})", end="\r", file=sys.stderr)
    print(file=sys.stderr)
    ratios = [c["wall_s"] / d["wall_s"] for c, d in zip(chained, direct, strict=True)]
    out.update(
        rounds=rounds,
        ratios=ratios,
        ratio=med(ratios),
        direct_s=med([d["wall_s"] for d in direct]),
        chain_s=med([c["wall_s"] for c in chained]),
        direct_cpu_s=med([d["cpu_s"] for d in direct]),
        chain_server_cpu_s=med([c["server_tree_cpu_s"] for c in chained]),
        chain_spare_cpu_s=med([c["spare_cpu_s"] for c in chained]),
        chain_bench_cpu_s=med([c["bench_cpu_s"] for c in chained]),
        best_ratio=min(c["wall_s"] for c in chained) / min(d["wall_s"] for d in direct),
        cpu_ratio=med(
            [
                (c["server_tree_cpu_s"] + c["spare_cpu_s"] + c["bench_cpu_s"]) / d["cpu_s"]
                for c, d in zip(chained, direct, strict=True)
            ]
        ),
        direct_rows=direct,
        phases_ms=median_phases(chained, "transcoding"),
        writes=[writes_summary(c) for c in chained],
        problems=[p for d in direct for p in d["problems"]],
        chain_rows=[strip(c) for c in chained],
    )
    return out


# --- 2. remux against re-encode ----------------------------------------------------------------


async def measure_remux(
    chain: Chain, source: Path, out_dir: Path, rounds: int, rng: random.Random
) -> dict[str, Any]:
    def payload(mode: str) -> tuple[dict[str, Any], Path]:
        output = out_dir / f"mp4-{mode}.mp4"
        return {"input": str(source), "output": str(output), "mode": mode, "hardware": False}, (
            output
        )

    encoders = {"remux": "copy", "reencode": ff.CPU_H264_ENCODER}
    rows: dict[str, list[dict[str, Any]]] = {"remux": [], "reencode": []}
    for warmup in (True, False):
        for i in range(1 if warmup else rounds):
            lanes = ["remux", "reencode"]
            rng.shuffle(lanes)
            for mode in lanes:
                await chain.settle()
                p, output = payload(mode)
                row = await chain.run("TRANSCODE_MP4", p)
                check_transcode(chain, row, output, mode, encoders[mode])
                if not warmup:
                    rows[mode].append(row)
            if not warmup:
                print(f"# remux pair {i + 1}/{rounds}", end="\r", file=sys.stderr)
    print(file=sys.stderr)
    speedups = [
        b["wall_s"] / a["wall_s"] for a, b in zip(rows["remux"], rows["reencode"], strict=True)
    ]
    return {
        "rounds": rounds,
        "remux_s": med([r["wall_s"] for r in rows["remux"]]),
        "reencode_s": med([r["wall_s"] for r in rows["reencode"]]),
        "speedups": speedups,
        "speedup": med(speedups),
        "phases_ms": {
            "remux": median_phases(rows["remux"], "remuxing"),
            "reencode": median_phases(rows["reencode"], "transcoding"),
        },
        "rows": {k: [strip(r) for r in v] for k, v in rows.items()},
    }


# --- 3. download against curl ------------------------------------------------------------------


async def run_curl(curl: str, url: str, output: Path) -> dict[str, Any]:
    c0, s0 = cpu_children(), cpu_self()
    p0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(curl, "-s", "-o", str(output), url)
    code = await proc.wait()
    wall = time.perf_counter() - p0
    cpu, self_cpu = cpu_children() - c0, cpu_self() - s0
    fsync_s = fsync_file(output)
    problems = [f"curl exited {code}"] if code else []
    return {
        "wall_s": wall,
        "child_cpu_s": cpu,
        "bench_cpu_s": self_cpu,
        "fsync_s": fsync_s,
        "problems": problems,
    }


# A bare httpx client in a child process, timed from the request to the file closed (without
# the interpreter's start and imports): the asyncio path the download endpoint takes, and
# blocking reads (what a worker thread would do).
HTTPX_CLIENT = """
import asyncio, json, sys, time
import httpx
url, out, mode = sys.argv[1:4]
headers = {"Accept-Encoding": "identity"}
async def reads_async():
    async with httpx.AsyncClient(headers=headers) as client:
        t0 = time.perf_counter()
        async with client.stream("GET", url) as response:
            with open(out, "wb") as f:
                async for chunk in response.aiter_raw():
                    f.write(chunk)
        return time.perf_counter() - t0
def reads_blocking():
    import httpcore
    httpcore.HTTP11Connection.READ_NUM_BYTES = 1 << 20  # the endpoint's read size
    with httpx.Client(headers=headers) as client:
        t0 = time.perf_counter()
        with client.stream("GET", url) as response, open(out, "wb") as f:
            for chunk in response.iter_raw():
                f.write(chunk)
        return time.perf_counter() - t0
seconds = asyncio.run(reads_async()) if mode == "async" else reads_blocking()
print(json.dumps({"seconds": seconds}))
"""


async def run_httpx(mode: str, url: str, output: Path) -> dict[str, Any]:
    c0, s0 = cpu_children(), cpu_self()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HTTPX_CLIENT, url, str(output), mode, stdout=subprocess.PIPE
    )
    stdout, _ = await proc.communicate()
    cpu, self_cpu = cpu_children() - c0, cpu_self() - s0
    try:
        wall = float(json.loads(stdout)["seconds"])
        problems = []
    except (ValueError, KeyError, TypeError):
        wall, problems = float("nan"), [f"httpx {mode} client exited {proc.returncode}"]
    return {"wall_s": wall, "child_cpu_s": cpu, "bench_cpu_s": self_cpu, "problems": problems}


async def watch_full(part: Path, size: int, stop: asyncio.Event) -> float | None:
    """When the ``.part`` reached ``size`` bytes (time.time(), polled every 20 ms)."""
    while not stop.is_set():
        if (size_of(part) or 0) >= size:
            return time.time()
        await asyncio.sleep(0.02)
    return None


def write_durably(body: bytes, output: Path) -> dict[str, Any]:
    """The disk's floor for a download that must survive a power cut: the same bytes written
    in 1 MiB pieces and fsynced, no network."""
    t0 = time.perf_counter()
    with output.open("wb") as f:
        view = memoryview(body)
        for at in range(0, len(view), 1 << 20):
            f.write(view[at : at + (1 << 20)])
        f.flush()
        os.fsync(f.fileno())
    return {"wall_s": time.perf_counter() - t0, "bench_cpu_s": 0.0, "problems": []}


DOWNLOAD_LANES = {
    "fredica": "Fredica (DOWNLOAD task, create_run -> run() returned; fsynced)",
    "curl": "curl -s -o FILE URL (not fsynced)",
    "disk": "the disk alone: write the bytes + fsync, no network (info)",
    "httpx-async": "bare httpx.AsyncClient, 64 KiB reads in an event loop (info)",
    "httpx-blocking": "bare httpx.Client, 1 MiB reads, not fsynced (info)",
}
#: At a link rate (throttled server) only these two run.
LINK_LANES = ("fredica", "curl")


async def measure_download(
    chain: Chain,
    out_dir: Path,
    size_mb: float,
    rounds: int,
    rng: random.Random,
    rate_mb_s: float | None = None,
) -> dict[str, Any]:
    """Every lane on a loopback server as fast as it goes, or (``rate_mb_s``) Fredica and curl
    on a server that sends no faster than that."""
    curl = shutil.which("curl")
    size = int(size_mb * MB)
    body = make_body(size, seed=11)
    small = make_body(1 * MB, seed=12)
    served = {"/blob.bin": hashlib.sha256(body).hexdigest(), "/warm.bin": sha256_of(small)}
    bodies = {"/blob.bin": body, "/warm.bin": small}
    out: dict[str, Any] = {"bytes": size, "curl": curl, "rate_mb_s": rate_mb_s}
    names = [n for n in (LINK_LANES if rate_mb_s else DOWNLOAD_LANES) if n != "curl" or curl]
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    problems: list[str] = []

    async def lane(name: str, path: str, warmup: bool) -> None:
        target = out_dir / f"download-{name}.bin"
        url = http.url(path)
        await asyncio.to_thread(os.sync)  # the previous lane's dirty pages, written back now
        await chain.settle()
        if name == "fredica":
            stop = asyncio.Event()
            watcher = asyncio.create_task(watch_full(part_path(target), size, stop))
            s0 = proc_cpu(chain.server_pid)
            row = await chain.run("DOWNLOAD", {"url": url, "output": str(target)})
            row["server_cpu_s"] = proc_cpu(chain.server_pid) - s0
            stop.set()
            full = await watcher
            row["body_full_s"] = float("nan") if full is None else full - row["t_submit"]
        elif name == "curl":
            assert curl is not None
            row = await run_curl(curl, url, target)
        elif name == "disk":
            row = await asyncio.to_thread(write_durably, bodies[path], target)
        else:
            row = await run_httpx(name.removeprefix("httpx-"), url, target)
        problems.extend(f"{name}: {p}" for p in row.get("problems", ()))
        got = await asyncio.to_thread(sha256, target) if size_of(target) is not None else ""
        row["sha256_ok"] = got == served[path]
        if not row["sha256_ok"]:
            problems.append(f"{name}: the downloaded file is not the served bytes (sha256)")
        remove(target)
        if not warmup:
            rows[name].append(row)

    with HTTPTestServer() as http:
        http.routes["/blob.bin"] = Route(
            body=body, rate=None if rate_mb_s is None else rate_mb_s * MB
        )
        http.routes["/warm.bin"] = Route(body=small)
        for name in names:  # warm-up: httpx's import in the server, the first connections
            await lane(name, "/warm.bin", True)
        for i in range(rounds):
            order = list(names)
            rng.shuffle(order)
            for name in order:
                await lane(name, "/blob.bin", False)
            print(f"# download round {i + 1}/{rounds}", end="\r", file=sys.stderr)
        print(file=sys.stderr)
        out["requests"] = len(http.requests)
    del body
    bodies.clear()
    fr = rows["fredica"]
    out.update(
        rounds=rounds,
        problems=problems,
        lanes={
            n: {
                "name": DOWNLOAD_LANES[n],
                "s": med([r["wall_s"] for r in rows[n]]),
                "mb_s": med([size / MB / r["wall_s"] for r in rows[n]]),
                "child_cpu_s": med([r.get("child_cpu_s", 0.0) for r in rows[n]]),
                "bench_cpu_s": med([r["bench_cpu_s"] for r in rows[n]]),
            }
            for n in names
        },
        fredica_server_cpu_s=med([r["server_cpu_s"] for r in fr]),
        fredica_phases_ms=download_phases(fr),
        fredica_writes=[writes_summary(r) for r in fr],
        fredica_rows=[strip(r) for r in fr],
        other_rows={n: rows[n] for n in names if n != "fredica"},
    )
    if curl:
        cr = rows["curl"]
        ratios = [c["wall_s"] / f["wall_s"] for f, c in zip(fr, cr, strict=True)]
        synced = [(c["wall_s"] + c["fsync_s"]) / f["wall_s"] for f, c in zip(fr, cr, strict=True)]
        out.update(
            curl_fsync_s=med([r["fsync_s"] for r in cr]),
            ratios=ratios,
            ratio=med(ratios),
            ratio_with_fsync=med(synced),
        )
    if "disk" in rows:
        disk = [d["wall_s"] for d in rows["disk"]]
        out.update(
            # How close Fredica gets to writing the same bytes durably with no network at all.
            of_disk_floor=med([d / f["wall_s"] for f, d in zip(fr, disk, strict=True)]),
            # The best any downloader that fsyncs could do against curl here.
            bound=med([c["wall_s"] / d for c, d in zip(rows.get("curl", []), disk, strict=False)])
            if curl
            else float("nan"),
        )
    return out


def download_phases(rows: list[dict[str, Any]]) -> dict[str, float]:
    per = []
    nan = float("nan")
    for r in rows:
        frames: list[Frame] = r["frames"]
        marks = r["marks"]
        first = frames[0].at if frames else nan
        last = next((f.at for f in frames if f.text and f.text.startswith("downloaded ")), nan)
        entered, returned, full = (
            marks.get("entered", nan),
            marks.get("returned", nan),
            r["body_full_s"],
        )
        per.append(
            {
                "submit -> execute entered": entered,
                "entered -> first frame (connect to the server, the job starts)": first - entered,
                "first frame -> body written (the .part at full size, polled every 20 ms)": full
                - first,
                "body written -> 'downloaded' (final fsync, rename, directory fsync)": last - full,
                "'downloaded' -> execute returned": returned - last,
                "returned -> run() returned (completion commit)": r["wall_s"] - returned,
            }
        )
    return {k: 1e3 * med([p[k] for p in per]) for k in per[0]} if per else {}


# --- report -------------------------------------------------------------------------------------


def all_writes(out: dict[str, Any]) -> dict[str, float]:
    w = out["chain"]["writes"]
    return {
        "per_s_median": med([x["per_s"] for x in w]),
        "per_s_max": max(x["per_s"] for x in w),
        "per_s_no_flush_max": max(x["per_s_no_flush"] for x in w),
        "max_1s": max(x["max_1s"] for x in w),
        "writes": med([x["writes"] for x in w]),
        "flush_writes": med([x["flush_writes"] for x in w]),
        "running_s": med([x["running_s"] for x in w]),
        "min_gap_s": min((x["min_gap_s"] for x in w if x["min_gap_s"] is not None), default=0.0),
    }


def report_rows(out: dict[str, Any], args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    ch, rx, dl = out["chain"], out["remux"], out["download"]
    rows: list[tuple[str, str, str, str]] = []
    rows.append(
        (
            f"transcode, legacy {args.seconds:g} s clip -> H.264/AAC: chain / direct ffmpeg",
            f"{ch['ratio']:.3f}",
            f"median of {ch['rounds']} per-pair ratios ("
            + ", ".join(f"{r:.3f}" for r in ch["ratios"])
            + f"); identical argv: {ch['argv_identical']}",
            f"<= {CHAIN_RATIO:g}",
        )
    )
    rows.append(
        (
            "  direct ffmpeg (subprocess) / chain (create_run -> run() returned)",
            f"{ch['direct_s']:.2f} / {ch['chain_s']:.2f} s",
            f"medians; chain - direct {1e3 * (ch['chain_s'] - ch['direct_s']):.0f} ms; best of "
            f"each lane: ratio {ch['best_ratio']:.3f}; warm-up {ch['warmup_direct_s']:.2f} / "
            f"{ch['warmup_chain_s']:.2f} s",
            "",
        )
    )
    rows.append(
        (
            "  CPU: direct ffmpeg / chain (server + job child + ffmpeg)",
            f"{ch['direct_cpu_s']:.2f} / {ch['chain_server_cpu_s']:.2f} s",
            f"+ warm spare start-up {ch['chain_spare_cpu_s']:.2f} s, + engine process "
            f"{ch['chain_bench_cpu_s']:.2f} s; all / direct: {ch['cpu_ratio']:.3f} (median "
            f"per pair); {os.cpu_count()} cores",
            "",
        )
    )
    for phase, ms in ch["phases_ms"].items():
        rows.append((f"    {phase}", f"{ms:.0f} ms", "median", ""))
    rows.append(
        (
            f"remux vs re-encode, mp4 {args.seconds:g} s clip, chain: re-encode / remux",
            f"{rx['speedup']:.1f}x",
            f"remux {rx['remux_s']:.2f} s, re-encode {rx['reencode_s']:.2f} s (medians of "
            f"{rx['rounds']}); per pair: " + ", ".join(f"{s:.1f}x" for s in rx["speedups"]),
            "info",
        )
    )
    for phase, ms in rx["phases_ms"]["remux"].items():
        rows.append((f"    remux: {phase}", f"{ms:.0f} ms", "median", ""))
    lanes = dl["lanes"]
    if dl.get("curl"):
        rows.append(
            (
                f"download {dl['bytes'] / MB:g} MB from 127.0.0.1, both fsynced: Fredica MB/s / "
                "(curl + an fsync of its file) MB/s",
                f"{dl['ratio_with_fsync']:.3f}",
                f"median of {dl['rounds']} pairs; the fsync of curl's file is timed apart "
                f"(median {1e3 * dl['curl_fsync_s']:.0f} ms)",
                f">= {DOWNLOAD_RATIO:g}",
            )
        )
        rows.append(
            (
                "  the same against curl alone (not fsynced)",
                f"{dl['ratio']:.3f}",
                "per pair: "
                + ", ".join(f"{r:.3f}" for r in dl["ratios"])
                + f"; bound for any downloader that fsyncs (curl s / disk-alone s): "
                f"{dl['bound']:.3f}; Fredica reaches {dl['of_disk_floor']:.3f} of the disk-alone "
                "speed",
                "info",
            )
        )
        link = out.get("download_link")
        if link is not None:
            rows.append(
                (
                    f"download {link['bytes'] / MB:g} MB at a {link['rate_mb_s']:g} MB/s link "
                    "(throttled server): Fredica MB/s / curl MB/s",
                    f"{link['ratio']:.3f}",
                    f"median of {link['rounds']} per-pair ratios ("
                    + ", ".join(f"{r:.3f}" for r in link["ratios"])
                    + f"); Fredica {link['lanes']['fredica']['mb_s']:.0f} MB/s, curl "
                    f"{link['lanes']['curl']['mb_s']:.0f} MB/s; Fredica fsyncs, curl does not",
                    f">= {DOWNLOAD_RATIO:g}",
                )
            )
    else:
        rows.append(
            ("download: curl not found, no ratio", "-", "", f">= {DOWNLOAD_RATIO:g} (skipped)")
        )
    for name, lane in lanes.items():
        if name == "fredica":
            cpu = (
                f"CPU: endpoints server {dl['fredica_server_cpu_s']:.2f} s, this process "
                f"(HTTP server + engine) {lane['bench_cpu_s']:.2f} s"
            )
        elif name == "curl":
            cpu = (
                f"CPU: curl {lane['child_cpu_s']:.2f} s, this process (HTTP server) "
                f"{lane['bench_cpu_s']:.2f} s; an fsync of its file afterwards (untimed): "
                f"{1e3 * dl['curl_fsync_s']:.0f} ms"
            )
        elif name == "disk":
            cpu = "in a thread of this process"
        else:
            cpu = (
                f"request -> file closed; CPU: client {lane['child_cpu_s']:.2f} s (its start "
                f"and imports included), this process (HTTP server) {lane['bench_cpu_s']:.2f} s"
            )
        rows.append(
            (f"  {lane['name']}", f"{lane['mb_s']:.0f} MB/s", f"{lane['s']:.2f} s; {cpu}", "")
        )
    for phase, ms in dl["fredica_phases_ms"].items():
        rows.append((f"    Fredica: {phase}", f"{ms:.0f} ms", "median", ""))
    w = all_writes(out)
    rows.append(
        (
            "progress writes per running task per second (chain transcodes of 1.)",
            f"{w['per_s_median']:.2f}/s",
            f"median over tasks (worst {w['per_s_max']:.2f}); {w['writes']:.0f} writes in "
            f"{w['running_s']:.1f} s running, {w['flush_writes']:.0f} of them the engine's "
            f"forced flush after execute (without it: worst {w['per_s_no_flush_max']:.2f}/s); "
            f"most in any 1 s window: {w['max_1s']}; shortest gap {1e3 * w['min_gap_s']:.0f} ms",
            f"<= {WRITES_PER_S:g}",
        )
    )
    dw = dl["fredica_writes"]
    rows.append(
        (
            "  the same for the downloads (info)",
            f"{med([x['per_s'] for x in dw]):.2f}/s",
            f"{med([x['writes'] for x in dw]):.0f} writes in "
            f"{med([x['running_s'] for x in dw]):.2f} s running; most in any 1 s window: "
            f"{max(x['max_1s'] for x in dw)}",
            "",
        )
    )
    rows.append(
        (
            "endpoints server start-up (first address(), excluded)",
            f"{1e3 * out['server_start_s']:.0f} ms",
            f"processes seen under it: {out['seen_processes']}",
            "info",
        )
    )
    return rows


def checks(out: dict[str, Any]) -> list[dict[str, Any]]:
    ch, rx, dl = out["chain"], out["remux"], out["download"]
    problems = out["problems"] + ch["problems"] + dl["problems"]
    if not ch["argv_identical"]:
        problems.append("the direct argv differs from the job's")
    leftovers = out["left_after_stop"] + out["children_at_end"]
    w = all_writes(out)
    found = [
        {
            "name": f"transcode through the chain / direct ffmpeg <= {CHAIN_RATIO:g}",
            "ok": ch["ratio"] <= CHAIN_RATIO,
            "detail": f"{ch['ratio']:.3f} (chain {ch['chain_s']:.2f} s, direct "
            f"{ch['direct_s']:.2f} s)",
        },
        {
            "name": f"remux at least {REMUX_SPEEDUP:g}x faster than re-encode "
            f"({out['seconds']:g} s clip)",
            "ok": rx["speedup"] >= REMUX_SPEEDUP,
            "detail": f"{rx['speedup']:.1f}x (remux {rx['remux_s']:.2f} s, re-encode "
            f"{rx['reencode_s']:.2f} s)",
        },
    ]
    if dl.get("curl"):
        found.append(
            {
                "name": "download from 127.0.0.1, both fsynced: Fredica MB/s / (curl + fsync) "
                f"MB/s >= {DOWNLOAD_RATIO:g}",
                "ok": dl["ratio_with_fsync"] >= DOWNLOAD_RATIO,
                "detail": f"{dl['ratio_with_fsync']:.3f}; against curl alone {dl['ratio']:.3f} "
                f"({dl['lanes']['fredica']['mb_s']:.0f} vs {dl['lanes']['curl']['mb_s']:.0f} "
                f"MB/s), where the disk bounds any fsyncing downloader to {dl['bound']:.3f}",
            }
        )
        link = out.get("download_link")
        if link is not None:
            problems += link["problems"]
            found.append(
                {
                    "name": f"download at a {link['rate_mb_s']:g} MB/s link: Fredica MB/s / curl "
                    f"MB/s >= {DOWNLOAD_RATIO:g}",
                    "ok": link["ratio"] >= DOWNLOAD_RATIO,
                    "detail": f"{link['ratio']:.3f} ({link['lanes']['fredica']['mb_s']:.0f} vs "
                    f"{link['lanes']['curl']['mb_s']:.0f} MB/s)",
                }
            )
    found += [
        {
            "name": f"progress writes per running task <= {WRITES_PER_S:g}/s",
            "ok": w["per_s_max"] <= WRITES_PER_S,
            "detail": f"{w['per_s_median']:.2f}/s median, {w['per_s_max']:.2f}/s worst task; "
            f"most in any 1 s window {w['max_1s']}",
        },
        {
            "name": "every task completed as expected, outputs identical to the served bytes",
            "ok": not problems,
            "detail": "; ".join(problems) or "all completed; sha256 equal in both lanes",
        },
        {
            "name": "no process left: no child of the bench, none of the server's descendants",
            "ok": not leftovers,
            "detail": "; ".join(leftovers)
            or f"0 children of pid {os.getpid()}; {out['seen_processes']} server-side "
            "processes seen, all gone",
        },
    ]
    return found


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="1 round, a 20 s clip, 50 MB")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    p.add_argument("--rounds", type=int, help="pairs per comparison (default 3; --quick: 1)")
    p.add_argument("--seconds", type=float, help="clip length (default 60; --quick: 20)")
    p.add_argument("--download-mb", type=float, help="download size (default 200; --quick: 50)")
    p.add_argument(
        "--link-mb-s",
        type=float,
        default=125.0,
        help="the throttled download's rate in MB/s (default 125: 1 Gbit/s; 0: skip it)",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tmpdir", help="where to make the temporary directory")
    args = p.parse_args(argv)
    q = args.quick
    args.rounds = args.rounds or (1 if q else 3)
    args.seconds = args.seconds or (20.0 if q else 60.0)
    args.download_mb = args.download_mb or (50.0 if q else 200.0)
    return args


async def run_all(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out_dir = work / "out"
    out_dir.mkdir()
    print(f"# samples ({args.seconds:g} s)", file=sys.stderr)
    t0 = time.perf_counter()
    legacy = await asyncio.to_thread(make_sample, work / "legacy.mkv", args.seconds, kind="legacy")
    mp4 = await asyncio.to_thread(make_sample, work / "clip.mp4", args.seconds, kind="mp4")
    out["samples"] = {
        "make_s": time.perf_counter() - t0,
        "legacy_bytes": legacy.stat().st_size,
        "mp4_bytes": mp4.stat().st_size,
    }
    out["seconds"] = args.seconds
    rng = random.Random(args.seed)
    chain = Chain(work, out_dir, media_executors)
    try:
        out["server_start_s"] = await chain.start()
        print("# chain vs direct ffmpeg", file=sys.stderr)
        out["chain"] = await measure_chain(chain, legacy, out_dir, args.rounds, rng)
        print("# remux vs re-encode", file=sys.stderr)
        out["remux"] = await measure_remux(chain, mp4, out_dir, args.rounds, rng)
        print("# download vs curl", file=sys.stderr)
        out["download"] = await measure_download(chain, out_dir, args.download_mb, args.rounds, rng)
        if args.link_mb_s > 0:
            print(f"# download at {args.link_mb_s:g} MB/s vs curl", file=sys.stderr)
            out["download_link"] = await measure_download(
                chain, out_dir, args.download_mb, args.rounds, rng, rate_mb_s=args.link_mb_s
            )
        out["server_starts"] = chain.endpoints.starts
    finally:
        out["left_after_stop"] = await chain.stop()
    out["problems"] = list(chain.problems)
    if out["server_starts"] != 1:
        out["problems"].append(f"the endpoints server was started {out['server_starts']} times")
    out["seen_processes"] = len(chain.seen)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="fredica-media-bench-", dir=args.tmpdir))
    try:
        out = asyncio.run(run_all(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    children = psutil.Process().children(recursive=True)
    out["children_at_end"] = [f"{c.pid} ({' '.join(c.cmdline())[:80]})" for c in children]
    elapsed = time.perf_counter() - started
    load_after = os.getloadavg()
    curl = out["download"]["curl"]
    curl_version = (
        subprocess.run([curl, "--version"], capture_output=True, text=True, check=False)
        .stdout.split("\n", 1)[0]
        .split(" (", 1)[0]
        if curl
        else "no curl"
    )
    print(
        "Media benchmark (TRANSCODE_MP4 and DOWNLOAD through WorkerEngine -> websocket -> "
        "endpoints server -> job; max_workers=1)\n"
        f"ffmpeg {imageio_ffmpeg.get_ffmpeg_version()} (imageio-ffmpeg "
        f"{imageio_ffmpeg.__version__}), PyAV {av.__version__}, {curl_version}, Python "
        f"{sys.version.split()[0]}, {os.cpu_count()} cores; load average {load_before[0]:.2f} "
        f"before, {load_after[0]:.2f} after\n"
        f"{args.rounds} interleaved pair(s) per comparison (shuffled order); samples "
        f"{args.seconds:g} s at 320x240; libx264 preset veryfast crf 23 on both sides"
    )
    print()
    print(table(report_rows(out, args)))
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
        print(
            json.dumps(
                {
                    "ffmpeg_version": imageio_ffmpeg.get_ffmpeg_version(),
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
