"""Use cases shared by the CLI and the GUI — their front door to the application.

- :mod:`.app`: :class:`Fredica`, the application for one data directory (open and close it,
  run an engine on it, the queue's pause flag, what the history keeps).
- :mod:`.submission`: submitting work (specs, templates for a material, importing media).
- :mod:`.control`: pausing, resuming, cancelling and retrying tasks and runs, pausing the
  queue — through the engine of this process when one runs, through the database otherwise.
- :mod:`.queries`: what a viewer reads — a snapshot of runs and tasks, then the changes since.
- :mod:`.removal`: a material out of the library (its finished runs with it), a run out of
  the queue.
- :mod:`.doctor`: what Fredica needs checked (settings, folders, database, the endpoints server
  with a job's round trip, ffmpeg, encoders, speech models), each with how to fix it.

Nothing here speaks SQL (the stores do) or Qt (the GUI does), nor prints: what a command
shows, its JSON included, is the CLI's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fredica_app.services.app import Fredica
    from fredica_app.services.control import ACTIONS, Action, Control, ControlResult
    from fredica_app.services.submission import (
        Submission,
        load_spec_file,
        needs_site_download,
        uses_gpu,
    )

__all__ = [
    "ACTIONS",
    "Action",
    "Control",
    "ControlResult",
    "Fredica",
    "Submission",
    "load_spec_file",
    "needs_site_download",
    "uses_gpu",
]


def __getattr__(name: str) -> Any:
    """The package's names, imported when first asked for: importing one of its light
    modules (``notices``, ``queries``) must not import the database and the engine (about a
    second) with it — the window shows itself before they are needed."""
    if name == "Fredica":
        from fredica_app.services.app import Fredica

        return Fredica
    if name in ("ACTIONS", "Action", "Control", "ControlResult"):
        from fredica_app.services import control

        return getattr(control, name)
    if name in ("Submission", "load_spec_file", "needs_site_download", "uses_gpu"):
        from fredica_app.services import submission

        return getattr(submission, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
