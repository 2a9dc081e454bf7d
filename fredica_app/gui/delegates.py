"""The progress column drawn as a bar: the style's own progress bar painted into the cell.

A delegate paints; it creates no widget per row (a QProgressBar per row of 10,000 would cost
memory, layout passes and a repaint storm on every change). The cell's
:class:`~fredica_app.gui.models.ProgressCell` says how far, the label ("42 % · transcoding"),
and whether the bar looks live; no percent draws a busy bar. A label too long for the column
drops the speed, then the status, keeping its percent whole (``fitted_label``), rather than
cutting a word.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPointF, QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QStyleOptionViewItem,
)

from fredica_app.gui.models import PROGRESS_ROLE, ProgressCell
from fredica_app.views.progress_label import fitted_label

# Full enum spellings, looked up once (paint runs for every visible bar on every repaint).
_PANEL = QStyle.PrimitiveElement.PE_PanelItemViewItem
_BAR = QStyle.ControlElement.CE_ProgressBar
_CONTENTS = QStyle.SubElement.SE_ProgressBarContents
_ENABLED = QStyle.StateFlag.State_Enabled
_HORIZONTAL = QStyle.StateFlag.State_Horizontal
_CENTER = Qt.AlignmentFlag.AlignCenter
_ELIDE = Qt.TextElideMode.ElideRight
_DISABLED = QPalette.ColorGroup.Disabled
_TEXT = QPalette.ColorRole.Text
_ON_FILL = QPalette.ColorRole.HighlightedText
_RTL = Qt.LayoutDirection.RightToLeft
#: Space between the bar and the cell's edges, in pixels.
MARGIN = 2
#: Room the style keeps around the label inside the bar.
_TEXT_PADDING = 8


class ProgressDelegate(QStyledItemDelegate):
    """Draws a :class:`~fredica_app.gui.models.ProgressCell` as the style's progress bar;
    any other cell as usual."""

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        cell = index.data(PROGRESS_ROLE)
        if not isinstance(cell, ProgressCell):
            super().paint(painter, option, index)
            return
        widget = option.widget
        style = widget.style() if widget is not None else QApplication.style()
        # The cell's background first, so that a selected row stays highlighted behind the bar.
        style.drawPrimitive(_PANEL, option, painter, widget)
        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(MARGIN, MARGIN, -MARGIN, -MARGIN)
        if cell.active:
            bar.palette = option.palette
        else:
            # The style paints from the palette's current group: the disabled one is grey.
            palette = QPalette(option.palette)
            palette.setCurrentColorGroup(_DISABLED)
            bar.palette = palette
        bar.fontMetrics = option.fontMetrics
        bar.direction = option.direction
        bar.state = _HORIZONTAL | _ENABLED if cell.active else _HORIZONTAL
        bar.minimum = 0
        if cell.percent is None:  # minimum == maximum: the style draws a busy bar
            bar.maximum = 0
            bar.progress = 0
        else:
            bar.maximum = 100
            bar.progress = round(min(100.0, max(0.0, cell.percent)))
        # The bar without its text, then the label drawn here: the style cuts glyphs in two
        # colours where the fill ends (see _label).
        bar.textVisible = False
        style.drawControl(_BAR, bar, painter, widget)
        metrics = option.fontMetrics
        text = fitted_label(
            cell.label,
            bar.rect.width() - _TEXT_PADDING,
            metrics.horizontalAdvance,
            lambda label, width: metrics.elidedText(label, _ELIDE, width),
        )
        if text:
            contents = style.subElementRect(_CONTENTS, bar, widget)
            self._label(painter, bar, contents, text)

    @staticmethod
    def _label(painter: QPainter, bar: QStyleOptionProgressBar, contents: QRect, text: str) -> None:
        """``text`` centred on the bar, each character whole in one colour: light when it
        lies wholly on the fill, dark otherwise (dark reads on the fill too; a glyph cut in
        two colours where the fill ends lost its light half, and "1 / 2" read as a quote
        between two digits). The fill is measured as the style draws it, inside the bar's
        contents rect."""
        rect = bar.rect
        metrics = bar.fontMetrics
        width = metrics.horizontalAdvance(text)
        x = rect.x() + (rect.width() - width) / 2
        baseline = rect.y() + (rect.height() + metrics.ascent() - metrics.descent()) / 2
        at = QPointF(x, baseline)
        # Where the light characters end: after the last one wholly on the fill.
        cut = x
        filled = 0 if bar.maximum <= 0 else contents.width() * bar.progress // bar.maximum
        if filled > 0 and bar.direction != _RTL:
            edge = contents.x() + filled
            right = x
            for char in text:  # up to the edge only: a cost per bar of a few characters
                right += metrics.horizontalAdvance(char)
                if right > edge:
                    break
                cut = right
        palette = bar.palette
        painter.save()
        light = rect.adjusted(0, 0, 0, 0)
        light.setRight(int(cut))
        dark = rect.adjusted(0, 0, 0, 0)
        dark.setLeft(int(cut) + 1 if cut > x else rect.left())
        painter.setClipRect(dark)
        painter.setPen(palette.color(_TEXT))
        painter.drawText(at, text)
        if cut > x:
            painter.setClipRect(light)
            painter.setPen(palette.color(_ON_FILL))
            painter.drawText(at, text)
        painter.restore()

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        hint = super().sizeHint(option, index)
        if isinstance(index.data(PROGRESS_ROLE), ProgressCell):
            # Room for a label like "100 % · transcoding audio" on the bar.
            hint.setWidth(max(hint.width(), 160))
        return hint
