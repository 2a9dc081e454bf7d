"""The run details page: the DAG drawn from records and kept current by the feed (only the
nodes that change repaint, the layout is redone only when tasks come or go), and the selected
task's payload, result, error with its hint, and timeline — first over records pushed through
a feed with a fake host, then through the real host and engine."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QColor, QPalette, QWheelEvent
from PySide6.QtWidgets import QApplication

from fredica_app.gui.details import RunDetailsPage
from fredica_app.gui.details_paint import colours_for
from fredica_app.gui.details_panel import TaskPanel, event_detail
from fredica_app.gui.feed import Feed
from fredica_app.gui.persist import ViewState
from fredica_app.views import error_hints
from fredica_app.views.queue_state import Badge
from tests.gui.factory import make_run, make_task, running
from tests.gui.hosting import call
from workers.changes import Change, Snapshot, Tombstone
from workers.records import EventRecord, RunRecord, TaskRecord
from workers.states import ErrorType, RunStatus, TaskStatus

# --- a host without a database ---------------------------------------------------------------


class FakeStore:
    def __init__(self, run: RunRecord, tasks: list[TaskRecord]) -> None:
        self.run, self.tasks = run, tasks
        self.timeline: dict[str, list[EventRecord]] = {}
        self.event_reads: list[str] = []

    async def get_run(self, run_id: str) -> RunRecord:
        if run_id != self.run.id:
            raise LookupError(f"no run {run_id}")
        return self.run

    async def list_tasks(self, run_id: str) -> list[TaskRecord]:
        return self.tasks

    async def events(self, task_id: str) -> list[EventRecord]:
        self.event_reads.append(task_id)
        return self.timeline.get(task_id, [])


class FakeLibrary:
    """The library's titles by material id (synchronous, as the real store's)."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}

    def titles(self, material_ids: Iterable[str]) -> dict[str, str]:
        return {m: self.known[m] for m in material_ids if m in self.known}


class FakeApp:
    def __init__(self, store: FakeStore) -> None:
        self.store = store
        self.library = FakeLibrary()


class FakeHost:
    """Runs a call's coroutine at once and answers on a later turn of the event loop, as the
    real host does; ``hold`` keeps the answers until :meth:`release`."""

    def __init__(self, store: FakeStore) -> None:
        self.app = FakeApp(store)
        self.hold = False
        self.held: list[Callable[[], None]] = []

    def call(
        self,
        work: Callable[[Any], Any],
        on_done: Callable[[Any], Any] | None = None,
        on_error: Callable[[Exception], Any] | None = None,
    ) -> None:
        try:
            result, error = asyncio.run(work(self.app)), None
        except Exception as exc:
            result, error = None, exc

        def answer() -> None:
            if error is not None:
                assert on_error is not None
                on_error(error)
            elif on_done is not None:
                on_done(result)

        self.held.append(answer)
        if not self.hold:
            self.release()

    def release(self) -> None:
        answers, self.held = self.held, []
        for answer in answers:
            answer()


RUN = "run-0001"


def fan_out(n: int = 8) -> list[TaskRecord]:
    """A source, ``n`` tasks after it, a sink after them all: n + 2 tasks, 2n edges."""
    src = make_task(0, key="probe", status=TaskStatus.COMPLETED)
    middle = [running(i, 40.0, depends_on=[src.id]) for i in range(1, n + 1)]
    sink = make_task(n + 1, key="merge", depends_on=[t.id for t in middle], unmet_deps=n)
    return [src, *middle, sink]


@pytest.fixture
def fake_store() -> FakeStore:
    return FakeStore(make_run(1, template="transcribe", total_tasks=10), fan_out())


@pytest.fixture
def page(qtbot: Any, fake_store: FakeStore) -> Iterator[RunDetailsPage]:
    feed = Feed()
    page = RunDetailsPage(cast(Any, FakeHost(fake_store)), feed)
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show_run(RUN)
    qtbot.waitUntil(lambda: len(page.scene.nodes) == 10, timeout=5000)
    yield page


def push(page: RunDetailsPage, *records: Any) -> None:
    page.feed.changes.emit([Change(seq, r) for seq, r in enumerate(records, 1)])


def revisions(page: RunDetailsPage) -> dict[str, int]:
    return {task_id: node.revision for task_id, node in page.scene.nodes.items()}


# --- the graph, from records -----------------------------------------------------------------


def test_a_fan_out_draws_a_node_per_task_and_an_edge_per_dependency(
    page: RunDetailsPage,
) -> None:
    assert len(page.scene.nodes) == 10
    assert len(page.scene.edges) == 16
    assert ("task-00001", "task-00000") in page.scene.edges
    nodes = page.scene.nodes
    # Left to right: the source, then the fan, then the sink.
    assert nodes["task-00000"].x() < nodes["task-00001"].x() < nodes["task-00009"].x()
    assert nodes["task-00000"].look.badge is Badge.DONE
    assert nodes["task-00001"].look == replace(nodes["task-00001"].look, percent=40)
    assert nodes["task-00009"].look.badge is Badge.WAITING
    assert page.title.text() == "transcribe"  # no material: the workflow leads
    assert "1 of 10 tasks done" in page.meta.text()
    assert RUN not in page.meta.text() and RUN in page.title.toolTip()


def test_a_state_change_recolours_only_that_node(page: RunDetailsPage) -> None:
    before, layouts = revisions(page), page.scene.layouts
    node = page.scene.nodes["task-00003"]
    palette = page.view.palette()
    colour = colours_for(node.look.badge, palette).fill
    push(page, make_task(3, status=TaskStatus.COMPLETED, depends_on=["task-00000"]))
    assert node.look.badge is Badge.DONE
    assert colours_for(node.look.badge, palette).fill != colour
    after = revisions(page)
    assert after.pop("task-00003") == before.pop("task-00003") + 1
    assert after == before  # the sink still waits for the others: untouched
    assert page.scene.layouts == layouts


def test_a_progress_report_moves_the_bar_without_a_relayout(page: RunDetailsPage) -> None:
    layouts, node = page.scene.layouts, page.scene.nodes["task-00002"]
    revision = node.revision
    push(page, running(2, 55.0, "transcoding", depends_on=["task-00000"]))
    assert (node.look.percent, node.revision) == (55, revision + 1)
    push(page, running(2, 55.3, "transcoding 1:02", depends_on=["task-00000"]))
    assert node.revision == revision + 1  # the same whole percent: no repaint
    assert "transcoding 1:02" in node.toolTip()
    assert page.scene.layouts == layouts


def test_the_last_dependency_done_turns_the_sink_queued(page: RunDetailsPage) -> None:
    done = [
        make_task(i, status=TaskStatus.COMPLETED, depends_on=["task-00000"]) for i in range(1, 9)
    ]
    push(page, *done)
    assert page.scene.nodes["task-00009"].look.badge is Badge.QUEUED


def test_tasks_that_come_or_go_lay_the_graph_out_again(page: RunDetailsPage) -> None:
    layouts = page.scene.layouts
    push(page, make_task(10, key="export", depends_on=["task-00009"], unmet_deps=1))
    assert page.scene.layouts == layouts + 1
    assert len(page.scene.nodes) == 11 and ("task-00010", "task-00009") in page.scene.edges
    push(page, Tombstone("task", "task-00010", RUN, 0.0))
    assert page.scene.layouts == layouts + 2
    assert len(page.scene.nodes) == 10 and len(page.scene.edges) == 16


def test_changes_of_other_runs_are_ignored(page: RunDetailsPage) -> None:
    before, layouts = revisions(page), page.scene.layouts
    other = make_task(3, workflow_run_id="run-0002", status=TaskStatus.FAILED)
    push(page, other, make_task(50, workflow_run_id="run-0002"), make_run(2))
    assert revisions(page) == before and page.scene.layouts == layouts
    assert page.title.text() == "transcribe"


def test_the_runs_record_and_tombstone_update_the_header(page: RunDetailsPage) -> None:
    finished = make_run(1, template="transcribe", status=RunStatus.COMPLETED, total_tasks=10)
    push(page, replace(finished, done_tasks=10))
    assert "completed" in page.meta.text() and "10 of 10" in page.meta.text()
    push(page, Tombstone("run", RUN, RUN, 0.0))
    assert "removed" in page.meta.text()


def test_changes_during_the_read_are_applied_after_it(qtbot: Any, fake_store: FakeStore) -> None:
    host = FakeHost(fake_store)
    host.hold = True
    page = RunDetailsPage(cast(Any, host), Feed())
    qtbot.addWidget(page)
    page.show_run(RUN)
    push(page, make_task(4, status=TaskStatus.FAILED, depends_on=["task-00000"]))
    assert not page.scene.nodes  # still reading
    host.release()
    assert page.scene.nodes["task-00004"].look.badge is Badge.FAILED
    assert page.scene.nodes["task-00005"].look.badge is Badge.RUNNING


def test_a_new_snapshot_reads_the_run_again(page: RunDetailsPage, fake_store: FakeStore) -> None:
    layouts = page.scene.layouts
    fake_store.tasks = [*fake_store.tasks, make_task(10, key="late", depends_on=["task-00009"])]
    page.feed.snapshot.emit(Snapshot(cursor=1))
    assert len(page.scene.nodes) == 11 and page.scene.layouts == layouts + 1


def test_a_run_that_cannot_be_read_says_so(qtbot: Any, fake_store: FakeStore) -> None:
    page = RunDetailsPage(cast(Any, FakeHost(fake_store)), Feed())
    qtbot.addWidget(page)
    assert page.stack.currentIndex() == 0  # no run yet: the placeholder
    page.show_run("run-9999")
    assert page.stack.currentIndex() == 1
    assert "Could not read this run" in page.meta.text() and "run-9999" in page.meta.text()
    assert not page.scene.nodes


def test_a_200_node_dag_builds_in_reasonable_time(qtbot: Any) -> None:
    tasks = fan_out(198)
    store = FakeStore(make_run(1, total_tasks=200), tasks)
    page = RunDetailsPage(cast(Any, FakeHost(store)), Feed())
    qtbot.addWidget(page)
    page.resize(1000, 700)
    page.show()
    started = time.perf_counter()
    page.show_run(RUN)
    qtbot.waitUntil(lambda: len(page.scene.nodes) == 200, timeout=10_000)
    page.grab()  # paints what is visible
    assert time.perf_counter() - started < 3.0
    assert len(page.scene.edges) == 2 * 198
    page.view.fit()
    assert page.view.scale_factor < 0.1  # all of it in view: the scrollbars go
    page.view.zoom(4.0)
    assert page.zoom_label.text() != ""


def wheel(view: Any, steps: int, modifiers: Qt.KeyboardModifier) -> None:
    centre = QPointF(view.viewport().rect().center())
    event = QWheelEvent(
        centre,
        view.viewport().mapToGlobal(centre),
        QPoint(),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        modifiers,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(view.viewport(), event)


def test_ctrl_wheel_zooms_and_the_fit_button_fits(qtbot: Any, page: RunDetailsPage) -> None:
    page.show()
    qtbot.waitExposed(page)
    view = page.view
    view.resetTransform()
    wheel(view, 2, Qt.KeyboardModifier.ControlModifier)
    assert view.scale_factor == pytest.approx(1.15**2)
    wheel(view, -1, Qt.KeyboardModifier.NoModifier)  # scrolls, does not zoom
    assert view.scale_factor == pytest.approx(1.15**2)
    qtbot.keyClick(view, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert view.scale_factor == pytest.approx(1.15)
    view.zoom(100.0)  # within the limits
    assert view.scale_factor == pytest.approx(4.0)
    view.resetTransform()
    view.zoom(2.0)
    assert page.zoom_label.text() == "200 %"
    qtbot.keyClick(view, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert view.scale_factor < 1.0
    view.zoom(3.0)
    qtbot.mouseClick(page.fit_button, Qt.MouseButton.LeftButton)
    assert page.view.scale_factor <= 1.25
    qtbot.wait(50)  # the scrollbars go
    whole = page.view.mapFromScene(page.scene.sceneRect()).boundingRect()
    assert page.view.viewport().rect().adjusted(-2, -2, 2, 2).contains(whole)


# --- the selected task -----------------------------------------------------------------------


def test_clicking_a_node_selects_its_task(
    qtbot: Any, page: RunDetailsPage, fake_store: FakeStore
) -> None:
    page.show()
    qtbot.waitExposed(page)
    page.view.fit()
    node = page.scene.nodes["task-00002"]
    at = page.view.mapFromScene(node.mapToScene(QPointF(40, 20)))
    qtbot.mouseClick(page.view.viewport(), Qt.MouseButton.LeftButton, pos=at)
    assert page.scene.selected_id == "task-00002"
    assert page.panel.task is not None and page.panel.task.id == "task-00002"
    assert "t2" in page.panel.title.text()
    qtbot.waitUntil(lambda: fake_store.event_reads == ["task-00002"], timeout=5000)
    # The edges of the selected task stand out.
    assert page.scene.edges[("task-00002", "task-00000")].emphasised
    assert not page.scene.edges[("task-00003", "task-00000")].emphasised


def test_a_failed_task_shows_its_error_type_and_hint(page: RunDetailsPage) -> None:
    failed = make_task(
        5,
        status=TaskStatus.FAILED,
        depends_on=["task-00000"],
        error="no audio stream in clip.mov",
        error_type=ErrorType.NO_AUDIO,
    )
    push(page, failed)
    page.select_task("task-00005")
    panel = page.panel
    assert panel.tabs.currentIndex() == TaskPanel.ERROR
    assert "No audio" in panel.error_title.text() and "NO_AUDIO" in panel.error_title.text()
    assert error_hints.HINTS[ErrorType.NO_AUDIO] in panel.error_hint.text()
    assert panel.error_message.toPlainText() == "no audio stream in clip.mov"


def test_an_unknown_error_type_gets_the_generic_hint(page: RunDetailsPage) -> None:
    push(page, make_task(5, status=TaskStatus.FAILED, error="?", error_type="FROM_THE_FUTURE"))
    page.select_task("task-00005")
    assert error_hints.GENERIC_HINT in page.panel.error_hint.text()


def test_a_retried_error_says_the_task_goes_on(page: RunDetailsPage) -> None:
    retry = running(6, 0.0, depends_on=["task-00000"], error="reset", error_type="NETWORK_ERROR")
    push(page, retry)
    page.select_task("task-00006")
    assert page.panel.error_stack.currentIndex() == 1
    assert "tried again" in page.panel.retry_note.text()


def test_the_payload_and_the_result(page: RunDetailsPage, tmp_path: Path) -> None:
    out = tmp_path / "out" / "clip.mp4"
    done = make_task(
        7,
        status=TaskStatus.COMPLETED,
        depends_on=["task-00000"],
        payload={"input": "clip.mov", "crf": 23},
        result={"outputs": [str(out)], "bytes": 1234},
    )
    push(page, done)
    page.select_task("task-00007")
    panel = page.panel
    assert '"crf": 23' in panel.payload.toPlainText()
    assert panel.payload.isReadOnly()
    assert panel.outputs.count() == 1 and panel.outputs.item(0).text() == str(out)
    assert '"bytes": 1234' in panel.result_json.toPlainText()
    assert "outputs" not in panel.result_json.toPlainText()
    opened: list[QUrl] = []
    panel.open_url = opened.append
    panel.outputs.itemActivated.emit(panel.outputs.item(0))
    assert opened == [QUrl.fromLocalFile(str(out.parent))]


def test_a_task_without_result_or_error_says_so(page: RunDetailsPage) -> None:
    page.select_task("task-00001")
    assert page.panel.result_stack.currentIndex() == 0
    assert page.panel.error_stack.currentIndex() == 0
    page.select_task(None)
    assert page.panel.task is None and page.panel.stack.currentIndex() == 0


def test_the_timeline_is_read_again_when_the_task_changes_not_on_progress(
    qtbot: Any, page: RunDetailsPage, fake_store: FakeStore
) -> None:
    fake_store.timeline["task-00002"] = [
        EventRecord(1, "task-00002", RUN, 1_700_000_100.0, "claimed", {"attempt": 1}),
        EventRecord(2, "task-00002", RUN, 1_700_000_100.5, "started", None),
    ]
    page.select_task("task-00002")
    qtbot.waitUntil(lambda: page.panel.timeline.rowCount() == 2, timeout=5000)
    assert page.panel.timeline.item(0, 1).text() == "claimed"
    assert page.panel.timeline.item(0, 2).text() == "attempt: 1"
    for percent in range(41, 60):
        push(page, running(2, float(percent), depends_on=["task-00000"]))
    qtbot.wait(600)
    assert fake_store.event_reads == ["task-00002"]  # progress writes no event
    fake_store.timeline["task-00002"].append(
        EventRecord(3, "task-00002", RUN, 1_700_000_109.0, "completed", None)
    )
    push(page, make_task(2, status=TaskStatus.COMPLETED, depends_on=["task-00000"]))
    push(page, make_task(2, status=TaskStatus.COMPLETED, depends_on=["task-00000"], attempt=1))
    qtbot.waitUntil(lambda: page.panel.timeline.rowCount() == 3, timeout=5000)
    qtbot.wait(600)
    assert fake_store.event_reads == ["task-00002", "task-00002"]  # the two, read once


def test_event_details_read_as_one_line() -> None:
    assert event_detail(None) == ""
    assert event_detail({"error_type": "NO_SPACE", "delay": 2.0}) == (
        "error_type: NO_SPACE · delay: 2.0"
    )


def test_node_colours_follow_the_palette(qtbot: Any) -> None:
    light, dark = QPalette(), QPalette()
    light.setColor(QPalette.ColorRole.Base, QColor("#ffffff"))
    light.setColor(QPalette.ColorRole.Text, QColor("#000000"))
    dark.setColor(QPalette.ColorRole.Base, QColor("#1f1f22"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#e6e6e6"))
    for shown in Badge:
        on_light, on_dark = colours_for(shown, light), colours_for(shown, dark)
        assert on_light.fill.lightnessF() > 0.8 and on_light.text == QColor("#000000")
        assert on_dark.fill.lightnessF() < 0.4 and on_dark.text == QColor("#e6e6e6")
    fills = {colours_for(b, light).fill.name() for b in Badge}
    assert len(fills) == len(Badge)


def test_the_splitter_is_remembered(qtbot: Any, fake_store: FakeStore, tmp_path: Path) -> None:
    first = RunDetailsPage(cast(Any, FakeHost(fake_store)), Feed())
    qtbot.addWidget(first)
    first.resize(900, 700)
    first.show()
    first.splitter.setSizes([500, 150])
    sizes = first.splitter.sizes()
    state = ViewState(tmp_path)
    first.save_view_state(state)
    state.sync()
    second = RunDetailsPage(cast(Any, FakeHost(fake_store)), Feed())
    qtbot.addWidget(second)
    second.resize(900, 700)
    second.restore_view_state(ViewState(tmp_path))
    second.show()
    assert second.splitter.sizes() == sizes
    assert second.splitter.objectName() == "details-splitter"


def test_the_back_button_goes_back(qtbot: Any, page: RunDetailsPage) -> None:
    with qtbot.waitSignal(page.back, timeout=1000):
        qtbot.mouseClick(page.back_button, Qt.MouseButton.LeftButton)


# --- through the real host and engine --------------------------------------------------------


def badges(page: RunDetailsPage) -> dict[str, Badge]:
    return {page.scene.tasks[i].key or i: n.look.badge for i, n in page.scene.nodes.items()}


def kinds(page: RunDetailsPage) -> list[str]:
    table = page.panel.timeline
    return [table.item(row, 1).text() for row in range(table.rowCount())]


def test_a_real_run_turns_done_and_its_timeline_arrives(
    qtbot: Any, app_host: Any, live: RunDetailsPage
) -> None:
    spec = {
        "tasks": [
            {"key": "nap", "type": "SLEEP", "payload": {"seconds": 0.6}},
            {"key": "left", "type": "NOOP", "depends_on": ["nap"]},
            {"key": "right", "type": "NOOP", "depends_on": ["nap"]},
            {"key": "end", "type": "NOOP", "depends_on": ["left", "right"]},
        ]
    }
    created = call(app_host, lambda app: app.submit(spec))
    live.show_run(created.run_id)
    qtbot.waitUntil(lambda: len(live.scene.nodes) == 4, timeout=20_000)
    assert len(live.scene.edges) == 4
    layouts = live.scene.layouts
    live.select_task(created.task_ids["nap"])
    qtbot.waitUntil(lambda: set(badges(live).values()) == {Badge.DONE}, timeout=30_000)
    assert live.scene.layouts == layouts  # states changed, the graph stayed
    qtbot.waitUntil(lambda: {"started", "completed"} <= set(kinds(live)), timeout=20_000)
    assert '"seconds": 0.6' in live.panel.payload.toPlainText()
    qtbot.waitUntil(lambda: "completed" in live.meta.text(), timeout=20_000)


def test_a_real_failure_shows_its_error_type_and_hint(
    qtbot: Any, app_host: Any, live: RunDetailsPage
) -> None:
    spec = {
        "tasks": [
            {"key": "nap", "type": "SLEEP", "payload": {"seconds": 2.0}},
            {"key": "broken", "type": "NOOP", "depends_on": ["nap"]},
            {"key": "after", "type": "NOOP", "depends_on": ["broken"]},
        ]
    }
    created = call(app_host, lambda app: app.submit(spec))
    broken = created.task_ids["broken"]

    async def break_payload(app: Any) -> None:
        # As if written by a newer Fredica (submission refuses it): the engine fails the
        # task with PAYLOAD_ERROR when it comes to it, after the nap.
        def write() -> None:
            with app.store.engine.begin() as conn:
                conn.exec_driver_sql(
                    "UPDATE task SET payload = '{\"schema_version\": 9}' WHERE id = ?", (broken,)
                )

        await asyncio.to_thread(write)

    call(app_host, break_payload)
    live.show_run(created.run_id)
    qtbot.waitUntil(lambda: broken in live.scene.nodes, timeout=20_000)
    live.select_task(broken)
    qtbot.waitUntil(lambda: badges(live).get("broken") is Badge.FAILED, timeout=30_000)
    panel = live.panel
    qtbot.waitUntil(lambda: panel.error_stack.currentIndex() == 1, timeout=10_000)
    assert "PAYLOAD_ERROR" in panel.error_title.text()
    assert error_hints.HINTS[ErrorType.PAYLOAD_ERROR] in panel.error_hint.text()
    assert "schema_version" in panel.error_message.toPlainText()
    qtbot.waitUntil(lambda: "failed" in kinds(live), timeout=20_000)
    qtbot.waitUntil(lambda: badges(live).get("after") is Badge.CANCELLED, timeout=20_000)


def test_a_run_about_a_file_is_headed_by_the_files_name_not_its_id(
    qtbot: Any, fake_store: FakeStore
) -> None:
    """What a person reads first is the file the run works on, then the workflow; the run's
    id (for a bug report) is in the title's tooltip only."""
    fake_store.run = replace(fake_store.run, material_id="m-1", template="extract_audio")
    host = FakeHost(fake_store)
    host.app.library.known["m-1"] = "Interview, take 2.mkv"
    page = RunDetailsPage(cast(Any, host), Feed())
    qtbot.addWidget(page)
    page.show_run(RUN)
    qtbot.waitUntil(lambda: len(page.scene.nodes) == 10, timeout=5000)
    assert page.title.text() == "Interview, take 2.mkv"
    assert page.meta.text().startswith("Extract the audio · running · created ")
    assert RUN not in page.meta.text() and RUN in page.title.toolTip()
