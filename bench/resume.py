"""Resume benchmark: the time a kill at a random moment of a long re-encode costs.

A TRANSCODE_MP4 re-encode (``mode="reencode"``, ``hardware=False``: libx264) of a generated
clip runs on a real endpoints server (in this process, as the tests run it: websocket, job
child, ffmpeg), segmented (``--segment`` seconds; see python_endpoints/jobs/segments.py).

1. Full: the encode, uninterrupted (median of ``--rounds``), and the same clip in one pass
   (``segment_seconds`` past the clip's half: not segmented) for what segmenting costs.
2. Kill: for each of ``--kills`` trials, the encode is started, and at a random moment
   (uniform over 5-95 % of the full time) the job's child is killed (SIGKILL: ffmpeg dies
   with it), as a crash or a power cut would. The last checkpoint the job sent is kept, and a
   second attempt runs with it (``resume``), as the queue's retry does. Time lost = time until
   the kill + time of the resumed attempt - full time. A one-pass encode killed at the same
   moment would lose all of the time until the kill.

Target: the median time lost is less than one segment's work (the full time divided by the
number of segments). Printed as a table and PASS/FAIL lines; a miss does not change the exit
status.

    .venv/bin/python bench/resume.py [--quick] [--seconds 60] [--segment 10] [--kills 8]
        [--rounds 3] [--size 640x360] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from websockets.asyncio.client import connect

try:  # the repository's root is on sys.path when imported as bench.<name>, not as a script
    from python_endpoints.jobs.sample import make_sample
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from python_endpoints.jobs.sample import make_sample
from python_endpoints.jobs import outputs
from python_endpoints.protocol import InitData, InitParamAndRun, dump
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer

TOKEN = "bench-resume-token"


async def run_once(
    port: int, params: dict[str, Any], kill_at: float | None = None
) -> tuple[float, dict[str, Any] | None, dict[str, Any]]:
    """Run one TRANSCODE_MP4; with ``kill_at``, kill its child that many seconds in. Returns
    the wall time, the last checkpoint, and the last frame."""
    checkpoint: dict[str, Any] | None = None
    started = time.monotonic()
    async with connect(
        f"ws://127.0.0.1:{port}/tasks/transcode_mp4",
        additional_headers={"Authorization": f"Bearer {TOKEN}"},
    ) as ws:
        await ws.send(dump(InitParamAndRun(data=InitData(params=params))))
        killer = None
        if kill_at is not None:
            killer = asyncio.create_task(kill_job(Path(params["output"]).parent, kill_at))
        while True:
            frame = json.loads(await ws.recv())
            if frame["type"] == "progress":
                found = (frame.get("extras") or {}).get("checkpoint")
                if found:
                    checkpoint = found
                continue
            if frame["type"] in ("result", "error", "cancelled"):
                break
        elapsed = time.monotonic() - started
        if killer is not None:
            killer.cancel()
    return elapsed, checkpoint, frame


async def kill_job(folder: Path, after: float) -> None:
    """``after`` seconds from now, SIGKILL the job child whose ffmpeg writes in ``folder``."""
    await asyncio.sleep(after)
    for _ in range(2000):
        for p in psutil.process_iter(["name", "cmdline"]):
            cmd = p.info["cmdline"] or []
            if cmd and "ffmpeg" in Path(cmd[0]).name and any(str(folder) in c for c in cmd):
                try:
                    psutil.Process(p.ppid()).kill()
                    return
                except psutil.NoSuchProcess:
                    pass
        await asyncio.sleep(0.005)


def clean(folder: Path) -> None:
    for path in folder.iterdir():
        path.unlink()


async def bench(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    width, height = (int(n) for n in args.size.split("x"))
    source = make_sample(work / "in.mkv", args.seconds, size=(width, height))
    out_dir = work / "out"
    out_dir.mkdir()
    output = out_dir / "movie.mp4"
    base = {"input": str(source), "output": str(output), "mode": "reencode", "hardware": False}
    segmented = {**base, "segment_seconds": args.segment}
    one_pass = {**base, "segment_seconds": args.seconds}
    server = EndpointServer(ENDPOINTS, TOKEN)
    port = await server.start()
    rng = random.Random(args.seed)
    try:
        await run_once(port, segmented)  # warm-up
        clean(out_dir)
        full, single = [], []
        segments = 0
        for _ in range(args.rounds):
            t, _, frame = await run_once(port, segmented)
            assert frame["type"] == "result", frame
            segments = frame["result"]["segments"]
            full.append(t)
            clean(out_dir)
            t, _, frame = await run_once(port, one_pass)
            assert frame["type"] == "result", frame
            single.append(t)
            clean(out_dir)
        t_full = statistics.median(full)
        trials = []
        for _ in range(args.kills):
            at = rng.uniform(0.05, 0.95) * t_full
            t_killed, checkpoint, frame = await run_once(port, segmented, kill_at=at)
            if frame["type"] == "result":  # the kill came too late: nothing lost
                clean(out_dir)
                continue
            leftover = sorted(p.name for p in out_dir.iterdir())
            t_resumed, _, frame = await run_once(port, {**segmented, "resume": checkpoint})
            assert frame["type"] == "result", frame
            result = frame["result"]
            trials.append(
                {
                    "kill_at": t_killed,
                    "resumed": t_resumed,
                    "lost": t_killed + t_resumed - t_full,
                    "reused": result["segments_reused"],
                    "encoded": result["segments_encoded"],
                    "pieces_kept": sum(1 for n in leftover if outputs.parse_temp(n)),
                }
            )
            clean(out_dir)
    finally:
        await server.close()
    return {
        "seconds": args.seconds,
        "segment": args.segment,
        "segments": segments,
        "full": t_full,
        "one_pass": statistics.median(single),
        "per_segment": t_full / max(1, segments),
        "trials": trials,
    }


def report(out: dict[str, Any]) -> bool:
    print(
        f"clip {out['seconds']:g} s, segments of {out['segment']:g} s: {out['segments']} "
        f"segments; full segmented encode {out['full']:.2f} s, one pass {out['one_pass']:.2f} s "
        f"({(out['full'] / out['one_pass'] - 1) * 100:+.1f} %), one segment's work "
        f"{out['per_segment']:.2f} s"
    )
    print(f"{'kill at s':>10} {'resumed s':>10} {'lost s':>8} {'reused':>7} {'encoded':>8}")
    for t in out["trials"]:
        print(
            f"{t['kill_at']:>10.2f} {t['resumed']:>10.2f} {t['lost']:>8.2f} "
            f"{t['reused']:>7} {t['encoded']:>8}"
        )
    lost = [t["lost"] for t in out["trials"]]
    if not lost:
        print("FAIL  no kill landed before the end")
        return False
    median, worst = statistics.median(lost), max(lost)
    restart = statistics.median(t["kill_at"] for t in out["trials"])
    print(
        f"time lost: median {median:.2f} s, worst {worst:.2f} s "
        f"(a one-pass encode killed at the same moments: median {restart:.2f} s)"
    )
    ok = bool(median < out["per_segment"])
    print(
        f"{'PASS' if ok else 'FAIL'}  median time lost {median:.2f} s < one segment's work "
        f"{out['per_segment']:.2f} s"
    )
    return ok


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="a 24 s clip, 4 kills, 1 round")
    p.add_argument("--seconds", type=float, help="clip length (default 60; --quick: 24)")
    p.add_argument("--segment", type=float, help="segment length (default 10; --quick: 4)")
    p.add_argument("--kills", type=int, help="kill trials (default 8; --quick: 4)")
    p.add_argument("--rounds", type=int, help="full runs (default 3; --quick: 1)")
    p.add_argument("--size", default="640x360", help="picture size of the clip")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = p.parse_args(argv)
    quick = args.quick
    args.seconds = args.seconds or (24.0 if quick else 60.0)
    args.segment = args.segment or (4.0 if quick else 10.0)
    args.kills = args.kills or (4 if quick else 8)
    args.rounds = args.rounds or (1 if quick else 3)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fredica-bench-resume-") as tmp:
        out = asyncio.run(bench(args, Path(tmp)))
    report(out)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
