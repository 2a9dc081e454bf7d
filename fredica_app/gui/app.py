"""The desktop app: the ``QApplication`` (:func:`make_qapplication`: its style and icon) and
:class:`GuiApp` — the interface language, the application host (the engine on its own
thread) and the main window, shown at once: the window is drawn before the data directory is
open, and fills in when it is. ``fredica`` with no command, or ``fredica gui``, starts it
through :mod:`fredica_app.gui.launch` (one instance per data directory).

A change of interface language (settings) replaces the window with a new one in that language;
the host, and the work it runs, go on.

Beside the window, the app has a tray icon where the desktop has a tray (``tray``), one
notifier for everything it tells the user (``notify``) and what decides what to tell
(``notices``). Closing the window while tasks run, with a tray and ``close_to_tray`` on,
hides it: the app goes on in the tray until Quit (the tray's menu, or File ▸ Quit).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator
from PySide6.QtWidgets import QApplication

from fredica_app.gui import theme
from fredica_app.gui.collector import GuiThreadCollector
from fredica_app.gui.host import AppHost
from fredica_app.gui.icon import app_icon
from fredica_app.gui.notices import NoticeWatcher
from fredica_app.gui.notify import Notifier
from fredica_app.gui.tray import Tray
from fredica_app.gui.when_done import WhenDoneController, when_done_menu
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


#: The window's remembered state (``window.ini``): the tray's first-time message was shown.
TOLD_ABOUT_TRAY = "tray/told"


class GuiApp:
    """The QApplication, the host, the window, the tray and the notifications of one data
    directory."""

    def __init__(self, qapp: QApplication, data_dir: Path | str | None = None) -> None:
        self.qapp = qapp
        self.paths = resolve_paths(data_dir).ensure()
        settings = load_settings(self.paths.settings_file).settings
        self.theme = theme.FollowSystem(qapp, settings.ui_theme)
        self.translations = Translations(qapp)
        self.translations.install(settings.ui_language)
        #: Closing the window while tasks run hides it in the tray (``settings``).
        self.close_to_tray = settings.close_to_tray
        self.host = AppHost(self.paths.data_dir)
        #: Garbage collection on this thread only, from the host's start to its end: the
        #: host's thread must not finalize Qt objects (``collector``).
        self.collector = GuiThreadCollector()
        self.notifier = Notifier(enabled=settings.notifications)
        self.tray = Tray.create()
        if self.tray is not None:
            self.notifier.set_tray(self.tray.icon)
            self.tray.show_requested.connect(self.show_window)
            self.tray.hide_requested.connect(self.hide_window)
            self.tray.quit_requested.connect(self.quit)
        self.notices = NoticeWatcher(self.host, self.notifier)
        #: What to do when the queue is done: chosen in the window's menu or the tray's, for
        #: this session.
        self.when_done = WhenDoneController(
            lambda title, body: self.notifier.notify(title, body, essential=True)
        )
        self.when_done.quit_requested.connect(self.quit)
        if self.tray is not None:
            self.tray.add_submenu(when_done_menu(self.when_done))
        self.notifier.show_run.connect(self.show_run)
        self.notifier.show_queue.connect(self.show_queue)
        self.host.stopped.connect(self._on_stopped)
        self.host.watch_report.connect(self._on_watch_report)
        self.window = self._new_window()

    def _new_window(self) -> MainWindow:
        window = MainWindow(self.host, self.paths.data_dir)
        window.closed.connect(self.qapp.quit)
        window.settings.language_changed.connect(self.switch_language)
        window.settings.theme_changed.connect(self.theme.set_scheme)
        window.settings.saved.connect(self._on_settings_saved)
        window.keep_in_tray = self.keeps_in_tray
        window.hidden_to_tray.connect(self._tell_about_tray)
        window.attach_when_done(self.when_done)
        self.notifier.set_window(window)
        self.notices.attach(window)
        if self.tray is not None:
            self.tray.attach(window)
        return window

    def start(self, *, hidden: bool = False) -> None:
        """Show the window (``hidden``: not, when there is a tray to find the app in) and
        open the data directory."""
        if not (hidden and self.tray is not None):
            self.window.show()
        self.collector.start()
        self.host.start()

    # --- the window and the tray -------------------------------------------------------------

    def keeps_in_tray(self) -> bool:
        """Whether closing the window now hides it rather than quits: a tray to find the
        app in, ``close_to_tray`` on, and tasks running."""
        tray = self.tray
        return (
            tray is not None
            and tray.icon.isVisible()
            and self.close_to_tray
            and self.window.running_tasks > 0
        )

    def show_window(self) -> None:
        """Bring the window back and to the front (from the tray, or minimised)."""
        window = self.window
        if window.isMinimized():
            window.showNormal()
        else:
            window.show()
        window.raise_()
        window.activateWindow()

    def hide_window(self) -> None:
        self.window.hide()

    def show_run(self, run_id: str) -> None:
        self.show_window()
        self.window.show_run(run_id)

    def show_queue(self) -> None:
        self.show_window()
        self.window.nav.setCurrentRow(self.window.QUEUE)

    def quit(self) -> None:
        """Quit as File ▸ Quit does (asking first while tasks run)."""
        self.window.quit()

    def _tell_about_tray(self) -> None:
        """The first time the window goes to the tray: say where the app went."""
        state = self.window.view_state
        if str(state.value(TOLD_ABOUT_TRAY, "false")).lower() == "true":
            return
        state.set_value(TOLD_ABOUT_TRAY, True)
        state.sync()
        self.notifier.notify(
            QCoreApplication.translate("GuiApp", "Fredica is still running"),
            QCoreApplication.translate(
                "GuiApp",
                "Your tasks go on in the background. Click the tray icon to open the window; "
                "choose Quit in its menu to stop.",
            ),
            essential=True,
        )

    def _on_settings_saved(self, saved: Any) -> None:
        settings = getattr(saved, "settings", None)
        if settings is not None:
            self.close_to_tray = settings.close_to_tray
            self.notifier.enabled = settings.notifications

    def _on_watch_report(self, report: Any) -> None:
        """What the watch folders did: a file submitted is said in the status bar; a problem
        (a folder missing, a file that cannot be imported) is notified, once each (the watcher
        says a problem again only when it changes)."""
        if report.kind == "submitted":
            text = QCoreApplication.translate("GuiApp", "Watch folder: %1 submitted to %2")
            template = report.template or ""
            self.window.statusBar().showMessage(
                text.replace("%1", report.path.name).replace("%2", template), 15_000
            )
        elif report.kind == "problem":
            self.notifier.notify(
                QCoreApplication.translate("GuiApp", "Watch folder"),
                f"{report.path}: {report.message}",
            )

    def _on_stopped(self) -> None:
        if self.tray is not None:
            self.tray.hide()
        self.notifier.close()
        self.collector.stop()  # the host's thread, and the engine's, have ended

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
    qapp.setWindowIcon(app_icon())
    qapp.setDesktopFileName("fredica")  # the desktop entry: its name and icon in the taskbar
    qapp.setQuitOnLastWindowClosed(False)  # the window quits once the engine has stopped
    return qapp
