"""The licence report's text: facts in, Markdown out, and the rules that decide what it says
(which licence a distribution declares, the family it belongs to, what an FFmpeg build's
configure flags put it under). Pure: no environment is read here, so the rules are tested on
hand-made facts (``licence_facts`` collects the real ones, ``licenses`` is the command).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Iterable, Sequence

from packaging.utils import canonicalize_name

#: Covered by the Qt section of the report rather than as plain distributions.
QT_DISTRIBUTIONS = frozenset({"pyside6-essentials", "pyside6", "pyside6-addons", "shiboken6"})

FAMILIES = ("MIT", "BSD", "Apache-2.0", "LGPL", "GPL", "PSF", "other", "unknown")
#: A ``License`` field longer than this (or on several lines) is a whole licence text, not a name.
SHORT_LICENSE = 100

#: FFmpeg's configure refuses these external libraries without ``--enable-gpl``: a build that
#: links one is GPL whatever it reports (FFmpeg's EXTERNAL_LIBRARY_GPL_LIST).
FFMPEG_GPL_LIBRARIES = frozenset(
    (
        "frei0r libcdio libdavs2 librubberband libvidstab libx264 libx265 libxavs libxavs2 libxvid"
    ).split()
)


class ReportError(Exception):
    """The environment cannot be described: the message says what is missing and what to do."""


# --- Facts ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Distribution:
    """One Python distribution of the bundle, as its installed metadata describes it."""

    name: str
    version: str
    licence: str | None  # None: the metadata says nothing usable
    licence_source: str  # "License-Expression", "License", "classifiers" or ""
    classifiers: tuple[str, ...]  # the licence classifiers, "License :: " cut off
    home_page: str | None
    licence_files: tuple[str, ...]  # paths inside site-packages, as the wheel's RECORD has them
    native_libraries: tuple[str, ...]  # shared libraries vendored by auditwheel & co.


@dataclasses.dataclass(frozen=True)
class FfmpegBuild:
    """A build of FFmpeg as it describes itself."""

    version: str
    flags: tuple[str, ...]  # its configure flags
    stated_licence: str  # what the build says (``ffmpeg -L``, or ``avcodec_license()``)
    location: str  # where it sits inside site-packages (and so inside the bundle)


@dataclasses.dataclass(frozen=True)
class QtFacts:
    qt_version: str
    pyside_version: str
    licence: str  # the PySide6 wheel's licence expression
    library_dir: str  # the folder of Qt's shared libraries, relative to site-packages


@dataclasses.dataclass(frozen=True)
class ModelFile:
    name: str
    location: str  # relative to site-packages
    distribution: str
    version: str
    licence: str | None


@dataclasses.dataclass(frozen=True)
class IconSet:
    """The interface's icons: SVG files of one set, copied into the app's package."""

    name: str  # "Lucide"
    version: str
    licence: str
    count: int
    location: str  # relative to the bundle's ``_internal`` (the app's package)
    licence_file: str  # the set's licence text, beside its files


@dataclasses.dataclass(frozen=True)
class HostFacts:
    """What the Python a bundle is built with brings besides the wheels: its patch version and
    the OpenSSL and SQLite it was compiled with. Facts of one build machine, not pinned by the
    project: only the report built into a bundle states them."""

    python_version: str  # "3.11.7"
    openssl_version: str  # "OpenSSL 3.0.13"
    sqlite_version: str  # "3.40.1"


@dataclasses.dataclass(frozen=True)
class LockedVersions:
    """Where ``uv.lock`` takes other wheels on other Pythons: one column per range of Python
    minors that resolve alike (the first is the report's own Python), a row per distribution
    whose version is not the same in all of them ("" where a range takes none)."""

    ranges: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]


@dataclasses.dataclass(frozen=True)
class Facts:
    platform: str
    python: str  # the minor whose wheels the report lists: "3.11"
    host: HostFacts | None  # None: the committed report, which states no host fact
    locked: LockedVersions | None  # None: a bundle's report (one Python, its own)
    distributions: tuple[Distribution, ...]
    left_out: tuple[str, ...]  # of the closure, what the spec excludes
    qt: QtFacts | None
    ffmpeg_program: FfmpegBuild | None
    ffmpeg_recipe: tuple[str, ...]  # the build recipe imageio-ffmpeg's binaries/README.md names
    pyav_ffmpeg: FfmpegBuild | None
    whisper: ModelFile | None
    vad: ModelFile | None
    icons: IconSet | None = None


# --- Pure rules -------------------------------------------------------------------------------


def pick_licence(
    expression: str | None, license_field: str | None, classifiers: Sequence[str]
) -> tuple[str | None, str]:
    """The licence a distribution declares, and the field it came from.

    ``License-Expression`` (SPDX) first; then ``License`` when it is a name (short, one line),
    not a pasted licence text; then the trove classifiers. Nothing usable gives ``None``:
    an unknown licence is reported as unknown, never guessed."""
    if expression and expression.strip():
        return expression.strip(), "License-Expression"
    text = (license_field or "").strip()
    if text and text.upper() != "UNKNOWN" and "\n" not in text and len(text) <= SHORT_LICENSE:
        return text, "License"
    if classifiers:
        return " OR ".join(classifiers), "classifiers"
    return None, ""


def licence_classifiers(classifiers: Iterable[str]) -> tuple[str, ...]:
    """``License :: OSI Approved :: MIT License`` -> ``MIT License``; bare categories dropped."""
    names = []
    for classifier in classifiers:
        parts = [p.strip() for p in classifier.split("::")]
        if parts[0] != "License":
            continue
        parts = [p for p in parts[1:] if p != "OSI Approved"]
        if parts:
            names.append(parts[-1])
    return tuple(names)


def _term_family(term: str) -> str:
    t = term.upper()
    if "LGPL" in t or "LESSER GENERAL PUBLIC" in t or "LIBRARY GENERAL PUBLIC" in t:
        return "LGPL"
    if "GPL" in t or "GENERAL PUBLIC LICENSE" in t:
        return "GPL"
    if re.search(r"\bMIT\b", t) or t == "EXPAT":
        return "MIT"
    if "BSD" in t:
        return "BSD"
    if "APACHE" in t and not re.search(r"\b1\.[01]\b", t):
        return "Apache-2.0"
    if re.search(r"\bPSF\b", t) or "PYTHON SOFTWARE FOUNDATION" in t or t == "PYTHON-2.0":
        return "PSF"
    return "other"


def _restrictiveness(term: str) -> int:
    """How much a licence asks of a redistributor: strong copyleft 3, LGPL 2, file-level
    copyleft (MPL & co.) 1, permissive 0."""
    family = _term_family(term)
    if family in ("GPL", "LGPL"):
        return 3 if family == "GPL" else 2
    return 1 if re.search(r"\b(MPL|EPL|CDDL)\b|MOZILLA|ECLIPSE", term.upper()) else 0


def _terms(licence: str) -> tuple[list[str], bool]:
    """The licences an expression names, and whether it offers a choice (only ``OR``s)."""
    text = licence.replace("(", " ").replace(")", " ")
    parts = re.split(r"\s+(?:AND|OR)\s+", text)
    terms = [re.split(r"\s+WITH\s+", p)[0].strip() for p in parts if p.strip()]
    choice = bool(re.search(r"\sOR\s", text)) and not re.search(r"\sAND\s", text)
    return terms, choice


def licence_family(licence: str | None) -> str:
    """The family a licence belongs to, for the summary: one of :data:`FAMILIES`.

    A choice (``A OR B``) counts as the least demanding option, since the bundle may take it;
    a conjunction (``A AND B``) as the most demanding part; ties go to the first named."""
    if not licence or not licence.strip():
        return "unknown"
    terms, choice = _terms(licence)
    if not terms:
        return "unknown"
    pick = min if choice else max
    return _term_family(pick(terms, key=_restrictiveness))


def is_file_level_copyleft(licence: str | None) -> bool:
    return bool(licence) and any(_restrictiveness(t) == 1 for t in _terms(licence or "")[0])


def parse_ffmpeg_version(output: str) -> tuple[str, tuple[str, ...]]:
    """The version and the configure flags from ``ffmpeg -version``."""
    version = re.search(r"^ffmpeg version (\S+)", output, re.MULTILINE)
    config = re.search(r"^\s*configuration:\s*(.*)$", output, re.MULTILINE)
    if version is None or config is None:
        raise ReportError(
            "ffmpeg -version printed no version or configuration line: "
            "reinstall imageio-ffmpeg (`uv sync --reinstall-package imageio-ffmpeg`)"
        )
    return version.group(1), split_flags(config.group(1))


def split_flags(configuration: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(configuration))
    except ValueError:  # unbalanced quotes: the flags that matter have none
        return tuple(configuration.split())


def stated_ffmpeg_licence(licence_text: str) -> str:
    """``ffmpeg -L`` (a GNU notice) in a few words: "GPL version 3 or later"."""
    text = " ".join(licence_text.split())
    if "General Public License" not in text:
        return "not stated"
    kind = "LGPL" if "Lesser General Public License" in text else "GPL"
    version = re.search(r"version (\d+(?:\.\d+)?)", text)
    later = " or later" if "any later version" in text else ""
    return f"{kind} version {version.group(1)}{later}" if version else kind


def ffmpeg_licence(flags: Sequence[str]) -> str:
    """The licence an FFmpeg build's configure flags put it under (SPDX)."""
    enabled = {f.removeprefix("--enable-") for f in flags if f.startswith("--enable-")}
    if "nonfree" in enabled:
        return "nonfree (not redistributable)"
    v3 = "version3" in enabled
    if "gpl" in enabled or enabled & FFMPEG_GPL_LIBRARIES:
        return "GPL-3.0-or-later" if v3 else "GPL-2.0-or-later"
    return "LGPL-3.0-or-later" if v3 else "LGPL-2.1-or-later"


def decisive_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """The flags that decide an FFmpeg build's licence."""
    deciding = {"gpl", "version3", "nonfree"} | FFMPEG_GPL_LIBRARIES
    return tuple(f for f in flags if f.removeprefix("--enable-") in deciding and "=" not in f)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _family_table(dists: Sequence[Distribution]) -> list[str]:
    by_family: dict[str, list[str]] = {f: [] for f in FAMILIES}
    for d in dists:
        by_family[licence_family(d.licence)].append(d.name)
    lines = ["| Licence family | Distributions | Names |", "|---|---:|---|"]
    for family, names in by_family.items():
        if names:
            lines.append(f"| {family} | {len(names)} | {', '.join(names)} |")
    return lines


def _copyleft(facts: Facts) -> list[str]:
    lines = []
    if facts.qt:
        lines.append(
            f"- **Qt {facts.qt.qt_version}** with PySide6 and shiboken6: "
            f"`{facts.qt.licence}`, used under LGPL-3.0-only (see *Qt 6* below)."
        )
    if facts.ffmpeg_program:
        lines.append(
            f"- **The ffmpeg program** of imageio-ffmpeg: "
            f"{ffmpeg_licence(facts.ffmpeg_program.flags)}, a separate program "
            "(see *The ffmpeg program* below)."
        )
    if facts.pyav_ffmpeg:
        lines.append(
            f"- **PyAV's FFmpeg libraries**: {ffmpeg_licence(facts.pyav_ffmpeg.flags)} "
            "by their configure flags, loaded into the app's process "
            "(see *PyAV's FFmpeg libraries* below)."
        )
    for d in facts.distributions:
        family = licence_family(d.licence)
        if family in ("GPL", "LGPL") and canonicalize_name(d.name) not in QT_DISTRIBUTIONS:
            lines.append(f"- **{d.name}** {d.version}: `{d.licence}` ({d.licence_source}).")
    weak = [d.name for d in facts.distributions if is_file_level_copyleft(d.licence)]
    if weak:
        lines.append(
            f"- File-level copyleft (MPL-2.0): {', '.join(weak)}. Their files ship unmodified; "
            "their source is on PyPI and at their home pages."
        )
    return lines


def _disagreements(dists: Sequence[Distribution]) -> list[str]:
    lines = []
    for d in dists:
        if d.licence_source == "classifiers" or not d.classifiers:
            continue
        said = licence_family(" OR ".join(d.classifiers))
        if said != licence_family(d.licence):
            lines.append(
                f"- {d.name}: {d.licence_source} says `{d.licence}`, its classifiers say "
                f"`{'; '.join(d.classifiers)}`. Honour the more demanding of the two."
            )
    return lines


def _python_section(facts: Facts) -> list[str]:
    host = facts.host
    if host is None:
        version = f"{facts.python}.x (the patch release the bundle is built with)"
        among = (
            "OpenSSL (in `ssl`) and SQLite (in `sqlite3`, public domain), in the versions that "
            "Python was built with: the report built into each bundle names them"
        )
    else:
        version = host.python_version
        among = (
            f"{host.openssl_version} (in `ssl`) and SQLite {host.sqlite_version} (in "
            "`sqlite3`, public domain)"
        )
    return [
        "## Python",
        "",
        f"Python {version}: the interpreter, the parts of its standard library the app imports "
        "and their extension modules. Licence: PSF-2.0 (Python Software Foundation License "
        "Version 2), with the licences of the software Python incorporates listed at "
        f"<https://docs.python.org/{facts.python}/license.html>. Among them: {among}.",
    ]


LOCKED_HEADING = "Other Pythons"


def locked_section(python: str, locked: LockedVersions) -> list[str]:
    """What ``uv.lock`` takes on other Pythons (the committed report only)."""
    lines = [f"## {LOCKED_HEADING}", ""]
    if len(locked.ranges) < 2:
        return [*lines, "`uv.lock` takes the same wheels on every Python the project supports."]
    lines += [
        f"This report lists the wheels `uv.lock` takes on Python {python} (`.python-version`). "
        "On other Pythons it takes other versions of these distributions (and the same "
        "version of every other one); a bundle built there carries them, and the report "
        "built into it describes their licences.",
        "",
        f"| Name | {' | '.join(locked.ranges)} |",
        f"|---|{'---|' * len(locked.ranges)}",
    ]
    for name, versions in locked.rows:
        lines.append(f"| {name} | {' | '.join(v or 'not taken' for v in versions)} |")
    return lines


def _qt_section(qt: QtFacts | None) -> list[str]:
    lines = ["## Qt 6 (PySide6, shiboken6)", ""]
    if qt is None:
        return [*lines, "PySide6 is not installed here; nothing of Qt is in this bundle."]
    minor = ".".join(qt.qt_version.split(".")[:2])
    return [
        *lines,
        f"Qt {qt.qt_version} and its Python binding PySide6 {qt.pyside_version}. The PySide6 "
        f"and shiboken6 wheels declare `{qt.licence}`; Fredica uses them under "
        "**LGPL-3.0-only**.",
        "",
        "How the LGPL's terms are met in the one-folder bundle:",
        "",
        f"- Qt's shared libraries are separate, unmodified files: in the wheel under "
        f"`{qt.library_dir}`, in the bundle at `_internal/{qt.library_dir}` (inside the macOS "
        f"app, `Contents/Frameworks/{qt.library_dir}`). PySide6's own libraries (`libpyside6`, "
        "`libshiboken6`) sit beside them the same way. Nothing links Qt statically.",
        f"- A user may replace these files with their own build of Qt {qt.qt_version} (the same "
        "version, so that PySide6's binary interface matches); the app loads whatever is there "
        "when it starts. On macOS, re-sign the app afterwards (`codesign --force --deep -s - "
        "Fredica.app`).",
        f"- Source: Qt {qt.qt_version} at <https://download.qt.io/official_releases/qt/{minor}/"
        f"{qt.qt_version}/src/>; PySide6 and shiboken6 {qt.pyside_version} at "
        f"<https://code.qt.io/cgit/pyside/pyside-setup.git/> (tag `v{qt.pyside_version}`) and "
        "<https://download.qt.io/official_releases/QtForPython/>.",
        "- The texts of the LGPL-3.0 and of the GPL-3.0 it builds on must ship with the bundle: "
        "the PySide6 wheels carry no licence file.",
    ]


def _ffmpeg_program_section(build: FfmpegBuild | None, recipe: Sequence[str]) -> list[str]:
    lines = ["## The ffmpeg program (imageio-ffmpeg)", ""]
    if build is None:
        return [*lines, "imageio-ffmpeg ships no ffmpeg binary for this platform."]
    licence = ffmpeg_licence(build.flags)
    commit = re.search(r"-g([0-9a-f]{7,40})\b", build.version)
    source = "<https://ffmpeg.org/download.html> (git: <https://git.ffmpeg.org/ffmpeg.git>"
    source += f", commit `{commit.group(1)}`)" if commit else ")"
    recipe_text = ", ".join(f"`{r}`" for r in recipe) or "its release tooling"
    libraries = {f.removeprefix("--enable-") for f in build.flags if f.startswith("--enable-lib")}
    return [
        *lines,
        f"- File: `{build.location}` (in the bundle under `_internal/`).",
        f"- Version: `{build.version}`.",
        f"- Licence: **{licence}**. The binary's `-L` says: {build.stated_licence}. "
        f"Configure flags that decide it: {_code_list(decisive_flags(build.flags))}.",
        f"- External libraries built in: {', '.join(sorted(libraries)) or 'none'}.",
        "- What it means for the bundle: ffmpeg is a separate program that Fredica runs as a child "
        "process with a list of arguments; it is not linked into Fredica, so the GPL covers that "
        "binary, not the app beside it. Shipping it obliges the distributor to ship the GPL text "
        "and the binary's complete corresponding source (or a written offer of it) for as long "
        "as they ship the binary.",
        f"- Source: FFmpeg at {source}; the build recipe is named by imageio-ffmpeg's "
        f"`binaries/README.md`: {recipe_text} in <https://github.com/imageio/imageio-ffmpeg>, "
        "which pins the source of every library built in.",
    ]


def _code_list(items: Sequence[str]) -> str:
    return ", ".join(f"`{i}`" for i in items) or "none"


def _pyav_section(build: FfmpegBuild | None) -> list[str]:
    lines = ["## PyAV's FFmpeg libraries", ""]
    if build is None:
        return [*lines, "PyAV is not installed here."]
    derived = ffmpeg_licence(build.flags)
    gpl_libs = sorted(
        f.removeprefix("--enable-")
        for f in build.flags
        if f.removeprefix("--enable-") in FFMPEG_GPL_LIBRARIES
    )
    lines += [
        f"- Files: the FFmpeg {build.version} libraries and the codec libraries they use, "
        f"vendored in `{build.location}` (listed under *Native libraries* below).",
        f"- The libraries report: {build.stated_licence}. Configure flags that decide the "
        f"licence: {_code_list(decisive_flags(build.flags))}.",
        f"- Licence to honour: **{derived}**.",
    ]
    if gpl_libs:
        lines.append(
            f"- Why it differs from what they report: the build enables {', '.join(gpl_libs)}, "
            "GPL-licensed codec libraries that FFmpeg only allows in a GPL build. PyAV loads "
            "them into Fredica's own process, so whoever distributes the bundle must honour the "
            "GPL for the bundle as a whole: offer its complete corresponding source (Fredica's "
            "own, MIT, and the parts below). The MIT, BSD, Apache-2.0, PSF and LGPL-3.0 parts "
            "listed here are compatible with GPL-3.0; check anything under *other* or "
            "*unknown* by hand."
        )
    lines.append(
        "- Source: <https://github.com/PyAV-Org/pyav-ffmpeg> (the FFmpeg builds of PyAV's "
        "wheels, with the version of every library) and <https://github.com/PyAV-Org/PyAV>."
    )
    return lines


def _models_section(whisper: ModelFile | None, vad: ModelFile | None) -> list[str]:
    lines = ["## Models", ""]
    if whisper:
        lines.append(
            f"- Whisper `{whisper.name}` speech-to-text weights, in CTranslate2 format, at "
            f"`{whisper.location}`, from the {whisper.distribution} {whisper.version} wheel "
            f"(metadata licence: {whisper.licence or 'unknown'}). Whisper's weights are "
            "published by OpenAI under the MIT licence: <https://github.com/openai/whisper>."
        )
    else:
        lines.append("- No Whisper model wheel is installed.")
    lines.append(
        "- Resemblyzer 0.1.4's voice encoder (speaker embeddings, for DIARIZE), its weights "
        "unchanged, converted to ONNX by this project (`packaging/voice_encoder.py`), at "
        "`python_endpoints/jobs/assets/voice_encoder.onnx`: Apache-2.0, © 2019 Resemble.AI, "
        "the licence text beside it (`voice_encoder.LICENSE`): "
        "<https://github.com/resemble-ai/Resemblyzer>."
    )
    if vad:
        lines.append(
            f"- Silero VAD (voice activity detection) at `{vad.location}`, shipped by "
            f"{vad.distribution} {vad.version}: MIT, by the Silero team "
            "(<https://github.com/snakers4/silero-vad>)."
        )
    return lines


def _icons_section(icons: IconSet | None) -> list[str]:
    lines = ["## Icons", ""]
    if icons is None:
        return [*lines, "- No icon set is bundled."]
    lines.append(
        f"- {icons.count} icons of {icons.name} {icons.version} (`{icons.licence}`), SVG files "
        f"at `{icons.location}/`, unmodified; the licence text, with the Feather icons' MIT "
        f"notice it carries, is `{icons.licence_file}` beside them: <https://lucide.dev>."
    )
    return lines


def _distribution_table(dists: Sequence[Distribution]) -> list[str]:
    lines = [
        "| Name | Version | Licence | Home page | Licence files in the wheel |",
        "|---|---|---|---|---|",
    ]
    for d in dists:
        licence = "**unknown**" if d.licence is None else f"`{_cell(d.licence)}`"
        if d.licence_source == "classifiers":
            licence += " (classifiers)"
        home = f"<{d.home_page}>" if d.home_page else ""
        files = ", ".join(f"`{f}`" for f in d.licence_files) or "none"
        lines.append(f"| {d.name} | {d.version} | {licence} | {home} | {files} |")
    return lines


def render(facts: Facts) -> str:
    """The report, from facts alone."""
    dists = sorted(facts.distributions, key=lambda d: canonicalize_name(d.name))
    facts_sorted = dataclasses.replace(facts, distributions=tuple(dists))
    left_out = ", ".join(facts.left_out) or "none of its closure"
    if facts.host is None:
        made = (
            "Generated by `python packaging/licenses.py` from the wheels `uv.lock` pins for "
            f"Python {facts.python}; do not edit by hand (`python packaging/licenses.py --check` "
            "fails when this file is stale). Each bundle carries its own report, built from it "
            "by `packaging/build.py`."
        )
    else:
        made = (
            "Generated by `packaging/build.py` from this bundle and the environment it was "
            "built from, and checked against the bundle's files; `fredica --selftest` checks it "
            "against the running bundle."
        )
    lines = [
        "# Third-party software in Fredica",
        "",
        made,
        "",
        f"Platform: `{facts.platform}`, Python {facts.python}. Fredica itself is MIT-licensed.",
        "",
        "## Summary",
        "",
        f"{len(dists)} Python distributions (the runtime dependencies of fredica, followed "
        "recursively), plus Python itself, Qt, two FFmpeg builds, two model files and a set of "
        "icons. Not in "
        f"the bundle: the optional `sites` extra (yt-dlp); left out by the spec: {left_out}.",
        "",
        *_family_table(dists),
        "",
        "## Copyleft parts",
        "",
        *_copyleft(facts_sorted),
    ]
    disagreements = _disagreements(dists)
    if disagreements:
        lines += ["", "## Metadata that disagrees with itself", "", *disagreements]
    lines += [
        "",
        *_python_section(facts),
        "",
        *(locked_section(facts.python, facts.locked) if facts.locked else []),
        *([""] if facts.locked else []),
        *_qt_section(facts.qt),
        "",
        *_ffmpeg_program_section(facts.ffmpeg_program, facts.ffmpeg_recipe),
        "",
        *_pyav_section(facts.pyav_ffmpeg),
        "",
        *_models_section(facts.whisper, facts.vad),
        "",
        *_icons_section(facts.icons),
        "",
        "## Python distributions",
        "",
        *_distribution_table(dists),
    ]
    native = [d for d in dists if d.native_libraries]
    if native:
        lines += ["", "## Native libraries inside wheels", ""]
        lines += [f"- {d.name}: {', '.join(d.native_libraries)}" for d in native]
    return "\n".join(lines) + "\n"
