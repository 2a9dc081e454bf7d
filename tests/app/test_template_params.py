"""Template parameters: declared per template, checked as the job checks the param, given per
submission (``--param``, a spec's ``params``, a watch folder's row), the settings standing for
the rest."""

from __future__ import annotations

import json
from pathlib import Path

import av
import pytest

from fredica_app.cli import main
from fredica_app.errors import TemplateError
from fredica_app.settings import WatchFolder
from fredica_app.templates import BUILTIN, get_template
from fredica_app.watching import FolderWatcher
from python_endpoints.jobs.sample import make_sample
from tests.support.apps import opened_app


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_re_encode_takes_a_profile_and_every_transcription_a_language_and_model() -> None:
    for template in BUILTIN.values():
        names = {p.name for p in template.params}
        types = {t.type for t in template.tasks}
        encodes = bool({"TRANSCODE_MP4", "BURN_SUBTITLES"} & types)
        assert ("profile" in names) == encodes, template.name
        assert ({"language", "model"} <= names) == ("TRANSCRIBE" in types), template.name


def test_values_are_checked_as_the_job_checks_them() -> None:
    full = get_template("full")
    assert full.bind({"profile": "archive", "language": "fr", "model": "small"}) == {
        "profile": "archive",
        "language": "fr",
        "model": "small",
    }
    with pytest.raises(TemplateError) as bad:
        full.bind({"profile": "fast"})
    message = str(bad.value)
    assert "profile='fast'" in message and "compatible|modern|archive" in message
    assert "\n" not in message
    with pytest.raises(TemplateError, match=r"has no parameter 'lang': it takes profile"):
        full.bind({"lang": "fr"})
    with pytest.raises(TemplateError, match=r"language='French'"):
        full.bind({"language": "French"})
    with pytest.raises(TemplateError, match="takes no parameter"):
        get_template("diagnostic").bind({"seconds": "3"})


def test_a_parameter_sets_the_task_param_and_the_settings_fill_the_rest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"mp4_profile": "modern", "language": "de"}))
    clip = tmp_path / "talk.mkv"
    make_sample(clip, 1.0, kind="mkv")

    async def specs() -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
        async with opened_app(data) as app:
            [material] = (await app.import_items([str(clip)])).materials
            given = app.spec_for_material(material, "full", {"profile": "archive", "model": "x"})
            plain = app.spec_for_material(material, "full")
            by_key = {t.key: t.payload for t in given.tasks}
            plain_by_key = {t.key: t.payload for t in plain.tasks}
            keys = {t.key: t.idempotency_key for t in given.tasks}
            assert keys != {t.key: t.idempotency_key for t in plain.tasks}
            return by_key["transcode"], by_key["transcribe"], plain_by_key["transcode"]

    import asyncio

    transcode, transcribe, plain = asyncio.run(specs())
    assert transcode["profile"] == "archive"  # given
    assert transcribe["model"] == "x" and transcribe["language"] == "de"  # the setting's
    assert plain["profile"] == "modern"  # not given: the setting's


def test_process_with_a_profile_makes_what_the_profile_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One clip (H.264 and Opus), made twice: ``archive`` copies the Opus audio as it is,
    ``compatible`` makes it AAC; the second is a run of its own, not the first found again."""
    data = tmp_path / "data"
    clip = tmp_path / "clip.mkv"
    make_sample(clip, 2.0, kind="mkv")
    codecs = {}
    for profile in ("archive", "compatible"):
        code, out, err = fredica(
            capsys, data, "process", str(clip), "--template", "transcode_mp4",
            "--param", f"profile={profile}", "--json",
        )  # fmt: skip
        assert code == 0, err
        run = json.loads(out)
        transcode = next(t for t in run["tasks"] if t["type"] == "TRANSCODE_MP4")
        # (A payload keeps what differs from the job's defaults: compatible is the default.)
        assert transcode["payload"].get("profile", "compatible") == profile
        [mp4] = [o for o in transcode["result"]["outputs"] if o.endswith(".mp4")]
        with av.open(mp4) as container:
            codecs[profile] = container.streams.audio[0].codec_context.name
    assert codecs == {"archive": "opus", "compatible": "aac"}


def test_the_cli_refuses_a_parameter_before_importing_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    clip = tmp_path / "clip.mkv"
    make_sample(clip, 1.0, kind="mkv")
    code, _, err = fredica(capsys, data, "add", str(clip), "--template", "subtitles",
                           "--param", "profile=archive")  # fmt: skip
    assert code == 1
    assert err.strip().endswith(
        "it takes language (text), model (text), speakers (a number), translate_to (text)"
    )
    code, out, _ = fredica(capsys, data, "materials", "--json")
    assert json.loads(out) == []  # nothing imported
    with pytest.raises(SystemExit) as usage:
        fredica(capsys, data, "add", str(clip), "--template", "subtitles", "--param", "language")
    assert usage.value.code == 2 and "is not KEY=VALUE" in capsys.readouterr().err
    code, _, err = fredica(capsys, data, "watch-folders", "--param", "profile=archive")
    assert code == 2 and "--param go with DIR" in err


def test_templates_name_lists_the_parameters_with_their_defaults_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"whisper_model": "base"}))
    code, out, _ = fredica(capsys, data, "templates", "subtitles")
    assert code == 0
    assert "parameters (--param NAME=VALUE):" in out
    assert "default: base (the setting whisper_model)" in out
    assert "default: none (without it, no translate)" in out
    code, out, _ = fredica(capsys, data, "templates", "translate_subtitles")
    assert "default: required" in out and "default: False (the job's default)" in out
    code, out, _ = fredica(capsys, data, "templates", "transcode_mp4", "--json")
    [profile] = json.loads(out)["params"]
    assert profile["name"] == "profile" and profile["values"] == "compatible|modern|archive"
    assert profile["default"] == "compatible"
    code, out, err = fredica(capsys, data, "templates", "nope")
    assert code == 1 and "unknown template 'nope'" in err


async def test_a_watch_folder_refuses_a_parameter_its_template_does_not_take(
    tmp_path: Path,
) -> None:
    async with opened_app(tmp_path / "data") as app:
        folder = WatchFolder(folder=tmp_path, template="transcode_mp4", params={"model": "x"})
        with pytest.raises(TemplateError, match="has no parameter 'model'"):
            FolderWatcher(app, [folder], 1.0)
        FolderWatcher(app, [folder.model_copy(update={"params": {"profile": "modern"}})], 1.0)


def test_a_language_the_model_cannot_hear_is_refused_at_submission(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    clip = tmp_path / "clip.mkv"
    make_sample(clip, 1.0, kind="mkv")
    code, _, err = fredica(capsys, data, "add", str(clip), "--template", "subtitles",
                           "--param", "language=fr")  # fmt: skip
    assert code == 1
    assert "the model tiny.en knows English only, and the language is fr" in err
    code, out, _ = fredica(capsys, data, "runs", "--json")
    assert json.loads(out) == []  # no run of it
    code, _, err = fredica(capsys, data, "add", str(clip), "--template", "subtitles",
                           "--param", "language=fr", "--param", "model=small")  # fmt: skip
    assert code == 0, err


def test_subtitles_find_the_speakers_only_when_asked() -> None:
    subtitles = get_template("subtitles")
    values = {"input": "/m/a.mkv", "output_dir": "/m/o", "stem": "a", "url": ""}
    plain = {t.key: t for t in subtitles.expand(values=values).tasks}
    assert "diarize" not in plain
    assert plain["export_subtitles"].depends_on == ["transcribe"]
    assert "speakers" not in plain["export_subtitles"].payload
    for given, count in (("0", 0), ("3", 3)):
        bound = subtitles.bind({"speakers": given})
        tasks = {t.key: t for t in subtitles.expand(values=values, params=bound).tasks}
        assert tasks["diarize"].payload == {
            "input": "/m/o/a.16k.wav", "output": "/m/o/a.speakers.json", "speakers": count,
        }  # fmt: skip
        assert tasks["export_subtitles"].depends_on == ["transcribe", "diarize"]
        assert tasks["export_subtitles"].payload["speakers"] == "/m/o/a.speakers.json"
    with pytest.raises(TemplateError, match="speakers='two'"):
        subtitles.bind({"speakers": "two"})
