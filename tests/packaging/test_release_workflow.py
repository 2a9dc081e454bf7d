"""The release workflow: actionlint finds nothing in it (with shellcheck on its scripts where
shellcheck is installed, as on GitHub's runners), and it builds what docs/packaging.md says."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def actionlint() -> str:
    """actionlint from the packaging dependency group (next to this Python), or on PATH."""
    here = Path(sys.executable).parent
    for candidate in (here / "actionlint", here / "actionlint.exe"):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("actionlint")
    assert found, "actionlint is missing: `uv sync` installs it (packaging group)"
    return found


def test_actionlint_finds_nothing() -> None:
    done = subprocess.run(
        [actionlint(), "-no-color", "-oneline", str(WORKFLOW)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


def load() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def steps() -> list[dict[str, Any]]:
    job = load()["jobs"]["build"]
    return list(job["steps"])


def test_runs_on_version_tags_and_by_hand() -> None:
    triggers = load()[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["push"] == {"tags": ["v*"]}
    assert "workflow_dispatch" in triggers


def test_builds_on_the_three_systems() -> None:
    matrix = load()["jobs"]["build"]["strategy"]["matrix"]["include"]
    assert {m["name"]: m["os"] for m in matrix} == {
        "linux": "ubuntu-22.04",
        "windows": "windows-latest",
        "macos": "macos-15",
    }
    by_name = {m["name"]: m for m in matrix}
    assert by_name["linux"]["build-args"] == "--appimage"
    assert by_name["macos"]["executable"] == "dist/Fredica.app/Contents/MacOS/fredica"


def test_steps_in_order_with_actions_pinned_to_a_major_version() -> None:
    uses = [s["uses"] for s in steps() if "uses" in s]
    assert uses == ["actions/checkout@v7", "actions/setup-python@v7", "actions/upload-artifact@v7"]
    runs = [str(s.get("run") or s.get("uses")) for s in steps()]

    def index(fragment: str) -> int:
        return next(i for i, r in enumerate(runs) if fragment in r)

    assert (
        index("actions/setup-python")
        < index("pip install uv")
        < index("uv sync --locked")
        < index("uv run pytest")
        < index("packaging/build.py")
        < index("--selftest --json")
        < index("actions/upload-artifact")
    )
    assert index("appimagetool-x86_64.AppImage") < index("packaging/build.py")
    upload = steps()[index("actions/upload-artifact")]
    assert upload["with"]["if-no-files-found"] == "error"
