"""Fredica's Windows installer: Inno Setup compiles ``packaging/windows/fredica.iss``.

The script is a template: the per-user "Open with" registrations for every media type of
:mod:`mediatypes` are generated into it (one ``[Registry]`` line per extension is not
something to keep in step by hand), then ``ISCC.exe`` compiles it with the version, the
bundle folder and the icon given on its command line (``/DAppVersion=…``). What the
installer does and leaves alone is said at the top of the ``.iss`` file.

Inno Setup is a Windows program: where its compiler is not found, :func:`make_installer`
says where to get it. From a Windows shell:
``python packaging/windows.py --bundle dist\\fredica --out dist``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import mediatypes

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "packaging" / "windows" / "fredica.iss"
MARKER = "; @generated: file associations"
#: What the Start menu, "Open with" and the last page of the installer start: the bundle's
#: windowed executable (no console window); ``fredica.exe`` beside it is the command line.
APP_EXE = "fredica-gui.exe"
#: The programmatic identifiers Fredica registers, one per kind of media.
PROGIDS: Mapping[mediatypes.Kind, tuple[str, str]] = {
    "video": ("Fredica.Video", "{cm:VideoFile}"),
    "audio": ("Fredica.Audio", "{cm:AudioFile}"),
}
INNO_SETUP_URL = "https://jrsoftware.org/isdl.php"


class InnoSetupError(Exception):
    """The installer cannot be made; the message says why and what to do."""


def _registry(subkey: str, name: str, data: str, flags: str = "") -> str:
    line = (
        f'Root: HKCU; Subkey: "Software\\Classes\\{subkey}"; ValueType: string; '
        f'ValueName: "{name}"; ValueData: "{data}"'
    )
    if flags:
        line += f"; Flags: {flags}"
    return line + "; Tasks: associate"


def association_lines() -> list[str]:
    """The ``[Registry]`` entries of the "associate" task, all under HKCU\\Software\\Classes.

    Each extension lists Fredica's ProgID under ``OpenWithProgids``, which adds Fredica to
    "Open with" without becoming the default handler; the uninstaller removes those values
    and the ProgIDs, and nothing of the keys other programs own.
    """
    lines: list[str] = []
    for kind, (progid, type_name) in PROGIDS.items():
        lines += [
            _registry(progid, "", type_name, "uninsdeletekey"),
            _registry(f"{progid}\\DefaultIcon", "", f"{{app}}\\{APP_EXE},0"),
            _registry(f"{progid}\\shell\\open\\command", "", f'""{{app}}\\{APP_EXE}"" ""%1""'),
        ]
        lines += [
            _registry(f"{ext}\\OpenWithProgids", progid, "", "uninsdeletevalue")
            for ext in mediatypes.extensions(kind)
        ]
    app_key = f"Applications\\{APP_EXE}"
    lines.append(_registry(app_key, "FriendlyAppName", "Fredica", "uninsdeletekey"))
    lines += [_registry(f"{app_key}\\SupportedTypes", ext, "") for ext in mediatypes.extensions()]
    return lines


def render_script(template: str | None = None) -> str:
    """The ``.iss`` script with the associations filled in where the marker line is."""
    text = TEMPLATE.read_text(encoding="utf-8") if template is None else template
    if text.count(MARKER) != 1:
        raise InnoSetupError(f"{TEMPLATE} must hold the line {MARKER!r} exactly once")
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(MARKER))
    return "\n".join([*lines[:at], *association_lines(), *lines[at + 1 :]]) + "\n"


def numeric_version(version: str) -> str:
    """``1.2.3`` from ``1.2.3rc1`` or ``1.2``: Windows file versions are numbers only."""
    match = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if match is None:
        raise InnoSetupError(f"version {version!r} does not start with a number")
    return ".".join(part or "0" for part in match.groups())


def setup_basename(version: str) -> str:
    return f"Fredica-{version}-setup"


def iscc_candidates(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where Inno Setup's compiler is looked for after ``PATH``: the default install folders
    of Inno Setup 6 and 7, for all users and for one."""
    env = os.environ if environ is None else environ
    bases = [env.get("ProgramFiles(x86)"), env.get("ProgramFiles")]
    local = env.get("LOCALAPPDATA")
    if local:
        bases.append(str(Path(local) / "Programs"))
    return [
        Path(base) / f"Inno Setup {major}" / "ISCC.exe"
        for major in (7, 6)
        for base in bases
        if base
    ]


def find_iscc(environ: Mapping[str, str] | None = None) -> Path | None:
    for name in ("ISCC.exe", "ISCC", "iscc"):
        found = shutil.which(name)
        if found:
            return Path(found)
    return next((p for p in iscc_candidates(environ) if p.is_file()), None)


def iscc_argv(
    iscc: Path, script: Path, bundle: Path, out: Path, version: str, icon: Path
) -> list[str]:
    """The compiler's command line: the preprocessor defines the script expects, the output
    folder and file name, then the script."""
    return [
        str(iscc),
        f"/DAppVersion={version}",
        f"/DNumericVersion={numeric_version(version)}",
        f"/DBundleDir={bundle}",
        f"/DIconFile={icon}",
        f"/O{out}",
        f"/F{setup_basename(version)}",
        str(script),
    ]


def make_installer(
    bundle: Path,
    out: Path,
    version: str,
    icons: Mapping[str, Path],
    *,
    iscc: Path | None = None,
) -> Path:
    """Compile the installer of ``bundle`` (``dist\\fredica``) into
    ``out\\Fredica-VERSION-setup.exe`` and return its path.

    ``iscc`` is the compiler to run (default: found on ``PATH`` or in Program Files). The
    rendered script is kept, and named in the error, when the compile fails.
    """
    if not (bundle / APP_EXE).is_file():
        raise InnoSetupError(
            f"{bundle / APP_EXE} is missing: build the bundle first (python packaging/build.py)"
        )
    icon = icons.get("ico")
    if icon is None or not icon.is_file():
        raise InnoSetupError("the .ico icon is missing; make it with python packaging/icons.py OUT")
    compiler = iscc or find_iscc()
    if compiler is None:
        raise InnoSetupError(
            "Inno Setup's compiler (ISCC.exe) was not found on PATH or in Program Files: "
            f"install Inno Setup 6 or later from {INNO_SETUP_URL} "
            "(or: choco install innosetup, winget install JRSoftware.InnoSetup)"
        )
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fredica-iss-"))
    script = work / "fredica.iss"
    # A byte order mark makes every Inno Setup 6 read the script as UTF-8.
    script.write_text(render_script(), encoding="utf-8-sig")
    argv = iscc_argv(compiler, script, bundle.resolve(), out.resolve(), version, icon.resolve())
    try:
        done = subprocess.run(argv, check=False)
    except OSError as exc:
        raise InnoSetupError(f"cannot run {compiler}: {exc}") from exc
    if done.returncode != 0:
        raise InnoSetupError(
            f"Inno Setup failed (exit code {done.returncode}) on {script}; "
            "its messages above name the line"
        )
    setup = out / f"{setup_basename(version)}.exe"
    if not setup.is_file():
        raise InnoSetupError(f"Inno Setup exited 0 but wrote no {setup}")
    shutil.rmtree(work, ignore_errors=True)
    return setup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "fredica")
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--version", help="default: the installed fredica's version")
    parser.add_argument("--icons", type=Path, help="a folder made by packaging/icons.py")
    parser.add_argument("--iscc", type=Path, help="ISCC.exe (default: found)")
    parser.add_argument(
        "--print-script", action="store_true", help="print the rendered .iss and stop"
    )
    args = parser.parse_args(argv)
    if args.print_script:
        sys.stdout.write(render_script())
        return 0
    if args.version:
        version = args.version
    else:
        from importlib.metadata import version as installed_version

        version = installed_version("fredica")
    if args.icons:
        icons = {"ico": args.icons / "fredica.ico"}
    else:
        from icons import render

        icons = render(ROOT / "build" / "icons")
    try:
        setup = make_installer(args.bundle, args.out, version, icons, iscc=args.iscc)
    except InnoSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"installer: {setup}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # icons.render draws with fredica_app's painter
    sys.exit(main())
