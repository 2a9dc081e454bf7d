"""The app's icon as files for installers: PNGs in the hicolor sizes, a Windows ``.ico`` and a
macOS ``.icns``.

The icon is drawn in code (``fredica_app.gui.icon``), so these files are made at build time
from that drawing, each size drawn at its own size (crisp at 16 px), never committed:
``python packaging/icons.py OUT`` or :func:`render` from ``build.py``. Qt draws offscreen;
Pillow writes the ``.ico`` and ``.icns`` containers from the PNGs.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

#: The sizes of the hicolor theme that a launcher or a file manager asks for.
HICOLOR_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
ICNS_SIZES = (16, 32, 64, 128, 256, 512, 1024)


def _draw_pngs(sizes: tuple[int, ...]) -> dict[int, bytes]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter

    from fredica_app.gui.icon import paint_logo

    _app = QGuiApplication.instance() or QGuiApplication([])
    pngs: dict[int, bytes] = {}
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        paint_logo(painter, size)
        painter.end()
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        image.save(buffer, "PNG")
        pngs[size] = bytes(data.data())
    return pngs


def render(out: Path) -> dict[str, Path]:
    """Write the icon files under ``out``; returns them by kind: ``hicolor`` (the folder of
    ``SIZExSIZE/apps/fredica.png``), ``png`` (the 512 px one), ``ico`` and ``icns``."""
    from PIL import Image

    pngs = _draw_pngs(tuple(sorted({*HICOLOR_SIZES, *ICO_SIZES, *ICNS_SIZES})))
    hicolor = out / "hicolor"
    for size in HICOLOR_SIZES:
        target = hicolor / f"{size}x{size}" / "apps" / "fredica.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(pngs[size])
    images = {size: Image.open(io.BytesIO(png)) for size, png in pngs.items()}
    ico = out / "fredica.ico"
    largest = images[max(ICO_SIZES)]
    largest.save(
        ico,
        format="ICO",
        sizes=[(s, s) for s in ICO_SIZES],
        append_images=[images[s] for s in ICO_SIZES if s != max(ICO_SIZES)],
    )
    icns = out / "fredica.icns"
    images[max(ICNS_SIZES)].save(
        icns,
        format="ICNS",
        append_images=[images[s] for s in ICNS_SIZES if s != max(ICNS_SIZES)],
    )
    png = out / "fredica.png"
    png.write_bytes(pngs[512])
    return {"hicolor": hicolor, "png": png, "ico": ico, "icns": icns}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder to write the icons in")
    args = parser.parse_args(argv)
    for kind, path in render(args.out).items():
        print(f"{kind}: {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
