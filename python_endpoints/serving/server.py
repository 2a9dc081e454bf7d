"""The endpoints server: a websockets server with one connection per running task.

Every connection must carry ``Authorization: Bearer <token>`` (compared in constant time); a
wrong or missing token is refused during the handshake with HTTP 401, an unknown endpoint with
404 — before any job exists. Frames are limited in size, pings go both ways, and a peer that
stops answering is treated as gone: its job is cancelled and its processes reaped.

With ``write_roots``, a job may write only under those folders: params whose ``output``,
``output_dir`` or ``models_dir`` lies elsewhere are refused (``PAYLOAD_ERROR``) before the job
starts. The app passes its library and models folders; a token holder cannot make the server
write anywhere else. Nor can they choose the binary a job runs or the environment variable it
reads a key from (:mod:`python_endpoints.serving.policy`: ``ffmpeg``, ``api_key_envs``).

Two jobs never write one final path at the same time: a job waits for its outputs' lock
before it starts (:mod:`python_endpoints.serving.outputlocks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import ssl
import time
from collections.abc import Iterable, Mapping, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import outputs
from python_endpoints.protocol import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    Cancel,
    Cancelled,
    Error,
    Finishing,
    InitParamAndRun,
    JobFrame,
    Pause,
    Progress,
    ProtocolError,
    Result,
    Resume,
    Status,
    StatusReply,
    dump,
    parse_client_frame,
)
from python_endpoints.serving.child import JobCancelled, JobFailed
from python_endpoints.serving.endpoint import TaskEndpoint, close_spares
from python_endpoints.serving.endpoint import warm as warm_endpoint
from python_endpoints.serving.outputlocks import Claim, OutputLocks, take_turn
from python_endpoints.serving.policy import JobPolicy
from python_endpoints.serving.skips import skipped_result

log = logging.getLogger(__name__)

PATH_PREFIX = "/tasks/"


class EndpointServer:
    def __init__(
        self,
        endpoints: Mapping[str, type[TaskEndpoint]],
        token: str,
        *,
        ping_interval: float = 10.0,
        ping_timeout: float = 20.0,
        write_roots: Sequence[Path] | None = None,
        ffmpeg: str | None = None,
        api_key_envs: Sequence[str] = (),
    ) -> None:
        if not token:
            raise ValueError("an endpoints server needs a token")
        self.endpoints = dict(endpoints)
        self.write_roots = (
            None if write_roots is None else [Path(os.path.realpath(r)) for r in write_roots]
        )
        #: The ffmpeg jobs run (None: the bundled one) and the variables they may read a key from.
        self.policy = JobPolicy(ffmpeg, api_key_envs)
        self._token = token.encode()
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.sessions: set[Session] = set()
        #: The final paths the running jobs write (one server per library is assumed).
        self.output_locks = OutputLocks()
        self._server: Server | None = None

    def warm(self, names: Iterable[str]) -> list[str]:
        """Start a warm spare child for each of these endpoints, in the background (a client
        says which it is about to use: the first job of each finds its child started). The
        names it warmed; an unknown one, or one whose jobs run in the event loop, is left."""
        warmed = []
        for name in names:
            cls = self.endpoints.get(name)
            if cls is not None and warm_endpoint(cls):
                cls.prepare_early(self.policy.ffmpeg)
                warmed.append(name)
            else:
                log.info("not warmed: %s (unknown, or no child to start)", name)
        return warmed

    async def start(
        self, host: str = "127.0.0.1", port: int = 0, ssl_context: ssl.SSLContext | None = None
    ) -> int:
        """Listen; return the bound port."""
        self._server = await serve(
            self._handle,
            host,
            port,
            process_request=self._check_request,
            max_size=MAX_FRAME_BYTES,
            ping_interval=self.ping_interval,
            ping_timeout=self.ping_timeout,
            # A peer that stopped answering will not answer the closing handshake either.
            close_timeout=2,
            # Frames are small JSON, mostly on loopback: permessage-deflate (the library's
            # default) would spend CPU and a zlib context per connection for nothing.
            compression=None,
            ssl=ssl_context,
        )
        sockets = list(self._server.sockets)
        return int(sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening, cancel every running job and reap its processes."""
        for session in list(self.sessions):
            await session.abort()
        await close_spares()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _check_request(self, connection: ServerConnection, request: Request) -> Response | None:
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), self._token):
            log.warning("refused a connection to %s: missing or wrong token", request.path)
            return connection.respond(HTTPStatus.UNAUTHORIZED, "missing or wrong token\n")
        name = (
            request.path.removeprefix(PATH_PREFIX) if request.path.startswith(PATH_PREFIX) else None
        )
        if name not in self.endpoints:
            known = ", ".join(sorted(self.endpoints))
            return connection.respond(
                HTTPStatus.NOT_FOUND, f"unknown endpoint {request.path!r} (known: {known})\n"
            )
        return None

    async def _handle(self, connection: ServerConnection) -> None:
        name = connection.request.path.removeprefix(PATH_PREFIX)  # type: ignore[union-attr]
        session = Session(
            connection, self.endpoints[name], self.write_roots, self.output_locks, self.policy
        )
        self.sessions.add(session)
        try:
            await session.serve()
        finally:
            self.sessions.discard(session)


class Session:
    """One connection: one run of one endpoint — or, when the client asks for it
    (``keep_open``), one run after another, each with an endpoint of its own. A command that
    comes between two runs belongs to the one that ended (the client sends the next
    ``init_param_and_run`` only after the last one's final frame): it is ignored."""

    def __init__(
        self,
        connection: ServerConnection,
        endpoint_cls: type[TaskEndpoint],
        write_roots: list[Path] | None = None,
        output_locks: OutputLocks | None = None,
        policy: JobPolicy | None = None,
    ) -> None:
        self.connection = connection
        self.endpoint_cls = endpoint_cls
        self.write_roots = write_roots
        self.policy = policy or JobPolicy()
        self.output_locks = output_locks or OutputLocks()
        self.claim: Claim | None = None  # the job's outputs, once it was started
        self._stop = asyncio.Event()  # cancelled or interrupted: a job still waiting stops
        self.endpoint = endpoint_cls(self._emit)
        self.job: asyncio.Task[None] | None = None
        #: The client asked to skip the job when its output is already there.
        self.check_skip = False
        self.percent = 0.0
        self.finished = False
        #: The client keeps the connection for its next run after this one's final frame.
        self.keep_open = False
        #: The client asked for ``finishing`` frames.
        self.say_finishing = False
        self.aborting = False  # the server is shutting down: not the client's cancel
        self._send_lock = asyncio.Lock()

    async def _send(self, frame: Any) -> None:
        async with self._send_lock:
            with contextlib.suppress(ConnectionClosed):
                await self.connection.send(dump(frame))

    async def _emit(self, frame: JobFrame) -> None:
        if isinstance(frame, Progress):
            self.percent = frame.percent
        elif isinstance(frame, Finishing) and not self.say_finishing:
            return  # a client that did not ask may not know the frame
        await self._send(frame)

    async def serve(self) -> None:
        receiver = asyncio.create_task(self._receive())
        try:
            await receiver
        finally:
            receiver.cancel()
            if self.job is not None and not self.job.done():
                # The client went away mid-job: stop it and reap its processes (not a cancel
                # of the user's: what the next attempt can resume from is kept).
                self.endpoint.interrupted = True
                await self._cancel_job()
                await self.job

    async def _receive(self) -> None:
        try:
            async for raw in self.connection:
                try:
                    frame = parse_client_frame(raw)
                except ProtocolError as exc:
                    await self._send(Error(error=str(exc), error_type=ErrorType.PROTOCOL_ERROR))
                    continue
                if await self._on_frame(frame):
                    return
        except ConnectionClosed:
            return

    async def _on_frame(self, frame: Any) -> bool:
        """Act on a command; True when the session is over."""
        if isinstance(frame, InitParamAndRun):
            if self.finished and self.keep_open:
                self._next_run()
            elif self.job is not None or self.finished:
                await self._send(
                    Error(error="the job was already started", error_type=ErrorType.PROTOCOL_ERROR)
                )
                return False
            if frame.data.protocol_version != PROTOCOL_VERSION:
                await self._send(
                    Error(
                        error=f"protocol version {frame.data.protocol_version} is not "
                        f"supported (this server speaks {PROTOCOL_VERSION})",
                        error_type=ErrorType.PROTOCOL_ERROR,
                    )
                )
                await self.connection.close()
                return True
            self.check_skip = frame.data.check_skip
            self.keep_open = frame.data.keep_open
            self.say_finishing = frame.data.say_finishing
            self.job = asyncio.create_task(self._run(frame.data.params))
            return False
        if self.finished and self.keep_open:
            if isinstance(frame, Status):
                await self._send(StatusReply(state="finished", percent=self.percent))
            return False  # the run it was meant for has ended
        if isinstance(frame, Cancel):
            if self.job is None:
                self.finished = True
                await self._send(Cancelled())  # cancelled before it started
                await self.connection.close()
                return True
            await self._cancel_job()
            return False
        if isinstance(frame, Pause):
            if self.job is not None and not self.job.done():
                await self.endpoint.pause()
            return False
        if isinstance(frame, Resume):
            if self.job is not None and not self.job.done():
                await self.endpoint.resume()
            return False
        if isinstance(frame, Status):
            state = (
                "waiting"
                if self.job is None or (self.claim is not None and not self.claim.granted.is_set())
                else "finished"
                if self.finished
                else ("paused" if self.endpoint.paused else "running")
            )
            await self._send(
                StatusReply(state=state, percent=self.percent, paused=self.endpoint.paused)
            )
            return False
        return False  # pragma: no cover - the union is exhaustive

    def _next_run(self) -> None:
        """Make the session ready for the client's next run on this connection."""
        self.endpoint = self.endpoint_cls(self._emit)
        self.job = None
        self.claim = None
        self._stop = asyncio.Event()
        self.check_skip = False
        self.percent = 0.0
        self.finished = False

    async def _run(self, params: dict[str, Any]) -> None:
        """Run the job and send exactly one final frame: result, error or cancelled."""
        try:
            refused = outside_write_roots(params, self.write_roots) or self.policy.refusal(params)
            if refused is None:
                params = self.policy.fill(params, self.endpoint)
                # The job's final paths are its own until it has ended and its partial
                # outputs are removed: another job writing one of them waits.
                paths = outputs.locked_paths(self.endpoint.name, params)
        except Exception as exc:  # a check that cannot decide: the job does not run
            log.exception("%s: checking the job's params failed", self.endpoint.name)
            refused = f"the job's params could not be checked ({type(exc).__name__}: {exc})"
        if refused is not None:
            await self._finish(Error(error=refused, error_type=ErrorType.PAYLOAD_ERROR))
            return
        self.claim = self.output_locks.claim(paths)
        started = time.monotonic()
        log.info("%s: job started", self.endpoint.name)
        try:
            frame = await self._run_job(params, self.claim)
        finally:
            self.output_locks.release(self.claim)
        log.info(
            "%s: job %s after %.1f s%s",
            self.endpoint.name,
            "interrupted (server shutting down)" if frame is None else _ENDED[frame.type],
            time.monotonic() - started,
            f" [{frame.error_type}] {frame.error}" if isinstance(frame, Error) else "",
        )
        if frame is not None:
            await self._finish(frame)

    async def _run_job(
        self, params: dict[str, Any], claim: Claim
    ) -> Result | Error | Cancelled | None:
        """Wait for the job's turn at its outputs, run it; its final frame, or None after a
        shutdown (the connection is closed with 1001)."""
        try:
            skipped = await take_turn(
                claim, self.output_locks, self.endpoint, params, self._emit, self._stop
            )
            # Checked again now that it is its turn: a folder swapped for a link while it
            # waited must not lead its writes out of the server's folders.
            refused = outside_write_roots(params, self.write_roots)
            if refused is not None:
                return Error(
                    error=f"{refused} (it changed while the job waited for its turn)",
                    error_type=ErrorType.PAYLOAD_ERROR,
                )
            if skipped is None and self.check_skip:
                # Asked to skip a run whose output is already there: decided here, where the
                # files are, holding their lock (no job is writing them), before any child.
                skipped = await asyncio.to_thread(skipped_result, self.endpoint, params)
            result = skipped if skipped is not None else await self.endpoint.run(params)
        except JobCancelled:
            self.endpoint.remove_partial_outputs()
            if self.aborting:
                # A shutdown, not a cancel: the client sees the connection go away ("going
                # away", 1001) and retries the task elsewhere or later.
                self.finished = True
                with contextlib.suppress(ConnectionClosed):
                    await self.connection.close(1001, "server shutting down")
                return None
            return Cancelled()
        except JobFailed as exc:
            self.endpoint.remove_partial_outputs()
            return Error(error=str(exc), error_type=exc.error_type)
        except Exception as exc:
            log.exception("endpoint %s failed", self.endpoint.name)
            self.endpoint.remove_partial_outputs()
            return Error(error=f"{type(exc).__name__}: {exc}")
        return Result(result=result)

    async def _cancel_job(self) -> None:
        self._stop.set()  # a job still waiting for its outputs stops waiting at once
        await self.endpoint.cancel()

    async def _finish(self, frame: Result | Error | Cancelled) -> None:
        self.finished = True
        await self._send(frame)
        if not self.keep_open:
            with contextlib.suppress(ConnectionClosed):
                await self.connection.close()

    async def abort(self) -> None:
        self.aborting = True
        self.endpoint.interrupted = True
        if self.job is not None and not self.job.done():
            await self._cancel_job()
            with contextlib.suppress(Exception):
                await self.job
        with contextlib.suppress(ConnectionClosed):
            await self.connection.close()


_ENDED = {"result": "completed", "error": "failed", "cancelled": "cancelled"}

#: The params that name where a job writes.
WRITE_KEYS = ("output", "output_dir", "models_dir")


def outside_write_roots(params: Mapping[str, Any], roots: list[Path] | None) -> str | None:
    """Why these params may not run (a write outside ``roots``), or None when they may.
    Symbolic links and ``..`` are resolved first, so neither can lead out of a root."""
    if roots is None:
        return None
    for key in WRITE_KEYS:
        value = params.get(key)
        if not isinstance(value, str):
            continue
        if "\0" in value:  # the system refuses to resolve it; the params model refuses it too
            return f"{key} {value!r} is not a path: it holds a NUL character"
        target = Path(os.path.realpath(value))
        if not any(target == root or target.is_relative_to(root) for root in roots):
            allowed = ", ".join(str(r) for r in roots)
            return f"{key} {value!r} is outside the folders this server may write to ({allowed})"
    return None
