"""What every group of commands shares: the handler's signature and how a command prints JSON
or a run."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable

from fredica_app.cli.display import run_lines
from fredica_app.services import Fredica
from workers.records import RunRecord, TaskRecord

#: A command: the open application and the parsed arguments in, the exit code out.
Handler = Callable[[Fredica, argparse.Namespace], Awaitable[int]]


async def print_run(
    app: Fredica,
    run: RunRecord,
    tasks: list[TaskRecord],
    waiting: dict[str, str] | None = None,
) -> None:
    """A run and its tasks as ``fredica run`` shows them, its material named."""
    titles = {}
    if run.material_id:
        titles = await asyncio.to_thread(app.library.titles, [run.material_id])
    print("\n".join(run_lines(run, tasks, waiting, title=titles.get(run.material_id or ""))))
