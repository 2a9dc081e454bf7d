"""Install the ``.deb`` into a clean Debian root and check that Fredica works there.

    python packaging/check_deb.py dist/fredica_0.1.0_amd64.deb [--root DIR] [--keep]

The root is made by ``debootstrap --variant=minbase`` from Debian's packages: no Python in it,
nothing but what the package pulls in, so whatever Fredica needs must come from the bundle or
the package's ``Depends``. Inside it (``chroot``), with no display:

1. ``apt-get install ./fredica.deb`` (its dependencies from Debian);
2. ``fredica --version``, ``fredica --selftest`` and
   ``fredica process --sample --template subtitles``, each checked;
3. ``apt-get purge fredica``: nothing of the package is left, the user's data is.

Each command runs in a mount namespace of its own (``unshare --mount``) where ``/proc`` and a
fresh ``/dev/shm`` are mounted for it: the mounts end with the command, so the root never holds
a mount of the host's that removing it could reach through. Needs root, ``debootstrap`` and
``unshare``; :class:`CannotCheck` says which is missing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SUITE = "bookworm"
MIRROR = os.environ.get("FREDICA_DEBIAN_MIRROR", "http://deb.debian.org/debian")
#: The user's home inside the Debian root: a folder of the root's own, made by :func:`check`.
HOME = "/var/lib/fredica-check"
ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": HOME,
    "LANG": "C.UTF-8",
    "DEBIAN_FRONTEND": "noninteractive",
    "QT_QPA_PLATFORM": "offscreen",
}
#: Mounts ``/proc`` and a new ``/dev/shm`` in the root, then runs the command in it. The
#: script is fixed; the root and the command reach it as arguments, never as shell text.
_ENTER = (
    'root="$1"; shift; '
    'mount -t proc proc "$root/proc" && '
    'mkdir -p "$root/dev/shm" && mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm" && '
    'exec chroot "$root" "$@"'
)
USER_DATA = f"{HOME}/fredica-demo"
#: Starts of the window timed, each on a new data directory (the median is reported).
LAUNCHES = 3


class CannotCheck(Exception):
    """This machine cannot make or enter a Debian root (not root, no debootstrap, no
    mirror): the check is not made, and says why."""


class CheckFailed(Exception):
    """Fredica did not install, run or uninstall as it should."""


@dataclass
class Outcome:
    version: str = ""
    selftest: str = ""
    subtitles: str = ""
    files: list[str] = field(default_factory=list)
    left_after_purge: list[str] = field(default_factory=list)
    launch: list[float] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def can_check() -> str | None:
    """Why the check cannot run here, or None."""
    if os.name != "posix" or os.geteuid() != 0:
        return "making and entering a Debian root needs root"
    for tool in ("debootstrap", "unshare", "chroot", "mount"):
        if shutil.which(tool) is None:
            return f"no {tool} on this machine (apt-get install debootstrap util-linux)"
    return None


def make_root(root: Path, *, suite: str = SUITE, mirror: str = MIRROR) -> None:
    """A minimal Debian root at ``root`` (made anew)."""
    why = can_check()
    if why is not None:
        raise CannotCheck(why)
    done = subprocess.run(
        # In a mount namespace of its own too: what debootstrap mounts in the root (/proc,
        # /sys while packages configure) cannot outlive it.
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "debootstrap",
            "--variant=minbase",
            suite,
            str(root),
            mirror,
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-8:])
        raise CannotCheck(f"debootstrap could not make a {suite} root from {mirror}:\n{tail}")
    resolv = Path("/etc/resolv.conf")
    if resolv.is_file():  # apt inside the root reaches the mirror by name
        shutil.copy2(resolv, root / "etc" / "resolv.conf")


def in_root(
    root: Path,
    argv: Sequence[str],
    *,
    timeout: float = 600,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` inside the root; with ``check``, a failure raises :class:`CheckFailed`
    with what it printed."""
    done = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            _ENTER,
            "enter",
            str(root),
            *argv,
        ],
        capture_output=True,
        text=True,
        env={**ENV, **(env or {})},
        timeout=timeout,
    )
    if check and done.returncode != 0:
        raise CheckFailed(
            f"`{' '.join(argv)}` exited {done.returncode} in the Debian root:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


def _timed(outcome: Outcome, name: str, root: Path, argv: Sequence[str]) -> str:
    began = time.monotonic()
    done = in_root(root, argv)
    outcome.seconds[name] = round(time.monotonic() - began, 1)
    return done.stdout


def check(deb: Path, root: Path, expected_version: str | None = None) -> Outcome:
    """Install ``deb`` into the Debian root ``root`` (made by :func:`make_root`), run Fredica,
    purge it; raises :class:`CheckFailed` on the first thing wrong."""
    outcome = Outcome()
    if in_root(root, ["sh", "-c", "command -v python3"], check=False).returncode == 0:
        raise CheckFailed("the Debian root has a python3: the check would prove nothing")
    (root / HOME.lstrip("/")).mkdir(parents=True, exist_ok=True)
    shutil.copy2(deb, root / "tmp" / deb.name)
    _timed(outcome, "apt-get update", root, ["apt-get", "update", "-qq"])
    _timed(
        outcome,
        "install",
        root,
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", f"/tmp/{deb.name}"],
    )
    (root / "tmp" / deb.name).unlink()
    outcome.files = [
        line
        for line in in_root(root, ["dpkg-query", "-L", "fredica"]).stdout.splitlines()
        if line.strip() and line != "/."
    ]
    outcome.version = _timed(outcome, "fredica --version", root, ["fredica", "--version"]).strip()
    if not outcome.version.startswith("fredica ") or (
        expected_version is not None and outcome.version != f"fredica {expected_version}"
    ):
        raise CheckFailed(f"fredica --version printed {outcome.version!r}")
    outcome.selftest = _timed(outcome, "fredica --selftest", root, ["fredica", "--selftest"])
    _timed(
        outcome,
        "process --sample --template subtitles",
        root,
        ["fredica", "--data-dir", USER_DATA, "process", "--sample", "--template", "subtitles"],
    )
    srts = sorted((root / USER_DATA.lstrip("/") / "library").glob("*/fredica-sample.srt"))
    if not srts:
        raise CheckFailed(f"no subtitles written under {USER_DATA}/library")
    outcome.subtitles = srts[0].read_text(encoding="utf-8")
    if "hello" not in outcome.subtitles.lower() or "-->" not in outcome.subtitles:
        raise CheckFailed(f"the subtitles do not hold the sample's words:\n{outcome.subtitles}")
    outcome.launch = [launch_to_window(root, f"{HOME}/launch-{n}") for n in range(LAUNCHES)]
    # The default data directory too: made by a command, kept by the purge.
    in_root(root, ["fredica", "runs"])
    _timed(outcome, "purge", root, ["apt-get", "purge", "-y", "-qq", "fredica"])
    outcome.left_after_purge = [
        f
        for f in outcome.files
        if os.path.lexists(root / f.lstrip("/")) and not _shared_dir(root, f)
    ]
    if outcome.left_after_purge:
        raise CheckFailed("the purge left: " + ", ".join(outcome.left_after_purge[:20]))
    for kept in (USER_DATA, f"{HOME}/.local/share/Fredica"):
        if not (root / kept.lstrip("/")).is_dir():
            raise CheckFailed(f"the purge removed the user's data {kept}")
    return outcome


def remove_root(root: Path) -> None:
    """Remove the root, unless something is mounted in it (then it is left, and said)."""
    resolved = str(root.resolve())
    mounts = Path("/proc/mounts").read_text().split("\n") if Path("/proc/mounts").exists() else []
    held = [
        m.split()[1] for m in mounts if len(m.split()) > 1 and m.split()[1].startswith(resolved)
    ]
    if held:
        raise CheckFailed(f"not removing {root}: still mounted there: {', '.join(held)}")
    shutil.rmtree(root, ignore_errors=True)


def launch_to_window(root: Path, data_dir: str) -> float:
    """Seconds from starting ``fredica gui`` in the root (a new data directory, offscreen) to
    its window painted, as the window itself reports it (``FREDICA_LAUNCH_PROBE``)."""
    began = time.time()
    done = in_root(
        root, ["fredica", "--data-dir", data_dir, "gui"], env={"FREDICA_LAUNCH_PROBE": "1"}
    )
    painted = [line for line in done.stdout.splitlines() if line.startswith("painted ")]
    if not painted:
        raise CheckFailed(f"the window never said it was painted:\n{done.stdout}{done.stderr}")
    return round(float(painted[0].split()[1]) - began, 2)


def _shared_dir(root: Path, path: str) -> bool:
    """A folder other packages own too (``/usr/share/icons/hicolor/…``): dpkg leaves it."""
    target = root / path.lstrip("/")
    return target.is_dir() and not target.is_symlink() and not path.startswith("/opt/fredica")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("deb", type=Path)
    parser.add_argument(
        "--root",
        type=Path,
        help="the Debian root: made there, or used if one is there (default: a new one)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the root afterwards")
    args = parser.parse_args(argv)
    root = args.root or Path(tempfile.mkdtemp(prefix="fredica-debroot-"))
    try:
        if (root / "usr" / "bin" / "apt-get").exists():
            print(f"using the Debian root already in {root}")
        else:
            make_root(root)
        outcome = check(args.deb.resolve(), root)
    except CannotCheck as exc:
        print(f"cannot check here: {exc}", file=sys.stderr)
        return 2
    except CheckFailed as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            remove_root(root)
    print(outcome.version)
    print(outcome.selftest.rstrip())
    print(f"{len(outcome.files)} paths installed, none left after the purge; the user's data kept")
    print(f"launch to window painted: {', '.join(f'{s:.2f}' for s in outcome.launch)} s")
    for name, seconds in outcome.seconds.items():
        print(f"  {name:<40} {seconds:>6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
