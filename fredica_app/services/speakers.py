"""Naming and merging the speakers of a run, after it ran (``fredica speakers``, the window).

A run that found its speakers (DIARIZE) and wrote them into its exports (EXPORT_SUBTITLES
with ``speakers``) keeps them as numbers: ``Speaker 1``, ``Speaker 2``. A user names them
(``1=Ana``) and merges two the diarization told apart but are one person (``3=2``); the
turns file keeps the merge and the names (``names``), and the exports are written again,
by the same job with the same params, through this machine's endpoints server — the files
replaced only once every one is written and verified.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fredica_app.errors import FredicaError, InvalidState
from fredica_app.files import write_atomically
from workers.executors.websocket import JobError, run_job

if TYPE_CHECKING:
    from fredica_app.services.app import Fredica


@dataclass(frozen=True, slots=True)
class Speaker:
    number: int
    name: str
    #: Seconds of speech.
    seconds: float
    turns: int


@dataclass(frozen=True, slots=True)
class RunSpeakers:
    """A run's speakers, and the files that say who speaks."""

    run_id: str
    turns_file: Path
    speakers: list[Speaker]
    exports: list[str]


def parse_changes(words: list[str]) -> tuple[dict[int, str], dict[int, int]]:
    """``N=NAME`` and ``N=M`` as typed: the names given and the merges (``3=2``: speaker 3
    is speaker 2). Raises :class:`FredicaError`, one line."""
    names: dict[int, str] = {}
    merges: dict[int, int] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key.strip().isdigit() or not value.strip():
            raise FredicaError(f"{word!r}: write N=NAME to name speaker N, or N=M to merge it")
        number, value = int(key), value.strip()
        if value.isdigit():
            merges[number] = int(value)
        elif len(value) > 80 or any(c in value for c in "\n\r\t"):
            raise FredicaError(f"{word!r}: a name is one line of at most 80 characters")
        else:
            names[number] = value
    return names, merges


async def run_speakers(app: Fredica, run_id: str) -> RunSpeakers:
    """The speakers of ``run_id`` (its DIARIZE's turns, with the names given so far)."""
    export = await _export_task(app, run_id)
    turns_file = Path(str(export.payload["speakers"]))
    document = await asyncio.to_thread(_read, turns_file)
    names = {str(k): str(v) for k, v in document.get("names", {}).items()}
    totals: dict[int, list[float]] = {}
    for turn in document["turns"]:
        entry = totals.setdefault(int(turn["speaker"]), [0.0, 0])
        entry[0] += float(turn["end"]) - float(turn["start"])
        entry[1] += 1
    speakers = [
        Speaker(n, names.get(str(n)) or f"Speaker {n}", round(t[0], 1), int(t[1]))
        for n, t in sorted(totals.items())
    ]
    exports = [str(p) for p in (export.result or {}).get("outputs", [])]
    return RunSpeakers(run_id, turns_file, speakers, exports)


async def rename_speakers(
    app: Fredica, run_id: str, names: dict[int, str], merges: dict[int, int]
) -> RunSpeakers:
    """Name and merge a run's speakers, then write its exports again."""
    export = await _export_task(app, run_id)
    turns_file = Path(str(export.payload["speakers"]))
    document = await asyncio.to_thread(_read, turns_file)
    known = {int(t["speaker"]) for t in document["turns"]}
    for number in [*names, *merges, *merges.values()]:
        if number not in known:
            found = ", ".join(str(n) for n in sorted(known)) or "none"
            raise FredicaError(f"run {run_id} has no speaker {number} (its speakers: {found})")
    for source, target in merges.items():
        if merges.get(target, target) != target or source == target:
            raise FredicaError(f"cannot merge speaker {source} into {target}: merge into one kept")
    for turn in document["turns"]:
        turn["speaker"] = merges.get(int(turn["speaker"]), int(turn["speaker"]))
    given = {str(k): str(v) for k, v in document.get("names", {}).items()}
    given.update({str(n): name for n, name in names.items()})
    document["names"] = {k: v for k, v in given.items() if int(k) not in merges}
    document["speakers"] = len({t["speaker"] for t in document["turns"]})
    await asyncio.to_thread(_write, turns_file, document)
    params = {k: v for k, v in export.payload.items() if k not in ("schema_version", "check_skip")}
    params["speaker_names"] = document["names"]
    try:
        address = await app.endpoints.address()
        await run_job(address, "export_subtitles", params, within=300.0)
    except JobError as exc:
        raise FredicaError(f"the exports could not be written again: {exc}") from exc
    return await run_speakers(app, run_id)


async def _export_task(app: Fredica, run_id: str) -> Any:
    tasks = await app.store.list_tasks(run_id)
    for task in tasks:
        if task.type == "EXPORT_SUBTITLES" and task.payload.get("speakers"):
            if task.status.value != "completed":
                raise InvalidState(
                    f"run {run_id} has not written its speaker-labelled exports yet "
                    f"({task.status.value}): wait for it to finish"
                )
            return task
    raise InvalidState(
        f"run {run_id} did not find its speakers (run the transcript template to have them)"
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FredicaError(f"the speakers file {path} is gone: run the template again") from None
    except (OSError, ValueError) as exc:
        raise FredicaError(f"cannot read the speakers file {path}: {exc}") from None
    return data


def _write(path: Path, document: dict[str, Any]) -> None:
    write_atomically(path, (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode())
