"""The library page over a real application host: media dropped on the window or chosen in a
dialog end up in the library and in the table; a template started on a selection makes one
run per material, and the outputs column follows them to the end; a removal keeps the outputs
unless told; bad inputs say why and add nothing. Then the parts alone: the table model under
Qt's model tester, the dialogs, the context menu, what the page remembers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication
from PySide6.QtWidgets import QComboBox, QDialog, QFileDialog, QLineEdit

from fredica_app.gui import library as library_module
from fredica_app.gui.feed import Feed
from fredica_app.gui.host import AppHost
from fredica_app.gui.library import LibraryPage, MessageLine
from fredica_app.gui.library_dialogs import (
    RemoveDialog,
    TemplateDialog,
    UrlDialog,
    media_templates,
)
from fredica_app.gui.library_model import MATERIAL_ROLE, SORT_ROLE, LibraryModel
from fredica_app.gui.persist import ViewState
from fredica_app.gui.window import MainWindow
from fredica_app.library.importer import material_dir
from fredica_app.library.records import MaterialRecord
from fredica_app.views.library_view import OutputBoard
from tests.gui.factory import make_run
from tests.gui.hosting import call
from tests.support.clips import SampleCache
from workers.changes import Change, Snapshot, Tombstone
from workers.states import RunStatus

WAIT = 30_000
DISPLAY = Qt.ItemDataRole.DisplayRole


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleCache:
    return SampleCache(tmp_path_factory.mktemp("samples"))


@pytest.fixture
def clips(samples: SampleCache, tmp_path: Path) -> list[Path]:
    """Two different two-second clips of the test's own (a removal must not touch them)."""
    return [
        samples.copy(tmp_path / "media", "mkv", 2.0),
        samples.copy(tmp_path / "media", "mp4", 2.0),
    ]


@pytest.fixture
def window(qtbot: Any, app_host: AppHost, data_dir: Path) -> Iterator[MainWindow]:
    win = MainWindow(app_host, data_dir)
    qtbot.addWidget(win)
    yield win
    win.retire()  # before the host stops: no quit question, the feed stopped first


def stored(host: AppHost) -> list[MaterialRecord]:
    return call(host, lambda app: asyncio.to_thread(app.library.list))


def rows(page: LibraryPage) -> int:
    return page.model.rowCount()


def cell(page: LibraryPage, material_id: str, column: int) -> str:
    row = page.model.row_of(material_id)
    assert row is not None
    return str(page.model.index(row, column).data(DISPLAY))


def wait_message(qtbot: Any, page: LibraryPage, part: str) -> str:
    qtbot.waitUntil(lambda: part in page.message.text(), timeout=WAIT)
    return page.message.text()


def drop(window: MainWindow, paths: list[Path]) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    event = QDropEvent(
        QPointF(20, 20),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    window.dropEvent(event)


def add(qtbot: Any, window: MainWindow, paths: list[Path]) -> list[MaterialRecord]:
    page = window.library
    before = rows(page)
    page.import_items([str(p) for p in paths])
    qtbot.waitUntil(lambda: rows(page) == before + len(paths), timeout=WAIT)
    return page.model.materials[before:]


# --- adding media ----------------------------------------------------------------------------


def test_files_dropped_on_the_window_are_added(
    qtbot: Any, window: MainWindow, app_host: AppHost, clips: list[Path]
) -> None:
    page = window.library
    qtbot.waitUntil(lambda: page._loading is False, timeout=WAIT)
    assert page.stack.currentWidget() is page.hint  # empty: the hint, not an empty table
    window.nav.setCurrentRow(window.QUEUE)

    drop(window, clips)

    assert window.nav.currentRow() == window.LIBRARY  # the drop shows the library
    assert wait_message(qtbot, page, "added") == "2 material(s) added"
    assert page.message.level == MessageLine.INFO
    qtbot.waitUntil(lambda: rows(page) == 2, timeout=WAIT)
    assert page.stack.currentWidget() is page.table
    assert sorted(m.source for m in stored(app_host)) == sorted(str(c) for c in clips)
    materials = page.model.materials
    assert [cell(page, m.id, LibraryModel.TITLE) for m in materials] == [c.stem for c in clips]
    assert [cell(page, m.id, LibraryModel.KIND) for m in materials] == ["video", "video"]
    assert all(cell(page, m.id, LibraryModel.SIZE).endswith("KB") for m in materials)
    # What was added is selected, ready for a template.
    assert [m.id for m in page.selected_materials()] == [m.id for m in materials]

    drop(window, clips[:1])  # again: the library knows it
    assert wait_message(qtbot, page, "already") == "1 already in the library"
    assert len(stored(app_host)) == 2


def test_files_and_folders_are_added_through_the_dialogs(
    qtbot: Any,
    window: MainWindow,
    app_host: AppHost,
    clips: list[Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = window.library
    monkeypatch.setattr(
        QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(clips[0])], "Media files")
    )
    window.library_call("add_files_dialog")()  # the File menu's "Add files…"
    assert wait_message(qtbot, page, "added") == "1 material(s) added"
    qtbot.waitUntil(lambda: rows(page) == 1, timeout=WAIT)

    folder = tmp_path / "folder"
    (folder / "inner").mkdir(parents=True)
    clips[1].rename(folder / "inner" / clips[1].name)
    (folder / "notes.txt").write_text("not media")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(folder))
    page.add_folder_action.trigger()
    text = wait_message(qtbot, page, "added")
    assert text == "1 material(s) added · 1 file(s) skipped: not media"
    qtbot.waitUntil(lambda: rows(page) == 2, timeout=WAIT)
    assert len(stored(app_host)) == 2

    # A dialog cancelled adds nothing and says nothing.
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([], ""))
    page.message.hide()
    page.add_files_action.trigger()
    assert page.message.text() == ""


def test_bad_inputs_say_why_and_add_nothing(
    qtbot: Any,
    window: MainWindow,
    app_host: AppHost,
    samples: SampleCache,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = window.library
    missing = tmp_path / "gone.mkv"
    page.import_items([str(missing)])
    assert wait_message(qtbot, page, "gone.mkv") == "gone.mkv: no such file or folder"
    assert page.message.level == MessageLine.ERROR

    text_file = samples.copy(tmp_path / "t", "text", 1.0)
    drop(window, [text_file])
    assert wait_message(qtbot, page, text_file.name) == f"{text_file.name}: not a media file"
    assert page.message.level == MessageLine.ERROR

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.md").write_text("nothing to see")
    page.import_items([str(empty)])
    text = wait_message(qtbot, page, "no media")
    assert text == "1 file(s) skipped: not media · no media in empty"

    # The web address box: what is not an http(s) address is refused there.
    monkeypatch.setattr(page, "ask_urls", lambda prefill: ["ftp://host/a.mp4", "hello"])
    page.paste_urls()
    text = wait_message(qtbot, page, "hello")
    assert text == (
        "ftp://host/a.mp4: not a web address (http or https) · "
        "hello: not a web address (http or https)"
    )
    assert stored(app_host) == [] and rows(page) == 0


def test_web_addresses_on_the_clipboard_are_offered_and_added(
    qtbot: Any, window: MainWindow, app_host: AppHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = window.library
    QGuiApplication.clipboard().setText("watch https://example.org/talk.mp4, it is good")
    offered: list[list[str]] = []

    def ask_urls(prefill: list[str]) -> list[str]:
        offered.append(list(prefill))
        return list(prefill)

    monkeypatch.setattr(page, "ask_urls", ask_urls)
    window.library_call("paste_urls")()
    assert offered == [["https://example.org/talk.mp4"]]
    assert wait_message(qtbot, page, "added") == "1 material(s) added"
    qtbot.waitUntil(lambda: rows(page) == 1, timeout=WAIT)
    (material,) = stored(app_host)
    assert material.source == "https://example.org/talk.mp4"
    assert cell(page, material.id, LibraryModel.TITLE) == "talk.mp4 (example.org)"

    # Nothing downloaded yet: no folder to show.
    page.select_materials([material.id])
    page.open_folder()
    assert wait_message(qtbot, page, "Nothing") == (
        "Nothing to open yet: it has no folder until it is downloaded."
    )
    assert page.message.level == MessageLine.WARNING

    monkeypatch.setattr(page, "ask_urls", lambda prefill: None)  # cancelled
    page.message.hide()
    page.paste_urls()
    assert page.message.text() == ""


# --- templates, folders, removal -------------------------------------------------------------


def test_a_template_started_on_two_materials_makes_two_runs_that_the_table_follows(
    qtbot: Any,
    window: MainWindow,
    app_host: AppHost,
    clips: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = window.library
    materials = add(qtbot, window, clips)
    page.table.setFocus()
    page.table.selectAll()
    asked: list[list[str]] = []

    def ask_template(chosen: list[MaterialRecord]) -> str:
        asked.append([m.id for m in chosen])
        return "transcode_mp4"

    monkeypatch.setattr(page, "ask_template", ask_template)
    qtbot.keyClick(page.table, Qt.Key.Key_Return)  # Enter: start a template
    assert asked == [[m.id for m in materials]]
    assert wait_message(qtbot, page, "started") == "2 run(s) started"

    runs = call(app_host, lambda app: app.store.list_runs(None))
    assert sorted(r.material_id or "" for r in runs) == sorted(m.id for m in materials)
    assert {r.template for r in runs} == {"transcode_mp4"}

    # The feed brings the runs to the outputs column, to the end; the probe fills the duration.
    for m in materials:
        qtbot.waitUntil(
            lambda m=m: cell(page, m.id, LibraryModel.OUTPUTS) == "Make an MP4: done",
            timeout=60_000,
        )
        qtbot.waitUntil(lambda m=m: cell(page, m.id, LibraryModel.DURATION) == "0:02", timeout=WAIT)
    for m in materials:
        assert (material_dir(call(app_host, _library_dir), m) / f"{m.title}.mp4").is_file()

    # Started again while nothing is active: new runs. On a local file, a template that
    # downloads a web address says why, per material.
    monkeypatch.setattr(page, "ask_template", lambda chosen: "download_transcode")
    page.start_action.trigger()
    text = wait_message(qtbot, page, "downloads a URL")
    assert text.startswith(f"{materials[0].title}: template 'download_transcode' downloads")
    assert page.message.level == MessageLine.ERROR


async def _library_dir(app: Any) -> Path:
    return Path(app.library_dir)


def test_open_folder_shows_the_output_folder_or_else_the_files_folder(
    qtbot: Any,
    window: MainWindow,
    app_host: AppHost,
    clips: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = window.library
    opened: list[str] = []

    class Desktop:
        @staticmethod
        def openUrl(url: QUrl) -> bool:
            opened.append(url.toLocalFile())
            return True

    monkeypatch.setattr(library_module, "QDesktopServices", Desktop)
    (material,) = add(qtbot, window, clips[:1])
    page.select_materials([material.id])
    row = page.proxy.mapFromSource(page.model.index(page.model.row_of(material.id) or 0, 0))
    page.table.doubleClicked.emit(row)
    qtbot.waitUntil(lambda: len(opened) == 1, timeout=WAIT)
    assert Path(opened[0]) == clips[0].parent

    outputs = material_dir(call(app_host, _library_dir), material)
    outputs.mkdir(parents=True)
    page.open_action.trigger()
    qtbot.waitUntil(lambda: len(opened) == 2, timeout=WAIT)
    assert Path(opened[1]) == outputs


def test_remove_keeps_the_outputs_unless_ticked(
    qtbot: Any,
    window: MainWindow,
    app_host: AppHost,
    clips: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = window.library
    materials = add(qtbot, window, clips)
    library_dir = call(app_host, _library_dir)
    folders = [material_dir(library_dir, m) for m in materials]
    for folder, m in zip(folders, materials, strict=True):
        folder.mkdir(parents=True)
        (folder / f"{m.title}.mp4").write_bytes(b"made of it")

    asked: list[list[str]] = []

    def keep(chosen: list[MaterialRecord]) -> tuple[bool, bool]:
        asked.append([m.title for m in chosen])
        return True, False

    monkeypatch.setattr(page, "ask_remove", keep)
    page.select_materials([materials[0].id])
    page.table.setFocus()
    qtbot.keyClick(page.table, Qt.Key.Key_Delete)  # Delete: remove
    assert asked == [[materials[0].title]]
    text = wait_message(qtbot, page, "Removed")
    assert text == f"Removed “{materials[0].title}” · its outputs are kept in {folders[0]}"
    qtbot.waitUntil(lambda: rows(page) == 1, timeout=WAIT)
    assert (folders[0] / f"{materials[0].title}.mp4").is_file()

    monkeypatch.setattr(page, "ask_remove", lambda chosen: (True, True))
    page.select_materials([materials[1].id])
    page.remove_action.trigger()
    text = wait_message(qtbot, page, "Removed")
    assert text == f"Removed “{materials[1].title}” · 1 output file(s) deleted"
    qtbot.waitUntil(lambda: rows(page) == 0, timeout=WAIT)
    assert not folders[1].exists()
    assert all(c.is_file() for c in clips)  # the user's own files stay
    assert stored(app_host) == []
    assert page.stack.currentWidget() is page.hint

    # Declined: nothing happens.
    (material,) = add(qtbot, window, clips[:1])
    monkeypatch.setattr(page, "ask_remove", lambda chosen: (False, False))
    page.select_materials([material.id])
    page.message.hide()
    page.remove_action.trigger()
    assert page.message.text() == "" and len(stored(app_host)) == 1


def test_what_is_active_is_started_once_and_not_removed(
    qtbot: Any,
    window: MainWindow,
    app_host: AppHost,
    clips: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = window.library
    call(app_host, lambda app: app.control.pause_queue())  # runs stay queued
    busy, idle = add(qtbot, window, clips)
    monkeypatch.setattr(page, "ask_template", lambda chosen: "transcode_mp4")
    page.select_materials([busy.id])
    page.start_template()
    assert wait_message(qtbot, page, "started") == "1 run(s) started"
    qtbot.waitUntil(
        lambda: cell(page, busy.id, LibraryModel.OUTPUTS) == "Make an MP4: queued", timeout=WAIT
    )
    page.start_template()  # the same template while its run is active: that run
    assert wait_message(qtbot, page, "already") == "1 already running"

    monkeypatch.setattr(page, "ask_remove", lambda chosen: (True, True))
    page.table.selectAll()
    page.remove_selected()
    text = wait_message(qtbot, page, "Removed")
    assert text.startswith(
        f"Removed “{idle.title}” · {busy.title}: material {busy.title!r} has 1 active run(s)"
    )
    assert page.message.level == MessageLine.WARNING
    qtbot.waitUntil(lambda: rows(page) == 1, timeout=WAIT)
    assert [m.id for m in stored(app_host)] == [busy.id]

    (run,) = call(app_host, lambda app: app.store.list_runs(None))
    call(app_host, lambda app: app.control.cancel(run.id))
    qtbot.waitUntil(
        lambda: cell(page, busy.id, LibraryModel.OUTPUTS) == "Make an MP4: cancelled",
        timeout=WAIT,
    )


# --- the parts alone ---------------------------------------------------------------------------


def material(n: int, **fields: Any) -> MaterialRecord:
    base: dict[str, Any] = {
        "id": f"m{n}",
        "source": f"/media/clip{n}.mkv",
        "title": f"clip {n}",
        "local_path": f"/media/clip{n}.mkv",
        "kind": "video",
        "size": 1000 * n,
        "duration": None,
        "fingerprint": None,
        "meta": {},
        "created_at": float(n),
    }
    base.update(fields)
    return MaterialRecord(**base)


def test_the_model_passes_the_model_tester(qtbot: Any, qtmodeltester: Any) -> None:
    board = OutputBoard()
    model = LibraryModel(board)
    model.set_materials([material(n) for n in range(6)])
    qtmodeltester.check(model)  # stays attached: it checks every signal below
    resets: list[int] = []
    model.modelReset.connect(lambda: resets.append(1))

    # Some go, one is probed, two arrive: removals, a change and appends, no reset.
    fresh = [material(0), material(2, duration=65.0), material(5), material(7), material(8)]
    model.set_materials(fresh)
    assert [m.id for m in model.materials] == ["m0", "m2", "m5", "m7", "m8"]
    assert model.index(1, LibraryModel.DURATION).data(DISPLAY) == "1:05"
    assert model.index(1, LibraryModel.DURATION).data(SORT_ROLE) == 65.0
    assert model.index(0, LibraryModel.DURATION).data(SORT_ROLE) == -1.0
    assert model.index(0, LibraryModel.TITLE).data(SORT_ROLE) == "clip 0"
    assert model.index(0, LibraryModel.TITLE).data(MATERIAL_ROLE) == material(0)
    assert not resets

    board.load([make_run(1, material_id="m2", status=RunStatus.FAILED, template="full")], [])
    model.outputs_changed()
    assert model.index(1, LibraryModel.OUTPUTS).data(DISPLAY) == "Everything: failed"
    assert model.index(1, LibraryModel.OUTPUTS).data(Qt.ItemDataRole.ForegroundRole) is not None
    assert "run-0001"[:8] in model.index(1, LibraryModel.OUTPUTS).data(Qt.ItemDataRole.ToolTipRole)
    touched = board.apply(
        [
            Change(1, make_run(2, material_id="m7", status=RunStatus.COMPLETED)),
            Change(2, Tombstone("run", "run-0001", "run-0001", 0.0)),
        ]
    )
    model.outputs_changed(touched | {"not shown"})
    assert model.index(1, LibraryModel.OUTPUTS).data(DISPLAY) == ""
    assert model.index(3, LibraryModel.OUTPUTS).data(DISPLAY) == "transcribe: done"

    model.set_materials(list(reversed(fresh)))  # another order: the one reset
    assert resets == [1] and model.materials[0].id == "m8"
    model.set_materials([])
    assert model.rowCount() == 0


def test_the_model_says_what_a_person_needs(qtbot: Any) -> None:
    model = LibraryModel(OutputBoard())
    url = material(
        1, source="https://example.org/x", title="x (example.org)", kind="unknown", size=None
    )
    model.set_materials([material(0, kind="audio", duration=3723.0, size=5 * 1024**2), url])
    header = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(5)]
    assert header == ["Title", "Kind", "Duration", "Size", "Outputs"]
    assert model.headerData(0, Qt.Orientation.Vertical) is None
    right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
    align = Qt.ItemDataRole.TextAlignmentRole
    assert model.headerData(LibraryModel.SIZE, Qt.Orientation.Horizontal, align) == right
    assert model.headerData(0, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole) is None
    first = [model.index(0, c).data(DISPLAY) for c in range(5)]
    assert first == ["clip 0", "audio", "1:02:03", "5.0 MB", ""]
    assert [model.index(1, c).data(DISPLAY) for c in range(4)] == [
        "x (example.org)",
        "unknown",
        "",
        "",
    ]
    assert model.index(1, LibraryModel.SIZE).data(SORT_ROLE) == -1
    assert model.index(1, LibraryModel.TITLE).data(Qt.ItemDataRole.ToolTipRole) == url.source
    assert model.index(1, LibraryModel.KIND).data(Qt.ItemDataRole.ToolTipRole) is None
    assert model.index(0, LibraryModel.OUTPUTS).data(Qt.ItemDataRole.ToolTipRole) is None
    assert model.index(0, LibraryModel.SIZE).data(align) == right
    assert model.index(0, LibraryModel.TITLE).data(align) is None
    for row in (0, 1):
        icon = model.index(row, LibraryModel.TITLE).data(Qt.ItemDataRole.DecorationRole)
        assert not icon.isNull()
    assert model.index(0, LibraryModel.KIND).data(Qt.ItemDataRole.DecorationRole) is None
    assert model.index(0, 0).data(Qt.ItemDataRole.WhatsThisRole) is None


@pytest.fixture
def page(qtbot: Any, data_dir: Path) -> LibraryPage:
    """A page over a host that never starts: for what needs no application."""
    made = LibraryPage(AppHost(data_dir), Feed())
    qtbot.addWidget(made)
    return made


def test_the_template_dialog_lists_what_runs_on_the_selection(qtbot: Any) -> None:
    local = [material(1), material(2)]
    dialog = TemplateDialog(local, current="subtitles")
    qtbot.addWidget(dialog)
    names = [dialog.list.item(n).text() for n in range(dialog.list.count())]
    assert names == [t.name for t in media_templates()]
    assert "diagnostic" not in names and "transcode_mp4" in names
    assert dialog.heading.text() == "Start a template on 2 material(s):"
    assert dialog.chosen() == "subtitles"  # the last one used
    assert "Whisper" in dialog.description.text()
    dialog.select("download_transcode")  # downloads a URL: not for local files
    assert (
        dialog.chosen() is None
        and not dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()
    )
    assert dialog.description.text() == ""
    dialog._on_double_click(dialog.list.currentItem())
    assert dialog.result() != QDialog.DialogCode.Accepted
    dialog.select("thumbnail")
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted and dialog.chosen() == "thumbnail"
    with pytest.raises(KeyError):
        dialog.select("nope")

    url = material(3, source="https://example.org/a.mp4", title="a.mp4 (example.org)")
    one = TemplateDialog([url])
    qtbot.addWidget(one)
    assert one.heading.text() == "Start a template on “a.mp4 (example.org)”:"
    assert one.chosen() == "transcode_mp4"  # the first one
    one.select("download_transcode")
    assert one.chosen() == "download_transcode"
    one._on_double_click(one.list.currentItem())
    assert one.result() == QDialog.DialogCode.Accepted


def test_a_subtitle_file_is_offered_only_the_templates_that_take_one(qtbot: Any) -> None:
    srt = material(4, source="/media/talk.srt", local_path="/media/talk.srt", kind="subtitles")
    dialog = TemplateDialog([srt, material(5)])
    qtbot.addWidget(dialog)
    assert dialog.chosen() == "translate_subtitles"  # the first that can run on both
    enabled = [
        dialog.list.item(i).text()
        for i in range(dialog.list.count())
        if dialog.list.item(i).flags() & Qt.ItemFlag.ItemIsEnabled
    ]
    assert enabled == ["translate_subtitles"]
    dialog.select("transcode_mp4")
    assert dialog.chosen() is None  # disabled, saying why
    item = dialog.list.findItems("transcode_mp4", Qt.MatchFlag.MatchExactly)[0]
    assert item.toolTip() == "Needs a media file: it cannot run on a subtitle file."


def test_the_template_dialog_asks_the_templates_parameters_and_checks_them(qtbot: Any) -> None:
    dialog = TemplateDialog([material(1)], current="transcode_mp4")
    qtbot.addWidget(dialog)
    assert list(dialog.param_fields) == ["profile"]
    profile = dialog.param_fields["profile"]
    assert isinstance(profile, QComboBox)
    assert [profile.itemText(i) for i in range(profile.count())] == [
        "As in the settings", "compatible", "modern", "archive",
    ]  # fmt: skip
    assert dialog.params() == {}  # left as in the settings
    dialog.set_param("profile", "archive")
    assert dialog.params() == {"profile": "archive"}
    dialog.select("thumbnail")  # takes none: no form
    assert dialog.param_fields == {} and dialog.params_box.isHidden()
    dialog.select("subtitles")
    assert list(dialog.param_fields) == ["language", "model", "speakers", "translate_to"]
    shown = {n: f.placeholderText() for n, f in dialog.param_fields.items()}  # type: ignore[union-attr]
    unless = "Not done unless given"
    assert shown == {"language": "As in the settings", "model": "As in the settings",
                     "speakers": unless, "translate_to": unless}  # fmt: skip
    dialog.select("translate_subtitles")  # a required parameter, a yes or no
    lang, bilingual = dialog.param_fields["lang"], dialog.param_fields["bilingual"]
    assert isinstance(lang, QLineEdit) and lang.placeholderText() == "Required"
    assert isinstance(bilingual, QComboBox) and bilingual.itemText(0) == "The job's default"
    dialog.accept()
    assert "needs --param lang=VALUE" in dialog.problem.text()
    dialog.select("subtitles")
    dialog.set_param("language", "French")
    dialog.accept()  # not a language code: said here, and the dialog stays
    assert dialog.result() != QDialog.DialogCode.Accepted
    assert not dialog.problem.isHidden() and "language='French'" in dialog.problem.text()
    dialog.set_param("language", "fr")
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert dialog.params() == {"language": "fr"}


def test_a_template_started_with_a_parameter_runs_with_it(
    qtbot: Any,
    window: MainWindow,
    app_host: AppHost,
    clips: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = window.library
    materials = add(qtbot, window, clips[:1])
    page.select_materials([materials[0].id])
    monkeypatch.setattr(
        page, "ask_template", lambda chosen: ("transcode_mp4", {"profile": "archive"})
    )
    page.start_action.trigger()
    assert wait_message(qtbot, page, "started") == "1 run(s) started"
    [run] = call(app_host, lambda app: app.store.list_runs(None))
    tasks = call(app_host, lambda app: app.store.list_tasks(run.id))
    [transcode] = [t for t in tasks if t.type == "TRANSCODE_MP4"]
    assert transcode.payload["profile"] == "archive"


def test_the_remove_dialog_keeps_the_outputs_unless_ticked(qtbot: Any) -> None:
    dialog = RemoveDialog(["clip 1"])
    qtbot.addWidget(dialog)
    assert dialog.question.text() == "Remove “clip 1” from the library?"
    assert not dialog.delete_outputs.isChecked()
    assert dialog.delete_outputs.text() == "Also delete its outputs"
    dialog.delete_outputs.setChecked(True)
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted

    many = RemoveDialog(["a", "b", "c"])
    qtbot.addWidget(many)
    assert many.question.text() == "Remove 3 material(s) from the library?"
    assert many.delete_outputs.text() == "Also delete their outputs"
    many.reject()
    assert many.result() == QDialog.DialogCode.Rejected


def test_the_url_dialog_takes_one_address_a_line(qtbot: Any) -> None:
    dialog = UrlDialog(["https://a.example/x.mp4", "https://b.example/y"])
    qtbot.addWidget(dialog)
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    assert dialog.lines() == ["https://a.example/x.mp4", "https://b.example/y"]
    assert ok.isEnabled()
    dialog.text.setPlainText("  \n")
    assert dialog.lines() == [] and not ok.isEnabled()
    dialog.text.setPlainText(" https://c.example/z \n\n")
    dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert dialog.lines() == ["https://c.example/z"]


def test_the_page_asks_through_its_dialogs(
    qtbot: Any, page: LibraryPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ask_* methods open the real dialogs (exec replaced: no modal loop)."""
    results = {"exec": QDialog.DialogCode.Accepted}
    monkeypatch.setattr(QDialog, "exec", lambda self: results["exec"])
    assert page.ask_urls(["https://a.example/x"]) == ["https://a.example/x"]
    assert page.ask_template([material(1)]) == ("transcode_mp4", {})  # its parameters: none
    assert page.ask_remove([material(1)]) == (True, False)
    results["exec"] = QDialog.DialogCode.Rejected
    assert page.ask_urls([]) is None
    assert page.ask_template([material(1)]) is None
    assert page.ask_remove([material(1)]) == (False, False)


def test_the_context_menu_and_the_actions_follow_the_selection(page: LibraryPage) -> None:
    page.model.set_materials([material(1), material(2)])
    page._update_state()
    menu = page.context_menu()
    texts = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert texts == [
        "Start template…",
        "Open folder",
        "Remove",
        "Add files…",
        "Add folder…",
        "Add URLs…",
    ]
    assert not page.start_action.isEnabled() and not page.remove_action.isEnabled()
    page.select_materials(["m2", "unknown"])
    assert [m.id for m in page.selected_materials()] == ["m2"]
    assert page.start_action.isEnabled() and page.open_action.isEnabled()
    page.table.clearSelection()
    # Nothing selected: the keys and the actions do nothing.
    page.start_template()
    page.remove_selected()
    page.open_folder()
    assert page.message.text() == ""


def test_reasons_to_read_again_that_keep_coming_still_bring_a_read(
    page: LibraryPage, qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look done every 50 ms (a big library's first looks) asks for a read each time: the
    read comes RELOAD_MS after the first ask, not after the last."""
    reads: list[float] = []
    monkeypatch.setattr(page, "reload", lambda: reads.append(time.monotonic()))
    page._reload_timer.timeout.disconnect()
    page._reload_timer.timeout.connect(page.reload)
    began = time.monotonic()
    for _ in range(20):  # a second of asks
        page.schedule_reload()
        qtbot.wait(50)
    qtbot.waitUntil(lambda: len(reads) >= 2, timeout=3000)
    assert reads[0] - began < 2 * library_module.RELOAD_MS / 1000  # not starved by the asks
    assert len(reads) <= 1000 // library_module.RELOAD_MS + 2  # and still joined together


def test_a_page_whose_host_is_not_open_says_so(page: LibraryPage) -> None:
    page.reload()  # not open: nothing read, nothing said
    assert not page._loading
    page.import_items(["/media/a.mkv"])
    assert page.message.level == MessageLine.ERROR
    assert page.message.text() == "Failed: Fredica is still opening its data; try again shortly"


def test_the_page_follows_the_feed(page: LibraryPage, monkeypatch: pytest.MonkeyPatch) -> None:
    reloads: list[int] = []
    monkeypatch.setattr(page, "schedule_reload", lambda: reloads.append(1))
    page.model.set_materials([material(1)])
    running = make_run(1, material_id="m1", template="subtitles", done_tasks=1, total_tasks=4)
    page.feed.snapshot.emit(Snapshot(runs=[running], tasks=[], cursor=0))
    assert reloads == [1]
    assert cell(page, "m1", LibraryModel.OUTPUTS) == "Subtitles from speech: running 25 %"
    done = make_run(1, material_id="m1", template="subtitles", status=RunStatus.COMPLETED)
    page.feed.changes.emit([Change(1, done)])
    assert cell(page, "m1", LibraryModel.OUTPUTS) == "Subtitles from speech: done"
    assert reloads == [1]  # nothing new of the library itself
    # A run on a material the page does not list (added by the CLI): read again, once.
    other = make_run(2, material_id="m9")
    page.feed.changes.emit([Change(2, other)])
    page.feed.changes.emit([Change(3, other)])
    assert reloads == [1, 1]


def test_the_table_header_is_remembered(qtbot: Any, data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    first = LibraryPage(AppHost(data_dir), Feed())
    qtbot.addWidget(first)
    header = first.table.horizontalHeader()
    header.resizeSection(LibraryModel.TITLE, 411)
    first.table.sortByColumn(LibraryModel.SIZE, Qt.SortOrder.DescendingOrder)
    first._last_template = "subtitles"
    state = ViewState(data_dir)
    first.save_view_state(state)
    state.sync()

    again = LibraryPage(AppHost(data_dir), Feed())
    qtbot.addWidget(again)
    again.restore_view_state(ViewState(data_dir))
    restored = again.table.horizontalHeader()
    assert restored.sectionSize(LibraryModel.TITLE) == 411
    assert restored.sortIndicatorSection() == LibraryModel.SIZE
    assert again._last_template == "subtitles"

    fresh = LibraryPage(AppHost(data_dir / "other"), Feed())
    qtbot.addWidget(fresh)
    fresh.restore_view_state(ViewState(data_dir / "other"))
    assert fresh.table.horizontalHeader().sortIndicatorSection() == -1  # the library's order
    assert fresh._last_template is None
