"""Hosts of a test's own on this one machine: a network namespace per host, joined to the
machine's own namespace (where the test's database runs) by a veth pair on a /24 of its own.
A host's link can be cut (the machine's end set down) and restored.

Needs root and ``ip`` (iproute2); :func:`unavailable` says what is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def unavailable() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "ip (iproute2) is not installed"
    probe = f"fr-probe-{uuid.uuid4().hex[:6]}"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"ip netns is not available here: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@dataclass
class Host:
    """One host: namespace ``name``, its address ``addr``, the machine's end ``gateway``."""

    name: str
    index: int

    @property
    def outside(self) -> str:
        return f"frv{self.index}o-{self.name[-4:]}"

    @property
    def inside(self) -> str:
        return f"frv{self.index}i-{self.name[-4:]}"

    @property
    def gateway(self) -> str:
        return f"10.77.{self.index}.1"

    @property
    def addr(self) -> str:
        return f"10.77.{self.index}.2"

    def up(self) -> Host:
        _ip("netns", "add", self.name)
        _ip("netns", "exec", self.name, "ip", "link", "set", "lo", "up")
        _ip("link", "add", self.outside, "type", "veth", "peer", "name", self.inside)
        _ip("link", "set", self.inside, "netns", self.name)
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.outside)
        _ip("link", "set", self.outside, "up")
        _ip("netns", "exec", self.name, "ip", "addr", "add", f"{self.addr}/24", "dev", self.inside)
        _ip("netns", "exec", self.name, "ip", "link", "set", self.inside, "up")
        # The other hosts through the machine (with forwarding(): one host to another).
        _ip("netns", "exec", self.name, "ip", "route", "add", "default", "via", self.gateway)
        return self

    def command(self, *argv: str) -> list[str]:
        """``argv`` as run on this host."""
        return ["ip", "netns", "exec", self.name, *argv]

    def cut(self) -> None:
        _ip("link", "set", self.outside, "down")

    def restore(self) -> None:
        _ip("link", "set", self.outside, "up")

    def pids(self) -> list[int]:
        done = subprocess.run(
            ["ip", "netns", "pids", self.name], capture_output=True, text=True, timeout=30
        )
        return [int(p) for p in done.stdout.split()]

    def kill_all(self, timeout: float = 10.0) -> None:
        """SIGKILL every process of the host — as a power cut would end them — until none is
        left: one may end between the listing and its kill (a job's child finishing), and
        one may start meanwhile (a child forked for the next job)."""
        deadline = time.monotonic() + timeout
        while pids := self.pids():
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: processes still there after SIGKILL: {pids}")
            time.sleep(0.05)

    def down(self) -> None:
        with contextlib.suppress(TimeoutError):
            self.kill_all()
        subprocess.run(["ip", "link", "del", self.outside], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


@contextlib.contextmanager
def forwarding() -> Iterator[None]:
    """The machine forwards between the hosts' links (IPv4), as a router would; as it was
    afterwards."""
    knob = Path("/proc/sys/net/ipv4/ip_forward")
    before = knob.read_text().strip()
    knob.write_text("1")
    try:
        yield
    finally:
        knob.write_text(before)


def hosts(n: int) -> list[Host]:
    tag = uuid.uuid4().hex[:4]
    made: list[Host] = []
    try:
        for i in range(n):
            made.append(Host(f"fredica-{tag}{i}", 100 + i).up())
    except BaseException:
        for h in made:
            h.down()
        raise
    return made
