"""The library and media: ``templates``, ``types``, ``process``, ``demo``, ``sample``,
``materials``, ``remove`` (``add``: :mod:`.add`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from fredica_app.cli.display import table
from fredica_app.cli.output import print_run
from fredica_app.cli.process import Outcome, ensure_sample, process, run_or_follow
from fredica_app.cli.shapes import material_json, print_json, run_json
from fredica_app.errors import (
    FredicaError,
    SpecError,
)
from fredica_app.jobs import JOBS
from fredica_app.services import Fredica
from fredica_app.services.removal import remove
from fredica_app.templates import BUILTIN, Template, TemplateParam, get_template
from fredica_app.views.records import duration, shown


async def cmd_templates(app: Fredica, args: argparse.Namespace) -> int:
    templates = [get_template(args.name)] if args.name else list(BUILTIN.values())
    if args.json:
        shown_ = [template_json(t, app) for t in templates]
        print_json(shown_[0] if args.name else shown_)
    elif args.name:
        print("\n".join(template_lines(templates[0], app)))
    else:
        for t in templates:
            print(f"{t.name:<19} {t.description}")
    return 0


def template_json(t: Template, app: Fredica) -> dict[str, Any]:
    return {
        "name": t.name,
        "description": t.description,
        "source": t.source,
        "tasks": [{"key": s.key, "type": s.type, "depends_on": s.depends_on} for s in t.tasks],
        "params": [
            {
                "name": p.name,
                "description": p.description,
                "values": t.values_of(p),
                "setting": p.setting,
                "default": _param_default(t, p, app),
                "required": t.required(p),
            }
            for p in t.params
        ],
    }


def template_lines(t: Template, app: Fredica) -> list[str]:
    """``fredica templates NAME``: what it does, what it takes, its tasks and parameters."""
    lines = [f"{t.name}: {t.description}", f"takes: {t.takes}", "tasks:"]
    for s in t.tasks:
        after = f" (after {', '.join(s.depends_on)})" if s.depends_on else ""
        lines.append(f"  {s.key:<18} {s.type}{after}")
    if not t.params:
        lines.append("parameters: none")
        return lines
    lines.append("parameters (--param NAME=VALUE):")
    width = max(10, *(len(p.name) for p in t.params))
    for p in t.params:
        lines.append(f"  {p.name:<{width}} {t.values_of(p)}: {p.description}")
        if t.required(p):
            said = "required"
        elif p.adds:
            said = f"none (without it, no {', '.join(p.adds)})"
        elif p.setting:
            said = f"{_param_default(t, p, app)!s} (the setting {p.setting})"
        else:
            said = f"{_param_default(t, p, app)!s} (the job's default)"
        lines.append(f"  {'':<{width}} default: {said}")
    return lines


def _param_default(t: Template, param: TemplateParam, app: Fredica) -> Any:
    """The value a parameter has when not given: its setting's now, or its job's default."""
    if param.setting is not None:
        value = getattr(app.settings, param.setting, None)
        if value is not None:
            return value
    return t.job_default(param)


async def cmd_types(app: Fredica, args: argparse.Namespace) -> int:
    """The task types: the queue's diagnostic ones and one per job of the catalogue, with
    what the engine knows of each (its resource class, how it pauses and resumes)."""
    rows = []
    for task_type in app.registry:
        job = JOBS.get(task_type.name)
        rows.append(
            {
                "name": task_type.name,
                "resource": task_type.resource,
                "description": task_type.description,
                "endpoint": job.name if job else None,
                "pausable": job.pausable if job else None,
                "resumes": job.resumes if job else None,
                "skip": job.skip if job else None,
            }
        )
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            print(f"{row['name']:<17} {row['resource']:<4} {row['description']}")
    return 0


async def cmd_demo(app: Fredica, args: argparse.Namespace) -> int:
    created = await app.submit({"template": "diagnostic"})
    if not args.json:
        print(f"submitted run {created.run_id} (template 'diagnostic'); running it…")
    # Run by an engine of its own, or followed when one already runs (`worker`, the app).
    outcome = await run_or_follow(app, [created.run_id])
    return await _end_of_runs(app, outcome, args.json)


async def cmd_process(app: Fredica, args: argparse.Namespace) -> int:
    template = get_template(args.template)
    # Refused before anything is imported or made: sources for a template that takes none,
    # none for one that needs one (the sample counts as one), a parameter it does not take.
    template.check_sources([*args.items, *(["--sample"] if args.sample else [])])
    params = dict(args.param)
    template.bind(params)
    if not template.needs_source:
        spec = {"template": template.name, "params": params}
        created = await app.submit(spec, priority=args.priority)
        return await _end_of_runs(app, await run_or_follow(app, [created.run_id]), args.json)
    app.start_endpoints_early({task.type for task in template.tasks})
    items = list(args.items)
    if args.sample:
        items.append(str(await ensure_sample(app)))
    outcome = await process(app, items, args.template, priority=args.priority, params=params)
    return await _end_of_runs(app, outcome, args.json)


async def _end_of_runs(app: Fredica, outcome: Outcome, as_json: bool) -> int:
    """Print the runs ``process`` or ``demo`` ran or followed, say how to continue a held
    run, and give the exit code: 0 when every run completed, 130 when held, else 1."""
    if as_json:
        runs = [run_json(r, outcome.tasks[r.id]) for r in outcome.runs]
        print_json(runs[0] if len(runs) == 1 else runs)
    else:
        for run in outcome.runs:
            await print_run(app, run, outcome.tasks[run.id])
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
        print_json([material_json(m) for m in materials])
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
        print_json(removal.as_json())
        return 0
    rows = f"{removal.tasks} task(s), {removal.events} timeline event(s)"
    if removal.kind == "run":
        print(f"removed run {removal.id} ({shown(removal.title or 'spec')}): {rows}")
    else:
        runs = f"{len(removal.runs)} finished run(s)"
        print(f"removed material {shown(repr(removal.title))} ({removal.id}) with {runs}: {rows}")
    folder = removal.outputs_dir
    if folder is not None and removal.files_deleted is not None:
        print(f"deleted its outputs: {folder} ({removal.files_deleted} file(s))")
    elif folder is not None and removal.kept_because:
        print(f"its outputs are kept in {folder}: {removal.kept_because}")
    elif folder is not None:
        print(f"its outputs are kept in {folder} (`--outputs` deletes them)")
    return 0
