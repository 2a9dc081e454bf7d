"""The interface's icons: one set of line icons, bundled as SVG files (``icons/``: a subset of
Lucide 1.87.0, ISC licence, whose text is ``icons/LICENSE`` and is in the licence report), so
they look the same on every system and in both themes.

Each icon is drawn when painted, in the colour of the palette then — its text colour, its
disabled text colour for a disabled action, its selected text colour on a selected row — so it
follows a change of theme with nothing rebuilt; an icon that says something (a warning, an
error) has a colour of its own.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from PySide6.QtCore import QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QIconEngine, QPainter, QPalette, QPixmap
from PySide6.QtSvg import QSvgRenderer

ICONS_DIR = Path(__file__).resolve().with_name("icons")
#: The colours of icons that say something, readable on light and dark.
WARNING = QColor("#d97706")
ERROR = QColor("#dc2626")

_DISABLED = QIcon.Mode.Disabled
_SELECTED = QIcon.Mode.Selected
_TEXT = QPalette.ColorRole.WindowText
_ON_SELECTION = QPalette.ColorRole.HighlightedText


class SvgIconEngine(QIconEngine):
    """Paints one SVG icon (its strokes in ``currentColor``) in ``colour``, or in the palette's
    text colour at the moment it is painted."""

    def __init__(self, svg: bytes, colour: QColor | None = None) -> None:
        super().__init__()
        self.svg = svg
        self.colour = colour
        self._renderers: dict[str, QSvgRenderer] = {}

    def _renderer(self, mode: QIcon.Mode) -> QSvgRenderer:
        if self.colour is not None:
            colour = QColor(self.colour)
            if mode == _DISABLED:
                colour.setAlphaF(0.4)
        else:
            palette = QGuiApplication.palette()
            if mode == _SELECTED:  # on the selection's colour: as its text is
                colour = palette.color(QPalette.ColorGroup.Normal, _ON_SELECTION)
            else:
                disabled = mode == _DISABLED
                group = QPalette.ColorGroup.Disabled if disabled else QPalette.ColorGroup.Normal
                colour = palette.color(group, _TEXT)
        key = colour.name(QColor.NameFormat.HexArgb)
        renderer = self._renderers.get(key)
        if renderer is None:
            fill = colour.name(QColor.NameFormat.HexRgb).encode()
            opacity = f'stroke-opacity="{colour.alphaF():.2f}"'.encode()
            data = self.svg.replace(b'stroke="currentColor"', b'stroke="' + fill + b'" ' + opacity)
            renderer = self._renderers[key] = QSvgRenderer(data.replace(b"currentColor", fill))
        return renderer

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        side = min(rect.width(), rect.height())  # square, centred: never stretched
        square = QRectF(0, 0, side, side)
        square.moveCenter(QRectF(rect).center())
        self._renderer(mode).render(painter, square)

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        pixmap = QPixmap(size)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.paint(painter, QRect(QPoint(0, 0), size), mode, state)
        painter.end()
        return pixmap

    def clone(self) -> QIconEngine:
        return SvgIconEngine(self.svg, self.colour)


@cache
def _svg(name: str) -> bytes:
    return (ICONS_DIR / f"{name}.svg").read_bytes()


def symbol(name: str, colour: QColor | None = None) -> QIcon:
    """The icon ``name`` (a file of ``icons/`` without its ``.svg``), in the palette's text
    colour or in ``colour``. An unknown name raises ``FileNotFoundError``: a typo is a bug."""
    return QIcon(SvgIconEngine(_svg(name), colour))


class PosterEngine(QIconEngine):
    """A material's picture in the library: its poster frame, fitted to the space and centred,
    or — none yet, or not a video — ``placeholder``'s symbol on a quiet tile of the same
    shape, in the palette's colours when painted."""

    def __init__(self, poster: QPixmap | None, placeholder: QIcon) -> None:
        super().__init__()
        self.poster = poster
        self.placeholder = placeholder

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        if self.poster is not None and not self.poster.isNull():
            fitted = self.poster.size().scaled(rect.size(), Qt.AspectRatioMode.KeepAspectRatio)
            target = QRect(QPoint(0, 0), fitted)
            target.moveCenter(rect.center())
            painter.drawPixmap(target, self.poster)
        else:
            tile = QGuiApplication.palette().color(QPalette.ColorRole.Mid)
            tile.setAlphaF(0.25)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(tile)
            painter.drawRoundedRect(QRectF(rect).adjusted(0.5, 0.5, -0.5, -0.5), 3, 3)
            glyph = round(min(rect.width(), rect.height()) * 0.6)
            inner = QRect(0, 0, glyph, glyph)
            inner.moveCenter(rect.center())
            self.placeholder.paint(painter, inner, Qt.AlignmentFlag.AlignCenter, mode, state)
        painter.restore()

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        pixmap = QPixmap(size)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        self.paint(painter, QRect(QPoint(0, 0), size), mode, state)
        painter.end()
        return pixmap

    def clone(self) -> QIconEngine:
        return PosterEngine(self.poster, self.placeholder)
