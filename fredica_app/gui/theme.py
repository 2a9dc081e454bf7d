"""Light and dark: the window follows the system's colour scheme unless told otherwise.

Fusion everywhere (the same widgets on every system), with one palette per scheme. ``auto``
reads the system's scheme (``QStyleHints.colorScheme``) and follows it when it changes;
where the platform cannot tell (offscreen, a bare X server), light. The state colours of the
queue and the DAG are chosen to read on both (see ``models`` and ``dag_view``).
"""

from __future__ import annotations

from typing import Literal

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

Scheme = Literal["auto", "light", "dark"]

_DARK = Qt.ColorScheme.Dark
_ROLE = QPalette.ColorRole
_GROUP = QPalette.ColorGroup


def dark_palette() -> QPalette:
    """A dark palette for Fusion: dark grey surfaces, light text, a blue highlight, and
    disabled text dimmed enough to tell apart."""
    palette = QPalette()
    colours = {
        _ROLE.Window: "#2b2b2e",
        _ROLE.WindowText: "#e6e6e6",
        _ROLE.Base: "#1f1f22",
        _ROLE.AlternateBase: "#2a2a2e",
        _ROLE.ToolTipBase: "#3a3a3f",
        _ROLE.ToolTipText: "#f0f0f0",
        _ROLE.PlaceholderText: "#8a8a90",
        _ROLE.Text: "#e6e6e6",
        _ROLE.Button: "#35353a",
        _ROLE.ButtonText: "#e6e6e6",
        _ROLE.BrightText: "#ff6b6b",
        _ROLE.Light: "#4a4a50",
        _ROLE.Midlight: "#3e3e44",
        _ROLE.Mid: "#2f2f34",
        _ROLE.Dark: "#18181a",
        _ROLE.Shadow: "#000000",
        _ROLE.Highlight: "#3d7bd9",
        _ROLE.HighlightedText: "#ffffff",
        _ROLE.Link: "#6ea8ff",
        _ROLE.LinkVisited: "#b08cff",
    }
    for role, colour in colours.items():
        palette.setColor(role, QColor(colour))
    for role in (_ROLE.WindowText, _ROLE.Text, _ROLE.ButtonText):
        palette.setColor(_GROUP.Disabled, role, QColor("#7a7a80"))
    return palette


def is_dark(scheme: Scheme) -> bool:
    """Whether ``scheme`` means dark here (``auto``: the system's choice)."""
    if scheme == "auto":
        return QGuiApplication.styleHints().colorScheme() == _DARK
    return scheme == "dark"


class ThemeNotifier(QObject):
    """Says when :func:`apply` changed the palette. A widget with a style sheet of its own
    is not told by Qt when the application's palette changes: it listens here."""

    #: Whether the palette is now dark.
    changed = Signal(bool)


_NOTIFIER: list[ThemeNotifier] = []


def notifier() -> ThemeNotifier:
    """The one :class:`ThemeNotifier` (made on first use, on the GUI thread)."""
    if not _NOTIFIER:
        _NOTIFIER.append(ThemeNotifier())
    return _NOTIFIER[0]


def apply(app: QApplication, scheme: Scheme = "auto") -> bool:
    """Give ``app`` the palette of ``scheme``; returns whether it is dark."""
    dark = is_dark(scheme)
    app.setPalette(dark_palette() if dark else app.style().standardPalette())
    notifier().changed.emit(dark)
    return dark


class FollowSystem:
    """Keeps ``app``'s palette in step with the system's scheme while ``scheme`` is
    ``auto`` (the system switching to dark at night)."""

    def __init__(self, app: QApplication, scheme: Scheme = "auto") -> None:
        self._app = app
        self.scheme: Scheme = scheme
        apply(app, scheme)
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._on_system_change)

    def set_scheme(self, scheme: Scheme) -> None:
        self.scheme = scheme
        apply(self._app, scheme)

    def _on_system_change(self, _scheme: Qt.ColorScheme) -> None:
        if self.scheme == "auto":
            apply(self._app, "auto")
