"""The ``fredica`` command: the engine, headless. See docs/cli.md for every command and the
JSON it prints."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from fredica_app.database import DATABASE_ERRORS
from fredica_app.doctor import diagnose
from fredica_app.errors import FredicaError, SpecError
from fredica_app.process import ensure_sample, process
from fredica_app.services import (
    Fredica,
    load_spec_file,
    material_json,
    restart_entry_json,
    run_json,
)
from fredica_app.templates import BUILTIN, get_template
from workers.records import RunRecord, TaskRecord
from workers.retention import RetentionPolicy
from workers.states import RunStatus

Handler = Callable[[Fredica, argparse.Namespace], Awaitable[int]]


def _version() -> str:
    try:
        return version("fredica")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fredica", description="Fredica: durable media workflows, headless."
    )
    p.add_argument("--version", action="version", version=f"fredica {_version()}")
    p.add_argument(
        "--data-dir",
        help="keep the database, settings, cache and logs here (default: the platform's "
        "folders; also $FREDICA_DATA_DIR)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("submit", help="create a run from a workflow spec; prints the run id")
    s.add_argument(
        "spec", help='SPEC.json, or - for standard input ({"template": …} or {"tasks": […]})'
    )
    s.add_argument("--json", action="store_true")

    w = sub.add_parser("worker", help="run the engine")
    w.add_argument(
        "--until-idle",
        action="store_true",
        help="exit 0 once nothing is running, claimable or waiting for a retry",
    )
    w.add_argument("--max-workers", type=int, metavar="N")

    r = sub.add_parser("runs", help="list runs with status and progress")
    r.add_argument("--json", action="store_true")

    one = sub.add_parser("run", help="one run with its tasks")
    one.add_argument("run_id")
    one.add_argument("--json", action="store_true")

    for name, text in [
        ("pause", "hold a task or every task of a run"),
        ("resume", "release a held task or run"),
        ("cancel", "cancel a task (and what depends on it) or a whole run"),
        ("retry", "run a failed or cancelled task (or run) again"),
    ]:
        c = sub.add_parser(name, help=text)
        c.add_argument("id", help="a task id or a run id")
        c.add_argument("--json", action="store_true")

    sub.add_parser("pause-queue", help="stop claiming new tasks; running ones go on")
    sub.add_parser("resume-queue", help="claim tasks again")

    rl = sub.add_parser("restart-log", help="what recovery found at start-up, with dispositions")
    rl.add_argument("--json", action="store_true")
    rl.add_argument("--dismiss", metavar="ENTRY_ID|all", help="mark an entry (or all) dismissed")

    pn = sub.add_parser(
        "prune", help="delete finished runs and timeline events older than the settings keep"
    )
    pn.add_argument(
        "--runs-days",
        type=float,
        metavar="N",
        help="finished runs that finished N days ago or more (default: keep_runs_days; 0: none)",
    )
    pn.add_argument(
        "--events-days",
        type=float,
        metavar="M",
        help="timeline events M days old or more (default: keep_events_days; 0: none)",
    )
    pn.add_argument("--dry-run", action="store_true", help="say what would go; delete nothing")
    pn.add_argument("--json", action="store_true")

    doc = sub.add_parser("doctor", help="check the environment and say how to fix what is missing")
    doc.add_argument("--json", action="store_true")

    ep = sub.add_parser(
        "endpoints",
        help="serve the task endpoints in the foreground (as `python -m python_endpoints`)",
    )
    ep.add_argument(
        "--host", default="127.0.0.1", help="address to bind; any but loopback needs TLS"
    )
    ep.add_argument("--port", type=int, default=0)
    ep.add_argument("--token-file", type=Path, help="the bearer token (readable by you alone)")
    ep.add_argument("--certfile", type=Path)
    ep.add_argument("--keyfile", type=Path)
    ep.add_argument(
        "--allow-write",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="jobs may write only under DIR (repeatable; default: anywhere)",
    )
    ep.add_argument("--ffmpeg", help="the ffmpeg jobs run (default: the bundled one)")
    ep.add_argument(
        "--allow-key-env",
        action="append",
        default=[],
        metavar="NAME",
        help="an environment variable ANALYZE may read its API key from (repeatable)",
    )

    t = sub.add_parser("templates", help="list the workflow templates")
    t.add_argument("--json", action="store_true")

    a = sub.add_parser("add", help="import files, folders or URLs and submit a template for each")
    a.add_argument("items", nargs="+", metavar="PATH|URL")
    a.add_argument("--template", required=True, metavar="NAME")
    a.add_argument("--priority", type=int, default=0, metavar="N")
    a.add_argument("--json", action="store_true")

    pr = sub.add_parser(
        "process",
        help="import, submit and run (or follow) until the run ends, with live progress",
    )
    pr.add_argument("items", nargs="*", metavar="PATH|URL")
    pr.add_argument("--template", required=True, metavar="NAME")
    pr.add_argument(
        "--sample", action="store_true", help="process a generated sample clip (see `sample`)"
    )
    pr.add_argument("--priority", type=int, default=0, metavar="N")
    pr.add_argument("--json", action="store_true", help="end by printing the run object")

    sm = sub.add_parser(
        "sample", help="write a ~10 s test clip (video, spoken audio, two subtitle cues) to OUT"
    )
    sm.add_argument("out", type=Path, metavar="OUT")
    sm.add_argument("--seconds", type=float, default=10.0)
    sm.add_argument(
        "--kind",
        choices=["mkv", "mp4", "legacy"],
        default="mkv",
        help="mkv: H.264/Opus/SRT (remuxes to MP4); mp4: H.264/AAC; legacy: MPEG-2/MP2/SRT "
        "(re-encodes)",
    )

    mt = sub.add_parser("materials", help="list the media library")
    mt.add_argument("--json", action="store_true")

    d = sub.add_parser("demo", help="submit the diagnostic workflow and run it to the end")
    d.add_argument("--json", action="store_true")
    return p


# --- commands -------------------------------------------------------------------------------


async def cmd_submit(app: Fredica, args: argparse.Namespace) -> int:
    stdin = sys.stdin.read() if args.spec == "-" else None
    created = await app.submit(load_spec_file(args.spec, stdin))
    if args.json:
        _print_json(
            {
                "run_id": created.run_id,
                "task_ids": created.task_ids,
                "deduplicated": created.deduplicated,
            }
        )
    else:
        print(created.run_id)
        if created.deduplicated:
            print(
                "(already submitted: an active run holds the same idempotency key)", file=sys.stderr
            )
    return 0


async def cmd_worker(app: Fredica, args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    async with app.engine_session(max_workers=args.max_workers) as engine:
        report = engine.recovery
        if report is not None and report.total:
            print(
                f"recovered: {report.summary} (see `fredica restart-log`)",
                file=sys.stderr,
            )
        stopping: list[asyncio.Task[None]] = []

        def on_signal() -> None:
            if not stopping:
                print("stopping: letting running tasks checkpoint…", file=sys.stderr)
                stopping.append(asyncio.ensure_future(engine.stop()))

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        try:
            await engine.run(until_idle=args.until_idle)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            if stopping:
                await stopping[0]
    return 0


async def cmd_runs(app: Fredica, args: argparse.Namespace) -> int:
    runs = await app.store.list_runs()
    if args.json:
        _print_json([run_json(r) for r in runs])
        return 0
    for r in runs:
        print(f"{r.id}  {r.status.value:<9}  {r.done_tasks}/{r.total_tasks}  {r.template or '-'}")
    return 0


async def cmd_run(app: Fredica, args: argparse.Namespace) -> int:
    run = await app.store.get_run(args.run_id)
    tasks = await app.store.list_tasks(run.id)
    waiting = await app.waiting_reasons(tasks)
    if args.json:
        _print_json(run_json(run, tasks, waiting))
    else:
        _print_run(run, tasks, waiting)
    return 0


def _control(action: str) -> Handler:
    async def handler(app: Fredica, args: argparse.Namespace) -> int:
        store = app.store
        target = await store.find(args.id)
        is_run = isinstance(target, RunRecord)
        changed: list[str]
        if action == "cancel":
            outcome = await (store.cancel_run(target.id) if is_run else store.cancel(target.id))
            changed = list(outcome.cancelled)
        elif action == "retry":
            changed = await (store.retry_run(target.id) if is_run else store.retry(target.id))
        elif is_run:
            changed = await store.set_run_paused(target.id, action == "pause")
        else:
            changed = [target.id] if await store.set_paused(target.id, action == "pause") else []
        if args.json:
            _print_json({"id": target.id, "action": action, "changed": changed})
        else:
            print(f"{action}: {len(changed)} task(s) changed")
        return 0

    return handler


async def cmd_pause_queue(app: Fredica, args: argparse.Namespace) -> int:
    app.set_queue_paused(True)
    print("queue paused: no new task will be claimed; running tasks go on")
    return 0


async def cmd_resume_queue(app: Fredica, args: argparse.Namespace) -> int:
    app.set_queue_paused(False)
    print("queue resumed")
    return 0


async def cmd_restart_log(app: Fredica, args: argparse.Namespace) -> int:
    if args.dismiss:
        entry = None if args.dismiss == "all" else _int_id(args.dismiss)
        changed = await app.store.set_disposition(entry, "dismissed")
        print(f"dismissed {changed} entr{'y' if changed == 1 else 'ies'}")
        return 0
    entries = await app.restart_log()
    if args.json:
        _print_json([restart_entry_json(e) for e in entries])
        return 0
    if not entries:
        print("nothing was recovered")
    for e in entries:
        print(
            f"#{e.id:<4} {e.action:<11} {e.disposition:<14} {e.task_type:<10} "
            f"{e.status_at_restart:<8} {e.progress:5.1f} %  task {e.task_id}"
            + (f"  ({e.detail})" if e.detail else "")
        )
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
    if args.json:
        days = {"runs_days": runs_days or None, "events_days": events_days or None}
        _print_json({**days, **report.as_json()})
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
    if policy.keep_events is None:
        print("events: kept forever")
    else:
        print(f"events: {verb} {report.old_events} more, older than {events_days:g} days")
    return 0


async def cmd_doctor(app: Fredica, args: argparse.Namespace) -> int:
    checks = await diagnose(app)
    if args.json:
        _print_json([c.as_json() for c in checks])
    else:
        for c in checks:
            mark = "ok  " if c.ok else "FAIL"
            print(f"[{mark}] {c.name}: {c.detail}" + ("" if c.ok else f"\n       fix: {c.fix}"))
    return 0 if all(c.ok for c in checks) else 1


async def cmd_templates(app: Fredica, args: argparse.Namespace) -> int:
    if args.json:
        _print_json(
            [
                {
                    "name": t.name,
                    "description": t.description,
                    "source": t.source,
                    "tasks": [
                        {"key": s.key, "type": s.type, "depends_on": s.depends_on} for s in t.tasks
                    ],
                }
                for t in BUILTIN.values()
            ]
        )
    else:
        for t in BUILTIN.values():
            print(f"{t.name:<19} {t.description}")
    return 0


async def cmd_demo(app: Fredica, args: argparse.Namespace) -> int:
    created = await app.submit({"template": "diagnostic"})
    if not args.json:
        print(f"submitted run {created.run_id} (template 'diagnostic'); running it…")
    async with app.engine_session() as engine:
        await engine.run(until_idle=True)
    run = await app.store.get_run(created.run_id)
    tasks = await app.store.list_tasks(run.id)
    if args.json:
        _print_json(run_json(run, tasks))
    else:
        _print_run(run, tasks)
    return 0 if run.status is RunStatus.COMPLETED else 1


async def cmd_add(app: Fredica, args: argparse.Namespace) -> int:
    get_template(args.template)  # an unknown name fails before anything is imported
    report = await app.import_items(args.items)
    out = []
    for material in report.materials:
        created = await app.submit_for_material(material, args.template, priority=args.priority)
        out.append((material, created))
    if args.json:
        _print_json(
            [
                {
                    "material": material_json(m),
                    "run_id": c.run_id,
                    "task_ids": c.task_ids,
                    "deduplicated": c.deduplicated,
                    "new_material": m in report.added,
                }
                for m, c in out
            ]
        )
        return 0
    for m, c in out:
        note = " (already active)" if c.deduplicated else ""
        print(f"{c.run_id}  {args.template}  {m.title}{note}")
    if report.skipped:
        print(f"skipped {len(report.skipped)} file(s) that are not media", file=sys.stderr)
    if not out:
        print("no media found", file=sys.stderr)
        return 1
    return 0


async def cmd_process(app: Fredica, args: argparse.Namespace) -> int:
    get_template(args.template)
    items = list(args.items)
    if args.sample:
        items.append(str(await ensure_sample(app)))
    if not items:
        raise SpecError("give a PATH or URL to process, or --sample")
    outcome = await process(app, items, args.template, priority=args.priority)
    if args.json:
        runs = [run_json(r, outcome.tasks[r.id]) for r in outcome.runs]
        _print_json(runs[0] if len(runs) == 1 else runs)
    else:
        for run in outcome.runs:
            _print_run(run, outcome.tasks[run.id])
    if outcome.ended_by == "paused":
        ids = " ".join(r.id for r in outcome.runs)
        print(
            f"paused: the run's tasks are held. Continue with `fredica resume {ids}` and then "
            "`fredica worker --until-idle` (or run this command again); cancel with "
            f"`fredica cancel {ids}`",
            file=sys.stderr,
        )
        return 130
    if not outcome.completed:
        for tasks in outcome.tasks.values():
            for t in tasks:
                if t.error and t.error_type != "DEPENDENCY_FAILED":
                    print(f"fredica: error: {t.key or t.id}: {t.error}", file=sys.stderr)
        return 1
    return 0


async def cmd_sample(app: Fredica, args: argparse.Namespace) -> int:
    from python_endpoints.jobs.sample import make_sample

    if not 1 <= args.seconds <= 600:
        raise SpecError("--seconds must be between 1 and 600")
    ffmpeg = str(app.settings.ffmpeg_path) if app.settings.ffmpeg_path else None
    out = await asyncio.to_thread(
        make_sample, args.out, args.seconds, ffmpeg=ffmpeg, kind=args.kind, speech=True
    )
    print(out)
    return 0


async def cmd_materials(app: Fredica, args: argparse.Namespace) -> int:
    materials = await asyncio.to_thread(app.library.list)
    if args.json:
        _print_json([material_json(m) for m in materials])
        return 0
    for m in materials:
        duration = f"{m.duration:.1f} s" if m.duration is not None else "-"
        print(f"{m.id}  {m.kind:<7} {duration:>9}  {m.title}  ({m.source})")
    return 0


#: Commands that run an engine (or check health): they verify the whole database file first.
ENGINE_COMMANDS = frozenset({"worker", "demo", "doctor", "process"})

COMMANDS: dict[str, Handler] = {
    "submit": cmd_submit,
    "worker": cmd_worker,
    "runs": cmd_runs,
    "run": cmd_run,
    "pause": _control("pause"),
    "resume": _control("resume"),
    "cancel": _control("cancel"),
    "retry": _control("retry"),
    "pause-queue": cmd_pause_queue,
    "resume-queue": cmd_resume_queue,
    "restart-log": cmd_restart_log,
    "prune": cmd_prune,
    "doctor": cmd_doctor,
    "templates": cmd_templates,
    "demo": cmd_demo,
    "add": cmd_add,
    "process": cmd_process,
    "sample": cmd_sample,
    "materials": cmd_materials,
}


# --- output ---------------------------------------------------------------------------------


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=False))


def _print_run(
    run: RunRecord, tasks: list[TaskRecord], waiting: dict[str, str] | None = None
) -> None:
    took = ""
    if run.completed_at is not None:
        took = f" in {run.completed_at - run.created_at:.2f} s"
    print(f"run {run.id}  {run.status.value}{took}  {run.done_tasks}/{run.total_tasks} done")
    for t in tasks:
        line = f"  {t.key or t.id:<16} {t.type:<16} {t.status.value:<9} {t.progress:5.1f} %"
        if t.is_paused:
            line += "  (held)"
        text = t.status_text or (waiting or {}).get(t.id)
        if text and t.status.value != "completed":
            line += f"  {text}"
        if t.error:
            line += f"  [{t.error_type}] {t.error}"
        elif (t.result or {}).get("skipped"):
            line += "  skipped: its output is already up to date"
        print(line)
        outputs = (t.result or {}).get("outputs")
        if isinstance(outputs, list):
            for path in outputs:
                print(f"      → {path}")


# --- entry point ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "endpoints":  # needs no database
        from python_endpoints.__main__ import main as serve_endpoints

        forwarded = ["--host", args.host, "--port", str(args.port)]
        for flag in ("token_file", "certfile", "keyfile", "ffmpeg"):
            if getattr(args, flag) is not None:
                forwarded += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
        for root in args.allow_write:
            forwarded += ["--allow-write", str(root)]
        for name in args.allow_key_env:
            forwarded += ["--allow-key-env", name]
        return serve_endpoints(forwarded, prog="fredica")
    try:
        return asyncio.run(_main(args))
    except FredicaError as exc:
        print(f"fredica: error: {exc}", file=sys.stderr)
        return 1
    except DATABASE_ERRORS as exc:
        print(
            f"fredica: error: the database cannot be read ({exc}); run `fredica doctor`, and "
            "restore it from a backup if it is damaged",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        return 130


async def _main(args: argparse.Namespace) -> int:
    app = Fredica.open(args.data_dir, thorough=args.command in ENGINE_COMMANDS)
    if app.settings_problem:
        print(f"fredica: warning: {app.settings_problem}", file=sys.stderr)
    try:
        return await COMMANDS[args.command](app, args)
    finally:
        await app.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
