"""Fredica's icon, drawn in code: the window's, the tray's, and the tray's with a count.

No image file to ship, license or keep in step: a rounded square in a blue-to-violet
gradient with a white "play" triangle over three caption lines (media in, text out), drawn
with ``QPainter`` at each size a desktop asks for, so that it stays crisp at 16 pixels.

:func:`badged_icon` adds the tray's badge: a red disc in the top-right corner with the
number of running tasks ("99+" past 99).
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QIcon,
    QLinearGradient,
    QPainter,
    QPainterPath,
    QPen,
    QPixmap,
)

#: The sizes drawn (desktops pick the nearest; tray icons are 16 to 24 px, docks up to 256).
SIZES = (16, 20, 22, 24, 32, 40, 48, 64, 128, 256)
TOP = QColor("#3b82f6")
BOTTOM = QColor("#7c3aed")
BADGE = QColor("#dc2626")
_ICONS: dict[int, QIcon] = {}


def paint_logo(painter: QPainter, size: float) -> None:
    """The logo into a ``size`` by ``size`` square at the painter's origin."""
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    margin = size * 0.06
    body = QRectF(margin, margin, size - 2 * margin, size - 2 * margin)
    gradient = QLinearGradient(body.topLeft(), body.bottomRight())
    gradient.setColorAt(0.0, TOP)
    gradient.setColorAt(1.0, BOTTOM)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QBrush(gradient))
    painter.drawRoundedRect(body, size * 0.22, size * 0.22)

    painter.setBrush(QColor("white"))
    # The play triangle, in the upper part.
    left, top, height = size * 0.37, size * 0.15, size * 0.40
    triangle = QPainterPath(QPointF(left, top))
    triangle.lineTo(left + height * 0.87, top + height / 2)
    triangle.lineTo(left, top + height)
    triangle.closeSubpath()
    painter.drawPath(triangle)
    # Three caption lines under it (two at small sizes: a third would blur into them).
    lines = 3 if size >= 32 else 2
    line_height = max(1.0, size * 0.06)
    widths = (0.56, 0.40, 0.48)
    y = size * (0.62 if lines == 3 else 0.66)
    for n in range(lines):
        width = size * widths[n]
        painter.drawRoundedRect(
            QRectF((size - width) / 2, y, width, line_height), line_height / 2, line_height / 2
        )
        y += line_height * 1.9


def _pixmap(size: int, count: int | None) -> QPixmap:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    paint_logo(painter, size)
    if count:
        paint_badge(painter, size, count)
    painter.end()
    return pixmap


def paint_badge(painter: QPainter, size: float, count: int) -> None:
    """The red disc with ``count`` in the top-right corner of a ``size`` square."""
    text = "99+" if count > 99 else str(count)
    # Large enough to read in a 16 to 24 pixel tray, smaller where there is room.
    diameter = size * (0.6 if size < 40 else 0.46) * (1.0 if len(text) == 1 else 1.12)
    width = diameter if len(text) == 1 else diameter * (1.0 + 0.28 * (len(text) - 1))
    disc = QRectF(size - width, 0, width, diameter)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(QPen(QColor("white"), max(1.0, size * 0.04)))
    painter.setBrush(BADGE)
    painter.drawRoundedRect(disc, diameter / 2, diameter / 2)
    font = QFont()
    font.setBold(True)
    font.setPixelSize(max(6, round(diameter * (0.68 if len(text) == 1 else 0.56))))
    painter.setFont(font)
    painter.setPen(QColor("white"))
    painter.drawText(disc, Qt.AlignmentFlag.AlignCenter, text)


def app_icon() -> QIcon:
    """Fredica's icon at every size (made once)."""
    return badged_icon(0)


def badged_icon(count: int) -> QIcon:
    """The icon with ``count`` on its badge (0: no badge). Made once per count."""
    icon = _ICONS.get(count)
    if icon is None:
        icon = QIcon()
        for size in SIZES:
            icon.addPixmap(_pixmap(size, count))
        if len(_ICONS) > 200:  # counts seen over days of work: keep a few
            _ICONS.clear()
        _ICONS[count] = icon
    return icon
