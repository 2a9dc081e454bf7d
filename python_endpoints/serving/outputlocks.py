"""Output locks: two jobs of one endpoints server never write the same final path at once.

Runs of different templates on one material may write the same file (``media``, ``full`` and
``transcode_mp4`` all make ``<stem>.mp4``), and a retry may start while its earlier attempt
still winds down. Before a job starts, its session claims the final paths the job writes
(:func:`python_endpoints.jobs.outputs.locked_paths`, resolved: ``..`` and symbolic links
followed). A job whose paths another job holds waits — holding nothing, no process started —
with a progress frame every few seconds ("waiting: another task is writing movie.mp4"), so
that the engine's stall watchdog sees it alive. Claims are served first come, first served per
path, all of a job's paths at once (no job holds some while it waits for others: no deadlock).
A cancel ends the wait at once; a pause holds the job back even when its turn comes (it then
keeps its paths, as a paused running job does). The session releases the claim once the job
has ended and its partial outputs are removed.

When its turn comes, the job first removes what crashed attempts left at its outputs: their
temporary files, of another part id (:func:`~python_endpoints.jobs.outputs.leftover_parts`).
No other job writes there meanwhile: the locks live in the server's memory, and one endpoints
server per library is assumed (the app starts one, under its data directory's lock). Then a
job whose output another job put in place while it waited completes at once with
``{"skipped": true, "outputs": [output]}`` instead of making the same file again: a job whose
catalogue row's skip rule is ``current`` (its output's sidecar says what it was made from:
TRANSCODE_MP4, EXTRACT_AUDIO, THUMBNAIL), when that sidecar changed during the wait and is
current for this job's input and params. Other jobs run after their wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Iterable, Sequence, Set
from pathlib import Path
from typing import Any

from python_endpoints.jobs import outputs
from python_endpoints.protocol import Paused, Progress
from python_endpoints.serving.child import JobCancelled
from python_endpoints.serving.endpoint import Emit, TaskEndpoint
from python_endpoints.serving.skips import current_result
from python_endpoints.status import parts_of, said

log = logging.getLogger(__name__)

#: Seconds between two progress frames of a waiting job (the shortest stall timeout is 60 s).
REPORT_EVERY = 5.0
#: How often a waiting job looks at its pause and its cancel.
POLL = 0.1


def skippable(endpoint: type[TaskEndpoint]) -> bool:
    """Whether a job of ``endpoint`` may find its output made while it waited: its catalogue
    row's skip rule is ``current`` (one input, one output, a sidecar that records what the
    output was made from). Not ``exists``: a file at the final path says nothing of the
    params it was made with."""
    return endpoint.skip == "current"


def lock_key(path: Path) -> str:
    """One key per file: the path resolved (``..`` and symbolic links), case folded where the
    platform's paths are case-insensitive (Windows)."""
    return os.path.normcase(os.path.realpath(path))


def grantable(held: Set[str], waiting: Sequence[Set[str]]) -> list[int]:
    """Which claims of ``waiting`` (in arrival order) may take their keys now: those none of
    whose keys is held, or wanted by a claim that came before them (first come, first served
    per key: a claim of several keys is not starved by a stream of claims of one of them)."""
    granted = []
    busy = set(held)
    for index, keys in enumerate(waiting):
        if busy.isdisjoint(keys):
            granted.append(index)
        busy |= keys
    return granted


class Claim:
    """One job's claim on the paths it writes; :attr:`granted` once it holds them all."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = {lock_key(path): path for path in paths}
        self.keys = frozenset(self.paths)
        self.granted = asyncio.Event()
        self.released = False


class OutputLocks:
    """The paths the jobs of one server are writing, and the jobs waiting for them."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._waiting: list[Claim] = []

    def claim(self, paths: Iterable[Path]) -> Claim:
        """Queue a claim; it is granted at once when none of its paths is taken or wanted."""
        claim = Claim(paths)
        self._waiting.append(claim)
        self._grant()
        return claim

    def release(self, claim: Claim) -> None:
        """Give the paths back (or withdraw a claim still waiting); the next claims get them."""
        if claim.released:
            return
        claim.released = True
        if claim.granted.is_set():
            self._held -= claim.keys
        else:
            self._waiting.remove(claim)
        self._grant()

    def blocking(self, claim: Claim) -> list[Path]:
        """The paths of a waiting ``claim`` that another job holds or claimed before it."""
        busy = set(self._held)
        for other in self._waiting:
            if other is claim:
                break
            busy |= other.keys
        return [path for key, path in claim.paths.items() if key in busy]

    def _grant(self) -> None:
        waiting = self._waiting
        for index in grantable(self._held, [c.keys for c in waiting]):
            self._held |= waiting[index].keys
            waiting[index].granted.set()
        self._waiting = [c for c in waiting if not c.granted.is_set()]


async def take_turn(
    claim: Claim,
    locks: OutputLocks,
    endpoint: TaskEndpoint,
    params: dict[str, Any],
    emit: Emit,
    stop: asyncio.Event,
) -> dict[str, Any] | None:
    """Wait until the job holds its outputs and is not paused, then remove what crashed
    attempts left there. Returns the result of a skip (the output was made meanwhile), or None:
    run the job. Raises :class:`JobCancelled` when ``stop`` is set before."""
    job = endpoint.name
    waits = not claim.granted.is_set()
    before = _sidecar_stamp(type(endpoint), params) if waits else None
    loop = asyncio.get_running_loop()
    next_report = loop.time()
    said_paused = False
    while True:
        if stop.is_set():
            raise JobCancelled
        if endpoint.paused:
            if not said_paused:  # stopped, holding nothing that could be lent
                said_paused = True
                await emit(Paused(held=False))
        elif claim.granted.is_set():
            break
        else:
            said_paused = False
            if loop.time() >= next_report:
                names = ", ".join(sorted({p.name for p in locks.blocking(claim)}))
                await _say(emit, endpoint, 0.0, said("waiting_for_writer", names=names))
                next_report = loop.time() + REPORT_EVERY
        if claim.granted.is_set():
            await asyncio.sleep(POLL)  # paused with its turn come: wait for the resume
        else:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL):
                    await claim.granted.wait()
    await asyncio.to_thread(remove_leftovers, job, params)
    if not waits:
        return None
    skipped = await asyncio.to_thread(made_meanwhile, type(endpoint), params, before)
    if skipped is not None:
        name = Path(skipped["outputs"][0]).name
        await _say(emit, endpoint, 100.0, said("made_meanwhile", name=name))
    return skipped


def remove_leftovers(job: str, params: dict[str, Any]) -> list[Path]:
    """Remove the temporary files earlier runs left at ``job``'s outputs (its caller holds
    their lock, and the job has not started); return them."""
    removed = []
    for path in outputs.leftover_parts(job, params):
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:  # the job goes on: its own files have names of their own
            log.warning("cannot remove %s, left by an earlier attempt: %s", path, exc)
            continue
        removed.append(path)
    if removed:
        log.info("removed what earlier attempts left: %s", ", ".join(p.name for p in removed))
    return removed


def _sidecar_stamp(
    endpoint: type[TaskEndpoint], params: dict[str, Any]
) -> tuple[int, int, int] | None:
    output = params.get("output")
    if not skippable(endpoint) or not isinstance(output, str):
        return None
    return outputs.sidecar_stamp(output)


def made_meanwhile(
    endpoint: type[TaskEndpoint],
    params: dict[str, Any],
    before: tuple[int, int, int] | None,
) -> dict[str, Any] | None:
    """The result of a skip when a job of ``endpoint`` (:func:`skippable`) waited and another
    run put its output in place since ``before`` (the sidecar's stamp when the wait began),
    current for these params (validated first: invalid params are the job's to refuse); else
    None. Blocking (file stats)."""
    output = params.get("output")
    if not skippable(endpoint) or not isinstance(output, str):
        return None
    if outputs.sidecar_stamp(output) in (None, before):
        return None
    return current_result(endpoint, params)


async def _say(emit: Emit, endpoint: TaskEndpoint, percent: float, text: str) -> None:
    """A progress frame of the wait, its status as messages."""
    await emit(
        Progress(
            percent=percent,
            status_text=str(text),
            status=parts_of(text),
            pausable=endpoint.pausable,
        )
    )
