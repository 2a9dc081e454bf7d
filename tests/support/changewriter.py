"""A process that writes the queue the way workers and commands do, for the change stream's
tests: ``python -m tests.support.changewriter DB SEED ROUNDS``.

Each round creates a run, claims and starts its tasks, sends heartbeats (which must not show
in the stream), reports progress, pauses and resumes one, completes or fails them, and now and
then deletes a finished run — each step its own transaction, as a worker and the CLI write.
It prints ``done`` at the end.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from workers.db import create_engine_for_url, sqlite_url
from workers.spec import parse_spec, prepare_run
from workers.store import TaskStore
from workers.tasktypes import builtin_registry


async def write(db: str, seed: int, rounds: int) -> None:
    rng = random.Random(seed)
    store = TaskStore(create_engine_for_url(db if "://" in db else sqlite_url(Path(db))))
    registry = builtin_registry()
    worker = f"writer-{seed}"
    finished: list[str] = []
    try:
        for r in range(rounds):
            n = rng.randint(1, 4)
            spec = {
                "template": f"w{seed}",
                "tasks": [{"key": f"t{i}", "type": "NOOP"} for i in range(n)],
            }
            created = await store.create_run(prepare_run(parse_spec(spec), registry))
            mine = set(created.task_ids.values())
            claimed = []
            # Other writers' tasks may be claimed here too: any pending task will do.
            while True:
                got = await store.claim(worker, limit=1, start=True)
                if not got:
                    break
                claimed += got
                if mine <= {c.id for c in claimed}:
                    break
            await store.heartbeat(worker, [c.id for c in claimed])
            for step in range(2):
                for c in claimed:
                    await store.report_progress(c.id, c.lease_token, progress=25.0 * (step + 1))
            if claimed:
                await store.set_paused(claimed[0].id, True)
                await store.set_paused(claimed[0].id, False)
            await store.heartbeat(worker, [c.id for c in claimed])
            for c in claimed:
                if rng.random() < 0.2:
                    await store.fail(c.id, c.lease_token, f"round {r}", retryable=False)
                else:
                    await store.complete(c.id, c.lease_token, {"round": r})
            finished.append(created.run_id)
            if len(finished) > 2 and rng.random() < 0.3:
                victim = finished.pop(rng.randrange(len(finished) - 1))
                try:
                    await store.delete_run(victim)
                except Exception:  # still active: another writer holds one of its tasks
                    finished.append(victim)
    finally:
        await store.close()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(write(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
