"""``/tasks/download``: one HTTP(S) URL to a file, resumable
(:mod:`python_endpoints.downloads.transfer`).

The job runs in the server's event loop (it is I/O-bound); the body is read in a thread. Its
``.part`` is named after the output, so that a retry resumes it: two downloads to one output
never run at once, the server locks the output for the job's duration
(:mod:`python_endpoints.serving.outputlocks`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from python_endpoints.downloads.transfer import DownloadFailed, Transfer, until_cancelled, validated
from python_endpoints.params import DownloadParams
from python_endpoints.serving.endpoint import Emit, LoopContext, LoopEndpoint


class DownloadEndpoint(LoopEndpoint):
    """Download one URL to ``params["output"]`` (:class:`~python_endpoints.params.DownloadParams`).

    Result: ``{"outputs": [output], "bytes": n, "content_type": str | None, "url": final URL
    after redirects, "resumed_from": bytes kept from an earlier attempt}``.
    """

    def __init__(self, emit: Emit) -> None:
        super().__init__(emit)
        self._part: Path | None = None
        self._discard_part = False

    def partial_outputs(self) -> list[Path]:
        # A .part is kept for the next attempt unless it was cancelled or is worthless.
        return [self._part] if self._part is not None and self._discard_part else []

    async def cancel(self) -> None:
        # A disconnect or a shutdown is not the user's cancel: keep the bytes for the retry.
        self._discard_part = not self.interrupted
        self.ctx.cancel_event.set()
        self.ctx.resume_event.set()
        # The .part is removed once the job has stopped and closed it (the server removes the
        # partial outputs after JobCancelled): an open file cannot be removed on Windows.

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        transfer = Transfer(validated(DownloadParams, params, "download"), ctx)
        self._part = transfer.part
        try:
            return await until_cancelled(ctx, transfer.run())
        except DownloadFailed as exc:
            self._discard_part = self._discard_part or exc.discard
            exc.keeping(transfer.kept())
            raise
