"""Endpoint hosts on this machine for tests: real endpoints server processes with TLS from a
CA of the test's own and token files, whose view of the shared folder is another path (a
symbolic link to it, as a mount of the same share is on another machine)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme


@dataclass
class Host:
    """An endpoints server standing for another host."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    token_file: Path

    def jobs_started(self, endpoint: str) -> int:
        if not self.log.exists():
            return 0
        return self.log.read_text().count(f" {endpoint}: job started")


@dataclass
class Lab:
    tmp: Path
    authority: trustme.CA
    ca_file: Path
    cert: Path
    key: Path
    #: The shared folder as this machine sees it, and as the hosts do.
    nas: Path
    nas_there: Path
    hosts: list[Host]

    def start(self, name: str, allow_write: Path | None = None) -> Host:
        token_file = self.tmp / f"{name}.token"
        token_file.write_text(f"token-of-{name}\n")
        token_file.chmod(0o600)
        log = self.tmp / f"{name}.log"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "python_endpoints",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--certfile",
                str(self.cert),
                "--keyfile",
                str(self.key),
                "--token-file",
                str(token_file),
                "--allow-write",
                str(allow_write or self.nas_there),
                "--log-file",
                str(log),
            ],
            stdout=subprocess.PIPE,
        )
        assert process.stdout is not None
        port = int(json.loads(process.stdout.readline())["port"])
        host = Host(name, port, process, log, token_file)
        self.hosts.append(host)
        return host

    def entry(self, host: Host, classes: list[str], **more: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": host.name,
            "url": f"wss://127.0.0.1:{host.port}",
            "classes": classes,
            "token_file": str(host.token_file),
            "ca_file": str(self.ca_file),
            "path_map": [{"local": str(self.nas), "remote": str(self.nas_there)}],
        }
        entry.update(more)
        return entry

    def settings(self, data_dir: Path, entries: list[dict[str, Any]], **more: Any) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        values = {"endpoint_hosts": entries, "library_dir": str(self.nas / "library"), **more}
        (data_dir / "settings.json").write_text(json.dumps(values))


@contextlib.contextmanager
def make_lab(tmp_path: Path) -> Iterator[Lab]:
    authority = trustme.CA()
    cert = authority.issue_cert("127.0.0.1", "localhost")
    paths = {name: tmp_path / name for name in ("ca.pem", "cert.pem", "key.pem")}
    authority.cert_pem.write_to_path(str(paths["ca.pem"]))
    cert.cert_chain_pems[0].write_to_path(str(paths["cert.pem"]))
    cert.private_key_pem.write_to_path(str(paths["key.pem"]))
    nas = tmp_path / "nas"
    nas.mkdir()
    there = tmp_path / "gpu-host-mounts"
    there.mkdir()
    (there / "media").symlink_to(nas)  # the same share, mounted elsewhere on "the host"
    built = Lab(
        tmp_path,
        authority,
        paths["ca.pem"],
        paths["cert.pem"],
        paths["key.pem"],
        nas,
        there / "media",
        [],
    )
    try:
        yield built
    finally:
        for host in built.hosts:
            host.process.kill()
            host.process.wait(10)
            assert host.process.stdout is not None
            host.process.stdout.close()
