"""Imported by the fork server after the job modules (see :mod:`.starting`): work every forked
child would otherwise repeat, done once in the fork server, whose memory each child starts
with.

- The bundled ffmpeg is looked up: imageio-ffmpeg checks it with ``ffmpeg -version`` once per
  process (~20 ms), in front of a new child's first media job or in its warm-up.
- ``setpriv`` is looked for and tried once (a run of it, ~2 ms): what each child would do
  before its first ffmpeg (:func:`~python_endpoints.serving.child.setpriv`).
- What the imports made is frozen (:func:`gc.freeze`): a forked child's collections leave
  those objects alone, so their pages stay shared with the fork server instead of being
  copied into each child, and the fork server's exit does not collect them.
"""

from __future__ import annotations

import contextlib
import gc

from python_endpoints.jobs.media import ffmpeg_binary
from python_endpoints.serving.child import JobFailed, setpriv

with contextlib.suppress(JobFailed):  # none bundled: the job that needs one reports it
    ffmpeg_binary({})
setpriv()
gc.freeze()
