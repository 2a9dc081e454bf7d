"""The layered layout of a run's DAG (pure: ids and edges in, coordinates out)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fredica_app.views.dag_layout import Geometry, Layout, layers_of, layout

G = Geometry(node_width=100, node_height=30, layer_gap=50, node_gap=10, margin=5)


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]]]:
    """Nodes in a random order, each depending on some of the nodes drawn before it."""
    n = draw(st.integers(0, 25))
    ids = [f"n{i}" for i in range(n)]
    edges = {
        ids[i]: draw(st.lists(st.sampled_from(ids[:i]), max_size=3, unique=True)) if i else []
        for i in range(n)
    }
    return draw(st.permutations(ids)), edges


def overlaps(a: tuple[float, float], b: tuple[float, float], g: Geometry) -> bool:
    return abs(a[0] - b[0]) < g.node_width and abs(a[1] - b[1]) < g.node_height


def test_layers_are_the_longest_path_from_the_sources() -> None:
    edges = {"b": ["a"], "c": ["a", "b"], "d": ["c", "a"], "a": ["elsewhere", "a"]}
    assert layers_of(["a", "b", "c", "d"], edges) == {"a": 0, "b": 1, "c": 2, "d": 3}


def test_a_cycle_is_refused() -> None:
    with pytest.raises(ValueError, match="cycle"):
        layers_of(["a", "b", "c"], {"a": ["c"], "b": ["a"], "c": ["b"]})


def test_a_long_chain_needs_no_recursion() -> None:
    ids = [str(i) for i in range(5000)]
    layers = layers_of(ids, {ids[i]: [ids[i - 1]] for i in range(1, 5000)})
    assert layers["4999"] == 4999


def test_an_empty_graph() -> None:
    empty = layout([], {})
    assert empty == Layout({}, {}, {}, 0.0, 0.0, 0)


def test_a_crossing_graph_is_untangled() -> None:
    # Input order puts a's child under b's and vice versa: two crossings until ordered.
    nodes = ["a", "b", "c", "d", "x", "y"]
    edges = {"x": ["b"], "y": ["a"], "c": ["a"], "d": ["b"]}
    assert layout(nodes, edges, G, sweeps=0).crossings == 2
    result = layout(nodes, edges, G)
    assert result.crossings == 0
    column = sorted(["c", "d", "x", "y"], key=lambda n: result.positions[n][1])
    assert column.index("y") < column.index("x")  # y follows a, which is above b


def test_a_known_pipeline_has_no_crossings() -> None:
    # A subtitles run: probe feeds audio and thumbnails; audio feeds transcribe; transcribe
    # feeds translate and captions; captions waits for translate too; a report needs all.
    nodes = ["report", "captions", "thumbs", "translate", "transcribe", "audio", "probe"]
    edges = {
        "audio": ["probe"],
        "thumbs": ["probe"],
        "transcribe": ["audio"],
        "translate": ["transcribe"],
        "captions": ["transcribe", "translate"],
        "report": ["captions", "thumbs", "probe"],
    }
    result = layout(nodes, edges, G)
    assert result.crossings == 0
    assert result.layers["report"] == 5
    # probe → report spans four columns: it bends at a point in each column between.
    assert len(result.edges[("report", "probe")]) == 2 + 4
    assert len(result.edges[("audio", "probe")]) == 2


def test_edges_run_from_the_dependency_to_the_task() -> None:
    result = layout(["a", "b", "c"], {"c": ["a"], "b": ["a"]}, G)
    ax, ay = result.positions["a"]
    cx, cy = result.positions["c"]
    line = result.edges[("c", "a")]
    assert line[0] == (ax + G.node_width, ay + G.node_height / 2)
    assert line[-1] == (cx, cy + G.node_height / 2)
    assert result.width == 2 * G.margin + 2 * G.node_width + G.layer_gap
    assert result.height == 2 * G.margin + 2 * G.node_height + G.node_gap
    # The single node of column 0 is centred on the taller column 1.
    assert ay == G.margin + (G.node_height + G.node_gap) / 2


def test_duplicate_ids_and_edges_count_once_unknown_ones_not_at_all() -> None:
    result = layout(["a", "b", "a"], {"b": ["a", "a", "b", "gone"]}, G)
    assert list(result.positions) == ["a", "b"]
    assert list(result.edges) == [("b", "a")]


@settings(max_examples=150, deadline=None)
@given(dags())
def test_every_edge_points_to_an_earlier_layer(
    graph: tuple[list[str], dict[str, list[str]]],
) -> None:
    nodes, edges = graph
    result = layout(nodes, edges, G)
    for task, deps in edges.items():
        for dep in deps:
            assert result.layers[task] > result.layers[dep]
            line = result.edges[(task, dep)]
            assert len(line) == 1 + result.layers[task] - result.layers[dep]
            xs = [x for x, _ in line]
            assert xs == sorted(xs)


@settings(max_examples=150, deadline=None)
@given(dags())
def test_no_two_nodes_overlap_and_all_fit(graph: tuple[list[str], dict[str, list[str]]]) -> None:
    nodes, edges = graph
    result = layout(nodes, edges, G)
    placed = list(result.positions.values())
    for i, a in enumerate(placed):
        assert 0 <= a[0] and a[0] + G.node_width <= result.width
        assert 0 <= a[1] and a[1] + G.node_height <= result.height
        for b in placed[i + 1 :]:
            assert not overlaps(a, b, G)


@settings(max_examples=100, deadline=None)
@given(dags())
def test_the_same_input_gives_the_same_drawing(
    graph: tuple[list[str], dict[str, list[str]]],
) -> None:
    nodes, edges = graph
    first = layout(nodes, edges, G)
    again = layout(list(nodes), {k: list(v) for k, v in reversed(edges.items())}, G)
    assert first == again


@settings(max_examples=100, deadline=None)
@given(dags())
def test_ordering_never_adds_crossings(graph: tuple[list[str], dict[str, list[str]]]) -> None:
    nodes, edges = graph
    assert layout(nodes, edges, G).crossings <= layout(nodes, edges, G, sweeps=0).crossings
