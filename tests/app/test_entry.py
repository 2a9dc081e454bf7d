"""The bundle's one executable: the app, the endpoints server or a job child, told apart by
``fredica_app.entry`` — tested from source, where the same function runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fredica_app import entry, frozen

RUN_ENTRY = "import sys; from fredica_app.entry import main; sys.exit(main())"


def test_from_source_the_server_is_python_m_python_endpoints() -> None:
    assert frozen.endpoints_server_argv() == [sys.executable, "-m", "python_endpoints"]


def test_frozen_the_server_is_the_bundle_executable_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert frozen.is_frozen()
    assert frozen.endpoints_server_argv() == [sys.executable, frozen.ENDPOINTS_SERVER_ARG]


def test_the_server_argument_starts_the_endpoints_server(tmp_path: Path) -> None:
    """What a frozen app starts: the entry with the server's argument serves, with a token,
    prints its port, and stops on SIGTERM."""
    token = tmp_path / "token"
    token.write_text("a-token-for-the-test")
    token.chmod(0o600)
    argv = [sys.executable, "-c", RUN_ENTRY, entry.ENDPOINTS_SERVER_ARG, "--host", "127.0.0.1"]
    with subprocess.Popen(
        [*argv, "--token-file", str(token)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert json.loads(line)["port"] > 0
        finally:
            process.terminate()
            assert process.wait(30) == 0


def test_the_server_argument_without_a_token_refuses_to_serve() -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_ENTRY, entry.ENDPOINTS_SERVER_ARG],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "no token" in done.stderr


def test_anything_else_is_the_fredica_command() -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_ENTRY, "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout.startswith("fredica ")
