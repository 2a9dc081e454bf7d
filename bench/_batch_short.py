"""The ``short`` part of ``bench/batch.py``: a folder of many one-second clips through the
``extract_audio`` template, against the same ffmpeg commands through GNU ``xargs -P``.

What a user pointing Fredica at a library of voice memos meets: the cost per file. The clips
are copies of one 1 s sample (H.264 + Opus + SRT in Matroska), each with its own modification
time (the library takes each for a material of its own), made once into the clip cache.

Lanes, interleaved in a shuffled order each round, a fresh data directory each time (its
database made beforehand by an untimed ``fredica runs``):

1. ``fredica --data-dir NEW process DIR --template extract_audio`` — one command: import,
   submit, run with its own engine, exit — timed from its start to its end. A clip this short
   has its audio taken out in the job's own process with PyAV (FFmpeg's libraries;
   :mod:`python_endpoints.jobs.audiodecode`), not by an ffmpeg process.
2. The same, with the bundled ffmpeg chosen in the settings (``ffmpeg_path``): every clip
   goes through an ffmpeg process, the command of lane 3 — what the per-file cost of the
   queue, the endpoints server and the job's child is, beside ffmpeg's own.
3. ``xargs -a STEMS -P <cores> -I {} FFMPEG …``: for each clip the ffmpeg argv EXTRACT_AUDIO
   builds (``python_endpoints.jobs.ffmpeg.extract_audio_args`` with the probe's audio stream,
   16 kHz mono WAV), written straight to its final name.

Checked afterwards (untimed): every run completed, one WAV per clip in each lane, each lane's
WAVs hold the same samples (the ``data`` chunks, clip by clip), and the results say which way
each Fredica lane took the audio out (``tool``: ``pyav`` in lane 1, ``ffmpeg`` in lane 2).
The target (≤ 1.30) is lane 1 against lane 3: what a user running Fredica on the folder
waits, against a shell loop.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import imageio_ffmpeg

from bench._batch_lanes import busy_fraction, clip_cache, cpu_jiffies, fredica, read_only, run
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs.avread import probe
from python_endpoints.jobs.sample import make_sample

SECONDS = 1.0
COUNT = 2000
TARGET = 1.30


def short_clips(count: int) -> list[Path]:
    """``count`` copies of a 1 s clip, each with its own modification time, made once."""
    folder = clip_cache() / f"short-{count}"
    if not folder.is_dir():
        scratch = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        one = make_sample(scratch / "one.mkv", SECONDS, kind="mkv")
        base = time.time_ns() - count * 1_000_000_000
        for i in range(count):
            clip = scratch / f"memo{i:05d}.mkv"
            shutil.copyfile(one, clip)
            os.utime(clip, ns=(base + i * 1_000_000_000,) * 2)
        one.unlink()
        try:
            scratch.rename(folder)
        except OSError:
            shutil.rmtree(scratch, ignore_errors=True)
    found = sorted(folder.glob("memo*.mkv"))
    if len(found) != count:
        raise RuntimeError(f"{folder} holds {len(found)} clips, not {count}: remove it")
    return found


def hand_template(clip: Path, out_dir: Path) -> list[str]:
    """EXTRACT_AUDIO's ffmpeg argv for ``clip`` (its probe's audio stream), with ``{}`` for
    the clip's stem, writing ``out_dir/{}.wav``."""
    stream = probe(str(clip)).main_audio()
    assert stream is not None
    argv = ff.extract_audio_args(
        imageio_ffmpeg.get_ffmpeg_exe(),
        str(clip.parent / "{}.mkv"),
        str(out_dir / "{}.wav"),
        stream=stream.index,
        format="wav",
        sample_rate=16000,
        channels=1,
    )
    return argv


def _fredica_lane(folder: Path, data_dir: Path, ffmpeg: str | None = None) -> dict[str, Any]:
    run(fredica(data_dir, "runs"), "fredica runs (untimed: the database made)")
    if ffmpeg is not None:  # an ffmpeg chosen in the settings: every file goes through it
        (data_dir / "settings.json").write_text(json.dumps({"ffmpeg_path": ffmpeg}))
    before, began = cpu_jiffies(), time.perf_counter()
    run(fredica(data_dir, "process", str(folder), "--template", "extract_audio"), "process")
    wall, busy = time.perf_counter() - began, busy_fraction(before, cpu_jiffies())
    conn = read_only(data_dir / "fredica.db")
    try:
        statuses = dict(conn.execute("SELECT status, count(*) FROM task GROUP BY status"))
        results = [json.loads(r) for (r,) in conn.execute("SELECT result FROM task")]
    finally:
        conn.close()
    wavs = [Path(o) for r in results if r for o in r.get("outputs", []) if o.endswith(".wav")]
    tools = sorted({str(r.get("tool")) for r in results if r})
    return {
        "wall_s": wall,
        "busy": busy,
        "statuses": statuses,
        "outputs": len(wavs),
        "tools": tools,
        "samples": _samples_digest(wavs),
    }


def _samples_digest(wavs: list[Path]) -> str:
    """One digest of the WAVs' samples (their ``data`` chunks, by clip name): equal between
    lanes that wrote the same sound, whatever each WAV's ``ISFT`` tag (the libavformat that
    wrote it) says."""
    digest = hashlib.sha256()
    for wav in sorted(wavs, key=lambda p: p.name):
        raw = wav.read_bytes()
        at = raw.find(b"data", 12)
        digest.update(wav.name.split(".")[0].encode() + b"\0" + raw[at:])
    return digest.hexdigest()


def _xargs_lane(clips: list[Path], template: list[str], out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True)
    stems = out_dir.parent / f"{out_dir.name}.stems"
    stems.write_text("".join(f"{c.stem}\n" for c in clips))
    argv = ["xargs", "-a", str(stems), "-P", str(os.cpu_count() or 1), "-I", "{}", *template]
    before, began = cpu_jiffies(), time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall, busy = time.perf_counter() - began, busy_fraction(before, cpu_jiffies())
    wavs = list(out_dir.glob("*.wav"))
    return {"wall_s": wall, "busy": busy, "outputs": len(wavs), "samples": _samples_digest(wavs)}


def measure_short(work: Path, count: int, rounds: int, rng: random.Random) -> dict[str, Any]:
    clips = short_clips(count)
    folder = clips[0].parent
    rows: dict[str, list[dict[str, Any]]] = {"process": [], "ffmpeg": [], "xargs": []}
    problems: list[str] = []
    for n in range(rounds):
        lanes = list(rows)
        rng.shuffle(lanes)
        for lane in lanes:
            place = work / f"short-{lane}-{n}"
            if lane == "xargs":
                row = _xargs_lane(clips, hand_template(clips[0], place / "out"), place / "out")
            else:
                bundled = imageio_ffmpeg.get_ffmpeg_exe() if lane == "ffmpeg" else None
                row = _fredica_lane(folder, place, bundled)
                if row["statuses"] != {"completed": count}:
                    problems.append(f"round {n}: Fredica's tasks ({lane}): {row['statuses']}")
                want = ["ffmpeg"] if lane == "ffmpeg" else ["pyav"]
                if row["tools"] != want:
                    problems.append(f"round {n}: {lane} lane's audio taken out by {row['tools']}")
            if row["outputs"] != count:
                problems.append(f"round {n}: {lane} made {row['outputs']} WAVs of {count}")
            rows[lane].append(row)
            shutil.rmtree(place, ignore_errors=True)
        digests = {lane: rs[-1]["samples"] for lane, rs in rows.items()}
        if len(set(digests.values())) != 1:
            problems.append(f"round {n}: the lanes' WAVs hold different samples")
    ratios = [
        f["wall_s"] / x["wall_s"] for f, x in zip(rows["process"], rows["xargs"], strict=True)
    ]
    each_ffmpeg = [
        f["wall_s"] / x["wall_s"] for f, x in zip(rows["ffmpeg"], rows["xargs"], strict=True)
    ]
    fredica_s = statistics.median(r["wall_s"] for r in rows["process"])
    ffmpeg_s = statistics.median(r["wall_s"] for r in rows["ffmpeg"])
    xargs_s = statistics.median(r["wall_s"] for r in rows["xargs"])
    return {
        "clips": count,
        "rounds": rounds,
        "fredica_s": fredica_s,
        "ffmpeg_s": ffmpeg_s,
        "xargs_s": xargs_s,
        "ratio": statistics.median(ratios),
        "ratios": ratios,
        "ffmpeg_ratio": statistics.median(each_ffmpeg),
        "ffmpeg_ratios": each_ffmpeg,
        "per_clip_overhead_ms": (ffmpeg_s - xargs_s) / count * 1000,
        "busy": {lane: statistics.median(r["busy"] for r in rs) for lane, rs in rows.items()},
        "problems": problems,
        "load_average": os.getloadavg(),
    }


def short_report(out: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]], list[str]]:
    rows = [
        (
            "fredica process DIR --template extract_audio",
            f"{out['fredica_s']:.2f} s",
            "rounds " + ", ".join(f"{r:.2f}" for r in out["ratios"]) + " (x xargs)",
            "",
        ),
        (
            "the same, an ffmpeg chosen in the settings",
            f"{out['ffmpeg_s']:.2f} s",
            "rounds " + ", ".join(f"{r:.2f}" for r in out["ffmpeg_ratios"]) + " (x xargs)",
            "",
        ),
        ("xargs -P cores, the same ffmpeg commands", f"{out['xargs_s']:.2f} s", "", ""),
        (
            "Fredica / xargs",
            f"{out['ratio']:.2f}",
            f"busy {out['busy']['process']:.0%} vs {out['busy']['xargs']:.0%}",
            f"<= {TARGET:.2f}",
        ),
        (
            "Fredica, ffmpeg for every file / xargs",
            f"{out['ffmpeg_ratio']:.2f}",
            f"{out['per_clip_overhead_ms']:.1f} ms of Fredica's own per clip; busy "
            f"{out['busy']['ffmpeg']:.0%}",
            "",
        ),
    ]
    checks = [
        {
            "name": f"short: {out['clips']} clips of 1 s, Fredica / xargs <= {TARGET:.2f}",
            "ok": out["ratio"] <= TARGET,
            "detail": f"{out['ratio']:.2f}",
        },
        {
            "name": "short: every clip made its WAV in every lane, the same samples in each",
            "ok": not out["problems"],
            "detail": "; ".join(out["problems"]) or "yes",
        },
    ]
    return rows, checks, []
