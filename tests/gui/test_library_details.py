"""The library's pictures and details over a real application host: every file brought in is
looked at once (its length, streams and a poster frame, by the real endpoints server) whatever
template it is for; the details pane shows the selected material's streams, chapters and the
files its runs made, each opening its folder; a file that is not media says why."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon

from fredica_app.gui.host import AppHost
from fredica_app.gui.library import LibraryPage
from fredica_app.gui.library_model import PICTURE, LibraryModel
from fredica_app.gui.window import MainWindow
from fredica_app.library.records import MaterialRecord
from python_endpoints.jobs.media import ffmpeg_binary
from tests.gui.hosting import call
from tests.support.clips import SampleCache

WAIT = 60_000
DISPLAY = Qt.ItemDataRole.DisplayRole
DECORATION = Qt.ItemDataRole.DecorationRole


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleCache:
    return SampleCache(tmp_path_factory.mktemp("samples"))


@pytest.fixture
def window(qtbot: Any, app_host: AppHost, data_dir: Path) -> Iterator[MainWindow]:
    win = MainWindow(app_host, data_dir)
    qtbot.addWidget(win)
    win.resize(1280, 800)
    yield win
    win.retire()


def song(folder: Path) -> Path:
    out = folder / "song.m4a"
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [ffmpeg_binary({}), "-v", "error", "-f", "lavfi", "-i", "sine=d=3", str(out)], check=True
    )
    return out


def chaptered(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    meta = folder.parent / "chapters.txt"
    meta.write_text(
        ";FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=Opening\n"
        "[CHAPTER]\nTIMEBASE=1/1000\nSTART=1000\nEND=2000\ntitle=The end\n",
        encoding="utf-8",
    )
    out = folder / "talk.mkv"
    source = ["-f", "lavfi", "-i", "testsrc=d=2:s=320x180", "-i", str(meta)]
    chapters = ["-map_metadata", "1", "-map_chapters", "1"]
    subprocess.run(
        [ffmpeg_binary({}), "-v", "error", *source, *chapters, "-c:v", "mpeg4", str(out)],
        check=True,
    )
    return out


def add(qtbot: Any, page: LibraryPage, paths: list[Path]) -> list[MaterialRecord]:
    before = page.model.rowCount()
    page.import_items([str(p) for p in paths])
    qtbot.waitUntil(lambda: page.model.rowCount() == before + len(paths), timeout=WAIT)
    return page.model.materials[before:]


def current(page: LibraryPage, material_id: str) -> MaterialRecord:
    row = page.model.row_of(material_id)
    assert row is not None
    return page.model.material_at(row)


def looked(page: LibraryPage, material_id: str) -> bool:
    return "look" in current(page, material_id).meta


def cell(page: LibraryPage, material_id: str, column: int) -> str:
    row = page.model.row_of(material_id)
    assert row is not None
    return str(page.model.index(row, column).data(DISPLAY))


def test_files_are_looked_at_once_and_get_their_length_and_picture(
    qtbot: Any, window: MainWindow, app_host: AppHost, tmp_path: Path
) -> None:
    page = window.library
    media = tmp_path / "media"
    talk = chaptered(media)
    notes = media / "notes.mkv"
    notes.write_text("This is not a media file.\n" * 100)
    video, sound, bad = add(qtbot, page, [talk, song(media), notes])
    for m in (video, sound, bad):
        qtbot.waitUntil(lambda m=m: looked(page, m.id), timeout=WAIT)
    # Brought in for no template at all: the length is there, and no run was queued for it.
    assert cell(page, video.id, LibraryModel.DURATION) == "0:02"
    assert cell(page, sound.id, LibraryModel.DURATION) == "0:03"
    assert cell(page, sound.id, LibraryModel.KIND) == "audio"
    assert call(app_host, lambda app: app.store.list_runs(None)) == []
    assert page.looks.done == 3 and page.looks.pending == 0

    # The video's row shows its poster frame; the sound's a symbol on a tile.
    poster = page.model.poster_file(current(page, video.id))
    assert poster is not None and poster.parent.name == "posters"
    assert page.model.poster_file(current(page, sound.id)) is None
    icon = page.model.index(page.model.row_of(video.id) or 0, 0).data(DECORATION)
    assert isinstance(icon, QIcon)
    picture = icon.pixmap(PICTURE).toImage()
    # testsrc's colour bars: the middle row of the tile holds many colours, a symbol two.
    colours = {picture.pixel(x, PICTURE.height() // 2) for x in range(PICTURE.width())}
    assert len(colours) > 5
    assert page.table.iconSize() == PICTURE

    # Reading the library again asks nothing more: each file is looked at once.
    page.reload()
    qtbot.waitUntil(lambda: not page._loading, timeout=WAIT)
    assert page.looks.done == 3 and page.looks.pending == 0


def test_the_details_pane_shows_streams_chapters_and_outputs(
    qtbot: Any,
    window: MainWindow,
    app_host: AppHost,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = window.library
    details = page.details
    opened: list[str] = []
    details.open_url = lambda url: opened.append(url.toLocalFile()) or True  # type: ignore[assignment,func-returns-value]
    talk = chaptered(tmp_path / "media")
    notes = tmp_path / "media" / "notes.mkv"
    notes.write_text("This is not a media file.\n" * 100)
    video, bad = add(qtbot, page, [talk, notes])
    for m in (video, bad):
        qtbot.waitUntil(lambda m=m: looked(page, m.id), timeout=WAIT)
    assert details.empty.text() == "2 materials selected."  # what was added is selected

    page.select_materials([video.id])
    qtbot.waitUntil(lambda: details.material is not None, timeout=WAIT)
    assert details.title.text() == "talk"
    assert details.source.text() == str(talk)
    assert details.facts.text().startswith("video · 0:02 · ") and "matroska" in details.facts.text()
    assert details.streams.text() == "video · mpeg4 · 320x180 · 25 fps"
    assert details.chapters.text() == "1. 0:00 - 0:01 Opening\n2. 0:01 - 0:02 The end"
    assert not details.poster.pixmap().isNull() and details.poster.pixmap().width() == 300
    assert not details.problem_box.isVisibleTo(details)
    qtbot.waitUntil(lambda: details.no_outputs.isVisibleTo(details), timeout=WAIT)

    # A run on it: its files appear under its template, each opening its folder.
    monkeypatch.setattr(page, "ask_template", lambda chosen: "transcode_mp4")
    page.start_action.trigger()
    qtbot.waitUntil(lambda: len(details.output_paths()) == 1, timeout=WAIT)
    (made,) = details.output_paths()
    assert made.endswith("talk.mp4") and Path(made).is_file()
    qtbot.waitUntil(lambda: "Make an MP4 · done" in _rows(page), timeout=WAIT)
    assert not details.no_outputs.isVisibleTo(details)
    assert not details.open_button.isEnabled()  # nothing chosen yet
    details.outputs.setCurrentRow(1)
    assert details.open_button.isEnabled()
    details.open_button.click()
    details.outputs.itemActivated.emit(details.outputs.item(1))  # Enter, a double-click
    assert opened == [str(Path(made).parent)] * 2

    # The file that is not media says why, and shows no stream.
    page.select_materials([bad.id])
    qtbot.waitUntil(lambda: details.material is not None and details.material.id == bad.id)
    assert details.problem_box.isVisibleTo(details)
    assert "not a media file" in details.problem.text()
    assert details.streams.text() == "None found."
    assert not details.poster.isVisibleTo(details) and not details.chapters.isVisibleTo(details)

    page.table.clearSelection()
    assert details.material is None
    assert details.empty.text() == "Select a material to see its streams, chapters and outputs."


def _rows(page: LibraryPage) -> list[str]:
    out = page.details.outputs
    return [out.item(n).text() for n in range(out.count())]


def test_a_removed_material_takes_its_poster_with_it(
    qtbot: Any, window: MainWindow, app_host: AppHost, samples: SampleCache, tmp_path: Path
) -> None:
    page = window.library
    (video,) = add(qtbot, page, [samples.copy(tmp_path / "media", "mkv", 2.0)])
    qtbot.waitUntil(
        lambda: page.model.poster_file(current(page, video.id)) is not None, timeout=WAIT
    )
    poster = page.model.poster_file(current(page, video.id))
    assert poster is not None
    page.select_materials([video.id])
    page.ask_remove = lambda materials: (True, False)  # type: ignore[method-assign]
    page.remove_selected()
    qtbot.waitUntil(lambda: page.model.rowCount() == 0, timeout=WAIT)
    assert not poster.exists()
    assert call(app_host, lambda app: asyncio.to_thread(app.library.list)) == []


def test_the_pane_sits_beside_a_table_that_keeps_most_of_the_width(
    qtbot: Any, window: MainWindow
) -> None:
    page = window.library
    window.nav.setCurrentRow(window.LIBRARY)
    window.show()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: page.details.width() > 0)
    width = page.details.width()
    assert 250 <= width <= 420, width
    assert page.stack.width() > 2 * width


def test_what_is_looked_at_again_and_when(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A look the server could not run waits a minute before it is asked again; a web
    address not downloaded yet is asked again with the next read of the library (its
    download's end brings one); a look that failed outright waits like the first. The
    looks' outcomes here are given; what each means is tested above on real files."""
    from fredica_app.gui import library_looks
    from fredica_app.gui.library_looks import Looks
    from fredica_app.services.inspection import Look

    outcomes: dict[str, Look | Exception] = {}
    asked: list[str] = []

    def call(work: Any, on_done: Any, on_error: Any) -> None:
        material_id = pending[0]
        asked.append(material_id)
        outcome = outcomes[material_id]
        if isinstance(outcome, Exception):
            on_error(outcome)
        else:
            on_done(outcome)

    def material(material_id: str, source: str = "/media/a.mkv") -> MaterialRecord:
        return MaterialRecord(
            material_id, source, material_id, source, "unknown", None, None, None, {}, 0.0
        )

    looks = Looks(call)
    url = material("u", "https://example.com/a.mp4")
    down, broken, fine = material("d"), material("b"), material("f")
    outcomes.update(
        u=Look("u", deferred=True, waiting=True),
        d=Look("d", deferred=True),
        b=RuntimeError("the host stopped"),
        f=Look("f", probed=True),
    )
    done: list[str] = []
    looks.looked.connect(done.append)
    for m in (url, down, broken, fine):
        pending = [m.id]
        looks.want([m])
    assert asked == ["u", "d", "b", "f"] and done == ["f"] and looks.pending == 0
    for m in (url, down, broken):
        pending = [m.id]
        looks.want([m])
    assert asked[4:] == ["u"]  # only the address not yet downloaded is asked again
    now = library_looks.time.monotonic() + library_looks.RETRY_AFTER + 1
    monkeypatch.setattr(library_looks.time, "monotonic", lambda: now)
    for m in (down, broken):
        pending = [m.id]
        looks.want([m])
    assert asked[5:] == ["d", "b"]  # a minute later, the others too


def test_looks_that_fail_at_once_do_not_nest(qtbot: Any) -> None:
    """A host that is closing answers each call with its failure before the call returns:
    the 5,000 materials waiting are each asked once, one after another, not 5,000 calls
    deep (a big library closed during its first looks raised RecursionError)."""
    from fredica_app.gui.library_looks import Looks

    asked: list[int] = []

    def call(work: Any, on_done: Any, on_error: Any) -> None:
        asked.append(len(asked))
        on_error(RuntimeError("not open"))

    looks = Looks(call)
    many = [
        MaterialRecord(f"m{i}", f"/media/{i}.mkv", f"m{i}", f"/media/{i}.mkv", "unknown",
                       None, None, None, {}, 0.0)
        for i in range(5000)
    ]  # fmt: skip
    looks.want(many)
    assert len(asked) == 5000 and looks.pending == 0
    looks.want(many)
    assert len(asked) == 5000  # each waits its minute before it is asked again
