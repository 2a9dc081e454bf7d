"""What other local users may see of Fredica's data: nothing. The data directory is the user's
alone (0700, its files 0600), an older data directory is mended at its next start, a stored
payload holds no credential, and another user cannot read the database or the logs."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fredica_app.cli import main
from fredica_app.database import open_database
from tests.support.host import as_another_user
from tests.support.olddb import database_at

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def submit_a_noop(data: Path) -> None:
    """Open the data directory as a command does (its database, its log) and write to it."""
    spec = data.parent / "noop.json"
    spec.write_text(json.dumps({"tasks": [{"key": "n", "type": "NOOP"}]}))
    assert main(["--data-dir", str(data), "submit", str(spec)]) == 0


@pytest.fixture
def shared_parent() -> Iterator[Path]:
    """A folder every user may pass through (as a home's parent is), for the data directory:
    only the data directory's own modes stand between it and another user."""
    parent = Path(tempfile.mkdtemp(prefix="fredica-privacy-"))
    parent.chmod(0o755)
    yield parent
    shutil.rmtree(parent, ignore_errors=True)


def test_a_new_data_directory_is_the_users_alone(shared_parent: Path) -> None:
    data = shared_parent / "data"
    submit_a_noop(data)
    assert mode(data) == 0o700 and mode(data / "logs") == 0o700
    for name in ("fredica.db", "fredica.db-wal", "logs/fredica.log"):
        if (data / name).exists():
            assert mode(data / name) == 0o600, name
    assert mode(data / "fredica.db") == 0o600


@pytest.mark.skipif(
    os.name == "posix" and os.geteuid() != 0,
    reason="acting as another user needs root (CI runs as root)",
)
def test_another_user_can_read_nothing_of_it(shared_parent: Path) -> None:
    data = shared_parent / "data"
    submit_a_noop(data)

    def read_it() -> None:
        for target in (data / "fredica.db", data / "logs" / "fredica.log"):
            with pytest.raises(PermissionError):
                target.read_bytes()
        with pytest.raises(PermissionError):
            list(data.iterdir())

    as_another_user(read_it)


def test_an_older_data_directory_is_mended_at_its_next_start(shared_parent: Path) -> None:
    """As an older version left it: 0755 folders, 0644 files. The library's media and outputs
    keep their modes (they are the user's files, shared as the user chose)."""
    data = shared_parent / "data"
    submit_a_noop(data)
    for path in (data, data / "logs"):
        path.chmod(0o755)
    for path in (data / "fredica.db", data / "logs" / "fredica.log"):
        path.chmod(0o644)
    output = data / "library" / "talk-12345678" / "talk.mp4"
    output.parent.mkdir(parents=True)
    output.write_bytes(b"an output")
    output.chmod(0o644)
    assert main(["--data-dir", str(data), "runs"]) == 0  # the quick read mends nothing
    submit_a_noop(data)
    assert (mode(data), mode(data / "logs")) == (0o700, 0o700)
    assert mode(data / "fredica.db") == 0o600 and mode(data / "logs" / "fredica.log") == 0o600
    assert mode(output) == 0o644


def test_proxy_passwords_stored_by_an_older_version_are_scrubbed_once(tmp_path: Path) -> None:
    """A database at schema 0007 whose DOWNLOAD payload holds ``user:password@``: the upgrade
    removes that proxy (the job gets the settings' when it runs) and leaves the rest."""
    path = tmp_path / "old.db"
    with database_at(path, "0007") as conn:
        conn.exec_driver_sql(
            "INSERT INTO workflow_run (id, status, created_at) VALUES ('r', 'pending', 1)"
        )
        for task_id, proxy in (("secret", "http://ann:s3cret@proxy:3128"), ("plain", "http://p:1")):
            payload = {"url": "https://h/a.mp4", "output": "/o/a.mp4", "proxy": proxy}
            conn.exec_driver_sql(
                "INSERT INTO task (id, type, workflow_run_id, status, created_at, payload) "
                "VALUES (?, 'DOWNLOAD', 'r', 'pending', 1, ?)",
                (task_id, json.dumps(payload)),
            )
    open_database(path).dispose()
    with sqlite3.connect(path) as conn:
        payloads = dict(conn.execute("SELECT id, payload FROM task").fetchall())
    assert json.loads(payloads["secret"]) == {"url": "https://h/a.mp4", "output": "/o/a.mp4"}
    assert json.loads(payloads["plain"])["proxy"] == "http://p:1"
