"""The chaos run's workload: what keeps a data directory busy while its processes are killed.

Kinds of run, in turn (``Workload.top_up`` keeps a number of them unfinished):

- ``dag``: 8 tasks of NOOP, SLEEP (in the engine's process, checkpointing) and
  SLEEP_SUBPROCESS (in a child of the endpoints server), some chained;
- ``remux``: TRANSCODE_MP4 of a small clip, stream-copied;
- ``segmented``: TRANSCODE_MP4 re-encoded in one-second segments (resumed from them);
- ``audio``: ``fredica add --template extract_audio`` (probe, then ffmpeg to WAV);
- ``download``: ``fredica add URL --template download_transcode`` from a local HTTP server
  that drops connections and stalls at random (:class:`FlakyServer`);
- ``speech``: ``fredica add --template subtitles`` of a spoken clip (audio, Whisper, SRT);
- and a watch folder being filled: :meth:`Workload.fill_watch` writes a clip into it slowly
  while ``fredica watch-folders`` runs (its settling must wait for the end of the file).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

EXE = str(Path(sys.executable).parent / "fredica")

#: Retries of the tasks whose work runs in a child, in the specs the bench writes itself: a
#: killed child is a failed attempt (``SUBPROCESS_CRASHED``), and the chaos kills children far
#: more often than a machine does. (The templates' own jobs keep their one retry: a run they
#: fail that way is retried by hand, as its user would, and counted.)
CHILD_RETRIES = 8

#: One kind per slot, in turn: the DAGs most.
KINDS = ("dag", "remux", "dag", "audio", "dag", "segmented", "dag", "download", "dag", "speech")


class FlakyServer:
    """A local HTTP server of the clips, honouring ``Range``, that drops a connection part-way
    through its body or stalls before it, at random (seeded)."""

    DROP = 0.3
    STALL = 0.2

    def __init__(self, folder: Path, seed: int) -> None:
        self.folder = folder
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.tally: Counter[str] = Counter()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                # /<any>/<name>: many URLs (one material each) for the few clips.
                path = server.folder / Path(self.path).name
                if not path.is_file():
                    self.send_error(404)
                    return
                body = path.read_bytes()
                start = 0
                header = self.headers.get("Range", "")
                if header.startswith("bytes="):
                    start = min(int(header[6:].split("-")[0] or 0), len(body))
                with server.lock:
                    roll = server.rng.random()
                    pause = server.rng.uniform(0.5, 3.0)
                if roll < server.STALL:
                    server.count("stall")
                    time.sleep(pause)
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body) - start))
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Type", "video/x-matroska")
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                part = body[start:]
                if server.STALL <= roll < server.STALL + server.DROP and len(part) > 2:
                    server.count("drop")
                    self.wfile.write(part[: len(part) // 2])
                    self.wfile.flush()
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                server.count("served")
                self.wfile.write(part)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client killed mid-body (the chaos's doing): nothing to say

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def count(self, what: str) -> None:
        with self.lock:
            self.tally[what] += 1

    def __enter__(self) -> FlakyServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def dag(rng: random.Random) -> list[dict[str, Any]]:
    """A DAG of 8 tasks: a NOOP root, six sleeps (in the engine's process, or in a child of
    the endpoints server), some chained, and a NOOP join."""
    tasks: list[dict[str, Any]] = [{"key": "root", "type": "NOOP"}]
    for i in range(6):
        kind = rng.choice(["SLEEP", "SLEEP", "SLEEP_SUBPROCESS"])
        seconds = round(rng.uniform(0.5, 3.0), 2)
        deps = ["root"] + ([f"t{i - 1}"] if i and rng.random() < 0.5 else [])
        task = {"key": f"t{i}", "type": kind, "payload": {"seconds": seconds}, "depends_on": deps}
        if kind == "SLEEP_SUBPROCESS":
            task["max_retries"] = CHILD_RETRIES
        tasks.append(task)
    tasks.append({"key": "join", "type": "NOOP", "depends_on": [f"t{i}" for i in range(6)]})
    return tasks


def transcode(clip: Path, out: Path, **more: Any) -> list[dict[str, Any]]:
    payload = {"input": str(clip), "output": str(out), **more}
    return [
        {"key": "mp4", "type": "TRANSCODE_MP4", "payload": payload, "max_retries": CHILD_RETRIES}
    ]


class Workload:
    """Submits runs of every kind into the data directory ``data``, and fills its watch
    folder; remembers what it submitted, for the checks."""

    def __init__(self, data: Path, rng: random.Random, clips: int) -> None:
        from python_endpoints.jobs.sample import make_sample

        self.data = data
        self.rng = rng
        self.media = data / "library" / "chaos"  # inside the library: where jobs may write
        self.media.mkdir(parents=True)
        self.sources = [
            make_sample(self.media / f"clip{i}.mkv", 2.0, kind="mkv", size=(160, 120))
            for i in range(clips)
        ]
        self.long = make_sample(self.media / "long.mkv", 4.0, kind="mkv", size=(160, 120))
        self.spoken = make_sample(self.media / "spoken.mkv", 6.0, size=(160, 120), speech=True)
        self.served = data.parent / "served"
        self.served.mkdir()
        for clip in self.sources:
            shutil.copy(clip, self.served / clip.name)
        self.watch = data.parent / "watch"
        self.watch.mkdir()
        self.imports = data.parent / "imports"  # files `add` takes in (one material each)
        self.imports.mkdir()
        self.run_ids: list[str] = []
        self.kinds: Counter[str] = Counter()
        self.watch_files: list[Path] = []
        self.server: FlakyServer | None = None

    def _submit(self, tasks: list[dict[str, Any]]) -> list[str]:
        path = self.data.parent / "spec.json"
        path.write_text(json.dumps({"tasks": tasks}))
        return [str(self._cli("submit", str(path), "--json")["run_id"])]

    def _add(self, item: str, template: str) -> list[str]:
        return [str(r["run_id"]) for r in self._cli("add", item, "--template", template, "--json")]

    def _cli(self, *args: str) -> Any:
        done = subprocess.run(
            [EXE, "--data-dir", str(self.data), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise SystemExit(f"fredica {args[0]} failed: {done.stderr}")
        return json.loads(done.stdout)

    def _copy(self, clip: Path, folder: Path) -> Path:
        n = self.kinds.total()
        out = folder / f"{clip.stem}-{n}{clip.suffix}"
        shutil.copy(clip, out)
        return out

    def submit(self, kind: str) -> None:
        n = self.kinds.total()
        clip = self.sources[n % len(self.sources)]
        if kind == "dag":
            ids = self._submit(dag(self.rng))
        elif kind == "remux":
            ids = self._submit(transcode(clip, self.media / f"remux{n}.mp4"))
        elif kind == "segmented":
            out = self.media / f"segmented{n}.mp4"
            ids = self._submit(
                transcode(self.long, out, mode="reencode", segment_seconds=1.0, preset="ultrafast")
            )
        elif kind == "audio":
            ids = self._add(str(self._copy(clip, self.imports)), "extract_audio")
        elif kind == "download":
            assert self.server is not None
            url = f"http://127.0.0.1:{self.server.port}/d{n}/{clip.name}"
            ids = self._add(url, "download_transcode")
        elif kind == "speech":
            ids = self._add(str(self._copy(self.spoken, self.imports)), "subtitles")
        else:
            raise ValueError(kind)
        self.kinds[kind] += 1
        self.run_ids += ids

    def top_up(self, keep: int, open_runs: int) -> None:
        """Submit runs until ``keep`` are unfinished (``open_runs`` are now)."""
        for _ in range(keep - open_runs):
            self.submit(KINDS[self.kinds.total() % len(KINDS)])

    def fill_watch(self, seconds: float) -> threading.Thread:
        """Write a new clip into the watch folder in pieces over ``seconds`` (a copy being
        made), in a thread; returns it. Each lasts a little longer than the one before: the
        folder takes in a content once (a copy of a file it took in is not submitted again)."""
        from python_endpoints.jobs.sample import make_sample

        n = len(self.watch_files)
        staged = make_sample(
            self.data.parent / "staging" / f"w{n}.mkv", 1.0 + 0.01 * n, size=(160, 120)
        )
        out = self.watch / staged.name
        self.watch_files.append(out)
        body = staged.read_bytes()

        def write() -> None:
            pieces = 4
            with open(out, "wb") as f:
                for i in range(pieces):
                    f.write(body[i * len(body) // pieces : (i + 1) * len(body) // pieces])
                    f.flush()
                    time.sleep(seconds / pieces)

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        return thread
