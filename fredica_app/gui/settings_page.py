"""The settings page: the form (``settings_form``) over the settings file, saved through the
application host (``settings_work``), with an ffmpeg "Detect" button, a speech model
download, and the desktop's options: tray, notifications, keeping awake, starting at login
(a save writes the login entry) and the watch folders (added with a folder dialog).

Everything that reads or writes goes through :meth:`AppHost.call`: the GUI thread never opens
the file, runs ffmpeg or reads the queue. "Save" validates the whole file with the settings
model and writes nothing unless it is valid; each message goes under its field. What a save
changed is said as applied now (read when work is submitted) or at the next start (read when
the engine or the endpoints server starts): see ``settings_work``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QTimer, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from fredica_app import models
from fredica_app.gui import settings_work as work
from fredica_app.gui.host import AppHost, HostState, Mode
from fredica_app.gui.settings_form import PALETTE_EVENTS, SettingsForm, error_style
from fredica_app.gui.status_words import status_words
from fredica_app.settings import WatchFolder
from fredica_app.views.encoders import by_backend
from workers.records import TaskRecord
from workers.states import ACTIVE, TaskStatus

if TYPE_CHECKING:
    from fredica_app.services import Fredica

#: Between two looks at a model download's task (milliseconds).
DOWNLOAD_POLL_MS = 500
_OPEN = (Mode.ENGINE, Mode.ATTACHED)


class SettingsPage(QWidget):
    """The settings, edited and saved (see the module's docstring)."""

    #: The interface language was changed and saved (``en``, ``zh_CN``, ``auto``).
    language_changed = Signal(str)
    #: The colour scheme was changed and saved (``auto``, ``light``, ``dark``).
    theme_changed = Signal(str)
    #: The settings file was read into the form (a :class:`settings_work.Loaded`).
    loaded = Signal(object)
    #: A save has finished, written or refused (a :class:`settings_work.Saved`).
    saved = Signal(object)
    #: "Detect" has found what it could (a :class:`settings_work.FfmpegFound`).
    detected = Signal(object)

    def __init__(self, host: AppHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.current: work.Loaded | None = None
        self._loading = False
        self._download: str | None = None  # the model download's task id
        self._polling = False

        self.form = SettingsForm()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(self.form)
        self.problem = QLabel()
        self.problem.setObjectName("settings-problem")
        self.problem.setStyleSheet(error_style())
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.status = QLabel()
        self.status.setObjectName("settings-status")
        self.status.setWordWrap(True)
        self.revert_button = QPushButton(self.tr("Revert"))
        self.save_button = QPushButton(self.tr("Save"))
        self.save_button.setDefault(True)
        self.save_button.setEnabled(False)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.revert_button)
        bottom.addWidget(self.save_button)
        column = QVBoxLayout(self)
        column.addWidget(self.problem)
        column.addWidget(scroll, 1)
        column.addLayout(bottom)

        self._poll = QTimer(self)
        self._poll.setInterval(DOWNLOAD_POLL_MS)
        self._poll.timeout.connect(self._poll_download)
        self.save_button.clicked.connect(self.save)
        self.revert_button.clicked.connect(self.reload)
        f = self.form
        f.library_browse.clicked.connect(self._browse_library)
        f.ffmpeg_browse.clicked.connect(self._browse_ffmpeg)
        f.ffmpeg_detect.clicked.connect(self.detect_ffmpeg)
        f.model_download.clicked.connect(self.download_model)
        f.whisper_model.currentTextChanged.connect(self._show_model_state)
        f.watch_add.clicked.connect(self._add_watch_folder)
        f.watch_remove.clicked.connect(f.remove_selected_watch_folders)
        host.state_changed.connect(self._on_state)
        self._on_state(host.state)

    def changeEvent(self, event: QEvent) -> None:
        """A new palette (light to dark): the problem line takes the red that reads on it."""
        super().changeEvent(event)
        if event.type() in PALETTE_EVENTS:
            style = error_style()
            if self.problem.styleSheet() != style:
                self.problem.setStyleSheet(style)

    # --- calls to the host ----------------------------------------------------------------------

    def _call(
        self,
        job: Callable[[Fredica], Awaitable[Any]],
        on_done: Callable[[Any], None],
        on_error: Callable[[Exception], None] | None = None,
    ) -> bool:
        """``host.call``, its answers dropped once this page is gone (a language change
        replaces it); False when the application is not open."""

        def alive(callback: Callable[[Any], None]) -> Callable[[Any], None]:
            return lambda value: callback(value) if isValid(self) else None

        failed = on_error or self._on_error
        if self.host.state.mode not in _OPEN:  # host.call would wait for it: never here
            failed(RuntimeError(self.tr("the application is not open yet")))
            return False
        try:
            self.host.call(job, alive(on_done), alive(failed))
        except RuntimeError as exc:  # closed, or never opened
            failed(exc)
            return False
        return True

    def _on_state(self, state: HostState) -> None:
        if state.mode in _OPEN and self.current is None and not self._loading:
            self.reload()
        elif state.mode is Mode.STOPPED:
            self._poll.stop()

    def _on_error(self, exc: Exception) -> None:
        self._loading = self._polling = False
        self.save_button.setEnabled(self.current is not None)
        self.status.setText(self.tr("Something went wrong: %1").replace("%1", str(exc)))

    # --- loading and saving ---------------------------------------------------------------------

    def reload(self) -> None:
        """Read the settings file into the form again (what "Revert" does)."""
        self._loading = True
        self._call(work.load, self._on_loaded)

    def _on_loaded(self, loaded: work.Loaded) -> None:
        self._loading = False
        self.current = loaded
        self.form.set_values(loaded)
        self._show_model_state()
        self.problem.setText(loaded.problem or "")
        self.problem.setVisible(bool(loaded.problem))
        self.status.setText(self.tr("Settings file: %1").replace("%1", str(loaded.settings_file)))
        self.save_button.setEnabled(True)
        self.loaded.emit(loaded)

    def save(self) -> None:
        """Check the form, and save it when it is valid (see the module's docstring)."""
        values, errors = self.form.values()
        self.save_button.setEnabled(False)
        self.status.setText(self.tr("Checking…") if errors else self.tr("Saving…"))
        self._call(
            lambda app: work.save(app, values, check_only=bool(errors)),
            lambda saved: self._on_saved(saved, errors),
        )

    def _on_saved(self, saved: work.Saved, form_errors: dict[str, str]) -> None:
        """``form_errors``: what the form found wrong itself (nothing was written then)."""
        self.save_button.setEnabled(True)
        if saved.errors or form_errors:
            model = {k: self.message(k, e) for k, e in saved.errors.items()}
            self._refuse({**model, **form_errors})
        else:
            assert saved.settings is not None and self.current is not None
            self.current = replace(self.current, settings=saved.settings, problem=None)
            self.form.clear_errors()
            self.problem.hide()
            self.status.setText(self._saved_text(saved.changed))
        self.saved.emit(saved)
        if saved.settings is not None and "ui_theme" in saved.changed:
            self.theme_changed.emit(saved.settings.ui_theme)
        if saved.settings is not None and "ui_language" in saved.changed:
            self.language_changed.emit(saved.settings.ui_language)  # last: the window is remade

    def _refuse(self, errors: dict[str, str]) -> None:
        left = self.form.show_errors(errors)
        self.problem.setText("\n".join(f"{key}: {message}" for key, message in left.items()))
        self.problem.setVisible(bool(left))
        self.status.setText(self.tr("Nothing was saved: correct what is marked in red."))

    def message(self, key: str, error: work.FieldError) -> str:
        """What to say of the model's complaint ``error`` about the setting ``key``."""
        hints = {
            "language": self.tr("Write auto, or a language code such as en, zh or pt-BR"),
            "llm_api_key_env": self.tr(
                "The name of an environment variable: capital letters, digits and _ "
                "(e.g. OPENAI_API_KEY)"
            ),
            "whisper_model": self.tr("Choose a model, or give the path of a model folder"),
        }
        if key in hints:
            return hints[key]
        if error.type == "autostart":  # the system refused the login entry: its words
            return error.message
        if key == "watch_folders" and "row" in error.context:
            row = str(int(error.context["row"]) + 1) if error.context["row"].isdigit() else "?"
            return self.tr("Folder %1: %2").replace("%1", row).replace("%2", error.message)
        if error.type == "greater_than_equal":
            return self.tr("At least %1").replace("%1", error.context.get("ge", "?"))
        if error.type == "less_than_equal":
            return self.tr("At most %1").replace("%1", error.context.get("le", "?"))
        return error.message

    def _saved_text(self, changed: frozenset[str]) -> str:
        if not changed:
            return self.tr("Saved (nothing had changed).")
        names = self.form.labels
        # (The language needs no word: the window is remade in it at once.)
        live = changed & work.LIVE_KEYS - work.AT_ONCE_KEYS
        now = sorted(names[k] for k in live if k != "ui_language")
        at_once = sorted(names[k] for k in changed & work.AT_ONCE_KEYS)
        later = sorted(names[k] for k in changed & work.RESTART_KEYS)
        text = self.tr("Saved.")
        if at_once:
            text += " " + self.tr("In force now: %1.").replace("%1", ", ".join(at_once))
        if now:
            text += " " + self.tr("In force now, for new work: %1.").replace("%1", ", ".join(now))
        if later:
            when = (
                self.tr("Applies when the worker that runs the queue starts again: %1.")
                if self.host.state.mode is Mode.ATTACHED
                else self.tr("Applies the next time Fredica starts: %1.")
            )
            text += " " + when.replace("%1", ", ".join(later))
        return text

    # --- choosing files (a test may replace these) ----------------------------------------------

    def choose_directory(self, title: str, start: str) -> str | None:
        """Ask for a folder; None when the user gives up."""
        return QFileDialog.getExistingDirectory(self, title, start) or None

    def choose_file(self, title: str, start: str) -> str | None:
        """Ask for a file; None when the user gives up."""
        return QFileDialog.getOpenFileName(self, title, start)[0] or None

    def _browse_library(self) -> None:
        chosen = self.choose_directory(self.tr("Library folder"), self.form.library_dir.text())
        if chosen:
            self.form.library_dir.setText(chosen)

    def _add_watch_folder(self) -> None:
        chosen = self.choose_directory(self.tr("Watch a folder"), "")
        if chosen:
            # Not validated here: a path the dialog gives is absolute; any other is refused
            # under the table on saving.
            self.form.add_watch_folder(WatchFolder.model_construct(folder=Path(chosen)))

    def _browse_ffmpeg(self) -> None:
        chosen = self.choose_file(self.tr("ffmpeg"), self.form.ffmpeg_path.text())
        if chosen:
            self.form.ffmpeg_path.setText(chosen)

    # --- ffmpeg ---------------------------------------------------------------------------------

    def detect_ffmpeg(self) -> None:
        """Find the ffmpeg the form names (else the bundled one) and what it offers."""
        configured = self.form.ffmpeg_path.text().strip() or None
        f = self.form
        f.ffmpeg_detect.setEnabled(False)
        f.ffmpeg_result.setText(self.tr("Looking at ffmpeg…"))
        f.ffmpeg_result.show()
        self._call(lambda app: work.detect_ffmpeg(configured), self._on_detected, self._undetected)

    def _undetected(self, exc: Exception) -> None:
        self.form.ffmpeg_detect.setEnabled(True)
        self.form.ffmpeg_result.setText(self.tr("Could not look: %1").replace("%1", str(exc)))

    def _on_detected(self, found: work.FfmpegFound) -> None:
        self.form.ffmpeg_detect.setEnabled(True)
        self.form.ffmpeg_result.setText(self.describe_ffmpeg(found))
        self.detected.emit(found)

    def describe_ffmpeg(self, found: work.FfmpegFound) -> str:
        """What "Detect" found, in a few lines."""
        if found.error:
            where = found.binary or self.tr("the bundled ffmpeg")
            return self.tr("Cannot use %1: %2").replace("%1", where).replace("%2", found.error)
        what = self.tr("bundled") if found.bundled else self.tr("from the settings")
        lines = [
            self.tr("ffmpeg %1 (%2): %3")
            .replace("%1", found.version or "?")
            .replace("%2", what)
            .replace("%3", found.binary)
        ]
        groups = by_backend(found.hardware)
        if groups:
            lines.append(self.tr("Hardware encoders it was built with:"))
            lines += [f"  • {api}: {', '.join(names)}" for api, names in groups]
        else:
            lines.append(self.tr("No hardware encoders: video is encoded on the CPU."))
        lines.append(
            self.tr("Working on this computer for H.264: %1.").replace(
                "%1", ", ".join(found.working_h264)
            )
            if found.working_h264
            else self.tr("None works on this computer for H.264: libx264 on the CPU is used.")
        )
        return "\n".join(lines)

    # --- speech models --------------------------------------------------------------------------

    def _show_model_state(self, *_: Any) -> None:
        if self.current is None or self._download is not None:
            return
        name = self.form.whisper_model.currentText().strip()
        f = self.form
        can_download = False
        if not name:
            text = ""
        elif name in f.installed_models:
            text = self.tr("Installed.")
        elif not models.is_model_name(name):
            text = self.tr("The path of a model folder.")
        elif name in models.DOWNLOADABLE:
            can_download = True
            text = self.tr(
                "Not installed: downloaded the first time a transcription needs it, or now."
            )
        else:
            text = self.tr(
                "Not a model Fredica can download: install it into %1 yourself, or give the "
                "path of a model folder."
            ).replace("%1", str(self.current.models_dir))
        f.model_status.setText(text)
        f.model_download.setEnabled(can_download)
        f.model_download.setToolTip(
            self.tr("Download it into %1 now, through the queue").replace(
                "%1", str(self.current.models_dir)
            )
            if can_download
            else self.tr("Only a model that is not installed and that Fredica knows")
        )

    def download_model(self) -> None:
        """Queue the download of the chosen model; its progress shows under it."""
        name = self.form.whisper_model.currentText().strip()
        self.form.model_download.setEnabled(False)
        self.form.model_status.setText(self.tr("Queueing the download of %1…").replace("%1", name))
        self._call(
            lambda app: work.download_model(app, name),
            self._on_download_queued,
            self._not_queued,
        )

    def _not_queued(self, exc: Exception) -> None:
        self.form.model_download.setEnabled(True)
        self.form.model_status.setText(
            self.tr("Could not queue the download: %1").replace("%1", str(exc))
        )

    def _on_download_queued(self, task_id: str) -> None:
        self._download = task_id
        self.form.model_progress.setValue(0)
        self.form.model_progress.show()
        self._poll.start()

    def _poll_download(self) -> None:
        task_id = self._download
        if task_id is None or self._polling:
            return
        self._polling = True
        self._call(lambda app: work.task_record(app, task_id), self._on_download_record)

    def _on_download_record(self, task: TaskRecord) -> None:
        self._polling = False
        f = self.form
        name = str(task.payload.get("name", ""))
        f.model_progress.setValue(int(task.progress))
        if task.status in ACTIVE:
            what = status_words(task) or (
                self.tr("waiting in the queue")
                if task.status is TaskStatus.PENDING
                else self.tr("downloading")
            )
            f.model_status.setText(f"{name}: {what}")
            return
        self._poll.stop()
        self._download = None
        f.model_progress.hide()
        if task.status is TaskStatus.COMPLETED:
            self._call(work.installed_models, self._on_models)
        else:
            f.model_status.setText(
                self.tr("The download of %1 did not finish: %2")
                .replace("%1", name)
                .replace("%2", task.error or task.status.value)
            )
            f.model_download.setEnabled(True)

    def _on_models(self, installed: tuple[str, ...]) -> None:
        self.form.set_models(installed)
        self._show_model_state()
