"""What a frozen bundle is, for whoever starts one of its processes: whether this process runs
from one, and the argv that makes its one executable the endpoints server. (The dispatch on
that argv is ``fredica_app.entry``'s; kept apart so that starting the server does not import
the command that the executable also is.)"""

from __future__ import annotations

import sys

#: The first argument that makes the executable the endpoints server. Not a ``fredica``
#: command: nothing but Fredica itself starts the server this way.
ENDPOINTS_SERVER_ARG = "--run-endpoints-server"


def is_frozen() -> bool:
    """True inside a bundle made by PyInstaller (``sys.frozen`` is set by its bootloader)."""
    return bool(getattr(sys, "frozen", False))


def endpoints_server_argv() -> list[str]:
    """The argv that starts the endpoints server: ``python -m python_endpoints`` from source,
    the bundle's executable with :data:`ENDPOINTS_SERVER_ARG` when frozen."""
    if is_frozen():
        return [sys.executable, ENDPOINTS_SERVER_ARG]
    return [sys.executable, "-m", "python_endpoints"]
