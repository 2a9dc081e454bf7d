"""GUI benchmark: how long the layered layout of a run's DAG takes (``fredica_app.views``).

Random DAGs of 50, 200 and 1,000 tasks, shaped like big runs: each task depends on up to
three of the 30 tasks created just before it (a wide pipeline, with edges spanning several
layers, so bend points and crossings to reduce). Each size is laid out ``--rounds`` times;
the median is printed with the layers, bend points and crossings left (and before ordering).

Target: well under 50 ms at 200 tasks (a layout runs on the GUI's thread when a run opens).

    .venv/bin/python bench/gui_layout.py [--sizes 50 200 1000] [--rounds 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from fredica_app.views.dag_layout import layout


def random_dag(n: int, seed: int) -> tuple[list[str], dict[str, list[str]]]:
    rng = random.Random(seed)
    ids = [f"task-{i}" for i in range(n)]
    edges = {
        ids[i]: rng.sample(ids[max(0, i - 30) : i], min(i, rng.randint(0, 3))) for i in range(n)
    }
    return ids, edges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(
        f"{'tasks':>6} {'edges':>6} {'layers':>6} {'bends':>6} {'crossings':>15} {'median ms':>10}"
    )
    for n in args.sizes:
        ids, edges = random_dag(n, args.seed + n)
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            result = layout(ids, edges)
            times.append(time.perf_counter() - started)
        before = layout(ids, edges, sweeps=0).crossings
        bends = sum(len(line) - 2 for line in result.edges.values())
        layers = max(result.layers.values()) + 1
        print(
            f"{n:>6} {sum(map(len, edges.values())):>6} {layers:>6} {bends:>6} "
            f"{f'{before} → {result.crossings}':>15} {statistics.median(times) * 1000:>10.1f}"
        )


if __name__ == "__main__":
    main()
