"""The media library: fingerprints, imports of files, folders and URLs, templates expanded
for a material, and the CLI's ``add`` and ``materials`` — on a real data directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fredica_app.cli import main
from fredica_app.errors import MediaImportError, NoSubtitlesFor, SpecError, TemplateError
from fredica_app.gui.library_work import start_runs
from fredica_app.library.fingerprint import BLOCK, fingerprint
from fredica_app.library.importer import safe_name
from fredica_app.services import Fredica
from fredica_app.templates import BUILTIN, Template, get_template
from tests.engine.test_engine_faults import fail_write
from tests.support.commits import counting_commits
from workers.records import CreatedRun


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
async def app(tmp_path: Path) -> Fredica:
    fredica = Fredica.open(tmp_path / "data")
    yield fredica  # type: ignore[misc]
    await fredica.close()


def test_fingerprint_reads_head_and_tail_only(tmp_path: Path) -> None:
    body = bytearray(os.urandom(5 * BLOCK))
    f = write(tmp_path / "a.bin", bytes(body))
    before = fingerprint(f)
    stat = f.stat()
    # A change in the middle (not read) with size and mtime kept: the same fingerprint.
    body[2 * BLOCK + 10] ^= 0xFF
    f.write_bytes(bytes(body))
    os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert fingerprint(f) == before
    # A change in the last block: another fingerprint.
    body[-1] ^= 0xFF
    f.write_bytes(bytes(body))
    os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert fingerprint(f) != before
    assert fingerprint(f).startswith(f"{5 * BLOCK}-{stat.st_mtime_ns}-")


def test_safe_name_keeps_titles_readable() -> None:
    assert safe_name("My talk: part 1/2") == "My_talk__part_1_2"
    assert safe_name("  ..  ") == "untitled"
    assert len(safe_name("x" * 500)) == 80


async def test_import_folder_recursively_skips_non_media_and_known_files(
    app: Fredica, tmp_path: Path
) -> None:
    media = tmp_path / "media"
    write(media / "a.mp4", b"a" * 1000)
    write(media / "sub" / "b.MKV", b"b" * 2000)
    write(media / "sub" / "notes.txt", b"hello")
    write(media / ".hidden" / "c.mp4", b"c")
    report = await app.import_items([str(media)])
    assert sorted(m.title for m in report.added) == ["a", "b"]
    assert [p.name for p in report.skipped] == ["notes.txt"]
    by_title = {m.title: m for m in report.added}
    assert by_title["a"].kind == "video" and by_title["a"].size == 1000
    assert by_title["b"].local_path == str((media / "sub" / "b.MKV").resolve())

    # Again, plus a copy of a.mp4 elsewhere with the same bytes and mtime: nothing new.
    copy = write(tmp_path / "elsewhere" / "a-copy.mp4", b"a" * 1000)
    st = (media / "a.mp4").stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = await app.import_items([str(media), str(copy)])
    assert again.added == []
    assert sorted(m.title for m in again.existing) == ["a", "a", "b"]
    assert len(app.library.list()) == 2


async def test_a_folder_is_imported_then_submitted_in_one_commit_each(
    app: Fredica, tmp_path: Path
) -> None:
    """A folder of files pays one sync of the database for its import and one for its runs,
    not one a file; what comes of it is what one by one gave."""
    media = tmp_path / "media"
    clips = [write(media / f"clip{i:02}.mp4", bytes([i]) * 1000) for i in range(30)]
    twin = write(media / "zz-twin.mp4", bytes([0]) * 1000)  # the first clip's bytes and mtime
    st = clips[0].stat()
    os.utime(twin, ns=(st.st_atime_ns, st.st_mtime_ns))
    with counting_commits(app.store.engine) as commits:
        report = await app.import_items([str(media)])
    assert len(commits) == 1
    assert [m.title for m in report.added] == [f"clip{i:02}" for i in range(30)]
    assert report.existing == [report.added[0]]  # the twin is the first clip
    with counting_commits(app.store.engine) as commits:
        submitted = await app.submit_for_materials(report.materials, "transcode_mp4")
    assert len(commits) == 1
    runs = [c for c in submitted if isinstance(c, CreatedRun)]
    assert len(runs) == 31 and len({r.run_id for r in runs}) == 30
    assert runs[-1].deduplicated and runs[-1].run_id == runs[0].run_id
    assert len(await app.store.list_runs()) == 30


async def test_a_material_a_template_cannot_run_on_is_passed_over_or_stops_the_batch(
    app: Fredica, tmp_path: Path
) -> None:
    (local,) = (await app.import_items([str(write(tmp_path / "a.mp4", b"m"))])).added
    (url,) = (await app.import_items(["http://127.0.0.1:9/a.mp4"])).added
    # Passed over only a video without its subtitles (the CLI's add): the error, and nothing
    # submitted, not even the one it could run on.
    with pytest.raises(TemplateError, match="downloads a URL"):
        await app.submit_for_materials(
            [url, local], "download_transcode", passed_over=(NoSubtitlesFor,)
        )
    assert await app.store.list_runs() == []
    # Passed over all (the window's Start): each material's error in its place.
    first, second = await app.submit_for_materials([url, local], "download_transcode")
    assert isinstance(first, CreatedRun) and isinstance(second, TemplateError)
    assert [r.id for r in await app.store.list_runs()] == [first.run_id]


async def test_the_windows_start_gives_each_material_the_databases_refusal(
    app: Fredica, tmp_path: Path
) -> None:
    """The submission's one transaction fails (a full disk): nothing is submitted, and each
    material of the window's Start says why, rather than the host reporting an error."""
    folder = tmp_path / "in"
    report = await app.import_items([str(write(folder / n, b"m")) for n in ("a.mp4", "b.mp4")])
    writes = fail_write(app.store, 1, "database or disk is full")
    started = await start_runs(app, report.added, "transcode_mp4")
    assert writes() == 1
    assert [s.material for s in started] == report.added
    assert all(s.run is None and s.error and "full" in s.error for s in started), started
    assert await app.store.list_runs() == []
    # The disk has room again: the same Start submits both.
    started = await start_runs(app, report.added, "transcode_mp4")
    assert all(s.run is not None and s.error is None for s in started), started
    assert len(await app.store.list_runs()) == 2


async def test_import_a_single_file_of_any_type_and_urls(app: Fredica, tmp_path: Path) -> None:
    f = write(tmp_path / "recording.dat", b"x" * 10)
    report = await app.import_items([str(f), "https://example.org/videos/Talk%201.webm?x=1"])
    local, url = report.added
    assert local.kind == "unknown"  # PROBE decides what it is
    assert url.source == "https://example.org/videos/Talk%201.webm?x=1" and url.is_url
    assert url.title == "Talk 1.webm (example.org)"
    assert url.local_path is not None
    assert Path(url.local_path).name == "Talk_1.webm"
    assert Path(url.local_path).parent.name == "source"
    assert Path(url.local_path).parent.parent.parent == app.library_dir
    # The same URL again is the same material.
    again = await app.import_items(["https://example.org/videos/Talk%201.webm?x=1"])
    assert again.existing[0].id == url.id


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("missing.mp4", "no such file or folder"),
        ("ftp://example.org/a.mp4", "only http and https"),
        ("http:///nohost", "no host"),
    ],
)
async def test_import_errors_are_clear(
    app: Fredica, tmp_path: Path, item: str, message: str
) -> None:
    target = str(tmp_path / item) if "://" not in item else item
    with pytest.raises(MediaImportError, match=message):
        await app.import_items([target])


async def test_template_for_a_material_fills_paths_settings_and_idempotency_keys(
    app: Fredica, tmp_path: Path
) -> None:
    app.settings.ffmpeg_path = tmp_path / "my-ffmpeg"
    f = write(tmp_path / "In put.mkv", b"m" * 100)
    (material,) = (await app.import_items([str(f)])).added
    spec = app.spec_for_material(material, "media")
    tasks = {t.key: t for t in spec.tasks}
    out_dir = app.library_dir / f"In_put-{material.id[:8]}"
    assert out_dir.is_dir()  # created for the jobs, under the library directory
    assert tasks["probe"].payload == {"input": str(f.resolve())}
    assert tasks["transcode"].payload["output"] == f"{out_dir}/In_put.mp4"
    assert "ffmpeg" not in tasks["transcode"].payload  # the server's own (see test_policy.py)
    assert tasks["extract_subtitles"].payload["output_dir"] == str(out_dir)
    assert tasks["transcode"].depends_on == ["probe"]
    assert tasks["transcode"].idempotency_key == f"media:{material.id}:transcode"
    assert spec.material_id == material.id and spec.template == "media"

    # Submitting it twice while the first run is active: the same run.
    first = await app.submit_for_material(material, "transcode_mp4")
    second = await app.submit_for_material(material, "transcode_mp4")
    assert (second.run_id, second.deduplicated) == (first.run_id, True)
    # Another template for the same material is another run.
    other = await app.submit_for_material(material, "extract_audio")
    assert other.run_id != first.run_id and not other.deduplicated


async def test_templates_refuse_the_wrong_kind_of_material(app: Fredica, tmp_path: Path) -> None:
    f = write(tmp_path / "a.mp4", b"m")
    (local,) = (await app.import_items([str(f)])).added
    (url,) = (await app.import_items(["http://127.0.0.1:9/a.mp4"])).added
    with pytest.raises(TemplateError, match="downloads a URL"):
        app.spec_for_material(local, "download_transcode")
    # A URL not downloaded yet, with a template for files: it is downloaded first.
    first = app.spec_for_material(url, "transcode_mp4")
    assert [t.key for t in first.tasks] == ["download", "transcode"]
    assert first.tasks[1].depends_on == ["download"]
    spec = app.spec_for_material(url, "download_transcode")
    download = spec.tasks[0]
    assert download.payload["url"] == "http://127.0.0.1:9/a.mp4"
    assert download.payload["output"] == url.local_path
    assert spec.tasks[1].payload["input"] == url.local_path
    with pytest.raises(SpecError, match="runs on a material"):
        await app.submit({"template": "transcode_mp4"})
    with pytest.raises(SpecError, match="no material"):
        await app.submit({"template": "transcode_mp4", "material_id": "nope"})
    created = await app.submit({"template": "transcode_mp4", "material_id": local.id})
    assert set(created.task_ids) == {"transcode"}


def test_every_builtin_template_validates_against_the_task_types(tmp_path: Path) -> None:
    from fredica_app.jobs import registry
    from workers.spec import prepare_run

    values = {
        "input": "/m/in.mkv",
        "output_dir": "/m/out",
        "stem": "in",
        "url": "http://h/a",
        "subtitles": "/m/in.srt",
    }
    for template in BUILTIN.values():
        # A required parameter is given as a user must (``--param lang=fr``).
        given = {p.name: "fr" for p in template.params if template.required(p)}
        params = template.bind(given)
        spec = template.expand(material_id="m1", values=values, idempotent=True, params=params)
        prepared = prepare_run(spec, registry())
        optional = {key for p in template.params for key in p.adds}
        assert len(prepared.tasks) == len(template.tasks) - len(optional)
    with pytest.raises(TemplateError, match=r"needs a value for \{input\}"):
        get_template("transcode_mp4").expand(values={})


def test_what_a_template_runs_on_is_derived_from_its_payloads() -> None:
    """A template runs on a source exactly when its payloads name a placeholder; a template
    whose declared source disagrees with its payloads is refused as data."""
    from pydantic import ValidationError

    from workers.spec import TaskSpec

    assert {n for n, t in BUILTIN.items() if not t.needs_source} == {"diagnostic", "noop_chain"}
    probe = TaskSpec(key="p", type="PROBE", payload={"input": "{input}"})
    noop = TaskSpec(key="n", type="NOOP")
    with pytest.raises(ValidationError, match="name placeholders"):
        Template(name="x", description="", tasks=[probe])  # source "none"
    with pytest.raises(ValidationError, match="name no placeholder"):
        Template(name="x", description="", tasks=[noop], source="file")
    assert Template(name="x", description="", tasks=[probe], source="file").needs_source
    get_template("diagnostic").check_sources([])
    get_template("transcode_mp4").check_sources(["a.mkv", "https://h/a.mp4"])
    get_template("download_transcode").check_sources(["https://h/a.mp4"])
    with pytest.raises(TemplateError, match=r"'diagnostic' takes no media file or URL, but"):
        get_template("diagnostic").check_sources(["a.mkv"])
    with pytest.raises(TemplateError, match=r"'media' needs a media file or an http\(s\) URL"):
        get_template("media").check_sources([])
    with pytest.raises(TemplateError, match=r"a\.mkv is a local file"):
        get_template("download_transcode").check_sources(["https://h/a.mp4", "a.mkv"])


async def test_a_template_that_takes_no_source_is_not_attached_to_a_material(
    app: Fredica, tmp_path: Path
) -> None:
    f = write(tmp_path / "a.mp4", b"m")
    (material,) = (await app.import_items([str(f)])).added
    with pytest.raises(TemplateError, match="'diagnostic' takes no media file or URL"):
        await app.submit_for_material(material, "diagnostic")
    assert await app.store.list_runs() == []


async def test_probe_result_fills_the_material(app: Fredica, tmp_path: Path) -> None:
    f = write(tmp_path / "a.mp4", b"m")
    (material,) = (await app.import_items([str(f)])).added
    probe = {
        "duration": 9.96,
        "size": 12345,
        "kind": "video",
        "format": "matroska,webm",
        "subtitles": 1,
        "streams": [{"index": 0, "type": "video", "codec": "h264"}],
    }
    app.library.update_from_probe(material.id, probe)
    filled = app.library.get(material.id)
    assert filled is not None
    assert (filled.duration, filled.size, filled.kind) == (9.96, 12345, "video")
    assert filled.meta["streams"][0]["codec"] == "h264"
    app.library.update_from_probe("missing", probe)  # a material deleted meanwhile: no error


def test_cli_add_and_materials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    f = write(tmp_path / "clip.mp4", b"m" * 10)
    code = main(["--data-dir", str(data), "add", str(f), "--template", "transcode_mp4", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (entry,) = json.loads(out)
    assert entry["material"]["title"] == "clip" and entry["new_material"] is True
    assert set(entry["task_ids"]) == {"transcode"} and not entry["deduplicated"]
    code = main(["--data-dir", str(data), "add", str(f), "--template", "transcode_mp4", "--json"])
    (again,) = json.loads(capsys.readouterr()[0])
    assert again["run_id"] == entry["run_id"] and again["deduplicated"] is True
    assert again["new_material"] is False

    assert main(["--data-dir", str(data), "materials", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr()[0])
    assert listed["id"] == entry["material"]["id"] and listed["source"] == str(f.resolve())

    code = main(["--data-dir", str(data), "add", str(f), "--template", "nope"])
    assert code == 1 and "unknown template 'nope'" in capsys.readouterr()[1]
    code = main(["--data-dir", str(data), "add", str(tmp_path / "missing"), "--template", "media"])
    assert code == 1 and "no such file or folder" in capsys.readouterr()[1]
