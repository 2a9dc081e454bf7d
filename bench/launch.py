"""Launch to window painted, of the real command: from source, and of a built bundle.

    python -m bench.launch [--bundle dist/fredica/fredica] [--rounds 5]

Each start is ``fredica --data-dir NEW gui`` offscreen with ``FREDICA_LAUNCH_PROBE=1``: the
window prints the time it was first painted, and quits (``fredica_app.gui.launch``). The
figure runs from just before the process starts to that time. Rounds interleave the two, so
both see the same load; the bundle's median is given as a ratio of the source's, measured in
the same run. (``bench/gui_app.py`` times the window from a script, against an empty
``QWidget``; this one times what a user starts, a frozen bundle included.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = [sys.executable, "-m", "fredica_app.cli"]


def launch(command: list[str]) -> float:
    """Seconds from just before the start to the window painted."""
    with tempfile.TemporaryDirectory(prefix="fredica-launch-") as d:
        env = {**os.environ, "FREDICA_LAUNCH_PROBE": "1", "QT_QPA_PLATFORM": "offscreen"}
        began = time.time()
        done = subprocess.run(
            [*command, "--data-dir", d, "gui"], capture_output=True, text=True, env=env, timeout=180
        )
    painted = [line for line in done.stdout.splitlines() if line.startswith("painted ")]
    if done.returncode != 0 or not painted:
        raise RuntimeError(
            f"{command[0]} exited {done.returncode}: {done.stdout}{done.stderr[-2000:]}"
        )
    return float(painted[0].split()[1]) - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, help="a built bundle's executable, timed too")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    commands = {"source": SOURCE}
    if args.bundle is not None:
        commands["bundle"] = [str(args.bundle.resolve())]
    launch(SOURCE)  # a first start warms the disk cache for both
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.rounds):
        for name, command in commands.items():
            times[name].append(launch(command))
    print(f"launch → window painted, median of {args.rounds} (load {os.getloadavg()[0]:.1f})")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        each = ", ".join(f"{v:.2f}" for v in values)
        ratio = f"  ({medians[name] / medians['source']:.2f}x source)" if name != "source" else ""
        print(f"  {name:<7} {medians[name]:.2f} s{ratio}   [{each}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
