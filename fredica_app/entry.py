"""The one executable of a frozen bundle (PyInstaller, ``packaging/fredica.spec``).

A bundle has no ``python -m``: everything Fredica starts as a process of its own is started
as this executable, and told apart here before anything else is imported.

- ``multiprocessing``'s children of the endpoints server (jobs run under ``spawn``) come back
  with ``--multiprocessing-fork``: :func:`multiprocessing.freeze_support` runs them and exits.
- The endpoints server comes back with :data:`ENDPOINTS_SERVER_ARG` first: what is
  ``python -m python_endpoints`` from source.
- Anything else is the ``fredica`` command.

From source the same function runs too (it is what the bundle's entry script calls), so the
dispatch is tested without freezing.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
from collections.abc import Sequence

from fredica_app.frozen import ENDPOINTS_SERVER_ARG


def main(argv: Sequence[str] | None = None) -> int:
    """Run what this process was started to be (see the module's docstring)."""
    multiprocessing.freeze_support()  # a job child of a frozen server runs and exits here
    # A windowed executable (Windows' fredica-gui.exe) has no standard streams: what would be
    # written there goes nowhere rather than failing.
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == [ENDPOINTS_SERVER_ARG]:
        from python_endpoints.__main__ import main as serve_endpoints

        code = serve_endpoints(args[1:])
        gc.freeze()  # a quick exit, as the command's (fredica_app.cli.quick_exit)
        return code
    from fredica_app.cli import run as fredica

    return fredica(args)
