"""``/tasks/download_site`` for real: yt-dlp in a child process behind a real endpoints server
on 127.0.0.1:0, against a real local HTTP server (there is no internet here): yt-dlp's generic
extractor takes a direct media URL, an HTML page with a ``<video>`` tag, and an HLS playlist
with separate video and audio (downloaded both, then merged by the bundled ffmpeg). After every
server test: no job process is left behind."""

from __future__ import annotations

import asyncio
import io
import itertools
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import psutil
import pytest
from yt_dlp.networking import Response
from yt_dlp.networking.exceptions import HTTPError, TransportError
from yt_dlp.utils import (
    ContentTooShortError,
    DownloadError,
    ExtractorError,
    PostProcessingError,
    UnsupportedError,
)

from python_endpoints.jobs import httpfacts, site
from python_endpoints.jobs.site import ProgressMapper, temp_files
from python_endpoints.params import SiteDownloadParams
from python_endpoints.protocol import Cancel, Pause, Resume, dump
from python_endpoints.serving.child import JobFailed
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, running_child, start
from tests.support.clips import SampleCache, ffmpeg_processes, media_summary, run_job
from tests.support.httpserver import HTTPTestServer, Route
from tests.support.process_table import assert_no_job_process_left

NAME = "download_site"


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real 3 s MP4 (H.264 + AAC), ~330 kB."""
    samples = SampleCache(tmp_path_factory.mktemp("site-samples"))
    return samples.get("mp4", 3.0).read_bytes()


@pytest.fixture(scope="module")
def hls(tmp_path_factory: pytest.TempPathFactory, clip: bytes) -> dict[str, bytes]:
    """The clip as HLS with separate video and audio renditions: yt-dlp picks both, then
    merges them with ffmpeg."""
    folder = tmp_path_factory.mktemp("hls")
    source = folder / "clip.mp4"
    source.write_bytes(clip)
    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    for kind, stream in (("video", "0:v"), ("audio", "0:a")):
        args = [ffmpeg, "-nostdin", "-y", "-loglevel", "error", "-i", str(source), "-map", stream]
        args += ["-c", "copy", "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod"]
        args += [
            "-hls_segment_filename",
            str(folder / f"{kind}%d.ts"),
            str(folder / f"{kind}.m3u8"),
        ]
        subprocess.run(
            args,
            check=True,
            capture_output=True,
            timeout=60,
        )
    (folder / "master.m3u8").write_text(
        "#EXTM3U\n"
        '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",LANGUAGE="en",DEFAULT=YES,'
        'AUTOSELECT=YES,URI="audio.m3u8"\n'
        '#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=320x240,CODECS="avc1.640015,mp4a.40.2",'
        'AUDIO="aud"\n'
        "video.m3u8\n"
    )
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix in (".m3u8", ".ts")}


Served = tuple[EndpointServer, int]


@pytest.fixture
async def endpoints(tmp_path: Path) -> AsyncIterator[Served]:
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()
    yield srv, port
    await srv.close()
    await assert_no_job_process_left()
    assert ffmpeg_processes(str(tmp_path)) == []


async def run(endpoints: Served, within: float = 60, **params: Any) -> list[dict[str, Any]]:
    """Run one site download to its last frame; return every frame."""
    async with open_task(endpoints[1], NAME) as ws:
        await start(ws, **params)
        return await frames_until(ws, "result", "error", "cancelled", within=within)


def leftovers(output: Path) -> list[str]:
    return sorted(p.name for p in temp_files(output, resumable=True))


def page(title: str, *videos: str) -> Route:
    tags = "".join(f'<video src="{v}"></video>' for v in videos)
    body = f"<html><head><title>{title}</title></head><body>{tags}</body></html>"
    return Route(body=body.encode(), content_type="text/html; charset=utf-8")


# --- the pure parts ---------------------------------------------------------------------------


def test_params_take_http_urls_and_absolute_outputs() -> None:
    p = SiteDownloadParams(url="https://example.com/watch?v=1", output="/m/v.mkv")
    assert p.format == "bestvideo*+bestaudio/best" and p.keep_free_bytes == 256 << 20
    assert p.max_bytes is None and p.proxy is None and p.ffmpeg is None
    for bad in (
        {"url": "ftp://example.com/v.mp4", "output": "/m/v.mkv"},
        {"url": "https://example.com/v", "output": "v.mkv"},
        {"url": "https://example.com/v", "output": "/m/v.mkv", "playlist": True},
        {"url": "https://example.com/v", "output": "/m/v.mkv", "max_bytes": 0},
    ):
        with pytest.raises(ValueError):
            SiteDownloadParams.model_validate(bad)


def test_yt_dlp_missing_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yt_dlp", None)  # `import yt_dlp` raises ImportError
    monkeypatch.setenv("YTDLP_NO_PLUGINS", "1")  # what the job sets in its own process
    with pytest.raises(JobFailed) as info:
        site.load_yt_dlp()
    assert info.value.error_type == "UNSUPPORTED_MEDIA"
    assert str(info.value) == (
        "site downloads need the optional yt-dlp package: pip install 'fredica[sites]'"
    )
    with pytest.raises(JobFailed, match=r"fredica\[sites\]"):
        run_job(site.site_download_job, {"url": "https://example.com/v", "output": "/m/v.mkv"})


def test_text_formats_match_the_plain_download() -> None:
    # One implementation (python_endpoints.jobs.text) serves both downloads.
    assert site.format_bytes is httpfacts.format_bytes
    for n in (0, 999, 1_000, 12_345, 40_000_000, 1_500_000_000, 7e12, 3e15):
        assert site.format_bytes(n) == httpfacts.format_bytes(n)
    for s in (0, 0.2, 6, 59.5, 125, 700, 3600, 7260):
        assert site.format_duration(s) == httpfacts.format_duration(s)


def test_temporary_names_and_what_a_retry_continues_from(tmp_path: Path) -> None:
    out = tmp_path / "50% off.mp4"
    assert site.outtmpl(out).endswith(".50%% off.mp4.fredica-part.%(ext)s")
    names = {
        ".50% off.mp4.fredica-part.mp4": False,  # made, not renamed: made again
        ".50% off.mp4.fredica-part.temp.mkv": False,  # a merge's output
        ".50% off.mp4.fredica-part.webm.part": True,
        ".50% off.mp4.fredica-part.mp4.ytdl": True,
        ".50% off.mp4.fredica-part.mp4.part-Frag3": True,
        ".50% off.mp4.fredica-part.mp4.part-Frag3.part": True,
        ".50% off.mp4.fredica-part.f137.mp4": True,  # a stream downloaded before a merge
        ".50% off.mp4.fredica-part.fhls-800.mp4.part": True,
        ".50% off.mp4.fredica-part.flv": False,
    }
    for name in [*names, "50% off.mp4", ".50% off.fredica-part.mp4", "other.part"]:
        (tmp_path / name).write_bytes(b"x")
    assert {p.name for p in temp_files(out, resumable=True)} == set(names)
    assert {p.name for p in temp_files(out, resumable=False)} == {
        n for n, keep in names.items() if not keep
    }
    assert temp_files(tmp_path / "missing" / "x.mp4", resumable=True) == []


def test_the_video_of_a_playlist_of_one() -> None:
    video = {"title": "only one", "requested_downloads": [{"filepath": "/m/.v.fredica-part.mp4"}]}
    assert site._the_video({"_type": "playlist", "entries": [video]}) is video
    assert site._the_video(video) is video


def test_progress_of_a_single_file() -> None:
    mapper = ProgressMapper()
    mapper.plan({"format_id": "mp4", "ext": "mp4"})
    assert not mapper.merging and mapper.announced_bytes is None

    def report(done: int, now: float, **more: Any) -> tuple[float, str] | None:
        status = {"status": "downloading", "downloaded_bytes": done, "info_dict": {}}
        return mapper.download({**status, "total_bytes": 40_000_000, **more}, now)

    assert report(12_300_000, 0.0, speed=5_100_000, eta=5.2) == (
        pytest.approx(30.44, abs=0.01),
        "downloading 12.3 MB of 40.0 MB, 5.1 MB/s, 6 s left",
    )
    assert report(13_000_000, 0.1) is None  # at most five a second
    assert report(14_000_000, 0.3) is not None
    assert mapper.expected_bytes == 40_000_000
    done = mapper.download(
        {"status": "finished", "downloaded_bytes": 40_000_000, "total_bytes": 40_000_000},
        0.31,  # the end is always said
    )
    assert done is not None and done[0] == site.SINGLE_SHARE
    estimated = ProgressMapper().download(
        {"status": "downloading", "downloaded_bytes": 1_000, "total_bytes_estimate": 4_000}, 0
    )
    assert estimated is not None and estimated[1] == "downloading 1.0 kB of ~4.0 kB"


def test_progress_of_streams_merged_afterwards() -> None:
    mapper = ProgressMapper()
    video = {"format_id": "137", "vcodec": "avc1", "acodec": "none", "filesize": 9_000}
    audio = {"format_id": "140", "vcodec": "none", "acodec": "mp4a", "filesize": 1_000}
    mapper.plan({"format_id": "137+140", "requested_formats": [video, audio]})
    assert mapper.merging and mapper.announced_bytes == 10_000

    def report(fmt: dict[str, Any], done: int, now: float, **more: Any) -> Any:
        status = {"status": "downloading", "downloaded_bytes": done, "info_dict": fmt}
        return mapper.download({**status, **more}, now)

    half = report(video, 4_500, 0.0, total_bytes=9_000)
    assert half == (pytest.approx(95 * 0.45), "downloading video 1 of 2: 4.5 kB of 9.0 kB")
    audio_half = report(audio, 500, 1.0, total_bytes=1_000)
    assert audio_half[0] == pytest.approx(95 * 0.95)
    assert audio_half[1].startswith("downloading audio 2 of 2: 500 B of 1.0 kB")
    assert report(video, 1, 2.0, total_bytes=9_000)[0] == audio_half[0]  # never back
    assert mapper.postprocess({"status": "started", "postprocessor": "Merger"}) == (
        site.MERGE_SHARE,
        "merging video and audio",
    )
    assert mapper.postprocess({"status": "started", "postprocessor": "MoveFiles"}) is None
    assert mapper.postprocess({"status": "finished", "postprocessor": "Merger"}) is None

    # Sizes unknown: a video stream weighs nine times an audio one; fragments say how far.
    unknown = ProgressMapper()
    unknown.plan({"requested_formats": [{**video, "filesize": None}, {**audio, "filesize": None}]})
    frag = unknown.download(
        {"status": "downloading", "info_dict": video, "fragment_index": 1, "fragment_count": 4},
        0,
    )
    assert frag is not None and frag[0] == pytest.approx(95 * 0.9 * 0.25, abs=0.01)


def _http_error(status: int) -> HTTPError:
    return HTTPError(Response(io.BytesIO(b""), "http://x/", {}, status=status))


def _wrapped(cause: BaseException, message: str = "ERROR: boom") -> DownloadError:
    """As yt-dlp raises: a DownloadError whose exc_info holds what went wrong."""
    return DownloadError(message, (type(cause), cause, None))


@pytest.mark.parametrize(
    ("cause", "error_type"),
    [
        (_http_error(404), "HTTP_ERROR"),
        (_http_error(403), "HTTP_ERROR"),
        (_http_error(503), "NETWORK_ERROR"),
        (_http_error(429), "NETWORK_ERROR"),
        (ExtractorError("Unable to download webpage", cause=_http_error(410)), "HTTP_ERROR"),
        (TransportError("[Errno 111] Connection refused"), "NETWORK_ERROR"),
        (ContentTooShortError(10, 20), "NETWORK_ERROR"),
        (UnsupportedError("https://example.com/"), "UNSUPPORTED_MEDIA"),
        (ExtractorError("Requested format is not available", expected=True), "UNSUPPORTED_MEDIA"),
        (ExtractorError("Private video. Sign in", expected=True), "HTTP_ERROR"),
        (ExtractorError("Unable to extract title"), "EXECUTOR_ERROR"),
        (PostProcessingError("Conversion failed!"), "EXECUTOR_ERROR"),
        (OSError(28, "No space left on device"), "NO_SPACE"),
        (PermissionError(13, "Permission denied"), "IO_ERROR"),
    ],
)
def test_yt_dlp_errors_are_classified(cause: BaseException, error_type: str) -> None:
    assert site.classify(_wrapped(cause)) == error_type


def test_a_download_that_gave_up_is_a_network_error() -> None:
    # After its retries yt-dlp raises with its message only, no exception attached.
    gave_up = DownloadError(
        "ERROR: \r[download] Got error: Downloaded 5000 bytes, expected 328356 bytes. "
        "Giving up after 10 retries",
        (None, None, None),
    )
    assert site.classify(gave_up) == "NETWORK_ERROR"
    assert site.shorten(str(gave_up)).startswith("[download] Got error: Downloaded 5000 bytes")


def test_messages_are_yt_dlps_own_words_shortened() -> None:
    raw = (
        "\x1b[0;31mERROR:\x1b[0m [generic] missing: Unable to download webpage: HTTP Error 404: "
        "Not Found (caused by <HTTPError 404: Not Found>)"
    )
    assert (
        site.shorten(raw)
        == "[generic] missing: Unable to download webpage: HTTP Error 404: Not Found"
    )
    plea = "ERROR: [x] 1: Unable to extract title; please report this issue on https://github..."
    assert site.shorten(plea) == "[x] 1: Unable to extract title"
    assert len(site.shorten("x" * 1000)) == site.MESSAGE_CHARS
    error = site.failure(_wrapped(_http_error(404), raw), "https://u:p@example.com/v")
    assert error.error_type == "HTTP_ERROR"
    assert str(error).startswith("downloading https://example.com/v failed: [generic] missing:")
    assert "check the URL" in str(error) and "u:p" not in str(error)


# --- the job in this process (what the child runs) -------------------------------------------


class Recorder:
    """A child's context that records the reports, and says "cancelled" once told to."""

    def __init__(self, cancel_after: int | None = None) -> None:
        self.reports: list[tuple[float, float, str]] = []
        self.cancel_after = cancel_after

    @property
    def downloading(self) -> list[tuple[float, float, str]]:
        return [r for r in self.reports if r[2].startswith("downloading")]

    @property
    def cancelled(self) -> bool:
        return self.cancel_after is not None and len(self.downloading) >= self.cancel_after

    def progress(
        self, percent: float, status_text: str | None = None, pausable: Any = None
    ) -> None:
        self.reports.append((time.monotonic(), percent, status_text or ""))


def run_here(ctx: Recorder, **params: Any) -> dict[str, Any] | None:
    return run_job(site.site_download_job, params, ctx)


@pytest.fixture
def no_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YTDLP_NO_PLUGINS", "1")  # the job sets it (in its own process)


@pytest.mark.usefixtures("no_plugins")
def test_at_most_five_reports_a_second(http: HTTPTestServer, tmp_path: Path, clip: bytes) -> None:
    http.routes["/clip.mp4"] = Route(body=clip, content_type="video/mp4", rate=300_000)
    ctx = Recorder()
    result = run_here(ctx, url=http.url("/clip.mp4"), output=str(tmp_path / "clip.mp4"))
    assert result is not None and result["bytes"] == len(clip)
    times = [t for t, _, _ in ctx.downloading][:-1]  # the last one (the end) is always said
    assert len(times) >= 3  # ~1.1 s of download
    assert all(b - a >= site.REPORT_EVERY - 0.01 for a, b in itertools.pairwise(times))


@pytest.mark.usefixtures("no_plugins")
def test_a_cancelled_job_stops_and_leaves_the_part_to_the_endpoint(
    http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    http.routes["/clip.mp4"] = Route(body=clip, content_type="video/mp4", rate=100_000)
    out = tmp_path / "clip.mp4"
    ctx = Recorder(cancel_after=1)
    started = time.monotonic()
    assert run_here(ctx, url=http.url("/clip.mp4"), output=str(out)) is None
    assert time.monotonic() - started < 2  # 3.3 s at full length
    # The endpoint decides: removed after a user's cancel, kept after an interruption.
    assert leftovers(out) == [".clip.mp4.fredica-part.mp4.part"] and not out.exists()


@pytest.mark.usefixtures("no_plugins")
def test_what_an_earlier_attempt_made_but_did_not_rename_is_made_again(
    http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    http.routes["/clip.mp4"] = Route(body=clip, content_type="video/mp4")
    out = tmp_path / "clip.mp4"
    stale = tmp_path / ".clip.mp4.fredica-part.mp4"
    stale.write_bytes(b"not the clip")  # yt-dlp would take it for done
    result = run_here(Recorder(), url=http.url("/clip.mp4"), output=str(out))
    assert result is not None and out.read_bytes() == clip and leftovers(out) == []


# --- through the endpoints server -------------------------------------------------------------


async def test_a_direct_media_url_is_downloaded_byte_for_byte(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    http.routes["/media/clip.mp4"] = Route(body=clip, content_type="video/mp4", rate=400_000)
    out = tmp_path / "library" / "clip.mp4"  # its folder is made
    frames = await run(endpoints, url=http.url("/media/clip.mp4"), output=str(out))
    assert frames[-1] == {
        "type": "result",
        "result": {
            "outputs": [str(out)],
            "bytes": len(clip),
            "title": "clip",
            "extractor": "generic",
            "url": http.url("/media/clip.mp4"),
            "duration": None,
            "ext": "mp4",
            "format": "mp4",
        },
    }
    assert out.read_bytes() == clip and leftovers(out) == []
    progress = [f for f in frames if f["type"] == "progress"]
    percents = [f["percent"] for f in progress]
    assert percents == sorted(percents) and percents[-1] == 100
    texts = [f["status_text"] for f in progress]
    assert texts[0].startswith("looking for the video at http://127.0.0.1:")
    of = f" of {site.format_bytes(len(clip))}"
    assert any(t.startswith("downloading ") and of in t for t in texts[1:-1])
    assert all(f["pausable"] == "always" for f in progress)
    # yt-dlp kept to itself: no cache folder, no config, nothing written beside the output.
    assert sorted(p.name for p in out.parent.iterdir()) == ["clip.mp4"]


async def test_a_page_with_a_video_tag(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    http.routes["/v/1.mp4"] = Route(body=clip, content_type="video/mp4")
    http.routes["/watch"] = page("A day at the sea", "/v/1.mp4")
    out = tmp_path / "sea.mkv"
    frames = await run(endpoints, url=http.url("/watch"), output=str(out))
    assert frames[-1]["type"] == "result", frames[-1]
    result = frames[-1]["result"]
    assert result["title"].startswith("A day at the sea") and result["url"] == http.url("/watch")
    assert result["ext"] == "mp4"  # a single file is kept as served, whatever the suffix
    assert out.read_bytes() == clip and leftovers(out) == []


async def test_separate_video_and_audio_are_merged(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, hls: dict[str, bytes]
) -> None:
    for name, body in hls.items():
        kind = "application/vnd.apple.mpegurl" if name.endswith(".m3u8") else "video/mp2t"
        http.routes[f"/hls/{name}"] = Route(body=body, content_type=kind)
    out = tmp_path / "merged.mkv"
    frames = await run(endpoints, url=http.url("/hls/master.m3u8"), output=str(out))
    assert frames[-1]["type"] == "result", frames[-1]
    result = frames[-1]["result"]
    assert result["ext"] == "mkv" and "+" in result["format"]
    assert result["duration"] == pytest.approx(3, abs=0.5)
    summary = media_summary(out)
    assert summary["streams"] == {"video": ["h264"], "audio": ["aac"]}
    assert summary["duration"] == pytest.approx(3, abs=0.5)
    texts = [f["status_text"] for f in frames if f["type"] == "progress"]
    assert any(t.startswith("downloading video 1 of 2:") for t in texts)
    assert any(t.startswith("downloading audio 2 of 2:") for t in texts)
    assert "merging video and audio" in texts
    percents = [f["percent"] for f in frames if f["type"] == "progress"]
    assert percents == sorted(percents)
    assert leftovers(out) == []


async def test_a_404_is_an_http_error_and_leaves_nothing(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path
) -> None:
    out = tmp_path / "gone.mp4"
    frames = await run(endpoints, url=http.url("/missing.mp4"), output=str(out))
    error = frames[-1]
    assert error["type"] == "error" and error["error_type"] == "HTTP_ERROR"
    assert "HTTP Error 404" in error["error"] and "check the URL" in error["error"]
    assert not out.exists() and leftovers(out) == []


async def test_a_missing_video_behind_a_page_is_an_http_error_too(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/watch"] = page("Gone", "/v/none.mp4")
    out = tmp_path / "gone.mp4"
    frames = await run(endpoints, url=http.url("/watch"), output=str(out))
    assert frames[-1]["error_type"] == "HTTP_ERROR", frames[-1]
    assert not out.exists() and leftovers(out) == []


async def test_a_page_without_video_is_unsupported(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path
) -> None:
    http.routes["/about"] = page("About us")
    frames = await run(endpoints, url=http.url("/about"), output=str(tmp_path / "a.mp4"))
    assert frames[-1]["error_type"] == "UNSUPPORTED_MEDIA", frames[-1]
    assert "Unsupported URL" in frames[-1]["error"]


async def test_a_playlist_is_refused(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    http.routes["/v/1.mp4"] = Route(body=clip, content_type="video/mp4")
    http.routes["/v/2.mp4"] = Route(body=clip, content_type="video/mp4")
    http.routes["/list"] = page("Two clips", "/v/1.mp4", "/v/2.mp4")
    out = tmp_path / "list.mp4"
    frames = await run(endpoints, url=http.url("/list"), output=str(out))
    assert frames[-1]["error_type"] == "UNSUPPORTED_MEDIA", frames[-1]
    assert "a playlist of 2 videos" in frames[-1]["error"]
    assert not out.exists() and leftovers(out) == []
    assert all(not r.path.startswith("/v/") for r in http.requests)  # refused before a byte


async def test_max_bytes_is_enforced(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    http.routes["/clip.mp4"] = Route(body=clip, content_type="video/mp4")
    out = tmp_path / "clip.mp4"
    frames = await run(endpoints, url=http.url("/clip.mp4"), output=str(out), max_bytes=100_000)
    assert frames[-1]["error_type"] == "UNSUPPORTED_MEDIA", frames[-1]
    assert "max_bytes" in frames[-1]["error"]
    assert not out.exists() and leftovers(out) == []


async def test_not_enough_space_is_said(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    http.routes["/clip.mp4"] = Route(body=clip, content_type="video/mp4")
    out = tmp_path / "clip.mp4"
    frames = await run(
        endpoints, url=http.url("/clip.mp4"), output=str(out), keep_free_bytes=1 << 60
    )
    assert frames[-1]["error_type"] == "NO_SPACE", frames[-1]
    assert "must stay free" in frames[-1]["error"] and not out.exists()


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"url": "ftp://example.com/clip.mp4"}, "only http and https"),
        ({"url": "https://example.com/v", "output": "relative.mp4"}, "absolute"),
        ({"url": "https://example.com/v", "cookies": "x"}, "cookies"),
    ],
)
async def test_invalid_params_are_a_payload_error(
    endpoints: Served, tmp_path: Path, params: dict[str, Any], words: str
) -> None:
    frames = await run(endpoints, **{"output": str(tmp_path / "v.mp4"), **params})
    assert frames[-1]["error_type"] == "PAYLOAD_ERROR" and words in frames[-1]["error"]


async def test_cancel_mid_download_leaves_nothing(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    http.routes["/clip.mp4"] = Route(body=clip, content_type="video/mp4", rate=50_000)
    out = tmp_path / "clip.mp4"
    async with open_task(endpoints[1], NAME) as ws:
        await start(ws, url=http.url("/clip.mp4"), output=str(out))
        frames = await frames_until(ws, "progress")
        while not frames[-1]["status_text"].startswith("downloading"):
            frames = await frames_until(ws, "progress")
        child = running_child(endpoints[0])
        assert leftovers(out) == [".clip.mp4.fredica-part.mp4.part"]
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "result", "error", within=10)
    assert frames[-1] == {"type": "cancelled"}
    assert not out.exists() and leftovers(out) == []
    child.wait(timeout=10)  # the job's process is gone (the fixture checks every one)


async def test_pause_suspends_then_resume_completes(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    http.routes["/clip.mp4"] = Route(body=clip, content_type="video/mp4", rate=200_000)
    out = tmp_path / "clip.mp4"
    async with open_task(endpoints[1], NAME) as ws:
        await start(ws, url=http.url("/clip.mp4"), output=str(out))
        frames = await frames_until(ws, "progress")
        while not frames[-1]["status_text"].startswith("downloading"):
            frames = await frames_until(ws, "progress")
        child = running_child(endpoints[0])
        await ws.send(dump(Pause()))
        await asyncio.sleep(0.3)
        assert child.status() == psutil.STATUS_STOPPED
        with pytest.raises(TimeoutError):  # drain what was in flight; then nothing moves
            await frames_until(ws, "result", "error", within=1.0)
        await ws.send(dump(Resume()))
        frames = await frames_until(ws, "result", "error", within=30)
    assert frames[-1]["type"] == "result", frames[-1]
    assert out.read_bytes() == clip


async def test_an_interrupted_download_is_resumed_with_range(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    """The client went away (the app stopped): the .part stays, and the next attempt continues
    it with a Range request instead of starting over."""
    http.routes["/clip.mp4"] = Route(body=clip, content_type="video/mp4", rate=100_000)
    out = tmp_path / "clip.mp4"
    part = tmp_path / ".clip.mp4.fredica-part.mp4.part"
    async with open_task(endpoints[1], NAME) as ws:
        await start(ws, url=http.url("/clip.mp4"), output=str(out))
        frames = await frames_until(ws, "progress")
        while not frames[-1]["status_text"].startswith("downloading"):
            frames = await frames_until(ws, "progress")
        await asyncio.sleep(0.5)
    for _ in range(100):  # the session ends once the job is stopped
        if not endpoints[0].sessions:
            break
        await asyncio.sleep(0.1)
    assert leftovers(out) == [part.name] and not out.exists()
    kept = part.stat().st_size
    assert 0 < kept < len(clip)
    http.routes["/clip.mp4"].rate = None
    frames = await run(endpoints, url=http.url("/clip.mp4"), output=str(out))
    assert frames[-1]["type"] == "result", frames[-1]
    assert out.read_bytes() == clip and leftovers(out) == []
    ranges = [r.headers.get("range") for r in http.requests if "range" in r.headers]
    assert ranges == [f"bytes={kept}-"]


async def test_a_network_failure_keeps_the_part_for_a_retry(
    endpoints: Served, http: HTTPTestServer, tmp_path: Path, clip: bytes
) -> None:
    # Every response is cut after 5 kB: yt-dlp retries (each time from where it got), then
    # gives up; what it got stays for the next attempt.
    http.routes["/clip.mp4"] = Route(
        body=clip, content_type="video/mp4", drop_after=5_000, drops=None
    )
    out = tmp_path / "clip.mp4"
    frames = await run(endpoints, url=http.url("/clip.mp4"), output=str(out))
    assert frames[-1]["error_type"] == "NETWORK_ERROR", frames[-1]
    # What is kept, not whether the task is retried (the engine's to say).
    assert frames[-1]["error"].endswith(
        "; check the network connection; what was downloaded so far is kept, and a retry "
        "continues from it"
    ), frames[-1]["error"]
    [part] = leftovers(out)
    assert part.endswith(".part") and not out.exists()
    http.routes["/clip.mp4"].drop_after = None
    frames = await run(endpoints, url=http.url("/clip.mp4"), output=str(out))
    assert frames[-1]["type"] == "result", frames[-1]
    assert out.read_bytes() == clip and leftovers(out) == []
