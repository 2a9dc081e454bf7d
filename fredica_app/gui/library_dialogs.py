"""The library page's dialogs: choosing a template to start, confirming a removal, pasting web
addresses. Plain :class:`QDialog` subclasses whose widgets are attributes, so that a test can
fill them in and call ``accept()`` without a modal loop; the page opens them through small
methods that a test replaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from fredica_app.library.records import MaterialRecord

if TYPE_CHECKING:
    from fredica_app.templates import Template, TemplateParam

_NAME_ROLE = Qt.ItemDataRole.UserRole
_OK = QDialogButtonBox.StandardButton.Ok
_CANCEL = QDialogButtonBox.StandardButton.Cancel


def media_templates() -> list[Template]:
    """The templates that run on a material (``fredica add``/``process`` offer the same),
    in the catalogue's order."""
    from fredica_app.templates import BUILTIN  # pydantic models: when a dialog asks, not sooner

    return [t for t in BUILTIN.values() if t.needs_source]


class TemplateDialog(QDialog):
    """Which template to start on the selected materials, and its parameters (a small form:
    a list of choices, or a line of text; left as they are, the settings' values stand). A
    template that downloads a URL is listed but disabled when a local file is among them (it
    cannot run on one). *Start* checks the parameters as the template does and says what is
    wrong under the form, rather than closing."""

    def __init__(
        self,
        materials: Sequence[MaterialRecord],
        templates: Sequence[Template] | None = None,
        current: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("template-dialog")
        self.setWindowTitle(self.tr("Start a template"))
        n = len(materials)
        if n == 1:
            what = self.tr("Start a template on “%1”:").replace("%1", materials[0].title)
        else:
            what = self.tr("Start a template on %n material(s):", "", n)
        self.heading = QLabel(what)
        self.heading.setWordWrap(True)
        self.list = QListWidget()
        self.list.setObjectName("templates")
        self.list.setSpacing(2)
        self.list.setMinimumHeight(self.fontMetrics().lineSpacing() * 6)
        self.description = QLabel()
        self.description.setObjectName("template-description")
        self.description.setWordWrap(True)
        self.description.setTextFormat(Qt.TextFormat.PlainText)
        self.description.setFrameShape(QFrame.Shape.StyledPanel)
        self.description.setMargin(6)
        self.description.setMinimumHeight(self.fontMetrics().lineSpacing() * 4 + 12)
        self.description.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.params_box = QWidget()
        self.params_box.setObjectName("template-params")
        self.params_form = QFormLayout(self.params_box)
        self.params_form.setContentsMargins(0, 0, 0, 0)
        #: The current template's parameter fields, by name.
        self.param_fields: dict[str, QComboBox | QLineEdit] = {}
        self.problem = QLabel()
        self.problem.setObjectName("template-problem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #c62828;")
        self.problem.hide()
        self.buttons = QDialogButtonBox(_OK | _CANCEL)
        start = self.buttons.button(_OK)
        start.setText(self.tr("Start"))
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        any_local = any(not m.is_url for m in materials)
        any_subtitles = any(m.kind == "subtitles" for m in materials)
        shown = media_templates() if templates is None else list(templates)
        preselect: QListWidgetItem | None = None
        for template in shown:
            item = QListWidgetItem(template.name, self.list)
            item.setData(_NAME_ROLE, template.name)
            item.setToolTip(template.description)
            if template.source == "url" and any_local:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
                item.setToolTip(self.tr("Downloads a web address: it cannot run on a local file."))
            elif any_subtitles and not template.subtitle_files:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
                item.setToolTip(self.tr("Needs a media file: it cannot run on a subtitle file."))
            elif preselect is None or template.name == current:
                preselect = item  # the last one used, else the first that can run
        self._descriptions = {t.name: t.description for t in shown}
        self._templates = {t.name: t for t in shown}
        self.list.currentItemChanged.connect(self._on_current)
        self.list.itemDoubleClicked.connect(self._on_double_click)
        if preselect is not None:
            self.list.setCurrentItem(preselect)
        self._on_current(self.list.currentItem())

        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.description)
        layout.addWidget(self.params_box)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self.resize(480, 480)

    def chosen(self) -> str | None:
        """The template chosen (whether the dialog was accepted is ``result()``'s to say)."""
        item = self.list.currentItem()
        if item is None or not item.flags() & Qt.ItemFlag.ItemIsEnabled:
            return None
        name = item.data(_NAME_ROLE)
        return str(name) if name else None

    def select(self, name: str) -> None:
        """Choose ``name`` (a test's way of clicking it)."""
        for n in range(self.list.count()):
            item = self.list.item(n)
            if item.data(_NAME_ROLE) == name:
                self.list.setCurrentItem(item)
                return
        raise KeyError(name)

    def _on_double_click(self, item: QListWidgetItem) -> None:
        if self.chosen() is not None:
            self.accept()

    def _on_current(self, item: QListWidgetItem | None) -> None:
        name = self.chosen()
        self.description.setText(self._descriptions.get(name, "") if name else "")
        self.buttons.button(_OK).setEnabled(name is not None)
        self._show_params(self._templates.get(name) if name else None)

    def _show_params(self, template: Template | None) -> None:
        """The form of ``template``'s parameters (none: hidden)."""
        while self.params_form.rowCount():
            self.params_form.removeRow(0)
        self.param_fields = {}
        self.problem.hide()
        params = template.params if template is not None else ()
        self.params_box.setVisible(bool(params))
        for param in params:
            assert template is not None
            choices = template.values_of(param).split("|")
            unset = self._unset(template, param)
            field: QComboBox | QLineEdit
            if len(choices) > 1:
                field = QComboBox()
                field.addItem(unset, "")
                for choice in choices:
                    field.addItem(choice, choice)
            else:
                field = QLineEdit()
                field.setPlaceholderText(unset)
            field.setObjectName(f"param-{param.name}")
            field.setToolTip(param.description)
            self.param_fields[param.name] = field
            self.params_form.addRow(param.name + ":", field)
        self._fit()

    def _unset(self, template: Template, param: TemplateParam) -> str:
        """What a parameter left empty means."""
        if template.required(param):
            return self.tr("Required")
        if param.adds:
            return self.tr("Not done unless given")
        if param.setting:
            return self.tr("As in the settings")
        return self.tr("The job's default")

    def _fit(self) -> None:
        """Tall enough for the list, the form and a problem said under it."""
        wanted = self.sizeHint().height()
        if wanted > self.height():
            self.resize(self.width(), wanted)

    def params(self) -> dict[str, str]:
        """The parameters given (those left as in the settings are not among them)."""
        given = {}
        for name, field in self.param_fields.items():
            value = field.currentData() if isinstance(field, QComboBox) else field.text().strip()
            if value:
                given[name] = str(value)
        return given

    def set_param(self, name: str, value: str) -> None:
        """Give parameter ``name`` the value ``value`` (a test's way of typing it)."""
        field = self.param_fields[name]
        if isinstance(field, QComboBox):
            field.setCurrentIndex(field.findData(value))
        else:
            field.setText(value)

    def accept(self) -> None:
        """Start, unless a parameter is not one the template takes: then say why, here."""
        from fredica_app.errors import TemplateError

        name = self.chosen()
        template = self._templates.get(name) if name else None
        if template is not None:
            try:
                template.bind(self.params())
            except TemplateError as exc:
                self.problem.setText(str(exc))
                self.problem.show()
                self._fit()
                return
        super().accept()


class RemoveDialog(QDialog):
    """Confirms a removal, and asks whether the outputs go too (they stay unless ticked)."""

    def __init__(self, titles: Sequence[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("remove-dialog")
        self.setWindowTitle(self.tr("Remove from the library"))
        n = len(titles)
        if n == 1:
            question = self.tr("Remove “%1” from the library?").replace("%1", titles[0])
        else:
            question = self.tr("Remove %n material(s) from the library?", "", n)
        self.question = QLabel(question)
        self.question.setWordWrap(True)
        font = self.question.font()
        font.setBold(True)
        self.question.setFont(font)
        if n == 1:
            note = self.tr("Its finished runs go with it. Your own media file is never deleted.")
            tick = self.tr("Also delete its outputs")
        else:
            note = self.tr(
                "Their finished runs go with them. Your own media files are never deleted."
            )
            tick = self.tr("Also delete their outputs")
        self.note = QLabel(note)
        self.note.setWordWrap(True)
        self.delete_outputs = QCheckBox(tick)
        self.delete_outputs.setObjectName("delete-outputs")
        self.delete_outputs.setToolTip(
            self.tr("The files Fredica made, in the material's folder under the library folder.")
        )
        self.buttons = QDialogButtonBox(_OK | _CANCEL)
        remove = self.buttons.button(_OK)
        remove.setText(self.tr("Remove"))
        # Enter must not delete: Cancel is the default, and Remove never becomes it.
        remove.setAutoDefault(False)
        remove.setDefault(False)
        self.buttons.button(_CANCEL).setDefault(True)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.question)
        layout.addWidget(self.note)
        layout.addSpacing(6)
        layout.addWidget(self.delete_outputs)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(420)


class UrlDialog(QDialog):
    """Web addresses to add, one per line, prefilled with those on the clipboard."""

    def __init__(self, prefill: Sequence[str] = (), parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("url-dialog")
        self.setWindowTitle(self.tr("Add web addresses"))
        self.label = QLabel(self.tr("Web addresses (http or https) to add, one per line:"))
        self.text = QPlainTextEdit()
        self.text.setObjectName("urls")
        self.text.setPlaceholderText("https://example.org/talk.mp4")
        self.text.setPlainText("\n".join(prefill))
        self.buttons = QDialogButtonBox(_OK | _CANCEL)
        self.buttons.button(_OK).setText(self.tr("Add"))
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.text.textChanged.connect(self._on_text)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.buttons)
        self._on_text()
        self.resize(520, 260)

    def lines(self) -> list[str]:
        """The non-blank lines, trimmed."""
        return [s.strip() for s in self.text.toPlainText().splitlines() if s.strip()]

    def _on_text(self) -> None:
        self.buttons.button(_OK).setEnabled(bool(self.lines()))
