"""One HTTP(S) download into a ``.part`` file, resumable, and the errors it can end with.

Used by ``/tasks/download`` (:mod:`python_endpoints.downloads.download`) and, once per file of
a model,
by ``/tasks/download_model`` (:mod:`python_endpoints.downloads.model_download`).

The body is streamed to ``<output>.part`` and renamed to ``<output>`` only once it is complete
— as long as the server announced, and fsynced — so the final path never holds a partial body.

**Threads.** The exchange (request, headers, body) runs in a thread with a blocking httpx
client reading up to 1 MiB at a time, while the event loop only watches: progress, checkpoints,
pause, cancel. Measured on loopback, reading in the loop (httpx's AsyncClient, 64 KiB reads)
ran at about a third of curl's speed; a blocking client with large reads keeps up with curl.
A cancel cuts the connection's socket (``shutdown``), which wakes a read blocked in the thread at
once; the thread is then waited for before the ``.part`` is closed.

**Resume.** One rule serves a retry after a network error, a new attempt after a crash (even a
``kill -9`` of the whole server) and a reconnection after a long pause::

    keep N bytes of the .part, send  Range: bytes=N-  If-Range: <strong ETag or Last-Modified>
    206 whose Content-Range starts at N          -> append
    200 (Range ignored, or the validator changed) -> truncate, start over
    416 and N is the whole length                -> already complete

N is the smaller of the .part's size and ``resume.bytes_done``. A checkpoint is emitted only
after an fsync of the .part, so its ``bytes_done`` are on disk for sure, whereas the file's
size alone is not proof: after a power loss a file can be longer than the data that reached
the disk. Trusting the checkpoint costs at most a second of download; trusting the size could
keep a tail of garbage in a media file. Without a validator in ``resume`` the .part is not
trusted at all: start over. (Within one run, a reconnection without a validator sends Range
alone and starts over if the total length changed.) A body with neither Content-Length nor
chunked framing ends when the connection does: a cut there cannot be told from the end.

**Progress** frames (at most five a second) carry ``extras``: ``bytes_done``, ``total`` (None
when unknown), ``speed`` (bytes/s over the last seconds), ``eta`` (seconds, or None) and, at
most once a second, ``checkpoint`` — a :class:`~python_endpoints.params.DownloadResume` that the
engine saves and hands back in the next attempt's params as ``resume``. A pause and a failure
that keeps the .part emit a last checkpoint of every byte written.

**Errors** (``error_type``)::

    HTTP_ERROR         a definitive 4xx, a redirect to another scheme, too many redirects
    NETWORK_ERROR      refused/reset/timed out, 5xx/408/425/429, a body cut short or too long
    NO_SPACE           the announced length exceeds the free space; ENOSPC while writing
    UNSUPPORTED_MEDIA  a content type ``accept`` refuses (by default text/html: a login or
                       error page), a body larger than ``max_bytes``
    IO_ERROR           the .part cannot be opened, written, synced or renamed
    PAYLOAD_ERROR      invalid params or proxy

The user's cancel, HTTP_ERROR, UNSUPPORTED_MEDIA and a body longer than announced remove the
.part (nothing worth resuming); other failures, a pause, a client that went away and a server
shutting down keep it for the next attempt.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import functools
import importlib.metadata
import io
import math
import os
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs.httpfacts import (
    SpeedMeter,
    accepts,
    content_length,
    eta,
    host_of,
    if_range_validator,
    parse_content_range,
    part_path,
    status_text,
    unsatisfied_length,
)
from python_endpoints.jobs.text import format_bytes, shown
from python_endpoints.params import DownloadParams, DownloadResume
from python_endpoints.serving.child import JobCancelled, JobFailed
from python_endpoints.serving.endpoint import LoopContext
from python_endpoints.status import said

if TYPE_CHECKING:
    # Imported on first use: httpx adds ~0.4 s to the endpoints server's start.
    import httpx

MAX_REDIRECTS = 10
#: At most five progress frames a second.
PROGRESS_EVERY = 0.2
#: How often the event loop looks at a body being read in its thread.
WATCH_EVERY = 0.1
#: At most one checkpoint a second.
CHECKPOINT_EVERY = 1.0
#: An fsync of the .part runs in the background whenever this many bytes are not yet synced
#: (and at least once a second), one at a time: the disk writes while the body streams, and
#: the fsync before the rename has only the tail left to write.
SYNC_BYTES = 32 << 20
#: After a pause this long the connection is most likely dead (the server timed it out):
#: reconnect with Range rather than wait a full read timeout to find out.
RECONNECT_AFTER_PAUSE = 30.0
#: Statuses worth another attempt besides every 5xx.
RETRYABLE_STATUSES = frozenset({408, 425, 429})
#: The most one read of a body asks for. httpcore reads 64 KiB: on a fast link each read then
#: costs more in Python than in the kernel (measured: 1 MiB reads run 2.5x faster on loopback).
READ_SIZE = 1 << 20
#: How long a cancel waits for an exchange's thread once its socket is cut. Only a thread
#: still connecting (no socket yet) can take longer; it is left to end on its own.
CUT_WAIT = 5.0


def _user_agent() -> str:
    try:
        version = importlib.metadata.version("fredica")
    except importlib.metadata.PackageNotFoundError:
        version = "dev"
    return f"Fredica/{version}"


USER_AGENT = _user_agent()

_T = TypeVar("_T")
_Params = TypeVar("_Params", bound=BaseModel)


# --- errors ---------------------------------------------------------------------------------


class DownloadFailed(JobFailed):
    """A download's error. ``discard``: the .part is worthless (removed) rather than kept for
    the next attempt to resume from.

    Its message says what happened and what is kept, never whether the task will be retried:
    that is the engine's to know (the task's retries left), and to say."""

    def __init__(self, message: str, error_type: str, *, discard: bool = False) -> None:
        super().__init__(message, error_type)
        self.discard = discard

    def keeping(self, note: str | None) -> None:
        """Add what the next attempt starts from (:func:`what_is_kept`) to the message."""
        if note and not self.discard:
            self.args = (f"{self.args[0]}; {note}", *self.args[1:])


def what_is_kept(kept: int, resumable: bool) -> str | None:
    """The end of a failed download's message: what a retry — the engine's or the user's —
    starts from. ``kept``: the bytes downloaded and kept; ``resumable``: whether the server
    gave a validator to resume them with."""
    if not kept:
        return None
    if not resumable:
        return (
            f"{format_bytes(kept)} were downloaded, but the server gives no way to check "
            "that they are still current: a retry starts over"
        )
    return f"the {format_bytes(kept)} downloaded so far are kept: a retry resumes from there"


def status_failure(code: int, reason: str, url: str) -> DownloadFailed:
    """A response that is neither 200 nor a usable 206/416."""
    what = f"the server answered {code} {reason}".rstrip() + f" for {shown(url)}"
    if code >= 500 or code in RETRYABLE_STATUSES:
        return DownloadFailed(f"{what} (a server error: often temporary)", ErrorType.NETWORK_ERROR)
    return DownloadFailed(
        f"{what}: check the URL (it may have expired, or need a login)",
        ErrorType.HTTP_ERROR,
        discard=True,
    )


def io_failure(exc: OSError, what: str) -> DownloadFailed:
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return DownloadFailed(
            f"the disk is full: cannot {what}; free some space, then retry the task",
            ErrorType.NO_SPACE,
        )
    return DownloadFailed(f"cannot {what}: {exc.strerror or exc}", ErrorType.IO_ERROR)


def network_failure(exc: httpx.HTTPError, url: str) -> DownloadFailed:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        what = "the server did not answer in time"
    elif isinstance(exc, httpx.ConnectError):
        what = "could not connect"
    elif isinstance(exc, httpx.ProxyError):
        what = "the proxy refused the connection"
    else:
        what = "the connection was lost"
    detail = str(exc) or type(exc).__name__
    return DownloadFailed(
        f"downloading {shown(url)} failed: {what} ({detail}); check the network connection",
        ErrorType.NETWORK_ERROR,
    )


# --- the transfer ---------------------------------------------------------------------------


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for every client: httpx builds one per client otherwise (loading the
    CA bundle: ~50 ms), which is most of a small download's start."""
    import httpx

    return httpx.create_ssl_context()


def _client_options(url: str, proxy: str | None, timeout: float) -> dict[str, Any]:
    import httpx

    def check_scheme(request: httpx.Request) -> None:
        """Every request, redirects included, goes to http or https only."""
        scheme = request.url.scheme
        if scheme not in ("http", "https"):
            raise DownloadFailed(
                f"{shown(url)} redirects to a {scheme}: URL "
                f"({shown(str(request.url))}); only http and https can be downloaded",
                ErrorType.HTTP_ERROR,
                discard=True,
            )

    return {
        # identity: Range offsets count the bytes as stored, not a decoded stream.
        "headers": {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
        "timeout": httpx.Timeout(timeout),
        "follow_redirects": True,
        "max_redirects": MAX_REDIRECTS,
        "proxy": proxy,
        "verify": _ssl_context(),
        "check_scheme": check_scheme,
    }


def _bad_proxy(proxy: str | None, exc: Exception) -> DownloadFailed:
    return DownloadFailed(
        f"the proxy {shown(proxy or '')} cannot be used: {exc}", ErrorType.PAYLOAD_ERROR
    )


def http_client(url: str, proxy: str | None, timeout: float) -> httpx.Client:
    """A blocking client for the bodies of downloads from ``url`` (named in messages), used in
    threads: redirects followed to http(s) only, bodies as stored (no decoding), Fredica's
    User-Agent, reads of up to :data:`READ_SIZE`. ``PAYLOAD_ERROR`` for a proxy that cannot be
    used."""
    import httpcore
    import httpx

    # httpcore has no option for its read size; its connections read this class attribute.
    httpcore.HTTP11Connection.READ_NUM_BYTES = READ_SIZE
    options = _client_options(url, proxy, timeout)
    check = options.pop("check_scheme")
    try:
        return httpx.Client(**options, event_hooks={"request": [check]})
    except (ValueError, ImportError, httpx.InvalidURL) as exc:
        raise _bad_proxy(proxy, exc) from exc


def api_client(url: str, proxy: str | None, timeout: float) -> httpx.AsyncClient:
    """The same, in the event loop: for small answers (a model's file listing)."""
    import httpx

    options = _client_options(url, proxy, timeout)
    check = options.pop("check_scheme")

    async def check_scheme(request: httpx.Request) -> None:
        check(request)

    try:
        return httpx.AsyncClient(**options, event_hooks={"request": [check_scheme]})
    except (ValueError, ImportError, httpx.InvalidURL) as exc:
        raise _bad_proxy(proxy, exc) from exc


class _Exchange:
    """One request and its response, run in a thread of :data:`_THREADS`; the event loop may
    :meth:`cut` it at any time (a cancel), which wakes a read blocked in the thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._cut = False
        self._running: concurrent.futures.Future[Any] | None = None
        self.response: httpx.Response | None = None

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's ``trace`` extension: the socket of a new connection, as soon as there
        is one, so that a server that never answers can be cut too."""
        if event == "connection.connect_tcp.complete":
            self._attach(info.get("return_value"))

    def _attach(self, stream: Any) -> None:
        sock = None if stream is None else stream.get_extra_info("socket")
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._socket = sock
            if self._cut:
                _shutdown(sock)

    def run(self, fn: Callable[[], _T]) -> asyncio.Future[_T]:
        """``fn()`` in a thread; one at a time."""
        assert self._running is None or self._running.done()
        running: concurrent.futures.Future[_T] = _THREADS.submit(fn)
        self._running = running
        return asyncio.wrap_future(running)

    async def send(self, client: httpx.Client, url: str, headers: dict[str, str]) -> httpx.Response:
        """The request, up to the response's headers."""
        request = client.build_request(
            "GET", url, headers=headers, extensions={"trace": self.trace}
        )
        response = await self.run(lambda: client.send(request, stream=True))
        self.response = response
        # A connection reused from the pool was not seen connecting.
        self._attach(response.extensions.get("network_stream"))
        return response

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            if self._socket is not None:
                _shutdown(self._socket)

    async def close(self) -> None:
        """Stop the thread (cut the socket unless it is done) and close the response."""
        running = self._running
        if running is not None and not running.done():
            self.cut()
            waiter = asyncio.wrap_future(running)
            await asyncio.wait({waiter}, timeout=CUT_WAIT)
            if waiter.done():
                waiter.exception()  # retrieved: an error of a cut connection is expected
            else:
                waiter.cancel()
            if not running.done():
                # Still connecting: it closes what it gets once it is done.
                running.add_done_callback(self._close_late)
                return
        if running is not None and self.response is None:
            _close_response(running)  # sent, but the await was cancelled
        if self.response is not None:
            self.response.close()

    def _close_late(self, future: concurrent.futures.Future[Any]) -> None:
        _close_response(future)
        if self.response is not None:
            with contextlib.suppress(Exception):
                self.response.close()


def _shutdown(sock: socket.socket) -> None:
    # socket.socket's own shutdown, not ssl.SSLSocket's (which also drops its TLS state under
    # the reading thread): the reader then sees the connection end.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _close_response(future: concurrent.futures.Future[Any]) -> None:
    if future.cancelled() or future.exception() is not None:
        return
    result = future.result()
    if hasattr(result, "close"):
        with contextlib.suppress(Exception):
            result.close()


#: The threads the exchanges run in (created as needed). Not the loop's default executor:
#: a body holds its thread for the whole download, and must not starve other work.
_THREADS = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="download")


_Outcome = Literal["body", "complete", "restart"]


class Transfer:
    """One run of a download: the .part, the connections, the progress.

    Reused for each file of a model (:mod:`python_endpoints.downloads.model_download`), which
    overrides
    the hooks: :meth:`_started` (the .part is open, nothing requested yet), :meth:`_report`
    (a progress frame, with a checkpoint of this file when one is due), :meth:`_finished`
    (the output is in place), and may extend ``_open``, ``_write``, ``_truncate`` (to follow
    the bytes, e.g. hash them), ``_check_size`` and ``_finish`` (to verify before the rename).
    """

    def __init__(self, params: DownloadParams, ctx: LoopContext) -> None:
        self.params = params
        self.ctx = ctx
        self.output = Path(params.output)
        self.part = part_path(self.output)
        self.file: io.FileIO | None = None
        self.done = 0  # bytes in the .part
        self.total: int | None = None
        self.etag: str | None = None
        self.last_modified: str | None = None
        self.content_type: str | None = None
        self.final_url = params.url
        self.resumed_from: int | None = None
        self.meter = SpeedMeter()
        # Bumped whenever the .part is truncated: an fsync started before no longer vouches.
        self._generation = 0
        self._sync: asyncio.Future[None] | None = None  # the fsync running in a thread
        self._sync_bytes = 0
        self._sync_generation = 0
        self._on_disk = 0  # bytes an fsync vouches for: what a checkpoint may claim
        self._checkpoint_due = False
        self._last_progress = -math.inf
        self._last_checkpoint = -math.inf
        self._last_sync = time.monotonic()
        self._paused_on_connection = False
        self._hold = False  # set by the event loop: the body's thread stops reading

    async def run(self, client: httpx.Client | None = None) -> dict[str, Any]:
        """Download to the end; ``client``: one shared by several transfers (made otherwise)."""
        try:
            with contextlib.ExitStack() as stack:
                if client is None:  # first: a bad proxy leaves no .part
                    client = stack.enter_context(self._client())
                self._open()
                await self._started()
                while not await self._connection(client):
                    pass
            return await self._finish()
        except DownloadFailed as exc:
            if not exc.discard:
                # Say exactly how far it got, so the next attempt loses nothing.
                with contextlib.suppress(OSError):
                    await self._checkpoint_now()
            raise
        finally:
            await self._settle_sync()  # the file must not be closed under a running fsync
            if self.file is not None:
                self.file.close()

    @property
    def resumable(self) -> bool:
        """Whether the next attempt can resume the .part: the server gave a validator."""
        return if_range_validator(self.etag, self.last_modified) is not None

    def kept(self) -> str | None:
        """What the next attempt starts from, once this one failed keeping its .part."""
        return what_is_kept(self.done, self.resumable)

    # -- the .part --

    def _open(self) -> None:
        resume = self.params.resume
        try:
            self.output.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.part, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o666)
            self.file = io.FileIO(fd, "r+", closefd=True)
            keep = 0
            if resume is not None and if_range_validator(resume.etag, resume.last_modified):
                keep = min(os.fstat(fd).st_size, resume.bytes_done)
                self.etag, self.last_modified = resume.etag, resume.last_modified
            self.file.truncate(keep)
            self.file.seek(keep)
        except OSError as exc:
            raise io_failure(exc, f"write {self.part}") from exc
        # The kept bytes were fsynced before the checkpoint that counts them was sent.
        self.done = self._on_disk = keep

    def _write(self, chunk: bytes) -> None:
        # In the exchange's thread, plain writes into the page cache. ``done`` grows only once
        # the bytes are written: an fsync started later covers all it counts.
        assert self.file is not None
        view = memoryview(chunk)
        try:
            while view:
                view = view[self.file.write(view) :]
        except OSError as exc:
            raise io_failure(exc, f"write {self.part}") from exc
        self.done += len(chunk)

    def _truncate(self) -> None:
        """The bytes on disk are not a prefix of the body being received: start over."""
        assert self.file is not None
        try:
            self.file.truncate(0)
            self.file.seek(0)
        except OSError as exc:
            raise io_failure(exc, f"write {self.part}") from exc
        self.done = self._on_disk = 0
        self.resumed_from = 0
        self._generation += 1
        self.meter.reset()

    def _start_sync(self, now: float) -> None:
        assert self.file is not None
        self._sync_bytes, self._sync_generation = self.done, self._generation
        self._sync = asyncio.ensure_future(asyncio.to_thread(os.fsync, self.file.fileno()))
        self._last_sync = now

    def _collect_sync(self) -> None:
        """Take the result of a finished background fsync: its bytes may now be checkpointed."""
        if self._sync is None or not self._sync.done():
            return
        sync, self._sync = self._sync, None
        exc = sync.exception()
        if isinstance(exc, OSError):
            raise io_failure(exc, f"sync {self.part}") from exc
        if self._sync_generation == self._generation:
            self._on_disk = self._sync_bytes
            self._checkpoint_due = True

    async def _sync_now(self) -> None:
        """fsync every byte written so far, and wait for it."""
        if self._sync is not None:
            await asyncio.wait({self._sync})
            self._collect_sync()
        self._start_sync(time.monotonic())
        assert self._sync is not None
        # asyncio.wait: a cancel of this task interrupts the wait, never the fsync itself.
        await asyncio.wait({self._sync})
        self._collect_sync()

    async def _settle_sync(self) -> None:
        """Let a running fsync end; its outcome no longer matters (the run is over)."""
        sync, self._sync = self._sync, None
        if sync is not None:
            await asyncio.wait({sync})
            if not sync.cancelled():
                sync.exception()  # retrieved: no "exception never retrieved" at exit

    async def _checkpoint_now(self, text: str | None = None) -> None:
        """fsync the .part and send a checkpoint of every byte written (pause, failure)."""
        if self.file is None or self.file.closed:
            return
        await self._sync_now()
        await self._emit(time.monotonic(), text, force=True)

    def _checkpoint(self, bytes_done: int) -> dict[str, Any]:
        return DownloadResume(
            bytes_done=bytes_done, etag=self.etag, last_modified=self.last_modified
        ).model_dump()

    # -- HTTP --

    def _client(self) -> httpx.Client:
        return http_client(self.params.url, self.params.proxy, self.params.timeout)

    def _range_headers(self) -> dict[str, str]:
        if self.done == 0:
            return {}
        headers = {"Range": f"bytes={self.done}-"}
        validator = if_range_validator(self.etag, self.last_modified)
        if validator is not None:
            headers["If-Range"] = validator
        # Without a validator (possible only when reconnecting within this run: a resume
        # without one starts over) the total length must stay the same (_accept checks it).
        return headers

    async def _connection(self, client: httpx.Client) -> bool:
        """One request. True once the body is complete, False to reconnect with Range."""
        import httpx

        requested = self.done
        self._paused_on_connection = False
        exchange = _Exchange()
        try:
            response = await exchange.send(client, self.params.url, self._range_headers())
            outcome = self._accept(response, requested)
            if outcome != "body":
                return outcome == "complete"
            self._checkpoint_due = True  # save the validator at once
            await self._emit(time.monotonic(), force=True)
            return await self._body(response, exchange)
        except DownloadFailed as exc:
            # Out of space with bytes kept (the disk filled under the .part, or not enough
            # is free again when it goes on): wait for space rather than fail. A download not
            # begun that cannot fit is refused before it starts.
            if exc.error_type != ErrorType.NO_SPACE or self.done == 0:
                raise
            await exchange.close()  # nothing more is read while it waits
            await self._wait_for_space(exc)
            return False  # resumed: on with Range from the bytes kept
        except httpx.TooManyRedirects as exc:
            raise DownloadFailed(
                f"{shown(self.params.url)} redirects more than {MAX_REDIRECTS} times",
                ErrorType.HTTP_ERROR,
                discard=True,
            ) from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise DownloadFailed(
                f"{shown(self.params.url)} cannot be downloaded: {exc}", ErrorType.PAYLOAD_ERROR
            ) from exc
        except httpx.HTTPError as exc:
            if self._paused_on_connection:
                # A pause left the connection idle and the server dropped it: carry on with
                # Range, as a new attempt would, without failing this one.
                return False
            raise network_failure(exc, self.params.url) from exc
        finally:
            await exchange.close()

    def _accept(self, response: httpx.Response, requested: int) -> _Outcome:
        """Judge a response's status and headers before its body."""
        status, headers = response.status_code, response.headers
        if status == 416 and requested > 0:
            length = unsatisfied_length(headers.get("content-range"))
            if length != requested:
                self._truncate()  # the .part is longer than the body now
                return "restart"
            total: int | None = length
            outcome: _Outcome = "complete"
        elif status == 206:
            span = parse_content_range(headers.get("content-range"))
            changed = (
                span is not None
                and None not in (self.total, span.total)
                and span.total != self.total
            )
            if span is None or span.start != requested or changed:
                if requested == 0:
                    raise DownloadFailed(
                        f"{shown(self.params.url)} answered a partial body that was not "
                        f"asked for ({headers.get('content-range')!r})",
                        ErrorType.NETWORK_ERROR,
                        discard=True,
                    )
                self._truncate()
                return "restart"
            total, outcome = span.total, "body"
        elif status == 200:
            if requested > 0:
                self._truncate()  # Range ignored, or the validator no longer matches
            total, outcome = content_length(headers.get("content-length")), "body"
        else:
            raise status_failure(status, response.reason_phrase, self.params.url)
        if outcome == "body" and not accepts(headers.get("content-type"), self.params.accept):
            wanted = ", ".join(self.params.accept) or "anything but text/html"
            raise DownloadFailed(
                f"{shown(self.params.url)} is {headers.get('content-type')}, not what was "
                f"asked for ({wanted}): a login or error page? Check the URL",
                ErrorType.UNSUPPORTED_MEDIA,
                discard=True,
            )
        self._check_size(total)
        if self.resumed_from is None:
            self.resumed_from = self.done
        self.total = total
        self.final_url = str(response.url)
        if outcome == "body":
            self.content_type = headers.get("content-type")
            # A 206 without validators keeps the ones that got it.
            if status == 200 or "etag" in headers or "last-modified" in headers:
                self.etag, self.last_modified = headers.get("etag"), headers.get("last-modified")
        return outcome

    def _check_size(self, total: int | None) -> None:
        if total is None:
            return
        limit = self.params.max_bytes
        if limit is not None and total > limit:
            raise self._too_large(total, so_far=False)
        try:
            free = shutil.disk_usage(self.part.parent).free
        except OSError:
            return  # cannot tell: writing will say
        if total - self.done > free:
            raise DownloadFailed(
                f"not enough free space in {self.part.parent} for {shown(self.params.url)}: "
                f"{format_bytes(total - self.done)} needed, {format_bytes(free)} free; free "
                "some space, then retry the task",
                ErrorType.NO_SPACE,
            )

    def _too_large(self, size: int, *, so_far: bool) -> DownloadFailed:
        limit = format_bytes(self.params.max_bytes or 0)
        return DownloadFailed(
            f"{shown(self.params.url)} is larger than the {limit} allowed (max_bytes): "
            f"{format_bytes(size)}{' so far' if so_far else ''}",
            ErrorType.UNSUPPORTED_MEDIA,
            discard=True,
        )

    async def _body(self, response: httpx.Response, exchange: _Exchange) -> bool:
        """Read the body in the exchange's thread; report, checkpoint and pause from here."""
        chunks = response.iter_raw()
        while True:
            self._hold = False
            pump = exchange.run(lambda: self._pump(chunks))
            while not (await asyncio.wait({pump}, timeout=WATCH_EVERY))[0]:
                await self._tick()
                if not self.ctx.resume_event.is_set():
                    self._hold = True  # the thread stops after the chunk it is reading
            if pump.result():
                break
            if not self.ctx.resume_event.is_set() and await self._pause() > RECONNECT_AFTER_PAUSE:
                return False
        if self.total is not None and self.done < self.total:
            if self._paused_on_connection:
                return False
            raise DownloadFailed(
                f"downloading {shown(self.params.url)} failed: the connection closed after "
                f"{self.done} of {self.total} bytes",
                ErrorType.NETWORK_ERROR,
            )
        return True

    def _pump(self, chunks: Iterator[bytes]) -> bool:
        """In the exchange's thread: write the body to the .part until it ends (True) or the
        event loop asks to hold (False: paused; the same ``chunks`` carry on afterwards)."""
        limit = self.params.max_bytes
        for chunk in chunks:
            self._write(chunk)
            if self.total is not None and self.done > self.total:
                raise DownloadFailed(
                    f"{shown(self.params.url)} sent more than the {self.total} bytes it announced",
                    ErrorType.NETWORK_ERROR,
                    discard=True,
                )
            if limit is not None and self.done > limit:
                raise self._too_large(self.done, so_far=True)
            if self._hold:
                return False
        return True

    async def _wait_for_space(self, exc: DownloadFailed) -> None:
        """The disk filled under the .part: keep every whole byte written (the checkpoint
        says how many), pause the task saying why, and wait for the user to free some space
        and resume it. A download is resumable: failing it would only make the user retry."""
        assert self.file is not None
        try:
            self.file.truncate(self.done)  # a chunk written part-way: only whole ones count
            self.file.seek(self.done)
        except OSError as truncated:
            raise io_failure(truncated, f"write {self.part}") from truncated
        of = "" if self.total is None else f" of {format_bytes(self.total)}"
        await self._checkpoint_now(f"paused: the disk is full at {format_bytes(self.done)}{of}")
        await self.ctx.request_pause(
            f"{exc.args[0].split(';')[0]}: free some space, then resume the task; it goes on "
            f"from the {format_bytes(self.done)} kept"
        )
        self.meter.reset()

    async def _pause(self) -> float:
        """Stop reading (the connection stays open) until resumed; return how long it was."""
        started = time.monotonic()
        of = "" if self.total is None else f" of {format_bytes(self.total)}"
        await self._checkpoint_now(f"paused at {format_bytes(self.done)}{of}")
        await self.ctx.wait_if_paused()
        self._paused_on_connection = True
        self.meter.reset()
        return time.monotonic() - started

    # -- reporting --

    async def _tick(self) -> None:
        now = time.monotonic()
        self._collect_sync()
        if self._sync is None and (
            now - self._last_sync >= CHECKPOINT_EVERY or self.done - self._on_disk >= SYNC_BYTES
        ):
            self._start_sync(now)
        if now - self._last_progress >= PROGRESS_EVERY:
            await self._emit(now)

    async def _started(self) -> None:
        """The .part is open, nothing is requested yet."""
        await self.ctx.report_progress(0.0, said("connecting", host=host_of(self.params.url)))

    async def _emit(self, now: float, text: str | None = None, *, force: bool = False) -> None:
        """A progress frame; with a checkpoint when an fsync vouched for more bytes, at most
        once a second unless ``force``."""
        self._last_progress = now
        checkpoint = None
        if self._checkpoint_due and (force or now - self._last_checkpoint >= CHECKPOINT_EVERY):
            checkpoint = self._checkpoint(self._on_disk)
            self._checkpoint_due = False
            self._last_checkpoint = now
        await self._report(now, text, checkpoint)

    async def _report(
        self, now: float, text: str | None, checkpoint: dict[str, Any] | None
    ) -> None:
        """Send a progress frame; ``checkpoint``: every byte it counts is on disk (fsynced)."""
        self.meter.add(now, self.done)
        speed = self.meter.speed()
        left = eta(self.done, self.total, speed)
        extras: dict[str, Any] = {
            "bytes_done": self.done,
            "total": self.total,
            "speed": round(speed, 1),
            "eta": None if left is None else round(left, 1),
        }
        if checkpoint is not None:
            extras["checkpoint"] = checkpoint
        percent = round(100.0 * self.done / self.total, 2) if self.total else 0.0
        await self.ctx.report_progress(
            percent, text or status_text(self.done, self.total, speed, left), extras=extras
        )

    # -- the end --

    async def _finish(self) -> dict[str, Any]:
        assert self.file is not None
        await self._sync_now()
        try:
            if self.ctx.cancel_event.is_set():
                raise JobCancelled  # the .part is removed by the cancel, do not publish it
            self.file.close()
            os.replace(self.part, self.output)
        except OSError as exc:
            raise io_failure(exc, f"move {self.part} to {self.output}") from exc
        sync_dir(self.output.parent)
        await self._finished()
        return {
            "outputs": [str(self.output)],
            "bytes": self.done,
            "content_type": self.content_type,
            "url": self.final_url,
            "resumed_from": self.resumed_from or 0,
        }

    async def _finished(self) -> None:
        """The output is in place."""
        await self.ctx.report_progress(
            100.0,
            said("downloaded", size=format_bytes(self.done)),
            extras={"bytes_done": self.done, "total": self.done, "speed": 0.0, "eta": 0.0},
        )


def sync_dir(directory: Path) -> None:
    """Make the rename durable too (POSIX; Windows cannot open a directory, nor needs to)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- shared by the download endpoints ---------------------------------------------------------


def validated(model: type[_Params], params: dict[str, Any], what: str) -> _Params:
    """``params`` as ``model``, or a ``PAYLOAD_ERROR`` that names the first wrong field."""
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "params"
        raise JobFailed(
            f"invalid {what} params: {where}: {err['msg']}", ErrorType.PAYLOAD_ERROR
        ) from None


async def until_cancelled(ctx: LoopContext, work: Coroutine[Any, Any, _T]) -> _T:
    """Run ``work`` as a task of its own, so that a cancel stops it at once, even while it
    waits for a slow server (the read timeout can be minutes); raise JobCancelled then. Its
    connections and files are closed when this returns."""
    run = asyncio.create_task(work)
    stop = asyncio.create_task(ctx.cancel_event.wait())
    try:
        await asyncio.wait({run, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not run.done():
            run.cancel()
        await asyncio.wait({run, stop})
    if run.cancelled():
        raise JobCancelled
    return run.result()
