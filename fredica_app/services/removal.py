"""Take a material out of the library, or a run out of the queue (`fredica remove`, and the
window's Remove).

A run goes with everything that belongs to it — its tasks, their dependencies, timeline and
restart-log entries — by the queue's own code for that (the one a prune runs: ``delete_run``).
A material goes with its runs, all finished; its outputs stay unless asked for, and then only
what lies inside its own folder under the library goes, never the user's source file. Anything
still active is refused, naming what to cancel first: nothing is removed then.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fredica_app.errors import AmbiguousId, InvalidState, NotFound, SpecError
from fredica_app.library.importer import material_dir
from fredica_app.library.records import MaterialRecord
from fredica_app.services import Fredica
from fredica_app.services.inspection import remove_poster
from workers.records import RunRecord
from workers.retention import PruneReport
from workers.states import RunStatus


@dataclass
class Removal:
    """What ``remove`` removed."""

    kind: Literal["material", "run"]
    id: str
    title: str | None
    runs: list[str] = field(default_factory=list)
    tasks: int = 0
    events: int = 0
    restart_log: int = 0
    #: The material's output folder, when there is one.
    outputs_dir: Path | None = None
    #: Files deleted from it (``--outputs``); None: the folder was kept.
    files_deleted: int | None = None
    #: Why the folder was kept although ``--outputs`` asked for it to go.
    kept_because: str | None = None
    #: The material's poster frame was removed (it had one).
    poster: bool = False

    def add(self, report: PruneReport) -> None:
        self.tasks += report.tasks
        self.events += report.events
        self.restart_log += report.restart_log

    def as_json(self) -> dict[str, Any]:
        return {
            "removed": self.kind,
            "id": self.id,
            "title": self.title,
            "runs": self.runs,
            "tasks": self.tasks,
            "events": self.events,
            "restart_log": self.restart_log,
            "outputs_dir": None if self.outputs_dir is None else str(self.outputs_dir),
            "outputs_deleted": self.files_deleted is not None,
            "files_deleted": self.files_deleted or 0,
            "poster_removed": self.poster,
        }


async def remove(app: Fredica, some_id: str, *, outputs: bool = False) -> Removal:
    """Remove the material or the run ``some_id`` (see the module's docstring)."""
    material = await asyncio.to_thread(app.library.get, some_id)
    if material is not None:
        return await _remove_material(app, material, outputs)
    try:
        run = await app.store.get_run(some_id)  # or the one run its id begins with
    except AmbiguousId:
        raise
    except NotFound:
        raise NotFound(
            f"no material or run with id {some_id!r} (`fredica materials` and `fredica runs` "
            "list them)"
        ) from None
    if outputs:
        raise SpecError(
            "--outputs goes with a material: a run's outputs are its material's, and other "
            "runs may share them (remove the material with --outputs)"
        )
    if _active(run):
        raise InvalidState(
            f"run {run.id} is {run.status.value} ({run.done_tasks}/{run.total_tasks} tasks "
            f"done): cancel it first (`fredica cancel {run.id}`), then remove it"
        )
    removal = Removal("run", run.id, run.template, runs=[run.id])
    removal.add(await app.store.delete_run(run.id))
    return removal


def _active(run: RunRecord) -> bool:
    """Whether a task of it can still move (a failed run may still have one running)."""
    return (
        run.status in (RunStatus.PENDING, RunStatus.RUNNING)
        or run.pending_tasks + run.claimed_tasks + run.running_tasks > 0
    )


async def _remove_material(app: Fredica, material: MaterialRecord, outputs: bool) -> Removal:
    runs = await app.store.list_runs(None, material_id=material.id)
    active = [r for r in runs if _active(r)]
    if active:
        named = ", ".join(f"{r.id} ({r.template}, {r.status.value})" for r in active)
        raise InvalidState(
            f"material {material.title!r} has {len(active)} active run(s): {named}; cancel "
            "them first (`fredica cancel RUN_ID`), then remove it"
        )
    removal = Removal("material", material.id, material.title)
    for run in runs:  # one short transaction each, as a prune's batches
        removal.add(await app.store.delete_run(run.id))
        removal.runs.append(run.id)
    await asyncio.to_thread(app.library.delete, material.id)
    removed = await asyncio.to_thread(remove_poster, app.paths.posters_dir, material.id)
    removal.poster = removed > 0
    folder = material_dir(app.library_dir, material)
    await asyncio.to_thread(_outputs, removal, folder, app.library_dir, material, outputs)
    return removal


def _outputs(
    removal: Removal, folder: Path, library_dir: Path, material: MaterialRecord, delete: bool
) -> None:
    """Note the material's output folder in ``removal``, and delete it when asked and it is
    the library's to delete; the user's own source file stays, wherever it is."""
    if not (folder.exists() or folder.is_symlink()):
        return
    removal.outputs_dir = folder
    if not delete:
        return
    removal.kept_because = _not_ours(folder, library_dir)
    if removal.kept_because is not None:
        return
    keep = None
    if not material.is_url and material.local_path:
        keep = Path(material.local_path).resolve()
    removal.files_deleted = _delete_folder(folder.resolve(), keep)


def _not_ours(folder: Path, library_dir: Path) -> str | None:
    """Why ``folder`` must not be deleted, or None: it must be a real folder strictly inside
    the library folder."""
    if folder.is_symlink():
        return "it is a symbolic link"
    if not folder.is_dir():
        return "it is not a folder"
    resolved, library = folder.resolve(), library_dir.resolve()
    if resolved == library or not resolved.is_relative_to(library):
        return f"it is not inside the library folder {library}"
    return None


def _delete_folder(folder: Path, keep: Path | None) -> int:
    """Delete ``folder`` and what it holds, except ``keep`` (and the folders holding it).
    Symbolic links are removed, never followed. Returns how many files went."""
    deleted = 0
    for root, dirs, files in os.walk(folder, topdown=False):
        here = Path(root)
        for name in files + [d for d in dirs if (here / d).is_symlink()]:
            path = here / name
            if keep is not None and path == keep:
                continue
            path.unlink()
            deleted += 1
        for name in dirs:
            path = here / name
            if not path.is_symlink():
                with contextlib.suppress(OSError):  # it holds what is kept
                    path.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()
    return deleted
