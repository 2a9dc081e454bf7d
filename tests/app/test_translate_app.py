"""Translation on the application's side, through the CLI, the real engine and endpoints
server, and the fake chat server (tests/support/llmserver.py, standing in for Ollama): a
subtitle file as a material, the ``translate_subtitles`` template, ``subtitles --param
translate_to``, and what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pysubs2
import pytest

from fredica_app.cli import main
from tests.endpoints.test_translate import CUES, write_srt
from tests.support.llmserver import FakeChatServer, translator
from tests.support.voices import SpeechCache


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def use_model(capsys: pytest.CaptureFixture[str], data: Path, llm: FakeChatServer) -> None:
    for key, value in (("llm_base_url", llm.url), ("llm_model", "fake-model")):
        assert fredica(capsys, data, "settings", "set", key, value)[0] == 0


def outputs_of(run: dict[str, object], task_type: str) -> dict[str, Path]:
    [task] = [t for t in run["tasks"] if t["type"] == task_type]  # type: ignore[attr-defined]
    return {Path(p).name: Path(p) for p in task["result"]["outputs"]}


def test_a_subtitle_file_is_translated_as_a_material(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    srt = write_srt(tmp_path / "talk.srt")
    with FakeChatServer([translator()]) as llm:
        use_model(capsys, data, llm)
        code, out, err = fredica(capsys, data, "process", str(srt), "--template",
                                 "translate_subtitles", "--param", "lang=fr", "--json")  # fmt: skip
        asked = len(llm.requests)
    assert code == 0, err
    run = json.loads(out)
    assert run["status"] == "completed" and asked == 1 + 1  # the glossary, one chunk of 25
    files = outputs_of(run, "TRANSLATE_SUBTITLES")
    assert sorted(files) == ["talk.fr.srt", "talk.fr.vtt"]
    got = [(e.start, e.end, e.plaintext) for e in pysubs2.load(str(files["talk.fr.srt"]))]
    assert got == [(a, b, "FR: " + t) for a, b, t in CUES]
    assert files["talk.fr.srt"].parent.is_relative_to(data)  # in the library, not beside it
    code, out, _ = fredica(capsys, data, "materials", "--json")
    assert code == 0 and [m["kind"] for m in json.loads(out)] == ["subtitles"]


def test_what_a_translation_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    srt = write_srt(tmp_path / "talk.srt", CUES[:2])
    # A media template on a subtitle file: one line saying which templates take one.
    code, _, err = fredica(capsys, data, "process", str(srt), "--template", "transcode_mp4")
    assert code != 0 and "'talk' is a subtitle file" in err
    assert "translate_subtitles" in err and len(err.strip().splitlines()) == 1
    # No language given: one line naming the template's parameters.
    code, _, err = fredica(capsys, data, "process", str(srt), "--template", "translate_subtitles")
    assert code != 0 and "lang" in err and len(err.strip().splitlines()) == 1
    # No language model in the settings: the task fails at once, saying what to set.
    code, out, _ = fredica(capsys, data, "process", str(srt), "--template",
                           "translate_subtitles", "--param", "lang=de", "--json")  # fmt: skip
    [task] = json.loads(out)["tasks"]
    assert task["status"] == "failed" and task["error_type"] == "PAYLOAD_ERROR"
    assert "set llm_base_url and llm_model" in task["error"]
    assert task["retry_count"] == 0


@pytest.mark.slow
def test_subtitles_translated_in_the_same_run_and_later_from_the_video(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real Whisper on an eSpeak NG dialogue: ``subtitles --param translate_to=fr`` makes the
    French subtitles at the times of the English ones; then ``translate_subtitles`` on the
    video takes the subtitles that run made."""
    data = tmp_path / "data"
    (tmp_path / "voices").mkdir()
    audio, _ = SpeechCache(tmp_path / "voices").dialogue(turns=4)
    talk = tmp_path / "media" / "talk.wav"
    talk.parent.mkdir()
    talk.write_bytes(audio.read_bytes())
    with FakeChatServer([translator()]) as llm:
        use_model(capsys, data, llm)
        code, out, err = fredica(capsys, data, "process", str(talk), "--template", "subtitles",
                                 "--param", "translate_to=fr", "--json")  # fmt: skip
        assert code == 0, err
        run = json.loads(out)
        english = outputs_of(run, "EXPORT_SUBTITLES")["talk.srt"]
        french = outputs_of(run, "TRANSLATE_SUBTITLES")["talk.fr.srt"]
        code, out, err = fredica(capsys, data, "process", str(talk), "--template",
                                 "translate_subtitles", "--param", "lang=de", "--json")  # fmt: skip
        assert code == 0, err
        later = json.loads(out)
    assert run["status"] == "completed" and later["status"] == "completed"
    source = pysubs2.load(str(english))
    assert len(source) >= 4
    assert [(e.start, e.end, "FR: " + e.plaintext) for e in source] == [
        (e.start, e.end, e.plaintext) for e in pysubs2.load(str(french))
    ]
    [task] = later["tasks"]
    assert task["payload"]["input"] == str(english)
    assert (english.parent / "talk.de.vtt").is_file()
