"""Batches: a folder of files through Fredica, as a user runs it, against the same ffmpeg
commands run by hand; the queue alone against Huey; the ``fredica`` command's start-up.

Every figure is a ratio measured in the same run, with the lanes interleaved: each round runs
every lane once, in a shuffled order (seeded), and a lane's figure is its median over the
rounds. Every command is a real process with the project's entry (``python -m
fredica_app.cli``), timed from just before it starts to its end, start-up included. The CPU
use of a lane is the busy fraction of the whole machine over the lane's interval
(``psutil.cpu_times()`` deltas: time not idle and not waiting for I/O, over all the time of all
cores): other tenants of a shared machine count in it, hence the load average printed with
each part.

Parts ``reencode`` (8 clips of 30 s, MPEG-2 + MP2 + SRT in Matroska: re-encoded) and
``remux`` (200 clips of 5 s, H.264 + Opus + SRT in Matroska: the video copied), both through
the template ``transcode_mp4``, four lanes on the same files:

1. Fredica, two ways (two lanes): ``fredica --data-dir NEW process DIR --template
   transcode_mp4`` (one command: add, submit and run with its own engine), and ``fredica
   --data-dir NEW add DIR --template transcode_mp4`` then ``fredica
   --data-dir NEW worker --until-idle`` (default settings: ``max_workers`` 4, the ``cpu``
   slots one per core), a data directory of its own each round, its database made beforehand
   by an untimed ``fredica runs`` (a returning user's; the first start's migrations are a
   one-off). The commands have the bytecode an install has (``byte_compile``). Afterwards
   (untimed): ``fredica runs
   --json`` says every run completed, and every output the task table names reads back with
   PyAV (streams h264, aac, mov_text; the clip's duration). Where the worker's time went comes
   from the task table (``claimed_at``, ``started_at``, ``completed_at``) and the bench's clock
   around the process.
2. One after another: for each clip, the ffmpeg argv TRANSCODE_MP4 runs, built by the job's
   own pure builder (``python_endpoints.jobs.ffmpeg.transcode_args`` through
   ``bench.media.job_argv``: the same probe, plan, encoder and options, ``-progress pipe:1``
   included; stdout to /dev/null). Left out, as Fredica's plumbing: the temporary output
   name and the rename after PyAV's verification (the hand lanes write the final name), the
   sidecar, and the hardware encoder test (the job's result must name the
   encoder the hand argv uses, else it is reported). Once (in the untimed warm-up round; with
   ``--quick``, in the timed one) the ffmpeg command lines Fredica really runs are read with
   psutil and compared with the builder's for the same clip and output, but for the
   temporary name's part id; the task's payload may carry no parameter the hand lanes lack.
3. GNU ``xargs -a STEMS -P <cores> -I {} FFMPEG … DIR/{}.mkv … OUT/{}.mp4``: the same
   commands, as many at once as the machine has cores, no shell (the template is checked to
   give back each clip's argv).
4. ``reencode`` only, where ``HandBrakeCLI`` is installed (Debian's ``handbrake-cli``):
   HandBrake's queue — each clip one after another, x264 ``veryfast`` quality 23, AAC
   192 kb/s stereo, the subtitles carried, optimised MP4, no crop
   (``_batch_lanes.HANDBRAKE_SETTINGS``: what TRANSCODE_MP4 does by default); its outputs
   checked as the others'.

Targets: Fredica / the faster hand lane ≤ 1.10 (reencode), ≤ 1.25 (remux), for each of the
two Fredica lanes; Fredica process / HandBrakeCLI ≤ 0.85 (reencode); Fredica's busy fraction
/ the xargs lane's within 10 %. A miss is explained by the per-job overhead (Fredica's median
minus each hand lane's, over the clips) and the worker's phases.

Part ``short`` (``bench/_batch_short.py``): 2,000 clips of 1 s (``--quick``: 20) through
``fredica process DIR --template extract_audio`` (their audio taken out with PyAV in the job's
process), the same with an ffmpeg chosen in the settings (an ffmpeg process a clip), and the
ffmpeg commands through ``xargs -P <cores>``; every lane's WAVs checked to hold the same
samples. Target: ≤ 1.30, the first lane against the last.

Part ``jobs`` (``bench/_batch_jobs.py``): what a job adds to its own work, per endpoint,
under a batch — with a warm endpoints server (the app's, started once, untimed), after a
warm-up of two jobs at once per endpoint (the first job of an endpoint in a server's life
starts its child cold), 20 jobs per endpoint two at a time; per job, the start message
(``init_param_and_run`` on an open connection, as the engine's executor sends it) → the first
``progress`` frame (or the ``result`` when none comes first). Every endpoint but
DOWNLOAD_MODEL and DOWNLOAD_SITE (a model server, a video site: not here); a local HTTP
server for DOWNLOAD. Target: p50 < 50 ms, p99 < 200 ms, each.

Part ``drain``: 5,000 tasks in one run, submitted with ``fredica submit SPEC.json``
(untimed), drained by ``fredica worker --until-idle --max-workers 2`` (a real process); the
figure is tasks / (the task table's first ``claimed_at`` -> last ``completed_at``). NOOP
(inline: claimed, run and completed inside the engine's transaction), SLEEP with
``seconds: 0`` (the usual path: an asyncio task per attempt, its first progress report, its
outcome in a later commit), and SLEEP once more with the setting ``sqlite_synchronous``
NORMAL (no fsync at each commit; not a target: what the fsync costs). Against
``bench/engine.py``'s Huey lane (SqliteHuey, a Consumer with 2 worker threads, results
stored; imported, its round made as long as this one), timed from ``consumer.start()`` (so
including the consumer's start, which Fredica's figure leaves out) to the last completion.
Target: ≥ 1.0x Huey, NOOP and SLEEP.

Part ``startup``: ``python -c pass`` (the interpreter's floor), ``fredica --version``,
``fredica --data-dir D runs`` (D holds 3 finished runs) and ``fredica --data-dir D process
CLIP --template transcode_mp4`` (a 5 s mkv clip; D a copy of a migrated, empty data directory
each time), interleaved, median of 5. ``process`` is timed to its first task's ``started_at``
(stamped when it is claimed); its whole run is shown too. Targets: process < 1 s, runs and
--version < 0.3 s. Then the slowest of the three runs once under ``python -X importtime``
(and, but with ``--quick``, every other one that misses its target): the 15 imports with the
most cumulative time (nested imports count in their parents').

Clips are made once into ``<temp dir>/fredica-bench-clips/<kind>-<seconds>s-<count>/`` and
reused. ``--quick``: 2 clips per media part, 1 round and no warm-up, 200 tasks per drain.
Targets print as PASS/FAIL; a miss does not change the exit status.

    python -m bench.batch [--part reencode|remux|jobs|drain|startup|all] [--rounds N] [--quick]
        [--json]
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import random
import shutil
import site
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._batch_jobs import LANES, TARGET_P50, TARGET_P99, measure_jobs
from bench._batch_lanes import ROOT, Batch, clips, measure_media, settle_children
from bench._batch_queue import STARTUP_TARGETS, measure_drain, measure_startup
from bench._batch_short import COUNT as SHORT_CLIPS
from bench._batch_short import measure_short, short_report
from bench.engine import table
from workers.running import default_slots

PARTS = ("reencode", "remux", "short", "jobs", "drain", "startup")
#: The media parts: clip kind, seconds, count (full run), Fredica / best hand lane target.
MEDIA = {"reencode": ("legacy", 30.0, 8, 1.10), "remux": ("mkv", 5.0, 200, 1.25)}
#: The re-encodes against HandBrake's queue (HandBrakeCLI, like-for-like settings).
HANDBRAKE_TARGET = 0.85
CPU_WITHIN = 0.10  # Fredica's busy fraction / the xargs lane's: 1 ± this
DRAIN_TASKS = 5_000
DRAIN_RATIO = 1.0
STARTUP_ROUNDS = 5
JOBS_PER_ENDPOINT = 20

Row = tuple[str, str, str, str]
Check = dict[str, Any]


def _s(v: float) -> str:
    return f"{v:.2f} s"


def _probe_part(seconds: float) -> str:
    """A PROBE task's time, when the runs had any (transcode_mp4 has none now: NaN)."""
    return "" if math.isnan(seconds) else f"; one PROBE task: {_s(seconds)}"


def _each(values: list[float]) -> str:
    return "rounds " + ", ".join(f"{v:.2f}" for v in values)


def _load(load: tuple[float, float, float]) -> str:
    return f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"


def _problems(found: list[str]) -> Check:
    return {
        "name": "every command ran cleanly, every output valid",
        "ok": not found,
        "detail": "; ".join(found[:10]) + (f" (+{len(found) - 10} more)" if len(found) > 10 else "")
        if found
        else "ok",
    }


# --- reports ----------------------------------------------------------------------------------


def media_report(m: dict[str, Any], target: float) -> tuple[list[Row], list[Check], list[str]]:
    med, busy, walls, ph = m["median_s"], m["busy"], m["walls_s"], m["phases_s"]
    cores = os.cpu_count() or 1
    rows: list[Row] = [
        (
            "Fredica: add + worker --until-idle",
            _s(med["fredica"]),
            f"add {_s(ph['add_s'])} + worker {_s(ph['worker_s'])}; {_each(walls['fredica'])}",
            "",
        ),
        ("Fredica: process DIR (one command)", _s(med["process"]), _each(walls["process"]), ""),
        ("one after another", _s(med["sequential"]), _each(walls["sequential"]), ""),
        (f"xargs -P{cores}", _s(med["xargs"]), _each(walls["xargs"]), ""),
        (
            f"Fredica / {m['best_hand']}",
            f"{m['ratio']:.2f}x",
            "medians",
            f"<= {target:.2f}x",
        ),
        (
            f"Fredica process / {m['best_hand']}",
            f"{m['ratio_process']:.2f}x",
            "medians",
            f"<= {target:.2f}x",
        ),
        (
            "CPU busy (whole machine): Fredica / xargs",
            f"{m['cpu_ratio']:.2f}",
            f"Fredica {busy['fredica']:.0%}, xargs {busy['xargs']:.0%}, one after another "
            f"{busy['sequential']:.0%}",
            f"1 ± {CPU_WITHIN:.2f}",
        ),
        (
            "CPU busy: Fredica process / xargs",
            f"{m['cpu_ratio_process']:.2f}",
            f"Fredica process {busy['process']:.0%}",
            f"1 ± {CPU_WITHIN:.2f}",
        ),
    ]
    if "handbrake" in med:
        rows += [
            ("HandBrakeCLI, its queue (one at a time)", _s(med["handbrake"]),
             _each(walls["handbrake"]), ""),
            ("Fredica / HandBrakeCLI", f"{med['fredica'] / med['handbrake']:.2f}x", "medians",
             f"<= {HANDBRAKE_TARGET:.2f}x"),
            ("Fredica process / HandBrakeCLI", f"{med['process'] / med['handbrake']:.2f}x",
             "medians", f"<= {HANDBRAKE_TARGET:.2f}x"),
        ]  # fmt: skip
    where = [
        f"where Fredica's time goes (medians over the rounds; {m['clips']} jobs):",
        f"  per job: Fredica - xargs {_s(m['overhead_per_job_s']['vs_xargs'])}, Fredica - one "
        f"after another {_s(m['overhead_per_job_s']['vs_sequential'])}",
        f"  fredica add (start, import, submit): {_s(ph['add_s'])}",
        f"  worker start -> first claimed_at: {_s(ph['start_to_first_claim_s'])}",
        f"  a TRANSCODE_MP4 running: {_s(ph['transcode_running_s'])}; only other tasks "
        f"running: {_s(ph['only_probe_running_s'])}; no task running (first claim -> last "
        f"completion): {_s(ph['nothing_running_s'])}",
        f"  last completed_at -> worker exit: {_s(ph['last_completed_to_exit_s'])}",
        f"  one TRANSCODE_MP4 task (started_at -> completed_at): {_s(m['transcode_task_s'])}; "
        f"its ffmpeg command alone: {_s(m['ffmpeg_s'])}" + _probe_part(m["probe_task_s"]),
        f"  most TRANSCODE_MP4 running at once: {m['transcodes_at_once']} (TRANSCODE_MP4 "
        f"takes a cpu slot; default cpu slots here: {default_slots()['cpu']}); xargs runs "
        f"{cores}",
    ]
    argv = m["argv_check"] or {"captured": 0, "identical": 0}
    checks = [
        {
            "name": f"{m['part']}: Fredica / the faster hand lane <= {target:.2f}x",
            "ok": m["ratio"] <= target,
            "detail": f"{med['fredica']:.2f} s vs {m['best_hand']} {med[m['best_hand']]:.2f} s "
            f"({m['ratio']:.2f}x)",
        },
        {
            "name": f"{m['part']}: Fredica process / the faster hand lane <= {target:.2f}x",
            "ok": m["ratio_process"] <= target,
            "detail": f"{med['process']:.2f} s vs {m['best_hand']} "
            f"{med[m['best_hand']]:.2f} s ({m['ratio_process']:.2f}x)",
        },
        {
            "name": f"{m['part']}: Fredica's CPU busy fraction within {CPU_WITHIN:.0%} of xargs'",
            "ok": abs(m["cpu_ratio"] - 1) <= CPU_WITHIN,
            "detail": f"{busy['fredica']:.0%} vs {busy['xargs']:.0%} ({m['cpu_ratio']:.2f})",
        },
        {
            "name": f"{m['part']}: Fredica's ffmpeg commands are the hand lanes' (captured once)",
            "ok": argv["captured"] > 0 and argv["identical"] == argv["captured"],
            "detail": f"{argv['identical']} of {argv['captured']} captured identical",
        },
        {**_problems(m["problems"]), "name": f"{m['part']}: every run completed, outputs valid"},
    ]
    if "handbrake" in med:
        checks.append(
            {
                "name": f"{m['part']}: Fredica process / HandBrakeCLI <= {HANDBRAKE_TARGET:.2f}x",
                "ok": med["process"] / med["handbrake"] <= HANDBRAKE_TARGET,
                "detail": f"{med['process']:.2f} s vs {med['handbrake']:.2f} s",
            }
        )
    return rows, checks, where


def drain_report(d: dict[str, Any]) -> tuple[list[Row], list[Check], list[str]]:
    rates, each = d["tasks_per_s"], d["rounds_tasks_per_s"]
    names = {
        "NOOP": "Fredica worker, NOOP (inline)",
        "SLEEP": "Fredica worker, SLEEP 0 s (usual path)",
        "SLEEP_NORMAL": "the same, sqlite_synchronous NORMAL",
        "huey": "Huey SqliteHuey, Consumer 2 threads",
    }
    rows: list[Row] = [
        (
            names[k],
            f"{rates[k]:.0f} tasks/s",
            "rounds " + ", ".join(f"{v:.0f}" for v in each[k]),
            "",
        )
        for k in ("NOOP", "SLEEP", "SLEEP_NORMAL", "huey")
    ]
    rows += [
        (f"{t} / Huey", f"{d['ratio'][t]:.2f}x", "medians", f">= {DRAIN_RATIO:.2f}x")
        for t in ("NOOP", "SLEEP")
    ]
    rows.append(
        (
            "SLEEP, NORMAL / Huey",
            f"{d['ratio']['SLEEP_NORMAL']:.2f}x",
            "medians; what the fsync of each commit costs",
            "",
        )
    )
    where = [
        "the worker process around the drain (medians; not in the figure):",
        *(
            f"  {t}: submit (untimed) {_s(d['submit_s'][t])}; worker wall "
            f"{_s(d['worker_wall_s'][t])} = start -> first claimed_at "
            f"{_s(d['start_to_first_claim_s'][t])} + drain + last completed_at -> exit "
            f"{_s(d['last_completed_to_exit_s'][t])}"
            for t in ("NOOP", "SLEEP")
        ),
    ]
    checks = [
        {
            "name": f"drain {d['tasks']:,}: Fredica {t} >= Huey",
            "ok": d["ratio"][t] >= DRAIN_RATIO,
            "detail": f"{rates[t]:.0f} vs {rates['huey']:.0f} tasks/s ({d['ratio'][t]:.2f}x)",
        }
        for t in ("NOOP", "SLEEP")
    ]
    checks.append({**_problems(d["problems"]), "name": "drain: every task completed"})
    return rows, checks, where


def jobs_report(j: dict[str, Any]) -> tuple[list[Row], list[Check], list[str]]:
    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v * 1000:.0f} ms"

    rows: list[Row] = [
        (
            name,
            f"p50 {ms(e['first_p50_s'])}",
            f"p99 {ms(e['first_p99_s'])}",
            f"whole job p50 {ms(e['total_p50_s'])}",
        )
        for name, e in j["endpoints"].items()
    ]
    checks = [
        {
            "name": f"jobs: {name}: start -> first frame p50 < {TARGET_P50 * 1000:.0f} ms, "
            f"p99 < {TARGET_P99 * 1000:.0f} ms",
            "ok": e["first_p50_s"] is not None
            and e["first_p50_s"] < TARGET_P50
            and e["first_p99_s"] < TARGET_P99
            and not e["failed"],
            "detail": f"{ms(e['first_p50_s'])} / {ms(e['first_p99_s'])}"
            + (f"; failed: {e['failed']}" if e["failed"] else ""),
        }
        for name, e in j["endpoints"].items()
    ]
    where = [f"the server's own start (untimed above): {_s(j['server_start_s'])}; lanes {LANES}"]
    return rows, checks, where


def startup_report(s: dict[str, Any]) -> tuple[list[Row], list[Check], list[str]]:
    med, times = s["median_s"], s["times_s"]
    floor = med["python -c pass"]
    labels = {
        "python -c pass": "python -c pass (the floor)",
        "--version": "fredica --version",
        "runs": "fredica --data-dir D runs (3 runs)",
        "process": "fredica process CLIP -> first task started_at",
    }
    rows: list[Row] = []
    for name in s["times_s"]:
        detail = _each(times[name])
        if name != "python -c pass":
            detail = f"floor + {_s(med[name] - floor)}; {detail}"
        if name == "process":
            detail += f"; whole run {_s(s['process_whole_s'])}"
        target = STARTUP_TARGETS.get(name)
        rows.append((labels[name], _s(med[name]), detail, f"< {target:g} s" if target else ""))
    where: list[str] = []
    for profile in s["profiles"]:
        imp = profile["importtime"]
        where += [
            f"python -X importtime, `{profile['command']}` once ({_s(profile['wall_s'])}): "
            f"imports {imp['total_ms']:.0f} ms, {imp['modules']} modules; top {len(imp['top'])} "
            "by cumulative time (ms cumulative, ms own, module by depth):",
            *(
                f"  {r['cumulative_ms']:8.1f} {r['self_ms']:7.1f}  {'  ' * r['depth']}{r['module']}"
                for r in imp["top"]
            ),
        ]
    checks = [
        {
            "name": f"start-up: {labels[name]} < {target:g} s",
            "ok": med[name] < target,
            "detail": _s(med[name]),
        }
        for name, target in STARTUP_TARGETS.items()
    ]
    checks.append({**_problems(s["problems"]), "name": "start-up: every command ran cleanly"})
    return rows, checks, where


# --- main -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--part", choices=[*PARTS, "all"], default="all")
    p.add_argument("--rounds", type=int, help="rounds per part (default 3; --quick: 1)")
    p.add_argument("--quick", action="store_true", help="2 clips, 1 round, 200 tasks")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.rounds < 1:
        p.error("--rounds must be 1 or more")
    return args


def run_part(part: str, args: argparse.Namespace, work: Path, rng: random.Random) -> Any:
    if part in MEDIA:
        kind, seconds, count, _ = MEDIA[part]
        batch = Batch(part, kind, seconds, clips(kind, seconds, 2 if args.quick else count), work)
        return measure_media(batch, args.rounds, not args.quick, rng, part)
    if part == "short":
        return measure_short(work, 20 if args.quick else SHORT_CLIPS, args.rounds, rng)
    if part == "drain":
        return measure_drain(work, 200 if args.quick else DRAIN_TASKS, args.rounds, rng)
    if part == "jobs":
        return measure_jobs(work, 4 if args.quick else JOBS_PER_ENDPOINT)
    rounds = args.rounds if args.quick else max(args.rounds, STARTUP_ROUNDS)
    return measure_startup(work, rounds, not args.quick, rng)


def report(part: str, out: Any) -> list[Check]:
    if part in MEDIA:
        rows, checks, where = media_report(out, MEDIA[part][3])
        title = (
            f"{part}: {out['clips']} clips of {out['seconds']:g} s ({out['kind']}) through "
            f"transcode_mp4; median of {out['rounds']} interleaved rounds"
            + (" after a warm-up round" if out["warmup"] else "")
        )
    elif part == "short":
        rows, checks, where = short_report(out)
        title = (
            f"short: {out['clips']} clips of 1 s through extract_audio against xargs; median "
            f"of {out['rounds']} interleaved rounds"
        )
    elif part == "jobs":
        rows, checks, where = jobs_report(out)
        title = (
            f"jobs: per endpoint, {out['n']} jobs {out['lanes']} at a time after a warm-up of "
            f"{out['lanes']}; start message -> first frame"
        )
    elif part == "drain":
        rows, checks, where = drain_report(out)
        title = (
            f"drain: {out['tasks']:,} tasks, --max-workers 2; tasks / (first claimed_at -> "
            f"last completed_at); median of {out['rounds']} interleaved rounds"
        )
    else:
        rows, checks, where = startup_report(out)
        title = f"startup: median of {out['rounds']} interleaved rounds"
    print(f"== {title} ({_load(out['load_average'])} at its start)")
    print(table(rows))
    print()
    print("\n".join(where))
    print()
    for c in checks:
        print(f"{'PASS' if c['ok'] else 'FAIL'}  {c['name']}: {c['detail']}")
    print()
    return checks


def byte_compile() -> float:
    """Give every command of the bench the bytecode an install has, so that none compiles
    its modules from source at each start: pip and the bundle write it at install; from a
    checkout Python writes it at the first import — unless ``PYTHONDONTWRITEBYTECODE`` is
    set, which some shells and containers set (then each ``fredica`` command spent ~0.6 s
    compiling here). Removed from the environment of the bench's commands, and the project
    and the installed packages compiled once (up-to-date files are skipped). Seconds taken."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    roots = [ROOT / name for name in ("fredica_app", "workers", "python_endpoints", "migrations")]
    roots += [Path(p) for p in site.getsitepackages()]
    for root in roots:
        compileall.compile_dir(root, quiet=2, workers=os.cpu_count() or 1)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    compiled_s = byte_compile()
    parts = PARTS if args.part == "all" else (args.part,)
    started, load = time.perf_counter(), os.getloadavg()
    print(
        f"Batches: Fredica against the same ffmpeg commands by hand; Python "
        f"{sys.version.split()[0]}, {os.cpu_count()} cores; {_load(load)} at the start"
        + (" (--quick: figures not comparable)" if args.quick else "")
    )
    print(f"bytecode of the project and its packages checked or written in {compiled_s:.1f} s")
    print()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="fredica-batch-bench-"))
    results: dict[str, Any] = {}
    checks: list[Check] = []
    try:
        for part in parts:
            results[part] = run_part(part, args, work, rng)
            checks += report(part, results[part])
    finally:
        left = settle_children(within=10.0)
        shutil.rmtree(work, ignore_errors=True)
    if left:
        checks.append({"name": "no process of the bench left", "ok": False, "detail": str(left)})
    print(f"time: total {time.perf_counter() - started:.0f} s")
    if args.json:
        print(
            json.dumps(
                {
                    "cores": os.cpu_count(),
                    "load_average": load,
                    "quick": args.quick,
                    **results,
                    "checks": checks,
                },
                indent=2,
                default=str,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
