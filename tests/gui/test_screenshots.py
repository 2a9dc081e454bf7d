"""The documentation's screenshots come from a real run: samples made, a worker killed
mid-transcription, the window opened on what it left. Each screen is rendered in both
languages and both themes, and each image shows a drawn window; the restart review's only
once the restart banner shows (the tool waits for it, and fails without it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from fredica_app.gui.screenshots import PASSES, SCREENS, WINDOW

pytestmark = pytest.mark.slow


def test_every_screen_is_rendered_from_a_real_run(qapp: object, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}  # its own screen
    done = subprocess.run(
        [sys.executable, "-m", "fredica_app.gui.screenshots", str(tmp_path), "--seconds", "20"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    expected = {f"{s}-{lang}-{theme}.png" for s in SCREENS for lang, theme in PASSES}
    assert {p.name for p in tmp_path.glob("*.png")} == expected
    for name in expected:
        image = QImage(str(tmp_path / name))
        assert (image.width(), image.height()) == WINDOW, name
        colours = {
            image.pixel(x, y)
            for x in range(0, image.width(), 9)
            for y in range(0, image.height(), 9)
        }
        assert len(colours) > 12, f"{name} looks blank"
    # Dark is dark: the window's background in the dark versions is darker.
    light = QImage(str(tmp_path / "settings-en-light.png")).pixelColor(5, WINDOW[1] // 2)
    dark = QImage(str(tmp_path / "settings-en-dark.png")).pixelColor(5, WINDOW[1] // 2)
    assert dark.lightness() < light.lightness() - 80
