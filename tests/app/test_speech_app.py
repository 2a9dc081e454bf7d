"""The speech templates on the application's side: settings reach TRANSCRIBE and ANALYZE, a
model that is not installed is downloaded first, a URL is downloaded first — on a real data
directory, without running anything."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fredica_app import models
from fredica_app.cli import main
from fredica_app.services import Fredica, uses_gpu
from workers.spec import prepare_run


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Fredica]:
    fredica = Fredica.open(tmp_path / "data")
    yield fredica
    await fredica.close()


async def material(app: Fredica, tmp_path: Path, name: str = "talk.mkv") -> object:
    f = tmp_path / name
    f.write_bytes(b"m" * 100)
    (m,) = (await app.import_items([str(f)])).added
    return m


async def test_subtitles_template_carries_the_speech_settings(app: Fredica, tmp_path: Path) -> None:
    m = await material(app, tmp_path)
    app.settings.language = "en"
    app.settings.beam_size = 3
    app.settings.initial_prompt = "Fredica, ffmpeg."
    spec = app.spec_for_material(m, "subtitles")  # type: ignore[arg-type]
    tasks = {t.key: t for t in spec.tasks}
    assert list(tasks) == ["extract_audio", "transcribe", "export_subtitles"]
    t = tasks["transcribe"]
    out = app.library_dir / f"talk-{m.id[:8]}"  # type: ignore[attr-defined]
    assert t.payload["input"] == tasks["extract_audio"].payload["output"] == f"{out}/talk.16k.wav"
    assert t.payload["output"] == tasks["export_subtitles"].payload["transcript"]
    assert t.payload["model"] == "tiny.en" and t.payload["models_dir"] == str(app.models_dir)
    assert (t.payload["language"], t.payload["beam_size"]) == ("en", 3)
    assert t.payload["initial_prompt"] == "Fredica, ffmpeg."
    assert t.resource == ("gpu" if uses_gpu("auto") else "cpu")
    assert t.depends_on == ["extract_audio"] and t.max_retries == 1
    prepare_run(spec, app.registry)  # every payload valid for its type


async def test_a_model_that_is_not_installed_is_downloaded_first(
    app: Fredica, tmp_path: Path
) -> None:
    m = await material(app, tmp_path)
    app.settings.whisper_model = "small"
    app.settings.model_base_url = "http://127.0.0.1:9/hf"
    spec = app.spec_for_material(m, "full")  # type: ignore[arg-type]
    tasks = {t.key: t for t in spec.tasks}
    download = tasks["download_model"]
    assert download.type == "DOWNLOAD_MODEL"
    assert download.payload == {
        "name": "small",
        "models_dir": str(app.models_dir),
        "base_url": "http://127.0.0.1:9/hf",
    }
    assert sorted(tasks["transcribe"].depends_on) == ["download_model", "extract_audio"]
    prepare_run(spec, app.registry)
    # Installed (as DOWNLOAD_MODEL leaves it): no download.
    (app.models_dir / "small").mkdir(parents=True)
    (app.models_dir / "small" / "model.bin").write_bytes(b"x")
    spec = app.spec_for_material(m, "full")  # type: ignore[arg-type]
    assert "download_model" not in {t.key for t in spec.tasks}
    assert [i.name for i in models.list_models(app.models_dir)] == ["tiny.en", "small"]


async def test_the_embedded_model_needs_no_download(app: Fredica, tmp_path: Path) -> None:
    m = await material(app, tmp_path)
    assert models.installed(app.models_dir, "tiny.en")
    spec = app.spec_for_material(m, "subtitles")  # type: ignore[arg-type]
    assert [t.type for t in spec.tasks] == ["EXTRACT_AUDIO", "TRANSCRIBE", "EXPORT_SUBTITLES"]


async def test_analyze_gets_the_language_model_only_when_configured(
    app: Fredica, tmp_path: Path
) -> None:
    m = await material(app, tmp_path)
    spec = app.spec_for_material(m, "full")  # type: ignore[arg-type]
    analyze = next(t for t in spec.tasks if t.type == "ANALYZE")
    assert "llm" not in analyze.payload  # nothing is sent anywhere unless configured
    app.settings.llm_base_url = "http://127.0.0.1:11434/v1"
    app.settings.llm_model = "llama3.2"
    app.settings.llm_api_key_env = "MY_KEY"
    spec = app.spec_for_material(m, "full")  # type: ignore[arg-type]
    analyze = next(t for t in spec.tasks if t.type == "ANALYZE")
    assert analyze.payload["llm"] == {
        "base_url": "http://127.0.0.1:11434/v1",
        "model": "llama3.2",
        "api_key_env": "MY_KEY",
    }
    prepare_run(spec, app.registry)


async def test_a_url_is_downloaded_before_any_template_runs_on_it(app: Fredica) -> None:
    (m,) = (await app.import_items(["http://127.0.0.1:9/talk.mp4"])).added
    spec = app.spec_for_material(m, "subtitles")
    tasks = {t.key: t for t in spec.tasks}
    assert tasks["download"].type == "DOWNLOAD"
    assert tasks["extract_audio"].depends_on == ["download"]
    assert tasks["extract_audio"].payload["input"] == m.local_path
    assert spec.tasks[0].key == "download"
    prepare_run(spec, app.registry)


def test_uses_gpu_follows_the_device_setting() -> None:
    assert uses_gpu("cuda") and not uses_gpu("cpu")


def test_templates_and_doctor_list_the_speech_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "templates", "--json"]) == 0
    templates = {t["name"]: t for t in json.loads(capsys.readouterr()[0])}
    full = {t["key"]: t for t in templates["full"]["tasks"]}
    assert full["export_subtitles"]["depends_on"] == ["transcribe"]
    assert full["analyze"]["depends_on"] == ["transcribe"]
    assert full["transcribe"]["depends_on"] == ["extract_audio"]
    assert full["extract_audio"]["depends_on"] == ["probe"]
    assert main(["--data-dir", str(data), "doctor", "--json"]) == 0
    checks = {c["name"]: c for c in json.loads(capsys.readouterr()[0])}
    assert "tiny.en" in checks["speech models"]["detail"]
    (data / "settings.json").write_text(json.dumps({"whisper_model": str(tmp_path / "nowhere")}))
    assert main(["--data-dir", str(data), "doctor", "--json"]) == 1
    checks = {c["name"]: c for c in json.loads(capsys.readouterr()[0])}
    assert not checks["speech models"]["ok"] and "model.bin" in checks["speech models"]["detail"]
