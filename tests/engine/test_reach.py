"""Why an endpoints server could not be reached, as the task's error says it: each reason
made by a real failure on 127.0.0.1 (a closed port, a server whose certificate this machine
does not trust, TLS spoken to a plain server, a handshake cut), through the executor's own
connection code."""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
from collections.abc import AsyncIterator

import pytest
import trustme

from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from workers.executor import ExecuteResult
from workers.executors.diagnostic import SleepSubprocessExecutor
from workers.executors.reach import why_unreachable
from workers.executors.websocket import EndpointsAddress

TOKEN = "reach-token"


async def reason(address: EndpointsAddress) -> str:
    """The error of a connection to ``address``, as an attempt would record it."""

    async def source() -> EndpointsAddress:
        return address

    executor = SleepSubprocessExecutor(source)
    executor.connect_timeout = 5.0  # type: ignore[misc]
    opened = await executor._connect(address)
    assert isinstance(opened, ExecuteResult) and opened.error is not None, opened
    return opened.error


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def tls_server() -> AsyncIterator[int]:
    """The endpoints server with a certificate of an authority this machine does not know."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert("127.0.0.1").configure_cert(context)
    server = EndpointServer(ENDPOINTS, TOKEN)
    port = await server.start(ssl_context=context)
    yield port
    await server.close()


async def test_a_closed_port_says_to_check_the_server_runs() -> None:
    said = await reason(EndpointsAddress("127.0.0.1", closed_port(), TOKEN))
    assert "connection refused: is its endpoints server running, on that port?" in said
    assert said.startswith("cannot reach the endpoints server at ws://127.0.0.1:")


async def test_an_untrusted_certificate_says_so(tls_server: int) -> None:
    address = EndpointsAddress("127.0.0.1", tls_server, TOKEN, ssl.create_default_context())
    said = await reason(address)
    assert "its TLS certificate is not trusted (" in said
    assert "give this machine the certificate authority that signed it" in said


async def test_tls_spoken_to_a_plain_server_says_so() -> None:
    server = EndpointServer(ENDPOINTS, TOKEN)
    port = await server.start()
    try:
        address = EndpointsAddress("127.0.0.1", port, TOKEN, ssl.create_default_context())
        said = await reason(address)
    finally:
        await server.close()
    assert "is it serving TLS on that port?" in said


async def test_a_handshake_cut_short_says_so() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        said = await reason(EndpointsAddress("127.0.0.1", port, TOKEN))
    assert "the connection ended during its opening handshake" in said


def test_the_other_reasons_and_an_unknown_one() -> None:
    """Those a machine without a network to lose cannot make happen here (built as the
    system raises them)."""
    lookup = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert why_unreachable(lookup).startswith("its name could not be looked up")
    assert why_unreachable(TimeoutError()).startswith("no answer in time")
    wrong = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")
    assert why_unreachable(wrong).startswith("the TLS handshake failed: is it serving TLS")
    route = OSError(errno.EHOSTUNREACH, "No route to host")
    assert why_unreachable(route).startswith("no route to the host")
    assert why_unreachable(ConnectionResetError(104, "reset")).startswith("the connection was")
    assert why_unreachable(OSError(errno.EACCES, "Permission denied")) == (
        "[Errno 13] Permission denied"
    )
    assert why_unreachable(RuntimeError()) == "RuntimeError"
