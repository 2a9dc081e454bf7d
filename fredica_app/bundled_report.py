"""The licence report a bundle carries, held against the bundle that runs.

``packaging/build.py`` writes ``licenses/THIRD_PARTY.md`` into each bundle, from the bundle and
the environment it was built from, and beside it ``THIRD_PARTY.json``: what the report states
that a running bundle can confirm. ``fredica --selftest`` compares the two (its ``licences``
check): the interpreter's version and the OpenSSL and SQLite it was built with, the Qt it
loads, the ffmpeg its jobs run, the versions of the distributions whose metadata the bundle
carries, and the files the report places in the bundle. A report that says otherwise than the
bundle is one a distributor would ship wrong.

From source there is no bundle, hence no report of one: the committed
``packaging/THIRD_PARTY.md`` is checked by the test suite instead.
"""

from __future__ import annotations

import json
import re
import sqlite3
import ssl
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from fredica_app.views.encoders import parse_version

REPORT_FILE = "THIRD_PARTY.md"
FACTS_FILE = "THIRD_PARTY.json"
#: The layout of ``THIRD_PARTY.json`` this code reads (packaging/licenses.py writes it).
FACTS_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Bundle:
    """Where a bundle keeps its licences and its parts (``_internal``; in a macOS app
    ``Contents/Frameworks`` and ``Contents/Resources``)."""

    licences: Path
    parts: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class Running:
    """What the running bundle is, as far as its report speaks of it."""

    python: str
    openssl: str
    sqlite: str
    qt: str | None  # None: Qt could not be asked (the qt check says why)
    ffmpeg: Path | None  # the ffmpeg the jobs run; None: overridden by IMAGEIO_FFMPEG_EXE
    ffmpeg_version: str | None
    distributions: dict[str, str]  # whose metadata this interpreter finds


def this_bundle() -> Bundle:
    """The running bundle's layout (only meaningful when frozen)."""
    exe = Path(sys.executable).resolve()
    internal = Path(getattr(sys, "_MEIPASS", exe.parent / "_internal"))
    contents = exe.parent.parent
    if exe.parent.name == "MacOS" and contents.name == "Contents":
        resources = contents / "Resources"
        return Bundle(resources / "licenses", (internal, resources))
    return Bundle(exe.parent / "licenses", (internal,))


def ffmpeg_version(exe: Path) -> str | None:
    """What ``exe -version`` says its version is (None if it says nothing readable)."""
    try:
        done = subprocess.run(
            [str(exe), "-hide_banner", "-version"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_version(done.stdout)


def _canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares them (``PyYAML`` is ``pyyaml``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def running(qt: str | None, ffmpeg: Path | None) -> Running:
    """The running interpreter's facts; ``qt`` and ``ffmpeg`` are asked by the caller (Qt is
    imported only in the GUI package, the ffmpeg is the jobs' choice)."""
    found = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found[_canonical(name)] = dist.version
    return Running(
        python=".".join(str(n) for n in sys.version_info[:3]),
        openssl=" ".join(ssl.OPENSSL_VERSION.split()[:2]),
        sqlite=sqlite3.sqlite_version,
        qt=qt,
        ffmpeg=ffmpeg,
        ffmpeg_version=ffmpeg_version(ffmpeg) if ffmpeg is not None else None,
        distributions=found,
    )


class ReportUnreadable(Exception):
    """The bundle's report or its facts are missing or not readable."""


def read_stated(bundle: Bundle) -> tuple[dict[str, Any], str]:
    """The facts the bundle's report states, and the report's text."""
    try:
        text = (bundle.licences / REPORT_FILE).read_text(encoding="utf-8")
        stated = json.loads((bundle.licences / FACTS_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ReportUnreadable(f"the bundle's licence report cannot be read: {exc}") from exc
    if not isinstance(stated, dict) or stated.get("format") != FACTS_FORMAT:
        raise ReportUnreadable(
            f"{FACTS_FILE} is not in the layout this Fredica reads (format {FACTS_FORMAT})"
        )
    return stated, text


def _relative(path: Path, parts: tuple[Path, ...]) -> str | None:
    for part in parts:
        try:
            return path.resolve().relative_to(part.resolve()).as_posix()
        except ValueError:
            continue
    return None


def disagreements(stated: dict[str, Any], text: str, bundle: Bundle, now: Running) -> list[str]:
    """Where the report disagrees with the running bundle: one line each."""
    found: list[str] = []

    def differs(what: str, said: object, really: object) -> None:
        if said != really:
            found.append(f"it states {what} {said}, the bundle runs {really}")

    differs("Python", stated.get("python"), now.python)
    differs("OpenSSL as", stated.get("openssl"), now.openssl)
    differs("SQLite", stated.get("sqlite"), now.sqlite)
    if now.qt is not None:
        differs("Qt", stated.get("qt"), now.qt)
    for said in (f"Python {now.python}", now.openssl, f"SQLite {now.sqlite}"):
        if said not in text:
            found.append(f"its text does not name {said}")
    ffmpeg = stated.get("ffmpeg") or {}
    if now.ffmpeg is not None:
        differs("the ffmpeg program at", ffmpeg.get("file"), _relative(now.ffmpeg, bundle.parts))
        differs("ffmpeg", ffmpeg.get("version"), now.ffmpeg_version)
    for name in stated.get("files", []):
        if not any((part / name).exists() for part in bundle.parts):
            found.append(f"it names {name}, which the bundle lacks")
    listed: dict[str, str] = stated.get("distributions", {})
    for name, version in sorted(now.distributions.items()):
        if name in listed and listed[name] != version:
            found.append(f"it lists {name} {listed[name]}, the bundle carries {version}")
    return found


def confirmed(stated: dict[str, Any], now: Running) -> str:
    """What the report was found to state rightly, in a few words."""
    listed: dict[str, str] = stated.get("distributions", {})
    matched = sum(1 for n in now.distributions if n in listed)
    parts = [f"Python {now.python}", now.openssl, f"SQLite {now.sqlite}"]
    if now.qt is not None:
        parts.append(f"Qt {now.qt}")
    if now.ffmpeg_version is not None:
        parts.append(f"ffmpeg {now.ffmpeg_version}")
    return (
        f"the licence report names what runs ({', '.join(parts)}), the "
        f"{len(stated.get('files', []))} parts it places in the bundle are there, and "
        f"{matched} of its {len(listed)} distributions carry their metadata here at the "
        "version it lists"
    )
