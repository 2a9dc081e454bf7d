"""The ``fredica`` command: the engine, headless. See docs/cli.md for every command and the
JSON it prints."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from fredica_app import settings_cli
from fredica_app.database import DATABASE_ERRORS
from fredica_app.display import (
    duration,
    finished_run_line,
    restart_log_lines,
    run_lines,
    runs_lines,
    table,
    worker_summary,
)
from fredica_app.doctor import diagnose
from fredica_app.errors import FredicaError, MediaImportError, SpecError
from fredica_app.logs import CommandLogging
from fredica_app.paths import resolve_paths
from fredica_app.process import Outcome, ensure_sample, process, run_or_follow
from fredica_app.removal import remove
from fredica_app.services import (
    Fredica,
    load_spec_file,
    material_json,
    restart_entry_json,
    run_json,
)
from fredica_app.templates import BUILTIN, get_template
from workers.events import Event, RunChanged
from workers.records import RunRecord, TaskRecord
from workers.retention import RetentionPolicy

#: Run statuses a run ends in (``worker`` prints a line for each).
FINISHED_RUN_STATUSES = frozenset({"completed", "failed", "cancelled"})

Handler = Callable[[Fredica, argparse.Namespace], Awaitable[int]]

JSON_HELP = "print JSON instead (stable fields: docs/cli.md)"
PRIORITY_HELP = "0 or more; higher runs first (default 0)"


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
    s.add_argument("--json", action="store_true", help=JSON_HELP)

    w = sub.add_parser(
        "worker", help="run the engine; prints a line per run it finishes and a summary"
    )
    w.add_argument(
        "--until-idle",
        action="store_true",
        help="exit 0 once nothing is running, claimable or waiting for a retry",
    )
    w.add_argument(
        "--max-workers",
        type=int,
        metavar="N",
        help="tasks running at once (default: the setting max_workers)",
    )

    r = sub.add_parser(
        "runs", help="list runs: status, tasks, progress, material, times, ETA; a paused queue"
    )
    r.add_argument("--json", action="store_true", help=JSON_HELP)

    one = sub.add_parser("run", help="one run with its tasks")
    one.add_argument("run_id", metavar="RUN_ID", help="the run's id (see `fredica runs`)")
    one.add_argument("--json", action="store_true", help=JSON_HELP)

    for name, text in [
        ("pause", "hold a task or every task of a run"),
        ("resume", "release a held task or run"),
        ("cancel", "cancel a task (and what depends on it) or a whole run"),
        ("retry", "run a failed or cancelled task (or run) again"),
    ]:
        c = sub.add_parser(name, help=text)
        c.add_argument("id", help="a task id or a run id")
        c.add_argument("--json", action="store_true", help=JSON_HELP)

    sub.add_parser("pause-queue", help="stop claiming new tasks; running ones go on")
    sub.add_parser("resume-queue", help="claim tasks again")

    rl = sub.add_parser("restart-log", help="what recovery found at start-up, with dispositions")
    rl.add_argument("--json", action="store_true", help=JSON_HELP)
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
    pn.add_argument("--json", action="store_true", help=JSON_HELP)

    rm = sub.add_parser(
        "remove",
        help="take a material out of the library (with its finished runs) or a finished run "
        "out of the queue",
    )
    rm.add_argument("id", metavar="MATERIAL|RUN", help="a material id or a run id")
    rm.add_argument(
        "--outputs",
        action="store_true",
        help="a material: delete its output folder under the library too (never its source file)",
    )
    rm.add_argument("--json", action="store_true", help=JSON_HELP)

    doc = sub.add_parser("doctor", help="check the environment and say how to fix what is missing")
    doc.add_argument("--json", action="store_true", help=JSON_HELP)

    ep = sub.add_parser(
        "endpoints",
        help="serve the task endpoints in the foreground (as `python -m python_endpoints`)",
    )
    ep.add_argument(
        "--host", default="127.0.0.1", help="address to bind; any but loopback needs TLS"
    )
    ep.add_argument("--port", type=int, default=0, help="port to bind (default 0: any free one)")
    ep.add_argument("--token-file", type=Path, help="the bearer token (readable by you alone)")
    ep.add_argument("--certfile", type=Path, help="TLS certificate (PEM), with --keyfile")
    ep.add_argument("--keyfile", type=Path, help="TLS private key (PEM), with --certfile")
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
    ep.add_argument(
        "--log-file",
        type=Path,
        help="log the server and its jobs to this file (default: warnings on stderr only)",
    )

    st = sub.add_parser(
        "settings", help="show the settings, or get, set or edit one (needs no database)"
    )
    st.add_argument("--json", action="store_true", help="print every setting as a JSON object")
    st_actions = st.add_subparsers(dest="action", metavar="ACTION")
    st_get = st_actions.add_parser("get", help="print one setting's value")
    st_get.add_argument("key", metavar="KEY")
    st_set = st_actions.add_parser(
        "set", help="set KEY to VALUE (JSON when it parses, else text; null: the default)"
    )
    st_set.add_argument("key", metavar="KEY")
    st_set.add_argument("value", metavar="VALUE")
    st_actions.add_parser(
        "edit", help="edit the file in $VISUAL or $EDITOR; saved only if it is valid"
    )

    t = sub.add_parser("templates", help="list the workflow templates")
    t.add_argument("--json", action="store_true", help=JSON_HELP)

    media_templates = ", ".join(n for n, tm in BUILTIN.items() if tm.needs_source)
    a = sub.add_parser("add", help="import files, folders or URLs and submit a template for each")
    a.add_argument(
        "items", nargs="+", metavar="PATH|URL", help="media files, folders, http(s) URLs"
    )
    a.add_argument(
        "--template",
        required=True,
        metavar="NAME",
        help=f"the template to run on each: {media_templates} (see `fredica templates`)",
    )
    a.add_argument("--priority", type=int, default=0, metavar="N", help=PRIORITY_HELP)
    a.add_argument("--json", action="store_true", help=JSON_HELP)

    pr = sub.add_parser(
        "process",
        help="import, submit and run (or follow) until the run ends, with live progress",
    )
    pr.add_argument(
        "items",
        nargs="*",
        metavar="PATH|URL",
        help="media files, folders, http(s) URLs (none for a template that takes none)",
    )
    pr.add_argument(
        "--template",
        required=True,
        metavar="NAME",
        help=f"the template to run: {', '.join(BUILTIN)} (see `fredica templates`)",
    )
    pr.add_argument(
        "--sample", action="store_true", help="process a generated sample clip (see `sample`)"
    )
    pr.add_argument("--priority", type=int, default=0, metavar="N", help=PRIORITY_HELP)
    pr.add_argument("--json", action="store_true", help="end by printing the run object")

    sm = sub.add_parser(
        "sample", help="write a ~10 s test clip (video, spoken audio, two subtitle cues) to OUT"
    )
    sm.add_argument("out", type=Path, metavar="OUT")
    sm.add_argument("--seconds", type=float, default=10.0, help="1 to 600 (default 10)")
    sm.add_argument("--force", action="store_true", help="replace OUT if it exists")
    sm.add_argument(
        "--kind",
        choices=["mkv", "mp4", "legacy"],
        default="mkv",
        help="mkv: H.264/Opus/SRT (remuxes to MP4); mp4: H.264/AAC; legacy: MPEG-2/MP2/SRT "
        "(re-encodes)",
    )

    mt = sub.add_parser("materials", help="list the media library")
    mt.add_argument("--json", action="store_true", help=JSON_HELP)

    d = sub.add_parser(
        "demo",
        help="submit the diagnostic workflow and run it to the end (or follow the engine "
        "that runs)",
    )
    d.add_argument("--json", action="store_true", help="end by printing the run object")
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
    finished = _FinishedRuns(app)
    async with app.engine_session(max_workers=args.max_workers) as engine:
        engine.bus.subscribe(finished)
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
    await finished.drain()
    elapsed = time.monotonic() - engine.stats.started_at
    stats = engine.stats
    print(worker_summary(finished.statuses, stats.completed, stats.failed, elapsed))
    return 0


class _FinishedRuns:
    """``worker``: a line for each run its engine finishes, as it finishes (an engine event;
    the line is read from the database)."""

    def __init__(self, app: Fredica) -> None:
        self.app = app
        self.statuses: Counter[str] = Counter()
        self._printing: set[asyncio.Task[None]] = set()

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunChanged) and event.status in FINISHED_RUN_STATUSES:
            job = asyncio.ensure_future(self._print(event.run_id))
            self._printing.add(job)
            job.add_done_callback(self._printing.discard)

    async def _print(self, run_id: str) -> None:
        try:
            run = await self.app.store.get_run(run_id)
        except FredicaError:  # removed meanwhile: nothing to say of it
            return
        progress = (await self.app.store.run_progress([run_id])).get(run_id)
        ids = [run.material_id] if run.material_id else []
        titles = await asyncio.to_thread(self.app.library.titles, ids)
        self.statuses[run.status.value] += 1
        print(finished_run_line(run, progress, titles.get(run.material_id or "")), flush=True)

    async def drain(self) -> None:
        """Wait for the lines still being read."""
        await asyncio.gather(*self._printing, return_exceptions=True)


async def cmd_runs(app: Fredica, args: argparse.Namespace) -> int:
    runs = await app.store.list_runs()
    if args.json:
        _print_json([run_json(r) for r in runs])
        return 0
    progress = await app.store.run_progress([r.id for r in runs])
    ids = {r.material_id for r in runs if r.material_id}
    titles = await asyncio.to_thread(app.library.titles, ids)
    lines = runs_lines(runs, progress, titles, time.time(), queue_paused=app.queue_flag.exists())
    print("\n".join(lines))
    return 0


async def cmd_run(app: Fredica, args: argparse.Namespace) -> int:
    run = await app.store.get_run(args.run_id)
    tasks = await app.store.list_tasks(run.id)
    waiting = await app.waiting_reasons(tasks)
    if args.json:
        _print_json(run_json(run, tasks, waiting))
        return 0
    if app.queue_flag.exists() and run.status.value in ("pending", "running"):
        print("the queue is paused: no new task starts until `fredica resume-queue`")
    await _print_run(app, run, tasks, waiting)
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
    # Run by an engine of its own, or followed when one already runs (`worker`, the app).
    outcome = await run_or_follow(app, [created.run_id])
    return await _end_of_runs(app, outcome, args.json)


async def cmd_add(app: Fredica, args: argparse.Namespace) -> int:
    # An unknown name, or items the template cannot run on, fail before anything is imported.
    get_template(args.template).check_sources(args.items)
    report = await app.import_items(args.items)
    empty = [_no_media_in(folder, report.skipped) for folder in report.empty_folders]
    if not report.materials:
        raise MediaImportError("; ".join(empty) or "no media found")
    for line in empty:  # other items had media: say which folder had none, and go on
        print(f"fredica: warning: {line}", file=sys.stderr)
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
    return 0


def _no_media_in(folder: Path, skipped: list[Path]) -> str:
    others = sum(1 for f in skipped if f.is_relative_to(folder))
    what = f"{others} file(s), none with a media extension" if others else "no file"
    return f"no media found in {folder} ({what}; hidden files are skipped)"


async def cmd_process(app: Fredica, args: argparse.Namespace) -> int:
    template = get_template(args.template)
    # Refused before anything is imported or made: sources for a template that takes none,
    # none for one that needs one (the sample counts as one).
    template.check_sources([*args.items, *(["--sample"] if args.sample else [])])
    if not template.needs_source:
        created = await app.submit({"template": template.name}, priority=args.priority)
        return await _end_of_runs(app, await run_or_follow(app, [created.run_id]), args.json)
    items = list(args.items)
    if args.sample:
        items.append(str(await ensure_sample(app)))
    outcome = await process(app, items, args.template, priority=args.priority)
    return await _end_of_runs(app, outcome, args.json)


async def _end_of_runs(app: Fredica, outcome: Outcome, as_json: bool) -> int:
    """Print the runs ``process`` or ``demo`` ran or followed, say how to continue a held
    run, and give the exit code: 0 when every run completed, 130 when held, else 1."""
    if as_json:
        runs = [run_json(r, outcome.tasks[r.id]) for r in outcome.runs]
        _print_json(runs[0] if len(runs) == 1 else runs)
    else:
        for run in outcome.runs:
            await _print_run(app, run, outcome.tasks[run.id])
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
    out: Path = args.out
    _check_sample_out(out, args.kind, force=args.force)
    ffmpeg = str(app.settings.ffmpeg_path) if app.settings.ffmpeg_path else None
    try:
        await asyncio.to_thread(
            make_sample, out, args.seconds, ffmpeg=ffmpeg, kind=args.kind, speech=True
        )
    except (OSError, RuntimeError) as exc:  # cannot write there; ffmpeg failed
        raise FredicaError(f"could not write the sample {out}: {exc}") from exc
    print(out)
    return 0


def _check_sample_out(out: Path, kind: str, *, force: bool) -> None:
    """Refuse an ``OUT`` that exists (unless ``force``) or whose folder does not; warn when
    its extension names another container than ``kind`` writes."""
    if out.is_dir():
        raise FredicaError(f"{out} is a folder: give the sample's file name, e.g. {out}/x.mkv")
    if out.exists() and not force:
        raise FredicaError(f"{out} exists; pass --force to replace it")
    if not out.parent.is_dir():
        raise FredicaError(f"no folder {out.parent}: create it first (the sample goes in it)")
    container, extensions = _SAMPLE_CONTAINERS[kind]
    if out.suffix.lower() not in extensions:
        print(
            f"fredica: warning: {out} will hold {container} (--kind {kind}) whatever its "
            f"extension says; name it {extensions[0]} or choose the --kind that matches",
            file=sys.stderr,
        )


#: What each ``sample --kind`` writes, and the extensions that say so.
_SAMPLE_CONTAINERS = {
    "mkv": ("Matroska", (".mkv",)),
    "legacy": ("Matroska", (".mkv",)),
    "mp4": ("MP4", (".mp4", ".m4v")),
}


async def cmd_materials(app: Fredica, args: argparse.Namespace) -> int:
    materials = await asyncio.to_thread(app.library.list)
    if args.json:
        _print_json([material_json(m) for m in materials])
        return 0
    if not materials:
        print("the library is empty (`fredica add PATH|URL --template NAME` brings media in)")
        return 0
    rows = [
        [m.id, m.kind, "-" if m.duration is None else duration(m.duration), m.title, m.source]
        for m in materials
    ]
    print("\n".join(table(["MATERIAL", "KIND", "DURATION", "TITLE", "SOURCE"], rows, right={2})))
    return 0


async def cmd_remove(app: Fredica, args: argparse.Namespace) -> int:
    removal = await remove(app, args.id, outputs=args.outputs)
    if args.json:
        _print_json(removal.as_json())
        return 0
    rows = f"{removal.tasks} task(s), {removal.events} timeline event(s)"
    if removal.kind == "run":
        print(f"removed run {removal.id} ({removal.title or 'spec'}): {rows}")
    else:
        runs = f"{len(removal.runs)} finished run(s)"
        print(f"removed material {removal.title!r} ({removal.id}) with {runs}: {rows}")
    folder = removal.outputs_dir
    if folder is not None and removal.files_deleted is not None:
        print(f"deleted its outputs: {folder} ({removal.files_deleted} file(s))")
    elif folder is not None and removal.kept_because:
        print(f"its outputs are kept in {folder}: {removal.kept_because}")
    elif folder is not None:
        print(f"its outputs are kept in {folder} (`--outputs` deletes them)")
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
    "remove": cmd_remove,
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


async def _print_run(
    app: Fredica,
    run: RunRecord,
    tasks: list[TaskRecord],
    waiting: dict[str, str] | None = None,
) -> None:
    titles = {}
    if run.material_id:
        titles = await asyncio.to_thread(app.library.titles, [run.material_id])
    print("\n".join(run_lines(run, tasks, waiting, title=titles.get(run.material_id or ""))))


# --- entry point ----------------------------------------------------------------------------


#: The exit status when standard output was closed early (``fredica runs | head -1``): what a
#: shell reports for a tool that SIGPIPE ended, as it does for other Unix tools.
EXIT_BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Whatever goes wrong ends as one line on standard error (docs/cli.md,
    "Exit codes"); an unexpected error's traceback goes to the log file that line names."""
    args = build_parser().parse_args(argv)
    with CommandLogging() as command_log:
        try:
            code = _run(args, command_log)
            sys.stdout.flush()  # a closed pipe shows here at the latest, not at exit
            return code
        except BrokenPipeError as exc:
            if not _stdout_is_gone():  # another pipe broke: not the reader of our output
                return _unexpected(exc, args.command, command_log)
            _discard_stdout()
            return EXIT_BROKEN_PIPE
        except FredicaError as exc:
            print(f"fredica: error: {exc}", file=sys.stderr)
            return 1
        except DATABASE_ERRORS as exc:
            print(
                f"fredica: error: the database cannot be read ({exc}); run `fredica doctor`, "
                "and restore it from a backup if it is damaged",
                file=sys.stderr,
            )
            return 1
        except KeyboardInterrupt:
            return 130
        except Exception as exc:
            return _unexpected(exc, args.command, command_log)


def _unexpected(exc: Exception, command: str, command_log: CommandLogging) -> int:
    """A bug, or a fault nothing translates: its traceback to the log, one line here."""
    where = command_log.record_unexpected(exc, command)
    line = f"fredica: error: unexpected {type(exc).__name__}: {exc}"
    if where is None:  # no log file to hold the traceback
        print(line, file=sys.stderr)
        traceback.print_exception(exc)
    else:
        print(
            f"{line} (the traceback is in {where}; please report it if the cause is not clear)",
            file=sys.stderr,
        )
    return 1


def _run(args: argparse.Namespace, command_log: CommandLogging) -> int:
    if args.command == "endpoints":  # needs no data directory
        return _serve_endpoints(args)
    paths = resolve_paths(args.data_dir).ensure()
    command_log.start(paths.log_file)
    if args.command == "settings":  # needs no database
        return settings_cli.run(
            paths.settings_file,
            args.action,
            getattr(args, "key", ""),
            getattr(args, "value", ""),
            args.json,
        )
    return asyncio.run(_main(args))


def _serve_endpoints(args: argparse.Namespace) -> int:
    from python_endpoints.__main__ import main as serve_endpoints

    forwarded = ["--host", args.host, "--port", str(args.port)]
    for flag in ("token_file", "certfile", "keyfile", "ffmpeg", "log_file"):
        if getattr(args, flag) is not None:
            forwarded += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    for root in args.allow_write:
        forwarded += ["--allow-write", str(root)]
    for name in args.allow_key_env:
        forwarded += ["--allow-key-env", name]
    return serve_endpoints(forwarded, prog="fredica")


def _stdout_is_gone() -> bool:
    """Whether standard output's reader has gone (its pipe or socket reports an error);
    True when that cannot be told here (no ``poll``: Windows)."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
    except (AttributeError, OSError, ValueError):
        return True
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _discard_stdout() -> None:
    """Standard output's reader is gone: send what is left to devnull, so that flushing it at
    exit raises nothing (the recipe of Python's documentation for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):  # not a real file (a command run in-process)
        pass


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
