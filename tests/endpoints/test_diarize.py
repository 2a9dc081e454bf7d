"""DIARIZE on real speech: a dialogue of two eSpeak NG voices whose turns are known, run
through the real voice encoder (ONNX Runtime) — every change of speaker found within 0.5 s,
the speakers counted, or given; and what the job writes."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from python_endpoints.jobs import diarize, speakers, voice
from python_endpoints.jobs.transcribe import load_audio
from python_endpoints.serving import outputlocks
from python_endpoints.status import said
from tests.support.clips import JobContext, run_job
from tests.support.voices import SpeechCache

pytestmark = pytest.mark.slow

#: packaging/voice_encoder.py's output from Resemblyzer 0.1.4's wheel.
MODEL_SHA256 = "9ca010ae1ed71515fa134c231f9f42b1092da977d284ca9747116a3840b67fe9"


@pytest.fixture(scope="module")
def voices(tmp_path_factory: pytest.TempPathFactory) -> SpeechCache:
    return SpeechCache(tmp_path_factory.mktemp("voices"))


def changes(turns: list[tuple[float, float, int]]) -> list[float]:
    return [b[0] for a, b in itertools.pairwise(turns) if a[2] != b[2]]


def test_the_model_is_the_one_made_from_resemblyzer_and_gives_unit_vectors() -> None:
    assert hashlib.sha256(voice.MODEL.read_bytes()).hexdigest() == MODEL_SHA256
    encoder = voice.Encoder(JobContext())  # type: ignore[arg-type]
    mel = np.random.default_rng(0).random((300, speakers.MELS)).astype(np.float32)
    out = encoder(mel, [(0, 150), (150, 300), (0, 100)])
    assert out.shape == (3, 256)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_every_change_of_speaker_is_found_within_half_a_second(
    voices: SpeechCache, tmp_path: Path
) -> None:
    audio_file, known = voices.dialogue(turns=8)
    output = tmp_path / "dialogue.speakers.json"
    ctx = JobContext()
    result = run_job(diarize.diarize_job, {"input": str(audio_file), "output": str(output)}, ctx)
    assert result is not None and result["speakers"] == 2  # estimated
    document = json.loads(output.read_text())
    found = [(t["start"], t["end"], t["speaker"]) for t in document["turns"]]
    assert found[0][2] == 1  # numbered in the order they speak
    expected, got = changes(known), changes(found)
    assert len(got) == len(expected), (expected, got)
    assert all(abs(a - b) <= 0.5 for a, b in zip(expected, got, strict=True)), (expected, got)
    # Each known turn is mostly its speaker's.
    for start, end, who in known:
        mine = sum(max(0.0, min(end, e) - max(start, s)) for s, e, w in found if w == who)
        assert mine >= 0.8 * (end - start), (start, end, who)
    assert ctx.reports[-1] == (100.0, "done")
    assert document["duration"] == pytest.approx(len(load_audio(audio_file)) / 16000, abs=0.01)


def test_the_speakers_can_be_given(voices: SpeechCache, tmp_path: Path) -> None:
    audio_file, _ = voices.dialogue(turns=8)
    for given in (1, 3):
        output = tmp_path / f"given-{given}.speakers.json"
        params = {"input": str(audio_file), "output": str(output), "speakers": given}
        result = run_job(diarize.diarize_job, params, JobContext())
        assert result is not None and result["speakers"] == given


def test_silence_has_no_turns(voices: SpeechCache, tmp_path: Path) -> None:
    output = tmp_path / "quiet.speakers.json"
    params = {"input": str(voices.silence(3.0)), "output": str(output)}
    result = run_job(diarize.diarize_job, params, JobContext())
    assert result is not None and result["turns"] == 0
    assert json.loads(output.read_text())["turns"] == []


class CancelAfter(JobContext):
    """Cancelled once ``lots`` lots of windows are checkpointed (a kill, to the pieces on
    disk: nothing cleans up after a job run in this process)."""

    def __init__(self, lots: int) -> None:
        super().__init__()
        self.lots = lots

    @property  # type: ignore[override]
    def cancelled(self) -> bool:
        return bool(self.checkpoints) and len(self.checkpoints[-1]["segments"]) >= self.lots


def pieces(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".emb" in p.name)


def test_a_stopped_diarization_resumes_with_only_the_windows_left(
    voices: SpeechCache, tmp_path: Path
) -> None:
    audio_file, _ = voices.dialogue(turns=8)
    whole = tmp_path / "whole.speakers.json"
    run_job(diarize.diarize_job, {"input": str(audio_file), "output": str(whole)})
    output = tmp_path / "out" / "talk.speakers.json"
    params = {"input": str(audio_file), "output": str(output), "checkpoint_windows": 8}
    first = CancelAfter(lots=2)
    assert run_job(diarize.diarize_job, {**params, "part_id": "0000aaaa"}, first) is None
    checkpoint = first.checkpoints[-1]
    assert [e["index"] for e in checkpoint["segments"]] == [0, 1]
    assert pieces(output.parent) == [
        ".talk.speakers.emb00000.0000aaaa.fredica-part.npy",
        ".talk.speakers.emb00001.0000aaaa.fredica-part.npy",
    ]
    # The next attempt: the server's sweep first (it spares what the checkpoint lists).
    again = {**params, "part_id": "0000bbbb", "resume": checkpoint}
    outputlocks.remove_leftovers("DIARIZE", again)
    second = JobContext()
    result = run_job(diarize.diarize_job, again, second)
    assert result is not None and result["windows_reused"] == 16
    assert result["windows"] > 24  # four lots at least: two were left to embed
    assert [len(c["segments"]) for c in second.checkpoints] == list(
        range(3, -(-result["windows"] // 8) + 1)
    )
    # The same vectors as in one pass, so the same turns; the pieces are gone.
    assert json.loads(output.read_text()) == json.loads(whole.read_text())
    assert sorted(p.name for p in output.parent.iterdir()) == ["talk.speakers.json"]
    # Progress goes on from where the lots kept got, never back to the start.
    found = [p for p, text in second.reports if text == said("step.finding_speakers")]
    assert found[0] >= 10.0 + 80.0 * 16 / result["windows"] - 1e-6
    assert found == sorted(found)


def test_a_checkpoint_of_other_audio_or_a_damaged_piece_is_not_trusted(
    voices: SpeechCache, tmp_path: Path
) -> None:
    audio_file, _ = voices.dialogue(turns=8)
    output = tmp_path / "talk.speakers.json"
    params = {"input": str(audio_file), "output": str(output), "checkpoint_windows": 8}
    first = CancelAfter(lots=3)
    assert run_job(diarize.diarize_job, params, first) is None
    checkpoint = first.checkpoints[-1]
    damaged = output.parent / checkpoint["segments"][1]["file"]
    damaged.write_bytes(damaged.read_bytes()[:100])  # cut short: not this lot
    result = run_job(diarize.diarize_job, {**params, "resume": checkpoint})
    assert result is not None and result["windows_reused"] == 16
    assert pieces(tmp_path) == []
    # The same audio cut in lots of another size, or other audio: nothing reused, all removed.
    for other in ({**params, "checkpoint_windows": 16}, {**params, "input": str(
        voices.dialogue(turns=6)[0])}):  # fmt: skip
        first = CancelAfter(lots=2)
        assert run_job(diarize.diarize_job, {**params}, first) is None
        listed = [e["file"] for e in first.checkpoints[-1]["segments"]]
        result = run_job(diarize.diarize_job, {**other, "resume": first.checkpoints[-1]})
        assert result is not None and result["windows_reused"] == 0
        assert not any((tmp_path / name).exists() for name in listed)
        assert pieces(tmp_path) == []


def test_the_transcript_template_labels_who_said_what(
    voices: SpeechCache, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real Whisper, real speakers: each format says who speaks, at the right turns."""
    from fredica_app.cli import main

    audio_file, known = voices.dialogue(turns=8)
    talk = tmp_path / "talk.wav"
    talk.write_bytes(audio_file.read_bytes())
    code = main(["--data-dir", str(tmp_path / "data"), "process", str(talk), "--template",
                 "transcript", "--param", "speakers=2", "--json"])  # fmt: skip
    run = json.loads(capsys.readouterr().out)
    assert code == 0 and run["status"] == "completed"
    [export] = [t for t in run["tasks"] if t["type"] == "EXPORT_SUBTITLES"]
    files = {Path(p).name: Path(p) for p in export["result"]["outputs"]}
    assert set(files) == {
        "talk.transcript.txt", "talk.transcript.md", "talk.srt", "talk.vtt", "talk.segments.json",
    }  # fmt: skip
    document = json.loads(files["talk.segments.json"].read_text())
    assert document["speakers"] == {"1": "Speaker 1", "2": "Speaker 2"}
    for segment in document["segments"]:
        middle = (segment["start"] + segment["end"]) / 2
        [(_, _, who)] = [k for k in known if k[0] - 0.5 <= middle <= k[1] + 0.5]
        assert segment["speaker"] == who, segment
        assert all(word[3] == who for word in segment["words"])
    srt = files["talk.srt"].read_text()
    assert srt.count("SPEAKER 1: ") == 4 and srt.count("SPEAKER 2: ") == 4  # at each change
    vtt = files["talk.vtt"].read_text()
    assert vtt.count("<v Speaker 1>") >= 4 and vtt.count("<v Speaker 2>") >= 4
    md = files["talk.transcript.md"].read_text().splitlines()
    assert md[0] == "# talk"
    turns_md = [line.split(":**")[0] for line in md if line.startswith("**")]
    assert turns_md == ["**Speaker 1", "**Speaker 2"] * 4
    txt = files["talk.transcript.txt"].read_text().split("\n\n")
    assert [p.split(":")[0] for p in txt] == ["Speaker 1", "Speaker 2"] * 4
    # Named after the run, then two merged: the files say so.
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "speakers", run["id"], "1=Ana", "2=Ben Okafor", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(s["number"], s["name"]) for s in listed["speakers"]] == [(1, "Ana"), (2, "Ben Okafor")]
    srt = files["talk.srt"].read_text()
    assert srt.count("ANA: ") == 4 and srt.count("BEN OKAFOR: ") == 4 and "SPEAKER" not in srt
    assert "**Ben Okafor:**" in files["talk.transcript.md"].read_text()
    assert json.loads(files["talk.segments.json"].read_text())["speakers"]["2"] == "Ben Okafor"
    assert main([*data, "speakers", run["id"], "2=1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("1  Ana  ") and "rewrote 5 file(s)" in out
    assert files["talk.srt"].read_text().count("ANA: ") == 1  # one speaker now: said once
    assert main([*data, "speakers", run["id"], "7=Zoe"]) == 1
    assert "has no speaker 7 (its speakers: 1)" in capsys.readouterr().err
    assert main([*data, "speakers", run["id"], "Ana"]) == 1
    assert "write N=NAME" in capsys.readouterr().err
