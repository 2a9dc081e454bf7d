"""``python -m python_endpoints``: serve the task endpoints.

Prints the bound port as one JSON line on stdout (``{"port": 12345}``) so that a parent can
read it, and exits when its parent process dies (or on SIGTERM/SIGINT), cancelling every
running job and reaping its processes.

It refuses to start (one line on stderr, exit 1) rather than serve unsafely: no token, a
token file that other users can read, or an address other than loopback without TLS. The
token comes from a file (``--token-file``) or, with ``--options-on-stdin``, with the options on
standard input — never from the environment, which the process's ``/proc/PID/environ`` shows
for as long as it runs, and which its jobs would inherit.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import ipaddress
import json
import logging
import os
import signal
import ssl
import sys
from pathlib import Path

import psutil
from pydantic import BaseModel, ConfigDict, ValidationError

from python_endpoints.serving import logfile, reaper, starting
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from python_endpoints.tokenfile import TokenFileError, read_token_file

PROG = "python -m python_endpoints"

log = logging.getLogger("python_endpoints")


class StartError(Exception):
    """Why the server will not start: one line for whoever started it."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    p.add_argument(
        "--token-file",
        type=Path,
        help="file holding the bearer token, readable by its owner alone (or the token in the "
        "options on stdin)",
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
        "--ffmpeg",
        help="the ffmpeg binary jobs run (default: the bundled one); params cannot name another",
    )
    p.add_argument(
        "--allow-key-env",
        action="append",
        default=[],
        metavar="NAME",
        help="an environment variable ANALYZE may read its API key from (repeatable; "
        "default: none)",
    )
    p.add_argument(
        "--log-file",
        type=Path,
        help="log to this file (rotated; several processes may share it), its job processes "
        "too; only warnings reach stderr, one line each (default: warnings to stderr only)",
    )
    p.add_argument(
        "--warm",
        action="append",
        default=[],
        metavar="ENDPOINT",
        help="start a spare child for ENDPOINT at once, so that its first job finds it ready "
        "(repeatable; default: each endpoint's first job starts its child)",
    )
    p.add_argument(
        "--options-on-stdin",
        action="store_true",
        help="before serving, read more options as one JSON line on stdin: "
        '{"allow_write": [DIR, ...], "ffmpeg": PATH, "allow_key_env": [NAME, ...], "warm": '
        "[ENDPOINT, ...]}, each optional, added to those given here; exit at once when stdin "
        "closes first (for a parent that starts the server before it knows them)",
    )
    p.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="exit when this process dies (default: the parent process)",
    )
    return p.parse_args(argv)


class LateOptions(BaseModel):
    """The options ``--options-on-stdin`` reads: what the parent knows only once it has read
    its own settings."""

    model_config = ConfigDict(extra="forbid")

    allow_write: list[Path] = []
    ffmpeg: str | None = None
    allow_key_env: list[str] = []
    warm: list[str] = []
    #: The bearer token (instead of ``--token-file``).
    token: str | None = None


def read_late_options(args: argparse.Namespace, line: str) -> bool:
    """Add the options of ``line`` (one JSON object) to ``args`` (its ``token`` as
    ``args.token``); False when there is none (stdin closed: the parent no longer wants a
    server)."""
    if not line.strip():
        return False
    try:
        late = LateOptions.model_validate_json(line)
    except ValidationError as exc:
        raise StartError(f"invalid options on stdin: {exc.errors()[0]['msg']}") from None
    if late.allow_write:
        args.allow_write = [*(args.allow_write or []), *late.allow_write]
    if late.ffmpeg is not None:
        args.ffmpeg = late.ffmpeg
    args.allow_key_env = [*args.allow_key_env, *late.allow_key_env]
    args.warm = [*args.warm, *late.warm]
    if late.token:
        args.token = late.token.strip()
    return True


def read_token(args: argparse.Namespace) -> str:
    """The token: given on stdin with the options (``args.token``), else ``--token-file``."""
    token: str = getattr(args, "token", None) or ""
    if not token and args.token_file is not None:
        token = _read_token_file(args.token_file)
    if not token:
        raise StartError("no token: pass --token-file, or the token with --options-on-stdin")
    return token


def _read_token_file(path: Path) -> str:
    try:
        return read_token_file(path)
    except TokenFileError as exc:
        raise StartError(f"the token file {path} {exc}") from None


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # another name, or "" (every interface)
        return False


def tls_context(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The TLS context, or None on loopback; refuses any other address without TLS."""
    if args.certfile is None:
        if not is_loopback(args.host):
            raise StartError(
                f"refusing to serve on {args.host or 'every interface'} without TLS: the token "
                "and every job would cross the network in clear; pass --certfile and "
                "--keyfile, or bind 127.0.0.1"
            )
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(args.certfile, args.keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise StartError(f"cannot load the TLS certificate {args.certfile}: {exc}") from None
    return context


async def serve(args: argparse.Namespace, token: str, ssl_context: ssl.SSLContext | None) -> int:
    starting.start_early()  # its imports run beside the server's start
    server = EndpointServer(
        ENDPOINTS,
        token,
        write_roots=args.allow_write,
        ffmpeg=args.ffmpeg,
        api_key_envs=args.allow_key_env,
    )
    port = await server.start(args.host, args.port, ssl_context)
    log.info("serving the task endpoints on %s:%d (pid %d)", args.host, port, os.getpid())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before the port is told: a parent may stop
        loop.add_signal_handler(sig, stop.set)  # us as soon as it has read it
    print(json.dumps({"port": port}), flush=True)
    server.warm(args.warm)  # after the port is told: the client is not kept waiting for it
    parent = os.getppid()
    while not stop.is_set():
        if os.getppid() != parent:
            break  # our parent died: we were re-parented (at its death, before it is reaped)
        if args.parent_pid is not None and not _alive(args.parent_pid):
            break
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.5):
                await stop.wait()
    await server.close()
    log.info("stopped")
    return 0


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (dead, not yet reaped) does not."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def setup_logging(path: Path, prog: str) -> None:
    """Log to ``path`` (job processes learn it from :func:`logfile.current_file`); warnings
    and errors also reach stderr, one line each."""
    logfile.log_to_file(path)
    prefix = "endpoints server" if prog == PROG else prog
    logging.getLogger().addHandler(logfile.stderr_warnings(prefix, path))


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    args = parse_args(argv)
    if args.log_file is not None:
        setup_logging(args.log_file, prog)
    try:
        ssl_context = tls_context(args)
        if not args.options_on_stdin:
            token = read_token(args)
        # Before the first fork (only processes forked after it leave their orphans to this
        # one), and after the checks that refuse to start: a refusal leaves the process as it
        # was (one that called main in-process would otherwise adopt every orphan after).
        reaper.become_subreaper()
        if args.options_on_stdin:
            # The fork server's imports, then, run while the parent gets the options ready.
            starting.start_early()
            if not read_late_options(args, sys.stdin.readline()):
                return 0
            token = read_token(args)
    except StartError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    return asyncio.run(serve(args, token, ssl_context))


if __name__ == "__main__":
    code = main()
    # The exit that follows need not collect every object the imports made (~0.1 s): the
    # system takes the memory back. Frozen objects are not collected; the rest of an exit
    # (atexit, the streams' flush) runs as usual.
    gc.freeze()
    sys.exit(code)
