"""The Linux ``.deb``: the one-folder bundle under ``/opt/fredica``, ``fredica`` on the PATH,
the desktop entry with its media types, the icon in the hicolor sizes.

Made with ``dpkg-deb`` from a staging tree (``--root-owner-group``, so no fakeroot is needed):

- ``/opt/fredica/`` — the bundle, as PyInstaller left it;
- ``/usr/bin/fredica`` — a symbolic link to ``/opt/fredica/fredica`` (the bundle finds its
  ``_internal/`` from the link's target);
- ``/usr/share/applications/fredica.desktop`` — ``Exec=fredica %F`` and the media MIME types,
  so that a file manager offers "Open with Fredica";
- ``/usr/share/icons/hicolor/SIZE/apps/fredica.png``;
- ``/usr/share/doc/fredica/`` — the copyright file and the third-party report.

No maintainer scripts: the desktop database and the icon cache are refreshed by the triggers
of Debian's desktop-file-utils and hicolor-icon-theme, and removing the package removes only
its files — the user's data (``~/.local/share/Fredica``, ``~/.config/Fredica``, the library
folders the user chose) is never the package's.

``Depends`` is read off the bundle: every shared library that an ELF file of the bundle needs
and the bundle does not carry (``ldd`` with the bundle's folders first), mapped to the Debian
package that holds it on the build machine (``dpkg -S``). What no package holds is reported.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "fredica"
INSTALL_DIR = Path("opt") / PACKAGE
MAINTAINER = "Fredica maintainers <maintainers@users.noreply.github.com>"
DESCRIPTION = """\
local-first desktop workbench for media processing
 Fredica transcodes, downloads and subtitles media in a durable queue that
 survives crashes and reboots, can be paused and cancelled for real, and tells
 you when it is done. Speech-to-text runs offline with an embedded Whisper
 model. A desktop window and a command line (fredica) drive the same engine."""

#: Packages the bundle needs whatever ldd finds on the build machine: the X11 platform plugin's
#: libraries (present on a desktop, perhaps not on the build machine), fonts for Qt to draw
#: text with, and the freedesktop MIME and icon machinery the desktop entry relies on.
ALWAYS = (
    "libxcb-cursor0",
    "libxkbcommon-x11-0",
    "libegl1",
    "libgl1",
    "libfontconfig1",
    "fonts-dejavu-core",
    "shared-mime-info",
    # The Wayland platform plugin's libraries beyond libwayland-client (which ldd finds).
    "libwayland-cursor0",
    "libwayland-egl1",
)
#: Recommended rather than required: the tray's notifications go through a D-Bus session.
RECOMMENDS = ("dbus-user-session", "hicolor-icon-theme", "desktop-file-utils")


@dataclass(frozen=True, slots=True)
class Deb:
    path: Path
    depends: list[str]
    unresolved: list[str]
    installed_kib: int


def debian_arch() -> str:
    return subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()


def elf_files(root: Path) -> Iterable[Path]:
    """The ELF files under ``root`` (executables and shared libraries; no symbolic links)."""
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield path


def _library_dirs(root: Path) -> list[str]:
    dirs = {str(p.parent) for p in root.rglob("*.so*")}
    return sorted(dirs)


_LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(not found|\S+)")


def needed_outside(bundle: Path) -> tuple[set[Path], set[str]]:
    """The libraries the bundle's ELF files load from outside the bundle, and the names the
    build machine cannot resolve at all."""
    env = {**os.environ, "LD_LIBRARY_PATH": ":".join(_library_dirs(bundle))}
    outside: set[Path] = set()
    missing: set[str] = set()
    root = str(bundle.resolve())
    for elf in elf_files(bundle):
        done = subprocess.run(["ldd", str(elf)], capture_output=True, text=True, env=env)
        for line in done.stdout.splitlines():
            m = _LDD_LINE.match(line)
            if m is None:
                continue
            name, where = m.groups()
            if where == "not found":
                missing.add(name)
            elif not str(Path(where).resolve()).startswith(root):
                outside.add(Path(where))
    return outside, missing


def owning_packages(libraries: Iterable[Path]) -> tuple[set[str], set[str]]:
    """The Debian packages holding ``libraries`` (architecture suffix dropped), and the
    libraries no installed package holds."""
    packages: set[str] = set()
    orphans: set[str] = set()
    for lib in libraries:
        candidates = dict.fromkeys([str(lib), str(lib.resolve())])
        for candidate in list(candidates):
            # Merged /usr: dpkg knows a file by the path its package installed it at.
            if candidate.startswith("/usr/lib/"):
                candidates[candidate.removeprefix("/usr")] = None
            elif candidate.startswith("/lib/"):
                candidates["/usr" + candidate] = None
        for candidate in candidates:
            done = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
            if done.returncode == 0:
                packages.add(done.stdout.split(":", 1)[0].split(",")[0].strip())
                break
        else:
            orphans.add(str(lib))
    return packages, orphans


def _glibc_floor() -> str:
    """``libc6 (>= X.Y)``: the glibc the bundle was built against (its Python and its wheels'
    libraries need no newer one, and may need that one)."""
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "libc6"], capture_output=True, text=True
    )
    m = re.match(r"(\d+\.\d+)", done.stdout)
    return f"libc6 (>= {m.group(1)})" if m else "libc6"


def depends_of(bundle: Path) -> tuple[list[str], list[str]]:
    """The ``Depends`` list for ``bundle`` and what could not be resolved to a package."""
    outside, missing = needed_outside(bundle)
    packages, orphans = owning_packages(outside)
    packages.discard("libc6")
    packages.update(ALWAYS)
    return [_glibc_floor(), *sorted(packages)], sorted(missing | orphans)


def control_text(version: str, arch: str, depends: list[str], installed_kib: int) -> str:
    return (
        f"Package: {PACKAGE}\n"
        f"Version: {version}\n"
        f"Architecture: {arch}\n"
        f"Maintainer: {MAINTAINER}\n"
        f"Installed-Size: {installed_kib}\n"
        f"Depends: {', '.join(depends)}\n"
        f"Recommends: {', '.join(RECOMMENDS)}\n"
        "Section: video\n"
        "Priority: optional\n"
        f"Description: {DESCRIPTION}\n"
    )


COPYRIGHT = """\
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: Fredica
Comment: Fredica's own code is under the MIT licence. The bundle in /opt/fredica
 also carries Python, Qt (PySide6, LGPL-3.0), two FFmpeg builds, CTranslate2,
 faster-whisper, the Whisper model and other third-party software under their own
 licences: see /usr/share/doc/fredica/THIRD_PARTY.md, and /opt/fredica/licenses
 for every licence text. PyAV's FFmpeg libraries include GPL-only codecs (x264,
 x265) and load into the app's process, so the package as a whole is
 distributed under the terms of the GNU GPL version 3 or later.

Files: *
License: GPL-3+
 On Debian systems, the full text of the GNU General Public License version 3
 can be found in /usr/share/common-licenses/GPL-3.
"""


def _tree_kib(root: Path) -> int:
    total = sum(p.lstat().st_size for p in root.rglob("*") if p.is_file() or p.is_symlink())
    return (total + 1023) // 1024


def stage(
    bundle: Path,
    staging: Path,
    version: str,
    *,
    desktop_file: Path,
    hicolor: Path,
    depends: list[str],
    arch: str,
) -> None:
    """Lay out the package's tree under ``staging`` (removed first)."""
    if staging.exists():
        shutil.rmtree(staging)
    target = staging / INSTALL_DIR
    shutil.copytree(bundle, target, symlinks=True)
    bindir = staging / "usr" / "bin"
    bindir.mkdir(parents=True)
    (bindir / PACKAGE).symlink_to(Path("/") / INSTALL_DIR / PACKAGE)
    apps = staging / "usr" / "share" / "applications"
    apps.mkdir(parents=True)
    shutil.copy2(desktop_file, apps / "fredica.desktop")
    shutil.copytree(hicolor, staging / "usr" / "share" / "icons" / "hicolor")
    doc = staging / "usr" / "share" / "doc" / PACKAGE
    doc.mkdir(parents=True)
    (doc / "copyright").write_text(COPYRIGHT, encoding="utf-8")
    # The report the bundle was built with (packaging/build.py writes it from the bundle).
    shutil.copy2(bundle / "licenses" / "THIRD_PARTY.md", doc / "THIRD_PARTY.md")
    for path in [staging, *staging.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    debian = staging / "DEBIAN"
    debian.mkdir()
    (debian / "control").write_text(
        control_text(version, arch, depends, _tree_kib(staging)), encoding="utf-8"
    )
    debian.chmod(0o755)


def build_deb(
    bundle: Path,
    out: Path,
    work: Path,
    version: str,
    *,
    desktop_file: Path,
    hicolor: Path,
    compression: str = "xz",
) -> Deb:
    """Make ``out/fredica_VERSION_ARCH.deb`` from the one-folder ``bundle``."""
    arch = debian_arch()
    depends, unresolved = depends_of(bundle)
    staging = work / "deb-root"
    stage(
        bundle,
        staging,
        version,
        desktop_file=desktop_file,
        hicolor=hicolor,
        depends=depends,
        arch=arch,
    )
    out.mkdir(parents=True, exist_ok=True)
    deb = out / f"{PACKAGE}_{version}_{arch}.deb"
    subprocess.run(
        [
            "dpkg-deb",
            "--root-owner-group",
            f"-Z{compression}",
            f"--threads-max={os.cpu_count() or 1}",
            "--build",
            str(staging),
            str(deb),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return Deb(deb, depends, unresolved, _tree_kib(staging))
