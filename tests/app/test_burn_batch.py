"""``burn_subtitles`` on a folder: each video with the subtitle file of its stem, the settings'
language preferred among several; a video with none skipped, saying so."""

from __future__ import annotations

import json
from pathlib import Path

import av
import pytest

from fredica_app.cli import main
from fredica_app.services.submission import pick_subtitles
from python_endpoints.jobs import media
from python_endpoints.jobs.sample import make_sample, srt_text

CUES = [(0.2, 0.9, "A CUE")]


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def touch(path: Path) -> Path:
    path.write_text(srt_text(CUES), encoding="utf-8")
    return path


def test_the_subtitle_file_of_a_video_is_the_one_of_its_stem(tmp_path: Path) -> None:
    video = tmp_path / "Talk.mkv"
    video.write_bytes(b"")
    assert pick_subtitles(video, None) is None
    touch(tmp_path / "Talk 2.srt")  # another stem
    touch(tmp_path / "Talk.en.fr.srt")  # not stem.LANG
    touch(tmp_path / "talk.notes.txt")
    assert pick_subtitles(video, None) is None
    fr = touch(tmp_path / "talk.fr.vtt")
    assert pick_subtitles(video, "en") == fr  # the only one
    en = touch(tmp_path / "Talk.EN.srt")
    assert pick_subtitles(video, "en") == en  # the settings' language, in any case
    plain = touch(tmp_path / "Talk.ass")
    assert pick_subtitles(video, None) == plain  # no language: the one without
    assert pick_subtitles(video, "de") == plain
    srt = touch(tmp_path / "Talk.srt")
    assert pick_subtitles(video, None) == srt  # .srt before .ass
    assert pick_subtitles(video, "fr") == fr


def test_add_a_folder_pairs_each_video_and_skips_one_without(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"language": "fr"}))
    folder = tmp_path / "talks"
    folder.mkdir()
    for stem in ("talk", "lone"):
        make_sample(folder / f"{stem}.mkv", 1.0, kind="mkv")
    touch(folder / "talk.en.srt")
    touch(folder / "talk.fr.srt")
    code, out, err = fredica(capsys, data, "add", str(folder), "--template", "burn_subtitles")
    assert code == 0, err
    [line] = out.splitlines()
    assert line.endswith("burn_subtitles  talk (subtitles: talk.fr.srt)")
    assert "skipped lone.mkv: no subtitle file beside it" in err
    code, out, err = fredica(capsys, data, "worker", "--until-idle")
    assert code == 0, err
    code, out, _ = fredica(capsys, data, "runs", "--json")
    [run] = json.loads(out)
    assert run["status"] == "completed"
    code, out, _ = fredica(capsys, data, "run", run["id"], "--json")
    [burn] = [t for t in json.loads(out)["tasks"] if t["type"] == "BURN_SUBTITLES"]
    assert burn["payload"]["subtitles"] == str(folder / "talk.fr.srt")
    assert burn["result"]["subtitles"] == "talk.fr.srt"
    [mp4] = burn["result"]["outputs"]
    assert mp4.endswith("talk.subtitled.mp4")
    with av.open(mp4) as container:
        assert container.duration / 1e6 == pytest.approx(1.0, abs=0.1)


def test_a_batch_with_no_subtitles_at_all_submits_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clip = tmp_path / "alone.mkv"
    make_sample(clip, 1.0, kind="mkv")
    code, _, err = fredica(capsys, tmp_path / "data", "add", str(clip), "--template",
                           "burn_subtitles")  # fmt: skip
    assert code == 1
    assert "skipped alone.mkv" in err and "nothing submitted" in err
    # Its own track instead: no file needed.
    code, out, err = fredica(capsys, tmp_path / "data", "add", str(clip), "--template",
                             "burn_subtitles", "--param", "track=0")  # fmt: skip
    assert code == 0, err
    assert "(subtitles:" not in out


def test_doctor_says_whether_subtitles_can_be_burned_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = fredica(capsys, tmp_path / "data", "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)}
    # The bundled ffmpeg has libass; what it can draw depends on this machine's fonts
    # (.ci/run installs DejaVu and Noto CJK): the check must say what a real burn finds.
    binary = media.ffmpeg_binary({"ffmpeg": None})
    latin, cjk = (
        media.renders_subtitles(binary, "Subtitles"),
        media.renders_subtitles(binary, "字幕"),
    )
    burned = checks["burned-in subtitles"]
    if latin and cjk:
        assert (burned["ok"], burned["detail"]) == (True, "libass draws Latin and CJK text")
    elif latin:
        assert burned["ok"] and "no font here has CJK glyphs" in burned["detail"]
    else:
        assert not burned["ok"] and "finds no font" in burned["detail"]
    # An ffmpeg without libass (a stand-in that lists no subtitles filter and fails the rest).
    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\necho ' .. null  V->V  Pass the source unchanged.'\nexit 0\n")
    fake.chmod(0o755)
    data = tmp_path / "other"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"ffmpeg_path": str(fake)}))
    _, out, _ = fredica(capsys, data, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out)}
    assert not checks["burned-in subtitles"]["ok"]
    assert "no libass" in checks["burned-in subtitles"]["detail"]
