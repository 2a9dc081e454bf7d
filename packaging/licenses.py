"""The licence reports: the committed ``packaging/THIRD_PARTY.md``, and the one each bundle
carries. Generated, never hand-kept.

The bundle redistributes other people's software: some fifty Python distributions, the Python
runtime, Qt (through PySide6), two builds of FFmpeg (the ``ffmpeg`` program of imageio-ffmpeg
and the libraries inside PyAV's wheel) and two model files. What a distributor owes depends on
facts that move with every dependency bump: a new wheel may change its licence, an FFmpeg
build may switch from LGPL to GPL with one configure flag. So both reports are written from
what they describe:

- ``packaging/THIRD_PARTY.md`` covers what the project pins: the wheels ``uv.lock`` takes on
  the Python of ``.python-version`` (and, in a table, where other Pythons take others), on the
  reference system. It states no fact of the machine it is made on, so ``--check`` gives the
  same answer everywhere: in full where the environment is that Python's on that system, else
  against ``uv.lock`` alone (it says so).
- A bundle's own report (``--bundle``, run by ``packaging/build.py``) is written from the
  environment the bundle is built from, with that Python's patch release, OpenSSL and SQLite,
  after checking that every part it names is in the bundle; a JSON file beside it holds what
  ``fredica --selftest`` compares with the bundle that runs.

    python packaging/licenses.py                write packaging/THIRD_PARTY.md
    python packaging/licenses.py --check        exit 1 when that file disagrees with uv.lock
    python packaging/licenses.py --bundle DIR   write a built bundle's report and licence files

The text holds no timestamp and no path of the machine. The rules of the text are in
``licence_text`` (pure, tested on hand-made facts), the collecting in ``licence_facts``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import lockfile
from licence_facts import (
    APP_DISTRIBUTION,
    LOCK,
    REFERENCE_PLATFORM,
    ROOT,
    SPEC,
    collect_bundle,
    collect_pinned,
    copy_licence_texts,
    locked_versions,
    reference_python,
    why_not_the_reference,
)
from licence_text import LOCKED_HEADING, Facts, ReportError, locked_section, render

REPORT = ROOT / "packaging" / "THIRD_PARTY.md"


# --- The report a bundle carries ----------------------------------------------------------------

#: Beside the report in a bundle: what it states, for ``fredica --selftest`` to compare with the
#: bundle that runs (``fredica_app.bundled_report`` reads it).
BUNDLE_FACTS = "THIRD_PARTY.json"
BUNDLE_FACTS_FORMAT = 1


def bundle_dirs(bundle: Path) -> tuple[Path, tuple[Path, ...]]:
    """A one-folder bundle's ``licenses`` folder, and the folders its parts are in
    (``_internal``; in a macOS app, ``Contents/Frameworks`` and ``Contents/Resources``)."""
    contents = bundle / "Contents"
    if contents.is_dir():
        return contents / "Resources" / "licenses", (
            contents / "Frameworks",
            contents / "Resources",
        )
    return bundle / "licenses", (bundle / "_internal",)


def named_files(facts: Facts) -> list[str]:
    """The files and folders the report places in the bundle (relative to ``_internal``)."""
    named = []
    if facts.ffmpeg_program:
        named.append(facts.ffmpeg_program.location)
    if facts.qt:
        named.append(facts.qt.library_dir)
    if facts.pyav_ffmpeg:
        named += facts.pyav_ffmpeg.location.split(", ")
    named += [m.location for m in (facts.whisper, facts.vad) if m is not None]
    if facts.icons:
        named.append(facts.icons.licence_file)
    return named


def bundle_facts(facts: Facts) -> dict[str, object]:
    """What a bundle's report states that the running bundle can confirm, as JSON."""
    host = facts.host
    return {
        "format": BUNDLE_FACTS_FORMAT,
        "platform": facts.platform,
        "python": host.python_version if host else facts.python,
        "openssl": host.openssl_version if host else None,
        "sqlite": host.sqlite_version if host else None,
        "qt": facts.qt.qt_version if facts.qt else None,
        "ffmpeg": (
            {"file": facts.ffmpeg_program.location, "version": facts.ffmpeg_program.version}
            if facts.ffmpeg_program
            else None
        ),
        "files": named_files(facts),
        "distributions": {d.name: d.version for d in facts.distributions},
    }


def write_bundle_report(bundle: Path, spec: Path = SPEC) -> list[Path]:
    """Write the bundle's own report into its ``licenses`` folder, with the facts beside it
    and every licence file its wheels ship, after checking that each part the report names is
    in the bundle. The files written."""
    facts = collect_bundle(spec)
    dest, parts = bundle_dirs(bundle)
    missing = [f for f in named_files(facts) if not any((p / f).exists() for p in parts)]
    if missing:
        raise ReportError(
            f"the bundle lacks what its licence report names ({', '.join(missing)}): "
            "has fredica.spec stopped collecting it?"
        )
    dest.mkdir(parents=True, exist_ok=True)
    report, stated = dest / REPORT.name, dest / BUNDLE_FACTS
    report.write_text(render(facts), encoding="utf-8", newline="\n")
    stated.write_text(json.dumps(bundle_facts(facts), indent=2) + "\n", encoding="utf-8")
    return [report, stated, *copy_licence_texts(dest)]


def _section(text: str, heading: str) -> str:
    start = text.find(f"\n## {heading}\n")
    if start == -1:
        return ""
    end = text.find("\n## ", start + 1)
    return text[start + 1 : end if end != -1 else len(text)].rstrip("\n")


def listed(text: str) -> tuple[dict[str, str], set[str]]:
    """A report's distribution table (name -> version) and what it says the spec left out."""
    rows = {}
    for line in _section(text, "Python distributions").splitlines()[4:]:
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3:
            rows[cells[1]] = cells[2]
    said = re.search(r"left out by the spec: (.*?)\.$", text, re.MULTILINE)
    left_out = set() if said is None else set(said.group(1).split(", "))
    return rows, left_out - {"none of its closure"}


def check_against_lock(text: str, lock: lockfile.Lock, python: str) -> list[str]:
    """Where the committed report disagrees with what ``uv.lock`` pins: the versions it lists,
    the Python and the system it names, its section on other Pythons. A function of the two
    files alone: the same answer on every machine."""
    problems = []
    heading = f"Platform: `{REFERENCE_PLATFORM}`, Python {python}."
    if heading not in text:
        problems.append(f"it does not describe Python {python} on {REFERENCE_PLATFORM}")
    rows, left_out = listed(text)
    pinned = lock.closure(APP_DISTRIBUTION, python, REFERENCE_PLATFORM)
    for name, version in pinned.items():
        if name in rows and rows[name] != version:
            problems.append(f"it lists {name} {rows[name]}, uv.lock pins {version}")
        elif name not in rows and name not in left_out:
            problems.append(f"uv.lock pins {name} {version}, which it does not list")
    problems += [f"it lists {n}, which uv.lock does not take" for n in rows if n not in pinned]
    others = "\n".join(locked_section(python, locked_versions(lock, python, REFERENCE_PLATFORM)))
    if _section(text, LOCKED_HEADING) != others:
        problems.append(f"its *{LOCKED_HEADING}* section is not what uv.lock takes")
    return problems


def check(report: Path, lock_path: Path = LOCK) -> tuple[list[str], str | None]:
    """Check the committed report: what disagrees (empty when it is current), and, when this
    machine could check it against the lock only, why."""
    text = report.read_text(encoding="utf-8") if report.is_file() else None
    if text is None:
        return ["it is missing"], None
    lock = lockfile.Lock.read(lock_path)
    python = reference_python()
    problems = check_against_lock(text, lock, python)
    if problems:
        return problems, None
    why = why_not_the_reference(lock, python)
    if why is not None:
        return [], why
    if render(collect_pinned(lock_path=lock_path)) != text:
        return ["its text is not what the wheels pinned say"], None
    return [], None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=REPORT, help="the report's path")
    parser.add_argument("--check", action="store_true", help="fail if the report is stale")
    parser.add_argument(
        "--bundle", type=Path, metavar="DIR", help="write the report of the bundle built in DIR"
    )
    args = parser.parse_args(argv)
    output: Path = args.output
    try:
        if args.bundle is not None:
            write_bundle_report(args.bundle)
            return 0
        if args.check:
            problems, only_lock = check(output)
        else:
            text = render(collect_pinned())
    except (ReportError, lockfile.LockError, OSError) as exc:
        print(f"licenses.py: {exc}", file=sys.stderr)
        return 2
    if not args.check:
        output.write_text(text, encoding="utf-8", newline="\n")
        return 0
    if problems:
        regenerate = "python packaging/licenses.py"
        if output.resolve() != REPORT:
            regenerate += f" --output {output}"
        print(
            f"{output.name} is out of date ({'; '.join(problems[:3])}): run `{regenerate}` "
            "and commit it",
            file=sys.stderr,
        )
        return 1
    if only_lock is not None:
        print(f"{output.name}: checked against uv.lock only, since {only_lock}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
