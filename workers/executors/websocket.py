"""Executors that run their task on a task endpoint, over one websocket (docs/protocol.md).

The base opens the connection with the bearer token, sends ``init_param_and_run``, forwards
the task's cancel and pause/resume channels as commands, and turns frames into the task's
state: ``progress`` into progress and pausability, ``pause_request``/``resume_request`` into
``is_paused`` (with the reason in ``status_text``), ``paused`` (the job has stopped for the
pause, holding its resources or not) into lending the task's slot, ``result`` into
completion, ``error`` into a failed attempt with its error type, ``cancelled`` into a cancel.
A progress frame's ``extras.checkpoint`` becomes the task's checkpoint (what the next attempt
resumes from): opaque here, its format is the job's own. A payload's ``check_skip`` is sent
with ``init_param_and_run``: whether the output is already there is for the endpoints server
to tell, where the files are. A connection that cannot be made is tried again a few times
within the attempt (the server may have just died: asking for its address starts another),
then it, or a connection lost, is a retryable failure (``CONNECTION_LOST``) — except this
machine's server vanishing mid-task (killed or crashed: the connection ends with no close
frame), which is an interruption of the task, not a failure of it (``SERVER_STOPPED``: the
store queues it again, using no retry).

A connection to this machine's server outlives its task: the executor asks the server to
keep it open (``keep_open``) and sends its next task on it, so a batch of short tasks pays one
handshake per slot, not one a task. One idle for :attr:`WebSocketExecutor.keep_idle_for` is
closed; one found closed is replaced. A command the control channel sent for a task that had
just ended reaches the server before the next task's ``init_param_and_run`` (one connection
keeps the order) and is ignored there.

A task one of whose dependencies was skipped *for a reason* — its input had nothing for it
(``{"skipped": true, "reason": "no audio"}``: EXTRACT_AUDIO of a silent video) — has nothing
to work on either: it completes skipped with the same reason, without connecting
(:func:`skipped_upstream`). A dependency skipped because its output was already up to date has
no reason, and its output is there: that does not count.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus, InvalidURI
from websockets.protocol import State

from python_endpoints.protocol import (
    MAX_FRAME_BYTES,
    Cancel,
    Cancelled,
    Error,
    Finishing,
    InitData,
    InitParamAndRun,
    Pause,
    Paused,
    PauseRequest,
    Progress,
    ProtocolError,
    Result,
    Resume,
    ResumeRequest,
    Segment,
    dump,
    parse_server_frame,
)
from workers.executor import BaseExecutor, ExecuteResult, ExecutionContext
from workers.executor import Cancelled as TaskCancelled
from workers.executors.reach import why_unreachable
from workers.records import TaskRecord
from workers.states import ErrorType
from workers.tasktypes import SCHEMA_VERSION_KEY, TaskType

if TYPE_CHECKING:
    from workers.executors.remote import EndpointHost, Router

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EndpointsAddress:
    """Where the endpoints server listens, and the token it wants."""

    host: str
    port: int
    token: str = field(repr=False)  # never in a log line or an error
    ssl: ssl.SSLContext | None = None

    def url(self, endpoint: str) -> str:
        scheme = "wss" if self.ssl is not None else "ws"
        return f"{scheme}://{self.host}:{self.port}/tasks/{endpoint}"

    @property
    def remote(self) -> bool:
        """Another host's server: a lost connection there may be the network's doing."""
        return self.proxy is not None

    @property
    def proxy(self) -> Literal[True] | None:
        """The proxy to connect through: none to this machine's own server (a proxy set in
        the environment, ``http_proxy`` or ``all_proxy``, cannot reach it, and looking it up
        scans the whole environment at every connection); the environment's to another
        host, as other clients do (``no_proxy`` included)."""
        host = self.host.strip("[]")
        if host == "localhost":
            return None
        try:
            return None if ipaddress.ip_address(host).is_loopback else True
        except ValueError:  # a name
            return True


def skipped_upstream(upstream: Mapping[str, dict[str, Any] | None]) -> str | None:
    """The reason a dependency was skipped for, when one was skipped because it could not
    apply to the material (its result has ``skipped`` and a ``reason``); else None."""
    for result in upstream.values():
        if result and result.get("skipped") and isinstance(result.get("reason"), str):
            return str(result["reason"])
    return None


#: Where to connect, asked at each attempt (the server may have been restarted on another
#: port, or be started on first use).
AddressSource = Callable[[], Awaitable[EndpointsAddress | None]]


class WebSocketExecutor(BaseExecutor):
    """Runs a task on ``/tasks/<endpoint>`` of the endpoints server."""

    #: The endpoint's name: ``/tasks/<endpoint>``.
    endpoint: str
    #: The job runs in the endpoints server (its event loop or a child of it): nothing it does
    #: can take the engine down.
    in_process = False
    connect_timeout: ClassVar[float] = 10.0
    #: Waits between tries at a connection that could not be made (see :meth:`_open`).
    reconnect_waits: ClassVar[tuple[float, ...]] = (0.2, 1.0, 3.0)
    #: How often the task's pause/cancel channels are looked at.
    control_interval: ClassVar[float] = 0.05
    #: Seconds a connection to this machine's server waits, idle, for the next task (0: one
    #: connection a task).
    keep_idle_for: ClassVar[float] = 2.0

    def __init__(self, address: AddressSource, router: Router | None = None) -> None:
        self.address = address
        #: Endpoint hosts for the resource classes served on other machines (None: none).
        self.router = router
        #: Open connections to this machine's server waiting for a task, the newest last.
        self._idle: list[_Idle] = []
        self._closing: set[asyncio.Task[None]] = set()

    #: The params that name files (mapped for an endpoint host: :mod:`.remote`).
    path_keys: tuple[str, ...] = ()

    def params(self, task: TaskRecord, ctx: ExecutionContext) -> dict[str, Any]:
        """The endpoint's params: the payload without the queue's own keys. Subclasses add
        what the attempt resumes from (``ctx.checkpoint``)."""
        return {
            k: v for k, v in task.payload.items() if k not in (SCHEMA_VERSION_KEY, "check_skip")
        }

    async def execute(self, task: TaskRecord, ctx: ExecutionContext) -> ExecuteResult:
        reason = skipped_upstream(ctx.upstream)
        if reason is not None:
            return ExecuteResult(result={"skipped": True, "reason": reason, "outputs": []})
        host: EndpointHost | None = None
        if self.router is not None and self.router.serves(task.resource):
            remote = await self._open_remote(task, ctx, self.router)
            if isinstance(remote, ExecuteResult):
                return remote
            address, ws, host, first = remote
        else:
            first = self.init_frame(task, ctx)
            opened = await self._reuse() or await self._open(ctx)
            if isinstance(opened, ExecuteResult):
                return opened
            address, ws = opened
        if host is not None:
            host.running += 1
        keep = False
        try:
            control: asyncio.Task[None] | None = None
            try:
                try:
                    await ws.send(first)
                    control = asyncio.create_task(self._forward_control(ws, ctx))
                    outcome = await self._receive(ws, ctx, host)
                    keep = self._ended_cleanly(outcome) and host is None
                    return outcome
                except ConnectionClosed as exc:
                    if host is None and exc.rcvd is None and not address.remote:
                        # This machine's server went without a word (killed, crashed): it
                        # ran the job, the job did not take it down (a job's own crash comes
                        # as an error frame), so the task is interrupted, not failed.
                        return ExecuteResult(
                            error="the endpoints server stopped while the task ran",
                            error_type=ErrorType.SERVER_STOPPED,
                        )
                    if host is not None and self.router is not None:
                        host.went_down(f"lost the connection to {host.name}", self.router.down_for)
                        return _lost(f"the connection to {host.name} was lost")
                    return _lost("the connection to the endpoints server was lost")
                finally:
                    if control is not None:
                        control.cancel()
                        with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                            await control
            finally:
                if keep and self.keep_idle_for > 0 and ws.state is State.OPEN:
                    self._keep(address, ws)
                else:
                    await ws.close()
        finally:
            if host is not None:
                host.running -= 1

    @staticmethod
    def _ended_cleanly(outcome: ExecuteResult) -> bool:
        """The attempt ended with the job's own final frame (``result`` or ``error``): the
        server waits for the next ``init_param_and_run`` on the connection."""
        return outcome.error_type not in (ErrorType.PROTOCOL_ERROR, ErrorType.CONNECTION_LOST)

    async def _reuse(self) -> tuple[EndpointsAddress, ClientConnection] | None:
        """An idle connection to this machine's server that is still open and still the
        server's whose address :attr:`address` gives now (it may have been restarted); None
        when there is none."""
        if not self._idle:
            return None
        try:
            address = await self.address()
        except OSError:
            address = None
        while self._idle:
            idle = self._idle.pop()
            if idle.address == address and idle.ws.state is State.OPEN:
                return idle.address, idle.ws
            self._close_later(idle.ws)
        return None

    def _keep(self, address: EndpointsAddress, ws: ClientConnection) -> None:
        loop = asyncio.get_running_loop()
        self._idle.append(_Idle(address, ws, loop.time()))
        loop.call_later(self.keep_idle_for, self._expire)

    def _expire(self) -> None:
        """Close the connections idle for :attr:`keep_idle_for` or more."""
        now = asyncio.get_running_loop().time()
        expired = [i for i in self._idle if now - i.since >= self.keep_idle_for]
        self._idle = [i for i in self._idle if i not in expired]
        for idle in expired:
            self._close_later(idle.ws)

    def _close_later(self, ws: ClientConnection) -> None:
        closing = asyncio.create_task(ws.close())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def release(self) -> None:
        """Close the idle connections (the engine is stopping)."""
        idle, self._idle = self._idle, []
        for one in idle:
            self._close_later(one.ws)
        if self._closing:
            await asyncio.wait(list(self._closing), timeout=2)

    async def _open_remote(
        self, task: TaskRecord, ctx: ExecutionContext, router: Router
    ) -> tuple[EndpointsAddress, ClientConnection, EndpointHost, str] | ExecuteResult:
        """A connection to an endpoint host serving the task's resource class, and the
        attempt's first frame in that host's terms — or why there is none: the task's files
        are on no host's shared storage (``PAYLOAD_ERROR``, for good), or no host could be
        reached or checked (``CONNECTION_LOST``, retried). Each host is tried in
        :meth:`Router.candidates`' order; one that cannot be reached is passed over for a
        while."""
        from workers.executors.remote import NotShared

        frames: list[tuple[EndpointHost, str]] = []
        refusals: list[str] = []
        for host in router.candidates(task.resource):
            try:
                frames.append((host, self.init_frame(task, ctx, host)))
            except NotShared as exc:
                refusals.append(str(exc))
        if refusals and not frames:
            return ExecuteResult(
                error=refusals[0], error_type=ErrorType.PAYLOAD_ERROR, retryable=False
            )
        if not frames:  # every host of the class has an entry that cannot be used
            return ExecuteResult(
                error=f"no endpoint host for {task.resource} work can be used: "
                + "; ".join(router.broken(task.resource)),
                error_type=ErrorType.EXECUTOR_ERROR,
                retryable=False,
            )
        problems: list[str] = []
        for host, frame in frames:
            why = await router.ready(host)
            if why is not None:
                problems.append(why)
                continue
            opened = await self._connect(host.address)
            if isinstance(opened, ExecuteResult):
                assert opened.error is not None
                if opened.error_type is ErrorType.CONNECTION_LOST:
                    host.went_down(opened.error, router.down_for)
                problems.append(f"{host.name}: {opened.error}")
                if opened.error_type is not ErrorType.CONNECTION_LOST:
                    return opened  # refused the token or the endpoint: the settings' to fix
                continue
            if problems:
                log.info("task %s goes to %s: %s", task.id, host.name, "; ".join(problems))
            return host.address, opened, host, frame
        return _lost(f"no endpoint host for {task.resource} work answered: " + "; ".join(problems))

    async def _open(
        self, ctx: ExecutionContext
    ) -> tuple[EndpointsAddress, ClientConnection] | ExecuteResult:
        """The connection to the endpoint, or why there is none. A connection that cannot
        be made — refused, timed out, closed during the opening handshake, or a server that
        died while it started — is tried again after each of :attr:`reconnect_waits`, the
        address asked anew each time: this machine's server may have just been killed
        (asking starts a new one) and a remote one may be restarting. Only when every try
        fails is the attempt lost (``CONNECTION_LOST``, retryable); a server that refuses
        the token or the endpoint is not tried again."""
        waits = iter(self.reconnect_waits)
        while True:
            opened = await self._try_open()
            if not isinstance(opened, ExecuteResult):
                return opened
            if opened.error_type is not ErrorType.CONNECTION_LOST or not opened.retryable:
                return opened
            wait = next(waits, None)
            if wait is None:
                return opened
            log.info("%s; trying again in %.1f s", opened.error, wait)
            await ctx.sleep(wait)  # a cancel ends the wait at once

    async def _try_open(self) -> tuple[EndpointsAddress, ClientConnection] | ExecuteResult:
        """One try at :meth:`_open`."""
        try:
            address = await self.address()
        except OSError as exc:  # it died while it started (killed?): the next ask starts another
            return _lost(f"the endpoints server could not be started: {exc}")
        if address is None:
            return _lost("the endpoints server is not running")
        opened = await self._connect(address)
        return opened if isinstance(opened, ExecuteResult) else (address, opened)

    async def _connect(self, address: EndpointsAddress) -> ClientConnection | ExecuteResult:
        """The connection to :attr:`endpoint` at ``address``, or why there is none."""
        url = address.url(self.endpoint)
        try:
            return await connect(
                url,
                additional_headers={"Authorization": f"Bearer {address.token}"},
                ssl=address.ssl,
                proxy=address.proxy,
                max_size=MAX_FRAME_BYTES,
                open_timeout=self.connect_timeout,
                compression=None,  # small JSON frames: not worth the CPU (see the server)
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            refused = status in (401, 403, 404)  # a wrong token or endpoint: for good
            return ExecuteResult(
                error=f"the endpoints server refused the connection (HTTP {status})",
                error_type=ErrorType.EXECUTOR_ERROR if refused else ErrorType.CONNECTION_LOST,
                retryable=not refused,
            )
        except (InvalidURI, ValueError) as exc:  # the same address again would be no better
            # (ValueError: a port out of range, an IPv6 host not closed: no URI websockets
            # takes; a certificate this machine does not trust, ssl's error being one too)
            return ExecuteResult(
                error=f"cannot reach the endpoints server at {url}: {why_unreachable(exc)}",
                error_type=ErrorType.CONNECTION_LOST,
                retryable=False,
            )
        except (OSError, TimeoutError, InvalidMessage) as exc:
            # InvalidMessage: the connection ended before the server's answer (it died
            # during the handshake). OSError: ssl.SSLError (a certificate refused) too.
            why = why_unreachable(exc, tls=address.ssl is not None)
            return _lost(f"cannot reach the endpoints server at {url}: {why}")

    def init_frame(
        self, task: TaskRecord, ctx: ExecutionContext, host: EndpointHost | None = None
    ) -> str:
        """The attempt's ``init_param_and_run`` frame, as sent: :meth:`params` (in ``host``'s
        terms for an endpoint host: raises :class:`NotShared`), the task's id and its
        payload's ``check_skip``."""
        return self._init_frame(task, _on(host, self.params(task, ctx), self.path_keys), host)

    def _init_frame(
        self, task: TaskRecord, params: dict[str, Any], host: EndpointHost | None
    ) -> str:
        """The frame, asking this machine's server alone (another host may run an older build,
        which knows neither) to keep the connection after the task and to say ``finishing``."""
        return _init_frame(task, params, host is None and self.keep_idle_for > 0, host is None)

    async def _receive(
        self, ws: ClientConnection, ctx: ExecutionContext, host: EndpointHost | None = None
    ) -> ExecuteResult:
        async for raw in ws:
            try:
                frame = parse_server_frame(raw)
            except ProtocolError as exc:
                return ExecuteResult(
                    error=f"the endpoint sent {exc}", error_type=ErrorType.PROTOCOL_ERROR
                )
            if isinstance(frame, Progress):
                pausable = None if frame.pausable is None else frame.pausable in ("always", "now")
                await ctx.report(
                    frame.percent,
                    frame.status_text,
                    is_pausable=pausable,
                    checkpoint=_back(host, _checkpoint(frame.extras)),
                    status_parts=_parts(frame),
                )
            elif isinstance(frame, PauseRequest):
                await ctx.request_pause(frame.reason)
            elif isinstance(frame, ResumeRequest):
                await ctx.request_resume()
            elif isinstance(frame, Paused):
                ctx.parked(frame.held)
            elif isinstance(frame, Finishing):
                ctx.finishing()
            elif isinstance(frame, Segment):
                pass  # streamed output for a viewer; the checkpoint comes in progress extras
            elif isinstance(frame, Result):
                return ExecuteResult(result=_back(host, frame.result))
            elif isinstance(frame, Error):
                return ExecuteResult(error=frame.error, error_type=frame.error_type)
            elif isinstance(frame, Cancelled):
                raise TaskCancelled(ctx.task.id)
        return _lost("the endpoints server closed the connection without a result")

    async def _forward_control(self, ws: ClientConnection, ctx: ExecutionContext) -> None:
        """Cancel and pause/resume of the task, as commands to the endpoint."""
        paused = ctx.paused
        while True:
            if ctx.cancelled:
                await ws.send(dump(Cancel()))
                return
            if ctx.paused != paused:
                paused = ctx.paused
                await ws.send(dump(Pause() if paused else Resume()))
            await asyncio.sleep(self.control_interval)


@dataclass(slots=True)
class _Idle:
    """An open connection waiting for the executor's next task."""

    address: EndpointsAddress
    ws: ClientConnection
    since: float


def _init_frame(
    task: TaskRecord, params: dict[str, Any], keep_open: bool = False, finishing: bool = False
) -> str:
    # ``check_skip`` is the endpoint's to decide, where the files are: an endpoint executor's
    # ``can_skip`` stays False.
    check_skip = bool(task.payload.get("check_skip"))
    data = InitData(
        params=params,
        task_id=task.id,
        check_skip=check_skip,
        keep_open=keep_open,
        say_finishing=finishing,
    )
    return dump(InitParamAndRun(data=data))


def _on(
    host: EndpointHost | None, params: dict[str, Any], path_keys: tuple[str, ...]
) -> dict[str, Any]:
    """``params`` as ``host`` sees them (this machine's server: as they are)."""
    return params if host is None else host.params_for(params, path_keys)


def _back(host: EndpointHost | None, value: Any) -> Any:
    """A result or checkpoint of ``host``'s in this machine's terms."""
    return value if host is None else host.back(value)


def _lost(message: str) -> ExecuteResult:
    return ExecuteResult(error=message, error_type=ErrorType.CONNECTION_LOST)


def _parts(frame: Progress) -> list[dict[str, Any]] | None:
    """The frame's status as message ids and arguments (validated by the protocol), when it
    has a text they make up."""
    if frame.status is None or frame.status_text is None:
        return None
    return [part.model_dump() for part in frame.status]


def _checkpoint(extras: dict[str, Any]) -> dict[str, Any] | None:
    """The checkpoint a progress frame carries (``extras.checkpoint``), or None. Opaque: its
    format is the job's own."""
    checkpoint = extras.get("checkpoint")
    return checkpoint if isinstance(checkpoint, dict) else None


class EndpointExecutor(WebSocketExecutor):
    """Runs the tasks of one type on one endpoint, configured from data (the app derives one
    per job of its catalogue): the queue knows the job by these values alone.

    ``resumes``: the task's checkpoint goes back to the endpoint as ``params["resume"]``, so
    that the next attempt continues where the last one stopped (a download's bytes, a
    transcript's segments) — unless that makes the ``init_param_and_run`` frame larger than a
    frame may be (:data:`~python_endpoints.protocol.MAX_FRAME_BYTES`: a checkpoint stored by
    an older version of a job can be): the attempt then starts over (:meth:`init_frame`).
    ``resumable``: an attempt interrupted by a crash of the engine is run again at the next
    start (the job starts over, or resumes). ``run_time_params``: params the job is given at
    each attempt, as they are then, and never stored with the task (a proxy with its
    password); the payload's own win."""

    def __init__(
        self,
        address: AddressSource,
        task_type: TaskType,
        endpoint: str,
        *,
        resumes: bool = False,
        stall_timeout: float = 120.0,
        resumable: bool = True,
        run_time_params: Callable[[], Mapping[str, Any]] | None = None,
        router: Router | None = None,
        path_keys: tuple[str, ...] = (),
    ) -> None:
        super().__init__(address, router)
        self.path_keys = path_keys
        self.task_type = task_type
        self.endpoint = endpoint
        self.resumes = resumes
        self.stall_timeout = stall_timeout
        self.resumable = resumable
        self.run_time_params = run_time_params

    def params(self, task: TaskRecord, ctx: ExecutionContext) -> dict[str, Any]:
        params = super().params(task, ctx)
        if self.run_time_params is not None:  # never stored: a credential may be among them
            for name, value in self.run_time_params().items():
                if value is not None:
                    params.setdefault(name, value)
        if self.resumes and ctx.checkpoint:
            params["resume"] = ctx.checkpoint
        return params

    def init_frame(
        self, task: TaskRecord, ctx: ExecutionContext, host: EndpointHost | None = None
    ) -> str:
        """The frame with the checkpoint as ``resume``, or without it when it would not fit:
        the endpoints server closes the connection on a frame too large, and it would at every
        retry, the checkpoint unchanged. Without it the attempt starts over, and its own
        checkpoints replace the one too large."""
        params = _on(host, self.params(task, ctx), self.path_keys)
        frame = self._init_frame(task, params, host)
        size = len(frame.encode())
        if size <= MAX_FRAME_BYTES or not (self.resumes and ctx.checkpoint):
            return frame
        log.warning(
            "task %s (%s): its checkpoint makes its init_param_and_run frame %d bytes, more "
            "than the %d an endpoint accepts: this attempt starts over instead of resuming",
            task.id,
            task.type,
            size,
            MAX_FRAME_BYTES,
        )
        # The payload's own params:
        return self._init_frame(task, _on(host, super().params(task, ctx), self.path_keys), host)


# --- one job, outside the queue (the doctor's check, the library's first look) ----------


class JobError(Exception):
    """A job answered with an error frame."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


async def run_job(
    address: EndpointsAddress, endpoint: str, params: dict[str, Any], within: float = 120.0
) -> dict[str, Any]:
    """Run one job on the endpoints server, outside the queue; its result. Raises
    :class:`JobError` for an error frame, ``ConnectionError`` when the server goes without a
    result, ``TimeoutError`` past ``within`` seconds, ``OSError`` when it cannot be reached."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(within):
            async with connect(
                address.url(endpoint),
                additional_headers={"Authorization": f"Bearer {address.token}"},
                ssl=address.ssl,
                proxy=address.proxy,
                max_size=MAX_FRAME_BYTES,
                compression=None,
            ) as ws:
                await ws.send(dump(InitParamAndRun(data=InitData(params=params))))
                async for raw in ws:
                    frame = parse_server_frame(raw)
                    if isinstance(frame, Result):
                        return frame.result
                    if isinstance(frame, Error):
                        raise JobError(frame.error, frame.error_type)
                    if isinstance(frame, Cancelled):
                        raise ConnectionError(f"the {endpoint} job was cancelled")
    except (ConnectionClosed, InvalidMessage, InvalidStatus, ProtocolError) as exc:
        raise ConnectionError(f"the {endpoint} job lost its server: {exc}") from exc
    finally:
        log.debug("%s job: %.2f s", endpoint, time.monotonic() - started)
    raise ConnectionError(f"the server closed the {endpoint} job without a result")
