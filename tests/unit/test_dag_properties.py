"""Property tests: random DAGs run to completion in any legal order, with and without failures.

Graphs are generated acyclic by construction (node ``i`` may only depend on nodes ``j < i``),
then the key names and the insertion order are shuffled so neither gives the answer away.
Readiness is tracked the way an engine would (a per-task count of unfinished dependencies,
decremented through :func:`workers.dag.children_of`), and checked against the graph itself.
"""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from workers import dag
from workers.states import (
    ErrorType,
    RunStatus,
    TaskStatus,
    check_transition,
    derive_run_status,
    is_terminal,
    retry_decision,
)

P = TaskStatus.PENDING
R = TaskStatus.RUNNING
CO = TaskStatus.COMPLETED
F = TaskStatus.FAILED
CA = TaskStatus.CANCELLED

Graph = dict[str, list[str]]


@st.composite
def dags(draw: st.DrawFn, min_nodes: int = 1, max_nodes: int = 30) -> Graph:
    n = draw(st.integers(min_nodes, max_nodes))
    node = st.integers(0, n - 1)
    pairs = draw(st.lists(st.tuples(node, node), max_size=3 * n))
    deps: list[set[int]] = [set() for _ in range(n)]
    for x, y in pairs:
        if x != y:
            deps[max(x, y)].add(min(x, y))  # only from a higher index to a lower one
    names = draw(st.permutations([f"t{i:02d}" for i in range(n)]))
    insertion = draw(st.permutations(range(n)))
    return {names[i]: [names[j] for j in sorted(deps[i])] for i in insertion}


def _choose(data: st.DataObject, options: list[tuple[str, str]]) -> tuple[str, str]:
    """Let hypothesis pick one of ``options`` (an index draw shrinks towards the first)."""
    return options[data.draw(st.integers(0, len(options) - 1))]


def _reachable(edges: Graph, start: str) -> set[str]:
    """Brute-force reachability, independent of dag.descendants."""
    seen: set[str] = set()
    stack = list(edges.get(start, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(edges.get(node, ()))
    return seen


def _set(status: dict[str, TaskStatus], key: str, target: TaskStatus) -> None:
    check_transition(status[key], target)
    status[key] = target


@settings(max_examples=200, deadline=None)
@given(graph=dags())
def test_validate_orders_every_random_dag_topologically(graph: Graph) -> None:
    order = dag.validate(graph)
    assert sorted(order) == sorted(graph)
    position = {k: i for i, k in enumerate(order)}
    for key, deps in graph.items():
        assert all(position[d] < position[key] for d in deps)


@settings(max_examples=200, deadline=None)
@given(graph=dags())
def test_children_and_descendants_agree_with_brute_force(graph: Graph) -> None:
    children = dag.children_of(graph)
    assert set(children) == set(graph)
    for key, deps in graph.items():
        for d in deps:
            assert key in children[d]
    assert sum(map(len, children.values())) == sum(map(len, graph.values()))
    for key in graph:
        assert dag.descendants(children, [key]) == _reachable(children, key)


@settings(max_examples=100, deadline=None)
@given(graph=dags(), data=st.data())
def test_any_legal_order_completes_the_run(graph: Graph, data: st.DataObject) -> None:
    dag.validate(graph)
    children = dag.children_of(graph)
    status = dict.fromkeys(graph, P)
    unfinished_deps = {k: len(deps) for k, deps in graph.items()}
    ready = {k for k, n in unfinished_deps.items() if n == 0}
    completion_order: list[str] = []

    while True:
        counts = Counter(status.values())
        run_status = derive_run_status(counts)
        if counts[R]:
            assert run_status is RunStatus.RUNNING
        elif counts[P]:
            assert run_status is RunStatus.PENDING
        running = sorted(k for k, s in status.items() if s is R)
        actions = [("start", k) for k in sorted(ready)] + [("finish", k) for k in running]
        if not actions:
            break
        action, key = _choose(data, actions)
        if action == "start":
            # Never started before every dependency completed.
            assert status[key] is P
            assert all(status[d] is CO for d in graph[key]), key
            ready.remove(key)
            _set(status, key, R)
        else:
            _set(status, key, CO)
            completion_order.append(key)
            for child in children[key]:
                unfinished_deps[child] -= 1
                assert unfinished_deps[child] >= 0
                if unfinished_deps[child] == 0:
                    ready.add(child)

    assert all(s is CO for s in status.values())
    assert sorted(completion_order) == sorted(graph)
    assert derive_run_status(Counter(status.values())) is RunStatus.COMPLETED
    # The completion order is itself a topological order.
    position = {k: i for i, k in enumerate(completion_order)}
    assert all(position[d] < position[k] for k, deps in graph.items() for d in deps)


# How a failed attempt failed: its error type and the random draw its backoff uses.
FAILURES = st.tuples(
    st.sampled_from([e for e in ErrorType if e is not ErrorType.CANCELLED]),
    st.floats(0.0, 1.0, exclude_max=True),
)


@settings(max_examples=100, deadline=None)
@given(graph=dags(), data=st.data())
def test_failures_cancel_exactly_the_descendants(graph: Graph, data: st.DataObject) -> None:
    children = dag.children_of(graph)
    status = dict.fromkeys(graph, P)
    unfinished_deps = {k: len(deps) for k, deps in graph.items()}
    ready = {k for k, n in unfinished_deps.items() if n == 0}
    limits = data.draw(st.lists(st.integers(0, 2), min_size=len(graph), max_size=len(graph)))
    max_retries = dict(zip(graph, limits, strict=True))
    retry_count = dict.fromkeys(graph, 0)

    while True:
        counts = Counter(status.values())
        if counts[F]:
            assert derive_run_status(counts) is RunStatus.FAILED
        running = sorted(k for k, s in status.items() if s is R)
        actions = [("start", k) for k in sorted(ready)]
        actions += [(outcome, k) for k in running for outcome in ("complete", "fail")]
        if not actions:
            break
        action, key = _choose(data, actions)
        if action == "start":
            assert status[key] is P
            assert all(status[d] is CO for d in graph[key]), key
            ready.remove(key)
            _set(status, key, R)
            continue
        if action == "complete":
            _set(status, key, CO)
            for child in children[key]:
                unfinished_deps[child] -= 1
                if unfinished_deps[child] == 0 and status[child] is P:
                    ready.add(child)
            continue
        error, rand = data.draw(FAILURES)
        decision = retry_decision(error, retry_count[key], max_retries[key], rand)
        if decision.retry:
            assert retry_count[key] < max_retries[key]
            assert decision.delay > 0
            retry_count[key] += 1
            _set(status, key, P)
            ready.add(key)  # its dependencies are still completed
            continue
        _set(status, key, F)
        for d in dag.descendants(children, [key]):
            # A descendant of a task that never completed cannot have started.
            assert status[d] in (P, CA), (d, status[d])
            assert d not in ready
            if status[d] is P:
                _set(status, d, CA)

    assert all(is_terminal(s) for s in status.values())
    failed = {k for k, s in status.items() if s is F}
    cancelled = {k for k, s in status.items() if s is CA}
    completed = {k for k, s in status.items() if s is CO}
    downstream_of_failure = dag.descendants(children, failed)
    assert cancelled == downstream_of_failure
    assert not failed & downstream_of_failure
    for k in cancelled:
        # No cancelled task had all its dependencies completed (unless it descends from a
        # failure, which every cancelled task here must).
        assert k in downstream_of_failure
        assert not all(status[d] is CO for d in graph[k])
        assert any(status[d] in (F, CA) for d in graph[k])
    for k in completed:
        assert all(status[d] is CO for d in graph[k])
    run_status = derive_run_status(Counter(status.values()))
    assert (run_status is RunStatus.FAILED) == bool(failed)
    if not failed:
        assert run_status is RunStatus.COMPLETED
        assert completed == set(graph)


@settings(max_examples=100, deadline=None)
@given(graph=dags(min_nodes=2), data=st.data())
def test_a_back_edge_is_always_a_cycle(graph: Graph, data: st.DataObject) -> None:
    dag.validate(graph)  # acyclic as generated
    with_deps = sorted(k for k, deps in graph.items() if deps)
    if not with_deps:
        a, b = data.draw(st.permutations(sorted(graph)), label="pair")[:2]
        graph[b] = [a]
        with_deps = [b]
    node = data.draw(st.sampled_from(with_deps), label="node")
    # Walking dependency edges from `node` gives its ancestors (what it depends on).
    ancestors = dag.descendants(graph, [node])
    assert ancestors == _reachable(graph, node)
    assert ancestors
    ancestor = data.draw(st.sampled_from(sorted(ancestors)), label="ancestor")
    graph[ancestor] = [*graph[ancestor], node]  # the ancestor now depends on its descendant

    try:
        dag.validate(graph)
    except dag.CycleError as exc:
        cycle, message = exc.cycle, str(exc)
    else:
        raise AssertionError(f"back edge {node!r} -> {ancestor!r} not detected")
    assert len(cycle) >= 3
    assert cycle[0] == cycle[-1]
    assert len(set(cycle[:-1])) == len(cycle) - 1
    edges = list(itertools.pairwise(cycle))
    for prev, nxt in edges:
        assert prev in graph[nxt], (prev, nxt)
    # The graph was acyclic before, so every cycle uses the new edge.
    assert (node, ancestor) in edges
    for k in cycle:
        assert repr(k) in message
