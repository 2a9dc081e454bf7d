"""``fredica speakers RUN [N=NAME | N=M]...``: a run's speakers, named and merged."""

from __future__ import annotations

import argparse

from fredica_app.cli.shapes import print_json
from fredica_app.services import Fredica
from fredica_app.services.speakers import (
    RunSpeakers,
    parse_changes,
    rename_speakers,
    run_speakers,
)


async def cmd_speakers(app: Fredica, args: argparse.Namespace) -> int:
    names, merges = parse_changes(args.changes)
    if names or merges:
        found = await rename_speakers(app, args.run_id, names, merges)
    else:
        found = await run_speakers(app, args.run_id)
    if args.json:
        print_json(speakers_json(found))
        return 0
    for s in found.speakers:
        print(f"{s.number}  {s.name}  {s.seconds:g} s in {s.turns} turn(s)")
    if names or merges:
        print(f"rewrote {len(found.exports)} file(s): {', '.join(found.exports)}")
    return 0


def speakers_json(found: RunSpeakers) -> dict[str, object]:
    return {
        "run_id": found.run_id,
        "turns_file": str(found.turns_file),
        "speakers": [
            {"number": s.number, "name": s.name, "seconds": s.seconds, "turns": s.turns}
            for s in found.speakers
        ],
        "exports": found.exports,
    }
