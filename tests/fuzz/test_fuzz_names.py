"""File names of any bytes but ``/`` and NUL — not UTF-8, control characters, newlines, escape
sequences, look-alikes — brought into a real library with ``fredica add``, listed by the
line-oriented commands, and found by a real watch folder.

Every file is taken in and opens again from what the library stored; every line a command
prints is one line, its controls escaped and its undecodable bytes shown as U+FFFD; the watcher
takes in every file and goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import random
import re
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fredica_app.cli import main
from fredica_app.library.fingerprint import MEDIA_EXTENSIONS
from fredica_app.library.fspath import from_stored, to_stored
from fredica_app.services import Fredica
from fredica_app.settings import WatchFolder
from fredica_app.views.records import shown
from fredica_app.watching import FolderWatcher, WatchReport
from python_endpoints.text import clean_text
from tests.fuzz.hostile import file_name, fuzz, name_bytes

#: What a terminal line must not hold: C0 and C1 controls.
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")

#: A media file's name: a stem of any bytes (not hidden: a folder's walk skips those) and a
#: media extension, in any case.
media_names = st.builds(
    file_name,
    name_bytes(max_size=60).filter(lambda b: not b.startswith(b".")),
    st.sampled_from(sorted(MEDIA_EXTENSIONS)).map(lambda s: s.upper() if len(s) % 2 else s),
)


def assert_one_line_each(text: str, lines: int) -> list[str]:
    """``text`` is ``lines`` lines, each safe to print: no control, UTF-8 text."""
    found = text.splitlines()
    assert len(found) == lines, text
    for line in found:
        assert not CONTROLS.search(line), line
        line.encode("utf-8")
    return found


@fuzz(300)
@given(stem=name_bytes(max_size=100))
@example(stem=b"caf\xe9")
@example(stem=b"fsbytes:%41")
def test_a_name_is_stored_losslessly_and_shown_on_one_line(stem: bytes) -> None:
    """A path's name as the library stores it reads back as the same name (the same bytes),
    and as a person is shown it: one line, no control, what is not UTF-8 as U+FFFD."""
    path = "/media/" + os.fsdecode(stem)
    stored = to_stored(path)
    stored.encode("utf-8")  # SQLite takes it
    assert from_stored(stored) == path and os.fsencode(from_stored(stored)) == b"/media/" + stem
    line = shown(path)
    assert not CONTROLS.search(line) and line == shown(line)
    line.encode("utf-8")
    if not CONTROLS.search(path) and clean_text(path) == path:
        assert line == path  # a plain name is shown as it is


def fredica(data_dir: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--data-dir", str(data_dir), *args])
    return code, out.getvalue(), err.getvalue()


def fill(folder: Path, names: list[str]) -> list[Path]:
    """A file of its own bytes for each name (no two alike: the library would take a copy
    of the same bytes as the same material)."""
    folder.mkdir(parents=True)
    paths = []
    for n, name in enumerate(names):
        path = folder / name
        path.write_bytes(random.Random(n).randbytes(2000))
        paths.append(path)
    return paths


@fuzz(4)
@given(names=st.lists(media_names, min_size=12, max_size=12, unique_by=os.fsencode))
def test_add_lists_and_opens_every_file_whatever_its_name(
    names: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``fredica add FOLDER`` and ``fredica add FILE…``: every file gets a material and a run;
    ``add``, ``materials`` and ``runs`` print one line per row; ``materials --json`` is JSON
    whose paths read back as the files; each material's path opens its file."""
    root = tmp_path_factory.mktemp("names")
    files = fill(root / "media", names[:8])
    files += fill(root / "more", names[8:])
    data = root / "data"
    code, out, err = fredica(data, "add", str(root / "media"), "--template", "transcode_mp4")
    assert code == 0, err
    assert_one_line_each(out, 8)
    code, out, err = fredica(data, "add", *map(str, files[8:]), "--template", "extract_audio")
    assert code == 0, err
    assert_one_line_each(out, 4)
    code, out, _ = fredica(data, "materials")
    assert_one_line_each(out, 1 + len(files))
    for path in files:  # its row: the path with U+FFFD for bytes not UTF-8, controls escaped
        assert shown(str(path)) in out
        if clean_text(path.name) != path.name:
            assert "\ufffd" in shown(path.name)
    code, out, _ = fredica(data, "runs")
    assert_one_line_each(out, 1 + len(files))
    code, out, _ = fredica(data, "materials", "--json")
    listed = {m["local_path"]: m for m in json.loads(out)}
    assert set(listed) == {str(f) for f in files}
    for path in files:
        assert Path(listed[str(path)]["local_path"]).read_bytes() == path.read_bytes()


@pytest.mark.parametrize("command", ["run", "cancel", "retry", "remove"])
def test_an_id_argument_that_is_not_utf8_is_one_error_line(command: str, tmp_path: Path) -> None:
    """An id typed with bytes that are not UTF-8 (a paste gone wrong) names no run or task:
    one error line, as any unknown id."""
    code, _, err = fredica(tmp_path / "data", command, os.fsdecode(b"\xff\x01"))
    assert code == 1 and "unexpected" not in err and err.count("\n") == 1, err


@fuzz(2)
@given(names=st.lists(media_names, min_size=10, max_size=10, unique_by=os.fsencode))
def test_a_watch_folder_full_of_hostile_names_is_taken_in_and_the_watcher_goes_on(
    names: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A watch folder holding files with these names from the start, and more written while
    it runs: each is submitted once, the watcher never stops on one (no restart), and a
    plain file written last is submitted too."""
    root = tmp_path_factory.mktemp("watch")
    folder = root / "incoming"
    fill(folder, names[:6])
    asyncio.run(_watch(root / "data", folder, names[:6], names[6:]))


def write_later(folder: Path, names: list[str]) -> None:
    for n, name in enumerate([*names, "plain.mkv"]):
        (folder / name).write_bytes(random.Random(100 + n).randbytes(2000))


async def _watch(data: Path, folder: Path, first: list[str], later: list[str]) -> None:
    expected = {folder / name for name in [*first, *later, "plain.mkv"]}
    reports: list[WatchReport] = []
    all_in = asyncio.Event()

    def on_report(report: WatchReport) -> None:
        reports.append(report)
        if {r.path for r in reports if r.kind == "submitted"} == expected:
            all_in.set()

    app = Fredica.open(data, thorough=False)
    watch = WatchFolder.model_validate({"folder": folder, "template": "transcode_mp4"})
    watcher = FolderWatcher(app, [watch], 0.5, rescan=3600.0, on_report=on_report)
    try:
        watcher.start()
        await asyncio.to_thread(write_later, folder, later)
        await asyncio.wait_for(all_in.wait(), 60)
        assert watcher.restarts == 0
        assert [r for r in reports if r.kind == "problem"] == []
        submitted = [r for r in reports if r.kind == "submitted"]
        assert len(submitted) == len(expected)  # each once
        assert len(await app.store.list_runs()) == len(expected)
        for report in reports:
            assert not CONTROLS.search(shown(report.message))
    finally:
        await watcher.stop()
        await app.close()
