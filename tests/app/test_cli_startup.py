"""A command loads what it needs: ``fredica --version`` no database, pydantic or templates;
``fredica runs`` not the other commands' modules. What keeps short commands short (the time
itself is measured by bench/batch.py, not here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from fredica_app.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _loaded(*argv: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120
    )
    last = json.loads(done.stdout.strip().splitlines()[-1])
    return last["code"], set(last["modules"])


def test_version_loads_no_database_no_pydantic_no_templates() -> None:
    code, modules = _loaded("--version")
    assert code == 0
    assert not {"sqlalchemy", "pydantic", "fredica_app.templates", "fredica_app.services"} & modules


def test_a_command_loads_its_own_handlers_only(tmp_path: Path) -> None:
    code, modules = _loaded("--data-dir", str(tmp_path), "runs")
    assert code == 0
    assert "fredica_app.cli.runs" in modules
    others = {"fredica_app.cli.media", "fredica_app.cli.worker", "fredica_app.cli.watch_folders"}
    assert not others & modules


COLLECTOR = """
import gc, json, sys
from fredica_app.cli import imports_without_collection
seen = []
for _ in range(2):  # the second time the module is loaded already
    frozen = gc.get_freeze_count()
    with imports_without_collection("fredica_app.services"):
        seen.append({"enabled_inside": gc.isenabled()})
        import fredica_app.services
    seen[-1] |= {"enabled_after": gc.isenabled(), "frozen": gc.get_freeze_count() - frozen}
print(json.dumps(seen))
"""


def test_the_app_s_modules_are_imported_without_collections_then_frozen() -> None:
    """The first import of the services runs with the collector off and leaves what it made
    frozen (out of every later collection); a process that has them loaded already keeps its
    collector as it was and freezes nothing (a test runs commands in-process)."""
    done = subprocess.run(
        [sys.executable, "-c", COLLECTOR], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, again = json.loads(done.stdout.strip().splitlines()[-1])
    assert first["enabled_inside"] is False and first["enabled_after"] is True
    assert first["frozen"] > 10_000  # SQLAlchemy's, pydantic's, the app's objects
    assert again == {"enabled_inside": True, "enabled_after": True, "frozen": 0}
