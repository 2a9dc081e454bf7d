"""Why a connection to an endpoints server could not be made, in words a person acts on.

What the system says ("[Errno 111] Connect call failed ('10.0.0.5', 8765)", "[SSL:
CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate (_ssl.c:1006)")
names the call that failed, not what to check. Each reason here says what happened and what
usually causes it; the system's own text stays at the end, in brackets, for a bug report.
"""

from __future__ import annotations

import errno
import socket
import ssl

from websockets.exceptions import InvalidMessage

_UNREACHABLE = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN}


def why_unreachable(exc: BaseException, *, tls: bool = False) -> str:
    """What ``exc``, raised while connecting (``tls``: with TLS), means to the user."""
    said = str(exc) or type(exc).__name__
    if isinstance(exc, ssl.SSLCertVerificationError):
        detail = exc.verify_message or said
        return (
            f"its TLS certificate is not trusted ({detail}): give this machine the "
            f"certificate authority that signed it [{said}]"
        )
    if isinstance(exc, ssl.SSLError):
        return f"the TLS handshake failed: is it serving TLS on that port? [{said}]"
    if isinstance(exc, ConnectionRefusedError):
        return f"connection refused: is its endpoints server running, on that port? [{said}]"
    if isinstance(exc, socket.gaierror):
        return f"its name could not be looked up: check the address [{said}]"
    if isinstance(exc, TimeoutError):
        return "no answer in time: is the host up, and does a firewall let the port through?"
    if isinstance(exc, ConnectionResetError):
        if tls:  # what a server that does not speak TLS answers a TLS hello with
            return (
                f"the connection was reset as TLS began: is it serving TLS on that port? [{said}]"
            )
        return f"the connection was reset while it opened [{said}]"
    if isinstance(exc, InvalidMessage):
        return f"the connection ended during its opening handshake [{said}]"
    if isinstance(exc, OSError) and exc.errno in _UNREACHABLE:
        return f"no route to the host: is it on the network? [{said}]"
    return said
