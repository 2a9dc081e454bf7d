"""Run details: the run's DAG, and the selected task's payload, result, error and timeline.

:meth:`RunDetailsPage.show_run` reads the run and its tasks through the host (the GUI thread
never touches SQLite), then keeps them current from the window's feed: the task records of
this run, the run's record, and their tombstones. A batch redraws only the nodes whose look
changed (``dag_view``); the graph is laid out again only when tasks come or go.

Changes that arrive while the run is being read are kept and applied after the read: each is
at least as new as the read for its row, or the feed brings a newer one after it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from fredica_app.gui.dag_view import DagScene, DagView
from fredica_app.gui.details_paint import badge_text, legend_html
from fredica_app.gui.details_panel import TaskPanel
from fredica_app.gui.feed import Feed
from fredica_app.gui.host import AppHost
from fredica_app.gui.models import template_label
from fredica_app.gui.persist import ViewState
from fredica_app.gui.speakers import SpeakersDialog, has_speakers
from fredica_app.views.queue_state import Badge
from fredica_app.views.records import clock
from workers.changes import Change, Tombstone
from workers.records import RunRecord, TaskRecord
from workers.states import RunStatus

#: The name the splitter between the graph and the task panel is kept under.
SPLITTER_NAME = "details-splitter"
#: The first fit of a run's graph does not go smaller than this: a node's text stays
#: readable (the user can still zoom out, or fit everything).
FIRST_FIT_SCALE = 0.5

_Item = TaskRecord | RunRecord | Tombstone


class RunDetailsPage(QWidget):
    """One run: a header, its DAG, and the selected task's details."""

    #: Back to the queue.
    back = Signal()

    def __init__(self, host: AppHost, feed: Feed, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.feed = feed
        self.run_id: str | None = None
        self.run: RunRecord | None = None
        #: Set while the run is being read; its changes wait here meanwhile.
        self._pending: list[_Item] | None = None
        self._request = 0
        self._fit_pending = False
        self._run_gone = False
        #: The title of the material the run is about (its file's name), when it has one.
        self._material_title: str | None = None

        self.title = QLabel(self.tr("No run"))
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        font.setBold(True)
        self.title.setFont(font)
        self.meta = QLabel()
        self.meta.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.back_button = QPushButton(self.tr("Back to the queue"))
        self.back_button.clicked.connect(self.back)
        self.speakers_button = QPushButton(self.tr("Speakers…"))
        self.speakers_button.setObjectName("speakers-button")
        self.speakers_button.setToolTip(
            self.tr("Name the speakers this run found, merge two who are one person")
        )
        self.speakers_button.clicked.connect(self.edit_speakers)
        self.speakers_button.hide()
        header = QHBoxLayout()
        header.addWidget(self.title)
        header.addSpacing(12)
        header.addWidget(self.meta, 1)
        header.addWidget(self.speakers_button)
        header.addWidget(self.back_button)

        self.scene = DagScene(self)
        self.view = DagView(self.scene)
        self.fit_button = QPushButton(self.tr("Fit to view"))
        self.fit_button.setToolTip(self.tr("Show the whole graph (Ctrl+0); Ctrl+wheel zooms"))
        self.fit_button.clicked.connect(lambda: self.view.fit())
        self.zoom_label = QLabel()
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        tools = QHBoxLayout()
        tools.addWidget(self.fit_button)
        tools.addWidget(self.zoom_label)
        tools.addSpacing(16)
        tools.addWidget(self.legend, 1)
        graph = QWidget()
        graph_column = QVBoxLayout(graph)
        graph_column.setContentsMargins(0, 0, 0, 0)
        graph_column.addLayout(tools)
        graph_column.addWidget(self.view, 1)

        self.panel = TaskPanel(host)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName(SPLITTER_NAME)
        self.splitter.addWidget(graph)
        self.splitter.addWidget(self.panel)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([420, 280])  # until the user's sizes are restored

        self.empty = QLabel(self.tr("Open a run from the queue to see its tasks here."))
        self.empty.setEnabled(False)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        content = QWidget()
        column = QVBoxLayout(content)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(header)
        column.addWidget(self.splitter, 1)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(content)
        outer = QVBoxLayout(self)
        outer.addWidget(self.stack)

        self.view.zoomed.connect(self._show_zoom)
        self.scene.task_selected.connect(self._on_selected)
        feed.snapshot.connect(self._on_snapshot)
        feed.changes.connect(self._on_changes)
        self._show_legend()
        self._show_zoom(1.0)

    # --- which run -------------------------------------------------------------------------

    def show_run(self, run_id: str) -> None:
        """Show the run ``run_id``: read it and its tasks, then follow the feed."""
        if run_id != self.run_id:
            self.run_id, self.run, self._run_gone = run_id, None, False
            self._material_title = None
            self.scene.set_tasks(())
            self.panel.show_task(None)
            self.speakers_button.hide()
            self.title.setText(self.tr("Run"))
            self.meta.setText(self.tr("Loading…"))
            self._fit_pending = True
        self.stack.setCurrentIndex(1)
        self._load()

    def _load(self) -> None:
        run_id = self.run_id
        if run_id is None:
            return
        self._request += 1
        request = self._request
        self._pending = []

        async def read(app: Any) -> tuple[RunRecord, list[TaskRecord], str | None]:
            run = await app.store.get_run(run_id)
            tasks = await app.store.list_tasks(run_id)
            title = None
            if run.material_id is not None:  # the file it is about, by its name
                titles = await asyncio.to_thread(app.library.titles, [run.material_id])
                title = titles.get(run.material_id)
            return run, tasks, title

        self.host.call(
            read,
            lambda found: self._on_loaded(request, found),
            lambda exc: self._on_load_failed(request, exc),
        )

    def _on_loaded(
        self, request: int, found: tuple[RunRecord, list[TaskRecord], str | None]
    ) -> None:
        if request != self._request:  # another run was asked for since
            return
        run, tasks, self._material_title = found
        pending, self._pending = self._pending or [], None
        self.run = run
        self.scene.set_tasks(tasks)
        self._apply(pending)
        self._show_header()
        self._offer_speakers()
        self._fit_if_due()

    def _on_load_failed(self, request: int, exc: Exception) -> None:
        if request != self._request:
            return
        self._pending = None
        self.meta.setText(self.tr("Could not read this run: %1").replace("%1", str(exc)))

    # --- the feed --------------------------------------------------------------------------

    def _on_snapshot(self, snapshot: Any) -> None:
        # The feed started again (a new data directory, or it fell behind): read the run again.
        if self.run_id is not None:
            self._load()

    def _on_changes(self, batch: Iterable[Any]) -> None:
        run_id = self.run_id
        if run_id is None:
            return
        mine: list[_Item] = []
        for item in batch:
            record = item.record if isinstance(item, Change) else item
            if isinstance(record, TaskRecord | Tombstone):
                if record.workflow_run_id == run_id:
                    mine.append(record)
            elif isinstance(record, RunRecord) and record.id == run_id:
                mine.append(record)
        if not mine:
            return
        if self._pending is not None:
            self._pending.extend(mine)
            return
        self._apply(mine)

    def _apply(self, items: list[_Item]) -> None:
        changed: dict[str, TaskRecord] = {}
        removed: list[str] = []
        run_changed = False
        for record in items:
            if isinstance(record, TaskRecord):
                changed[record.id] = record
            elif isinstance(record, RunRecord):
                self.run, run_changed = record, True
            elif record.kind == "task":
                changed.pop(record.id, None)
                removed.append(record.id)
            elif record.id == self.run_id:
                self._run_gone, run_changed = True, True
        if changed or removed:
            self.scene.apply(changed.values(), removed)
            selected = self.scene.selected_id
            if selected is not None:
                self.panel.show_task(self.scene.tasks[selected], self._badge_of(selected))
            self._offer_speakers()
        if run_changed:
            self._show_header()

    # --- the header, the graph, the selection ----------------------------------------------

    def _show_header(self) -> None:
        run = self.run
        if run is None:
            return
        # What the run is about leads (the file's name); the workflow follows. The run's id
        # is for a bug report, not for reading: in the tooltip.
        workflow = template_label(run.template)
        self.title.setText(self._material_title or workflow)
        self.title.setToolTip(self.tr("Run %1").replace("%1", run.id))
        statuses = {
            RunStatus.PENDING: self.tr("pending"),
            RunStatus.RUNNING: self.tr("running"),
            RunStatus.COMPLETED: self.tr("completed"),
            RunStatus.FAILED: self.tr("failed"),
            RunStatus.CANCELLED: self.tr("cancelled"),
        }
        status = statuses.get(run.status, run.status.value)
        if self._run_gone:
            status = self.tr("removed")
        created = self.tr("created %1").replace("%1", clock(run.created_at, time.time()))
        done = self.tr("%1 of %2 tasks done")
        done = done.replace("%1", str(run.done_tasks)).replace("%2", str(run.total_tasks))
        parts = (
            (workflow, status, created, done) if self._material_title else (status, created, done)
        )
        self.meta.setText(" · ".join(parts))

    def _offer_speakers(self) -> None:
        """*Speakers…* once the run has written its speaker-labelled exports."""
        self.speakers_button.setVisible(has_speakers(list(self.scene.tasks.values())))

    def edit_speakers(self) -> SpeakersDialog | None:
        """Open the speakers of the run (the dialog, shown; None without a run)."""
        if self.run_id is None:
            return None
        dialog = SpeakersDialog(self.host, self.run_id, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def _badge_of(self, task_id: str) -> Badge:
        return self.scene.nodes[task_id].look.badge

    def _on_selected(self, task_id: str | None) -> None:
        if task_id is None:
            self.panel.show_task(None)
        else:
            self.panel.show_task(self.scene.tasks[task_id], self._badge_of(task_id))

    def select_task(self, task_id: str | None) -> None:
        """Select a task, as a click on its node does."""
        self.scene.select(task_id)

    def _fit_if_due(self) -> None:
        if self._fit_pending and self.view.isVisible() and self.scene.nodes:
            self._fit_pending = False
            self.view.fit(least=FIRST_FIT_SCALE)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._fit_if_due()

    def _show_zoom(self, scale: float) -> None:
        self.zoom_label.setText(f"{scale * 100:.0f} %")

    def _show_legend(self) -> None:
        texts = {b: badge_text(b) for b in Badge}
        self.legend.setText(legend_html(self.palette(), texts))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._show_legend()

    # --- remembered between sessions -------------------------------------------------------

    def save_view_state(self, vs: ViewState) -> None:
        vs.save(SPLITTER_NAME, self.splitter)

    def restore_view_state(self, vs: ViewState) -> None:
        vs.restore(SPLITTER_NAME, self.splitter)
