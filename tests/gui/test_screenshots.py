"""The documentation's screenshot renders offscreen: the table with its progress bars."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtGui import QImage

from fredica_app.gui.screenshots import queue_view


def test_the_queue_view_renders(qapp: Any, tmp_path: Path) -> None:
    path = queue_view(tmp_path)
    image = QImage(str(path))
    assert image.width() >= 800
    assert image.height() > 100
