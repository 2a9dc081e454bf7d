"""Starting the desktop app: ``fredica`` with no command, or ``fredica gui``.

:func:`run` makes the ``QApplication`` (its style, palette and interface language), starts the
application host (the engine on its own thread) and shows the main window at once — the
window is drawn before the data directory is open, and fills in when it is.

A change of interface language (settings) replaces the window with a new one in that language;
the host, and the work it runs, go on.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QLibraryInfo, QLocale, QTranslator
from PySide6.QtWidgets import QApplication

from fredica_app.gui import theme
from fredica_app.gui.host import AppHost
from fredica_app.gui.window import MainWindow
from fredica_app.paths import resolve_paths
from fredica_app.settings import load_settings

#: The interface languages: setting value → what the language selector shows.
LANGUAGES = {"auto": "System", "en": "English", "zh_CN": "简体中文"}
#: The compiled translations, beside this module.
I18N_DIR = Path(__file__).with_name("i18n")


class Translations:
    """The translators installed for one interface language (Fredica's own, and Qt's for its
    standard dialogs' buttons)."""

    def __init__(self, app: QApplication) -> None:
        self._app = app
        self._installed: list[QTranslator] = []

    def install(self, language: str) -> str:
        """Switch to ``language`` (a key of :data:`LANGUAGES`); returns the locale used."""
        for translator in self._installed:
            self._app.removeTranslator(translator)
        self._installed = []
        locale = QLocale.system().name() if language in ("", "auto") else language
        if locale.startswith("zh"):
            locale = "zh_CN"
        for name, folder in (
            ("fredica", str(I18N_DIR)),
            ("qtbase", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)),
        ):
            translator = QTranslator(self._app)
            if translator.load(f"{name}_{locale}", folder):
                self._app.installTranslator(translator)
                self._installed.append(translator)
        QLocale.setDefault(QLocale(locale))
        return locale


class GuiApp:
    """The QApplication, the host and the window of one data directory."""

    def __init__(self, qapp: QApplication, data_dir: Path | str | None = None) -> None:
        self.qapp = qapp
        self.paths = resolve_paths(data_dir).ensure()
        settings = load_settings(self.paths.settings_file).settings
        self.theme = theme.FollowSystem(qapp, settings.ui_theme)
        self.translations = Translations(qapp)
        self.translations.install(settings.ui_language)
        self.host = AppHost(self.paths.data_dir)
        self.window = self._new_window()

    def _new_window(self) -> MainWindow:
        window = MainWindow(self.host, self.paths.data_dir)
        window.closed.connect(self.qapp.quit)
        window.settings.language_changed.connect(self.switch_language)
        window.settings.theme_changed.connect(self.theme.set_scheme)
        return window

    def start(self) -> None:
        self.window.show()
        self.host.start()

    def switch_language(self, language: str) -> None:
        """Show the window again in ``language``; work goes on meanwhile."""
        self.translations.install(language)
        old = self.window
        self.window = self._new_window()
        self.window.nav.setCurrentRow(old.nav.currentRow())
        old.retire()
        self.window.show()
        old.deleteLater()


def make_qapplication(argv: list[str] | None = None) -> QApplication:
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    qapp = QApplication(argv if argv is not None else sys.argv[:1])
    qapp.setApplicationName("Fredica")
    qapp.setOrganizationName("Fredica")
    qapp.setStyle("Fusion")  # the same look everywhere; follows the system's light or dark
    qapp.setQuitOnLastWindowClosed(False)  # the window quits once the engine has stopped
    return qapp


def run(data_dir: Path | str | None = None) -> int:
    """Open the window on ``data_dir`` and run until it is closed; the exit status."""
    qapp = make_qapplication()
    gui = GuiApp(qapp, data_dir)
    gui.start()
    code = qapp.exec()
    gui.host.join(15)
    return int(code)
