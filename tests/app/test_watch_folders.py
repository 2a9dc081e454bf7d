"""Watch folders: real files written into real folders, watched by a real
:class:`FolderWatcher` on a real data directory, and ``fredica watch-folders`` in a child
process with its engine.

The in-process tests run no engine: what they check is what is submitted (a run created, its
material, the ``watched_file`` row), not the work itself. Their watchers have no periodic
rescan unless the test is about it (``rescan`` an hour): the file events alone must find the
files.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import psutil
import pytest

from fredica_app.cli import main
from fredica_app.errors import TemplateError
from fredica_app.library.fingerprint import content_fingerprint
from fredica_app.library.watched import WatchedFileRecord, WatchedFiles
from fredica_app.paths import resolve_paths
from fredica_app.services import Fredica
from fredica_app.services.removal import remove
from fredica_app.settings import Settings, WatchFolder, save_settings
from fredica_app.watching import FolderWatcher, WatchReport
from fredica_app.watching import watcher as watcher_module
from fredica_app.watching.watcher import STALE_AFTER
from python_endpoints.jobs.sample import make_sample
from workers.records import RunRecord

EXE = str(Path(sys.executable).parent / "fredica")
SETTLE = 0.5
NO_RESCAN = 3600.0


# --- helpers ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def opened(data: Path) -> AsyncIterator[Fredica]:
    app = Fredica.open(data)
    try:
        yield app
    finally:
        await app.close()


class Watching:
    """A :class:`FolderWatcher` running on the test's loop, and its reports as they came."""

    def __init__(
        self,
        app: Fredica,
        folders: list[WatchFolder],
        *,
        settle: float = SETTLE,
        rescan: float = NO_RESCAN,
        on_report: Callable[[WatchReport], None] | None = None,
    ) -> None:
        self.reports: list[WatchReport] = []
        self._also = on_report
        self.watcher = FolderWatcher(app, folders, settle, rescan=rescan, on_report=self._got)

    def _got(self, report: WatchReport) -> None:
        self.reports.append(report)
        if self._also is not None:
            self._also(report)

    async def __aenter__(self) -> Watching:
        self.watcher.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.watcher.stop()

    def about(self, path: Path, kind: str | None = None) -> list[WatchReport]:
        return [r for r in self.reports if r.path == path and kind in (None, r.kind)]

    async def until(
        self, path: Path, kind: str, *, count: int = 1, within: float = 30.0
    ) -> WatchReport:
        """The ``count``-th report of ``kind`` about ``path``, once it has come."""
        await until(lambda: len(self.about(path, kind)) >= count, f"{kind} {path}", within)
        return self.about(path, kind)[count - 1]


async def until(predicate: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        await asyncio.sleep(0.05)


def content(seed: int, size: int = 300_000) -> bytes:
    return random.Random(seed).randbytes(size)


def rows(app: Fredica) -> list[WatchedFileRecord]:
    return WatchedFiles(app.store.engine).list()


async def runs(app: Fredica) -> list[RunRecord]:
    return await app.store.list_runs(None)


class SlowWriter(threading.Thread):
    """Writes ``data`` to ``path`` in ``chunks`` pieces, ``every`` seconds apart (as a copy
    over a slow network or a recorder does); :attr:`finished` is set once the file is
    complete and closed."""

    def __init__(self, path: Path, data: bytes, *, chunks: int = 10, every: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.path, self.data, self.chunks, self.every = path, data, chunks, every
        self.finished = threading.Event()

    def run(self) -> None:
        step = -(-len(self.data) // self.chunks)
        with self.path.open("wb") as f:
            for i in range(0, len(self.data), step):
                if i:
                    time.sleep(self.every)
                f.write(self.data[i : i + step])
                f.flush()
        self.finished.set()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "incoming"
    path.mkdir()
    return path


def watch(folder: Path, template: str = "transcode_mp4", **kw: object) -> WatchFolder:
    return WatchFolder.model_validate({"folder": folder, "template": template, **kw})


# --- settling, once ---------------------------------------------------------------------------


async def test_a_file_written_slowly_is_submitted_once_after_its_writer_finished(
    tmp_path: Path, folder: Path
) -> None:
    data = content(1, 640_000)
    target = folder / "recording.mkv"
    writer = SlowWriter(target, data, chunks=10, every=0.2)  # ~2 s
    finished_when_reported: list[bool] = []
    async with (
        opened(tmp_path / "data") as app,
        Watching(
            app,
            [watch(folder)],
            settle=1.0,  # well above the writer's pauses, even on a loaded machine
            on_report=lambda r: finished_when_reported.append(writer.finished.is_set()),
        ) as w,
    ):
        writer.start()
        submitted = await w.until(target, "submitted")
        assert finished_when_reported == [True]  # nothing was said while it was written
        (run,) = await runs(app)
        assert submitted.run_id == run.id and run.template == "transcode_mp4"
        assert run.material_id is not None
        material = app.library.get(run.material_id)
        assert material is not None
        assert material.size == len(data) and material.local_path == str(target)
        (row,) = rows(app)
        assert (row.path, row.workflow_run_id, row.material_id) == (
            str(target),
            run.id,
            material.id,
        )
        assert row.content_fingerprint == content_fingerprint(target)
        # Watched a while longer: nothing more.
        await asyncio.sleep(2.0)
        assert len(await runs(app)) == 1 and len(w.about(target, "submitted")) == 1


async def test_a_file_made_while_the_file_events_start_is_found_without_waiting_for_a_rescan(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that appears between the first scan and the moment the file events start has
    no event: the watcher looks once more when they have started, instead of leaving it to
    the next rescan (here: never)."""
    late = folder / "late.mkv"
    start_events = FolderWatcher._start_events

    async def events_start_late(self: FolderWatcher, *args: Any) -> str | None:
        late.write_bytes(content(7))  # after the scan, before the watch is set up
        return await start_events(self, *args)

    monkeypatch.setattr(FolderWatcher, "_start_events", events_start_late)
    async with opened(tmp_path / "data") as app, Watching(app, [watch(folder)]) as w:
        await w.until(late, "submitted", within=20)


async def test_restart_rename_touch_and_copy_submit_nothing_changed_bytes_do(
    tmp_path: Path, folder: Path
) -> None:
    data_dir = tmp_path / "data"
    first = folder / "talk.mkv"
    first.write_bytes(content(2))
    async with opened(data_dir) as app, Watching(app, [watch(folder)]) as w:
        submitted = await w.until(first, "submitted")
    # A restart: a new application and watcher on the same data directory.
    async with opened(data_dir) as app, Watching(app, [watch(folder)]) as w:
        said = await w.until(first, "skipped")
        assert said.message == "already submitted: not submitted again"

        renamed = first.rename(folder / "talk (final).mkv")
        said = await w.until(renamed, "skipped")
        assert "renamed or moved" in said.message and str(first) in said.message
        (row,) = rows(app)
        assert row.path == str(renamed) and row.workflow_run_id == submitted.run_id

        later = time.time() + 60
        os.utime(renamed, (later, later))  # touched: a new mtime, the same bytes
        said = await w.until(renamed, "skipped", count=2)
        assert said.message == "already submitted: not submitted again"

        copy = folder / "copy.mkv"
        shutil.copyfile(renamed, copy)
        said = await w.until(copy, "skipped")
        assert said.message.startswith(f"the same content as {renamed}")

        assert len(await runs(app)) == 1

        renamed.write_bytes(content(3))  # new bytes under the same name
        again = await w.until(renamed, "submitted")
        assert again.run_id != submitted.run_id
        all_runs = await runs(app)
        assert len(all_runs) == 2
        assert len({r.material_id for r in all_runs}) == 2  # a new material for new bytes
        assert sorted(r.workflow_run_id or "" for r in rows(app)) == sorted(
            [submitted.run_id or "", again.run_id or ""]
        )
        assert not w.about(copy, "submitted") and not w.about(first, "submitted")


async def test_patterns_and_recursion(tmp_path: Path, folder: Path) -> None:
    (folder / "sub").mkdir()
    (folder / ".hidden").mkdir()
    names = [
        "top.mkv",
        "LOUD.MKV",
        "top.mp4",  # not the pattern
        "notes.txt",  # not media
        ".dot.mkv",  # hidden
        "half.mkv.part",  # still downloading
        "sub/deep.mkv",  # in a subfolder
        ".hidden/inside.mkv",  # in a hidden subfolder
    ]
    for i, name in enumerate(names):
        (folder / name).write_bytes(content(10 + i, 1000))

    async def submitted(config: WatchFolder) -> set[str]:
        w = FolderWatcher(app, [config], 0.2, rescan=NO_RESCAN)
        await w.scan_once()
        await asyncio.sleep(0.3)  # the settle time passes between two looks
        return {
            r.path.relative_to(folder).as_posix()
            for r in await w.scan_once()
            if r.kind == "submitted"
        }

    async with opened(tmp_path / "data") as app:
        assert await submitted(watch(folder, recursive=False, patterns=["*.mkv"])) == {
            "top.mkv",
            "LOUD.MKV",
        }
        # The same folder and template with its subfolders: only what is new.
        assert await submitted(watch(folder, recursive=True, patterns=["*.MKV"])) == {
            "sub/deep.mkv"
        }
        # No pattern: every media file.
        assert await submitted(watch(folder)) == {"top.mp4"}
        # Another template on the same folder is another watch: each file once more.
        assert await submitted(watch(folder, "extract_audio")) == {
            "top.mkv",
            "LOUD.MKV",
            "top.mp4",
            "sub/deep.mkv",
        }
        assert len(await runs(app)) == 8


async def test_a_download_renamed_a_folder_moved_in_and_links(tmp_path: Path, folder: Path) -> None:
    """What the file events name besides new files: a partial download renamed to its final
    name, a folder moved in whole (the system names the folder, not its files), links."""
    outside = tmp_path / "elsewhere"
    (outside / "batch").mkdir(parents=True)
    (outside / "batch" / "one.mkv").write_bytes(content(90))
    (outside / "linked.mkv").write_bytes(content(91))
    (outside / "dir").mkdir()
    (outside / "dir" / "behind-a-link.mkv").write_bytes(content(92))
    async with opened(tmp_path / "data") as app, Watching(app, [watch(folder)]) as w:
        partial = folder / "movie.mkv.part"
        partial.write_bytes(content(93))
        await asyncio.sleep(SETTLE + 0.3)  # settled under its partial name: still not taken
        movie = partial.rename(folder / "movie.mkv")
        await w.until(movie, "submitted")

        moved = (outside / "batch").rename(folder / "batch")
        await w.until(moved / "one.mkv", "submitted")

        (folder / "link.mkv").symlink_to(outside / "linked.mkv")
        (folder / "linkdir").symlink_to(outside / "dir", target_is_directory=True)
        await w.until(folder / "link.mkv", "submitted")
        await asyncio.sleep(SETTLE + 0.3)
        assert {r.path.name for r in w.reports} == {"movie.mkv", "one.mkv", "link.mkv"}
        assert {r.kind for r in w.reports} == {"submitted"}
        # And a rescan agrees: nothing behind the link to a folder, nothing partial.
        assert [r.kind for r in await w.watcher.scan_once()] == []


# --- Fredica's own folders ----------------------------------------------------------------------


async def test_its_own_folders_inside_a_watch_folder_are_never_submitted(
    tmp_path: Path, folder: Path
) -> None:
    """The data directory and the library (set elsewhere) both inside the watch folder: the
    outputs written there, and anything else in them, are never taken in."""
    data_dir = folder / "fredica-data"
    library = folder / "outputs"
    save_settings(resolve_paths(data_dir).settings_file, Settings(library_dir=library))
    source = folder / "clip.mkv"
    source.write_bytes(content(20))
    async with opened(data_dir) as app, Watching(app, [watch(folder)]) as w:
        submitted = await w.until(source, "submitted")
        (run,) = await runs(app)
        tasks = await app.store.list_tasks(run.id)
        # What its jobs would write: the MP4 in the material's folder under the library.
        mp4 = Path(next(t.payload["output"] for t in tasks if t.type == "TRANSCODE_MP4"))
        assert mp4.parent.parent == library
        await asyncio.to_thread(mp4.write_bytes, content(21))
        for stray in (data_dir / "models" / "m.mp4", data_dir / "cache" / "c.mkv"):
            stray.parent.mkdir(parents=True, exist_ok=True)
            stray.write_bytes(content(22))
        sibling = folder / "next.mkv"  # written after them: once it is in, so would they be
        sibling.write_bytes(content(23))
        await w.until(sibling, "submitted")
        # And a full rescan does not find them either.
        await w.watcher.scan_once()
        await asyncio.sleep(SETTLE + 0.1)
        await w.watcher.scan_once()
        assert {r.path for r in w.reports if r.kind == "submitted"} == {source, sibling}
        assert submitted.run_id == run.id and len(await runs(app)) == 2


async def test_a_watch_folder_inside_its_own_folders_is_refused_with_a_problem(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    inside = data_dir / "library" / "drop"
    inside.mkdir(parents=True)
    (inside / "x.mkv").write_bytes(content(30))
    async with opened(data_dir) as app:
        w = FolderWatcher(app, [watch(inside)], 0.1, rescan=NO_RESCAN)
        (problem,) = await w.scan_once()
        assert (problem.kind, problem.path) == ("problem", inside)
        assert "inside Fredica's own folder" in problem.message
        await asyncio.sleep(0.2)
        assert await w.scan_once() == []  # said once, not at every look
        assert await runs(app) == []
        a_file = tmp_path / "file.mkv"
        a_file.write_bytes(content(31))
        w = FolderWatcher(app, [watch(a_file)], 0.1, rescan=NO_RESCAN)
        (problem,) = await w.scan_once()
        assert problem.kind == "problem" and problem.message.startswith("not a folder")


# --- crashes and two watchers ---------------------------------------------------------------------


async def test_a_file_taken_in_but_never_submitted_is_submitted_at_the_next_start(
    tmp_path: Path, folder: Path
) -> None:
    crashed, busy, changed = (folder / n for n in ("crashed.mkv", "busy.mkv", "changed.mkv"))
    for i, path in enumerate((crashed, busy, changed)):
        path.write_bytes(content(40 + i))
    async with opened(tmp_path / "data") as app:
        store = WatchedFiles(app.store.engine)
        long_ago = time.time() - 2 * STALE_AFTER

        def take(path: Path, when: float, fingerprint: str | None = None) -> None:
            assert store.take_in(
                folder=str(folder),
                template="transcode_mp4",
                content_fingerprint=fingerprint or content_fingerprint(path),
                path=str(path),
                now=when,
            )

        # A watcher took these in, then its process died before it submitted them.
        take(crashed, long_ago)
        take(changed, long_ago, "123-bytes-that-are-gone")  # and the file changed since
        # A watcher that is alive took this in a moment ago: it is submitting it.
        take(busy, time.time())

        w = FolderWatcher(app, [watch(folder)], 0.2, rescan=NO_RESCAN)
        reports = await w.scan_once()
        assert [(r.kind, r.path) for r in reports] == [("submitted", crashed)]
        by_path = {Path(r.path): r for r in rows(app)}
        assert by_path[crashed].workflow_run_id == reports[0].run_id
        assert by_path[busy].workflow_run_id is None
        assert changed not in by_path  # its old bytes are gone: the row was let go

        await asyncio.sleep(0.3)
        reports = await w.scan_once()
        said = {r.path: (r.kind, r.message) for r in reports}
        assert said[crashed] == ("skipped", "already submitted: not submitted again")
        assert said[busy] == ("skipped", "being submitted by another watcher")
        assert said[changed][0] == "submitted"  # what is there now, as any new file
        assert len(await runs(app)) == 2


async def test_a_watcher_killed_after_it_submitted_but_before_it_recorded_runs_nothing_twice(
    tmp_path: Path, folder: Path
) -> None:
    """The chaos run's case: a watcher took a file in, submitted its run, and was killed
    before it recorded the run on the file's row; the run then ran to its end. The next
    watcher takes the row over and finds that run: it records it rather than submitting the
    file again (before: a second run, since the first was no longer active to be found)."""
    path = folder / "film.mkv"
    path.write_bytes(content(60))
    async with opened(tmp_path / "data") as app:
        store = WatchedFiles(app.store.engine)
        taken = store.take_in(
            folder=str(folder),
            template="transcode_mp4",
            content_fingerprint=content_fingerprint(path),
            path=str(path),
            now=time.time() - 2 * STALE_AFTER,
        )
        assert taken is not None
        imported = await app.import_items([str(path)])
        first = await app.submit_for_material(imported.materials[0], "transcode_mp4")
        await app.store.cancel_run(first.run_id)  # it ran to its end (cancelled, here)

        w = FolderWatcher(app, [watch(folder)], 0.2, rescan=NO_RESCAN)
        reports = await w.scan_once()
        assert [(r.kind, r.run_id) for r in reports] == [("submitted", first.run_id)]
        assert [r.id for r in await runs(app)] == [first.run_id]
        (row,) = rows(app)
        assert row.workflow_run_id == first.run_id


async def test_two_watchers_on_one_data_directory_submit_each_file_once(
    tmp_path: Path, folder: Path
) -> None:
    data_dir = tmp_path / "data"
    files = [folder / f"f{i}.mkv" for i in range(4)]
    async with (
        opened(data_dir) as one,
        opened(data_dir) as two,
        Watching(one, [watch(folder)]) as a,
        Watching(two, [watch(folder)]) as b,
    ):
        for i, path in enumerate(files):
            path.write_bytes(content(50 + i))
        for path in files:

            def both_said(path: Path = path) -> bool:
                return bool(a.about(path) and b.about(path))

            await until(both_said, f"both watchers about {path.name}")
        for path in files:
            kinds = sorted(r.kind for r in a.about(path) + b.about(path))
            assert kinds == ["skipped", "submitted"], (path, a.about(path), b.about(path))
        assert len(await runs(one)) == 4
        assert all(r.workflow_run_id for r in rows(one)) and len(rows(one)) == 4


# --- problems -----------------------------------------------------------------------------------


async def test_a_missing_folder_is_reported_once_and_watched_once_it_exists(
    tmp_path: Path,
) -> None:
    later = tmp_path / "not-yet"
    async with opened(tmp_path / "data") as app, Watching(app, [watch(later)], rescan=0.3) as w:
        problem = await w.until(later, "problem")
        assert "does not exist" in problem.message
        assert problem.folder == later and problem.template == "transcode_mp4"
        await asyncio.sleep(1.0)  # several rescans
        assert len(w.about(later, "problem")) == 1
        later.mkdir()
        clip = later / "clip.mkv"
        clip.write_bytes(content(60))
        await w.until(clip, "submitted")


async def test_a_file_that_cannot_be_submitted_is_reported_and_tried_again(
    tmp_path: Path, folder: Path
) -> None:
    """The library folder cannot be made (a file is in its place): the submission fails, the
    watcher says so once and goes on; once the way is clear, the next rescan submits it."""
    data_dir = tmp_path / "data"
    blocked = tmp_path / "library"
    blocked.write_text("not a folder")
    save_settings(resolve_paths(data_dir).settings_file, Settings(library_dir=blocked))
    clip = folder / "clip.mkv"
    clip.write_bytes(content(70))
    async with opened(data_dir) as app, Watching(app, [watch(folder)], rescan=0.3) as w:
        problem = await w.until(clip, "problem")
        assert problem.message.startswith("not submitted: ")
        assert rows(app) == []  # let go: taken in again when tried again
        other = folder / "other.mkv"
        other.write_bytes(content(71))
        await w.until(other, "problem")  # each file says so, the watcher goes on
        await asyncio.sleep(1.0)  # several rescans try again
        assert len(w.about(clip, "problem")) == 1  # and say nothing new
        blocked.unlink()
        await w.until(clip, "submitted")
        await w.until(other, "submitted")
        assert len(await runs(app)) == 2


async def test_a_file_that_vanishes_before_it_is_taken_in_is_reported(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: the file is deleted at the moment the watcher reads its content (as a
    user moving it away at that instant would)."""
    real = watcher_module.content_fingerprint

    def vanishing(path: Path) -> str:
        if path.name.startswith("gone"):
            path.unlink()
        return real(path)

    monkeypatch.setattr(watcher_module, "content_fingerprint", vanishing)
    gone, kept = folder / "gone.mkv", folder / "kept.mkv"
    async with opened(tmp_path / "data") as app, Watching(app, [watch(folder)]) as w:
        gone.write_bytes(content(80))
        said = await w.until(gone, "skipped")
        assert said.message == "gone before it was taken in"
        kept.write_bytes(content(81))
        await w.until(kept, "submitted")
        assert [r.path for r in rows(app)] == [str(kept)]


async def test_a_template_that_cannot_take_a_file_is_refused_at_start(tmp_path: Path) -> None:
    async with opened(tmp_path / "data") as app:
        with pytest.raises(TemplateError, match="unknown template 'nope'"):
            FolderWatcher(app, [watch(tmp_path, "nope")], SETTLE)
        for name in ("noop_chain", "download_transcode"):
            with pytest.raises(TemplateError, match="a watch folder submits each new media"):
                FolderWatcher(app, [watch(tmp_path, name)], SETTLE)


# --- the command ----------------------------------------------------------------------------------


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_says_what_is_wrong_with_its_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    code, _, err = fredica(capsys, data, "watch-folders")
    assert code == 2
    assert "no watch folder is set" in err and "`fredica settings edit`" in err
    assert "`fredica watch-folders DIR --template NAME`" in err

    a_file = tmp_path / "file.mkv"
    a_file.write_bytes(b"x")
    code, _, err = fredica(capsys, data, "watch-folders", str(a_file))
    assert (code, err.strip()) == (
        2,
        f"fredica: error: {a_file}: not a folder (give the folder to watch)",
    )
    code, _, err = fredica(capsys, data, "watch-folders", str(tmp_path / "missing"))
    assert code == 2 and "no such folder" in err

    code, _, err = fredica(capsys, data, "watch-folders", "--template", "media")
    assert code == 2 and "--template go with DIR" in err
    code, _, err = fredica(capsys, data, "watch-folders", str(tmp_path), "--settle", "0")
    assert code == 2 and "--settle must be more than 0" in err
    code, _, err = fredica(capsys, data, "watch-folders", str(tmp_path), "--template", "nope")
    assert code == 1 and "unknown template 'nope'" in err


class Lines:
    """A stream read line by line in a thread (a read never hangs the test)."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._stream = stream
        self._queue: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self._stream:
            self._queue.put(line)

    def close(self) -> None:
        """Once the process has ended: the rest read, the stream closed."""
        self._thread.join(10)
        self._stream.close()

    def wait_for(self, text: str, within: float = 60.0) -> str:
        deadline = time.monotonic() + within
        while True:
            found = [line for line in self.seen if text in line]
            if found:
                return found[0]
            left = deadline - time.monotonic()
            assert left > 0, f"no line with {text!r} in {self.seen}"
            with contextlib.suppress(queue.Empty):
                self.seen.append(self._queue.get(timeout=min(left, 0.5)))


@contextlib.contextmanager
def command(*args: str) -> Iterator[tuple[subprocess.Popen[str], Lines, Lines]]:
    proc = subprocess.Popen(
        [EXE, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    try:
        yield proc, out, err
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        out.close()
        err.close()


async def test_watch_folders_submits_runs_and_stops_on_ctrl_c(tmp_path: Path, folder: Path) -> None:
    """The command in its own process, with its engine; the desktop app's watcher (attached:
    the command holds the engine) watching the same folder at the same time."""
    data = tmp_path / "data"
    clip = make_sample(tmp_path / "clip.mp4", 1.0, kind="mp4", size=(160, 120))
    args = ["--data-dir", str(data), "watch-folders", str(folder), "--template", "thumbnail"]
    with command(*args, "--settle", "0.5") as (proc, out, err):
        err.wait_for(f"watching {folder} → thumbnail (its subfolders too)")
        async with opened(data) as app, Watching(app, [watch(folder, "thumbnail")]) as w:
            target = folder / "clip.mp4"
            writer = SlowWriter(target, clip.read_bytes(), chunks=5, every=0.1)
            writer.start()
            await until(lambda: bool(w.about(target)), "the app's watcher about the clip")
            line = out.wait_for("completed  thumbnail · clip")
            (run,) = await runs(app)
            assert run.status.value == "completed" and run.id in line
            # Submitted once, by one of the two.
            ours = w.about(target, "submitted")
            theirs = [s for s in out.seen if s.startswith("submitted: ")]
            assert len(ours) + len(theirs) == 1
            if theirs:
                assert theirs[0].strip() == f"submitted: {target} → thumbnail (run {run.id})"
        assert run.material_id is not None
        sheets = list((data / "library").glob("clip-*/clip.thumbnails.jpg"))
        assert len(sheets) == 1 and sheets[0].stat().st_size > 0

        children = psutil.Process(proc.pid).children(recursive=True)
        assert children  # its endpoints server (and the job's spare)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, err.seen
        err.wait_for("stopping")
        _, alive = psutil.wait_procs(children, timeout=15)
        assert alive == [], alive
        assert not any("Traceback" in line for line in err.seen)


def test_watch_folders_watches_the_settings_folders_and_stops_on_sigterm(
    tmp_path: Path, folder: Path
) -> None:
    data = tmp_path / "data"
    settings = Settings(
        watch_folders=[
            watch(folder, "extract_audio", recursive=False, patterns=["*.wav"]),
            watch(tmp_path / "gone"),
        ],
        watch_settle_seconds=2,
    )
    save_settings(resolve_paths(data).settings_file, settings)
    with command("--data-dir", str(data), "watch-folders") as (proc, _, err):
        err.wait_for(
            f"watching {folder} → extract_audio (not its subfolders, names matching *.wav); "
            "a file is taken in once unchanged for 2 s"
        )
        line = err.wait_for(f"fredica: warning: {tmp_path / 'gone'}: ")
        assert "does not exist" in line
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, err.seen


# --- hostile names, a watcher that fails ------------------------------------------------------

#: A file name that is not UTF-8 (Latin-1 "café"), and one holding a newline.
LATIN1 = os.fsdecode(b"caf\xe9.mkv")
NEWLINE = "new\nline.mkv"


async def test_a_file_whose_name_is_not_utf8_is_taken_in_and_the_watcher_goes_on(
    tmp_path: Path, folder: Path
) -> None:
    """Before: SQLite refused the surrogate-escaped path, and the watcher died. Now the path is
    stored as the bytes it is (the material's local path opens the file), its title shown with
    U+FFFD, and the files after it are submitted too."""
    latin1, newline, plain = folder / LATIN1, folder / NEWLINE, folder / "plain.mkv"
    async with opened(tmp_path / "data") as app, Watching(app, [watch(folder)]) as w:
        for n, path in enumerate((latin1, newline, plain)):
            path.write_bytes(content(90 + n))
        for path in (latin1, newline, plain):
            await w.until(path, "submitted")
        assert w.watcher.restarts == 0
        assert sorted(r.path for r in rows(app)) == sorted(map(str, (latin1, newline, plain)))
        materials = {m.local_path: m for m in app.library.list()}
        assert set(materials) == {str(latin1), str(newline), str(plain)}
        assert materials[str(latin1)].title == "caf\ufffd"
        opened_again = Path(materials[str(latin1)].local_path or "")
        assert await asyncio.to_thread(opened_again.read_bytes) == content(90)
        assert len(await runs(app)) == 3


async def test_a_watcher_that_stops_on_an_error_is_started_again_and_says_so(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: the first two looks at the folders raise what nothing expected. The
    watcher reports it for its folder, starts again (after 1 s, then 2 s), and then submits."""
    monkeypatch.setattr(watcher_module, "RESTART_FIRST", 0.1)
    real = FolderWatcher._scan_all
    failures = iter([RuntimeError("disk said something odd"), RuntimeError("again")])

    async def failing(self: FolderWatcher, *, events: bool) -> list[WatchReport]:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return await real(self, events=events)

    monkeypatch.setattr(FolderWatcher, "_scan_all", failing)
    clip = folder / "clip.mkv"
    clip.write_bytes(content(95))
    async with opened(tmp_path / "data") as app, Watching(app, [watch(folder)]) as w:
        await w.until(clip, "submitted")
        problems = [r.message for r in w.about(folder, "problem")]
        assert problems == [
            "the watcher stopped on an error (RuntimeError: disk said something odd); it "
            "starts again in 0.1 s",
            "the watcher stopped on an error (RuntimeError: again); it starts again in 0.2 s",
        ]
        assert w.watcher.restarts == 2


def test_add_takes_in_a_folder_with_hostile_names_and_lists_them_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fredica add DIR``: before, the name that is not UTF-8 stopped it half-way (the files
    sorted before it imported, no run at all). Now every file gets its material and its run,
    and ``add``, ``materials`` and ``runs`` print one line per row: U+FFFD for the bytes that
    are not UTF-8, ``\\n`` for the newline."""
    media = tmp_path / "media"
    media.mkdir()
    for n, name in enumerate(("a.mkv", LATIN1, NEWLINE, "z.mkv")):
        (media / name).write_bytes(content(100 + n, 5000))
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "add", str(media), "--template", "transcode_mp4"]) == 0
    added = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[-1] for line in added] == ["a", "caf\ufffd", "new\\nline", "z"]
    assert main(["--data-dir", data, "materials"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 5  # a header and one line each
    assert any(line.rstrip().endswith(f"{media}/caf\ufffd.mkv") for line in listed)
    assert any(line.rstrip().endswith(f"{media}/new\\nline.mkv") for line in listed)
    assert main(["--data-dir", data, "runs"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 5


async def test_a_removed_material_s_file_is_submitted_again_only_once_it_left_and_came_back(
    tmp_path: Path, folder: Path
) -> None:
    """``fredica remove`` of a watched file's material. While the file stays in the folder it
    is not submitted again behind the user's back; moved out and back in, it is a new file and
    is submitted again (before: "already submitted" for ever, its row never pruned)."""
    clip = folder / "clip.mkv"
    clip.write_bytes(content(110))
    async with opened(tmp_path / "data") as app, Watching(app, [watch(folder)], rescan=0.3) as w:
        first = await w.until(clip, "submitted")
        (run,) = await runs(app)
        assert run.id == first.run_id and run.material_id is not None
        await app.control.cancel(run.id)
        await remove(app, run.material_id)
        assert app.library.list() == [] and await runs(app) == []
        await asyncio.sleep(1.0)  # several rescans: the file is still there
        clip.touch()  # and even looked at again
        said = await w.until(clip, "skipped")
        assert said.message.startswith("its material was removed from the library")
        assert await runs(app) == []
        outside = tmp_path / "clip.mkv"
        clip.rename(outside)
        await until(lambda: rows(app) == [], "the row forgotten once the file left")
        outside.rename(clip)
        again = await w.until(clip, "submitted", count=2)
        assert again.run_id != first.run_id
        assert [r.id for r in await runs(app)] == [again.run_id]
