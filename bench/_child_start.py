"""``python -m bench._child_start spawn|forkserver``: the median milliseconds from
``Process.start()`` to the first word of a child that imports the media jobs' module, over
``ROUNDS`` children started one after another (see :mod:`bench.process_cpu`).

A module of its own, light, run as its own process: ``multiprocessing`` imports the parent's
main module again in each child, and the bench's would weigh on every start.
"""

from __future__ import annotations

import multiprocessing
import statistics
import sys
import time
from multiprocessing.connection import Connection

from python_endpoints.serving import starting

ROUNDS = 8


def _child(conn: Connection) -> None:
    import python_endpoints.jobs.media  # noqa: F401  what a media job's child imports first

    conn.send(time.perf_counter())


def child_start_ms(method: str) -> float:
    if method == "forkserver":
        ctx = starting.context()  # the fork server Fredica uses, its modules preloaded
        starting.start_early()
        time.sleep(1.0)  # its imports done, as in a server that has run a moment
    else:
        ctx = multiprocessing.get_context("spawn")
    took = []
    for _ in range(ROUNDS):
        reader, writer = ctx.Pipe(duplex=False)
        t0 = time.perf_counter()
        process = ctx.Process(target=_child, args=(writer,))
        process.start()
        writer.close()
        said = reader.recv()
        process.join()
        reader.close()
        took.append((said - t0) * 1000)
    return statistics.median(took)


if __name__ == "__main__":
    print(f"{child_start_ms(sys.argv[1]):.1f}")
