"""What a task's node of the run's DAG shows (:class:`NodeLook`, its badge in words, its
tooltip) and how it is painted: its colours per badge and palette, and the drawing itself
(``dag_view`` places the nodes and keeps them current; this paints one).

Each badge has an accent colour. A node is a card of the palette's base colour tinted with the
accent (more strongly on a dark base, where a light tint would glare), with an accent stripe
and border, and text in the palette's text colour: readable in light and dark palettes alike.
The badge's pill is the accent itself, with black or white text, whichever contrasts more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from PySide6.QtCore import QCoreApplication, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPalette, QPen

from fredica_app.gui.status_words import status_words
from fredica_app.views.queue_state import Badge
from workers.records import TaskRecord
from workers.states import ACTIVE

#: Each badge's accent: distinct hues, saturated enough to tell apart on white and on black.
ACCENTS: Mapping[Badge, str] = {
    Badge.WAITING: "#8d949e",
    Badge.QUEUED: "#8a63d2",
    Badge.RUNNING: "#1f78e0",
    Badge.PAUSED: "#d9a300",
    Badge.DONE: "#2e9e4f",
    Badge.FAILED: "#d93025",
    Badge.CANCELLED: "#8d6e63",
    Badge.SKIPPED: "#1fa396",
    Badge.INTERRUPTED: "#ef6c00",
}
#: Below this level of detail (scale), a node is only a coloured box: its text would be
#: unreadably small, and 200 nodes draw faster without it.
TEXT_DETAIL = 0.45
RADIUS = 7.0
STRIPE = 5.0
PAD = 12.0
PILL_HEIGHT = 17.0
BAR_HEIGHT = 4.0

# Enum values looked up once: paint runs for every visible node on every repaint.
_BASE = QPalette.ColorRole.Base
_TEXT = QPalette.ColorRole.Text
_HIGHLIGHT = QPalette.ColorRole.Highlight
_LEFT = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
_CENTRE = Qt.AlignmentFlag.AlignCenter
_ELIDE = Qt.TextElideMode.ElideRight
_NO_PEN = Qt.PenStyle.NoPen


def badge_text(shown: Badge) -> str:
    """The badge as the user reads it (translated)."""
    texts = {
        Badge.WAITING: QCoreApplication.translate("DagView", "waiting"),
        Badge.QUEUED: QCoreApplication.translate("DagView", "queued"),
        Badge.RUNNING: QCoreApplication.translate("DagView", "running"),
        Badge.PAUSED: QCoreApplication.translate("DagView", "paused"),
        Badge.DONE: QCoreApplication.translate("DagView", "done"),
        Badge.FAILED: QCoreApplication.translate("DagView", "failed"),
        Badge.CANCELLED: QCoreApplication.translate("DagView", "cancelled"),
        Badge.SKIPPED: QCoreApplication.translate("DagView", "skipped"),
        Badge.INTERRUPTED: QCoreApplication.translate("DagView", "interrupted"),
    }
    return texts[shown]


@dataclass(frozen=True, slots=True)
class NodeLook:
    """Everything a node draws; a node repaints when its look changes, and only then."""

    key: str
    type: str
    badge: Badge
    #: The bar's whole percent while the task runs or is paused; None: no bar.
    percent: int | None


def node_look(task: TaskRecord, shown: Badge) -> NodeLook:
    """What ``task``'s node shows with badge ``shown``."""
    percent = None
    if shown in (Badge.RUNNING, Badge.PAUSED):
        percent = round(min(100.0, max(0.0, task.progress)))
    return NodeLook(task.key or task.id[:8], task.type, shown, percent)


def node_tooltip(task: TaskRecord, look: NodeLook) -> str:
    """The node's tooltip: the look in words, then what the task says it does (while it is
    unfinished: a finished task's last status line is stale) and its error."""
    lines = [f"{look.key} · {look.type}", badge_text(look.badge)]
    if look.percent is not None:
        lines[-1] += f" · {look.percent} %"
    if task.status_text and task.status in ACTIVE:
        lines.append(status_words(task))
    if task.error_type:
        lines.append(f"[{task.error_type}] {task.error or ''}".strip())
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class NodeColours:
    """The colours of a node of one badge on one palette."""

    accent: QColor
    fill: QColor
    text: QColor
    dim_text: QColor
    pill_text: QColor
    track: QColor
    highlight: QColor


_cache: dict[tuple[Badge, int, int, int], NodeColours] = {}


def is_dark(palette: QPalette) -> bool:
    """Whether ``palette`` is a dark one (its base, where the graph is drawn, is dark)."""
    return palette.color(_BASE).lightnessF() < 0.5


def accent(shown: Badge, palette: QPalette) -> QColor:
    """The badge's accent, a little lighter on a dark palette."""
    colour = QColor(ACCENTS[shown])
    return colour.lighter(118) if is_dark(palette) else colour


def colours_for(shown: Badge, palette: QPalette) -> NodeColours:
    """A node's colours for ``shown`` on ``palette`` (kept per badge and palette)."""
    base, text, high = palette.color(_BASE), palette.color(_TEXT), palette.color(_HIGHLIGHT)
    key = (shown, base.rgba(), text.rgba(), high.rgba())
    found = _cache.get(key)
    if found is None:
        tint = accent(shown, palette)
        fill = mix(base, tint, 0.30 if is_dark(palette) else 0.13)
        found = _cache[key] = NodeColours(
            accent=tint,
            fill=fill,
            text=QColor(text),
            dim_text=mix(text, fill, 0.33),
            pill_text=contrasting(tint),
            track=mix(fill, text, 0.16),
            highlight=QColor(high),
        )
    return found


def mix(a: QColor, b: QColor, t: float) -> QColor:
    """``a`` blended towards ``b`` by ``t`` (0: a, 1: b)."""
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * t,
        a.greenF() + (b.greenF() - a.greenF()) * t,
        a.blueF() + (b.blueF() - a.blueF()) * t,
    )


def luminance(colour: QColor) -> float:
    """Relative luminance (WCAG), 0 for black to 1 for white."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = colour.redF(), colour.greenF(), colour.blueF()
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def contrasting(colour: QColor) -> QColor:
    """Black or white, whichever contrasts more with ``colour``."""
    lum = luminance(colour)
    on_white, on_black = 1.05 / (lum + 0.05), (lum + 0.05) / 0.05
    return QColor(Qt.GlobalColor.white if on_white >= on_black else Qt.GlobalColor.black)


def _fonts(font: QFont) -> tuple[QFont, QFont]:
    bold = QFont(font)
    bold.setBold(True)
    small = QFont(font)
    if font.pointSizeF() > 0:
        small.setPointSizeF(max(6.0, font.pointSizeF() * 0.86))
    else:
        small.setPixelSize(max(8, round(font.pixelSize() * 0.86)))
    return bold, small


def paint_node(
    painter: QPainter,
    rect: QRectF,
    look: NodeLook,
    label: str,
    colours: NodeColours,
    font: QFont,
    *,
    selected: bool,
    hovered: bool,
    detail: float,
) -> None:
    """Paint a node in ``rect``: the card, the stripe, and (at a readable scale) the key, the
    type, the badge's pill with ``label``, and the progress bar."""
    card = QPainterPath()
    card.addRoundedRect(rect, RADIUS, RADIUS)
    painter.setPen(_NO_PEN)
    painter.fillPath(card, colours.fill)
    painter.save()
    painter.setClipPath(card)
    painter.fillRect(QRectF(rect.x(), rect.y(), STRIPE, rect.height()), colours.accent)
    painter.restore()
    if selected:  # a halo around a highlight-coloured border: found at a glance, zoomed out
        halo = QColor(colours.highlight)
        halo.setAlpha(90)
        painter.setPen(QPen(halo, 5.0))
        painter.drawRoundedRect(rect.adjusted(-2.5, -2.5, 2.5, 2.5), RADIUS + 2, RADIUS + 2)
        pen = QPen(colours.highlight, 2.5)
    else:
        pen = QPen(colours.accent, 2.0 if hovered else 1.2)
    painter.setPen(pen)
    painter.drawPath(card)
    if detail < TEXT_DETAIL:
        return

    bold, small = _fonts(font)
    left = rect.x() + PAD
    right = rect.right() - 8.0
    top = rect.y() + 6.0
    if look.percent:  # 0: just starting, or a job that gives no figure
        label = f"{label} {look.percent} %"
    small_metrics = QFontMetricsF(small)
    pill_width = small_metrics.horizontalAdvance(label) + 12.0
    pill = QRectF(right - pill_width, top, pill_width, PILL_HEIGHT)
    painter.setPen(_NO_PEN)
    painter.setBrush(colours.accent)
    painter.drawRoundedRect(pill, PILL_HEIGHT / 2, PILL_HEIGHT / 2)
    painter.setFont(small)
    painter.setPen(colours.pill_text)
    painter.drawText(pill, _CENTRE, label)

    painter.setFont(bold)
    painter.setPen(colours.text)
    key_rect = QRectF(left, top, max(0.0, pill.left() - 6.0 - left), PILL_HEIGHT)
    key = QFontMetricsF(bold).elidedText(look.key, _ELIDE, key_rect.width())
    painter.drawText(key_rect, _LEFT, key)

    painter.setFont(small)
    painter.setPen(colours.dim_text)
    type_rect = QRectF(left, top + PILL_HEIGHT + 2.0, right - left, PILL_HEIGHT)
    painter.drawText(type_rect, _LEFT, small_metrics.elidedText(look.type, _ELIDE, right - left))

    if look.percent is not None:
        bar = QRectF(left, rect.bottom() - BAR_HEIGHT - 5.0, right - left, BAR_HEIGHT)
        painter.setPen(_NO_PEN)
        painter.setBrush(colours.track)
        painter.drawRoundedRect(bar, BAR_HEIGHT / 2, BAR_HEIGHT / 2)
        if look.percent > 0:
            done = QRectF(bar.x(), bar.y(), bar.width() * look.percent / 100.0, BAR_HEIGHT)
            painter.setBrush(colours.accent)
            painter.drawRoundedRect(done, BAR_HEIGHT / 2, BAR_HEIGHT / 2)


def legend_html(palette: QPalette, texts: Mapping[Badge, str]) -> str:
    """A legend of the badges: a dot in each one's accent, then its name."""
    return "&nbsp;&nbsp; ".join(
        f'<span style="color:{accent(b, palette).name()}">&#9679;</span>&nbsp;{text}'
        for b, text in texts.items()
    )
