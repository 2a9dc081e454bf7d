"""One Fredica per user and data directory: the first start listens on a local socket, a later
one hands its files and addresses over and exits.

A file manager's "Open with Fredica", a second ``fredica FILE`` or a start at login while the
window is already open must not start a second window over the same queue: the running one
imports the items into its library and comes to the front. :func:`server_name` derives the
socket's name from the user and a hash of the resolved data directory, so two users, or two
data directories of one user, never meet; it is short enough for macOS's 104-byte socket
paths, and lives in ``$XDG_RUNTIME_DIR`` (a folder only its user can enter) where Linux has
one. The server accepts connections from the same user only.

The protocol is JSON lines, one request and one reply each, every object carrying the
protocol's version under ``fredica``::

    → {"fredica": 1, "type": "open", "items": ["/home/ann/a.mkv", "https://…"]}
    ← {"fredica": 1, "type": "ack"}
    → {"fredica": 1, "type": "activate"}
    ← {"fredica": 1, "type": "ack"}

A request that is not valid — not JSON, another version, longer than :data:`MAX_LINE` bytes,
items that are not a list of strings, or an item that is neither an absolute path nor an
http(s) address — gets ``{"type": "error", "error": …}`` and is logged; nothing of it is
done. A relative path is the sender's to resolve (against its working directory, which the
receiver does not know: :func:`prepare_items`).

:func:`hand_off` is the second start's side: True when a running instance took the items,
False when none answers within :data:`CONNECT_TIMEOUT_MS` (start normally). A socket left by a
crash answers nothing: :meth:`InstanceServer.listen` removes it and listens in its place.
"""

from __future__ import annotations

import contextlib
import enum
import getpass
import hashlib
import json
import logging
import os
import re
import socket as pysocket
import stat
import struct
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Final, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtNetwork import QAbstractSocket, QLocalServer, QLocalSocket

from fredica_app.errors import FredicaError

log = logging.getLogger(__name__)

#: The protocol's version; a request with another is refused.
PROTOCOL: Final = 1
#: The longest line either side reads (a request with thousands of paths fits).
MAX_LINE = 4 * 1024 * 1024
#: The most items one request may carry.
MAX_ITEMS = 10_000
#: The longest item (a long Windows path is 32 767 characters).
MAX_ITEM = 32_767
#: How long a later start tries to reach the first before it starts normally.
CONNECT_TIMEOUT_MS = 1_500
#: How long it waits for each reply once connected (the first's GUI thread answers).
REPLY_TIMEOUT_MS = 10_000
#: A client that sends nothing complete for this long is dropped.
IDLE_TIMEOUT_MS = 15_000


# --- the protocol (no Qt) ---------------------------------------------------------------------


class ProtocolError(ValueError):
    """A line that is not a valid request or reply; the message says what is wrong."""


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    fredica: Literal[1] = PROTOCOL


class Open(_Message):
    """Import these items (absolute paths, http(s) addresses) into the library."""

    type: Literal["open"] = "open"
    items: list[Annotated[str, Field(strict=True)]] = Field(max_length=MAX_ITEMS)

    @field_validator("items")
    @classmethod
    def _each_item(cls, items: list[str]) -> list[str]:
        for item in items:
            check_item(item)
        return items


class Activate(_Message):
    """Bring the window to the front."""

    type: Literal["activate"] = "activate"


class Ack(_Message):
    type: Literal["ack"] = "ack"


class Refused(_Message):
    type: Literal["error"] = "error"
    error: str


Request = Annotated[Open | Activate, Field(discriminator="type")]
Reply = Annotated[Ack | Refused, Field(discriminator="type")]
_REQUEST: TypeAdapter[Open | Activate] = TypeAdapter(Request)
_REPLY: TypeAdapter[Ack | Refused] = TypeAdapter(Reply)


def is_web_url(item: str) -> bool:
    """An http(s) address with a host."""
    try:
        parts = urlsplit(item)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def check_item(item: str) -> str:
    """``item`` when it is an absolute path or an http(s) address; else :class:`ValueError`
    saying why."""
    if not item or len(item) > MAX_ITEM or "\x00" in item:
        raise ValueError("an item is empty, too long or holds a NUL character")
    if not (is_web_url(item) or Path(item).is_absolute()):
        raise ValueError(f"{item!r} is neither an absolute path nor an http(s) address")
    return item


def prepare_items(items: Iterable[str], cwd: Path) -> list[str]:
    """The sender's side: addresses as they are, paths made absolute against ``cwd`` (``~``
    expanded) — the receiver has another working directory."""
    prepared = []
    for item in items:
        if is_web_url(item):
            prepared.append(item)
        else:
            prepared.append(os.path.normpath(os.path.join(cwd, os.path.expanduser(item))))
    return prepared


def encode(message: _Message) -> bytes:
    # json, not pydantic's writer: a path whose name is not UTF-8 goes as a \\udc.. escape.
    return json.dumps(message.model_dump(mode="python")).encode("ascii") + b"\n"


def parse_request(line: bytes) -> Open | Activate:
    """The request on ``line`` (without its newline); :class:`ProtocolError` when it is not
    one this version understands."""
    _check_length(line)
    try:
        return _REQUEST.validate_python(_loads(line))
    except ValidationError as exc:
        raise _protocol_error(exc) from None


def parse_reply(line: bytes) -> Ack | Refused:
    """The reply on ``line`` (without its newline); :class:`ProtocolError` when it is not
    one."""
    _check_length(line)
    try:
        return _REPLY.validate_python(_loads(line))
    except ValidationError as exc:
        raise _protocol_error(exc) from None


def _loads(line: bytes) -> Any:
    """The JSON value on ``line`` (Python's reader: it gives back the ``\\udc..`` escapes of a
    path that is not UTF-8, which pydantic's refuses)."""
    try:
        return json.loads(line)
    except ValueError as exc:  # not JSON, or not UTF-8
        raise ProtocolError(f"not JSON ({exc})") from None


def _check_length(line: bytes) -> None:
    if len(line) > MAX_LINE:
        raise ProtocolError(f"a message of more than {MAX_LINE} bytes")


def _protocol_error(exc: ValidationError) -> ProtocolError:
    err = exc.errors()[0]
    if err["type"] == "json_invalid":
        return ProtocolError("not JSON")
    # The location without the union's tag ("open.items.2" → "items.2").
    where = ".".join(str(p) for p in err["loc"][1:])
    if where == "fredica":
        return ProtocolError(f"protocol version {err['input']!r}; this Fredica speaks {PROTOCOL}")
    return ProtocolError(f"{where or 'message'}: {err['msg']}")


def server_name(data_dir: Path, user: str | None = None) -> str:
    """The local socket's name for ``user`` (default: who runs this) on ``data_dir``: a full
    path in a folder of this user's alone — ``$XDG_RUNTIME_DIR``, else one made in the
    temporary folder (:func:`private_socket_dir`) — or, on Windows, a named pipe's name."""
    user = user if user is not None else _user()
    where = os.path.normcase(str(Path(data_dir).resolve()))
    digest = hashlib.sha256(f"{user}\0{where}".encode("utf-8", "surrogateescape")).hexdigest()
    name = f"fredica-{re.sub(r'[^A-Za-z0-9_.-]', '_', user)[:16]}-{digest[:16]}"
    folder = _runtime_dir() or private_socket_dir(Path(data_dir))
    return str(folder / name) if folder is not None else name


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no name for this uid (a container)
        return str(os.getuid()) if hasattr(os, "getuid") else "user"


def _runtime_dir() -> Path | None:
    """``$XDG_RUNTIME_DIR`` when it is a folder of this user's alone (Linux)."""
    value = os.environ.get("XDG_RUNTIME_DIR", "")
    if not value or sys.platform in ("win32", "darwin") or not os.path.isabs(value):
        return None
    return Path(value) if _ours_alone(Path(value)) else None


def _ours_alone(folder: Path) -> bool:
    """A real folder (not a link), this user's, that no one else may enter or write."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def private_socket_dir(data_dir: Path) -> Path | None:
    """Where the socket goes without ``$XDG_RUNTIME_DIR`` (POSIX): ``fredica-UID`` in the
    temporary folder, made ``0700`` — a name in a shared folder anyone could take first and
    listen at, receiving the paths a later start hands over. Only a folder of this user's
    alone is used; one another user made (or a link) is refused for the data directory's own
    ``run`` folder (private too: the data directory is ``0700``). None on Windows (a named
    pipe is in no folder)."""
    if os.name != "posix":
        return None
    folder = Path(tempfile.gettempdir()) / f"fredica-{os.getuid()}"
    with contextlib.suppress(FileExistsError, OSError):
        folder.mkdir(mode=0o700)
    if _ours_alone(folder):
        return folder
    log.warning("%s is not a folder of this user's alone: not putting the socket there", folder)
    folder = data_dir / "run"
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)
    return folder


def peer_uid(socket: QLocalSocket) -> int | None:
    """The user id of the process at the other end of ``socket`` (Linux: ``SO_PEERCRED``);
    None where the system does not say."""
    option = getattr(pysocket, "SO_PEERCRED", None)
    fd = int(socket.socketDescriptor())
    if option is None or fd < 0:
        return None
    try:
        with pysocket.socket(fileno=os.dup(fd)) as dup:  # closes the copy, not Qt's socket
            raw = dup.getsockopt(pysocket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    return int(struct.unpack("3i", raw)[1])


def another_user(socket: QLocalSocket) -> bool:
    """Whether the process at the other end is another user's (where the system says)."""
    uid = peer_uid(socket)
    return uid is not None and uid != os.getuid()


# --- the later start: handing over ------------------------------------------------------------


def hand_off(
    name: str,
    items: list[str],
    *,
    activate: bool = True,
    connect_ms: int = CONNECT_TIMEOUT_MS,
    reply_ms: int = REPLY_TIMEOUT_MS,
) -> bool:
    """Give ``items`` (already :func:`prepared <prepare_items>`) to the instance listening on
    ``name`` and, with ``activate``, ask it to come to the front: True when it did; False
    when no instance answers the connection (start normally). An instance that answers and
    then refuses, or stays silent, is a :class:`FredicaError`: a second window would fight it
    for the data."""
    try:
        requests: list[_Message] = [Open(items=batch) for batch in _batches(items)]
    except ValidationError as exc:
        raise FredicaError(f"cannot hand these items over: {_protocol_error(exc)}") from None
    requests += [Activate()] if activate else []
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(connect_ms):
        log.debug("no Fredica listening on %s: %s", name, socket.errorString())
        socket.abort()
        return False
    if another_user(socket):  # someone else's process listens there: it gets nothing
        log.warning("%s is another user's socket: nothing handed over to it", name)
        socket.abort()
        return False
    try:
        for request in requests:
            _exchange(socket, request, reply_ms)
    finally:
        socket.disconnectFromServer()
        if socket.state() != QLocalSocket.LocalSocketState.UnconnectedState:
            socket.waitForDisconnected(1_000)
    return True


def _batches(items: list[str]) -> Iterator[list[str]]:
    """``items`` in lists that each fit in one request (thousands of files from a file
    manager, each path up to a few thousand bytes)."""
    batch: list[str] = []
    size = 0
    for item in items:
        cost = len(json.dumps(item)) + 2
        if batch and (len(batch) == MAX_ITEMS or size + cost > MAX_LINE // 2):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += cost
    if batch:
        yield batch


def _exchange(socket: QLocalSocket, request: _Message, reply_ms: int) -> None:
    socket.write(encode(request))
    # What arrived while writing is read from the buffer: waitForReadyRead waits for more.
    while socket.bytesToWrite() and socket.waitForBytesWritten(reply_ms):
        pass
    while not socket.canReadLine():
        if socket.bytesAvailable() > MAX_LINE or not socket.waitForReadyRead(reply_ms):
            raise FredicaError(
                "Fredica is already running on this data directory but does not answer; "
                "close it (or end its process) and try again"
            )
    line = bytes(socket.readLine().data())
    try:
        reply = parse_reply(line.rstrip(b"\n"))
    except ProtocolError as exc:
        raise FredicaError(
            f"the Fredica already running on this data directory answered something this "
            f"version does not understand ({exc}); it may be another version: close it and "
            "try again"
        ) from None
    if isinstance(reply, Refused):
        raise FredicaError(f"the Fredica already running refused the request: {reply.error}")


# --- the first start: listening ---------------------------------------------------------------


class Listen(enum.Enum):
    """What :meth:`InstanceServer.listen` found."""

    #: This process is the instance: it listens.
    LISTENING = "listening"
    #: Another instance answers on the name: hand over to it.
    TAKEN = "taken"
    #: The socket cannot be made (a permission, a path too long): go on without one.
    FAILED = "failed"


class InstanceServer(QObject):
    """The first instance's side: a :class:`QLocalServer` that turns valid requests into
    signals, on the GUI thread."""

    #: An ``open`` request's items (absolute paths, http(s) addresses).
    items_received = Signal(object)  # a list of str: a QStringList would drop a name's bad bytes
    #: An ``activate`` request.
    activate_requested = Signal()

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._server = QLocalServer(self)
        # Only this user may connect (on Unix the socket file is made 0700).
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._accept)
        self._clients: dict[QLocalSocket, _Client] = {}

    @property
    def listening(self) -> bool:
        return self._server.isListening()

    def listen(self) -> Listen:
        """Listen on :attr:`name`, unless an instance answers there. A socket where nothing
        answers (left by a crash) is replaced."""
        # Asked first: on Unix, Qt puts a socket made with UserAccessOption in place with a
        # rename, which would take the name from a live instance without a word.
        if _answers(self.name):
            return Listen.TAKEN
        if self._server.listen(self.name):
            log.info("listening for later starts on %s", self._server.fullServerName())
            return Listen.LISTENING
        if self._server.serverError() != QAbstractSocket.SocketError.AddressInUseError:
            log.warning(
                "cannot listen for later starts on %s (%s): a second `fredica` will open a "
                "second window",
                self.name,
                self._server.errorString(),
            )
            return Listen.FAILED
        log.info("removing the stale socket %s (left by a Fredica that stopped)", self.name)
        QLocalServer.removeServer(self.name)
        if self._server.listen(self.name):
            log.info("listening for later starts on %s", self._server.fullServerName())
            return Listen.LISTENING
        log.warning("cannot listen on %s: %s", self.name, self._server.errorString())
        return Listen.FAILED

    def close(self) -> None:
        """Stop listening (the socket file goes) and drop the clients."""
        self._server.close()
        for socket in list(self._clients):
            socket.abort()
        self._clients.clear()

    # --- clients ------------------------------------------------------------------------------

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            if another_user(socket):  # the socket's mode keeps them out; the kernel's word too
                log.warning("refused a connection from another user (uid %s)", peer_uid(socket))
                socket.abort()
                socket.deleteLater()
                continue
            self._clients[socket] = _Client(self, socket)

    def _forget(self, socket: QLocalSocket) -> None:
        if self._clients.pop(socket, None) is not None:
            socket.deleteLater()

    def handle(self, line: bytes) -> _Message:
        """The reply to one request line (its newline removed); emits what it asks."""
        try:
            request = parse_request(line)
        except ProtocolError as exc:
            log.warning("refused a request from a later start: %s", exc)
            return Refused(error=str(exc))
        if isinstance(request, Open):
            log.info("a later start handed over %d item(s)", len(request.items))
            self.items_received.emit(list(request.items))
        else:
            log.info("a later start asked for the window")
            self.activate_requested.emit()
        return Ack()


class _Client:
    """One connection: its bytes gathered into lines, each answered in order."""

    def __init__(self, server: InstanceServer, socket: QLocalSocket) -> None:
        self.server = server
        self.socket = socket
        self.buffer = b""
        self.idle = QTimer(socket)
        self.idle.setSingleShot(True)
        self.idle.setInterval(IDLE_TIMEOUT_MS)
        self.idle.timeout.connect(self._expire)
        self.idle.start()
        socket.setReadBufferSize(MAX_LINE + 1)
        socket.readyRead.connect(self._read)
        socket.disconnected.connect(lambda: server._forget(socket))

    def _expire(self) -> None:
        log.warning("dropped a later start that sent nothing complete for a while")
        self.socket.abort()

    def _read(self) -> None:
        data = bytes(self.socket.readAll().data())
        if self.socket.state() != QLocalSocket.LocalSocketState.ConnectedState:
            return  # being dropped: what still arrives is not read
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            self.socket.write(encode(self.server.handle(line)))
            self.idle.start()
        if len(self.buffer) > MAX_LINE:
            log.warning("refused a request from a later start: more than %d bytes", MAX_LINE)
            self.socket.write(encode(Refused(error=f"a message of more than {MAX_LINE} bytes")))
            self.buffer = b""
            self.socket.disconnectFromServer()  # after what was written has gone
        self.socket.flush()


def _answers(name: str) -> bool:
    """Whether something accepts a connection on ``name``."""
    probe = QLocalSocket()
    probe.connectToServer(name)
    alive = probe.waitForConnected(CONNECT_TIMEOUT_MS)
    probe.abort()
    return alive
