"""``/tasks/path_probe``: the check of an endpoint host's path map.

A client that sends this server tasks about files on shared storage first writes a probe file
of random content in a shared folder, then asks here whether the file is where its path map
says this host sees it. The job reads it, and when it holds what the client says, writes the
client's answer beside it, which the client reads back: both directions, reading and writing,
are shown to work. Only probe files are read — ``.fredica-probe-`` and 32 hex digits, at most
64 bytes, not through a symbolic link — so that a token holder learns nothing of other files;
the answer is written as any output is, under the server's ``--allow-write`` folders only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar

from python_endpoints.downloads.transfer import validated
from python_endpoints.errorcodes import ErrorType
from python_endpoints.params import PathProbeParams
from python_endpoints.serving.child import JobFailed
from python_endpoints.serving.endpoint import LoopContext, LoopEndpoint

_PROBE = re.compile(r"^\.fredica-probe-[0-9a-f]{32}$")


class PathProbeEndpoint(LoopEndpoint):
    """Result: ``{"found": bool, "matches": bool}``; the answer file is written when it
    matches."""

    name: ClassVar[str] = "path_probe"
    params_model = PathProbeParams
    pausable = "never"

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        checked = validated(PathProbeParams, params, "path_probe")
        assert isinstance(checked, PathProbeParams)
        probe, answer = Path(checked.input), Path(checked.output)
        if not _PROBE.match(probe.name) or answer.name != probe.name + ".reply":
            raise JobFailed(
                "path_probe reads only a probe file (.fredica-probe-<32 hex digits>) and "
                "answers beside it",
                ErrorType.PAYLOAD_ERROR,
            )
        held = _read(probe)
        if held is None or held != checked.expect:
            return {"found": held is not None, "matches": False}
        temporary = answer.with_name(answer.name + ".tmp")
        try:
            temporary.write_text(checked.reply, encoding="ascii")
            os.replace(temporary, answer)
        except OSError as exc:
            raise JobFailed(
                f"cannot write in {answer.parent}: {exc.strerror or exc}", ErrorType.IO_ERROR
            ) from exc
        return {"found": True, "matches": True}


def _read(path: Path) -> str | None:
    """The probe file's text (None: not there, not a plain file, or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        return os.read(fd, 64).decode("ascii", errors="replace").strip()
    finally:
        os.close(fd)
