"""``python -m python_endpoints``: serve the task endpoints.

Prints the bound port as one JSON line on stdout (``{"port": 12345}``) so that a parent can
read it, and exits when its parent process dies (or on SIGTERM/SIGINT), cancelling every
running job and reaping its processes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import ssl
import sys
from pathlib import Path

import psutil

from python_endpoints.registry import ENDPOINTS
from python_endpoints.server import EndpointServer

TOKEN_ENV = "FREDICA_ENDPOINTS_TOKEN"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m python_endpoints", description=__doc__)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    p.add_argument(
        "--token-file", type=Path, help=f"file holding the bearer token (or ${TOKEN_ENV})"
    )
    p.add_argument("--certfile", type=Path, help="TLS certificate (PEM), for remote use")
    p.add_argument("--keyfile", type=Path, help="TLS private key (PEM)")
    p.add_argument(
        "--allow-write",
        type=Path,
        action="append",
        metavar="DIR",
        help="jobs may write only under DIR (repeatable; default: anywhere)",
    )
    p.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="exit when this process dies (default: the parent process)",
    )
    return p.parse_args(argv)


def read_token(args: argparse.Namespace) -> str:
    token_file: Path | None = args.token_file
    if token_file is not None:
        token = token_file.read_text(encoding="utf-8").strip()
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise SystemExit(f"no token: pass --token-file or set {TOKEN_ENV}")
    return token


async def serve(args: argparse.Namespace) -> int:
    ssl_context = None
    if args.certfile is not None:
        ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ssl_context.load_cert_chain(args.certfile, args.keyfile)
    server = EndpointServer(ENDPOINTS, read_token(args), write_roots=args.allow_write)
    port = await server.start(args.host, args.port, ssl_context)
    print(json.dumps({"port": port}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    parent = os.getppid()
    while not stop.is_set():
        if os.getppid() != parent:
            break  # our parent died: we were re-parented (at its death, before it is reaped)
        if args.parent_pid is not None and not _alive(args.parent_pid):
            break
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except TimeoutError:
            pass
    await server.close()
    return 0


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (dead, not yet reaped) does not."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(serve(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
