"""The Qt part of ``fredica --selftest`` (:mod:`fredica_app.selftest`): Qt is imported here, in
the GUI package, and only when the check runs.

It proves what a bundle must carry for the window: PySide6 and its libraries, the platform
plugin, the compiled zh_CN translation, the icons (their SVG files and Qt's SVG module), and
every module the main window imports. The window
is Fredica's own :class:`~fredica_app.gui.window.MainWindow`, shown before its host has started
— the state every window is in for its first moments — so no engine and no database is
needed: the window draws, and its calls wait for a host that never opens.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from PySide6 import __version__ as PYSIDE_VERSION
from PySide6.QtCore import (
    QCoreApplication,
    QEvent,
    QEventLoop,
    QLibraryInfo,
    QMessageLogContext,
    QtMsgType,
    QTranslator,
    qInstallMessageHandler,
    qVersion,
)
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from fredica_app.frozen import is_frozen
from fredica_app.gui.app import I18N_DIR, Translations, make_qapplication
from fredica_app.selftest_check import REBUILD, CheckFailed

#: What the window is given to draw itself, shown.
SETTLE_SECONDS = 0.3
#: The navigation's first entry, untranslated: in zh_CN it must read otherwise.
ENGLISH_LIBRARY = "Library"
DEFERRED_DELETE = QEvent.Type.DeferredDelete.value


def qt_version() -> str:
    """The version of the Qt libraries loaded (the licence report names it)."""
    return str(qVersion())


def show_main_window(data_dir: Path) -> str:
    """Create the QApplication (as the app does), check that the zh_CN translation loads,
    show the main window in it on ``data_dir``, close it. Returns the check's detail; raises
    :class:`~fredica_app.selftest_check.CheckFailed`, with what Qt said meanwhile (Qt's messages
    are kept from the terminal: the offscreen platform warns about what it cannot do)."""
    said: list[str] = []
    with _qt_messages(said):
        try:
            return _show_main_window(data_dir)
        except CheckFailed as exc:
            if not said:
                raise
            raise CheckFailed(f"{exc}; Qt said: {' | '.join(said[-3:])}", exc.fix) from exc


@contextlib.contextmanager
def _qt_messages(into: list[str]) -> Iterator[None]:
    """Qt's warnings into ``into`` while inside, instead of standard error."""

    def keep(kind: QtMsgType, context: QMessageLogContext, message: str) -> None:
        if kind != QtMsgType.QtDebugMsg:
            into.append(message)

    previous = qInstallMessageHandler(keep)
    try:
        yield
    finally:
        qInstallMessageHandler(previous)


def _drawn(icon: QIcon) -> bool:
    """Whether ``icon`` draws anything at 24 pixels."""
    image = icon.pixmap(24, 24).toImage()
    return any(image.pixelColor(x, y).alpha() for x in range(24) for y in range(24))


def _show_main_window(data_dir: Path) -> str:
    from fredica_app.gui.host import AppHost
    from fredica_app.gui.window import MainWindow

    if QApplication.instance() is None:
        _require_platform_plugin()
    qapp = make_qapplication()
    translation = QTranslator()
    if not translation.load("fredica_zh_CN", str(I18N_DIR)):
        raise CheckFailed(
            f"the zh_CN translation does not load (fredica_zh_CN.qm in {I18N_DIR})",
            f"the bundle lacks it: {REBUILD}"
            if is_frozen()
            else "build it: `python packaging/translations.py build`",
        )
    languages = Translations(qapp)
    languages.install("zh_CN")
    try:
        window = MainWindow(AppHost(data_dir), data_dir)
        try:
            library = window.nav.item(0).text()
            icon_drawn = _drawn(window.nav.item(0).icon())
            window.show()
            _settle(qapp)
            shown = window.isVisible() and window.windowHandle() is not None
        finally:
            window.retire()  # closes it without stopping a host (none was started)
            window.deleteLater()
            _settle(qapp, 0.0)
    finally:
        languages.install("en")
    if not shown:
        raise CheckFailed(
            f"the main window did not show on the {qapp.platformName()} platform",
            "set QT_QPA_PLATFORM=offscreen, or run it on a desktop session",
        )
    if not icon_drawn:
        raise CheckFailed(
            "the window's icons draw nothing (its SVG files, or Qt's SVG module, are missing)",
            f"the bundle lacks them: {REBUILD}"
            if is_frozen()
            else "check fredica_app/gui/icons and PySide6.QtSvg",
        )
    if library == ENGLISH_LIBRARY:
        raise CheckFailed(
            "the zh_CN translation loads but the window does not speak it",
            f"the bundle's translation is not this version's: {REBUILD}"
            if is_frozen()
            else "rebuild it: `python packaging/translations.py build`",
        )
    return (
        f"PySide6 {PYSIDE_VERSION} (Qt {qVersion()}) on {qapp.platformName()}; the zh_CN "
        f"translation loads ({ENGLISH_LIBRARY!r} reads {library!r}); the main window was "
        "shown and closed"
    )


def _require_platform_plugin() -> None:
    """Qt aborts the process when its platform plugin is missing: look for it first, so that
    a bundle without it fails this check instead of ending the self-test."""
    name = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0]
    if not name:  # Qt's default for the system: not for the self-test to guess
        return
    plugins = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath))
    folders = [plugins / "platforms"]
    folders += [
        Path(p) / "platforms" for p in os.environ.get("QT_PLUGIN_PATH", "").split(os.pathsep) if p
    ]
    if os.environ.get("QT_QPA_PLATFORM_PLUGIN_PATH"):
        folders.append(Path(os.environ["QT_QPA_PLATFORM_PLUGIN_PATH"]))
    if any(any(f.glob(f"*q{name}*")) for f in folders if f.is_dir()):
        return
    raise CheckFailed(
        f"Qt's {name} platform plugin is missing (looked in {', '.join(map(str, folders))})",
        f"the bundle lacks it: {REBUILD}"
        if is_frozen()
        else "reinstall PySide6 (`uv sync`), or set QT_QPA_PLATFORM to a platform it has",
    )


def _settle(qapp: QApplication, seconds: float = SETTLE_SECONDS) -> None:
    """Deliver what is pending (and what it posts) for ``seconds`` at least: shown, painted,
    deleted."""
    until = time.monotonic() + seconds
    while True:
        qapp.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        QCoreApplication.sendPostedEvents(None, DEFERRED_DELETE)  # deleteLater's
        if time.monotonic() >= until:
            return
        time.sleep(0.02)
