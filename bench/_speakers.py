"""The speakers lane of ``bench/speech.py --speakers``: DIARIZE's accuracy and its cost next to
the transcription it labels.

1. **DER** (diarization error rate) of the DIARIZE job on a real recording with a published
   reference: ``pyannote/audio/sample/sample.wav`` and ``sample.rttm`` (30 s, two speakers,
   one short overlap), shipped in the pyannote.audio wheel (MIT), fetched from PyPI when the
   bench runs (pinned by its SHA-256; kept in ``--cache``), nothing of it committed. Also on a
   dialogue of two eSpeak NG voices whose turns are known (``tests/support/voices.py``).
   Scored every 10 ms, a collar of 0.25 s on each side of every reference boundary not
   scored, overlapping speech scored (a moment of two reference speakers that the job gives
   one is half missed), speakers mapped one to one to maximise the time they share:
   ``(missed + false alarm + confusion) / reference speech``. Target: at most 15 %.
2. **Time** of the DIARIZE job against the default transcription (TRANSCRIBE, tiny.en on the
   CPU, the settings' defaults otherwise) of the same file, each job function run in a fresh
   child process with its modules imported first (as the endpoints server's warm child has
   them), timed from the call to its return: reading the audio, loading the model, the work.
   Pairs interleaved, their order shuffled; the ratio is the median of the pairs' ratios.
   Target: at most 1.0.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import httpx
import numpy as np

DER_TARGET = 0.15
TIME_TARGET = 1.0
COLLAR = 0.25
STEP = 0.01

#: pyannote.audio 4.0.7's wheel (MIT): its sample recording and the reference turns.
WHEEL_URL = (
    "https://files.pythonhosted.org/packages/66/a3/"
    "1d03ed6c7669f7b94ce4a7ebe3b21f5c3b6331999a5680837e371e0a0537/"
    "pyannote_audio-4.0.7-py3-none-any.whl"
)
WHEEL_SHA256 = "852ea15c4d85bc34773e618267603ffca6a521669a74d33742692cc67fc700d6"
SAMPLE = "pyannote/audio/sample/sample.wav"
REFERENCE = "pyannote/audio/sample/sample.rttm"

Turns = list[tuple[float, float, str]]


# --- the reference ----------------------------------------------------------------------------


def fetch_sample(cache: Path) -> tuple[Path, Path]:
    """The sample's WAV and RTTM, from the wheel in ``cache`` (fetched and checked first)."""
    cache.mkdir(parents=True, exist_ok=True)
    wheel = cache / WHEEL_URL.rsplit("/", 1)[1]
    if not wheel.exists() or hashlib.sha256(wheel.read_bytes()).hexdigest() != WHEEL_SHA256:
        with httpx.Client(timeout=60, follow_redirects=True) as client:
            response = client.get(WHEEL_URL)
            response.raise_for_status()
        if hashlib.sha256(response.content).hexdigest() != WHEEL_SHA256:
            raise SystemExit(f"{WHEEL_URL}: not the SHA-256 expected")
        partial = wheel.with_suffix(".part")
        partial.write_bytes(response.content)
        partial.replace(wheel)
    out = []
    with zipfile.ZipFile(wheel) as archive:
        for member in (SAMPLE, REFERENCE):
            target = cache / Path(member).name
            target.write_bytes(archive.read(member))
            out.append(target)
    return out[0], out[1]


def read_rttm(path: Path) -> Turns:
    turns = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "SPEAKER":
            start, length = float(fields[3]), float(fields[4])
            turns.append((start, start + length, fields[7]))
    return turns


# --- scoring ----------------------------------------------------------------------------------


def der(reference: Turns, hypothesis: Turns, collar: float = COLLAR) -> dict[str, float]:
    """The diarization error rate of ``hypothesis`` against ``reference`` and its parts (as
    shares of the scored reference speech)."""
    end = max(e for _, e, _ in [*reference, *hypothesis])
    n = math.ceil(end / STEP) + 1

    def grid(turns: Turns) -> tuple[np.ndarray, list[str]]:
        names = sorted({s for _, _, s in turns})
        active = np.zeros((len(names), n), bool)
        for start, stop, who in turns:
            active[names.index(who), round(start / STEP) : round(stop / STEP)] = True
        return active, names

    ref, _ = grid(reference)
    hyp, _ = grid(hypothesis)
    scored = np.ones(n, bool)
    for start, stop, _ in reference:
        for t in (start, stop):
            scored[max(0, round((t - collar) / STEP)) : round((t + collar) / STEP)] = False
    ref, hyp = ref[:, scored], hyp[:, scored]
    shared = (ref[:, None, :] & hyp[None, :, :]).sum(axis=2)  # [ref, hyp]
    best: tuple[int, ...] = ()
    best_shared = -1
    rows, cols = shared.shape
    for perm in itertools.permutations(range(max(rows, cols)), rows):
        total = sum(int(shared[i, j]) for i, j in enumerate(perm) if j < cols)
        if total > best_shared:
            best, best_shared = perm, total
    correct = np.zeros(ref.shape[1], int)
    for i, j in enumerate(best):
        if j < cols:
            correct += ref[i] & hyp[j]
    n_ref, n_hyp = ref.sum(axis=0), hyp.sum(axis=0)
    speech = int(n_ref.sum())
    missed = int(np.maximum(n_ref - n_hyp, 0).sum())
    false_alarm = int(np.maximum(n_hyp - n_ref, 0).sum())
    confusion = int((np.minimum(n_ref, n_hyp) - correct).sum())
    return {
        "der": (missed + false_alarm + confusion) / speech,
        "missed": missed / speech,
        "false_alarm": false_alarm / speech,
        "confusion": confusion / speech,
        "speech_s": speech * STEP,
    }


# --- the jobs, each in a child ----------------------------------------------------------------

CHILD = """
import json, sys, threading, time
from multiprocessing import Pipe
sys.path.insert(0, {root!r})
from python_endpoints.serving.child import ChildContext, StatusChannel
from python_endpoints.jobs import diarize, transcribe, voice  # imported before the clock
from tests.support.clips import job_params
job, params = sys.argv[1], json.loads(sys.argv[2])
target = {{"DIARIZE": diarize.diarize_job, "TRANSCRIBE": transcribe.transcribe_job}}[job]
ours, theirs = Pipe(duplex=False)
threading.Thread(target=lambda: [ours.recv() for _ in iter(int, 1)], daemon=True).start()
ctx = ChildContext(StatusChannel(theirs), threading.Event(), threading.Event())
ctx.resume_event.set()
checked = job_params(target, params)
t0 = time.perf_counter()
result = target(checked, ctx)
print(json.dumps({{"seconds": time.perf_counter() - t0, "result": result}}))
"""


def run_child(job: str, params: dict[str, Any]) -> dict[str, Any]:
    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=root), job, json.dumps(params)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"},
    )
    if done.returncode != 0:
        raise SystemExit(f"{job} child failed: {done.stderr.strip()[-600:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def measure(audio: Path, work: Path, rounds: int, rng: random.Random) -> dict[str, Any]:
    """DIARIZE and TRANSCRIBE of ``audio``, ``rounds`` interleaved pairs: the turns of the
    last DIARIZE, each job's seconds and the pairs' ratios."""
    speakers_file = work / f"{audio.stem}.speakers.json"
    jobs = {
        "DIARIZE": {"input": str(audio), "output": str(speakers_file)},
        "TRANSCRIBE": {
            "input": str(audio),
            "output": str(work / f"{audio.stem}.transcript.json"),
            "device": "cpu",
        },
    }
    seconds: dict[str, list[float]] = {"DIARIZE": [], "TRANSCRIBE": []}
    for _ in range(rounds):
        order = list(jobs)
        rng.shuffle(order)
        for job in order:
            seconds[job].append(run_child(job, jobs[job])["seconds"])
    document = json.loads(speakers_file.read_text())
    found = [(t["start"], t["end"], str(t["speaker"])) for t in document["turns"]]
    ratios = [d / t for d, t in zip(seconds["DIARIZE"], seconds["TRANSCRIBE"], strict=True)]
    return {
        "turns": found,
        "speakers": document["speakers"],
        "duration_s": document["duration"],
        "diarize_s": seconds["DIARIZE"],
        "transcribe_s": seconds["TRANSCRIBE"],
        "ratio": statistics.median(ratios),
    }


def run(work: Path, cache: Path, rounds: int, dialogue_turns: int, seed: int) -> dict[str, Any]:
    from tests.support.voices import SpeechCache

    rng = random.Random(seed)
    out: dict[str, Any] = {}
    print("# fetching the reference recording", file=sys.stderr)
    wav, rttm = fetch_sample(cache)
    reference = read_rttm(rttm)
    print("# the pyannote.audio sample", file=sys.stderr)
    sample = measure(wav, work, rounds, rng)
    sample["score"] = der(reference, sample["turns"])
    sample["reference_speakers"] = len({s for _, _, s in reference})
    out["sample"] = sample
    print(f"# an eSpeak NG dialogue of {dialogue_turns} turns", file=sys.stderr)
    path, known = SpeechCache(work).dialogue(turns=dialogue_turns)
    dialogue = measure(path, work, rounds, rng)
    dialogue["score"] = der([(a, b, str(s)) for a, b, s in known], dialogue["turns"])
    dialogue["reference_speakers"] = 2
    out["dialogue"] = dialogue
    out["rounds"] = rounds
    return out


def rows(out: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    table = []
    for name, label in (("sample", "pyannote.audio sample.wav"), ("dialogue", "eSpeak dialogue")):
        lane = out[name]
        score = lane["score"]
        table.append(
            (
                f"DER, {label}",
                f"{100 * score['der']:.1f} %",
                f"missed {100 * score['missed']:.1f} %, false alarm "
                f"{100 * score['false_alarm']:.1f} %, confusion {100 * score['confusion']:.1f} %"
                f" of {score['speech_s']:.1f} s scored; {lane['speakers']} speakers found of "
                f"{lane['reference_speakers']} ({lane['duration_s']:.1f} s)",
                f"<= {100 * DER_TARGET:.0f} %",
            )
        )
        table.append(
            (
                f"time / tiny.en, {label}",
                f"{lane['ratio']:.3f}",
                f"DIARIZE {statistics.median(lane['diarize_s']):.2f} s, TRANSCRIBE "
                f"{statistics.median(lane['transcribe_s']):.2f} s (medians of "
                f"{out['rounds']})",
                f"<= {TIME_TARGET:.1f}",
            )
        )
    return table


def checks(out: dict[str, Any]) -> list[dict[str, Any]]:
    sample, dialogue = out["sample"], out["dialogue"]
    return [
        {
            "name": "DER on a real recording with a published reference",
            "ok": sample["score"]["der"] <= DER_TARGET,
            "detail": f"{100 * sample['score']['der']:.1f} % (target <= 15 %)",
        },
        {
            "name": "diarization time against the default transcription",
            "ok": max(sample["ratio"], dialogue["ratio"]) <= TIME_TARGET,
            "detail": f"{sample['ratio']:.3f} (30 s sample), {dialogue['ratio']:.3f} (dialogue)",
        },
    ]


def report(out: dict[str, Any], elapsed: float, table: Any) -> list[dict[str, Any]]:
    """Print the lane's table and checks; the checks."""
    print(
        "Speakers benchmark (the DIARIZE job and the TRANSCRIBE job — tiny.en, CPU, the "
        "settings' defaults — each in a fresh child process, modules imported before the "
        f"clock; {out['rounds']} interleaved pair(s); DER every 10 ms, collar +-0.25 s, "
        "overlap scored)"
    )
    print()
    print(table(rows(out)))
    print()
    print(f"time: total {elapsed:.0f} s")
    print()
    found = checks(out)
    for c in found:
        print(f"{'PASS' if c['ok'] else 'FAIL'}  {c['name']}: {c['detail']}")
    return found


def main(args: Any, table: Any) -> int:
    import shutil
    import tempfile

    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="fredica-speakers-bench-", dir=args.tmpdir))
    cache = Path(args.cache) if args.cache else work / "reference"
    try:
        out = run(work, cache, args.rounds, args.dialogue_turns, args.seed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    found = report(out, time.perf_counter() - started, table)
    if args.json:
        for lane in ("sample", "dialogue"):
            out[lane].pop("turns")
        print(json.dumps({**out, "checks": found}, indent=2))
    return 0
