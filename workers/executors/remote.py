"""Task endpoints on other hosts: which host runs a task, and the paths it sees.

The settings list *endpoint hosts*: another machine's endpoints server (``fredica endpoints
--host 0.0.0.0 --certfile … --token-file …``) with the resource classes it serves (``gpu``),
its token, the CA its certificate comes from, and its *path map*: where the shared storage
this machine sees at ``/mnt/nas`` is on that host (``/srv/media``, ``\\\\nas\\media``).

A task whose resource class some host serves runs on one of them, never on this machine's own
server (a class served remotely is one this machine lacks: a GPU). :class:`Router` picks the
host with the fewest of this engine's tasks on it, and fails over to the next when one cannot
be reached; a host that could not be reached is passed over for :attr:`Router.down_for`
seconds, unless every host of the class is. Before a host's first task — and again after it
was unreachable, as its mounts may have changed — each of its path maps is checked with a probe
file (:func:`probe_paths`): a file of random content written here, read there by the
``path_probe`` endpoint, which writes an answer beside it that is read back here. A map that
fails the check takes the host out of the class, with the reason, until it is checked again.

A task's params name files in this machine's terms; they are sent in the host's
(:meth:`EndpointHost.to_remote`), and what comes back (its result, its checkpoints) is turned
back (:meth:`EndpointHost.to_local`). A path no map covers cannot be seen there: the task is
refused (``PAYLOAD_ERROR``) with the folders the host sees, rather than sent to fail there.
The models folder is the exception: where the map does not cover it, the host's own
(``models_dir`` of its entry) is used, or none (the embedded model only).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import ntpath
import posixpath
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workers.executors.reach import why_unreachable
from workers.executors.websocket import EndpointsAddress

log = logging.getLogger(__name__)

#: The probe files' names: ``.fredica-probe-<32 hex>`` and its answer ``… .reply``.
PROBE_PREFIX = ".fredica-probe-"


@dataclass(frozen=True, slots=True)
class PathMap:
    """One folder of shared storage: ``local`` here, ``remote`` on the host (a POSIX path, or
    a Windows one such as ``\\\\nas\\media`` or ``D:\\media``)."""

    local: str
    remote: str

    @property
    def _remote_path(self) -> Any:
        return ntpath if _is_windows_path(self.remote) else posixpath

    def to_remote(self, path: str) -> str | None:
        """``path`` (this machine's, absolute) as the host sees it; None: not under ``local``."""
        rest = _under(path, self.local, posixpath)
        if rest is None:
            return None
        if not rest:
            return self.remote
        module = self._remote_path
        return str(module.join(self.remote, *rest.split("/")))

    def to_local(self, path: str) -> str | None:
        """The host's ``path`` as this machine sees it; None: not under ``remote``."""
        module = self._remote_path
        rest = _under(path, self.remote, module)
        if rest is None:
            return None
        parts = rest.replace("\\", "/").split("/") if module is ntpath else rest.split("/")
        return posixpath.join(self.local, *[p for p in parts if p]) if rest else self.local


def _is_windows_path(path: str) -> bool:
    return path.startswith("\\\\") or (len(path) >= 2 and path[1] == ":" and path[0].isalpha())


def _under(path: str, root: str, module: Any) -> str | None:
    """What follows ``root`` in ``path`` ('' for the root itself), or None when ``path`` is
    not inside it. Compared by whole components (``/mnt/nas2`` is not in ``/mnt/nas``),
    without case on Windows paths, after ``..`` is resolved on the text."""
    norm_path, norm_root = module.normpath(path), module.normpath(root)
    if module is ntpath:
        norm_path, norm_root = norm_path.lower(), norm_root.lower()
        original = ntpath.normpath(path)
    else:
        original = norm_path
    if norm_path == norm_root:
        return ""
    sep = "\\" if module is ntpath else "/"
    prefix = norm_root if norm_root.endswith(sep) else norm_root + sep
    if not norm_path.startswith(prefix):
        return None
    return original[len(prefix) :]


class NotShared(Exception):
    """A path of the task's params that no path map of the host covers."""

    def __init__(self, host: EndpointHost, key: str, path: str) -> None:
        seen = ", ".join(m.local for m in host.paths) or "no folder of this machine"
        super().__init__(
            f"{key} {path!r} is not on shared storage that {host.name} can see (it sees "
            f"{seen}): move the file there, or add a path map for its folder to {host.name}"
        )


@dataclass(eq=False)
class EndpointHost:
    """An endpoints server on another host, and what this engine knows of it."""

    name: str
    address: EndpointsAddress
    classes: frozenset[str]
    paths: tuple[PathMap, ...] = ()
    #: Its models folder, for a task whose ``models_dir`` no map covers (None: leave it out,
    #: and the host's jobs use the embedded model only).
    models_dir: str | None = None
    #: This engine's tasks on it now.
    running: int = 0
    #: Until when (monotonic) it is passed over: it could not be reached, or failed its check.
    down_until: float = 0.0
    #: Why it is passed over, as a line; None: it is not.
    problem: str | None = None
    #: Its path maps were checked since it was last unreachable.
    verified: bool = False
    _checking: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    def to_remote(self, path: str) -> str | None:
        for mapping in self.paths:
            mapped = mapping.to_remote(path)
            if mapped is not None:
                return mapped
        return None

    def to_local(self, path: str) -> str | None:
        for mapping in self.paths:
            mapped = mapping.to_local(path)
            if mapped is not None:
                return mapped
        return None

    def params_for(self, params: Mapping[str, Any], path_keys: Iterable[str]) -> dict[str, Any]:
        """``params`` in the host's terms: each of ``path_keys`` mapped, and the strings of a
        ``resume`` checkpoint that name a shared file. Raises :class:`NotShared`."""
        out = dict(params)
        for key in path_keys:
            value = out.get(key)
            if not isinstance(value, str):
                continue
            mapped = self.to_remote(value)
            if mapped is not None:
                out[key] = mapped
            elif key == "models_dir":
                if self.models_dir is None:
                    del out[key]
                else:
                    out[key] = self.models_dir
            else:
                raise NotShared(self, key, value)
        if "resume" in out:
            out["resume"] = _map_strings(out["resume"], self.to_remote)
        return out

    def back(self, value: Any) -> Any:
        """A result or checkpoint of the host's in this machine's terms: each string that is a
        path under a map's remote folder becomes the local one."""
        return _map_strings(value, self.to_local)

    @property
    def broken(self) -> bool:
        """Its entry cannot be used (a token file, a CA): passed over until it is fixed."""
        return math.isinf(self.down_until)

    def usable(self, now: float) -> bool:
        return now >= self.down_until

    def went_down(self, why: str, for_seconds: float) -> None:
        if self.broken:
            return  # its entry's problem stands until the entry is fixed
        self.down_until = time.monotonic() + for_seconds
        self.problem = why
        self.verified = False

    def state(self) -> dict[str, Any]:
        """What ``fredica hosts`` and the window show of it."""
        return {
            "name": self.name,
            "url": self.address.url("")[: -len("/tasks/")],
            "classes": sorted(self.classes),
            "paths": [{"local": m.local, "remote": m.remote} for m in self.paths],
            "running": self.running,
            "verified": self.verified,
            "problem": self.problem if not self.usable(time.monotonic()) else None,
        }


def _map_strings(value: Any, mapper: Callable[[str], str | None]) -> Any:
    if isinstance(value, str):
        if value.startswith(("/", "\\")) or (len(value) > 2 and value[1] == ":"):
            mapped = mapper(value)
            return value if mapped is None else mapped
        return value
    if isinstance(value, list):
        return [_map_strings(v, mapper) for v in value]
    if isinstance(value, dict):
        return {k: _map_strings(v, mapper) for k, v in value.items()}
    return value


#: Runs one job on a server: ``(address, endpoint, params) -> result``; raises on an error
#: frame (:class:`JobFailed`) or a lost or refused connection (``OSError``, ``ConnectionError``).
JobRunner = Callable[[EndpointsAddress, str, dict[str, Any]], Awaitable[dict[str, Any]]]


class ProbeFailed(Exception):
    """A path map that does not lead where it says."""


async def probe_paths(host: EndpointHost, run_job: JobRunner) -> None:
    """Check each of ``host``'s path maps with a probe file; raise :class:`ProbeFailed` with
    the first that fails. The file and its answer are removed either way."""
    for mapping in host.paths:
        name = PROBE_PREFIX + secrets.token_hex(16)
        local = Path(mapping.local) / name
        answer = Path(mapping.local) / (name + ".reply")
        expect, reply = secrets.token_hex(16), secrets.token_hex(16)
        try:
            await asyncio.to_thread(_write_probe, local, expect)
        except OSError as exc:
            raise ProbeFailed(
                f"cannot write a probe file in {mapping.local} (this machine): {exc}"
            ) from exc
        try:
            remote = mapping.to_remote(str(local))
            assert remote is not None
            remote_answer = mapping.to_remote(str(answer))
            assert remote_answer is not None
            params = {"input": remote, "output": remote_answer, "expect": expect, "reply": reply}
            try:
                found = await run_job(host.address, "path_probe", params)
            except (OSError, TimeoutError):  # unreachable: said by the caller
                raise
            except Exception as exc:  # an error frame: the host says why
                raise ProbeFailed(
                    f"{host.name} cannot use {mapping.remote} (shared as {mapping.local} "
                    f"here): {exc}"
                ) from exc
            if not found.get("matches"):
                raise ProbeFailed(
                    f"{host.name} does not see this machine's {mapping.local} at "
                    f"{mapping.remote}: the probe file "
                    + ("is not there" if not found.get("found") else "holds something else")
                )
            got = await asyncio.to_thread(_read_probe, answer)
            if got != reply:
                raise ProbeFailed(
                    f"{host.name} wrote its answer where this machine does not see it: "
                    f"{mapping.remote} is not {mapping.local} here"
                )
        finally:
            for path in (local, answer):
                with contextlib.suppress(OSError):
                    path.unlink()


def _verified(host: EndpointHost) -> bool:
    return host.verified


def _write_probe(path: Path, text: str) -> None:
    path.write_text(text, encoding="ascii")


def _read_probe(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii")[:64]
    except (OSError, UnicodeDecodeError):
        return None


class Router:
    """Which endpoint host runs a task of a resource class (see the module's doc)."""

    #: Seconds a host that could not be reached is passed over.
    down_for = 30.0

    def __init__(
        self, hosts: Sequence[EndpointHost] = (), run_job: JobRunner | None = None
    ) -> None:
        self.hosts = list(hosts)
        self._run_job = run_job

    def serves(self, resource: str) -> bool:
        """Whether tasks of ``resource`` go to endpoint hosts."""
        return any(resource in h.classes for h in self.hosts)

    def candidates(self, resource: str) -> list[EndpointHost]:
        """The hosts serving ``resource``, in the order to try them: those not passed over
        first, the least busy first (then as listed); every host when all are passed over."""
        hosts = [h for h in self.hosts if resource in h.classes and not h.broken]
        now = time.monotonic()
        up = [h for h in hosts if h.usable(now)]
        order = up or hosts
        return sorted(order, key=lambda h: h.running)

    async def ready(self, host: EndpointHost) -> str | None:
        """Check ``host``'s path maps unless done since it was last unreachable. Returns why
        it cannot be used (it is passed over meanwhile), or None."""
        if host.broken:
            return host.problem
        if host.verified or not host.paths or self._run_job is None:
            return None
        async with host._checking:
            if _verified(host):  # by another task meanwhile
                return None
            try:
                await probe_paths(host, self._run_job)
            except ProbeFailed as exc:
                why = str(exc)
                host.went_down(why, self.down_for)
                log.warning("endpoint host %s: %s", host.name, why)
                return why
            except (OSError, ConnectionError, TimeoutError) as exc:
                why = f"{host.name} cannot be reached: {why_unreachable(exc)}"
                host.went_down(why, self.down_for)
                return why
            host.verified = True
            host.problem = None
            log.info("endpoint host %s: its shared folders check out", host.name)
            return None

    async def check_all(self) -> dict[str, str | None]:
        """Check every host now (at start-up): each one's name and why it cannot be used."""
        return {h.name: await self.ready(h) for h in self.hosts}

    def broken(self, resource: str) -> list[str]:
        """Why the hosts of ``resource`` whose entries cannot be used are passed over."""
        return [h.problem or h.name for h in self.hosts if resource in h.classes and h.broken]

    def states(self) -> list[dict[str, Any]]:
        return [h.state() for h in self.hosts]
