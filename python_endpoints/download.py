"""``/tasks/download``: HTTP(S) downloads in the server's event loop (I/O-bound)."""

from __future__ import annotations

from typing import Any, ClassVar

from python_endpoints.child import JobFailed
from python_endpoints.endpoint import LoopContext, LoopEndpoint


class DownloadEndpoint(LoopEndpoint):
    name: ClassVar[str] = "download"

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        raise JobFailed("DOWNLOAD is not implemented yet")
