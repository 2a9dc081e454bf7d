"""Notifications inside the window, where the desktop has no other way to show them.

A :class:`Toast` is a small card in the bottom-right corner of the window (above its status
bar): a bold title, a line or two of text, a close button and, when the notification is
about a run, a "Show" link. It goes away by itself after :data:`TOAST_MS` — not while the
pointer rests on it, so that it can be read. Several stack upwards, the newest at the
bottom; past :data:`MAX_TOASTS` the oldest goes.

A toast is a child widget of the window, not a window of its own: it needs nothing from the
window manager, works on every platform (offscreen too), and moves with the window. Its
colours follow the light or dark palette (``theme.notifier``): a style sheet is not told by
Qt when the application's palette changes.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QEnterEvent, QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from fredica_app.gui import theme
from fredica_app.gui.symbols import symbol

#: How long a toast stays (milliseconds), unless the pointer rests on it.
TOAST_MS = 8000
#: Toasts shown at once at most.
MAX_TOASTS = 4
#: Between the toasts and the window's edges, and between two toasts.
MARGIN = 12
WIDTH = 340
STYLE = """
#toast { background-color: %s; border: 1px solid %s; border-radius: 8px; }
#toast QLabel { color: %s; background: transparent; }
#toast QToolButton { background: transparent; border: none; }
"""
#: Card, border, text, link: light, then dark.
LIGHT = ("#ffffff", "#b9bec6", "#1f2328", "#1757c2")
DARK = ("#3a3a41", "#5f5f68", "#f0f0f0", "#8ab8ff")
_PALETTE_EVENTS = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
_LAYOUT_EVENTS = (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.LayoutRequest)


def _dark() -> bool:
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


class Toast(QFrame):
    """One notification in the window (see the module's docstring)."""

    #: The "Show" link was clicked.
    link_activated = Signal()
    #: It has closed (by itself, its close button, or its link).
    closed = Signal()

    def __init__(
        self,
        title: str,
        body: str,
        parent: QWidget,
        *,
        link_text: str | None = None,
        timeout_ms: int = TOAST_MS,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("toast")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setFixedWidth(WIDTH)
        self.setAccessibleName(title)
        self.setAccessibleDescription(body)
        self._link_text = link_text
        self._dismissed = False

        self.title = QLabel(title)
        self.title.setObjectName("toast-title")
        self.title.setWordWrap(True)
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.close_button = QToolButton()
        self.close_button.setIcon(symbol("x"))
        self.close_button.setToolTip(self.tr("Close"))
        self.close_button.setAutoRaise(True)
        self.close_button.clicked.connect(self.dismiss)
        self.body = QLabel(body)
        self.body.setObjectName("toast-body")
        self.body.setWordWrap(True)
        self.link = QLabel()
        self.link.setObjectName("toast-link")
        self.link.setTextFormat(Qt.TextFormat.RichText)
        self.link.linkActivated.connect(self._follow)
        self.link.setVisible(link_text is not None)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title, 1)
        top.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        column = QVBoxLayout(self)
        column.setContentsMargins(12, 8, 8, 10)
        column.setSpacing(4)
        column.addLayout(top)
        column.addWidget(self.body)
        column.addWidget(self.link, 0, Qt.AlignmentFlag.AlignRight)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(timeout_ms)
        self._timer.timeout.connect(self.dismiss)
        self._restyle()
        theme.notifier().changed.connect(self._restyle)

    def start(self) -> None:
        """Show it and start the time it stays."""
        self.show()
        self.raise_()
        self._timer.start()

    def dismiss(self) -> None:
        """Close it now (once)."""
        if self._dismissed:
            return
        self._dismissed = True
        self._timer.stop()
        self.hide()
        self.closed.emit()
        self.deleteLater()

    def _follow(self, _href: str) -> None:
        self.link_activated.emit()
        self.dismiss()

    # --- the pointer holds it ----------------------------------------------------------------

    def enterEvent(self, event: QEnterEvent) -> None:
        self._timer.stop()
        super().enterEvent(event)

    def leaveEvent(self, event: QEvent) -> None:
        if not self._dismissed:
            self._timer.start()
        super().leaveEvent(event)

    @property
    def counting(self) -> bool:
        """Whether its time is running out (not while the pointer rests on it)."""
        return self._timer.isActive()

    # --- light and dark ----------------------------------------------------------------------

    def _restyle(self, _dark_now: bool | None = None) -> None:
        if not isValid(self):
            return
        card, border, text, link = DARK if _dark() else LIGHT
        style = STYLE % (card, border, text)
        if self.styleSheet() != style:  # setting it changes the palette: no loop
            self.setStyleSheet(style)
        if self._link_text is not None:
            label = html.escape(self._link_text)
            self.link.setText(f'<a href="show" style="color:{link}">{label}</a>')

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in _PALETTE_EVENTS:
            self._restyle()


class ToastStack(QObject):
    """The toasts of one window, stacked in its bottom-right corner."""

    def __init__(self, window: QWidget, *, timeout_ms: int = TOAST_MS) -> None:
        super().__init__(window)
        self.window = window
        self.timeout_ms = timeout_ms
        self._toasts: list[Toast] = []
        window.installEventFilter(self)

    @property
    def toasts(self) -> list[Toast]:
        """The toasts shown now, oldest first."""
        return [t for t in self._toasts if isValid(t)]

    def show_toast(
        self,
        title: str,
        body: str,
        *,
        link_text: str | None = None,
        on_link: Callable[[], None] | None = None,
    ) -> Toast:
        toast = Toast(title, body, self.window, link_text=link_text, timeout_ms=self.timeout_ms)
        if on_link is not None:
            toast.link_activated.connect(on_link)
        toast.closed.connect(lambda t=toast: self._closed(t))
        self._toasts.append(toast)
        while len(self._toasts) > MAX_TOASTS:
            oldest = self._toasts.pop(0)
            if isValid(oldest):
                oldest.dismiss()
        toast.start()
        self.place()
        return toast

    def _closed(self, toast: Toast) -> None:
        if toast in self._toasts:
            self._toasts.remove(toast)
        self.place()

    def place(self) -> None:
        """Stack the toasts up from the window's bottom-right corner (above its status bar)."""
        window = self.window
        if not isValid(window):
            return
        bottom = window.height() - MARGIN
        if isinstance(window, QMainWindow) and window.statusBar().isVisible():
            bottom -= window.statusBar().height()
        for toast in reversed(self.toasts):  # the newest lowest
            # Its wrapped text's height at its width (a size hint guesses another width).
            height = toast.heightForWidth(WIDTH) if toast.hasHeightForWidth() else -1
            height = max(height, toast.minimumSizeHint().height())
            toast.setGeometry(window.width() - WIDTH - MARGIN, bottom - height, WIDTH, height)
            toast.raise_()
            bottom -= height + MARGIN

    def clear(self) -> None:
        for toast in self.toasts:
            toast.dismiss()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() in _LAYOUT_EVENTS and self._toasts:
            self.place()
        return False
