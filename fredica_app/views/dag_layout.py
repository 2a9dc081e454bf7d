"""A layered drawing of a run's DAG (Sugiyama style), computed without Qt.

Tasks flow left to right: a task with no dependency sits in the first column (layer 0), every
other one column past its deepest dependency (longest path from the sources), so every edge
goes from a task to a dependency in an earlier column. An edge that spans several columns
passes through a *dummy* point in each column between, so it bends around the nodes there
instead of crossing them. Within a column the order comes from a few sweeps of the barycenter
heuristic (each node moves towards the mean position of its neighbours in the column before,
then after); the best order seen is kept, so the sweeps never add crossings. Ties are broken
by the input order: the same input always gives the same drawing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

#: A point in scene coordinates: x grows to the right, y downwards.
Point = tuple[float, float]

#: Down and up sweeps of the barycenter heuristic: more rarely helps a run's DAG.
SWEEPS = 4


@dataclass(frozen=True, slots=True)
class Geometry:
    """The sizes a drawing is made with, in scene units."""

    node_width: float = 160.0
    node_height: float = 40.0
    #: Between two columns (where the edges run).
    layer_gap: float = 80.0
    #: Between two neighbours of a column (a bend point takes no height of its own).
    node_gap: float = 20.0
    margin: float = 20.0


@dataclass(frozen=True, slots=True)
class Layout:
    """Where everything goes."""

    #: Each node's top-left corner.
    positions: dict[str, Point]
    #: Each node's column (0: no dependency).
    layers: dict[str, int]
    #: ``(task, dependency)`` → the polyline from the dependency's right side, through the
    #: bend points, to the task's left side.
    edges: dict[tuple[str, str], tuple[Point, ...]]
    width: float
    height: float
    #: Edge crossings left between neighbouring columns (bend points included).
    crossings: int


# A node of the layered graph: a real id, or a bend point ("", n) of edge number n.
_Item = str | tuple[str, int]


def layers_of(nodes: Sequence[str], edges: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Each node's layer: 0 without dependencies, else one past its deepest dependency.

    Dependencies that are not among ``nodes`` are ignored; a cycle raises ``ValueError``."""
    known = dict.fromkeys(nodes)
    deps = {n: [d for d in dict.fromkeys(edges.get(n, ())) if d in known and d != n] for n in known}
    layer: dict[str, int] = {}
    for root in known:
        # Iterative depth-first search: a long chain must not hit the recursion limit.
        stack: list[tuple[str, int]] = [(root, 0)]
        on_path: set[str] = set()
        while stack:
            node, i = stack[-1]
            if node in layer:
                stack.pop()
                continue
            on_path.add(node)
            todo = deps[node]
            if i < len(todo):
                stack[-1] = (node, i + 1)
                dep = todo[i]
                if dep in on_path:
                    raise ValueError(f"the dependencies form a cycle through {dep!r}")
                stack.append((dep, 0))
                continue
            layer[node] = 1 + max((layer[d] for d in todo), default=-1)
            on_path.discard(node)
            stack.pop()
    return layer


def layout(
    nodes: Sequence[str],
    edges: Mapping[str, Iterable[str]],
    geometry: Geometry = Geometry(),
    *,
    sweeps: int = SWEEPS,
) -> Layout:
    """Lay out ``nodes`` (ids, in the order ties go) with ``edges`` (a task → its
    dependencies; unknown dependencies and self-loops are ignored), ordering the columns with
    ``sweeps`` pairs of down and up sweeps."""
    layer = layers_of(nodes, edges)
    order: dict[_Item, int] = {n: i for i, n in enumerate(layer)}
    columns: list[list[_Item]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for n in layer:
        columns[layer[n]].append(n)
    # Chains of segments, from the dependency to the task, through a bend point per column.
    chains: dict[tuple[str, str], list[_Item]] = {}
    for task in layer:
        for dep in dict.fromkeys(edges.get(task, ())):
            if dep not in layer or dep == task:
                continue
            chain: list[_Item] = [dep]
            for column in range(layer[dep] + 1, layer[task]):
                bend = ("", len(order))
                order[bend] = len(order)  # bend points tie after the nodes, in edge order
                columns[column].append(bend)
                chain.append(bend)
            chain.append(task)
            chains[(task, dep)] = chain
    left: dict[_Item, list[_Item]] = {item: [] for column in columns for item in column}
    right: dict[_Item, list[_Item]] = {item: [] for item in left}
    for chain in chains.values():
        for a, b in pairwise(chain):
            right[a].append(b)
            left[b].append(a)
    columns, crossings = _order(columns, left, right, order, sweeps)
    return _place(columns, layer, chains, crossings, geometry)


def _order(
    columns: list[list[_Item]],
    left: Mapping[_Item, list[_Item]],
    right: Mapping[_Item, list[_Item]],
    order: Mapping[_Item, int],
    sweeps: int,
) -> tuple[list[list[_Item]], int]:
    best = [list(c) for c in columns]
    best_crossings = _crossings(best, right)
    current = best
    for sweep in range(2 * sweeps):
        if best_crossings == 0:
            break
        down = sweep % 2 == 0
        current = [list(c) for c in current]
        indices = range(1, len(current)) if down else range(len(current) - 2, -1, -1)
        for i in indices:
            fixed = current[i - 1] if down else current[i + 1]
            position = {item: p for p, item in enumerate(fixed)}
            neighbours = left if down else right
            current[i] = _by_barycenter(current[i], neighbours, position, order)
        crossings = _crossings(current, right)
        if crossings < best_crossings:
            best, best_crossings = current, crossings
    return best, best_crossings


def _by_barycenter(
    column: list[_Item],
    neighbours: Mapping[_Item, list[_Item]],
    position: Mapping[_Item, int],
    order: Mapping[_Item, int],
) -> list[_Item]:
    keys: dict[_Item, tuple[float, int]] = {}
    for p, item in enumerate(column):
        near = neighbours[item]
        # A node with no neighbour on that side keeps its place.
        bary = sum(position[n] for n in near) / len(near) if near else float(p)
        keys[item] = (bary, order[item])
    return sorted(column, key=keys.__getitem__)


def _crossings(columns: list[list[_Item]], right: Mapping[_Item, list[_Item]]) -> int:
    total = 0
    for a, b in pairwise(columns):
        at = {item: p for p, item in enumerate(b)}
        # Segments sorted by their left end, then their right: every inversion of the right
        # ends is one crossing (O(E log V)).
        ends = [p for item in a for p in sorted(at[n] for n in right[item])]
        total += _inversions(ends, len(b))
    return total


def _inversions(values: list[int], size: int) -> int:
    """Pairs ``i < j`` with ``values[i] > values[j]`` (each in ``range(size)``): a Fenwick tree
    of the values seen so far."""
    tree = [0] * (size + 1)
    count = 0
    for seen, v in enumerate(values):
        i, not_above = v + 1, 0
        while i > 0:
            not_above += tree[i]
            i -= i & -i
        count += seen - not_above
        i = v + 1
        while i <= size:
            tree[i] += 1
            i += i & -i
    return count


def _place(
    columns: list[list[_Item]],
    layer: Mapping[str, int],
    chains: Mapping[tuple[str, str], list[_Item]],
    crossings: int,
    g: Geometry,
) -> Layout:
    def extent(item: _Item) -> float:
        return g.node_height if isinstance(item, str) else 0.0

    heights = [
        sum(extent(item) for item in column) + g.node_gap * (len(column) - 1) for column in columns
    ]
    tallest = max(heights, default=0.0)
    centre: dict[_Item, Point] = {}
    for i, column in enumerate(columns):
        x = g.margin + i * (g.node_width + g.layer_gap)
        # Each column centred on the tallest, so that short columns sit in the middle.
        y = g.margin + (tallest - heights[i]) / 2
        for item in column:
            centre[item] = (x + g.node_width / 2, y + extent(item) / 2)
            y += extent(item) + g.node_gap
    positions = {
        n: (centre[n][0] - g.node_width / 2, centre[n][1] - g.node_height / 2) for n in layer
    }
    edges: dict[tuple[str, str], tuple[Point, ...]] = {}
    half = g.node_width / 2
    for key, chain in chains.items():
        (sx, sy), (tx, ty) = centre[chain[0]], centre[chain[-1]]
        bends = tuple(centre[item] for item in chain[1:-1])
        edges[key] = ((sx + half, sy), *bends, (tx - half, ty))
    width = 2 * g.margin + len(columns) * g.node_width + max(0, len(columns) - 1) * g.layer_gap
    return Layout(
        positions=positions,
        layers=dict(layer),
        edges=edges,
        width=width if columns else 0.0,
        height=2 * g.margin + tallest if columns else 0.0,
        crossings=crossings,
    )
