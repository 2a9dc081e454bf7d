"""The library page: the materials, bringing media in, starting templates on them, opening
their folders, removing them.

What it shows comes from two sources. The materials are read from the library
(``app.library.list``, synchronous SQLAlchemy: on a worker thread of the host, never on the
GUI thread), again after an import or a removal, and when a batch of the feed shows a PROBE
task completing (a probe fills a material's duration and kind) — reloads are debounced. How
each material's outputs stand comes from the feed's runs and tasks, through an
:class:`~fredica_app.views.library_view.OutputBoard`, as they change.

What it does goes through :meth:`AppHost.call` (see :mod:`.library_work`) and is reported on a
message line at the top of the page: never a modal box for something that went well. Its
dialogs open through small methods (:meth:`LibraryPage.ask_template`, ``ask_remove``,
``ask_urls``, ``ask_files``, ``ask_folder``) that a test replaces.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import shiboken6
from PySide6.QtCore import (
    QItemSelection,
    QItemSelectionModel,
    QModelIndex,
    QPoint,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    QUrl,
)
from PySide6.QtGui import (
    QAction,
    QDesktopServices,
    QGuiApplication,
    QIcon,
    QKeyEvent,
    QKeySequence,
    QPalette,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QSplitter,
    QStackedWidget,
    QTableView,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from fredica_app.gui.feed import Feed
from fredica_app.gui.host import AppHost, HostState, Mode
from fredica_app.gui.library_details import MaterialDetails
from fredica_app.gui.library_dialogs import RemoveDialog, TemplateDialog, UrlDialog
from fredica_app.gui.library_looks import Looks
from fredica_app.gui.library_model import MATERIAL_ROLE, PICTURE, SORT_ROLE, LibraryModel
from fredica_app.gui.library_work import (
    Imported,
    Refused,
    Removed,
    Started,
    folder_to_open,
    import_checked,
    material_outputs,
    remove_materials,
    start_runs,
)
from fredica_app.gui.persist import ViewState
from fredica_app.gui.symbols import ERROR, WARNING, symbol
from fredica_app.library.fingerprint import MEDIA_EXTENSIONS, SUBTITLE_EXTENSIONS
from fredica_app.library.records import MaterialRecord
from fredica_app.paths import posters_dir
from fredica_app.views.library_view import OutputBoard, probed_materials, urls_in
from fredica_app.views.material_view import OutputGroup
from workers.changes import Snapshot

if TYPE_CHECKING:
    from fredica_app.services import Fredica

T = TypeVar("T")

#: A burst of reasons to read the library again (an import and the probes that follow it)
#: is one read, this long after the last of them.
RELOAD_MS = 300
#: What the page's table remembers in the window's view state.
TABLE_STATE = "library-table"
#: The splitter between the table and the details pane, in the window's view state.
SPLITTER_STATE = "library-splitter"
#: The details pane reads the selected material's outputs again this long after its runs
#: last changed (a running task reports many times a second).
OUTPUTS_MS = 500
_LAST_FOLDER = "library/last-folder"
_LAST_TEMPLATE = "library/template"
_OPEN = (Mode.ENGINE, Mode.ATTACHED)


class MaterialTable(QTableView):
    """The materials' table: Delete asks to remove the selection, Enter to start a
    template on it (keys, not window shortcuts: they mean this only here)."""

    def __init__(self, page: LibraryPage) -> None:
        super().__init__(page)
        self._page = page

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if self.selectionModel().hasSelection():
            if key == Qt.Key.Key_Delete or event.matches(QKeySequence.StandardKey.Delete):
                event.accept()
                self._page.remove_selected()
                return
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                event.accept()
                self._page.start_template()
                return
        super().keyPressEvent(event)


class MessageLine(QFrame):
    """One line at the top of the page: what an action did, or why it failed. Stays until
    the next message or until closed."""

    INFO, WARNING, ERROR, BUSY = "info", "warning", "error", "busy"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("library-message")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.level = self.INFO
        self.icon = QLabel()
        self.label = QLabel()
        self.label.setObjectName("library-message-text")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.close_button = QToolButton()
        self.close_button.setAutoRaise(True)
        self.close_button.setIcon(symbol("x"))
        self.close_button.setToolTip(self.tr("Dismiss"))
        self.close_button.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 4, 4)
        row.addWidget(self.icon, 0, Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.label, 1)
        row.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignVCenter)
        self.hide()

    def show_message(self, text: str, level: str = INFO, details: str | None = None) -> None:
        icon = {
            self.INFO: symbol("info"),
            self.WARNING: symbol("triangle-alert", WARNING),
            self.ERROR: symbol("circle-x", ERROR),
            self.BUSY: symbol("refresh-cw"),
        }[level]
        size = self.fontMetrics().height()
        self.icon.setPixmap(icon.pixmap(size, size))
        self.level = level
        self.label.setText(text)
        self.setToolTip(details or "")
        self.show()

    def text(self) -> str:
        """The message shown; empty once dismissed."""
        return "" if self.isHidden() else self.label.text()


class LibraryPage(QWidget):
    """The library: materials in a table, and what can be done with them."""

    def __init__(self, host: AppHost, feed: Feed, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("library")
        self.host = host
        self.feed = feed
        self.board = OutputBoard()
        self.model = LibraryModel(self.board, self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setSortCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self._last_folder = ""
        self._last_template: str | None = None
        self._loading = False
        self._reload_again = False
        self._select_after_load: list[str] = []
        #: Materials a run named that the library did not list: read again once for each.
        self._looked_for: set[str] = set()

        self._build_actions()
        self.toolbar = QToolBar()
        self.toolbar.setObjectName("library-toolbar")
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        for action in (self.add_files_action, self.add_folder_action, self.add_urls_action):
            self.toolbar.addAction(action)
        self.toolbar.addSeparator()
        for action in (self.start_action, self.open_action, self.remove_action):
            self.toolbar.addAction(action)
        self.message = MessageLine()
        self.table = self._build_table()
        self.hint = QLabel(self.tr("Drop media files or folders here, or use Add files…"))
        self.hint.setObjectName("library-hint")
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setWordWrap(True)
        self.hint.setFrameShape(QFrame.Shape.StyledPanel)  # where the table will be
        font = self.hint.font()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        self.hint.setFont(font)
        self.hint.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.hint)
        self.stack.addWidget(self.table)
        self.details = MaterialDetails()
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName(SPLITTER_STATE)
        self.splitter.addWidget(self.stack)
        self.splitter.addWidget(self.details)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 0)
        self.splitter.setCollapsible(0, False)
        self.splitter.setSizes([900, self.details.sizeHint().width()])  # until restored
        #: First looks at new materials (probe, poster frame), one at a time.
        self.looks = Looks(self._call_quietly, self)
        self.looks.looked.connect(self.schedule_reload)
        self._outputs_for: str | None = None

        column = QVBoxLayout(self)
        column.setContentsMargins(6, 0, 6, 6)
        column.setSpacing(4)
        column.addWidget(self.toolbar)
        column.addWidget(self.message)
        column.addWidget(self.splitter, 1)

        self._reload_timer = QTimer(self)
        self._reload_timer.setSingleShot(True)
        self._reload_timer.setInterval(RELOAD_MS)
        self._reload_timer.timeout.connect(self.reload)
        self._outputs_timer = QTimer(self)
        self._outputs_timer.setSingleShot(True)
        self._outputs_timer.setInterval(OUTPUTS_MS)
        self._outputs_timer.timeout.connect(self._read_outputs)
        for signal in (self.model.rowsInserted, self.model.rowsRemoved, self.model.modelReset):
            signal.connect(self._update_state)
        feed.snapshot.connect(self._on_snapshot)
        feed.changes.connect(self._on_changes)
        host.state_changed.connect(self._on_host_state)
        self._update_state()
        if host.state.mode in _OPEN:  # a host that opened before this page
            self.reload()

    def _build_actions(self) -> None:
        def action(text: str, icon: QIcon, slot: Callable[[], Any]) -> QAction:
            made = QAction(icon, text, self)
            made.triggered.connect(slot)
            return made

        self.add_files_action = action(
            self.tr("Add files…"), symbol("file-plus"), self.add_files_dialog
        )
        self.add_folder_action = action(
            self.tr("Add folder…"), symbol("folder-plus"), self.add_folder_dialog
        )
        self.add_urls_action = action(self.tr("Add URLs…"), symbol("link"), self.paste_urls)
        self.start_action = action(self.tr("Start template…"), symbol("play"), self.start_template)
        self.open_action = action(self.tr("Open folder"), symbol("folder-open"), self.open_folder)
        self.remove_action = action(self.tr("Remove"), symbol("trash-2"), self.remove_selected)
        # Shown in the menus; the table's own keys do the work (MaterialTable).
        for act, key in (
            (self.start_action, QKeySequence(Qt.Key.Key_Return)),
            (self.remove_action, QKeySequence(QKeySequence.StandardKey.Delete)),
        ):
            act.setShortcut(key)
            act.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
            act.setShortcutVisibleInContextMenu(True)

    def _build_table(self) -> MaterialTable:
        table = MaterialTable(self)
        table.setObjectName("library-table")
        table.setModel(self.proxy)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setAlternatingRowColors(True)
        table.setShowGrid(False)
        table.setWordWrap(False)
        table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        table.verticalHeader().hide()
        table.setIconSize(PICTURE)
        rows = max(table.fontMetrics().height(), PICTURE.height()) + 8
        table.verticalHeader().setDefaultSectionSize(rows)
        header = table.horizontalHeader()
        header.setObjectName("library-header")
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setHighlightSections(False)
        for column, width in (
            (LibraryModel.TITLE, 300),
            (LibraryModel.KIND, 70),
            (LibraryModel.DURATION, 80),
            (LibraryModel.SIZE, 80),
        ):
            header.resizeSection(column, width)
        # Unsorted until the user clicks a header: the library's own order, oldest first;
        # a third click goes back to it.
        header.setSortIndicatorClearable(True)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        table.setSortingEnabled(True)
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(self._show_context_menu)
        table.doubleClicked.connect(self._on_double_click)
        table.selectionModel().selectionChanged.connect(self._update_actions)
        table.selectionModel().selectionChanged.connect(self._show_details)
        return table

    # --- the window's entry points -------------------------------------------------------

    def import_items(self, items: list[str]) -> None:
        """Add files, folders or web addresses to the library (a drop, the File menu)."""
        self._import(items, urls_only=False)

    def add_files_dialog(self) -> None:
        """Ask for files to add."""
        paths = self.ask_files()
        if paths:
            self._last_folder = str(Path(paths[0]).parent)
            self.import_items(paths)

    def add_folder_dialog(self) -> None:
        """Ask for a folder to add (every media file under it)."""
        folder = self.ask_folder()
        if folder:
            self._last_folder = str(Path(folder).parent)
            self.import_items([folder])

    def paste_urls(self) -> None:
        """Ask for web addresses to add (the clipboard's, to start with)."""
        lines = self.ask_urls(urls_in(QGuiApplication.clipboard().text()))
        if lines:
            self._import(lines, urls_only=True)

    # --- dialogs (a test replaces these) -------------------------------------------------

    def ask_files(self) -> list[str]:
        patterns = " ".join(f"*{ext}" for ext in sorted(MEDIA_EXTENSIONS))
        media = self.tr("Media files (%1)").replace("%1", patterns)
        patterns = " ".join(f"*{ext}" for ext in sorted(SUBTITLE_EXTENSIONS))
        subtitles = self.tr("Subtitle files (%1)").replace("%1", patterns)
        paths, _ = QFileDialog.getOpenFileNames(
            self,
            self.tr("Add media files"),
            self._last_folder,
            f"{media};;{subtitles};;{self.tr('All files (*)')}",
        )
        return list(paths)

    def ask_folder(self) -> str:
        return str(
            QFileDialog.getExistingDirectory(
                self, self.tr("Add a folder of media"), self._last_folder
            )
        )

    def ask_urls(self, prefill: Sequence[str]) -> list[str] | None:
        """The lines the user gave, or None when the dialog was cancelled."""
        dialog = UrlDialog(prefill, self)
        return dialog.lines() if dialog.exec() == QDialog.DialogCode.Accepted else None

    def ask_template(
        self, materials: Sequence[MaterialRecord]
    ) -> str | tuple[str, dict[str, str]] | None:
        """The template to start on ``materials`` and its parameters given, or None."""
        dialog = TemplateDialog(materials, current=self._last_template, parent=self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        name = dialog.chosen()
        return None if name is None else (name, dialog.params())

    def ask_remove(self, materials: Sequence[MaterialRecord]) -> tuple[bool, bool]:
        """Whether to remove ``materials``, and whether their outputs go too."""
        dialog = RemoveDialog([m.title for m in materials], self)
        accepted = dialog.exec() == QDialog.DialogCode.Accepted
        return accepted, accepted and dialog.delete_outputs.isChecked()

    # --- actions on the selection --------------------------------------------------------

    def selected_materials(self) -> list[MaterialRecord]:
        """The selected materials, in the table's order."""
        rows = sorted(self.table.selectionModel().selectedRows(), key=lambda i: i.row())
        return [i.data(MATERIAL_ROLE) for i in rows]

    def select_materials(self, material_ids: Iterable[str]) -> None:
        """Select these materials' rows (those shown), the first one current."""
        selection = QItemSelection()
        first: QModelIndex | None = None
        for material_id in material_ids:
            row = self.model.row_of(material_id)
            if row is None:
                continue
            left = self.proxy.mapFromSource(self.model.index(row, 0))
            right = self.proxy.mapFromSource(self.model.index(row, LibraryModel.OUTPUTS))
            selection.select(left, right)
            first = left if first is None else first
        flags = QItemSelectionModel.SelectionFlag
        selected = self.table.selectionModel()
        selected.select(selection, flags.ClearAndSelect | flags.Rows)
        if first is not None:
            selected.setCurrentIndex(first, flags.NoUpdate)
            self.table.scrollTo(first)

    def start_template(self) -> None:
        """Ask for a template and start it on every selected material."""
        materials = self.selected_materials()
        if not materials:
            return
        choice = self.ask_template(materials)
        if not choice:
            return
        name, params = (choice, {}) if isinstance(choice, str) else choice
        self._last_template = name
        self.message.show_message(
            self.tr("Starting %1 on %n material(s)…", "", len(materials)).replace("%1", name),
            MessageLine.BUSY,
        )
        self._call(lambda app: start_runs(app, materials, name, params), self._started)

    def remove_selected(self) -> None:
        """Ask, then remove the selected materials (their outputs only when ticked)."""
        materials = self.selected_materials()
        if not materials:
            return
        confirmed, outputs = self.ask_remove(materials)
        if not confirmed:
            return
        self.message.show_message(
            self.tr("Removing %n material(s)…", "", len(materials)), MessageLine.BUSY
        )
        self._call(lambda app: remove_materials(app, materials, outputs=outputs), self._removed)

    def open_folder(self) -> None:
        """Show the current material's output folder (or its file's folder) in the file
        manager."""
        materials = self.selected_materials()
        if not materials:
            return
        current = self.table.currentIndex().data(MATERIAL_ROLE)
        material = current if current in materials else materials[0]
        self._call(lambda app: folder_to_open(app, material), self._open_path)

    def _open_path(self, path: Path | None) -> None:
        if path is None:
            self.message.show_message(
                self.tr("Nothing to open yet: it has no folder until it is downloaded."),
                MessageLine.WARNING,
            )
            return
        # The desktop's own file manager, through Qt: never a shell.
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            self.message.show_message(
                self.tr("Could not open %1").replace("%1", str(path)), MessageLine.ERROR
            )

    def context_menu(self) -> QMenu:
        """The table's context menu: the selection's actions, then adding media."""
        menu = QMenu(self)
        for action in (self.start_action, self.open_action, self.remove_action):
            menu.addAction(action)
        menu.addSeparator()
        for action in (self.add_files_action, self.add_folder_action, self.add_urls_action):
            menu.addAction(action)
        return menu

    def _show_context_menu(self, at: QPoint) -> None:
        menu = self.context_menu()
        menu.exec(self.table.viewport().mapToGlobal(at))
        menu.deleteLater()

    def _on_double_click(self, index: QModelIndex) -> None:
        if index.isValid():
            self.open_folder()

    # --- what the window remembers -------------------------------------------------------

    def save_view_state(self, vs: ViewState) -> None:
        vs.save(TABLE_STATE, self.table.horizontalHeader())
        vs.save(SPLITTER_STATE, self.splitter)
        vs.set_value(_LAST_FOLDER, self._last_folder)
        vs.set_value(_LAST_TEMPLATE, self._last_template or "")

    def restore_view_state(self, vs: ViewState) -> None:
        header = self.table.horizontalHeader()
        if vs.restore(TABLE_STATE, header):
            self.table.sortByColumn(header.sortIndicatorSection(), header.sortIndicatorOrder())
        vs.restore(SPLITTER_STATE, self.splitter)
        self._last_folder = str(vs.value(_LAST_FOLDER, "") or "")
        self._last_template = str(vs.value(_LAST_TEMPLATE, "") or "") or None

    # --- reading the library -------------------------------------------------------------

    def schedule_reload(self) -> None:
        """Read the library again soon (several reasons in a row: once). The first reason
        sets the time; the later ones join it: restarted by each, the timer never ran out
        while a big library's first looks said one every few tens of milliseconds, and no
        row got its picture or length until the last look."""
        if not self._reload_timer.isActive():
            self._reload_timer.start()

    def reload(self) -> None:
        """Read the library now (one read at a time: another one follows if asked meanwhile)."""
        self._reload_timer.stop()
        if self.host.state.mode not in _OPEN:
            return
        if self._loading:
            self._reload_again = True
            return
        self._loading = True

        def read(app: Fredica) -> Awaitable[list[MaterialRecord]]:
            return asyncio.to_thread(app.library.list)

        self._call(read, self._loaded, self._load_failed)

    def _loaded(self, materials: list[MaterialRecord]) -> None:
        self._loading = False
        self.model.posters_dir = posters_dir(self.host.state.data_dir)
        self.model.set_materials(materials)
        if self._select_after_load:
            self.select_materials(self._select_after_load)
            self._select_after_load = []
        self._update_state()
        self._show_details()
        self.looks.want(self.model.materials)
        if self._reload_again:
            self._reload_again = False
            self.reload()

    def _load_failed(self, exc: Exception) -> None:
        self._loading = False
        self._reload_again = False
        self._failed(exc, self.tr("Could not read the library: %1"))

    def _on_host_state(self, state: HostState) -> None:
        if state.mode in _OPEN:
            self.reload()

    def _on_snapshot(self, snap: Snapshot) -> None:
        self.board.load(snap.runs, snap.tasks)
        self.model.outputs_changed()
        self.schedule_reload()

    def _on_changes(self, batch: list[Any]) -> None:
        touched = self.board.apply(batch)
        self.model.outputs_changed(touched)
        shown = self.details.material
        if shown is not None and shown.id in touched:
            self._outputs_timer.start()
        unknown = {i for i in touched if self.model.row_of(i) is None} - self._looked_for
        self._looked_for |= unknown
        if unknown or probed_materials(batch):
            self.schedule_reload()

    # --- results ---------------------------------------------------------------------------

    def _import(self, items: Sequence[str], *, urls_only: bool) -> None:
        items = list(items)
        if not items:
            return
        self.message.show_message(self.tr("Adding %n item(s)…", "", len(items)), MessageLine.BUSY)
        self._call(lambda app: import_checked(app, items, urls_only=urls_only), self._imported)

    def _imported(self, result: Imported) -> None:
        report = result.report
        parts = []
        if report.added:
            parts.append(self.tr("%n material(s) added", "", len(report.added)))
        if report.existing:
            parts.append(self.tr("%n already in the library", "", len(report.existing)))
        if report.skipped:
            parts.append(self.tr("%n file(s) skipped: not media", "", len(report.skipped)))
        for folder in report.empty_folders:
            parts.append(self.tr("no media in %1").replace("%1", folder.name or str(folder)))
        for item, why in result.refused:
            parts.append(self._refusal(item, why))
        found = report.added or report.existing
        if not found:
            level = MessageLine.ERROR
        elif result.refused or report.empty_folders:
            level = MessageLine.WARNING
        else:
            level = MessageLine.INFO
        details = "\n".join(str(f) for f in report.skipped[:50])
        self.message.show_message(" · ".join(parts) or self.tr("Nothing to add"), level, details)
        if found:
            self._select_after_load = [m.id for m in report.materials]
            self.reload()

    def _refusal(self, item: str, why: Refused) -> str:
        name = item if "://" in item else (Path(item).name or item)
        if why is Refused.MISSING:
            return self.tr("%1: no such file or folder").replace("%1", name)
        if why is Refused.NOT_MEDIA:
            return self.tr("%1: not a media file").replace("%1", name)
        return self.tr("%1: not a web address (http or https)").replace("%1", name)

    def _started(self, results: list[Started]) -> None:
        runs = [r for r in results if r.run is not None]
        again = [r for r in runs if r.run is not None and r.run.deduplicated]
        errors = [r for r in results if r.run is None]
        parts = []
        if len(runs) > len(again):
            parts.append(self.tr("%n run(s) started", "", len(runs) - len(again)))
        if again:
            parts.append(self.tr("%n already running", "", len(again)))
        parts += [f"{r.material.title}: {r.error}" for r in errors]
        self.message.show_message(" · ".join(parts), _level(bool(runs), bool(errors)))

    def _removed(self, results: list[Removed]) -> None:
        done = [r for r in results if r.removal is not None]
        errors = [r for r in results if r.removal is None]
        parts = []
        if len(done) == 1:
            parts.append(self.tr("Removed “%1”").replace("%1", done[0].material.title))
        elif done:
            parts.append(self.tr("%n material(s) removed", "", len(done)))
        folders = [r.removal for r in done if r.removal is not None and r.removal.outputs_dir]
        deleted = [f for f in folders if f.files_deleted is not None]
        kept = [f for f in folders if f.files_deleted is None]
        if deleted:
            files = sum(f.files_deleted or 0 for f in deleted)
            parts.append(self.tr("%n output file(s) deleted", "", files))
        if len(kept) == 1:
            line = self.tr("its outputs are kept in %1").replace("%1", str(kept[0].outputs_dir))
            parts.append(f"{line} ({kept[0].kept_because})" if kept[0].kept_because else line)
        elif kept:
            parts.append(self.tr("%n output folder(s) kept", "", len(kept)))
        parts += [f"{r.material.title}: {r.error}" for r in errors]
        self.message.show_message(" · ".join(parts), _level(bool(done), bool(errors)))
        if done:
            self.reload()

    # --- the details pane ------------------------------------------------------------------

    def _show_details(self, *_: object) -> None:
        """Show the selected material in the details pane (one selected), or how many are."""
        materials = self.selected_materials()
        if len(materials) != 1:
            self._outputs_for = None
            self.details.show_material(None, selected=len(materials))
            return
        (material,) = materials
        again = self.details.material is not None and self.details.material.id == material.id
        self.details.show_material(
            material,
            kind=self.model.kind_text(material.kind),
            poster=self.model.poster_file(material),
        )
        if not again or self._outputs_for != material.id:
            self._read_outputs()

    def _read_outputs(self) -> None:
        material = self.details.material
        if material is None:
            return
        self._outputs_for = material.id

        def shown(groups: list[OutputGroup]) -> None:
            now = self.details.material
            if now is not None and now.id == material.id:
                self.details.show_outputs(groups)

        def unread(exc: Exception) -> None:  # the pane keeps what it shows; no message
            if self._outputs_for == material.id:
                self._outputs_for = None

        self._call_quietly(lambda app: material_outputs(app, material.id), shown, unread)

    # --- plumbing ------------------------------------------------------------------------

    def _call(
        self,
        work: Callable[[Fredica], Awaitable[T]],
        on_done: Callable[[T], Any],
        on_error: Callable[[Exception], Any] | None = None,
    ) -> None:
        """Run ``work`` on the host; the answer comes back here unless this page has gone
        meanwhile (a window replaced for a change of language)."""

        def alive(callback: Callable[[Any], Any]) -> Callable[[Any], None]:
            def call(value: Any) -> None:
                if shiboken6.isValid(self):
                    callback(value)

            return call

        failed = on_error or self._failed
        if self.host.state.mode not in _OPEN:
            failed(RuntimeError(self.tr("Fredica is still opening its data; try again shortly")))
            return
        try:
            self.host.call(work, alive(on_done), alive(failed))
        except RuntimeError as exc:  # the host has stopped meanwhile
            failed(exc)

    def _call_quietly(
        self,
        work: Callable[[Fredica], Awaitable[T]],
        on_done: Callable[[T], Any],
        on_error: Callable[[Exception], Any],
    ) -> None:
        """:meth:`_call` for work the user did not ask for (a first look, a pane's read):
        nothing is said when the data directory is not open; the work is simply not done."""
        if self.host.state.mode in _OPEN:
            self._call(work, on_done, on_error)
        else:
            on_error(RuntimeError("not open"))

    def _failed(self, exc: Exception, template: str | None = None) -> None:
        text = str(exc) or type(exc).__name__
        line = (template or self.tr("Failed: %1")).replace("%1", text)
        self.message.show_message(line, MessageLine.ERROR)

    def _update_state(self) -> None:
        self.stack.setCurrentWidget(self.table if self.model.rowCount() else self.hint)
        self._update_actions()

    def _update_actions(self) -> None:
        selected = self.table.selectionModel().hasSelection()
        for action in (self.start_action, self.open_action, self.remove_action):
            action.setEnabled(selected)


def _level(some_done: bool, some_failed: bool) -> str:
    """How a report of work on several materials reads: an error when nothing was done, a
    warning when some of it failed, information otherwise."""
    if not some_done:
        return MessageLine.ERROR
    return MessageLine.WARNING if some_failed else MessageLine.INFO
