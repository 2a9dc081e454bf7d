"""The library page: materials, adding them, starting templates on them. (Being built.)"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from fredica_app.gui.feed import Feed
from fredica_app.gui.host import AppHost


class LibraryPage(QWidget):
    def __init__(self, host: AppHost, feed: Feed, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.feed = feed

    def import_items(self, items: list[str]) -> None:
        """Add files, folders or web addresses to the library."""

    def add_files_dialog(self) -> None:
        """Ask for files to add."""

    def add_folder_dialog(self) -> None:
        """Ask for a folder to add."""

    def paste_urls(self) -> None:
        """Ask for web addresses to add (the clipboard's, to start with)."""
