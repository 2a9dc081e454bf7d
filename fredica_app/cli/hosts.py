"""The engines on the queue: ``hosts`` (who runs, on which host, how alive) and ``drain``.

On the data directory's own SQLite queue there is at most one engine at a time; on a shared
queue (PostgreSQL, ``--db-url``) every ``fredica worker`` and desktop app of every host."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from fredica_app.cli.shapes import print_json, worker_json
from fredica_app.endpoint_hosts import check_hosts
from fredica_app.services import Fredica
from workers.records import WorkerRecord


async def cmd_hosts(app: Fredica, args: argparse.Namespace) -> int:
    if args.endpoints:
        states = await check_hosts(app.settings.endpoint_hosts)
        if args.json:
            print_json(states)
        else:
            print("\n".join(endpoint_lines(states)))
        return 1 if any(s["problem"] for s in states) else 0
    workers = await app.hosts(include_stopped=args.all)
    if args.json:
        print_json([worker_json(w) for w in workers])
        return 0
    if not workers and not app.store.shared:
        print(
            "this data directory's own queue has one engine at most, and `fredica doctor` says "
            "whether it runs; engines list themselves here on a shared queue (--db-url)"
        )
    else:
        print("\n".join(hosts_lines(workers, time.time())))
    if app.settings.endpoint_hosts:
        print()
        print("\n".join(endpoint_lines(await check_hosts(app.settings.endpoint_hosts))))
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


def endpoint_lines(states: Sequence[dict[str, Any]]) -> list[str]:
    """One line per endpoint host of the settings: its name, address, classes and state."""
    if not states:
        return ["no endpoint host is set (settings: endpoint_hosts; docs/scale-out.md)"]
    rows = [("ENDPOINT HOST", "URL", "CLASSES", "SHARED FOLDERS", "STATE")]
    for s in states:
        folders = " ".join(f"{p['local']}={p['remote']}" for p in s["paths"]) or "-"
        rows.append((s["name"], s["url"], ",".join(s["classes"]), folders, s["problem"] or "ok"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(c.ljust(widths[i]) for i, c in enumerate(r[:-1])), r[-1]]).rstrip()
        for r in rows
    ]


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
