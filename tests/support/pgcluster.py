"""A PostgreSQL cluster of a test's own: ``initdb`` and ``pg_ctl`` run as the ``postgres``
user through ``runuser`` (PostgreSQL refuses to run as root), on a free port of 127.0.0.1,
with password authentication (SCRAM) and TLS — for what the shared server cannot do in a
test: restart mid-run, ask for a password, present a certificate of the test's CA.

Needs root (``runuser``), the ``postgres`` user and the server's binaries; :func:`unavailable`
says what is missing.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

USER = "fredica"
PASSWORD = "s3cret-horse-battery"
DATABASE = "fredica"


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def unavailable() -> str | None:
    if os.geteuid() != 0:
        return "a private PostgreSQL cluster needs root (runuser -u postgres)"
    if _bin_dir() is None:
        return "PostgreSQL's server binaries are not installed (apt install postgresql)"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "there is no postgres user to run a private cluster as"
    if shutil.which("runuser") is None:
        return "runuser is missing (util-linux)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    root: Path
    port: int
    ca_pem: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(
        self, *, password: str | None = None, tls: str = "verify-full", host: str = "localhost"
    ) -> str:
        auth = USER if password is None else f"{USER}:{password}"
        query = f"sslmode={tls}"
        if tls.startswith("verify"):
            query += f"&sslrootcert={self.ca_pem}"
        return f"postgresql+psycopg://{auth}@{host}:{self.port}/{DATABASE}?{query}"

    def _as_postgres(self, *args: str) -> None:
        bindir = _bin_dir()
        assert bindir is not None
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(bindir / args[0]), *args[1:]],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def start(self) -> None:
        self._as_postgres(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "start"
        )

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self) -> None:
        self._as_postgres(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-m",
            "fast",
            "-w",
            "restart",
        )


def make_cluster(root: Path, addresses: tuple[str, ...] = ()) -> Cluster:
    """initdb, TLS with a certificate for ``localhost`` (and ``addresses``, where it listens
    too: hosts of network namespaces reach it there) from a new CA, SCRAM for TCP, a
    database and its owner with a password; started."""
    import trustme

    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    port = _free_port()
    pw = pwd.getpwnam("postgres")
    os.chown(root, pw.pw_uid, pw.pw_gid)  # the server writes its log there
    pwfile = root / "pwfile"
    pwfile.write_text(PASSWORD + "\n")
    os.chown(pwfile, pw.pw_uid, pw.pw_gid)
    cluster = Cluster(root, port, root / "ca.pem")
    cluster.data.mkdir()
    os.chown(cluster.data, pw.pw_uid, pw.pw_gid)
    cluster._as_postgres(
        "initdb",
        "-D",
        str(cluster.data),
        "-U",
        USER,
        f"--pwfile={pwfile}",
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        "--no-sync",
    )
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(cluster.ca_pem))
    cert = ca.issue_cert("localhost", "127.0.0.1", *addresses)
    cert.private_key_pem.write_to_path(str(cluster.data / "server.key"))
    cert.cert_chain_pems[0].write_to_path(str(cluster.data / "server.crt"))
    for name in ("server.key", "server.crt"):
        os.chown(cluster.data / name, pw.pw_uid, pw.pw_gid)
        os.chmod(cluster.data / name, 0o600)
    listen = "*" if addresses else "127.0.0.1"
    with (cluster.data / "postgresql.conf").open("a") as f:
        f.write(
            f"port = {port}\nlisten_addresses = '{listen}'\n"
            f"unix_socket_directories = '{cluster.data}'\nssl = on\nfsync = off\n"
        )
    with (cluster.data / "pg_hba.conf").open("a") as f:
        for address in addresses:
            subnet = ".".join(address.split(".")[:3]) + ".0/24"
            f.write(f"hostssl all all {subnet} scram-sha-256\n")
    cluster.start()
    # The database, by its owner, over the local socket (trust there).
    bindir = _bin_dir()
    assert bindir is not None
    subprocess.run(
        [
            "runuser",
            "-u",
            "postgres",
            "--",
            str(bindir / "createdb"),
            "-h",
            str(cluster.data),
            "-p",
            str(port),
            "-U",
            USER,
            DATABASE,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cluster


def wait_until_up(cluster: Cluster, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", cluster.port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError("the private cluster did not come up")
