"""The queue's records: ``submit``, ``runs``, ``run``, ``restart-log``, ``prune``."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from fredica_app.cli.display import restart_log_lines
from fredica_app.cli.output import print_run
from fredica_app.cli.quick import RunsPage, show_runs
from fredica_app.cli.run_filter import run_filter
from fredica_app.cli.shapes import created_json, print_json, restart_entry_json, run_json
from fredica_app.errors import FredicaError
from fredica_app.services import Fredica, load_spec_file
from fredica_app.services.inspection import prune_posters
from workers.retention import RetentionPolicy


async def cmd_submit(app: Fredica, args: argparse.Namespace) -> int:
    stdin = sys.stdin.read() if args.spec == "-" else None
    created = await app.submit(load_spec_file(args.spec, stdin))
    if args.json:
        print_json(created_json(created))
    else:
        print(created.run_id)
        if created.deduplicated:
            print(
                "(already submitted: an active run holds the same idempotency key)", file=sys.stderr
            )
    return 0


async def cmd_runs(app: Fredica, args: argparse.Namespace) -> int:
    """The usual way of ``fredica runs``, when :func:`.quick.run_quick` cannot read the file
    plainly (a new data directory, an upgrade)."""
    named = None
    if args.material is not None:
        named = await asyncio.to_thread(app.library.matching, args.material)
    wanted = run_filter(args, named, time.time(), terminal=sys.stdout.isatty())
    runs, next_key, more = await app.store.run_page(wanted)
    progress, titles = {}, {}
    if not args.json:
        progress = await app.store.run_progress([r.id for r in runs])
        ids = {r.material_id for r in runs if r.material_id}
        titles = await asyncio.to_thread(app.library.titles, ids)
    page = RunsPage(runs, next_key, more, paged=wanted.limit is not None and args.json)
    show_runs(page, progress, titles, app.queue_flag.exists(), as_json=args.json)
    return 0


async def cmd_run(app: Fredica, args: argparse.Namespace) -> int:
    run = await app.store.get_run(args.run_id)
    tasks = await app.store.list_tasks(run.id)
    waiting = await app.waiting_reasons(tasks)
    if args.json:
        print_json(run_json(run, tasks, waiting))
        return 0
    if app.queue_flag.exists() and run.status.value in ("pending", "running"):
        print("the queue is paused: no new task starts until `fredica resume-queue`")
    await print_run(app, run, tasks, waiting)
    return 0


async def cmd_restart_log(app: Fredica, args: argparse.Namespace) -> int:
    if args.dismiss:
        entry = None if args.dismiss == "all" else _int_id(args.dismiss)
        changed = await app.store.set_disposition(entry, "dismissed")
        print(f"dismissed {changed} entr{'y' if changed == 1 else 'ies'}")
        return 0
    entries = await app.restart_log()
    if args.json:
        print_json([restart_entry_json(e) for e in entries])
        return 0
    print("\n".join(restart_log_lines(entries)))
    return 0


def _int_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise FredicaError(f"a restart-log entry id is a number, or 'all' (got {text!r})") from None


async def cmd_prune(app: Fredica, args: argparse.Namespace) -> int:
    for flag, given in (("--runs-days", args.runs_days), ("--events-days", args.events_days)):
        if given is not None and not given >= 0:
            raise FredicaError(f"{flag} is a number of days, 0 or more (got {given:g})")
    settings = app.settings
    runs_days = settings.keep_runs_days if args.runs_days is None else args.runs_days
    events_days = settings.keep_events_days if args.events_days is None else args.events_days
    policy = RetentionPolicy.from_days(runs_days, events_days)
    report = await app.store.prune(policy, dry_run=args.dry_run)
    posters = await prune_posters(app, dry_run=args.dry_run)
    if args.json:
        days = {"runs_days": runs_days or None, "events_days": events_days or None}
        print_json({**days, **report.as_json(), "posters": posters})
        return 0
    verb = "would remove" if args.dry_run else "removed"
    if policy.keep_runs is None:
        print("runs: kept forever")
    else:
        print(
            f"runs: {verb} {report.runs} that finished more than {runs_days:g} days ago, with "
            f"{report.tasks} tasks, {report.dependencies} dependencies, {report.events} events "
            f"and {report.restart_log} restart-log entries"
        )
        if report.workers or app.store.shared:  # engines register on a shared queue only
            print(f"engines: {verb} {report.workers} gone for more than {runs_days:g} days")
    if policy.keep_events is None:
        print("events: kept forever")
    else:
        print(f"events: {verb} {report.old_events} more, older than {events_days:g} days")
    print(f"posters: {verb} {posters} of materials no longer in the library")
    return 0
