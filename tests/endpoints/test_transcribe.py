"""TRANSCRIBE for real: the embedded tiny.en model, speech synthesised by eSpeak NG, the job in a
child process behind a real endpoints server on 127.0.0.1:0. After every server test no job
process is left behind.

tiny.en runs at about 5x real time on two cores: the long clip (60 s) is kept for the few
tests marked slow."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from pydantic import Field
from websockets.asyncio.client import ClientConnection

from python_endpoints.jobs import outputs, speech, textio, transcribe
from python_endpoints.jobs.sample import SPEECH, make_sample
from python_endpoints.jobs.transcribe import bounded_resume
from python_endpoints.params import TranscribeParams
from python_endpoints.protocol import (
    MAX_FRAME_BYTES,
    Cancel,
    InitData,
    InitParamAndRun,
    Pause,
    Resume,
    Status,
    dump,
)
from python_endpoints.serving.child import JobFailed
from python_endpoints.serving.registry import ENDPOINTS, TranscribeEndpoint
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, running_child, start
from tests.support.process_table import assert_no_job_process_left
from tests.support.voices import SENTENCES, SpeechCache, duration
from tests.support.whisper_faults import faulty_transcribe_job

SHORT = SENTENCES[:3]  # about 13 s
FAULTY = "transcribe_faulty"
MEDIUM = SENTENCES[:6]  # about 26 s
SHORT_WORDS = ["quick", "brown", "fox", "lazy", "dog", "speech", "recognition", "spoken"]
SHORT_WORDS += ["words", "written", "text", "small", "library", "recording", "safe", "disk"]
MEDIUM_WORDS = [*SHORT_WORDS, "orchestra", "music", "mountains", "snow", "garden", "weekend"]
LONG_WORDS = [*MEDIUM_WORDS]
LONG_WORDS += ["train", "paris", "platform", "coffee", "breakfast", "scientists", "ocean"]
LONG_WORDS += ["children", "football", "museum", "morning", "wind", "trees", "engineers"]
LONG_WORDS += ["bridge", "trucks", "listening"]
#: Greedy decoding: twice as fast as the default beam of 5, and as good on this speech (the
#: default is what the short clip's test runs).
FAST = {"beam_size": 1}
RESULT_KEYS = {
    "outputs",
    "language",
    "language_probability",
    "duration",
    "segments",
    "speech",
    "model",
    "device",
    "compute_type",
    "model_loads",
    "resumed_from",
    "windows",
    "unheard",
}


class FaultyParams(TranscribeParams):
    """TRANSCRIBE's params and the decoder's faults (:mod:`tests.support.whisper_faults`)."""

    #: ``(start, end, times)``: the first ``times`` decodings that reach ``start`` to ``end``
    #: seconds of the media do not hear what is said there.
    skip: tuple[float, float, int] | None = None
    #: The n-th window decoded runs out of GPU memory after its first segment.
    out_of_memory_in: int | None = Field(default=None, ge=1)


class FaultyTranscribeEndpoint(TranscribeEndpoint):
    """The real job with its decoder's faults on cue: offered by the test server only."""

    name = "transcribe_faulty"
    params_model = FaultyParams
    target = staticmethod(faulty_transcribe_job)


@pytest.fixture(scope="session")
def voices(tmp_path_factory: pytest.TempPathFactory) -> SpeechCache:
    return SpeechCache(tmp_path_factory.mktemp("speech"))


@pytest.fixture
async def server() -> AsyncIterator[tuple[EndpointServer, int]]:
    srv = EndpointServer(
        {**ENDPOINTS, FaultyTranscribeEndpoint.name: FaultyTranscribeEndpoint}, TOKEN
    )
    port = await srv.start()
    yield srv, port
    await srv.close()
    await assert_no_job_process_left()


def params(input: Path, output: Path, **kw: Any) -> dict[str, Any]:
    return {"input": str(input), "output": str(output), **kw}


async def run(
    port: int, within: float = 120, endpoint: str = "transcribe", **kw: Any
) -> list[dict[str, Any]]:
    """Run a transcription to its end; every frame."""
    async with open_task(port, name=endpoint) as ws:
        await start(ws, **kw)
        return await frames_until(ws, "result", "error", "cancelled", within=within)


async def until(
    ws: ClientConnection, seen: list[dict[str, Any]], done: Any, within: float = 120
) -> None:
    """Read frames into ``seen`` until ``done(frame)``."""
    async with asyncio.timeout(within):
        while True:
            frame = json.loads(await ws.recv())
            seen.append(frame)
            assert frame["type"] not in ("result", "error", "cancelled"), frame
            if done(frame):
                return


class Engine:
    """The checkpoint as the engine keeps it: the last progress frame's ``extras.checkpoint``,
    as it came (its format is the job's own)."""

    def __init__(self) -> None:
        self.latest: dict[str, Any] = {}

    def feed(self, frames: list[dict[str, Any]]) -> None:
        for frame in frames:
            checkpoint = checkpoint_in(frame)
            if checkpoint is not None:
                self.latest = checkpoint

    def checkpoint(self) -> dict[str, Any]:
        return self.latest

    @property
    def unheard(self) -> list[list[float]]:
        return list(self.latest.get("unheard", []))


def checkpoint_in(frame: dict[str, Any]) -> dict[str, Any] | None:
    if frame["type"] != "progress":
        return None
    checkpoint: dict[str, Any] | None = (frame.get("extras") or {}).get("checkpoint")
    return checkpoint


def segments_of(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f["data"] for f in frames if f["type"] == "segment"]


def words_of(segments: list[dict[str, Any]]) -> list[str]:
    return re.findall(r"[a-z]+", " ".join(s["text"] for s in segments).lower())


def recognised(segments: list[dict[str, Any]], keywords: list[str]) -> float:
    heard = set(words_of(segments))
    return sum(k in heard for k in keywords) / len(keywords)


def repeated_runs(words: list[str], n: int = 4) -> list[tuple[str, ...]]:
    """Runs of ``n`` words that occur twice: a segment merged twice shows as one."""
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return sorted({g for g in grams if grams.count(g) > 1})


def assert_well_formed(frames: list[dict[str, Any]], segments: list[dict[str, Any]]) -> None:
    """Ordered, never overlapping; progress and position only grow; each segment is sent
    before any position past its start (so a checkpoint never claims more than it holds)."""
    for a, b in itertools.pairwise(segments):
        assert a["end"] <= b["start"], f"{a} overlaps {b}"
    for s in segments:
        keys = {"start", "end", "text", "avg_logprob", "no_speech_prob", "chunk", "words"}
        assert set(s) == keys, s  # the decoder's words spell its text: kept, timed
        assert s["start"] <= s["end"] and s["text"] == s["text"].strip() != ""
        [read] = textio.parse_transcript({"version": 1, "segments": [s]}).segments
        assert "".join(w.text for w in read.words) == s["text"]
        assert read.words[0].start == s["start"] and read.words[-1].end <= s["end"]
    position = 0.0
    percent = 0.0
    streamed: list[dict[str, Any]] = []
    for frame in frames:
        if frame["type"] == "progress":
            assert frame["percent"] >= percent and frame["pausable"] == "always"
            percent = frame["percent"]
            new = frame["extras"].get("position", position)
            assert new >= position
            position = new
            # A checkpoint is one snapshot: every segment streamed so far (after those it
            # resumed with), and the position reached with them, never further.
            checkpoint = checkpoint_in(frame)
            if checkpoint is not None:
                assert checkpoint["position"] == position
                held = checkpoint["segments"]
                assert held[len(held) - len(streamed) :] == streamed
        elif frame["type"] == "segment":
            assert frame["data"]["start"] >= position - 1e-9, (frame, position)
            streamed.append(frame["data"])


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def transcript(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    textio.parse_transcript(data)  # what EXPORT_SUBTITLES and ANALYZE read
    return data


# --- one short clip -----------------------------------------------------------------------------


async def test_a_short_clip_is_transcribed_streamed_and_written(
    server: tuple[EndpointServer, int], voices: SpeechCache, tmp_path: Path
) -> None:
    clip = voices.speech(SHORT)
    output = tmp_path / "out" / "talk.transcript.json"
    models = tmp_path / "models"  # no tiny.en in it: the embedded one
    frames = await run(server[1], **params(clip, output, models_dir=str(models)))
    assert frames[-1]["type"] == "result", frames[-1]
    result = frames[-1]["result"]
    assert set(result) == RESULT_KEYS
    assert result["outputs"] == [str(output)]
    assert (result["language"], result["language_probability"]) == ("en", 1.0)
    assert result["duration"] == pytest.approx(duration(clip), abs=0.01)
    assert (result["model"], result["device"], result["compute_type"]) == (
        "tiny.en",
        "cpu",
        "float32",
    )
    assert (result["model_loads"], result["resumed_from"], result["windows"]) == (1, 0.0, 1)
    streamed = segments_of(frames)
    assert result["segments"] == len(streamed) > 0 and result["speech"] is True
    assert recognised(streamed, SHORT_WORDS) >= 0.6, words_of(streamed)
    assert_well_formed(frames, streamed)
    progress = [f for f in frames if f["type"] == "progress"]
    assert progress[-1]["percent"] == 100.0
    assert progress[-1]["extras"]["position"] == result["duration"]
    assert progress[-1]["extras"]["languages"]["en"] > 5
    assert any(
        re.fullmatch(r"transcribing 0:\d\d of 0:1\d( \(\d+\.\dx\))?", f["status_text"] or "")
        for f in progress
    )
    assert transcript(output) == {
        "version": 1,
        "language": "en",
        "duration": result["duration"],
        "model": "tiny.en",
        "segments": streamed,
        "unheard": [],
    }
    assert names(output.parent) == [output.name]  # no temporary
    # The compute type that loaded is remembered for the next job.
    assert json.loads((models / transcribe.COMPUTE_TYPES_FILE).read_text()) == {"cpu": "float32"}


async def test_silence_gives_an_empty_transcript(
    server: tuple[EndpointServer, int], voices: SpeechCache, tmp_path: Path
) -> None:
    output = tmp_path / "silence.transcript.json"
    frames = await run(server[1], **params(voices.silence(8.0), output))
    result = frames[-1]["result"]
    assert (result["speech"], result["segments"], result["duration"]) == (False, 0, 8.0)
    assert segments_of(frames) == []
    assert transcript(output)["segments"] == []


async def test_what_cannot_be_transcribed_says_why(
    server: tuple[EndpointServer, int], voices: SpeechCache, tmp_path: Path
) -> None:
    port = server[1]
    out = tmp_path / "t.json"
    noaudio = make_sample(tmp_path / "noaudio.mkv", 2.0, kind="noaudio")
    error = (await run(port, **params(noaudio, out)))[-1]
    assert error["error_type"] == "NO_AUDIO" and "no audio stream" in error["error"]
    text = make_sample(tmp_path / "notes.txt", kind="text")
    assert (await run(port, **params(text, out)))[-1]["error_type"] == "NOT_MEDIA"
    error = (await run(port, **params(tmp_path / "gone.wav", out)))[-1]
    assert error["error_type"] == "INPUT_MISSING"
    clip = voices.silence(1.0)
    models = tmp_path / "models"
    error = (await run(port, **params(clip, out, model="small", models_dir=str(models))))[-1]
    assert error["error_type"] == "MODEL_MISSING"
    assert error["error"].startswith(f"model small is not installed in {models}; download it")
    assert "tiny.en, which is built in" in error["error"]
    error = (await run(port, **params(clip, out, model=str(tmp_path))))[-1]
    assert error["error_type"] == "MODEL_MISSING" and "no model.bin" in error["error"]
    error = (await run(port, **params(clip, out, language="fr")))[-1]
    assert error["error_type"] == "PAYLOAD_ERROR" and "knows English only" in error["error"]
    error = (await run(port, **params(clip, out, chunk_seconds=10, overlap_seconds=5)))[-1]
    assert error["error_type"] == "PAYLOAD_ERROR" and "overlap_seconds" in error["error"]
    assert not out.exists() and outputs.leftover_parts("TRANSCRIBE", {"output": str(out)}) == []


# --- windows, resume, pause, cancel -------------------------------------------------------------


@pytest.mark.slow
async def test_a_long_clip_in_small_windows_is_merged_without_gap_or_duplicate(
    server: tuple[EndpointServer, int], voices: SpeechCache, tmp_path: Path
) -> None:
    spoken = words_of([{"text": s} for s in SENTENCES])
    assert repeated_runs(spoken) == []  # so a repeat in the transcript is a duplicate
    output = tmp_path / "long.transcript.json"
    frames = await run(
        server[1],
        **params(voices.speech(SENTENCES), output, chunk_seconds=20, overlap_seconds=4, **FAST),
    )
    result = frames[-1]["result"]
    streamed = segments_of(frames)
    assert (result["windows"], result["model_loads"]) == (4, 1)
    assert {s["chunk"] for s in streamed} == {0, 1, 2, 3}
    assert_well_formed(frames, streamed)
    assert repeated_runs(words_of(streamed)) == []
    assert recognised(streamed, LONG_WORDS) >= 0.6, words_of(streamed)
    assert transcript(output)["segments"] == streamed


@pytest.mark.slow
async def test_a_cancelled_transcription_resumes_from_its_checkpoint(
    server: tuple[EndpointServer, int], voices: SpeechCache, tmp_path: Path
) -> None:
    srv, port = server
    clip = voices.speech(MEDIUM)
    output = tmp_path / "medium.transcript.json"
    stale = outputs.temp_path(output, "deadbeef")
    stale.write_text("what a crashed attempt left")
    job = params(clip, output, chunk_seconds=10, overlap_seconds=2, **FAST)
    engine = Engine()
    first: list[dict[str, Any]] = []
    async with open_task(port, name="transcribe") as ws:
        await start(ws, **job)
        # Past the first window, a few segments in.
        await until(
            ws,
            first,
            lambda f: (
                len((checkpoint_in(f) or {}).get("segments", [])) >= 2
                and (checkpoint_in(f) or {}).get("position", 0) > 10
            ),
        )
        child = running_child(srv)
        await ws.send(dump(Cancel()))
        rest = await frames_until(ws, "cancelled", "error", "result", within=30)
    assert rest[-1] == {"type": "cancelled"}
    engine.feed(first + rest)
    psutil.wait_procs([child], timeout=5)
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert names(tmp_path) == []  # no transcript, no temporary
    checkpoint = engine.checkpoint()
    resume_at = max(checkpoint["position"], checkpoint["segments"][-1]["end"])
    assert 10 < resume_at < duration(clip) - 5

    frames = await run(port, **job, resume=checkpoint)
    result = frames[-1]["result"]
    assert result["resumed_from"] == resume_at
    lead_in = checkpoint["segments"][-1]["start"]
    planned = speech.plan_from(result["duration"], 10, 2, resume_at, lead_in=lead_in)
    assert result["windows"] == len(planned)
    positions = [f["extras"]["position"] for f in frames if "position" in f.get("extras", {})]
    assert positions[0] == resume_at  # from its first report on
    second = segments_of(frames)
    assert second and resume_at <= second[0]["start"] < resume_at + 5  # speech goes on at once
    assert min(s["chunk"] for s in second) > max(s["chunk"] for s in checkpoint["segments"])
    merged = transcript(output)["segments"]
    assert merged == checkpoint["segments"] + second
    assert_well_formed(frames, second)
    assert_well_formed([], merged)
    assert repeated_runs(words_of(merged)) == []  # no duplicate at the seam
    assert recognised(merged, MEDIUM_WORDS) >= 0.6, words_of(merged)


@pytest.mark.slow
async def test_pause_holds_the_job_between_segments_and_resume_completes(
    server: tuple[EndpointServer, int], voices: SpeechCache, tmp_path: Path
) -> None:
    # With its model unloaded for the pause (what a GPU does; asked for here on the CPU), the
    # job stops between segments and holds nothing; on resume the model is loaded again.
    output = tmp_path / "medium.transcript.json"
    seen: list[dict[str, Any]] = []
    job = params(voices.speech(MEDIUM), output, chunk_seconds=10, overlap_seconds=2, **FAST)
    async with open_task(server[1], name="transcribe") as ws:
        await start(ws, **job, unload_on_pause=True)
        await until(ws, seen, lambda f: f["type"] == "segment")
        await ws.send(dump(Pause()))
        await until(ws, seen, lambda f: f["type"] == "paused", within=30)
        assert seen[-1] == {"type": "paused", "held": False}  # nothing held: the slot is lent
        assert "paused; the model tiny.en is unloaded" in [f.get("status_text") for f in seen]
        assert running_child(server[0]).status() != psutil.STATUS_STOPPED  # it waits
        quiet: list[str] = []
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.5):
                quiet.append(await ws.recv())
        assert quiet == []  # nothing moves while paused
        await ws.send(dump(Resume()))
        seen += await frames_until(ws, "result", "error", within=120)
    assert seen[-1]["type"] == "result", seen[-1]
    result = seen[-1]["result"]
    assert "loading the model tiny.en again" in [f.get("status_text") for f in seen]
    assert result["model_loads"] == 2
    streamed = segments_of(seen)
    assert_well_formed(seen, streamed)
    assert repeated_runs(words_of(streamed)) == []  # the window decoded again: no duplicate
    assert recognised(streamed, MEDIUM_WORDS) >= 0.6, words_of(streamed)
    assert transcript(output)["segments"] == streamed


async def test_a_cpu_transcription_is_suspended_at_once_and_goes_on_where_it_stopped(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    # The shipped speech is one window: its decode is one long call into CTranslate2, which
    # a pause between segments would wait out. On the CPU the job is suspended instead.
    srv, port = server
    unpaused = await run(port, **params(SPEECH, tmp_path / "unpaused.json", **FAST))
    assert unpaused[-1]["type"] == "result", unpaused[-1]
    output = tmp_path / "speech.transcript.json"
    seen: list[dict[str, Any]] = []
    async with open_task(port, name="transcribe") as ws:
        await start(ws, **params(SPEECH, output, **FAST))
        await until(ws, seen, lambda f: f.get("status_text") == "loading the model tiny.en")
        asked = time.monotonic()
        await ws.send(dump(Pause()))
        await until(ws, seen, lambda f: f["type"] == "paused", within=10)
        assert time.monotonic() - asked < 3
        # Stopped where it was, before any segment: it keeps its memory, so its slot.
        assert seen[-1] == {"type": "paused", "held": True}
        assert segments_of(seen) == []
        child = running_child(srv)
        assert child.status() == psutil.STATUS_STOPPED
        cpu = child.cpu_times()
        quiet: list[str] = []
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.5):
                quiet.append(await ws.recv())
        assert quiet == []  # no segment, no progress while paused
        assert child.cpu_times() == cpu  # and no work done
        await ws.send(dump(Status()))
        assert (await frames_until(ws, "status"))[-1]["state"] == "paused"
        await ws.send(dump(Resume()))
        seen += await frames_until(ws, "result", "error", within=120)
    assert seen[-1]["type"] == "result", seen[-1]
    assert seen[-1]["result"]["model_loads"] == 1  # nothing unloaded, nothing decoded twice
    streamed = segments_of(seen)
    assert_well_formed(seen, streamed)
    assert words_of(streamed) == words_of(segments_of(unpaused))
    assert transcript(output)["segments"] == streamed


# --- a stretch the decoder skips (a named fake: Whisper does it now and then, not on cue) --------


@pytest.mark.parametrize("times", [1, 2])
async def test_a_skipped_stretch_is_decoded_again_or_reported_unheard(
    server: tuple[EndpointServer, int],
    voices: SpeechCache,
    tmp_path: Path,
    times: int,
) -> None:
    # The second window (8 s to 18 s) loses what it hears from 12 s to 16 s: once, and the
    # decoding again from where the stretch starts hears it; twice, and it is reported.
    output = tmp_path / "medium.transcript.json"
    job = params(voices.speech(MEDIUM), output, chunk_seconds=10, overlap_seconds=2, **FAST)
    frames = await run(server[1], endpoint=FAULTY, skip=(12, 16, times), **job)
    assert frames[-1]["type"] == "result", frames[-1]
    result = frames[-1]["result"]
    streamed = segments_of(frames)
    assert_well_formed(frames, streamed)
    assert repeated_runs(words_of(streamed)) == []
    assert transcript(output)["segments"] == streamed
    in_stretch = [s for s in streamed if 12 <= (s["start"] + s["end"]) / 2 < 16]
    texts = [f.get("status_text") or "" for f in frames]
    if times == 1:
        assert result["unheard"] == [] and in_stretch, streamed
        assert recognised(streamed, MEDIUM_WORDS) >= 0.6, words_of(streamed)
    else:
        assert in_stretch == [], in_stretch
        ((start, end),) = result["unheard"]
        # From the last word heard before it to the next one heard after it.
        assert start < 16 and end > 12 and end - start >= speech.MISSED_SPEECH, (start, end)
        assert any(t.endswith("could not be made out") for t in texts), texts
        checkpoint = Engine()
        checkpoint.feed(frames)
        assert checkpoint.unheard == [[start, end]]  # kept across a resume
        assert transcript(output)["unheard"] == [[start, end]]  # and in the transcript file


async def test_a_window_of_speech_with_no_word_made_out_twice_fails_clearly(
    server: tuple[EndpointServer, int],
    voices: SpeechCache,
    tmp_path: Path,
) -> None:
    output = tmp_path / "short.transcript.json"
    job = params(voices.speech(SHORT), output, **FAST)
    # Nothing heard, twice.
    frames = await run(server[1], endpoint=FAULTY, skip=(0, 999, 2), **job)
    error = frames[-1]
    assert error["type"] == "error" and error["error_type"] == "VERIFY_FAILED", error
    assert "no words could be made out between 0:00 and 0:1" in error["error"], error
    assert segments_of(frames) == [] and names(tmp_path) == []  # no transcript, no temporary


# --- GPU out of memory (a named fake: there is no GPU here) --------------------------------------


async def test_out_of_memory_asks_for_a_pause_then_decodes_the_window_again(
    server: tuple[EndpointServer, int],
    voices: SpeechCache,
    tmp_path: Path,
) -> None:
    output = tmp_path / "short.transcript.json"
    seen: list[dict[str, Any]] = []
    async with open_task(server[1], name=FAULTY) as ws:
        job = params(voices.speech(SHORT), output, chunk_seconds=10, overlap_seconds=2, **FAST)
        await start(ws, out_of_memory_in=2, **job)  # the second window
        await until(ws, seen, lambda f: f["type"] == "pause_request")
        assert seen[-1]["reason"] == transcribe.OOM_PAUSE_REASON
        await ws.send(dump(Resume()))
        seen += await frames_until(ws, "result", "error", within=120)
    result = seen[-1]["result"]
    assert (result["model_loads"], result["compute_type"]) == (1, "float32")
    streamed = segments_of(seen)
    assert_well_formed(seen, streamed)
    assert repeated_runs(words_of(streamed)) == []
    assert recognised(streamed, SHORT_WORDS) >= 0.6, words_of(streamed)
    assert transcript(output)["segments"] == streamed


async def test_out_of_memory_falls_back_to_a_smaller_compute_type_when_allowed(
    server: tuple[EndpointServer, int],
    voices: SpeechCache,
    tmp_path: Path,
) -> None:
    output = tmp_path / "short.transcript.json"
    job = params(
        voices.speech(SHORT),
        output,
        chunk_seconds=10,
        overlap_seconds=2,
        allow_fallback=True,
        language="en-US",  # fixed: no vote (and Whisper's code is "en")
        **FAST,
    )
    frames = await run(server[1], endpoint=FAULTY, out_of_memory_in=1, **job)
    result = frames[-1]["result"]
    assert (result["model_loads"], result["device"], result["compute_type"]) == (2, "cpu", "int8")
    assert (result["language"], result["language_probability"]) == ("en", 1.0)
    assert not any(f["type"] == "pause_request" for f in frames)
    assert any(
        "out of memory: loading the model as int8 on cpu" == f.get("status_text") for f in frames
    )
    streamed = segments_of(frames)
    assert_well_formed(frames, streamed)
    assert repeated_runs(words_of(streamed)) == []
    assert recognised(streamed, SHORT_WORDS) >= 0.6, words_of(streamed)


# --- the job's parts, in this process ------------------------------------------------------------


def test_the_resume_of_a_long_transcription_fits_in_one_frame() -> None:
    # Four hours of speech as TRANSCRIBE streams it: ten timed words every 4 s.
    segments = []
    for i in range(3600):
        at = i * 4.0
        timed = [(at + k * 0.35, at + k * 0.35 + 0.3, f" word{k}") for k in range(10)]
        text = "".join(w for _, _, w in timed)
        segments.append(speech.segment_dict(at, at + 3.5, text, -0.31, 0.01, i // 75, timed))
    checkpoint = {"segments": segments, "position": 14400.0, "languages": {"en": 12600.0}}
    assert len(json.dumps(checkpoint)) > MAX_FRAME_BYTES  # with every word, it would not
    sent = bounded_resume(checkpoint)
    init = InitParamAndRun(data=InitData(params={"input": "/a.wav", "resume": sent}))
    assert len(dump(init)) < MAX_FRAME_BYTES
    # The latest segments keep their words, the earliest go without; nothing else changes.
    timed_ = [s for s in sent["segments"] if "words" in s]
    assert len(timed_) > 500 and timed_ == segments[-len(timed_) :]
    bare = [{k: v for k, v in s.items() if k != "words"} for s in segments]
    assert [{k: v for k, v in s.items() if k != "words"} for s in sent["segments"]] == bare
    assert {**sent, "segments": []} == {**checkpoint, "segments": []}
    small = {**checkpoint, "segments": segments[:100]}
    assert bounded_resume(small) is small


def test_the_endpoint_is_suspended_only_when_its_job_allows_it() -> None:
    # Not on every pause (a GPU job unloads its model instead): when the job says so.
    assert ENDPOINTS["transcribe"] is TranscribeEndpoint
    assert TranscribeEndpoint.pausable == "always" and not TranscribeEndpoint.suspend_on_pause


def test_models_are_found_by_name_or_path(tmp_path: Path) -> None:
    embedded = transcribe.resolve_model("tiny.en", None)
    assert (embedded / "model.bin").is_file()
    assert transcribe.resolve_model("tiny.en", str(tmp_path)) == embedded
    (tmp_path / "tiny.en").mkdir()
    (tmp_path / "tiny.en" / "model.bin").write_bytes(b"x")  # installed: preferred
    assert transcribe.resolve_model("tiny.en", str(tmp_path)) == tmp_path / "tiny.en"
    assert transcribe.resolve_model(str(tmp_path / "tiny.en"), None) == tmp_path / "tiny.en"
    with pytest.raises(JobFailed, match="no models folder is set") as info:
        transcribe.resolve_model("small", None)
    assert info.value.error_type == "MODEL_MISSING"
    with pytest.raises(JobFailed, match="neither a model name") as info:
        transcribe.resolve_model("../small", str(tmp_path))
    assert info.value.error_type == "PAYLOAD_ERROR"


def test_remembered_compute_types_survive_a_bad_file(tmp_path: Path) -> None:
    assert transcribe.read_compute_types(None) == {}
    assert transcribe.read_compute_types(str(tmp_path)) == {}
    transcribe.remember_compute_type(str(tmp_path), "cuda", "int8_float16")
    transcribe.remember_compute_type(str(tmp_path), "cpu", "int8")
    transcribe.remember_compute_type(str(tmp_path), "cpu", "int8")  # unchanged: not rewritten
    assert transcribe.read_compute_types(str(tmp_path)) == {"cpu": "int8", "cuda": "int8_float16"}
    assert names(tmp_path) == [transcribe.COMPUTE_TYPES_FILE]
    (tmp_path / transcribe.COMPUTE_TYPES_FILE).write_text("[1, 2]")
    assert transcribe.read_compute_types(str(tmp_path)) == {}
    (tmp_path / transcribe.COMPUTE_TYPES_FILE).write_text("{not json")
    assert transcribe.read_compute_types(str(tmp_path)) == {}
    transcribe.remember_compute_type(None, "cpu", "int8")  # no folder: nothing to do


def test_speech_after_the_last_segment_fails_the_coverage_check(voices: SpeechCache) -> None:
    audio = transcribe.load_audio(voices.speech(SHORT))
    length = len(audio) / transcribe.SAMPLE_RATE
    heard = transcribe.speech_after(audio, 1.0)
    assert heard and heard[0][0] >= 1.0 and heard[-1][1] <= length + 1e-6
    problem = speech.check_coverage(1.0, length, heard)
    assert problem is not None and problem.startswith(
        f"the transcript stops at 0:01 of {speech.clock(length)}"
    )
    assert (
        speech.check_coverage(length - 0.5, length, transcribe.speech_after(audio, length - 0.5))
        is None
    )
    assert transcribe.speech_after(audio, length + 1) == []
