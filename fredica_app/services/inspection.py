"""A first look at each material once its file is here: its probe (duration, size, streams,
resolution, chapters) and, for a video, a poster frame — so that the library shows every file
with a length and a picture, whatever template it was brought in for.

A look runs the endpoints server's own jobs (``probe``, then ``thumbnail`` with one frame)
directly, not through the queue: it is no work the user asked for, and a folder of a thousand
files must not fill the run list with a thousand probes. Hostile files are read in the
server's job processes, never in the app's. One material at a time, headers only for the probe
and one decoded picture for the poster: well under a second a file, and never two at once
beside the user's work.

What a look found is kept in the material's metadata (``look``: when, and what went wrong), so
each material is looked at once: a file that is not media, or is missing, says so in its
details and is not tried again. A look the server could not run (it was stopping, the
connection broke) keeps nothing and is tried again later. A URL's material is looked at once
its download has put the file in place.

Posters are JPEGs in the data directory's ``posters`` folder, named by material id: removing
the material removes its poster (:mod:`.removal`), and a prune removes the posters of
materials that are gone (:func:`prune_posters`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fredica_app.library.records import MaterialRecord
from workers.executors.websocket import JobError, run_job

if TYPE_CHECKING:
    from fredica_app.services.app import Fredica
    from workers.executors.websocket import EndpointsAddress

log = logging.getLogger(__name__)

#: A poster's width in pixels (its height follows the picture's shape).
POSTER_WIDTH = 320
#: Seconds a look's job may take before it is given up (and tried again later).
JOB_TIMEOUT = 120.0
#: The job errors that say something of the file itself: kept, and the file not looked at
#: again. Any other error (the server's, the connection's) is not kept.
FILE_ERRORS = frozenset(
    {"INPUT_MISSING", "NOT_MEDIA", "UNSUPPORTED_MEDIA", "IO_ERROR", "DECODE_ERROR"}
)


@dataclass(frozen=True, slots=True)
class Look:
    """What a look at one material did."""

    material_id: str
    #: The probe's result was stored.
    probed: bool = False
    #: The poster made (None: none, as for audio, or it failed).
    poster: Path | None = None
    #: What went wrong with the file (kept in the material), or None.
    error: str | None = None
    #: The look could not run (the server or the connection failed): nothing was kept.
    deferred: bool = False
    #: A URL's file is not downloaded yet: nothing was tried (look again once it is).
    waiting: bool = False


def poster_path(posters_dir: Path, material_id: str) -> Path:
    return posters_dir / f"{material_id}.jpg"


def needs_look(material: MaterialRecord) -> bool:
    """Whether this material has not been looked at yet and its file is said to be here (a
    URL's: once downloaded — the look itself checks the file)."""
    return "look" not in material.meta and material.local_path is not None


async def look_at(app: Fredica, material: MaterialRecord) -> Look:
    """Probe one material and, for a video, make its poster (see the module's docstring)."""
    path = material.local_path
    if path is None or (material.is_url and not await asyncio.to_thread(Path(path).is_file)):
        return Look(material.id, deferred=True, waiting=True)
    try:
        address = await app.endpoints.address()
        probe = await run_job(address, "probe", {"input": path}, within=JOB_TIMEOUT)
    except JobError as exc:
        if exc.error_type not in FILE_ERRORS:
            log.info("looking at %s deferred: %s", material.id, exc)
            return Look(material.id, deferred=True)
        await asyncio.to_thread(app.library.record_look, material.id, None, str(exc))
        return Look(material.id, error=str(exc))
    except (OSError, TimeoutError, ConnectionError, RuntimeError) as exc:
        log.info("looking at %s deferred: %s", material.id, exc)
        return Look(material.id, deferred=True)
    poster: Path | None = None
    poster_error: str | None = None
    if probe.get("kind") == "video":
        poster, poster_error = await _poster(app, address, material, path)
    await asyncio.to_thread(app.library.record_look, material.id, probe, poster_error)
    return Look(material.id, probed=True, poster=poster, error=poster_error)


async def _poster(
    app: Fredica, address: EndpointsAddress, material: MaterialRecord, path: str
) -> tuple[Path | None, str | None]:
    out = poster_path(app.paths.posters_dir, material.id)
    await asyncio.to_thread(out.parent.mkdir, parents=True, exist_ok=True)
    params = {"input": path, "output": str(out), "frames": 1, "columns": 1}
    try:
        await run_job(address, "thumbnail", {**params, "width": POSTER_WIDTH}, within=JOB_TIMEOUT)
    except JobError as exc:  # the probe was right: keep it, say why there is no picture
        return None, f"no poster frame: {exc}"
    except (OSError, TimeoutError, ConnectionError, RuntimeError) as exc:
        log.info("the poster of %s was not made: %s", material.id, exc)
        return None, None
    return out, None


def remove_poster(posters_dir: Path, material_id: str) -> int:
    """Remove a material's poster and what the job wrote beside it; the files removed."""
    from python_endpoints.jobs.outputs import sidecar_path

    poster = poster_path(posters_dir, material_id)
    removed = 0
    for f in (poster, sidecar_path(poster)):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
            removed += 1
    return removed


async def prune_posters(app: Fredica, *, dry_run: bool = False) -> int:
    """Remove the posters of materials that are no longer in the library (removed by an
    older version, or while the removal was cut short); how many."""
    ids = {m.id for m in await asyncio.to_thread(app.library.list)}
    return await asyncio.to_thread(_prune_posters, app.paths.posters_dir, ids, dry_run)


def _prune_posters(posters_dir: Path, material_ids: set[str], dry_run: bool) -> int:
    if not posters_dir.is_dir():
        return 0
    gone = [p for p in posters_dir.glob("*.jpg") if p.stem not in material_ids]
    if not dry_run:
        for p in gone:
            remove_poster(posters_dir, p.stem)
    return len(gone)
