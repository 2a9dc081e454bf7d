"""``/tasks/download`` for real: a real endpoints server on 127.0.0.1:0 (and once a real
``python -m python_endpoints`` process, killed with SIGKILL), a raw websocket client, and a real
HTTP server that drops connections, ignores Range, changes its ETag, throttles, redirects."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from python_endpoints.downloads import transfer as transfer_module
from python_endpoints.jobs.httpfacts import (
    ContentRange,
    SpeedMeter,
    accepts,
    if_range_validator,
    parse_content_range,
    status_text,
    unsatisfied_length,
)
from python_endpoints.jobs.text import format_bytes, format_duration, shown
from python_endpoints.protocol import Cancel, Pause, Resume, Status, dump
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, server_process, start
from tests.support.host import fill, small_disk
from tests.support.httpserver import HTTPTestServer, Route, make_body

BODY = make_body(3_000_000)
LAST_MODIFIED = Route().last_modified


def part(output: Path) -> Path:
    return output.with_name(output.name + ".part")


async def download(port: int, within: float = 30, **params: Any) -> list[dict[str, Any]]:
    """Run one download to its last frame; return every frame."""
    async with open_task(port, "download") as ws:
        await start(ws, **params)
        return await frames_until(ws, "result", "error", "cancelled", within=within)


def checkpoints(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        f["extras"]["checkpoint"]
        for f in frames
        if f["type"] == "progress" and "checkpoint" in f["extras"]
    ]


async def progress_past(ws: Any, bytes_done: int) -> dict[str, Any]:
    """Read frames until a progress frame past ``bytes_done``; return it."""
    while True:
        frame = (await frames_until(ws, "progress", "result", "error"))[-1]
        assert frame["type"] == "progress", frame
        if frame["extras"].get("bytes_done", 0) > bytes_done:
            return frame


# --- the pure helpers -----------------------------------------------------------------------


def test_content_range_parsing() -> None:
    assert parse_content_range("bytes 100-199/1000") == ContentRange(100, 199, 1000)
    assert parse_content_range("bytes 100-199/*") == ContentRange(100, 199, None)
    for bad in (None, "", "bytes */1000", "items 1-2/3", "bytes 5-2/10", "bytes 0-10/10"):
        assert parse_content_range(bad) is None
    assert unsatisfied_length("bytes */1000") == 1000
    assert unsatisfied_length("bytes 0-1/1000") is None


def test_validators_accept_and_shown_urls() -> None:
    assert if_range_validator('"abc"', "Tue, 14 Nov 2023") == '"abc"'
    assert if_range_validator('W/"abc"', "Tue, 14 Nov 2023") == "Tue, 14 Nov 2023"
    assert if_range_validator('W/"abc"', None) is None
    assert accepts("video/mp4", []) and accepts(None, ["video/"])
    assert not accepts("text/html; charset=utf-8", [])
    assert accepts("VIDEO/MP4", ["video/", "audio/"]) and not accepts("image/png", ["video/"])
    assert shown("https://user:secret@example.com/a?b=1") == "https://example.com/a?b=1"
    assert len(shown("https://example.com/" + "x" * 500)) == 200


def test_speed_eta_and_status_text() -> None:
    meter = SpeedMeter(window=5)
    for second in range(10):
        meter.add(float(second), second * 1_000_000)
    assert meter.speed() == pytest.approx(1_000_000)
    meter.reset()
    assert meter.speed() == 0.0
    assert (
        status_text(12_300_000, 40_000_000, 5_100_000, 5.2)
        == "downloading 12.3 MB of 40.0 MB, 5.1 MB/s, 6 s left"
    )
    assert status_text(512, None, 0.0, None) == "downloading 512 B"
    assert format_bytes(1_500_000_000) == "1.5 GB" and format_bytes(2_000) == "2.0 kB"
    assert format_duration(125) == "2 min 5 s" and format_duration(7260) == "2 h 1 min"


# --- through the endpoints server -----------------------------------------------------------


async def test_a_download_streams_to_a_part_then_renames(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY)
    out = tmp_path / "media" / "f.bin"  # its folder is made
    frames = await download(endpoints, url=http.url("/f"), output=str(out))
    assert frames[-1] == {
        "type": "result",
        "result": {
            "outputs": [str(out)],
            "bytes": len(BODY),
            "content_type": "application/octet-stream",
            "url": http.url("/f"),
            "resumed_from": 0,
        },
    }
    assert out.read_bytes() == BODY and not part(out).exists()
    assert checkpoints(frames)[0] == {
        "bytes_done": 0,
        "etag": '"v1"',
        "last_modified": LAST_MODIFIED,
    }
    progress = [f for f in frames if f["type"] == "progress"]
    assert progress[-1]["percent"] == 100 and progress[-1]["extras"]["bytes_done"] == len(BODY)
    [request] = http.requests
    assert "range" not in request.headers
    assert request.headers["user-agent"].startswith("Fredica/")
    assert request.headers["accept-encoding"] == "identity"


async def test_progress_frames_are_throttled_and_checkpoints_follow_the_bytes(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    # 5 s of download: the background fsync that lets a checkpoint count bytes starts after
    # 1 s and must end before the body does — on a disk that another program keeps busy
    # (the suite builds the .deb beside it) one took over 1.5 s.
    http.routes["/f"] = Route(body=BODY, rate=600_000)
    out = tmp_path / "f.bin"
    loop = asyncio.get_running_loop()
    began = loop.time()
    frames = await download(endpoints, url=http.url("/f"), output=str(out))
    took = loop.time() - began
    assert frames[-1]["type"] == "result"
    progress = [f for f in frames if f["type"] == "progress"]
    assert len(progress) <= 5 * took + 4  # ~5 a second, plus the first and last ones
    done = [c["bytes_done"] for c in checkpoints(frames)]
    assert done == sorted(done) and done[-1] > 0
    assert len(done) <= took + 2  # at most one a second, plus the one at the start
    middle = [f for f in progress if 0 < f["percent"] < 100 and f["extras"]["speed"] > 0]
    assert middle, progress
    sample = middle[-1]
    assert sample["extras"]["total"] == len(BODY) and sample["extras"]["eta"] is not None
    assert (
        sample["status_text"].startswith("downloading ") and " of 3.0 MB, " in sample["status_text"]
    )
    assert sample["status_text"].endswith(" left")


async def test_resume_after_a_dropped_connection(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY, drop_after=1_000_000)
    out = tmp_path / "f.bin"
    first = await download(endpoints, url=http.url("/f"), output=str(out))
    assert first[-1]["type"] == "error" and first[-1]["error_type"] == "NETWORK_ERROR"
    # What is true whatever the task's retries left (the engine says whether it retries).
    assert "retried" not in first[-1]["error"]
    assert first[-1]["error"].endswith(
        "; the 1.0 MB downloaded so far are kept: a retry resumes from there"
    ), first[-1]["error"]
    # The .part is kept, and the last checkpoint counts every byte in it (fsynced).
    checkpoint = checkpoints(first)[-1]
    assert checkpoint == {"bytes_done": 1_000_000, "etag": '"v1"', "last_modified": LAST_MODIFIED}
    assert part(out).stat().st_size == 1_000_000 and not out.exists()

    second = await download(endpoints, url=http.url("/f"), output=str(out), resume=checkpoint)
    assert second[-1]["type"] == "result", second[-1]
    assert second[-1]["result"]["resumed_from"] == 1_000_000
    assert out.read_bytes() == BODY and not part(out).exists()
    last = http.requests[-1].headers
    assert last["range"] == "bytes=1000000-" and last["if-range"] == '"v1"'


async def test_without_a_validator_a_failure_says_a_retry_starts_over(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY, drop_after=1_000_000, etag=None, last_modified=None)
    out = tmp_path / "f.bin"
    first = await download(endpoints, url=http.url("/f"), output=str(out))
    assert first[-1]["error_type"] == "NETWORK_ERROR"
    assert first[-1]["error"].endswith(
        "; 1.0 MB were downloaded, but the server gives no way to check that they are still "
        "current: a retry starts over"
    )
    second = await download(
        endpoints, url=http.url("/f"), output=str(out), resume=checkpoints(first)[-1]
    )
    assert second[-1]["result"]["resumed_from"] == 0 and out.read_bytes() == BODY


async def test_a_changed_validator_starts_over(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY, drop_after=1_000_000)
    out = tmp_path / "f.bin"
    first = await download(endpoints, url=http.url("/f"), output=str(out))
    assert first[-1]["error_type"] == "NETWORK_ERROR"
    new = make_body(2_000_000, seed=7)
    http.change("/f", new)
    second = await download(
        endpoints, url=http.url("/f"), output=str(out), resume=checkpoints(first)[-1]
    )
    assert second[-1]["type"] == "result" and second[-1]["result"]["resumed_from"] == 0
    assert out.read_bytes() == new
    assert http.requests[-1].headers["if-range"] == '"v1"'  # asked, and answered with 200
    assert checkpoints(second)[0]["etag"] == '"v2"'


async def test_a_server_that_ignores_range_starts_over(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY, ranges=False, drop_after=1_000_000)
    out = tmp_path / "f.bin"
    first = await download(endpoints, url=http.url("/f"), output=str(out))
    assert first[-1]["error_type"] == "NETWORK_ERROR"
    second = await download(
        endpoints, url=http.url("/f"), output=str(out), resume=checkpoints(first)[-1]
    )
    assert second[-1]["type"] == "result" and second[-1]["result"]["resumed_from"] == 0
    assert out.read_bytes() == BODY
    assert http.requests[-1].headers["range"] == "bytes=1000000-"


async def test_a_part_already_complete_finishes_on_416(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY)
    out = tmp_path / "f.bin"
    part(out).write_bytes(BODY)
    resume = {"bytes_done": len(BODY), "etag": '"v1"'}
    frames = await download(endpoints, url=http.url("/f"), output=str(out), resume=resume)
    assert frames[-1]["type"] == "result", frames[-1]
    assert frames[-1]["result"]["resumed_from"] == len(BODY)
    assert out.read_bytes() == BODY and not part(out).exists()
    [request] = http.requests
    assert request.headers["range"] == f"bytes={len(BODY)}-"


@pytest.mark.parametrize("broken", ["416: the part is longer", "206 from the wrong offset"])
async def test_a_range_answer_that_does_not_fit_starts_over(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, broken: str
) -> None:
    http.routes["/f"] = Route(body=BODY, range_from_zero=broken.startswith("206"))
    out = tmp_path / "f.bin"
    on_disk = BODY + b"tail" if broken.startswith("416") else BODY[:1000]
    part(out).write_bytes(on_disk)
    resume = {"bytes_done": len(on_disk), "etag": '"v1"'}
    frames = await download(endpoints, url=http.url("/f"), output=str(out), resume=resume)
    assert frames[-1]["type"] == "result" and frames[-1]["result"]["resumed_from"] == 0
    assert out.read_bytes() == BODY
    first, second = http.requests
    assert first.headers["range"] == f"bytes={len(on_disk)}-" and "range" not in second.headers


@pytest.mark.parametrize(
    ("on_disk", "resume", "expected_range"),
    [
        # No validator: the .part is not trusted at all.
        (b"\0" * 500_000, {"bytes_done": 500_000}, None),
        # A .part shorter than the checkpoint (it should not be): what is there is used.
        (BODY[:400_000], {"bytes_done": 1_000_000, "etag": '"v1"'}, "bytes=400000-"),
        # A tail beyond the checkpoint is not vouched for by an fsync: cut off.
        (
            BODY[:600_000] + b"\0" * 200_000,
            {"bytes_done": 600_000, "last_modified": LAST_MODIFIED},
            "bytes=600000-",
        ),
    ],
)
async def test_what_is_kept_of_a_part(
    endpoints: int,
    http: HTTPTestServer,
    tmp_path: Path,
    on_disk: bytes,
    resume: dict[str, Any],
    expected_range: str | None,
) -> None:
    http.routes["/f"] = Route(body=BODY)
    out = tmp_path / "f.bin"
    part(out).write_bytes(on_disk)
    frames = await download(endpoints, url=http.url("/f"), output=str(out), resume=resume)
    assert frames[-1]["type"] == "result", frames[-1]
    assert out.read_bytes() == BODY
    [request] = http.requests
    assert request.headers.get("range") == expected_range
    if expected_range is not None:
        kept = int(expected_range.removeprefix("bytes=").rstrip("-"))
        assert frames[-1]["result"]["resumed_from"] == kept


@pytest.mark.parametrize("status", [404, 403, 410])
async def test_a_definitive_4xx_is_an_http_error_and_drops_the_part(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, status: int
) -> None:
    http.routes["/f"] = Route(status=status)
    out = tmp_path / "f.bin"
    part(out).write_bytes(BODY[:1000])
    resume = {"bytes_done": 1000, "etag": '"v1"'}
    frames = await download(endpoints, url=http.url("/f"), output=str(out), resume=resume)
    error = frames[-1]
    assert error["type"] == "error" and error["error_type"] == "HTTP_ERROR"
    assert str(status) in error["error"] and http.url("/f") in error["error"]
    assert not part(out).exists() and not out.exists()


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_server_errors_are_network_errors_and_keep_the_part(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, status: int
) -> None:
    http.routes["/f"] = Route(status=status)
    out = tmp_path / "f.bin"
    part(out).write_bytes(BODY[:1000])
    resume = {"bytes_done": 1000, "etag": '"v1"'}
    frames = await download(endpoints, url=http.url("/f"), output=str(out), resume=resume)
    assert frames[-1]["error_type"] == "NETWORK_ERROR" and str(status) in frames[-1]["error"]
    assert part(out).read_bytes() == BODY[:1000] and not out.exists()
    assert checkpoints(frames)[-1] == {"bytes_done": 1000, "etag": '"v1"', "last_modified": None}


async def test_connection_refused_is_a_network_error(endpoints: int, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    frames = await download(
        endpoints, url=f"http://127.0.0.1:{closed_port}/f", output=str(tmp_path / "f.bin")
    )
    assert frames[-1]["error_type"] == "NETWORK_ERROR"
    assert "could not connect" in frames[-1]["error"]
    # Nothing downloaded, nothing promised: whether it is retried is the engine's to say.
    assert frames[-1]["error"].endswith("; check the network connection"), frames[-1]["error"]


@pytest.mark.parametrize(
    ("content_type", "accept", "error_type"),
    [
        ("text/html; charset=utf-8", [], "UNSUPPORTED_MEDIA"),
        ("application/octet-stream", ["video/", "audio/"], "UNSUPPORTED_MEDIA"),
        ("video/mp4", ["video/", "audio/"], None),
        ("text/html", ["text/"], None),
    ],
)
async def test_content_types_refused_by_accept(
    endpoints: int,
    http: HTTPTestServer,
    tmp_path: Path,
    content_type: str,
    accept: list[str],
    error_type: str | None,
) -> None:
    http.routes["/f"] = Route(body=b"<html>please log in</html>", content_type=content_type)
    out = tmp_path / "f.bin"
    frames = await download(endpoints, url=http.url("/f"), output=str(out), accept=accept)
    if error_type is None:
        assert frames[-1]["type"] == "result" and out.exists()
    else:
        assert frames[-1]["error_type"] == error_type
        assert content_type in frames[-1]["error"]
        assert not out.exists() and not part(out).exists()


async def test_redirects_are_followed(endpoints: int, http: HTTPTestServer, tmp_path: Path) -> None:
    http.routes["/f"] = Route(body=BODY[:10_000])
    http.routes["/short"] = Route(location="/f")
    out = tmp_path / "f.bin"
    frames = await download(endpoints, url=http.url("/short"), output=str(out))
    assert frames[-1]["result"]["url"] == http.url("/f")
    assert out.read_bytes() == BODY[:10_000]


@pytest.mark.parametrize(
    ("location", "words"),
    [("ftp://127.0.0.1/f", "ftp"), ("/loop", "more than 10")],
)
async def test_bad_redirects_are_refused(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, location: str, words: str
) -> None:
    http.routes["/loop"] = Route(location=location)
    out = tmp_path / "f.bin"
    frames = await download(endpoints, url=http.url("/loop"), output=str(out))
    assert frames[-1]["error_type"] == "HTTP_ERROR" and words in frames[-1]["error"]
    assert not out.exists() and not part(out).exists()


@pytest.mark.parametrize("chunked", [False, True])
async def test_max_bytes_is_enforced(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, chunked: bool
) -> None:
    http.routes["/f"] = Route(body=BODY, chunked=chunked)
    out = tmp_path / "f.bin"
    frames = await download(endpoints, url=http.url("/f"), output=str(out), max_bytes=1_000_000)
    assert frames[-1]["type"] == "error" and "max_bytes" in frames[-1]["error"]
    assert frames[-1]["error_type"] == "UNSUPPORTED_MEDIA"
    assert not out.exists() and not part(out).exists()


async def test_a_chunked_body_without_content_length(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY, chunked=True)
    out = tmp_path / "f.bin"
    frames = await download(endpoints, url=http.url("/f"), output=str(out))
    assert frames[-1]["result"]["bytes"] == len(BODY)
    assert out.read_bytes() == BODY
    assert all(
        f["extras"]["total"] is None
        for f in frames
        if f["type"] == "progress" and 0 < f["extras"].get("bytes_done", 0) < len(BODY)
    )


async def test_not_enough_space_is_said_before_the_body(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = shutil.disk_usage(tmp_path)._replace(free=1_000_000)
    monkeypatch.setattr(transfer_module, "shutil", SimpleNamespace(disk_usage=lambda _: usage))
    http.routes["/f"] = Route(body=BODY)
    out = tmp_path / "f.bin"
    frames = await download(endpoints, url=http.url("/f"), output=str(out))
    assert frames[-1]["error_type"] == "NO_SPACE" and "1.0 MB free" in frames[-1]["error"]
    assert not out.exists()


async def test_an_output_that_cannot_be_written_is_an_io_error(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY[:1000])
    (tmp_path / "a-file").write_text("not a folder")
    frames = await download(
        endpoints, url=http.url("/f"), output=str(tmp_path / "a-file" / "f.bin")
    )
    assert frames[-1]["error_type"] == "IO_ERROR"


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"url": "ftp://example.com/f", "output": "/nowhere/f.bin"}, "only http and https"),
        ({"url": "https://example.com/f", "output": "f.bin"}, "absolute path"),
        ({"url": "https://example.com/f", "output": "/nowhere/f.bin", "colour": 1}, "colour"),
        (
            {"url": "https://example.com/f", "output": "/nowhere/f.bin", "proxy": "nope://x"},
            "proxy",
        ),
    ],
)
async def test_invalid_params_are_a_payload_error(
    endpoints: int, params: dict[str, Any], words: str
) -> None:
    frames = await download(endpoints, **params)
    assert frames[-1]["error_type"] == "PAYLOAD_ERROR" and words in frames[-1]["error"]


async def test_pause_stops_reading_then_resume_completes(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY[:1_500_000], rate=1_000_000)
    out = tmp_path / "f.bin"
    async with open_task(endpoints, "download") as ws:
        await start(ws, url=http.url("/f"), output=str(out))
        await progress_past(ws, 100_000)
        await ws.send(dump(Pause()))
        frames = await frames_until(ws, "progress")
        while not (frames[-1]["status_text"] or "").startswith("paused at"):
            frames = await frames_until(ws, "progress")
        paused = frames[-1]["extras"]
        # Every byte written is on disk and checkpointed before it waits.
        assert paused["checkpoint"]["bytes_done"] == paused["bytes_done"] > 0
        with pytest.raises(TimeoutError):  # nothing moves while paused
            await frames_until(ws, "progress", "result", within=0.6)
        await ws.send(dump(Status()))
        assert (await frames_until(ws, "status"))[-1]["state"] == "paused"
        await ws.send(dump(Resume()))
        frames = await frames_until(ws, "result", "error")
    assert frames[-1]["type"] == "result", frames[-1]
    assert out.read_bytes() == BODY[:1_500_000]
    assert len(http.requests) == 1  # the same connection, kept open while paused


@pytest.mark.parametrize("how", ["dropped", "long pause"])
async def test_after_a_pause_a_lost_connection_is_resumed_with_range(
    endpoints: int,
    http: HTTPTestServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    """The server dropped the idle connection (the next read fails), or the pause was so long
    that it surely did (reconnect without waiting for a read timeout): same attempt, Range."""
    if how == "long pause":
        monkeypatch.setattr(transfer_module, "RECONNECT_AFTER_PAUSE", 0.1)
    http.routes["/f"] = Route(body=BODY[:1_500_000], rate=1_000_000)
    out = tmp_path / "f.bin"
    async with open_task(endpoints, "download") as ws:
        await start(ws, url=http.url("/f"), output=str(out))
        await progress_past(ws, 100_000)
        await ws.send(dump(Pause()))
        frames = await frames_until(ws, "progress")
        while not (frames[-1]["status_text"] or "").startswith("paused at"):
            frames = await frames_until(ws, "progress")
        paused_at = frames[-1]["extras"]["bytes_done"]
        if how == "dropped":
            http.drop_connections()  # the server timed out the idle connection
        await asyncio.sleep(0.3)
        await ws.send(dump(Resume()))
        frames = await frames_until(ws, "result", "error")
    assert frames[-1]["type"] == "result", frames[-1]
    assert frames[-1]["result"]["resumed_from"] == 0  # nothing came from an earlier attempt
    assert out.read_bytes() == BODY[:1_500_000]
    _, second = http.requests
    offset = int(second.headers["range"].removeprefix("bytes=").rstrip("-"))
    assert offset >= paused_at and second.headers["if-range"] == '"v1"'


async def test_cancel_mid_download_leaves_nothing(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY, rate=300_000)
    out = tmp_path / "f.bin"
    async with open_task(endpoints, "download") as ws:
        await start(ws, url=http.url("/f"), output=str(out))
        await progress_past(ws, 50_000)
        assert part(out).exists()
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "result", "error", within=5)
    assert frames[-1] == {"type": "cancelled"}
    assert not part(out).exists() and not out.exists()


async def test_two_downloads_to_one_output_never_write_its_part_at_once(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    other = make_body(1_000_000, seed=3)
    http.routes["/f"] = Route(body=BODY, rate=3_000_000)
    http.routes["/g"] = Route(body=other)
    out = tmp_path / "f.bin"
    async with (
        open_task(endpoints, "download") as first,
        open_task(endpoints, "download") as second,
    ):
        await start(first, url=http.url("/f"), output=str(out))
        await progress_past(first, 50_000)
        await start(second, url=http.url("/g"), output=str(out))
        # The .part is named after the output (a retry resumes it): the second waits.
        frame = (await frames_until(second, "progress"))[-1]
        assert frame["status_text"] == "waiting: another task is writing f.bin"
        done = await frames_until(first, "result", "error")
        assert done[-1]["type"] == "result" and done[-1]["result"]["bytes"] == len(BODY)
        after = await frames_until(second, "result", "error")
    assert after[-1]["type"] == "result" and after[-1]["result"]["resumed_from"] == 0
    assert out.read_bytes() == other and not part(out).exists()


async def test_cancel_while_the_server_is_silent_is_prompt(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    # 2 kB/s: the next chunk is seconds away; the cancel must not wait for it.
    http.routes["/f"] = Route(body=BODY, rate=2_000)
    out = tmp_path / "f.bin"
    async with open_task(endpoints, "download") as ws:
        await start(ws, url=http.url("/f"), output=str(out), timeout=60)
        await frames_until(ws, "progress")
        await asyncio.sleep(0.3)
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "result", "error", within=2)
    assert frames[-1] == {"type": "cancelled"}
    assert not part(out).exists()


@pytest.mark.parametrize("when", ["body stalls", "no answer yet"])
async def test_a_cancel_cuts_a_blocked_read(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, when: str
) -> None:
    # The exchange runs in a thread blocked in recv(): a cancel must shut the socket down (it
    # is known from the connect, before any answer), not wait a minute for the read timeout.
    stalled = when == "body stalls"
    http.routes["/f"] = Route(
        body=BODY, stall_after=100_000 if stalled else None, silent=not stalled
    )
    out = tmp_path / "f.bin"
    async with open_task(endpoints, "download") as ws:
        await start(ws, url=http.url("/f"), output=str(out), timeout=60)
        if stalled:
            await progress_past(ws, 100_000 - 1)
        else:
            await frames_until(ws, "progress")
            for _ in range(500):  # the request reached the server
                if http.requests:
                    break
                await asyncio.sleep(0.01)
        t0 = time.monotonic()
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "result", "error", within=3)
    assert frames[-1] == {"type": "cancelled"}
    assert time.monotonic() - t0 < 2
    assert not part(out).exists() and not out.exists()


async def test_kill_9_of_the_whole_server_then_resume_from_the_disk(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/f"] = Route(body=BODY, rate=1_000_000)
    out = tmp_path / "f.bin"
    server, port = await server_process(tmp_path)
    checkpoint: dict[str, Any] = {"bytes_done": 0}
    try:
        async with open_task(port, "download") as ws:
            await start(ws, url=http.url("/f"), output=str(out))
            while checkpoint["bytes_done"] == 0:
                frame = await progress_past(ws, 0)
                checkpoint = frame["extras"].get("checkpoint", checkpoint)
            os.kill(server.pid, signal.SIGKILL)
            await asyncio.to_thread(server.wait, 10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
        server.stdout.close()
    assert server.returncode == -signal.SIGKILL
    assert part(out).stat().st_size >= checkpoint["bytes_done"] > 0
    assert not out.exists()

    http.routes["/f"].rate = None
    frames = await download(endpoints, url=http.url("/f"), output=str(out), resume=checkpoint)
    assert frames[-1]["type"] == "result", frames[-1]
    assert frames[-1]["result"]["resumed_from"] == checkpoint["bytes_done"]
    assert out.read_bytes() == BODY and not part(out).exists()
    assert http.requests[-1].headers["range"] == f"bytes={checkpoint['bytes_done']}-"


async def test_a_server_shutdown_keeps_the_part_for_the_next_attempt(
    http: HTTPTestServer, tmp_path: Path
) -> None:
    """Closing the server (SIGTERM, app quit) is not the user's cancel: the bytes stay."""
    http.routes["/f"] = Route(body=BODY, rate=1_000_000)
    out = tmp_path / "f.bin"
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()
    try:
        async with open_task(port, "download") as ws:
            await start(ws, url=http.url("/f"), output=str(out))
            await progress_past(ws, 200_000)
            await srv.close()
    finally:
        await srv.close()
    assert part(out).stat().st_size > 0 and not out.exists()


async def test_a_disk_that_fills_mid_download_pauses_it_keeping_every_byte(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    """The .part on a small filesystem of its own (tmpfs: root writes past no size), filled
    by another file while the body comes: the download asks for a pause saying why, with a
    checkpoint of exactly the bytes in the .part; space given back and the task resumed, it
    goes on with Range from there and the file is whole (before: it failed NO_SPACE, and a
    retry was the user's to think of)."""
    http.routes["/f"] = Route(body=BODY, rate=1_000_000)
    with small_disk(tmp_path / "disk", "4m") as disk:
        out = disk / "f.bin"
        async with open_task(endpoints, "download") as ws:
            await start(ws, url=http.url("/f"), output=str(out))
            await progress_past(ws, 300_000)
            ballast = await asyncio.to_thread(fill, disk)
            frames = await frames_until(ws, "pause_request", "result", "error", within=30)
            asked = frames[-1]
            assert asked["type"] == "pause_request", asked
            assert "the disk is full" in asked["reason"] and "resume" in asked["reason"]
            kept = checkpoints(frames)[-1]["bytes_done"]
            assert 300_000 < kept < len(BODY)
            assert part(out).read_bytes() == BODY[:kept]
            with pytest.raises(TimeoutError):  # it waits: nothing more is read
                await frames_until(ws, "result", "error", within=1.0)
            ballast.unlink()
            await ws.send(dump(Resume()))
            frames = await frames_until(ws, "result", "error", within=30)
        assert frames[-1]["type"] == "result", frames[-1]
        assert out.read_bytes() == BODY
        assert http.requests[-1].headers.get("range") == f"bytes={kept}-"
