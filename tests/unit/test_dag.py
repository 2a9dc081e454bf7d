"""Validation and walks of a dependency graph (pure)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pytest

from workers import dag


def _assert_topological(graph: Mapping[str, Sequence[str]], order: list[str]) -> None:
    assert sorted(order) == sorted(graph)
    position = {key: i for i, key in enumerate(order)}
    for key, deps in graph.items():
        for d in deps:
            if d in graph:
                assert position[d] < position[key], f"{d!r} must come before {key!r}"


# --- validate: topological order ---


def test_empty_graph() -> None:
    assert dag.validate({}) == []


def test_single_node() -> None:
    assert dag.validate({"a": []}) == ["a"]


def test_chain_is_returned_dependencies_first() -> None:
    # Inserted in reverse, so insertion order is not the answer.
    graph = {"c": ["b"], "b": ["a"], "a": []}
    assert dag.validate(graph) == ["a", "b", "c"]


def test_diamond_order() -> None:
    graph = {"join": ["left", "right"], "left": ["src"], "right": ["src"], "src": []}
    order = dag.validate(graph)
    assert order[0] == "src"
    assert order[-1] == "join"
    _assert_topological(graph, order)


def test_wide_graph_order_respects_every_edge() -> None:
    graph = {
        "publish": ["mux", "subs"],
        "mux": ["video", "audio"],
        "subs": ["transcribe"],
        "transcribe": ["audio"],
        "audio": ["download"],
        "video": ["download"],
        "download": [],
        "unrelated": [],
    }
    order = dag.validate(graph)
    _assert_topological(graph, order)
    assert len(order) == len(set(order)) == 8


def test_duplicate_dependencies_are_harmless() -> None:
    graph = {"b": ["a", "a"], "a": []}
    assert dag.validate(graph) == ["a", "b"]


def test_accepts_tuples_as_dependency_sequences() -> None:
    assert dag.validate({"b": ("a",), "a": ()}) == ["a", "b"]


# --- validate: unknown dependencies ---


def test_unknown_dependency_names_task_and_missing_key() -> None:
    with pytest.raises(dag.UnknownDependency) as info:
        dag.validate({"encode": ["download"], "other": []})
    err = info.value
    assert err.missing == [("encode", "download")]
    assert str(err) == "unknown dependency: 'encode' depends on unknown 'download'"


def test_unknown_dependency_reports_every_missing_pair() -> None:
    graph = {"a": ["x"], "b": ["a", "y", "z"], "c": ["a"]}
    with pytest.raises(dag.UnknownDependency) as info:
        dag.validate(graph)
    assert info.value.missing == [("a", "x"), ("b", "y"), ("b", "z")]
    message = str(info.value)
    for task, dep in info.value.missing:
        assert f"{task!r} depends on unknown {dep!r}" in message
    assert "'c'" not in message


def test_unknown_dependency_is_a_dag_error_and_a_value_error() -> None:
    with pytest.raises(dag.DagError):
        dag.validate({"a": ["nope"]})
    with pytest.raises(ValueError, match="'a' depends on unknown 'nope'"):
        dag.validate({"a": ["nope"]})


def test_unknown_dependency_is_reported_even_with_a_cycle() -> None:
    with pytest.raises(dag.UnknownDependency):
        dag.validate({"a": ["b"], "b": ["a", "ghost"]})


# --- validate: cycles ---


def _cycle_of(graph: Mapping[str, Sequence[str]]) -> dag.CycleError:
    with pytest.raises(dag.CycleError) as info:
        dag.validate(graph)
    return info.value


def _assert_real_cycle(graph: Mapping[str, Sequence[str]], cycle: list[str]) -> None:
    assert len(cycle) >= 2
    assert cycle[0] == cycle[-1]
    for prev, nxt in itertools.pairwise(cycle):
        # each node is a dependency of the next one
        assert prev in graph[nxt], (prev, nxt)


def test_self_loop_is_a_cycle() -> None:
    err = _cycle_of({"a": ["a"], "b": []})
    assert err.cycle == ["a", "a"]
    assert str(err) == "dependency cycle: 'a' -> 'a'"
    assert "'b'" not in str(err)


def test_two_node_cycle() -> None:
    graph = {"x": ["y"], "y": ["x"]}
    err = _cycle_of(graph)
    assert set(err.cycle) == {"x", "y"}
    _assert_real_cycle(graph, err.cycle)


def test_longer_cycle_names_exactly_its_nodes() -> None:
    graph = {
        "a": ["d"],
        "b": ["a"],
        "c": ["b"],
        "d": ["c"],
        "tail": ["a"],  # depends on the cycle but is not part of it
        "root": [],
        "leaf": ["root"],
    }
    err = _cycle_of(graph)
    assert set(err.cycle) == {"a", "b", "c", "d"}
    assert len(err.cycle) == 5
    _assert_real_cycle(graph, err.cycle)
    message = str(err)
    assert message.startswith("dependency cycle: ")
    assert message == "dependency cycle: " + " -> ".join(repr(k) for k in err.cycle)
    for node in ("a", "b", "c", "d"):
        assert repr(node) in message
    for node in ("tail", "root", "leaf"):
        assert repr(node) not in message


def test_cycle_error_is_a_dag_error_and_not_graphlibs() -> None:
    import graphlib

    with pytest.raises(dag.DagError) as info:
        dag.validate({"a": ["b"], "b": ["a"]})
    assert isinstance(info.value, ValueError)
    assert not isinstance(info.value, graphlib.CycleError)
    assert info.value.__suppress_context__


# --- validate: known outside nodes ---


def test_known_keys_may_be_depended_on_and_are_not_returned() -> None:
    graph = {"new2": ["new1", "old1"], "new1": ["old2"]}
    order = dag.validate(graph, known={"old1", "old2"})
    assert order == ["new1", "new2"]


def test_known_accepts_any_iterable() -> None:
    assert dag.validate({"b": ["a"]}, known=iter(["a"])) == ["b"]
    assert dag.validate({"b": ["a"]}, known=("a", "zzz")) == ["b"]


def test_known_does_not_hide_other_unknown_dependencies() -> None:
    with pytest.raises(dag.UnknownDependency) as info:
        dag.validate({"b": ["a", "c"]}, known={"a"})
    assert info.value.missing == [("b", "c")]


def test_key_in_graph_and_known_is_ordered_as_a_graph_node() -> None:
    graph = {"b": ["a"], "a": ["c"], "c": []}
    assert dag.validate(graph, known={"a"}) == ["c", "a", "b"]


def test_known_does_not_break_cycle_detection() -> None:
    with pytest.raises(dag.CycleError):
        dag.validate({"a": ["b", "old"], "b": ["a"]}, known={"old"})


# --- children_of ---


def test_children_of_inverts_the_graph() -> None:
    graph = {"a": [], "b": ["a"], "c": ["a", "b"], "d": ["c"]}
    assert dag.children_of(graph) == {"a": ["b", "c"], "b": ["c"], "c": ["d"], "d": []}


def test_children_of_lists_every_key_even_without_children() -> None:
    assert dag.children_of({"x": [], "y": []}) == {"x": [], "y": []}
    assert dag.children_of({}) == {}


def test_children_of_includes_outside_dependencies() -> None:
    assert dag.children_of({"new": ["old"]}) == {"new": [], "old": ["new"]}


def test_children_of_does_not_mutate_input() -> None:
    graph = {"b": ["a"], "a": []}
    dag.children_of(graph)
    assert graph == {"b": ["a"], "a": []}


# --- descendants ---


GRAPH = {
    "download": [],
    "audio": ["download"],
    "video": ["download"],
    "transcribe": ["audio"],
    "mux": ["audio", "video"],
    "publish": ["mux", "transcribe"],
    "side": [],
}
CHILDREN = dag.children_of(GRAPH)


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        (["download"], {"audio", "video", "transcribe", "mux", "publish"}),
        (["audio"], {"transcribe", "mux", "publish"}),
        (["video"], {"mux", "publish"}),
        (["transcribe"], {"publish"}),
        (["publish"], set()),
        (["side"], set()),
        ([], set()),
        (["video", "transcribe"], {"mux", "publish"}),
        (["side", "transcribe"], {"publish"}),
    ],
)
def test_descendants(start: list[str], expected: set[str]) -> None:
    assert dag.descendants(CHILDREN, start) == expected


def test_descendants_excludes_a_single_start() -> None:
    for key in GRAPH:
        assert key not in dag.descendants(CHILDREN, [key])


def test_descendants_of_several_starts_is_the_union() -> None:
    # "audio" is itself a descendant of "download", so it is in the result.
    both = dag.descendants(CHILDREN, ["download", "audio"])
    assert both == dag.descendants(CHILDREN, ["download"]) | dag.descendants(CHILDREN, ["audio"])
    assert "audio" in both


def test_descendants_of_unknown_node_is_empty() -> None:
    assert dag.descendants(CHILDREN, ["nowhere"]) == set()


def test_descendants_accepts_a_generator_and_visits_shared_nodes_once() -> None:
    children = {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}
    assert dag.descendants(children, (k for k in ["a"])) == {"b", "c", "d"}


def test_descendants_terminates_on_a_cycle() -> None:
    children = {"a": ["b"], "b": ["a", "c"], "c": []}
    assert dag.descendants(children, ["c"]) == set()
    # Graphs are validated acyclic before any walk; here only termination matters.
    assert {"b", "c"} <= dag.descendants(children, ["a"]) <= {"a", "b", "c"}
