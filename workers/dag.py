"""Validation and walks of a workflow's dependency graph.

Pure. A graph is a mapping from a node's key to the keys it depends on. An unknown dependency
or a cycle is an error that names the nodes involved; nothing is ever silently "satisfied".
"""

from __future__ import annotations

import graphlib
from collections import deque
from collections.abc import Iterable, Mapping, Sequence


class DagError(ValueError):
    """A dependency graph that cannot be run."""


class UnknownDependency(DagError):
    def __init__(self, missing: Sequence[tuple[str, str]]) -> None:
        self.missing = list(missing)
        shown = ", ".join(f"{task!r} depends on unknown {dep!r}" for task, dep in self.missing)
        super().__init__(f"unknown dependency: {shown}")


class CycleError(DagError):
    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = list(cycle)
        super().__init__("dependency cycle: " + " -> ".join(repr(k) for k in self.cycle))


def validate(graph: Mapping[str, Sequence[str]], known: Iterable[str] = ()) -> list[str]:
    """Check ``graph`` and return its keys in a topological order (dependencies first).

    ``known`` names nodes outside the graph that may be depended on (existing tasks of a run
    that new tasks are added to); they are not part of the returned order.
    """
    outside = set(known)
    missing = [
        (key, dep)
        for key, deps in graph.items()
        for dep in deps
        if dep not in graph and dep not in outside
    ]
    if missing:
        raise UnknownDependency(missing)
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for key, deps in graph.items():
        sorter.add(key, *(d for d in deps if d in graph))
    try:
        order = list(sorter.static_order())
    except graphlib.CycleError as exc:
        # graphlib reports the cycle closed on itself: [a, b, a].
        raise CycleError(exc.args[1]) from None
    return order


def descendants(children: Mapping[str, Iterable[str]], start: Iterable[str]) -> set[str]:
    """Every node reachable from ``start`` along ``children`` edges. A start node is included
    only when it is reachable from another start node."""
    seen: set[str] = set()
    todo = deque(start)
    while todo:
        node = todo.popleft()
        for child in children.get(node, ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def children_of(graph: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Invert a dependency graph: for each key, the keys that depend on it."""
    out: dict[str, list[str]] = {key: [] for key in graph}
    for key, deps in graph.items():
        for dep in deps:
            out.setdefault(dep, []).append(key)
    return out
