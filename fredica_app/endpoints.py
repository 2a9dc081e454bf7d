"""The endpoints server as a child process of the app.

Started on first use with a fresh token (passed on its standard input with its options: never
written to disk, never in its environment, which ``/proc/PID/environ`` shows to whoever may
read it and its jobs would inherit),
bound to 127.0.0.1 on a free port that it announces on its stdout; it exits when the app dies.
What its jobs may do is the app's to decide, from its settings: where they write (the library
and models folders), the ffmpeg they run, and the environment variable ANALYZE may read an API
key from.
If it dies, the next task that needs it starts a new one: the tasks that were running on it
were interrupted (``SERVER_STOPPED``), not failed, and are queued again using no retry.
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
from typing import TYPE_CHECKING

from fredica_app.frozen import endpoints_server_argv

if TYPE_CHECKING:
    from workers.executors.websocket import EndpointsAddress

log = logging.getLogger(__name__)


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
        #: The token of a process started that waits for its options on stdin (started
        #: ahead by :meth:`prestart`, or being started); None otherwise.
        self._prestarted: str | None = None
        self._lock = asyncio.Lock()
        self.starts = 0
        #: Stops begun by :meth:`stop_soon` and not yet waited for.
        self._stopping: set[asyncio.Future[None]] = set()
        #: Readers of a server's standard output after its port (:func:`_drain`), until its
        #: end.
        self._drains: set[asyncio.Future[None]] = set()

    def configure(
        self,
        *,
        write_roots: Sequence[Path],
        ffmpeg: Path | None,
        api_key_envs: Sequence[str],
        log_file: Path | None,
    ) -> EndpointsProcess:
        """Set what its jobs may do (``__init__``'s arguments), for its next start."""
        self.write_roots = list(write_roots)
        self.ffmpeg = ffmpeg
        self.api_key_envs = list(api_key_envs)
        self.log_file = log_file
        return self

    async def prestart(self) -> None:
        """Start the server's process now, before its options are known (the app has not
        read its settings yet): its interpreter and imports, and its children's fork
        server, then run beside the app's own start. It waits for the rest of its options
        (where jobs write, the ffmpeg, ``warm``…), which the first :meth:`address` sends; the
        log file is set already. :meth:`stop` ends it."""
        async with self._lock:
            if self.process is None:
                await self._spawn()

    async def address(self) -> EndpointsAddress:
        """The running server's address, starting (or restarting) it when needed."""
        async with self._lock:
            if self._prestarted is not None and self._running():
                await self._finish_start()
            elif self._address is None or not self._running():
                if self.process is not None:
                    log.warning(
                        "the endpoints server exited (code %s); starting a new one",
                        self.process.returncode,
                    )
                await self._start()
            assert self._address is not None
            return self._address

    @property
    def serving(self) -> bool:
        """Whether the server runs with its options (not started, started ahead and waiting
        for them, or exited: False)."""
        return self._address is not None and self._running()

    def _running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def _start(self) -> None:
        """Start the server and give it its options at once."""
        await self._spawn()
        await self._finish_start()

    async def _finish_start(self) -> None:
        """Send the waiting server the rest of its options, and read its port."""
        assert self.process is not None and self.process.stdin is not None
        token, self._prestarted = self._prestarted, None
        assert token is not None
        for root in self.write_roots:
            root.mkdir(parents=True, exist_ok=True)
        options = {
            "allow_write": [str(root) for root in self.write_roots],
            "ffmpeg": None if self.ffmpeg is None else str(self.ffmpeg),
            "allow_key_env": self.api_key_envs,
            "warm": self.warm,
            "token": token,
        }
        try:
            self.process.stdin.write(json.dumps(options).encode() + b"\n")
            await self.process.stdin.drain()
            self.process.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # it exited: told below, as the port it did not announce
        await self._read_port(token)

    async def _spawn(self) -> None:
        """Start the server's process with a new token; it waits for its options on stdin
        (``--options-on-stdin``): one way to pass them, whether they are known yet or not."""
        self._prestarted = secrets.token_urlsafe(32)
        options = ["--options-on-stdin"]
        if self.log_file is not None:
            options += ["--log-file", str(self.log_file)]
        self.process = await asyncio.create_subprocess_exec(
            *endpoints_server_argv(),
            "--host",
            self.host,
            *options,
            "--parent-pid",
            str(os.getpid()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            # Its own session: a terminal's Ctrl-C signals the whole foreground process group,
            # and what a Ctrl-C does to jobs (pause them) is for the app to decide. Its job
            # children and their ffmpeg are in this session too.
            start_new_session=True,
        )

    async def _read_port(self, token: str) -> None:
        from workers.executors.websocket import EndpointsAddress  # not needed to start it

        assert self.process is not None and self.process.stdout is not None
        line = b""
        try:
            async with asyncio.timeout(self.start_timeout):
                line = await self.process.stdout.readline()
            port = int(json.loads(line)["port"])
        except (TimeoutError, ValueError, KeyError, TypeError) as exc:
            process = self.process
            if not line and not isinstance(exc, TimeoutError):
                with contextlib.suppress(TimeoutError):  # its end, rather than a stop's
                    async with asyncio.timeout(2):
                        await process.wait()
            await self.stop()
            if isinstance(exc, TimeoutError):
                why = f"it said no port within {self.start_timeout:g} s"
            elif not line:  # it ended first: killed, or it said why on stderr
                why = f"it exited (code {process.returncode}) before saying its port"
            else:
                why = f"it said {line[:100]!r}, not its port"
            raise OSError(f"the endpoints server did not start: {why}") from None
        self._address = EndpointsAddress(self.host, port, token)
        self.starts += 1
        log.info("started the endpoints server (pid %d, port %d)", self.process.pid, port)
        drain = asyncio.ensure_future(_drain(self.process.stdout, self.process.pid))
        self._drains.add(drain)
        drain.add_done_callback(self._drains.discard)

    def stop_soon(self) -> None:
        """Stop the server without waiting for it: it is told at once (it is no longer this
        object's), and its own exit (its jobs' children stopped, its port closed, ~15 ms)
        overlaps what the app still does; the next :meth:`stop` — the app's close — waits
        for it."""
        process = self._detach()
        if process is not None:
            task = asyncio.ensure_future(_reap(process))
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def stop(self) -> None:
        process = self._detach()
        if process is not None:
            await _reap(process)
        if self._stopping:
            await asyncio.gather(*self._stopping)
        if self._drains:  # at their end already: the servers' output ended with them
            await asyncio.gather(*self._drains)

    def _detach(self) -> asyncio.subprocess.Process | None:
        """Forget the server and tell it to stop; the process to wait for, if one runs."""
        process, self.process = self.process, None
        self._address = None
        self._prestarted = None
        if process is not None and process.stdin is not None:
            process.stdin.close()  # a prestarted server waiting for its options exits at this
        if process is None or process.returncode is not None:
            return None
        process.terminate()
        return process


#: How many lines of a server's standard output after its port are logged; the rest is
#: read and dropped.
DRAIN_LOGGED_LINES = 20


async def _drain(stdout: asyncio.StreamReader, pid: int) -> None:
    """Read what the server, its fork server and its jobs' children write on their standard
    output after the port (they share it; nothing of Fredica's writes there, a library a job
    uses may) until all of them have ended: unread, the pipe would fill, and the next of them
    to write would wait for good — its job stuck, a whole queue behind it. The first lines go
    to the log."""
    from fredica_app.views.records import shown  # not in front of the server's start

    logged = 0
    pending = b""
    while chunk := await stdout.read(64 * 1024):
        if logged >= DRAIN_LOGGED_LINES:
            continue
        *lines, pending = (pending + chunk).split(b"\n")
        pending = pending[:1000]  # a line's beginning is all that is logged of it
        for line in lines[: DRAIN_LOGGED_LINES - logged]:
            text = shown(line.decode("utf-8", "replace").rstrip("\r"))
            log.info("endpoints server (pid %d) output: %s", pid, text[:200])
            logged += 1
        if logged >= DRAIN_LOGGED_LINES:
            log.info("endpoints server (pid %d): its further output is not logged", pid)


async def _reap(process: asyncio.subprocess.Process) -> None:
    try:
        async with asyncio.timeout(10):
            await process.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
