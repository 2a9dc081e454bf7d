"""The endpoints server as a child process of the app.

Started on first use with a fresh token (passed in the environment, never written to disk;
the server takes it out of its environment at once, so its jobs' processes do not inherit it),
bound to 127.0.0.1 on a free port that it announces on its stdout; it exits when the app dies.
What its jobs may do is the app's to decide, from its settings: where they write (the library
and models folders), the ffmpeg they run, and the environment variable ANALYZE may read an API
key from.
If it dies, the next task that needs it starts a new one: the tasks that were running on it
lost their connection and failed with the retryable ``CONNECTION_LOST``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from fredica_app.entry import endpoints_server_argv
from workers.executors.websocket import EndpointsAddress

log = logging.getLogger(__name__)

TOKEN_ENV = "FREDICA_ENDPOINTS_TOKEN"


class EndpointsProcess:
    def __init__(
        self,
        host: str = "127.0.0.1",
        start_timeout: float = 60.0,
        write_roots: Sequence[Path] = (),
        ffmpeg: Path | None = None,
        api_key_envs: Sequence[str] = (),
        log_file: Path | None = None,
    ) -> None:
        self.host = host
        #: Where the server and its jobs log (None: warnings to stderr only).
        self.log_file = log_file
        #: Where its jobs may write (the library folder); nowhere else.
        self.write_roots = list(write_roots)
        #: The ffmpeg its jobs run (None: the bundled one); a job cannot name another.
        self.ffmpeg = ffmpeg
        #: The environment variables a job may read an API key from.
        self.api_key_envs = list(api_key_envs)
        self.start_timeout = start_timeout
        #: Endpoints whose child the server starts at once (``--warm``): those the queued
        #: work is about to use.
        self.warm: list[str] = []
        self.process: asyncio.subprocess.Process | None = None
        self._address: EndpointsAddress | None = None
        self._lock = asyncio.Lock()
        self.starts = 0

    async def address(self) -> EndpointsAddress:
        """The running server's address, starting (or restarting) it when needed."""
        async with self._lock:
            if self.process is None or self.process.returncode is not None:
                if self.process is not None:
                    log.warning(
                        "the endpoints server exited (code %s); starting a new one",
                        self.process.returncode,
                    )
                await self._start()
            assert self._address is not None
            return self._address

    async def _start(self) -> None:
        token = secrets.token_urlsafe(32)
        env = {**os.environ, TOKEN_ENV: token}
        options: list[str] = []
        for root in self.write_roots:
            root.mkdir(parents=True, exist_ok=True)
            options += ["--allow-write", str(root)]
        if self.ffmpeg is not None:
            options += ["--ffmpeg", str(self.ffmpeg)]
        for name in self.api_key_envs:
            options += ["--allow-key-env", name]
        if self.log_file is not None:
            options += ["--log-file", str(self.log_file)]
        for name in self.warm:
            options += ["--warm", name]
        self.process = await asyncio.create_subprocess_exec(
            *endpoints_server_argv(),
            "--host",
            self.host,
            *options,
            "--parent-pid",
            str(os.getpid()),
            stdout=asyncio.subprocess.PIPE,
            env=env,
            # Its own session: a terminal's Ctrl-C signals the whole foreground process group,
            # and what a Ctrl-C does to jobs (pause them) is for the app to decide. Its job
            # children and their ffmpeg are in this session too.
            start_new_session=True,
        )
        assert self.process.stdout is not None
        try:
            line = await asyncio.wait_for(self.process.stdout.readline(), self.start_timeout)
            port = int(json.loads(line)["port"])
        except (TimeoutError, ValueError, KeyError, TypeError) as exc:
            await self.stop()
            raise OSError(f"the endpoints server did not start: {exc!r}") from None
        self._address = EndpointsAddress(self.host, port, token)
        self.starts += 1
        log.info("started the endpoints server (pid %d, port %d)", self.process.pid, port)

    async def stop(self) -> None:
        process, self.process = self.process, None
        self._address = None
        if process is None or process.returncode is not None:
            return
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
