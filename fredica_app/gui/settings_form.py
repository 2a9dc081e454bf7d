"""The settings page's form: one editor per setting, grouped, each with a red line under it
for its error; the values in and out as plain Python.

The form checks only what the settings model cannot say of a text box (a slot that is not a
whole number, a relative path); everything else is the model's to judge, and its messages are
shown under the field they concern (:meth:`SettingsForm.show_errors`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fredica_app import models
from fredica_app.gui.settings_work import SLOT_CLASSES, Loaded
from fredica_app.settings import Settings, WatchFolder
from fredica_app.templates import BUILTIN
from workers.running import default_slots

#: What tells a widget that the colours changed (the theme switched between light and dark).
PALETTE_EVENTS = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)


def error_style() -> str:
    """The stylesheet of an error line: a red that reads on the application's palette,
    light or dark."""
    dark = QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128
    return f"color: {'#ff6b6b' if dark else '#c62828'};"


#: The templates a watch folder may submit its files to: those that take a media file.
WATCH_TEMPLATES = tuple(name for name, t in BUILTIN.items() if t.source == "file")
#: The watch folders table's columns.
FOLDER, TEMPLATE, RECURSIVE, PATTERNS, PARAMS = range(5)


def _choices(key: str) -> tuple[str, ...]:
    return tuple(str(v) for v in get_args(Settings.model_fields[key].annotation))


def _text(edit: QLineEdit) -> str | None:
    text = edit.text().strip()
    return text or None


class WheelGuard(QObject):
    """Keeps a scrolling wheel from changing a choice or a number it passes over: a box that
    does not have the focus (a click or Tab gives it) lets the wheel go to the page, which
    scrolls. A user scrolling down the settings changed the speech model, the slots or the
    theme under the pointer without seeing it."""

    def watch(self, box: QWidget) -> None:
        box.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the wheel does not give it the focus
        box.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Wheel and isinstance(watched, QWidget):
            if not watched.hasFocus():
                event.ignore()  # on to the parents: the scroll area scrolls
                return True
        return False


_guard: WheelGuard | None = None


def wheel_guard() -> WheelGuard:
    """The one guard of every form: a parentless object the module keeps for the process's
    life, so that no form's collection can take an event filter that boxes still call (an
    event filter owned by a form was one more object in the form's reference cycle)."""
    global _guard
    if _guard is None:
        _guard = WheelGuard()
    return _guard


class SettingsForm(QWidget):
    """The editors of the settings (see the module's docstring). The buttons that do
    something (Browse…, Detect, Download) are the page's to connect."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        #: The red line under each field, by setting (``slots.cpu`` for a slot).
        self.errors: dict[str, QLabel] = {}
        #: What each setting is called on the form (for saying what a save changed).
        self.labels: dict[str, str] = {}
        self._row_labels: list[QLabel] = []
        #: The speech models installed, as last listed (:meth:`set_models`).
        self.installed_models: tuple[str, ...] = ()
        column = QVBoxLayout(self)
        column.addWidget(self._library_group())
        column.addWidget(self._concurrency_group())
        column.addWidget(self._ffmpeg_group())
        column.addWidget(self._speech_group())
        column.addWidget(self._burn_group())
        column.addWidget(self._llm_group())
        column.addWidget(self._network_group())
        column.addWidget(self._interface_group())
        column.addWidget(self._desktop_group())
        column.addWidget(self._watch_group())
        column.addStretch(1)
        for kind in (QComboBox, QAbstractSpinBox):
            for box in self.findChildren(kind):
                wheel_guard().watch(box)
        # One label column for every group: the fields line up from one group to the next.
        width = max(label.sizeHint().width() for label in self._row_labels)
        for label in self._row_labels:
            label.setMinimumWidth(width)
        # Two rows say "Model:": what a save's message calls them tells them apart.
        self.labels["whisper_model"] = self.tr("Speech model")
        self.labels["llm_model"] = self.tr("Language model")

    def changeEvent(self, event: QEvent) -> None:
        """A new palette (light to dark): the error lines take the red that reads on it."""
        super().changeEvent(event)
        if event.type() in PALETTE_EVENTS:
            style = error_style()
            for label in self.errors.values():
                if label.styleSheet() != style:
                    label.setStyleSheet(style)

    # --- building -----------------------------------------------------------------------------

    def _row(
        self, form: QFormLayout, key: str, label: str, *editors: QWidget, narrow: bool = False
    ) -> QVBoxLayout:
        """A form row: ``label``, then the editors side by side (``narrow``: as wide as they
        need, else the first one takes the room), the error line under them. Returns the
        cell's column, for more lines under the field."""
        cell = QWidget()
        box = QVBoxLayout(cell)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        line = QHBoxLayout()
        for i, editor in enumerate(editors):
            line.addWidget(editor, 0 if narrow or i else 1)
        if narrow:
            line.addStretch(1)
        box.addLayout(line)
        box.addWidget(self._error_label(key))
        form.addRow(self._label(label), cell)
        self.labels[key] = label.rstrip(":")
        return box

    def _label(self, text: str) -> QLabel:
        label = QLabel(text)
        self._row_labels.append(label)
        return label

    def _error_label(self, key: str) -> QLabel:
        error = QLabel()
        error.setObjectName(f"error-{key}")
        error.setStyleSheet(error_style())
        error.setWordWrap(True)
        error.hide()
        self.errors[key] = error
        return error

    def _group(self, title: str) -> tuple[QGroupBox, QFormLayout]:
        group = QGroupBox(title)
        form = QFormLayout(group)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        return group, form

    def _library_group(self) -> QGroupBox:
        group, form = self._group(self.tr("Library"))
        self.library_dir = QLineEdit()
        self.library_browse = QPushButton(self.tr("Browse…"))
        self._row(form, "library_dir", self.tr("Library folder:"), self.library_dir,
                  self.library_browse)  # fmt: skip
        return group

    def _concurrency_group(self) -> QGroupBox:
        group, form = self._group(self.tr("Concurrency"))
        self.max_workers = QSpinBox()
        # Below and above the model's bounds on purpose: its message says what is allowed.
        self.max_workers.setRange(0, 999)
        self.max_workers.setMinimumWidth(90)
        self._row(form, "max_workers", self.tr("Tasks at once:"), self.max_workers, narrow=True)
        names = {"cpu": self.tr("CPU"), "gpu": self.tr("GPU"), "net": self.tr("Network"),
                 "io": self.tr("Disk")}  # fmt: skip
        defaults = default_slots()
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        self.slot_edits: dict[str, QLineEdit] = {}
        for column, name in enumerate(SLOT_CLASSES):
            edit = self.slot_edits[name] = QLineEdit()
            edit.setObjectName(f"slot-{name}")
            edit.setMaxLength(4)
            edit.setPlaceholderText(self.tr("default: %1").replace("%1", str(defaults[name])))
            grid.addWidget(QLabel(names[name]), 0, column)
            grid.addWidget(edit, 1, column)
            grid.addWidget(self._error_label(f"slots.{name}"), 2, column)
        cell = QWidget()
        box = QVBoxLayout(cell)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(grid)
        box.addWidget(self._error_label("slots"))
        form.addRow(self._label(self.tr("Slots per resource:")), cell)
        self.labels["slots"] = self.tr("Slots per resource")
        return group

    def _ffmpeg_group(self) -> QGroupBox:
        group, form = self._group(self.tr("ffmpeg"))
        self.ffmpeg_path = QLineEdit()
        self.ffmpeg_path.setPlaceholderText(self.tr("The bundled ffmpeg"))
        self.ffmpeg_browse = QPushButton(self.tr("Browse…"))
        self.ffmpeg_detect = QPushButton(self.tr("Detect"))
        box = self._row(form, "ffmpeg_path", self.tr("ffmpeg:"), self.ffmpeg_path,
                        self.ffmpeg_browse, self.ffmpeg_detect)  # fmt: skip
        self.ffmpeg_result = QLabel()
        self.ffmpeg_result.setObjectName("ffmpeg-result")
        self.ffmpeg_result.setWordWrap(True)
        self.ffmpeg_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.ffmpeg_result.hide()
        box.addWidget(self.ffmpeg_result)
        return group

    def _speech_group(self) -> QGroupBox:
        group, form = self._group(self.tr("Speech to text"))
        self.whisper_model = QComboBox()
        self.whisper_model.setEditable(True)
        self.whisper_model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.model_download = QPushButton(self.tr("Download"))
        box = self._row(form, "whisper_model", self.tr("Model:"), self.whisper_model,
                        self.model_download)  # fmt: skip
        self.model_status = QLabel()
        self.model_status.setObjectName("model-status")
        self.model_status.setWordWrap(True)
        self.model_progress = QProgressBar()
        self.model_progress.setRange(0, 100)
        self.model_progress.hide()
        box.addWidget(self.model_status)
        box.addWidget(self.model_progress)
        names = {"auto": self.tr("Automatic"), "cpu": self.tr("CPU"),
                 "cuda": self.tr("CUDA (NVIDIA GPU)")}  # fmt: skip
        self.whisper_device = QComboBox()
        for value in _choices("whisper_device"):
            self.whisper_device.addItem(names.get(value, value), value)
        self._row(form, "whisper_device", self.tr("Device:"), self.whisper_device)
        self.whisper_compute_type = QComboBox()
        for value in _choices("whisper_compute_type"):
            self.whisper_compute_type.addItem(names.get(value, value), value)
        self._row(form, "whisper_compute_type", self.tr("Compute type:"),
                  self.whisper_compute_type)  # fmt: skip
        self.language = QLineEdit()
        self.language.setPlaceholderText(self.tr("auto: detected"))
        self.language.setToolTip(self.tr("auto, or a language code such as en, zh or pt-BR"))
        self._row(form, "language", self.tr("Spoken language:"), self.language)
        return group

    def _burn_group(self) -> QGroupBox:
        group, form = self._group(self.tr("Burned-in subtitles"))
        self.burn_font = QLineEdit()
        self.burn_font.setToolTip(
            self.tr("A font family your system has (letters, digits, spaces, . _ -)")
        )
        self._row(form, "burn_font", self.tr("Font:"), self.burn_font)
        self.burn_font_size = QSpinBox()
        self.burn_font_size.setRange(6, 96)
        self.burn_font_size.setToolTip(self.tr("In the player's units: the picture is 288 high"))
        self._row(form, "burn_font_size", self.tr("Size:"), self.burn_font_size, narrow=True)
        self.burn_outline = QDoubleSpinBox()
        self.burn_outline.setRange(0.0, 10.0)
        self.burn_outline.setSingleStep(0.5)
        self._row(form, "burn_outline", self.tr("Outline:"), self.burn_outline, narrow=True)
        names = {"bottom": self.tr("Bottom"), "top": self.tr("Top")}
        self.burn_position = QComboBox()
        for value in _choices("burn_position"):
            self.burn_position.addItem(names.get(value, value), value)
        self._row(form, "burn_position", self.tr("Position:"), self.burn_position, narrow=True)
        return group

    def _llm_group(self) -> QGroupBox:
        group, form = self._group(self.tr("Language model (optional)"))
        self.llm_base_url = QLineEdit()
        self.llm_base_url.setPlaceholderText("http://127.0.0.1:11434/v1")
        self._row(form, "llm_base_url", self.tr("Endpoint URL:"), self.llm_base_url)
        self.llm_model = QLineEdit()
        self.llm_model.setPlaceholderText(self.tr("e.g. llama3.1"))
        self._row(form, "llm_model", self.tr("Model:"), self.llm_model)
        self.llm_api_key_env = QLineEdit()
        self.llm_api_key_env.setPlaceholderText(
            self.tr("e.g. OPENAI_API_KEY (a variable's name, never the key)")
        )
        self._row(form, "llm_api_key_env", self.tr("API key variable:"), self.llm_api_key_env)
        return group

    def _network_group(self) -> QGroupBox:
        group, form = self._group(self.tr("Network"))
        self.proxy = QLineEdit()
        self.proxy.setPlaceholderText(self.tr("none, e.g. http://proxy:3128"))
        self._row(form, "proxy", self.tr("Proxy:"), self.proxy)
        return group

    def _interface_group(self) -> QGroupBox:
        group, form = self._group(self.tr("Interface"))
        self.ui_language = QComboBox()
        # Each language in its own words; the system's in the current one.
        for value, name in (("auto", self.tr("System")), ("en", "English"), ("zh_CN", "简体中文")):
            self.ui_language.addItem(name, value)
        self.ui_language.setMinimumWidth(160)
        self._row(form, "ui_language", self.tr("Language:"), self.ui_language, narrow=True)
        self.ui_theme = QComboBox()
        names = {"auto": self.tr("System"), "light": self.tr("Light"), "dark": self.tr("Dark")}
        for value in _choices("ui_theme"):
            self.ui_theme.addItem(names.get(value, value), value)
        self.ui_theme.setMinimumWidth(160)
        self._row(form, "ui_theme", self.tr("Colours:"), self.ui_theme, narrow=True)
        return group

    def _desktop_group(self) -> QGroupBox:
        group, form = self._group(self.tr("Desktop"))
        self.desktop_boxes: dict[str, QCheckBox] = {}
        for key, label, text in (
            ("close_to_tray", self.tr("Close to tray:"),
             self.tr("Keep running in the tray when the window is closed while tasks run")),
            ("notifications", self.tr("Notifications:"),
             self.tr("Say when a run completes or fails, and when the disk is nearly full")),
            ("keep_awake", self.tr("Keep awake:"),
             self.tr("Keep the computer from sleeping while tasks run")),
            ("start_at_login", self.tr("Start at login:"),
             self.tr("Start Fredica in the tray when I log in")),
        ):  # fmt: skip
            box = self.desktop_boxes[key] = QCheckBox(text)
            box.setObjectName(key)
            self._row(form, key, label, box)
        return group

    def _watch_group(self) -> QGroupBox:
        group, form = self._group(self.tr("Watch folders"))
        intro = QLabel(
            self.tr(
                "New media files in these folders are added to the library and run through "
                "the folder's template once, when they have stopped changing."
            )
        )
        intro.setWordWrap(True)
        form.addRow(intro)
        table = self.watch_table = QTableWidget(0, 5)
        table.setObjectName("watch-folders")
        table.setHorizontalHeaderLabels(
            [self.tr("Folder"), self.tr("Template"), self.tr("Subfolders"),
             self.tr("Patterns"), self.tr("Parameters")]
        )  # fmt: skip
        params = QTableWidgetItem(self.tr("Parameters"))
        params.setToolTip(
            self.tr(
                "The template's parameters for each file, comma-separated (e.g. "
                "profile=archive); none: as in the settings"
            )
        )
        table.setHorizontalHeaderItem(PARAMS, params)
        patterns = QTableWidgetItem(self.tr("Patterns"))
        patterns.setToolTip(
            self.tr("Which files, comma-separated (e.g. *.mkv, *.mp4); none: every media file")
        )
        table.setHorizontalHeaderItem(PATTERNS, patterns)
        header = table.horizontalHeader()
        header.setSectionResizeMode(FOLDER, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(TEMPLATE, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(RECURSIVE, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(PATTERNS, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(PATTERNS, 150)
        header.setSectionResizeMode(PARAMS, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(PARAMS, 150)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        # As tall as its rows (a few, usually), never a tall empty box.
        table.setSizeAdjustPolicy(QAbstractItemView.SizeAdjustPolicy.AdjustToContents)
        table.setMinimumHeight(80)
        table.setMaximumHeight(280)
        self.watch_add = QPushButton(self.tr("Add…"))
        self.watch_remove = QPushButton(self.tr("Remove"))
        self.watch_remove.setEnabled(False)
        table.itemSelectionChanged.connect(
            lambda: self.watch_remove.setEnabled(bool(table.selectionModel().selectedRows()))
        )
        buttons = QHBoxLayout()
        buttons.addWidget(self.watch_add)
        buttons.addWidget(self.watch_remove)
        buttons.addStretch(1)
        cell = QWidget()
        box = QVBoxLayout(cell)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(table)
        box.addLayout(buttons)
        box.addWidget(self._error_label("watch_folders"))
        form.addRow(self._label(self.tr("Folders:")), cell)
        self.labels["watch_folders"] = self.tr("Watch folders")
        self.watch_settle_seconds = QDoubleSpinBox()
        # Beyond the model's bounds on purpose: its message says what is allowed.
        self.watch_settle_seconds.setRange(0, 99_999)
        self.watch_settle_seconds.setDecimals(1)
        self.watch_settle_seconds.setSuffix(self.tr(" s"))
        self.watch_settle_seconds.setMinimumWidth(90)
        self.watch_settle_seconds.setToolTip(
            self.tr("How long a file must stay unchanged before it is taken in")
        )
        self._row(form, "watch_settle_seconds", self.tr("Settle time:"),
                  self.watch_settle_seconds, narrow=True)  # fmt: skip
        return group

    def add_watch_folder(self, folder: WatchFolder) -> None:
        """A row for ``folder`` at the end of the table."""
        table = self.watch_table
        row = table.rowCount()
        table.insertRow(row)
        table.setItem(row, FOLDER, QTableWidgetItem(str(folder.folder)))
        combo = QComboBox()
        for name in WATCH_TEMPLATES:
            combo.addItem(name, name)
            combo.setItemData(combo.count() - 1, BUILTIN[name].description,
                              Qt.ItemDataRole.ToolTipRole)  # fmt: skip
        if folder.template not in WATCH_TEMPLATES:  # kept as the file has it: refused on save
            combo.addItem(folder.template, folder.template)
        _select(combo, folder.template)
        wheel_guard().watch(combo)
        table.setCellWidget(row, TEMPLATE, combo)
        # A check box widget, centred: it reads like the form's other boxes in either theme.
        recursive = QCheckBox()
        recursive.setObjectName("recursive")
        recursive.setChecked(folder.recursive)
        recursive.setToolTip(self.tr("Also the files in its subfolders"))
        holder = QWidget()
        # On the window's colour, as the form's other boxes are: on the table's darker base,
        # an empty box hardly shows in the dark theme.
        holder.setAutoFillBackground(True)
        holder.setBackgroundRole(QPalette.ColorRole.Window)
        line = QHBoxLayout(holder)
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(recursive, 0, Qt.AlignmentFlag.AlignCenter)
        table.setCellWidget(row, RECURSIVE, holder)
        table.setItem(row, PATTERNS, QTableWidgetItem(", ".join(folder.patterns)))
        shown = ", ".join(f"{k}={v}" for k, v in folder.params.items())
        table.setItem(row, PARAMS, QTableWidgetItem(shown))

    def watch_recursive(self, row: int) -> QCheckBox | None:
        """The "Subfolders" box of the table's ``row``."""
        holder = self.watch_table.cellWidget(row, RECURSIVE)
        return holder.findChild(QCheckBox) if holder is not None else None

    def remove_selected_watch_folders(self) -> None:
        rows = sorted({i.row() for i in self.watch_table.selectionModel().selectedRows()})
        for row in reversed(rows):
            self.watch_table.removeRow(row)

    # --- values -------------------------------------------------------------------------------

    def set_values(self, loaded: Loaded) -> None:
        """Show ``loaded``'s settings (and the installed models in the model's list)."""
        s = loaded.settings
        self.library_dir.setText(str(s.library_dir or ""))
        self.library_dir.setPlaceholderText(
            self.tr("Default: %1").replace("%1", str(loaded.default_library_dir))
        )
        self.max_workers.setValue(s.max_workers)
        for name, edit in self.slot_edits.items():
            edit.setText(str(s.slots[name]) if name in s.slots else "")
        self.ffmpeg_path.setText(str(s.ffmpeg_path or ""))
        self.set_models(loaded.installed_models)
        self.whisper_model.setCurrentText(s.whisper_model)
        _select(self.whisper_device, s.whisper_device)
        _select(self.whisper_compute_type, s.whisper_compute_type)
        self.language.setText("" if s.language == "auto" else s.language)
        self.burn_font.setText(s.burn_font)
        self.burn_font_size.setValue(s.burn_font_size)
        self.burn_outline.setValue(s.burn_outline)
        _select(self.burn_position, s.burn_position)
        self.llm_base_url.setText(s.llm_base_url or "")
        self.llm_model.setText(s.llm_model or "")
        self.llm_api_key_env.setText(s.llm_api_key_env or "")
        self.proxy.setText(s.proxy or "")
        _select(self.ui_language, s.ui_language)
        _select(self.ui_theme, s.ui_theme)
        for key, box in self.desktop_boxes.items():
            box.setChecked(bool(getattr(s, key)))
        self.watch_table.setRowCount(0)
        for folder in s.watch_folders:
            self.add_watch_folder(folder)
        self.watch_settle_seconds.setValue(s.watch_settle_seconds)
        self.clear_errors()

    def set_models(self, installed: tuple[str, ...]) -> None:
        """List the ``installed`` models first, then those that can be downloaded; the text
        typed stays."""
        current = self.whisper_model.currentText()
        self.installed_models = tuple(installed)
        self.whisper_model.blockSignals(True)
        self.whisper_model.clear()
        for name in installed:
            self.whisper_model.addItem(name)
            self.whisper_model.setItemData(
                self.whisper_model.count() - 1, self.tr("Installed"), Qt.ItemDataRole.ToolTipRole
            )
        for name in models.DOWNLOADABLE:
            if name not in installed:
                self.whisper_model.addItem(name)
                self.whisper_model.setItemData(
                    self.whisper_model.count() - 1,
                    self.tr("Not installed: downloaded when first needed"),
                    Qt.ItemDataRole.ToolTipRole,
                )
        self.whisper_model.setCurrentText(current)
        self.whisper_model.blockSignals(False)

    def values(self) -> tuple[dict[str, Any], dict[str, str]]:
        """``(values by setting, errors by setting)``: the form's values (None: the default),
        and what is wrong with those the model cannot judge."""
        errors: dict[str, str] = {}
        values: dict[str, Any] = {
            "library_dir": self._path("library_dir", self.library_dir, errors),
            "max_workers": self.max_workers.value(),
            "slots": self._slots(errors),
            "ffmpeg_path": self._path("ffmpeg_path", self.ffmpeg_path, errors),
            "whisper_model": self.whisper_model.currentText().strip(),
            "whisper_device": self.whisper_device.currentData(),
            "whisper_compute_type": self.whisper_compute_type.currentData(),
            "language": _text(self.language),
            "burn_font": self.burn_font.text().strip(),
            "burn_font_size": self.burn_font_size.value(),
            "burn_outline": self.burn_outline.value(),
            "burn_position": self.burn_position.currentData(),
            "llm_base_url": _text(self.llm_base_url),
            "llm_model": _text(self.llm_model),
            "llm_api_key_env": _text(self.llm_api_key_env),
            "proxy": _text(self.proxy),
            "ui_language": self.ui_language.currentData(),
            "ui_theme": self.ui_theme.currentData(),
            **{key: box.isChecked() for key, box in self.desktop_boxes.items()},
            "watch_folders": self._watch_folders(errors),
            "watch_settle_seconds": self.watch_settle_seconds.value(),
        }
        return values, errors

    def _watch_folders(self, errors: dict[str, str]) -> list[dict[str, Any]]:
        """The table's rows as the settings file holds them; what is wrong with a row (a
        folder missing or relative, a template that takes no file) under the table."""
        table = self.watch_table
        folders: list[dict[str, Any]] = []
        problems: list[str] = []
        for row in range(table.rowCount()):
            n = str(row + 1)
            item = table.item(row, FOLDER)
            text = item.text().strip() if item is not None else ""
            folder = str(Path(text).expanduser()) if text else ""
            if not text:
                problems.append(self.tr("Folder %1: choose a folder").replace("%1", n))
            elif not Path(folder).is_absolute():
                problems.append(
                    self.tr("Folder %1: give a full path (or choose it with Add…)")
                    .replace("%1", n)
                )  # fmt: skip
            combo = table.cellWidget(row, TEMPLATE)
            template = combo.currentData() if isinstance(combo, QComboBox) else ""
            if template not in WATCH_TEMPLATES:
                problems.append(
                    self.tr("Folder %1: %2 does not take a media file; choose another template")
                    .replace("%1", n)
                    .replace("%2", str(template))
                )  # fmt: skip
            recursive = self.watch_recursive(row)
            patterns = table.item(row, PATTERNS)
            params = self._watch_params(row, n, str(template), problems)
            folders.append(
                {
                    "folder": folder,
                    "template": template,
                    "recursive": recursive is not None and recursive.isChecked(),
                    "patterns": [
                        p.strip() for p in (patterns.text() if patterns else "").split(",")
                        if p.strip()
                    ],
                    "params": params,
                }
            )  # fmt: skip
        if problems:
            errors["watch_folders"] = "\n".join(problems)
        return folders

    def _watch_params(self, row: int, n: str, template: str, problems: list[str]) -> dict[str, str]:
        """The row's parameters (``key=value, …``), checked against its template."""
        from fredica_app.errors import TemplateError
        from fredica_app.templates import get_template

        item = self.watch_table.item(row, PARAMS)
        params: dict[str, str] = {}
        for part in (item.text() if item is not None else "").split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                problems.append(
                    self.tr("Folder %1: write each parameter as name=value (e.g. %2)")
                    .replace("%1", n)
                    .replace("%2", "profile=archive")
                )  # fmt: skip
                return {}
            params[key.strip()] = value.strip()
        if params and template in WATCH_TEMPLATES:
            try:
                get_template(template).bind(params)
            except TemplateError as exc:
                problems.append(self.tr("Folder %1: %2").replace("%1", n).replace("%2", str(exc)))
        return params

    def _path(self, key: str, edit: QLineEdit, errors: dict[str, str]) -> str | None:
        text = _text(edit)
        if text is None:
            return None
        path = Path(text).expanduser()
        if not path.is_absolute():
            errors[key] = self.tr("Give a full path (or choose it with Browse…)")
        return str(path)

    def _slots(self, errors: dict[str, str]) -> dict[str, int]:
        slots: dict[str, int] = {}
        for name, edit in self.slot_edits.items():
            text = edit.text().strip()
            if not text:
                continue
            if not text.isdigit() or int(text) < 1:
                errors[f"slots.{name}"] = self.tr("A whole number, 1 or more")
            else:
                slots[name] = int(text)
        return slots

    # --- errors -------------------------------------------------------------------------------

    def clear_errors(self) -> None:
        for label in self.errors.values():
            label.clear()
            label.hide()

    def show_errors(self, errors: dict[str, str]) -> dict[str, str]:
        """Show each message under its field; those of settings the form has no field for are
        returned (the page shows them above the form)."""
        self.clear_errors()
        left: dict[str, str] = {}
        for key, message in errors.items():
            label = self.errors.get(key)
            if label is None:
                left[key] = message
                continue
            label.setText(message)
            label.show()
        return left


def _select(combo: QComboBox, value: str) -> None:
    index = combo.findData(value)
    combo.setCurrentIndex(max(index, 0))
