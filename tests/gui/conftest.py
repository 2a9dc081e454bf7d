"""Qt runs offscreen here: CI has no display. The variable must be set before the first
QApplication exists (pytest-qt creates it in its ``qapp`` fixture, after this import)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
