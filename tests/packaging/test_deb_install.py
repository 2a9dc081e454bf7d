"""The Linux bundle and its ``.deb``, built for real, installed into a clean Debian root.

One build per test session (``packaging/build.py``, PyInstaller then ``dpkg-deb``: minutes,
started beside the other tests when these are collected: ``tests/support/deb_tests.py``), then
the package as a user meets it: ``apt-get install`` into a Debian root made by debootstrap,
with no Python but the bundle's; ``fredica --version``, ``--selftest`` and the main job run
inside it (chroot); ``apt-get purge`` leaves nothing of the package and keeps the user's data.

Where the root cannot be made (not root, no debootstrap, no Debian mirror), the install test
is skipped and says why; the build and the package's contents are checked still.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import check_deb
import pytest

from tests.support import deb_tests

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(3600),
    pytest.mark.skipif(
        not deb_tests.can_build(), reason="the .deb is built on Linux with dpkg-deb"
    ),
]

#: The issue's target for the package with the embedded model.
DEB_LIMIT = 250_000_000


@dataclass
class Built:
    out: Path
    work: Path
    deb: Path
    report: dict[str, Any]


@pytest.fixture(scope="module")
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The build the session started beside the other tests (tests/support/deb_tests.py),
    or one started now when none was."""
    build = request.config.stash.get(deb_tests.BUILD, None)
    if build is None:
        folder = tmp_path_factory.mktemp("deb-build")
        build = deb_tests.start_build(folder)
        request.addfinalizer(build.stop)
    status = build.wait(timeout=3000)
    assert status == 0, build.output[-6000:]
    folder = build.folder.parent
    out, work = deb_tests.dist(folder), deb_tests.work(folder)
    report = json.loads((work / "report.json").read_text())
    return Built(out, work, out / report["installer"], report)


def _deb_field(deb: Path, name: str) -> str:
    return subprocess.run(
        ["dpkg-deb", "--field", str(deb), name], capture_output=True, text=True, check=True
    ).stdout.strip()


def _deb_paths(deb: Path) -> dict[str, str]:
    """Each path in the package (without the leading ``.``) and its listing line."""
    listing = subprocess.run(
        ["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True
    ).stdout
    paths: dict[str, str] = {}
    for line in listing.splitlines():
        name = line.split(maxsplit=5)[5].split(" -> ")[0]
        paths[name.removeprefix(".").rstrip("/") or "/"] = line
    return paths


def test_the_build_reports_its_steps_sizes_and_what_takes_the_space(built: Built) -> None:
    report = built.report
    assert set(report["steps_seconds"]) >= {"icons", "bundle (PyInstaller)", "installer"}
    assert built.deb.name.startswith(f"fredica_{report['version']}_")
    assert built.deb.suffix == ".deb"
    assert report["installer_bytes"] == built.deb.stat().st_size
    space = {row["what"]: row["bytes"] for row in report["space"]}
    assert sum(space.values()) <= report["bundle_bytes"]
    # What the bundle must carry is there, and counted.
    for part in (
        "ffmpeg binary (imageio-ffmpeg)",
        "speech model (Whisper tiny.en)",
        "Qt (PySide6, shiboken6)",
    ):
        assert space[part] > 10_000_000, part


def test_the_bundle_carries_no_unused_qt_or_test_tools(built: Built) -> None:
    internal = built.out / "fredica" / "_internal"
    names = {p.name for p in internal.rglob("*")}
    for unused in (
        "libQt6Qml.so.6",
        "libQt6Quick.so.6",
        "libQt6Pdf.so.6",
        "libqgtk3.so",
        "libcairo.so.2",
        "libgdk_pixbuf-2.0.so.0",
        "pytest",
        "hypothesis",
        "PyInstaller",
    ):
        assert unused not in names, unused
    assert (internal / "fredica_app" / "_migrations" / "env.py").is_file()
    assert (internal / "fredica_app" / "gui" / "i18n" / "fredica_zh_CN.qm").is_file()
    icons = internal / "fredica_app" / "gui" / "icons"  # drawn by QtSvg: the selftest draws one
    assert (icons / "LICENSE").is_file() and (icons / "play.svg").is_file()
    assert any("QtSvg" in n for n in names)
    assert (internal / "python_endpoints" / "jobs" / "assets" / "speech-en.opus").is_file()
    licences = built.out / "fredica" / "licenses"
    assert (licences / "THIRD_PARTY.md").is_file() and (licences / "LGPL-3.0.txt").is_file()


def test_the_bundle_carries_its_own_licence_report_which_its_selftest_checks(
    built: Built, tmp_path: Path
) -> None:
    """The report in the bundle is made from the bundle and the Python it was built with (not
    the committed one), the .deb ships that one, and the frozen self-test finds that it
    describes what runs."""
    bundle = built.out / "fredica"
    text = (bundle / "licenses" / "THIRD_PARTY.md").read_text(encoding="utf-8")
    assert f"Python {platform.python_version()}: the interpreter" in text
    assert f"SQLite {sqlite3.sqlite_version} (in `sqlite3`" in text
    assert text != (ROOT / "packaging" / "THIRD_PARTY.md").read_text(encoding="utf-8")
    doc = "./usr/share/doc/fredica/THIRD_PARTY.md"
    tar = subprocess.run(
        ["dpkg-deb", "--fsys-tarfile", str(built.deb)], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path), doc], input=tar, check=True)
    assert (tmp_path / doc).read_text(encoding="utf-8") == text

    done = subprocess.run(
        [str(bundle / "fredica"), "--selftest", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    licences = checks["licences"]
    assert licences["ok"], licences
    assert f"Python {platform.python_version()}" in licences["detail"]
    assert "ffmpeg n" in licences["detail"], licences["detail"]


def test_the_deb_installs_the_bundle_a_launcher_the_desktop_entry_and_the_icons(
    built: Built,
) -> None:
    paths = _deb_paths(built.deb)
    assert "/opt/fredica/fredica" in paths
    assert paths["/usr/bin/fredica"].rstrip().endswith("-> /opt/fredica/fredica")
    for size in (16, 32, 48, 128, 256, 512):
        assert f"/usr/share/icons/hicolor/{size}x{size}/apps/fredica.png" in paths
    assert "/usr/share/applications/fredica.desktop" in paths
    assert "/usr/share/doc/fredica/copyright" in paths
    # Owned by root, whoever built it; nothing of the build machine's paths inside.
    assert all(" root/root " in line for line in paths.values())
    assert not any(str(ROOT) in p or "/tmp/" in p for p in paths)


def test_the_deb_declares_what_it_needs_from_debian(built: Built) -> None:
    assert _deb_field(built.deb, "Package") == "fredica"
    assert _deb_field(built.deb, "Version") == built.report["version"]
    depends = [d.strip() for d in _deb_field(built.deb, "Depends").split(",")]
    assert depends[0].startswith("libc6 (>= ")
    # Read off the bundle's libraries: OpenGL and X11 come from the system, not the bundle.
    assert {"libgl1", "libegl1", "libxcb1", "libfontconfig1"} <= set(depends)
    assert int(_deb_field(built.deb, "Installed-Size")) * 1024 >= built.report["bundle_bytes"]


def test_the_deb_is_under_250_mb_with_the_embedded_model(built: Built) -> None:
    assert built.deb.stat().st_size < DEB_LIMIT, f"{built.deb.stat().st_size / 1e6:.1f} MB"


def test_installed_into_a_clean_debian_root_it_works_and_purges_cleanly(
    built: Built, tmp_path: Path
) -> None:
    why = check_deb.can_check()
    if why is not None:
        pytest.skip(f"no Debian root here: {why}")
    root = tmp_path / "debian-root"
    try:
        check_deb.make_root(root)
    except check_deb.CannotCheck as exc:
        pytest.skip(f"no Debian root here: {exc}")
    try:
        outcome = check_deb.check(built.deb, root, expected_version=built.report["version"])
    finally:
        check_deb.remove_root(root)
    assert outcome.version == f"fredica {built.report['version']}"
    for part in ("qt", "database", "endpoints", "ffmpeg", "speech", "licences"):
        assert part in outcome.selftest
    assert "-->" in outcome.subtitles and "hello" in outcome.subtitles.lower()
    assert "/opt/fredica/fredica" in outcome.files and "/usr/bin/fredica" in outcome.files
    assert outcome.left_after_purge == []
