"""The restart banner: what start-up recovery found, to retry or dismiss. (Being built.)"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from fredica_app.gui.host import AppHost, HostState


class RestartBanner(QWidget):
    def __init__(self, host: AppHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.hide()

    def on_state(self, state: HostState) -> None:
        """The host's state changed (with an engine: its recovery report)."""
