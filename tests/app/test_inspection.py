"""The first look at each material (:mod:`fredica_app.services.inspection`): the app's real
endpoints server probes real files and draws their poster frames; files that are not media,
missing files, a URL not yet downloaded and a server that cannot be reached."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fredica_app.cli import main
from fredica_app.services import Fredica
from fredica_app.services.inspection import look_at, needs_look, poster_path
from fredica_app.services.removal import remove
from python_endpoints.jobs.avread import open_media
from python_endpoints.jobs.media import ffmpeg_binary
from python_endpoints.jobs.sample import make_sample
from workers.executors.websocket import EndpointsAddress


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Fredica]:
    fredica = Fredica.open(tmp_path / "data")
    yield fredica
    await fredica.close()


async def imported(app: Fredica, path: Path) -> str:
    (material,) = (await app.import_items([str(path)])).added
    assert needs_look(material)
    return material.id


def picture_size(path: Path) -> tuple[int, int]:
    with open_media(path) as container:
        frame = next(container.decode(video=0))
        return frame.width, frame.height


async def test_a_video_gets_its_length_streams_and_a_poster_frame(
    app: Fredica, tmp_path: Path
) -> None:
    clip = make_sample(tmp_path / "media" / "holiday.mkv", 4.0, size=(320, 240))
    material_id = await imported(app, clip)
    look = await look_at(app, app.library.get(material_id))  # type: ignore[arg-type]
    assert look.probed and look.error is None and not look.deferred
    assert look.poster == poster_path(app.paths.posters_dir, material_id)
    assert picture_size(look.poster) == (320, 240)  # one frame, 320 wide, its shape kept
    material = app.library.get(material_id)
    assert material is not None and not needs_look(material)
    assert (material.kind, material.size) == ("video", clip.stat().st_size)
    assert material.duration == pytest.approx(4.0, abs=0.1)
    types = [s["type"] for s in material.meta["streams"]]
    assert types == ["video", "audio", "subtitle"] and material.meta["chapters"] == []
    assert material.meta["look"]["error"] is None
    assert await app.store.list_runs() == []  # no run in the queue for it


async def test_a_sound_file_is_probed_and_gets_no_poster(app: Fredica, tmp_path: Path) -> None:
    song = tmp_path / "song.m4a"
    command = [ffmpeg_binary({}), "-v", "error", "-f", "lavfi", "-i", "sine=d=2", str(song)]
    await asyncio.to_thread(subprocess.run, command, check=True)
    material_id = await imported(app, song)
    look = await look_at(app, app.library.get(material_id))  # type: ignore[arg-type]
    assert look.probed and look.poster is None and look.error is None
    material = app.library.get(material_id)
    assert material is not None and material.kind == "audio"
    assert material.duration == pytest.approx(2.0, abs=0.1)
    assert not poster_path(app.paths.posters_dir, material_id).exists()


async def test_what_is_wrong_with_a_file_is_kept_and_it_is_not_looked_at_again(
    app: Fredica, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.mkv"
    notes.write_text("This is not a media file.\n" * 100)
    gone = make_sample(tmp_path / "gone.mkv", 1.0)
    notes_id, gone_id = await imported(app, notes), await imported(app, gone)
    gone.unlink()
    for material_id, words in ((notes_id, "not a media file"), (gone_id, "does not exist")):
        look = await look_at(app, app.library.get(material_id))  # type: ignore[arg-type]
        assert not look.probed and words in (look.error or "")
        material = app.library.get(material_id)
        assert material is not None and not needs_look(material)
        assert words in material.meta["look"]["error"] and material.duration is None


async def test_a_url_not_yet_downloaded_and_a_server_out_of_reach_keep_nothing(
    app: Fredica, tmp_path: Path
) -> None:
    (url,) = (await app.import_items(["https://example.com/talk.mp4"])).added
    look = await look_at(app, url)
    assert look.deferred and needs_look(app.library.get(url.id))  # type: ignore[arg-type]

    clip_id = await imported(app, make_sample(tmp_path / "a.mkv", 1.0))

    async def nobody() -> EndpointsAddress:
        return EndpointsAddress("127.0.0.1", 9, "token")  # the discard port: refused

    app.endpoints.address = nobody  # type: ignore[method-assign]
    look = await look_at(app, app.library.get(clip_id))  # type: ignore[arg-type]
    assert look.deferred and not look.probed
    assert needs_look(app.library.get(clip_id))  # type: ignore[arg-type]  # tried again later


async def test_removing_a_material_removes_its_poster_and_prune_the_orphans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = Fredica.open(tmp_path / "data")
    first = await imported(app, make_sample(tmp_path / "one.mkv", 1.0))
    second = await imported(app, make_sample(tmp_path / "two.mkv", 1.0))
    for material_id in (first, second):
        assert (await look_at(app, app.library.get(material_id))).poster  # type: ignore[arg-type]
    removal = await remove(app, first)
    assert removal.poster and not poster_path(app.paths.posters_dir, first).exists()
    kept = poster_path(app.paths.posters_dir, second)
    orphan = poster_path(app.paths.posters_dir, "f" * 32)
    orphan.write_bytes(kept.read_bytes())  # a poster whose material went another way
    await app.close()
    data = str(app.paths.data_dir)
    assert await asyncio.to_thread(main, ["--data-dir", data, "prune", "--dry-run"]) == 0
    assert "posters: would remove 1 of materials" in capsys.readouterr().out and orphan.exists()
    assert await asyncio.to_thread(main, ["--data-dir", data, "prune"]) == 0
    assert "posters: removed 1 of materials" in capsys.readouterr().out
    assert not orphan.exists() and kept.exists()
