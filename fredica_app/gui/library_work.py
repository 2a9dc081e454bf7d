"""What the library page asks of the application: coroutine functions of ``app`` that
:meth:`~fredica_app.gui.host.AppHost.call` runs on the host's loop. No Qt here: they return
plain values, and the page words them (translated) on the GUI thread.

Each one works item by item and reports per item, so that one bad file, or one material that
a template cannot run on, does not hide what happened to the others.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fredica_app.errors import FredicaError
from fredica_app.library.fingerprint import is_media_name, is_subtitle_name, is_url
from fredica_app.library.records import MaterialRecord
from fredica_app.views.material_view import OutputGroup, output_groups
from workers.records import CreatedRun, RunRecord

if TYPE_CHECKING:
    # The library's importer and the removal need the database: imported where they run, on
    # the host's thread, not with the window.
    from fredica_app.library.importer import ImportReport
    from fredica_app.services import Fredica
    from fredica_app.services.removal import Removal


class Refused(enum.Enum):
    """Why an item was not imported (checked before anything is)."""

    #: No such file or folder.
    MISSING = "missing"
    #: A file named on its own whose extension is not a media one.
    NOT_MEDIA = "not media"
    #: Not an http(s) address (from the web address box, or another scheme).
    NOT_A_URL = "not a url"


@dataclass
class Imported:
    """An import: the library's report, and the items refused before it."""

    report: ImportReport
    refused: list[tuple[str, Refused]] = field(default_factory=list)


def check_item(item: str, *, urls_only: bool = False) -> Refused | None:
    """Why ``item`` cannot be imported, or None. A folder passes (the importer skips what is
    not media in it and says so); a file named on its own must look like media, as the
    importer's folders do — PROBE would refuse it later, after it had been added —, or be a
    subtitle file (what translate_subtitles runs on)."""
    if is_url(item):
        return None
    if urls_only or "://" in item:
        return Refused.NOT_A_URL
    path = Path(item).expanduser()
    if not path.exists():
        return Refused.MISSING
    if path.is_file() and not (is_media_name(path) or is_subtitle_name(path)):
        return Refused.NOT_MEDIA
    return None


async def import_checked(
    app: Fredica, items: Sequence[str], *, urls_only: bool = False
) -> Imported:
    """Check ``items`` (:func:`check_item`), then import those that pass."""

    def check() -> list[tuple[str, Refused]]:
        found = ((item, check_item(item, urls_only=urls_only)) for item in items)
        return [(item, why) for item, why in found if why is not None]

    from fredica_app.library.importer import ImportReport

    refused = await asyncio.to_thread(check)
    bad = {item for item, _ in refused}
    keep = [item for item in items if item not in bad]
    report = await app.import_items(keep) if keep else ImportReport()
    return Imported(report, refused)


@dataclass(frozen=True, slots=True)
class Started:
    """A template started on one material: its run, or why not."""

    material: MaterialRecord
    run: CreatedRun | None
    error: str | None = None


async def start_runs(
    app: Fredica,
    materials: Sequence[MaterialRecord],
    template: str,
    params: Mapping[str, str] | None = None,
) -> list[Started]:
    """Start ``template`` (with ``params``) on each material; an error (a template that
    cannot run on it) is that material's, and the others go on."""
    try:
        submitted = await app.submit_for_materials(materials, template, params=params)
    except FredicaError as exc:  # the database refused the submission: none was made
        return [Started(material, None, str(exc)) for material in materials]
    return [
        Started(material, None, str(run))
        if isinstance(run, FredicaError)
        else Started(material, run)
        for material, run in zip(materials, submitted, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class Removed:
    """A material removed, or why not (an active run)."""

    material: MaterialRecord
    removal: Removal | None
    error: str | None = None


async def remove_materials(
    app: Fredica, materials: Sequence[MaterialRecord], *, outputs: bool
) -> list[Removed]:
    """Remove each material (:func:`fredica_app.services.removal.remove`), its outputs too when
    ``outputs``."""
    from fredica_app.services.removal import remove

    out = []
    for material in materials:
        try:
            out.append(Removed(material, await remove(app, material.id, outputs=outputs)))
        except FredicaError as exc:
            out.append(Removed(material, None, str(exc)))
    return out


def folder_of(library_dir: Path, material: MaterialRecord) -> Path | None:
    """The folder to show for a material: its output folder once there is one, else the
    folder of its file; None when neither exists yet (a URL not downloaded)."""
    from fredica_app.library.importer import material_dir

    outputs = material_dir(library_dir, material)
    if outputs.is_dir():
        return outputs
    if material.local_path:
        parent = Path(material.local_path).parent
        if parent.is_dir():
            return parent
    return None


async def folder_to_open(app: Fredica, material: MaterialRecord) -> Path | None:
    return await asyncio.to_thread(folder_of, app.library_dir, material)


async def material_outputs(app: Fredica, material_id: str) -> list[OutputGroup]:
    """The newest run of each template on the material, with the files it made."""
    runs = await app.store.list_runs(None, material_id=material_id)
    newest: dict[str | None, RunRecord] = {}
    for run in runs:  # newest first: the first of each template is its newest
        newest.setdefault(run.template, run)
    tasks = {run.id: await app.store.list_tasks(run.id) for run in newest.values()}
    return output_groups(newest.values(), tasks)
