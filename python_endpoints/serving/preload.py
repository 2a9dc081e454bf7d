"""Imported by the fork server after the job modules (see :mod:`.starting`): work every forked
child would otherwise repeat, done once in the fork server, whose memory each child starts
with.

- The bundled ffmpeg is looked up: imageio-ffmpeg checks it with ``ffmpeg -version`` once per
  process (~20 ms), in front of a new child's first media job or in its warm-up.
- ``setpriv`` is looked for and tried once (a run of it, ~2 ms): what each child would do
  before its first ffmpeg (:func:`~python_endpoints.serving.child.setpriv`).
"""

from __future__ import annotations

import contextlib

from python_endpoints.jobs.media import ffmpeg_binary
from python_endpoints.serving.child import JobFailed, setpriv

with contextlib.suppress(JobFailed):  # none bundled: the job that needs one reports it
    ffmpeg_binary({})
setpriv()
