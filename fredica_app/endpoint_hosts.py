"""The settings' endpoint hosts as the engine's router (:mod:`workers.executors.remote`).

Each entry becomes an :class:`~workers.executors.remote.EndpointHost`: its URL, its token read
from its token file (refused when other users could read it, as the server refuses its own),
and a TLS context that trusts its CA file (or the system's CAs) and checks the host's name. An
entry that cannot be used — a token file missing or open to others, a CA file that does not
load — is kept, passed over with the reason (``fredica hosts``, ``doctor`` and the task's error
say it), so that one bad entry does not stop the work of the others.
"""

from __future__ import annotations

import logging
import math
import ssl
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from fredica_app.settings import EndpointHostEntry
from python_endpoints.tokenfile import TokenFileError, read_token_file
from workers.executors.reach import why_unreachable
from workers.executors.remote import EndpointHost, PathMap, Router
from workers.executors.websocket import EndpointsAddress, JobError, run_job

log = logging.getLogger(__name__)


class EndpointHostError(Exception):
    """An endpoint host's entry that cannot be used, in one line."""


def router(entries: Sequence[EndpointHostEntry]) -> Router | None:
    """The router for the settings' endpoint hosts (None: there are none)."""
    if not entries:
        return None
    hosts = [endpoint_host(entry) for entry in entries]
    return Router(hosts, _run_probe)


async def _run_probe(
    address: EndpointsAddress, endpoint: str, params: dict[str, Any]
) -> dict[str, Any]:
    return await run_job(address, endpoint, dict(params), within=30.0)


def endpoint_host(entry: EndpointHostEntry) -> EndpointHost:
    """The host of one entry; one that cannot be used is passed over for good, with why."""
    paths = tuple(PathMap(str(m.local), m.remote) for m in entry.path_map)
    parts = urlsplit(entry.url)
    host_name, port = parts.hostname or "", parts.port or 0
    problem = None
    try:
        token = read_token(entry)
        context = tls_context(entry) if parts.scheme == "wss" else None
        if context is None and EndpointsAddress(host_name, port, "").remote:
            raise EndpointHostError(
                f"{entry.url} is not encrypted: use wss:// (the server's --certfile), as its "
                "token and every task would cross the network in clear"
            )
    except EndpointHostError as exc:
        token, context, problem = "", None, f"{entry.name}: {exc}"
        log.warning("endpoint host %s cannot be used: %s", entry.name, exc)
    host = EndpointHost(
        entry.name,
        EndpointsAddress(host_name, port, token, context),
        frozenset(entry.classes),
        paths,
        entry.models_dir,
    )
    if problem is not None:
        host.went_down(problem, math.inf)
    return host


def read_token(entry: EndpointHostEntry) -> str:
    path = entry.token_file.expanduser()
    try:
        return read_token_file(path)
    except TokenFileError as exc:
        raise EndpointHostError(f"its token file {path} {exc}") from None


def tls_context(entry: EndpointHostEntry) -> ssl.SSLContext:
    """Trust the entry's CA file (or the system's), and check the host's name."""
    try:
        cafile = None if entry.ca_file is None else str(entry.ca_file.expanduser())
        return ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise EndpointHostError(f"cannot load its CA file {entry.ca_file}: {exc}") from None


async def check_hosts(entries: Sequence[EndpointHostEntry]) -> list[dict[str, Any]]:
    """Each endpoint host checked now, as ``fredica hosts`` and ``doctor`` show it: a
    zero-second job run on it (its address, TLS and token), then its path maps checked with a
    probe file. ``problem`` says why it cannot be used (None: it can)."""
    routed = router(entries)
    if routed is None:
        return []
    states = []
    for host in routed.hosts:
        problem = host.problem if host.broken else None
        if problem is None:
            try:
                await run_job(host.address, "sleep", {"seconds": 0}, within=15.0)
            except (OSError, TimeoutError) as exc:
                where = f"{host.address.host}:{host.address.port}"
                problem = f"cannot be reached at {where}: {why_unreachable(exc)}"
            except JobError as exc:
                problem = f"its sleep job failed: {exc}"
        if problem is None:
            problem = await routed.ready(host)
        state = host.state()
        state["problem"] = problem
        states.append(state)
    return states
