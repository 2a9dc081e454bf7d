"""Fredica as an AppImage: one file that runs on most Linux distributions, nothing installed.

:func:`make_appdir` lays out ``Fredica.AppDir`` around the one-folder bundle::

    Fredica.AppDir/
      AppRun                        runs usr/lib/fredica/fredica with the arguments given
      fredica.desktop               the desktop entry appimagetool reads (Name, Icon, MimeType)
      fredica.png, .DirIcon         the icon the desktop entry names
      usr/lib/fredica/              the bundle: fredica and _internal/
      usr/share/applications/fredica.desktop
      usr/share/icons/hicolor/SIZExSIZE/apps/fredica.png

:func:`make_appimage` packs it with appimagetool. appimagetool is a download (an AppImage
itself, from its GitHub releases) that not every build machine can fetch: when it is
neither given nor on ``PATH`` the AppDir is left ready and the exact commands to finish
are printed, so nothing pretends an AppImage was made.

``python packaging/appimage.py --bundle dist/fredica --out dist [--tool PATH]`` runs both.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESKTOP_FILE = ROOT / "packaging" / "linux" / "fredica.desktop"
APP_ID = "fredica"

#: The appimagetool release the commands below fetch (a pinned one: the "continuous" tag
#: moves).
APPIMAGETOOL_RELEASE = "1.9.0"
APPIMAGETOOL_URL = (
    "https://github.com/AppImage/appimagetool/releases/download/"
    f"{APPIMAGETOOL_RELEASE}/appimagetool-{{arch}}.AppImage"
)

# The runtime mounts the image with FUSE and runs AppRun; APPDIR is set by it. Without it
# (an extracted AppDir, a test) the script finds itself.
APPRUN = """\
#!/bin/sh
# Fredica's AppImage entry point: run the bundled executable with the arguments given
# (files to open, or a fredica command).
here="${APPDIR:-$(dirname "$(readlink -f "$0")")}"
exec "$here/usr/lib/fredica/fredica" "$@"
"""


class AppImageError(Exception):
    """The AppDir or the AppImage cannot be made; the message says why and what to do."""


def machine_arch() -> str:
    """The architecture name appimagetool uses for this machine (``x86_64``, ``aarch64``)."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def desktop_entry(version: str) -> str:
    """The desktop entry inside the AppImage: the installed one, without ``TryExec`` (no
    ``fredica`` is on ``PATH`` when the entry comes from an AppImage, and a ``TryExec``
    that fails hides the entry) and with the version appimagetool records."""
    lines = [
        line
        for line in DESKTOP_FILE.read_text(encoding="utf-8").splitlines()
        if not line.startswith(("TryExec=", "X-AppImage-Version="))
    ]
    lines.append(f"X-AppImage-Version={version}")
    return "\n".join(lines) + "\n"


def make_appdir(bundle: Path, work: Path, version: str, icons: Mapping[str, Path]) -> Path:
    """Build ``work/Fredica.AppDir`` from the bundle folder (``dist/fredica``) and the icons
    of ``icons.render`` (``hicolor`` and ``png``); an existing one is replaced."""
    executable = bundle / APP_ID
    if not (executable.is_file() and os.access(executable, os.X_OK)):
        raise AppImageError(
            f"{executable} is not an executable: build the bundle first (python packaging/build.py)"
        )
    missing = [k for k in ("hicolor", "png") if k not in icons or not icons[k].exists()]
    if missing:
        raise AppImageError(
            f"icons missing: {', '.join(missing)}; make them with python packaging/icons.py OUT"
        )
    appdir = work / "Fredica.AppDir"
    if appdir.exists():
        shutil.rmtree(appdir)
    lib = appdir / "usr" / "lib" / APP_ID
    lib.parent.mkdir(parents=True)
    shutil.copytree(bundle, lib, symlinks=True)

    apprun = appdir / "AppRun"
    apprun.write_text(APPRUN, encoding="utf-8")
    apprun.chmod(0o755)

    entry = desktop_entry(version)
    applications = appdir / "usr" / "share" / "applications"
    applications.mkdir(parents=True)
    for target in (appdir / f"{APP_ID}.desktop", applications / f"{APP_ID}.desktop"):
        target.write_text(entry, encoding="utf-8")

    shutil.copytree(icons["hicolor"], appdir / "usr" / "share" / "icons" / "hicolor")
    shutil.copyfile(icons["png"], appdir / f"{APP_ID}.png")
    (appdir / ".DirIcon").symlink_to(f"{APP_ID}.png")
    return appdir


def appimage_name(version: str, arch: str) -> str:
    return f"Fredica-{version}-{arch}.AppImage"


def find_appimagetool() -> Path | None:
    for name in ("appimagetool", f"appimagetool-{machine_arch()}.AppImage"):
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def tool_env(version: str, arch: str) -> dict[str, str]:
    """What appimagetool reads from the environment. ``APPIMAGE_EXTRACT_AND_RUN`` lets the
    tool (an AppImage) run where FUSE is not available, as on CI runners and in containers."""
    return {"ARCH": arch, "VERSION": version, "APPIMAGE_EXTRACT_AND_RUN": "1"}


def tool_argv(tool: Path, appdir: Path, dest: Path) -> list[str]:
    return [str(tool), str(appdir), str(dest)]


def manual_commands(appdir: Path, out: Path, version: str, arch: str) -> list[str]:
    """The shell commands that finish the AppImage where appimagetool is missing."""
    dest = out / appimage_name(version, arch)
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in tool_env(version, arch).items())
    return [
        f"curl -fL -o appimagetool {APPIMAGETOOL_URL.format(arch=arch)}",
        "chmod +x appimagetool",
        f"{env} ./appimagetool {shlex.quote(str(appdir))} {shlex.quote(str(dest))}",
    ]


def make_appimage(appdir: Path, out: Path, version: str, tool: Path | None) -> Path | None:
    """Pack ``appdir`` into ``out/Fredica-VERSION-ARCH.AppImage`` with appimagetool (``tool``,
    or the one on ``PATH``) and return its path; without appimagetool, print the commands
    that would and return None."""
    arch = machine_arch()
    tool = tool or find_appimagetool()
    if tool is None:
        print("appimagetool is not installed: the AppDir is ready; to make the AppImage, run:")
        for command in manual_commands(appdir, out, version, arch):
            print(f"  {command}")
        return None
    out.mkdir(parents=True, exist_ok=True)
    dest = out / appimage_name(version, arch)
    dest.unlink(missing_ok=True)
    argv = tool_argv(tool, appdir, dest)
    try:
        done = subprocess.run(argv, env={**os.environ, **tool_env(version, arch)}, check=False)
    except OSError as exc:
        raise AppImageError(f"cannot run appimagetool ({tool}): {exc}") from exc
    if done.returncode != 0:
        raise AppImageError(
            f"appimagetool failed (exit code {done.returncode}); its output above says why"
        )
    if not dest.is_file():
        raise AppImageError(f"appimagetool exited 0 but wrote no {dest}")
    return dest


def _default_version() -> str:
    from importlib.metadata import version

    return version("fredica")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / APP_ID)
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "appimage")
    parser.add_argument("--version", help="default: the installed fredica's version")
    parser.add_argument("--tool", type=Path, help="appimagetool (default: found on PATH)")
    parser.add_argument(
        "--icons", type=Path, help="a folder made by packaging/icons.py (default: made now)"
    )
    args = parser.parse_args(argv)
    version = args.version or _default_version()
    if args.icons:
        icons = {"hicolor": args.icons / "hicolor", "png": args.icons / "fredica.png"}
    else:
        from icons import render

        icons = render(args.work / "icons")
    try:
        appdir = make_appdir(args.bundle, args.work, version, icons)
        print(f"AppDir: {appdir}")
        image = make_appimage(appdir, args.out, version, args.tool)
    except AppImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if image is not None:
        print(f"AppImage: {image}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # icons.render draws with fredica_app's painter
    sys.exit(main())
