"""Run details: the run's DAG, and the selected task's payload, result, error and timeline.
(Being built.)"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QWidget

from fredica_app.gui.feed import Feed
from fredica_app.gui.host import AppHost


class RunDetailsPage(QWidget):
    #: Back to the queue.
    back = Signal()

    def __init__(self, host: AppHost, feed: Feed, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.feed = feed
        self.run_id: str | None = None

    def show_run(self, run_id: str) -> None:
        self.run_id = run_id
