"""The interface's icons: one bundled SVG set, drawn in the palette's colours."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPalette

from fredica_app.gui import symbols
from fredica_app.gui.symbols import ICONS_DIR, WARNING, symbol

GUI = Path(symbols.__file__).parent
TEXT = QPalette.ColorRole.WindowText


def names_used() -> set[str]:
    """Every icon the GUI's code asks for by name."""
    used: set[str] = set()
    for path in GUI.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        used |= set(re.findall(r'symbol\(\s*"([a-z0-9-]+)"', text))
    return used


def ink(icon: QIcon, mode: QIcon.Mode = QIcon.Mode.Normal) -> list[QColor]:
    """The colours of the pixels the icon draws at 24 px."""
    image = icon.pixmap(24, 24, mode).toImage()
    return [c for x in range(24) for y in range(24) if (c := image.pixelColor(x, y)).alpha() == 255]


def test_every_icon_the_code_names_is_bundled_and_draws(qapp: Any) -> None:
    used = names_used()
    assert {"play", "pause", "settings", "library", "trash-2", "film"} <= used
    bundled = {p.stem for p in ICONS_DIR.glob("*.svg")}
    assert used <= bundled, f"no file for {sorted(used - bundled)}"
    assert not bundled - used, f"bundled but unused: {sorted(bundled - used)}"
    for name in sorted(used):
        assert len(ink(symbol(name))) > 10, name
    # No style's stock icon is left (they are what looked dated and mismatched).
    assert not any("standardIcon(" in p.read_text(encoding="utf-8") for p in GUI.glob("*.py"))


def test_the_licence_ships_beside_the_icons() -> None:
    licence = (ICONS_DIR / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("ISC License") and "Lucide" in licence
    for path in ICONS_DIR.glob("*.svg"):
        assert path.read_text(encoding="utf-8").startswith("<!-- @license lucide-static v")


def test_an_icon_follows_the_palette_and_its_state(qapp: Any) -> None:
    """Drawn in the text colour of the palette at the moment it is painted: a change of
    theme needs no rebuild; disabled, it is drawn as disabled text, selected as selected text;
    a warning keeps its own."""
    icon = symbol("play")
    original = QGuiApplication.palette()
    try:
        for text in ("#101010", "#f0f0f0"):
            palette = QPalette(original)
            palette.setColor(QPalette.ColorGroup.Normal, TEXT, QColor(text))
            palette.setColor(QPalette.ColorGroup.Disabled, TEXT, QColor("#808080"))
            palette.setColor(QPalette.ColorRole.HighlightedText, QColor("#fefefe"))
            QGuiApplication.setPalette(palette)
            drawn = ink(icon)
            assert drawn and all(c.name() == text for c in drawn)
            assert all(c.name() == "#808080" for c in ink(icon, QIcon.Mode.Disabled))
            assert all(c.name() == "#fefefe" for c in ink(icon, QIcon.Mode.Selected))
    finally:
        QGuiApplication.setPalette(original)
    assert {c.name() for c in ink(symbol("triangle-alert", WARNING))} == {WARNING.name()}


def test_an_unknown_name_is_an_error_not_a_blank(qapp: Any) -> None:
    with pytest.raises(FileNotFoundError):
        symbol("no-such-icon")
