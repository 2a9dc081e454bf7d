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
