"""An app on a data directory of a test's own, and a run of NOOP tasks in a chain."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fredica_app.services import Fredica


@asynccontextmanager
async def opened_app(data_dir: Path) -> AsyncIterator[Fredica]:
    app = Fredica.open(data_dir, thorough=False)
    try:
        yield app
    finally:
        await app.close()


async def submit_chain(app: Fredica, material_id: str | None, *keys: str) -> str:
    """A run of NOOP tasks, each depending on the one before; its id."""
    spec = {
        "material_id": material_id,
        "tasks": [
            {"key": k, "type": "NOOP", "depends_on": [keys[i - 1]] if i else []}
            for i, k in enumerate(keys)
        ],
    }
    return (await app.submit(spec)).run_id
