"""The media parts of ``bench/batch.py``: a folder of clips through TRANSCODE_MP4 three ways —
Fredica's own commands, the job's ffmpeg commands one after another, and the same commands
through GNU ``xargs -P`` — and the helpers the other parts share (the clip cache, the
``fredica`` command as a real process, the machine's CPU over an interval, reading a data
directory's task table read-only).

Every lane is timed as a user would time it: from the start of its first command to the end
of its last, start-ups included. What each lane made is checked afterwards (untimed): the
outputs exist and read back with PyAV with the expected streams and duration.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import psutil

from bench.media import job_argv, without_part_id
from python_endpoints.jobs import outputs
from python_endpoints.jobs.avread import probe
from python_endpoints.jobs.sample import make_sample

ROOT = Path(__file__).resolve().parent.parent
#: The project's entry, as a real process.
FREDICA = [sys.executable, "-m", "fredica_app.cli"]
#: Longest a command of the bench may take before it is killed (a hung lane, not a figure).
COMMAND_TIMEOUT = 1800.0
#: What every output of TRANSCODE_MP4 ("compatible" profile) holds, for both kinds of clip.
OUTPUT_CODECS = ("h264", "aac", "mov_text")
#: An output's duration may differ from its clip's by this much (seconds).
DURATION_TOLERANCE = 0.5
#: A task's payload keys that are Fredica's plumbing, not params of the job's command: the
#: paths (given to the builder) and what the websocket executor strips before the job sees it.
PLUMBING_KEYS = frozenset({"input", "output", "check_skip", "schema_version"})
LANES = ("fredica", "process", "sequential", "xargs")


# --- shared helpers ---------------------------------------------------------------------------


def fredica(data_dir: Path, *args: str) -> list[str]:
    return [*FREDICA, "--data-dir", str(data_dir), *args]


def run(argv: Sequence[str], what: str) -> subprocess.CompletedProcess[str]:
    """Run a command (untimed set-up or check); raise with its stderr if it fails."""
    done = subprocess.run(
        list(argv),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    if done.returncode:
        raise RuntimeError(f"{what} exited {done.returncode}: {done.stderr.strip()[-1500:]}")
    return done


def cpu_jiffies() -> tuple[float, float]:
    """The whole machine's busy and total CPU time so far (every core; idle and iowait are not
    busy; guest time is already inside user time)."""
    t = psutil.cpu_times()
    total = sum(getattr(t, f) for f in t._fields if f not in ("guest", "guest_nice"))
    return total - t.idle - getattr(t, "iowait", 0.0), total


def busy_fraction(before: tuple[float, float], after: tuple[float, float]) -> float:
    busy, total = after[0] - before[0], after[1] - before[1]
    return busy / total if total > 0 else float("nan")


def read_only(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)


def settle_children(within: float = 30.0) -> list[str]:
    """Wait until no process started by the bench is left (a worker's endpoints server winds
    down after it); the ones still there after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        left = [
            f"{p.pid} ({' '.join(p.cmdline())[:80]})"
            for p in psutil.Process().children(recursive=True)
            if _running(p)
        ]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _running(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def covered(intervals: Iterable[tuple[float, float]]) -> float:
    """The length of the union of ``intervals``."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def most_at_once(intervals: Iterable[tuple[float, float]]) -> int:
    points = sorted(p for a, b in intervals for p in ((a, 1), (b, -1)))
    best = now = 0
    for _, step in points:
        now += step
        best = max(best, now)
    return best


# --- the clips --------------------------------------------------------------------------------


def clip_cache() -> Path:
    return Path(tempfile.gettempdir()) / "fredica-bench-clips"


def clips(kind: str, seconds: float, count: int) -> list[Path]:
    """``count`` clips of ``kind`` (``python_endpoints.jobs.sample``), made once into a folder
    of the cache keyed by kind, seconds and count, and reused. Each has its own modification
    time, so that the library takes each for a material of its own (its fingerprint has the
    mtime in it)."""
    folder = clip_cache() / f"{kind}-{seconds:g}s-{count}"
    if not folder.is_dir():
        scratch = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
        base = time.time_ns() - count * 1_000_000_000
        for i in range(count):
            clip = make_sample(scratch / f"clip{i:02d}.mkv", seconds, ffmpeg=ffmpeg, kind=kind)
            stamp = base + i * 1_000_000_000
            os.utime(clip, ns=(stamp, stamp))
        try:
            scratch.rename(folder)  # whole or not at all
        except OSError:  # another bench made it meanwhile
            shutil.rmtree(scratch, ignore_errors=True)
    found = sorted(folder.glob("clip*.mkv"))
    if len(found) != count:
        raise RuntimeError(f"{folder} holds {len(found)} clips, not {count}: remove it")
    return found


def check_output(path: Path, seconds: float) -> str | None:
    """What is wrong with an output (None: it is a valid MP4 of the clip)."""
    if not path.is_file():
        return f"{path.name}: missing"
    try:
        info = probe(str(path))
    except Exception as exc:  # whatever PyAV raises for a damaged file
        return f"{path.name}: unreadable ({exc})"
    codecs = tuple(s.codec for s in info.streams)
    if codecs != OUTPUT_CODECS:
        return f"{path.name}: streams {codecs}, expected {OUTPUT_CODECS}"
    if info.duration is None or abs(info.duration - seconds) > DURATION_TOLERANCE:
        return f"{path.name}: lasts {info.duration} s, expected {seconds:g} s"
    return None


# --- the job's commands -----------------------------------------------------------------------


def hand_argv(clip: Path, out_dir: Path) -> list[str]:
    """The argv TRANSCODE_MP4 runs for ``clip`` with the template's payload (built by the
    job's own pure builder, through ``bench.media.job_argv``, from the same probe and plan),
    but written straight to ``out_dir/<stem>.mp4``: the temporary name and the rename after
    PyAV's verification are Fredica's plumbing."""
    final = out_dir / f"{clip.stem}.mp4"
    argv = job_argv(clip, final, {"input": str(clip), "output": str(final)}, "0" * 8)
    if outputs.parse_temp(Path(argv[-1]).name) is None:
        raise RuntimeError(f"the job's argv does not end with its temporary output: {argv}")
    return [*argv[:-1], str(final)]


def xargs_template(clips_: Sequence[Path], argvs: Sequence[list[str]], out_dir: Path) -> list[str]:
    """One argv in which ``{}`` stands for a clip's stem, that gives each of ``argvs`` when
    xargs puts the stem in (checked)."""
    first = clips_[0]
    subst = {
        str(first): str(first.parent / f"{{}}{first.suffix}"),
        str(out_dir / f"{first.stem}.mp4"): str(out_dir / "{}.mp4"),
    }
    template = [subst.get(a, a) for a in argvs[0]]
    for clip, argv in zip(clips_, argvs, strict=True):
        if [a.replace("{}", clip.stem) for a in template] != argv:
            raise RuntimeError(f"xargs' command for {clip.name} would not be the job's: {argv}")
    return template


class ArgvCapture(threading.Thread):
    """The command lines of the ffmpeg runs seen under a process (psutil, every 20 ms), to
    compare Fredica's real commands with the ones the hand lanes run."""

    def __init__(self, pid: int, binary: str) -> None:
        super().__init__(daemon=True)
        self.pid, self.binary = pid, binary
        self.seen: dict[str, list[str]] = {}  # by output path
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                kids = psutil.Process(self.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                return
            for p in kids:
                try:
                    cmd = p.cmdline()
                except psutil.Error:
                    continue
                if cmd and cmd[0] == self.binary and "-progress" in cmd:
                    self.seen[cmd[-1]] = cmd
            self.done.wait(0.02)


# --- the lanes --------------------------------------------------------------------------------


@dataclass
class Batch:
    """One part's clips and the commands the hand lanes run on them."""

    name: str
    kind: str
    seconds: float
    clips: list[Path]
    work: Path
    sequential: list[list[str]] = field(default_factory=list)
    xargs: list[str] = field(default_factory=list)
    stems: Path | None = None

    @property
    def folder(self) -> Path:
        return self.clips[0].parent

    def out_dir(self, lane: str) -> Path:
        return self.work / f"{self.name}-{lane}-out"

    def prepare(self) -> None:
        """Build the hand lanes' commands (probes each clip: untimed, once)."""
        for lane in ("sequential", "xargs"):
            self.out_dir(lane).mkdir(parents=True, exist_ok=True)
        self.sequential = [hand_argv(c, self.out_dir("sequential")) for c in self.clips]
        by_xargs = [hand_argv(c, self.out_dir("xargs")) for c in self.clips]
        self.xargs = xargs_template(self.clips, by_xargs, self.out_dir("xargs"))
        self.stems = self.work / f"{self.name}-stems.txt"
        self.stems.write_text("".join(f"{c.stem}\n" for c in self.clips), encoding="utf-8")

    def check_outputs(self, lane: str) -> list[str]:
        out = self.out_dir(lane)
        found = [check_output(out / f"{c.stem}.mp4", self.seconds) for c in self.clips]
        shutil.rmtree(out)
        out.mkdir()
        return [f"{lane}: {p}" for p in found if p]


def sequential_lane(batch: Batch) -> dict[str, Any]:
    """The job's commands one after another."""
    problems, each = [], []
    cpu0, t0 = cpu_jiffies(), time.perf_counter()
    for argv in batch.sequential:
        s = time.perf_counter()
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=COMMAND_TIMEOUT,
        )
        each.append(time.perf_counter() - s)
        if done.returncode:
            problems.append(f"sequential: ffmpeg exited {done.returncode}: {done.stderr[-300:]!r}")
    wall, busy = time.perf_counter() - t0, busy_fraction(cpu0, cpu_jiffies())
    problems += batch.check_outputs("sequential")
    return {"wall_s": wall, "busy": busy, "ffmpeg_s": each, "problems": problems}


#: HandBrake's command-line program (Debian's ``handbrake-cli``), when installed.
HANDBRAKE = shutil.which("HandBrakeCLI")
#: What TRANSCODE_MP4 does by default, in HandBrake's words: x264 ``veryfast`` at quality
#: (CRF) 23, AAC at 192 kb/s, the subtitles carried (MP4 text), the MP4 optimised for
#: streaming (faststart); no cropping (a HandBrake default is to crop black bars), the
#: picture as it is.
HANDBRAKE_SETTINGS = (
    "--format", "av_mp4", "--optimize",
    "--encoder", "x264", "--encoder-preset", "veryfast", "--quality", "23",
    "--aencoder", "av_aac", "--ab", "192", "--mixdown", "stereo",
    "--all-subtitles", "--crop-mode", "none",
)  # fmt: skip


def handbrake_lane(batch: Batch) -> dict[str, Any]:
    """HandBrakeCLI on each clip, one after another, as HandBrake's queue runs its jobs."""
    assert HANDBRAKE is not None
    out, problems = batch.out_dir("handbrake"), []
    out.mkdir(parents=True, exist_ok=True)
    cpu0, t0 = cpu_jiffies(), time.perf_counter()
    for clip in batch.clips:
        done = subprocess.run(
            [HANDBRAKE, "-i", str(clip), "-o", str(out / f"{clip.stem}.mp4"), *HANDBRAKE_SETTINGS],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=COMMAND_TIMEOUT,
        )
        if done.returncode:
            problems.append(f"HandBrakeCLI exited {done.returncode}: {done.stderr[-300:]!r}")
    wall, busy = time.perf_counter() - t0, busy_fraction(cpu0, cpu_jiffies())
    problems += batch.check_outputs("handbrake")
    return {"wall_s": wall, "busy": busy, "problems": problems}


def xargs_lane(batch: Batch) -> dict[str, Any]:
    """The same commands through GNU xargs, as many at once as the machine has cores."""
    assert batch.stems is not None
    argv = ["xargs", "-a", str(batch.stems), "-P", str(os.cpu_count() or 1), "-I", "{}"]
    cpu0, t0 = cpu_jiffies(), time.perf_counter()
    done = subprocess.run(
        [*argv, *batch.xargs],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=COMMAND_TIMEOUT,
    )
    wall, busy = time.perf_counter() - t0, busy_fraction(cpu0, cpu_jiffies())
    problems = []
    if done.returncode:
        problems.append(f"xargs exited {done.returncode}: {done.stderr[-300:]!r}")
    problems += batch.check_outputs("xargs")
    return {"wall_s": wall, "busy": busy, "problems": problems}


def fredica_lane(batch: Batch, data_dir: Path, capture: bool) -> dict[str, Any]:
    """``fredica add DIR --template transcode_mp4`` then ``fredica worker --until-idle`` on a
    data directory of its own, made beforehand (untimed); then (untimed) ``fredica runs
    --json`` and the task table."""
    binary = imageio_ffmpeg.get_ffmpeg_exe()
    problems: list[str] = []
    # A data directory that has been used before (untimed): its database made, as a returning
    # user's is; a first start's migrations are a one-off, not part of each batch.
    run(fredica(data_dir, "runs"), "fredica runs")
    cpu0, t0 = cpu_jiffies(), time.perf_counter()
    add = subprocess.run(
        fredica(data_dir, "add", str(batch.folder), "--template", "transcode_mp4", "--json"),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    add_s = time.perf_counter() - t0
    began = time.time()
    with subprocess.Popen(
        fredica(data_dir, "worker", "--until-idle"),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as worker:
        capturer = ArgvCapture(worker.pid, binary) if capture else None
        if capturer is not None:
            capturer.start()
        try:
            _, err = worker.communicate(timeout=COMMAND_TIMEOUT)
        except BaseException:
            worker.kill()
            raise
        finally:
            if capturer is not None:
                capturer.done.set()
                capturer.join()
    ended = time.time()
    wall = time.perf_counter() - t0
    busy = busy_fraction(cpu0, cpu_jiffies())
    if add.returncode:
        problems.append(f"fredica add exited {add.returncode}: {add.stderr.strip()[-500:]}")
    else:
        added = json.loads(add.stdout)
        if len(added) != len(batch.clips) or not all(a["new_material"] for a in added):
            problems.append(f"fredica add made {len(added)} runs for {len(batch.clips)} clips")
    if worker.returncode:
        problems.append(f"fredica worker exited {worker.returncode}: {err.strip()[-500:]}")
    _check_runs(batch, data_dir, "fredica", problems)
    row = _task_table(batch, data_dir, began, ended, problems)
    if problems:
        # Kept for a look (the bench removes its folder): the database, the logs, the
        # worker's stderr.
        kept = Path(tempfile.mkdtemp(prefix="fredica-batch-problem-"))
        shutil.copytree(data_dir, kept / "data", dirs_exist_ok=True)
        (kept / "worker.stderr").write_text(err, encoding="utf-8")
        problems.append(f"the data directory is kept in {kept}")
    if capturer is not None:
        row["argv"] = _compare_argv(capturer.seen, row.pop("payloads"), problems)
    else:
        row.pop("payloads")
    return {"wall_s": wall, "busy": busy, "add_s": add_s, **row, "problems": problems}


def process_lane(batch: Batch, data_dir: Path) -> dict[str, Any]:
    """``fredica process DIR --template transcode_mp4``: the folder added, submitted and run
    by one command (its own engine), which ends when its runs have; on a data directory of
    its own made beforehand (untimed). Checked as the other Fredica lane."""
    problems: list[str] = []
    run(fredica(data_dir, "runs"), "fredica runs")
    cpu0, t0 = cpu_jiffies(), time.perf_counter()
    began = time.time()
    done = subprocess.run(
        fredica(data_dir, "process", str(batch.folder), "--template", "transcode_mp4"),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    ended = time.time()
    wall = time.perf_counter() - t0
    busy = busy_fraction(cpu0, cpu_jiffies())
    if done.returncode:
        problems.append(f"fredica process exited {done.returncode}: {done.stderr[-500:]}")
    _check_runs(batch, data_dir, "fredica process", problems)
    row = _task_table(batch, data_dir, began, ended, problems)
    row.pop("payloads")
    return {"wall_s": wall, "busy": busy, "process_s": row["worker_s"], "problems": problems}


def _check_runs(batch: Batch, data_dir: Path, lane: str, problems: list[str]) -> None:
    """One run per clip, every one completed (``fredica runs --json``)."""
    runs = json.loads(run(fredica(data_dir, "runs", "--json"), "fredica runs").stdout)
    not_done = [r["id"] for r in runs if r["status"] != "completed"]
    if len(runs) != len(batch.clips) or not_done:
        problems.append(f"{lane}: {len(runs)} runs, not completed: {not_done}")


def _task_table(
    batch: Batch, data_dir: Path, began: float, ended: float, problems: list[str]
) -> dict[str, Any]:
    """Where the worker's time went, from the task table; the outputs checked."""
    conn = read_only(data_dir / "fredica.db")
    try:
        rows = conn.execute(
            "SELECT type, status, started_at, completed_at, payload, result FROM task"
        ).fetchall()
    finally:
        conn.close()
    spans: dict[str, list[tuple[float, float]]] = {"PROBE": [], "TRANSCODE_MP4": []}
    payloads: dict[str, dict[str, Any]] = {}
    expected = "libx264" if any("libx264" in a for a in batch.sequential) else "copy"
    for kind, status, started, completed, payload, result in rows:
        if status != "completed":
            problems.append(f"fredica: a {kind} task is {status}")
            continue
        spans.setdefault(kind, []).append((started, completed))
        if kind != "TRANSCODE_MP4":
            continue
        params, outcome = json.loads(payload), json.loads(result)
        payloads[params["input"]] = params
        extra = set(params) - PLUMBING_KEYS
        if extra:
            problems.append(f"fredica: TRANSCODE_MP4 had params the hand lanes lack: {extra}")
        if outcome.get("video_encoder") != expected:
            problems.append(f"fredica used {outcome.get('video_encoder')}, hand lanes {expected}")
        for out in outcome.get("outputs", []):
            bad = check_output(Path(out), batch.seconds)
            if bad:
                problems.append(f"fredica: {bad}")
    every = [s for v in spans.values() for s in v]
    first = min((a for a, _ in every), default=began)
    last = max((b for _, b in every), default=ended)
    transcoding = covered(spans["TRANSCODE_MP4"])
    return {
        "worker_s": ended - began,
        "start_to_first_claim_s": first - began,
        "transcode_running_s": transcoding,
        "only_probe_running_s": covered(every) - transcoding,
        "nothing_running_s": (last - first) - covered(every),
        "last_completed_to_exit_s": ended - last,
        "transcode_task_s": [b - a for a, b in spans["TRANSCODE_MP4"]],
        "probe_task_s": [b - a for a, b in spans["PROBE"]],
        "transcodes_at_once": most_at_once(spans["TRANSCODE_MP4"]),
        "payloads": payloads,
    }


def _compare_argv(
    seen: dict[str, list[str]], payloads: dict[str, dict[str, Any]], problems: list[str]
) -> dict[str, int]:
    """Each ffmpeg command Fredica ran, against the job's builder given the same clip and
    final path (the temporary name's part id, unique to each run, blanked out)."""
    same = 0
    for cmd in seen.values():
        source = cmd[cmd.index("-i") + 1]
        params = payloads.get(source)
        if params is None:
            problems.append(f"fredica ran ffmpeg on {source}, which no task names")
            continue
        given = {k: v for k, v in params.items() if k not in ("check_skip", "schema_version")}
        built = job_argv(Path(source), Path(params["output"]), given, "0" * 8)
        if without_part_id(cmd) == without_part_id(built):
            same += 1
        else:
            problems.append(f"fredica's ffmpeg command differs from the builder's: {cmd}")
    return {"captured": len(seen), "identical": same}


# --- one part ---------------------------------------------------------------------------------

#: The Fredica lane's phases, in the order a report shows them (medians over the rounds).
PHASES = (
    "add_s",
    "worker_s",
    "start_to_first_claim_s",
    "transcode_running_s",
    "only_probe_running_s",
    "nothing_running_s",
    "last_completed_to_exit_s",
)


def measure_media(
    batch: Batch, rounds: int, warmup: bool, rng: random.Random, tag: str
) -> dict[str, Any]:
    """Every lane once per round, in a shuffled order; with ``warmup``, one untimed round
    first (in which Fredica's ffmpeg commands are captured and compared with the builder's;
    without it, in the first timed round)."""
    load = os.getloadavg()
    batch.prepare()
    # HandBrake's queue beside them, for the re-encodes (it always re-encodes).
    lanes = (*LANES, "handbrake") if batch.name == "reencode" and HANDBRAKE else LANES
    rows: dict[str, list[dict[str, Any]]] = {lane: [] for lane in lanes}
    problems: list[str] = []
    argv_check: dict[str, int] | None = None
    plan = ([(0, True)] if warmup else []) + [(r, False) for r in range(rounds)]
    for n, (r, untimed) in enumerate(plan):
        order = list(lanes)
        rng.shuffle(order)
        for lane in order:
            os.sync()  # the previous lane's outputs written back before this one starts
            left = settle_children()
            if left:
                problems.append(f"still running before the {lane} lane: {left}")
            if lane == "fredica":
                data_dir = batch.work / f"{batch.name}-data-{n}"
                capture = argv_check is None
                try:
                    row = fredica_lane(batch, data_dir, capture)
                finally:
                    shutil.rmtree(data_dir, ignore_errors=True)
                argv_check = row.pop("argv", argv_check)
            elif lane == "process":
                data_dir = batch.work / f"{batch.name}-process-{n}"
                try:
                    row = process_lane(batch, data_dir)
                finally:
                    shutil.rmtree(data_dir, ignore_errors=True)
            elif lane == "sequential":
                row = sequential_lane(batch)
            elif lane == "handbrake":
                row = handbrake_lane(batch)
            else:
                row = xargs_lane(batch)
            problems += row["problems"]
            if not untimed:
                rows[lane].append(row)
        what = "warm-up" if untimed else f"round {r + 1}/{rounds}"
        print(f"# {tag}: {what}", file=sys.stderr)
    medians = {lane: statistics.median(r["wall_s"] for r in rows[lane]) for lane in lanes}
    busy = {lane: statistics.median(r["busy"] for r in rows[lane]) for lane in lanes}
    best = min(("sequential", "xargs"), key=lambda lane: medians[lane])
    fred = rows["fredica"]
    jobs = len(batch.clips)
    return {
        "part": batch.name,
        "clips": jobs,
        "kind": batch.kind,
        "seconds": batch.seconds,
        "rounds": rounds,
        "warmup": warmup,
        "load_average": load,
        "walls_s": {lane: [r["wall_s"] for r in rows[lane]] for lane in lanes},
        "median_s": medians,
        "best_hand": best,
        "ratio": medians["fredica"] / medians[best],
        "ratio_process": medians["process"] / medians[best],
        "busy": busy,
        "cpu_ratio": busy["fredica"] / busy["xargs"] if busy["xargs"] else float("nan"),
        "cpu_ratio_process": busy["process"] / busy["xargs"] if busy["xargs"] else float("nan"),
        "phases_s": {k: statistics.median(r[k] for r in fred) for k in PHASES},
        "transcode_task_s": statistics.median(t for r in fred for t in r["transcode_task_s"]),
        "probe_task_s": (
            statistics.median(probes)
            if (probes := [t for r in fred for t in r["probe_task_s"]])
            else float("nan")
        ),
        "transcodes_at_once": max(r["transcodes_at_once"] for r in fred),
        "ffmpeg_s": statistics.median(t for r in rows["sequential"] for t in r["ffmpeg_s"]),
        "overhead_per_job_s": {
            "vs_xargs": (medians["fredica"] - medians["xargs"]) / jobs,
            "vs_sequential": (medians["fredica"] - medians["sequential"]) / jobs,
        },
        "argv_check": argv_check,
        "problems": problems,
    }
