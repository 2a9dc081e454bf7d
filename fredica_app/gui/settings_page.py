"""The settings page. (Being built.)"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QWidget

from fredica_app.gui.host import AppHost


class SettingsPage(QWidget):
    #: The interface language was changed and saved (``en``, ``zh_CN``, ``auto``).
    language_changed = Signal(str)

    def __init__(self, host: AppHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
