"""A job writes only where the app allows: the server refuses params whose output lies outside
its ``write_roots`` (``..`` and symbolic links resolved) before any job starts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from python_endpoints.protocol import InitData, InitParamAndRun, dump
from python_endpoints.serving.endpoint import LoopContext, LoopEndpoint
from python_endpoints.serving.server import EndpointServer, outside_write_roots
from tests.endpoints.test_endpoints import TOKEN, open_task


class Writer(LoopEndpoint):
    """Writes ``output`` (a job that would write anywhere it is told)."""

    name = "writer"

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        await asyncio.to_thread(Path(params["output"]).write_text, "written")
        return {"outputs": [params["output"]]}


def test_outside_write_roots_resolves_dots_and_links(tmp_path: Path) -> None:
    root = (tmp_path / "library").resolve()
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    assert outside_write_roots({"output": str(root / "a" / "b.mp4")}, [root]) is None
    assert outside_write_roots({"output_dir": str(root)}, [root]) is None
    assert outside_write_roots({"output": "/etc/passwd"}, None) is None  # no roots: no limit
    for escape in (root / ".." / "x.mp4", root / "link" / "x.mp4", Path("/etc/passwd")):
        reason = outside_write_roots({"output": str(escape)}, [root])
        assert reason is not None and "outside the folders" in reason
    reason = outside_write_roots({"output_dir": str(tmp_path)}, [root])
    assert reason is not None and reason.startswith("output_dir")
    assert outside_write_roots({"input": "/etc/passwd", "output": 3}, [root]) is None


async def test_the_server_refuses_a_write_outside_its_roots(tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    server = EndpointServer({"writer": Writer}, TOKEN, write_roots=[root])
    port = await server.start()
    try:
        for target, allowed in ((root / "ok.txt", True), (tmp_path / "evil.txt", False)):
            async with open_task(port, "writer") as ws:
                await ws.send(dump(InitParamAndRun(data=InitData(params={"output": str(target)}))))
                frames = [json.loads(f) async for f in ws]
            final = frames[-1]
            if allowed:
                assert final["type"] == "result" and target.read_text() == "written"
            else:
                assert final["type"] == "error" and final["error_type"] == "PAYLOAD_ERROR"
                assert "outside the folders" in final["error"]
                assert not target.exists()
    finally:
        await server.close()
