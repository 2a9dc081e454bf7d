"""The engines on the queue: ``hosts`` (who runs, on which host, how alive) and ``drain``.

On the data directory's own SQLite queue there is at most one engine at a time; on a shared
queue (PostgreSQL, ``--db-url``) every ``fredica worker`` and desktop app of every host."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from fredica_app.cli.shapes import print_json, worker_json
from fredica_app.services import Fredica
from workers.records import WorkerRecord


async def cmd_hosts(app: Fredica, args: argparse.Namespace) -> int:
    workers = await app.hosts(include_stopped=args.all)
    if args.json:
        print_json([worker_json(w) for w in workers])
        return 0
    if not workers and not app.store.shared:
        print(
            "this data directory's own queue has one engine at most, and `fredica doctor` says "
            "whether it runs; engines list themselves here on a shared queue (--db-url)"
        )
        return 0
    print("\n".join(hosts_lines(workers, time.time())))
    return 0


async def cmd_drain(app: Fredica, args: argparse.Namespace) -> int:
    ids = await app.drain(args.worker, undo=args.undo)
    what = "claims again" if args.undo else "finishes its work and claims no more"
    for worker_id in ids:
        print(f"{worker_id}: {what}")
    return 0


def hosts_lines(workers: Sequence[WorkerRecord], now: float) -> list[str]:
    """One line per engine: its worker id and host, the heartbeat's age, what it runs, its
    slots, and whether it is draining (or stopped)."""
    if not workers:
        return ["no engine is running on this queue (start one: fredica worker)"]
    rows = [("WORKER", "HOST", "HEARTBEAT", "RUNNING", "SLOTS", "STATE", "BUILD")]
    for w in workers:
        if w.stopped_at is not None:
            state = "stopped"
        elif w.draining:
            state = "draining"
        else:
            state = "claiming"
        slots = " ".join(f"{k}:{v}" for k, v in sorted(w.slots.items())) or "-"
        rows.append(
            (
                w.id,
                w.host,
                f"{_age(now - w.heartbeat_at)} ago",
                str(w.running),
                slots,
                state,
                w.build or "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
