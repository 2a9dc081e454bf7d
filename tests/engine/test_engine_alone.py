"""The queue on its own: an engine given the diagnostic types alone runs them without loading
any job of the endpoints (the job types are data the app gives it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import asyncio, json, sys

from workers.db import create_sqlite_engine
from workers.engine import WorkerEngine
from workers.executors.diagnostic import NoopExecutor, SleepExecutor
from workers.spec import parse_spec, prepare_run
from workers.store import TaskStore
from workers.tasktypes import builtin_registry


async def main() -> str:
    store = TaskStore(create_sqlite_engine(sys.argv[1]))
    registry = builtin_registry()
    spec = {"tasks": [
        {"key": "a", "type": "NOOP"},
        {"key": "b", "type": "SLEEP", "payload": {"seconds": 0.1}, "depends_on": ["a"]},
    ]}
    created = await store.create_run(prepare_run(parse_spec(spec), registry))
    engine = WorkerEngine(store, [NoopExecutor(), SleepExecutor()], registry=registry)
    await asyncio.wait_for(engine.run(until_idle=True), 60)
    run = await store.get_run(created.run_id)
    await store.close()
    return str(run.status)


status = asyncio.run(main())
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def test_an_engine_of_diagnostic_types_loads_no_job_code(db_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(db_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["status"].endswith("completed"), report["status"]
    endpoints = {m for m in report["modules"] if m.split(".")[0] == "python_endpoints"}
    # The wire protocol (and the error codes, status messages and text cleaning it uses) is
    # all the queue shares with them.
    assert endpoints <= {
        "python_endpoints",
        "python_endpoints.status",
        "python_endpoints.protocol",
        "python_endpoints.errorcodes",
        "python_endpoints.text",
    }, endpoints
    heavy = {"av", "httpx", "pysubs2", "imageio_ffmpeg", "fredica_app"}
    assert heavy.isdisjoint(m.split(".")[0] for m in report["modules"])
