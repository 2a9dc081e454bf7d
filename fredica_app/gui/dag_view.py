"""A run's DAG as a graph: one rounded box per task, arrows from each dependency to the task.

The layered layout (columns left to right, edges bending around the nodes) comes from
:mod:`fredica_app.views.dag_layout`; the badge (state) of a task from
:mod:`fredica_app.views.queue_state`. This module only draws.

Live updates are cheap: :meth:`DagScene.apply` gives each changed task's node its new
``NodeLook`` (``details_paint``), and a node repaints only when its look differs (a progress
report moves the bar by whole percents). The layout is computed again only when tasks come or
go, or their dependencies change.

Colours: each badge has an accent colour; a node's fill is that accent blended into the
palette's base colour, its text the palette's text colour, so a node reads in light and dark
palettes alike. The badge's pill picks black or white text, whichever contrasts more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QKeyEvent,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
    QTransform,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QApplication,
    QGraphicsItem,
    QGraphicsScene,
    QGraphicsSceneMouseEvent,
    QGraphicsView,
    QStyle,
    QStyleOptionGraphicsItem,
    QWidget,
)

from fredica_app.gui.details_paint import (
    NodeLook,
    badge_text,
    colours_for,
    mix,
    node_look,
    node_tooltip,
    paint_node,
)
from fredica_app.views.dag_layout import Geometry, layout
from fredica_app.views.queue_state import badge, deps_done
from workers.records import TaskRecord

#: The size of a node and the gaps between them, in scene units (pixels at 100 %).
GEOMETRY = Geometry(node_width=190.0, node_height=52.0, layer_gap=64.0, node_gap=14.0, margin=24)
#: Zoom limits: far enough out to see 200 nodes, not so far in that a node fills the screen.
MIN_SCALE, MAX_SCALE = 0.02, 4.0
#: Fitting never enlarges beyond this: a three-task run stays at about its natural size.
FIT_MAX_SCALE = 1.25
#: One wheel notch (120 units) zooms by this factor.
WHEEL_STEP = 1.15
_ARROW = 7.0

_SELECTED = QStyle.StateFlag.State_Selected
_HOVER = QStyle.StateFlag.State_MouseOver
_ROUND = Qt.PenCapStyle.RoundCap
_NO_BRUSH = Qt.BrushStyle.NoBrush
_CTRL = Qt.KeyboardModifier.ControlModifier
_TEXT = QPalette.ColorRole.Text
_BASE = QPalette.ColorRole.Base
_HIGHLIGHT = QPalette.ColorRole.Highlight


class NodeItem(QGraphicsItem):
    """A task: a rounded box with its key, type, badge and (while it runs) a bar."""

    def __init__(self, task_id: str, look: NodeLook) -> None:
        super().__init__()
        self.task_id = task_id
        self.look = look
        #: Times the look changed since the node was made (what a test checks).
        self.revision = 0
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable)
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self._rect = QRectF(0.0, 0.0, GEOMETRY.node_width, GEOMETRY.node_height)

    def set_look(self, look: NodeLook) -> bool:
        """Show ``look``; whether it changed (and the node repaints)."""
        if look == self.look:
            return False
        self.look = look
        self.revision += 1
        self.update()
        return True

    def boundingRect(self) -> QRectF:
        return self._rect.adjusted(-6.0, -6.0, 6.0, 6.0)  # room for the selection's halo

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRoundedRect(self._rect, 7.0, 7.0)
        return path

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionGraphicsItem,
        widget: QWidget | None = None,
    ) -> None:
        palette = widget.palette() if widget is not None else QApplication.palette()
        font = widget.font() if widget is not None else QApplication.font()
        detail = option.levelOfDetailFromTransform(painter.worldTransform())
        state = option.state
        paint_node(
            painter,
            self._rect,
            self.look,
            badge_text(self.look.badge),
            colours_for(self.look.badge, palette),
            font,
            selected=bool(state & _SELECTED),
            hovered=bool(state & _HOVER),
            detail=detail,
        )


class EdgeItem(QGraphicsItem):
    """A dependency: a curve from the dependency's right side to the task's left side, through
    the layout's bend points, ending in an arrow head."""

    def __init__(self, points: Sequence[tuple[float, float]]) -> None:
        super().__init__()
        self.setZValue(-1.0)
        self.emphasised = False
        self._path, self._head = _edge_path(points)
        self._bounds = self._path.boundingRect().united(self._head.boundingRect())

    def set_emphasised(self, on: bool) -> None:
        if on != self.emphasised:
            self.emphasised = on
            self.setZValue(-0.5 if on else -1.0)
            self.update()

    def boundingRect(self) -> QRectF:
        return self._bounds.adjusted(-2.0, -2.0, 2.0, 2.0)

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionGraphicsItem,
        widget: QWidget | None = None,
    ) -> None:
        palette = widget.palette() if widget is not None else QApplication.palette()
        if self.emphasised:
            colour = palette.color(_HIGHLIGHT)
        else:
            # Opaque: the hundred edges of a fan-out overlap near their shared end, and
            # translucent ones would add up to a black band there.
            colour = mix(palette.color(_BASE), palette.color(_TEXT), 0.45)
        pen = QPen(colour, 2.0 if self.emphasised else 1.3)
        pen.setCapStyle(_ROUND)
        painter.setPen(pen)
        painter.setBrush(_NO_BRUSH)
        painter.drawPath(self._path)
        painter.setBrush(QBrush(colour))
        painter.drawPath(self._head)


def _edge_path(points: Sequence[tuple[float, float]]) -> tuple[QPainterPath, QPainterPath]:
    # A bend point is a column's centre: the edge crosses that column straight, in the gap
    # between two nodes, and curves (horizontal tangents) between columns.
    half = GEOMETRY.node_width / 2
    ports = [points[0]]
    for x, y in points[1:-1]:
        ports += [(x - half, y), (x + half, y)]
    end_x, end_y = points[-1]
    ports.append((end_x - _ARROW, end_y))
    path = QPainterPath(QPointF(*ports[0]))
    for i in range(1, len(ports)):
        (ax, ay), (bx, by) = ports[i - 1], ports[i]
        if i % 2 == 1:  # from a column's right side to the next one's left: a curve
            mid = (ax + bx) / 2
            path.cubicTo(mid, ay, mid, by, bx, by)
        else:  # through a column
            path.lineTo(bx, by)
    head = QPainterPath(QPointF(end_x, end_y))
    head.lineTo(end_x - _ARROW, end_y - _ARROW / 2)
    head.lineTo(end_x - _ARROW, end_y + _ARROW / 2)
    head.closeSubpath()
    return path, head


class DagScene(QGraphicsScene):
    """The tasks of one run as nodes and edges, kept current by :meth:`apply`."""

    #: The selected task's id, or None when none is.
    task_selected = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tasks: dict[str, TaskRecord] = {}
        self.nodes: dict[str, NodeItem] = {}
        #: ``(task, dependency)`` → its edge.
        self.edges: dict[tuple[str, str], EdgeItem] = {}
        #: Times the layout was computed (a test checks a progress report does not).
        self.layouts = 0
        self._dependents: dict[str, list[str]] = {}
        self._selected: str | None = None
        self._building = False
        self.selectionChanged.connect(self._on_selection)

    @property
    def selected_id(self) -> str | None:
        return self._selected

    def set_tasks(self, tasks: Iterable[TaskRecord]) -> None:
        """Draw these tasks (in this order, which breaks the layout's ties)."""
        self.tasks = {t.id: t for t in tasks}
        self._relayout()

    def apply(self, changed: Iterable[TaskRecord], removed: Iterable[str] = ()) -> bool:
        """New records of tasks, and ids of tasks gone. Lays the graph out again when tasks
        came or went or their dependencies changed (returns True); otherwise updates the
        nodes of the changed tasks and of the tasks that depend on them."""
        tasks = self.tasks
        relayout = False
        touched: list[str] = []
        for task in changed:
            old = tasks.get(task.id)
            relayout = relayout or old is None or old.depends_on != task.depends_on
            tasks[task.id] = task
            touched.append(task.id)
        for task_id in removed:
            relayout = tasks.pop(task_id, None) is not None or relayout
        if relayout:
            self._relayout()
            return True
        for task_id in touched:
            # A dependent's badge moves between waiting and queued with its dependencies.
            for node_id in (task_id, *self._dependents.get(task_id, ())):
                self._refresh(node_id)
        return False

    def select(self, task_id: str | None) -> None:
        """Select ``task_id``'s node (None: clear the selection)."""
        node = self.nodes.get(task_id or "")
        if node is not None and node.isSelected():
            return
        self.clearSelection()
        if node is not None:
            node.setSelected(True)

    def _refresh(self, task_id: str) -> None:
        task, node = self.tasks[task_id], self.nodes[task_id]
        look = node_look(task, badge(task, deps_done(task, self.tasks)))
        node.set_look(look)
        node.setToolTip(node_tooltip(task, look))

    def _relayout(self) -> None:
        self.layouts += 1
        tasks = self.tasks
        deps = {t.id: t.depends_on for t in tasks.values()}
        try:
            drawn = layout(list(tasks), deps, GEOMETRY)
        except ValueError:  # a cycle: the store never makes one; draw the tasks unlinked
            drawn = layout(list(tasks), {}, GEOMETRY)
        self._building = True
        try:
            self.clear()
            self.nodes, self.edges, self._dependents = {}, {}, {}
            for (task_id, dep_id), points in drawn.edges.items():
                edge = self.edges[(task_id, dep_id)] = EdgeItem(points)
                self.addItem(edge)
                self._dependents.setdefault(dep_id, []).append(task_id)
            for task_id, (x, y) in drawn.positions.items():
                task = tasks[task_id]
                look = node_look(task, badge(task, deps_done(task, tasks)))
                node = self.nodes[task_id] = NodeItem(task_id, look)
                node.setPos(x, y)
                node.setToolTip(node_tooltip(task, look))
                self.addItem(node)
            self.setSceneRect(0.0, 0.0, drawn.width, drawn.height)
            kept = self.nodes.get(self._selected or "")
            if kept is not None:
                kept.setSelected(True)
        finally:
            self._building = False
        self._on_selection()

    def _on_selection(self) -> None:
        if self._building:
            return
        chosen = [i.task_id for i in self.selectedItems() if isinstance(i, NodeItem)]
        now = chosen[0] if chosen else None
        for (task_id, dep_id), edge in self.edges.items():
            edge.set_emphasised(now is not None and now in (task_id, dep_id))
        if now != self._selected:
            self._selected = now
            self.task_selected.emit(now)

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        # A press on the background keeps the selection (it starts a drag of the view).
        if self.itemAt(event.scenePos(), QTransform()) is None:  # no item ignores transforms
            event.ignore()
            return
        super().mousePressEvent(event)


class DagView(QGraphicsView):
    """The scene in a scrolling view: Ctrl+wheel (or Ctrl +/-) zooms, Ctrl+0 fits, dragging
    the background scrolls."""

    #: The zoom changed: the new scale (1.0 = 100 %).
    zoomed = Signal(float)

    def __init__(self, scene: DagScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)

    @property
    def scale_factor(self) -> float:
        return float(self.transform().m11())

    def zoom(self, factor: float) -> None:
        """Zoom by ``factor`` (within the limits)."""
        current = self.scale_factor
        target = min(MAX_SCALE, max(MIN_SCALE, current * factor))
        if abs(target - current) > 1e-9:
            self.scale(target / current, target / current)
            self.zoomed.emit(target)

    def fit(self, *, least: float = MIN_SCALE) -> None:
        """Fit the whole graph in the view (never larger than :data:`FIT_MAX_SCALE`, never
        smaller than ``least``)."""
        rect = self.sceneRect()
        if rect.isEmpty():
            return
        self.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
        scale = self.scale_factor
        clamped = min(FIT_MAX_SCALE, max(least, scale))
        if abs(clamped - scale) > 1e-9:
            self.scale(clamped / scale, clamped / scale)
        self.centerOn(rect.center())
        self.zoomed.emit(self.scale_factor)

    def wheelEvent(self, event: QWheelEvent) -> None:
        if event.modifiers() & _CTRL:
            self.zoom(WHEEL_STEP ** (event.angleDelta().y() / 120.0))
            event.accept()
            return
        super().wheelEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.modifiers() & _CTRL:
            key = event.key()
            if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
                self.zoom(WHEEL_STEP)
                return
            if key == Qt.Key.Key_Minus:
                self.zoom(1 / WHEEL_STEP)
                return
            if key == Qt.Key.Key_0:
                self.fit()
                return
        super().keyPressEvent(event)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # the nodes take their colours from it
            self.viewport().update()
