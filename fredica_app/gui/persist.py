"""What the window remembers between sessions: its geometry, splitters, column widths and sort
orders, the page it showed.

Kept in ``window.ini`` in the data directory (``QSettings`` in INI format), so that each data
directory, and each test, has its own, and nothing goes to the registry or ``~/.config``.
Widgets save under a name of their own, the ``objectName`` when they have one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QHeaderView, QMainWindow, QSplitter, QWidget

INI = QSettings.Format.IniFormat
FILE_NAME = "window.ini"


class ViewState:
    """Saves and restores the state of widgets under names."""

    def __init__(self, data_dir: Path) -> None:
        self._settings = QSettings(str(data_dir / FILE_NAME), INI)

    def save(self, name: str, widget: QWidget | QHeaderView) -> None:
        """Keep ``widget``'s state: a main window's geometry and docks, a splitter's sizes,
        a header's column widths, order and sort indicator."""
        if isinstance(widget, QMainWindow):
            self._settings.setValue(f"{name}/geometry", widget.saveGeometry())
            self._settings.setValue(f"{name}/state", widget.saveState())
        elif isinstance(widget, (QSplitter, QHeaderView)):
            self._settings.setValue(f"{name}/state", widget.saveState())
        else:
            raise TypeError(f"cannot keep the state of a {type(widget).__name__}")

    def restore(self, name: str, widget: QWidget | QHeaderView) -> bool:
        """Give ``widget`` back the state kept under ``name``; False when none was."""
        state = self._settings.value(f"{name}/state")
        if isinstance(widget, QMainWindow):
            geometry = self._settings.value(f"{name}/geometry")
            if isinstance(geometry, QByteArray):
                widget.restoreGeometry(geometry)
            if isinstance(state, QByteArray):
                widget.restoreState(state)
            return isinstance(geometry, QByteArray)
        if isinstance(widget, (QSplitter, QHeaderView)) and isinstance(state, QByteArray):
            return bool(widget.restoreState(state))
        return False

    def value(self, key: str, default: Any = None) -> Any:
        return self._settings.value(key, default)

    def set_value(self, key: str, value: Any) -> None:
        self._settings.setValue(key, value)

    def sync(self) -> None:
        """Write what is kept to the file now."""
        self._settings.sync()
