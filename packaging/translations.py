"""Keep the interface's translations in step with the code.

    python packaging/translations.py update   # the .ts files gain the new strings of the code
    python packaging/translations.py build    # the .qm files the app loads, from the .ts files

``update`` runs Qt's ``lupdate`` over the GUI package and the pure view modules that mark
strings with ``QT_TRANSLATE_NOOP``; a translator then fills the new entries (Qt Linguist, or
any editor: the .ts files are XML). ``build`` runs ``lrelease``. Both tools come with
PySide6. ``tests/gui/test_translations.py`` fails when a string of the code is missing from a
.ts file, left untranslated, or when a .qm file is older than its .ts.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
I18N = ROOT / "fredica_app" / "gui" / "i18n"
#: The languages besides English (the source strings are English).
LANGUAGES = ("zh_CN",)


def sources() -> list[Path]:
    """The files whose strings are translated: the GUI, the view modules that mark theirs
    with ``QT_TRANSLATE_NOOP``, and the jobs' status messages."""
    gui = sorted((ROOT / "fredica_app" / "gui").glob("*.py"))
    views = [
        p
        for p in sorted((ROOT / "fredica_app" / "views").glob("*.py"))
        if "QT_TRANSLATE_NOOP" in p.read_text(encoding="utf-8")
    ]
    # What jobs say they are doing: translated in the ``Status`` context (gui/status_words.py).
    return gui + views + [ROOT / "python_endpoints" / "status.py"]


def ts_file(language: str) -> Path:
    return I18N / f"fredica_{language}.ts"


def qm_file(language: str) -> Path:
    return I18N / f"fredica_{language}.qm"


def tool(name: str) -> str:
    """``pyside6-lupdate`` or ``pyside6-lrelease``, beside this Python first."""
    beside = Path(sys.executable).with_name(f"pyside6-{name}")
    found = str(beside) if beside.exists() else shutil.which(f"pyside6-{name}")
    if found is None:
        raise SystemExit(f"pyside6-{name} not found: install PySide6 in this environment")
    return found


def lupdate(ts: Path, *, no_obsolete: bool = True) -> None:
    argv = [tool("lupdate"), *map(str, sources()), "-locations", "none", "-ts", str(ts), "-silent"]
    if no_obsolete:
        argv.insert(-2, "-no-obsolete")
    subprocess.run(argv, check=True, cwd=ROOT)


def lrelease(ts: Path, qm: Path) -> None:
    subprocess.run([tool("lrelease"), str(ts), "-qm", str(qm), "-silent"], check=True)


def main(argv: list[str]) -> int:
    if argv not in (["update"], ["build"]):
        print(__doc__)
        return 2
    for language in LANGUAGES:
        if argv == ["update"]:
            lupdate(ts_file(language))
        else:
            lrelease(ts_file(language), qm_file(language))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
