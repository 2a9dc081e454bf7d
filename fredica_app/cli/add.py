"""``add``: media into the library, a run of a template submitted for each — and nothing run.

A module of its own so that ``add`` imports what submitting needs and no more: it is the
first of the two commands that process a folder without a window (``add`` then ``worker``),
and its start is part of what the user waits for (docs/performance.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fredica_app.cli.shapes import created_json, material_json, print_json
from fredica_app.errors import FredicaError, MediaImportError, NoSubtitlesFor, TemplateError
from fredica_app.services import Fredica
from fredica_app.templates import get_template
from fredica_app.views.records import shown


async def cmd_add(app: Fredica, args: argparse.Namespace) -> int:
    # An unknown name, items the template cannot run on, or a parameter it does not take fail
    # before anything is imported.
    params = dict(args.param)
    template = get_template(args.template)
    template.check_sources(args.items)
    template.bind(params)
    report = await app.import_items(args.items)
    empty = [_no_media_in(folder, report.skipped) for folder in report.empty_folders]
    if not report.materials:
        raise MediaImportError("; ".join(empty) or "no media found")
    for line in empty:  # other items had media: say which folder had none, and go on
        print(f"fredica: warning: {line}", file=sys.stderr)
    out = []
    paired = template.needs_subtitles(params)
    notes: dict[str, str] = {}
    submitted = await app.submit_for_materials(
        report.materials,
        args.template,
        priority=args.priority,
        params=params,
        passed_over=(NoSubtitlesFor,),
    )
    for material, created in zip(report.materials, submitted, strict=True):
        if isinstance(created, FredicaError):  # a batch goes on without it, saying so
            print(f"fredica: skipped {created}", file=sys.stderr)
            continue
        if paired:  # say which subtitle file goes with each video
            notes[material.id] = f" (subtitles: {app.subtitles_for(material).name})"
        out.append((material, created))
    if not out:
        raise TemplateError("nothing submitted: no video had its subtitles beside it")
    if args.json:
        print_json(
            [
                {
                    "material": material_json(m),
                    **created_json(c),
                    "new_material": m in report.added,
                }
                for m, c in out
            ]
        )
        return 0
    for m, c in out:
        note = notes.get(m.id, "") + (" (already active)" if c.deduplicated else "")
        print(f"{c.run_id}  {args.template}  {shown(m.title)}{note}")
    if report.skipped:
        print(f"skipped {len(report.skipped)} file(s) that are not media", file=sys.stderr)
    return 0


def _no_media_in(folder: Path, skipped: list[Path]) -> str:
    others = sum(1 for f in skipped if f.is_relative_to(folder))
    what = f"{others} file(s), none with a media extension" if others else "no file"
    return f"no media found in {folder} ({what}; hidden files are skipped)"
