"""The progress bar's label, painted offscreen with the app's style: one text at one place,
each character whole in one colour — light wholly on the fill, dark elsewhere. At any fill,
the bar is the fully filled bar's well inside the fill, and the empty bar's past its end (a
label drawn twice at two places, or light text past the fill, breaks that); and no column of
the label past the fill holds light text."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QColor, QImage, QPainter, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QStyle, QStyleOptionProgressBar, QStyleOptionViewItem, QTableView

from fredica_app.gui.delegates import MARGIN, ProgressDelegate
from fredica_app.gui.models import PROGRESS_ROLE, ProgressCell

W, H = 240, 26


def render(view: QTableView, cell: ProgressCell, w: int = W) -> QImage:
    model = QStandardItemModel(1, 1)
    item = QStandardItem()
    item.setData(cell, PROGRESS_ROLE)
    model.setItem(0, 0, item)
    image = QImage(w, H, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    option = QStyleOptionViewItem()
    option.rect = QRect(0, 0, w, H)
    option.widget = view
    option.fontMetrics = view.fontMetrics()
    option.palette = view.palette()
    painter = QPainter(image)
    ProgressDelegate().paint(painter, option, model.index(0, 0))
    painter.end()
    return image


def fill_edge(view: QTableView, percent: int) -> int:
    """Where the style ends the fill of a bar at ``percent`` (x, in the cell)."""
    bar = QStyleOptionProgressBar()
    bar.rect = QRect(0, 0, W, H).adjusted(MARGIN, MARGIN, -MARGIN, -MARGIN)
    contents = view.style().subElementRect(QStyle.SubElement.SE_ProgressBarContents, bar, view)
    return contents.left() + contents.width() * percent // 100


@pytest.mark.parametrize("percent", [17, 33, 50, 71])
def test_the_label_is_one_text_split_where_the_fill_ends(qtbot: Any, percent: int) -> None:
    view = QTableView()
    qtbot.addWidget(view)
    label = "1 / 2 · transcoding (13.5x)"
    empty = render(view, ProgressCell(0.0, label))
    full = render(view, ProgressCell(100.0, label))
    part = render(view, ProgressCell(float(percent), label))
    edge = fill_edge(view, percent)
    glyph = view.fontMetrics().horizontalAdvance("W")  # the widest a character may be
    for x in range(W):
        if edge - glyph - 2 <= x <= edge + 2:
            continue  # the fill's own edge, and the character it may cross (drawn dark)
        like = full if x < edge else empty
        for y in range(MARGIN + 2, H - MARGIN - 2):
            assert part.pixel(x, y) == like.pixel(x, y), (x, y)
    # And the label is there: the empty bar holds dark text pixels in its middle.
    middle = {empty.pixelColor(x, H // 2).lightness() for x in range(W // 4, 3 * W // 4)}
    assert min(middle) < 128


def test_a_narrow_bar_keeps_the_percent_and_drops_the_status(qtbot: Any) -> None:
    """Too narrow for "60 % · transcoding (13.5x)": the bar says "60 %", not "60 % · tr…"."""
    view = QTableView()
    qtbot.addWidget(view)
    long, short = "60 % · transcoding (13.5x)", "60 %"
    narrow = view.fontMetrics().horizontalAdvance(short) + 40
    assert render(view, ProgressCell(60.0, long), narrow) == render(
        view, ProgressCell(60.0, short), narrow
    )
    wide = render(view, ProgressCell(60.0, long))  # where it fits, the status is there
    assert wide != render(view, ProgressCell(60.0, short))
