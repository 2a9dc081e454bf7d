"""The queue page: runs and tasks, live, with their actions. (Being built.)"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QWidget

from fredica_app.gui.feed import Feed
from fredica_app.gui.host import AppHost


class QueuePage(QWidget):
    #: A run's id: show its details.
    open_run = Signal(str)

    def __init__(self, host: AppHost, feed: Feed, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.feed = feed

    def show_queue_paused(self, paused: bool) -> None:
        """The queue's pause flag as read (the window reads it every second)."""
