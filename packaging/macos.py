"""Fredica on macOS: the app's ``Info.plist``, the ``.dmg`` around it, signing, notarization.

- :func:`info_plist` is what ``packaging/fredica.spec`` gives PyInstaller's ``BUNDLE``:
  the app's names and versions, and the media types of :mod:`mediatypes` as document types,
  so Finder offers "Open With > Fredica" (never as the default: ``LSHandlerRank`` Alternate).
- :func:`make_dmg` puts ``Fredica.app`` and a link to ``/Applications`` in a compressed disk
  image, the usual drag-to-install window.
- :func:`sign` and :func:`notarize` run when their environment variables are set, and say
  in one line that they are skipped otherwise (an unsigned app still runs, after the user
  allows it in System Settings > Privacy & Security):

  ``FREDICA_CODESIGN_IDENTITY``  a "Developer ID Application: …" identity in the keychain;
  ``FREDICA_NOTARY_PROFILE``     a profile saved by ``xcrun notarytool store-credentials``,
  or ``APPLE_ID``, ``APPLE_TEAM_ID`` and ``APPLE_APP_PASSWORD`` (an app-specific password).

:func:`package` does all of it in order. Every command goes through a runner, so the
commands are checked on any system; they run on macOS only.
``python packaging/macos.py --app dist/Fredica.app --out dist``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import plistlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import mediatypes

ROOT = Path(__file__).resolve().parent.parent
BUNDLE_ID = "io.github.fredica.Fredica"
EXECUTABLE = "fredica"
ICON_FILE = "fredica.icns"
#: The oldest macOS the app runs on: the arm64 wheels it bundles are built for macOS 14
#: (av 18 and onnxruntime 1.32 are ``macosx_14_0_arm64``; PySide6 6.11 needs 13).
MINIMUM_MACOS = "14.0"
#: The hardened runtime (required for notarization) forbids writable code pages unless
#: allowed: ctypes callbacks (libffi closures) need them.
ENTITLEMENTS: Mapping[str, bool] = {
    "com.apple.security.cs.allow-unsigned-executable-memory": True,
}
ENV_IDENTITY = "FREDICA_CODESIGN_IDENTITY"
ENV_NOTARY_PROFILE = "FREDICA_NOTARY_PROFILE"
ENV_APPLE_CREDENTIALS = ("APPLE_ID", "APPLE_TEAM_ID", "APPLE_APP_PASSWORD")

#: Runs one command (argv) and returns its standard output; raises MacPackagingError when
#: the command fails.
Runner = Callable[[Sequence[str]], str]


class MacPackagingError(Exception):
    """A step of the macOS packaging failed; the message says which and what to do."""


def run(argv: Sequence[str]) -> str:
    """The real runner: standard error goes to the console, standard output is returned
    (and echoed). A failure names the tool, never the arguments (they can hold a password)."""
    tool = " ".join(argv[:2]) if argv[0] == "xcrun" else argv[0]
    try:
        done = subprocess.run(list(argv), check=False, stdout=subprocess.PIPE, text=True)
    except OSError as exc:
        raise MacPackagingError(f"cannot run {tool}: {exc}") from exc
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        raise MacPackagingError(
            f"{tool} failed (exit code {done.returncode}); its messages above say why"
        )
    return done.stdout


def bundle_version(version: str) -> str:
    """``1.2.3`` from ``1.2.3``, ``1.2.3rc1`` or ``1.2``: macOS wants up to three integers."""
    match = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if match is None:
        raise MacPackagingError(f"version {version!r} does not start with a number")
    return ".".join(part or "0" for part in match.groups())


def document_types() -> list[dict[str, Any]]:
    """``CFBundleDocumentTypes``: Fredica views video and audio, as an alternative app."""
    kinds: tuple[tuple[mediatypes.Kind, str], ...] = (("video", "Video"), ("audio", "Audio"))
    return [
        {
            "CFBundleTypeName": name,
            "CFBundleTypeRole": "Viewer",
            "LSHandlerRank": "Alternate",
            "LSItemContentTypes": [t.uti for t in mediatypes.of_kind(kind)],
        }
        for kind, name in kinds
    ]


def imported_types() -> list[dict[str, Any]]:
    """``UTImportedTypeDeclarations``: the third-party UTIs above, with the extensions and
    MIME types that map files to them (the system's own UTIs need no declaration)."""
    return [
        {
            "UTTypeIdentifier": t.uti,
            "UTTypeDescription": t.description,
            "UTTypeConformsTo": ["public.movie" if t.kind == "video" else "public.audio"],
            "UTTypeTagSpecification": {
                "public.filename-extension": [ext.lstrip(".") for ext in t.extensions],
                "public.mime-type": list(t.mime_types),
            },
        }
        for t in mediatypes.MEDIA_TYPES
        if not t.uti_by_system
    ]


def info_plist(version: str) -> dict[str, Any]:
    """The keys of ``Fredica.app/Contents/Info.plist`` (``BUNDLE(info_plist=…)``)."""
    short = bundle_version(version)
    return {
        "CFBundleName": "Fredica",
        "CFBundleDisplayName": "Fredica",
        "CFBundleIdentifier": BUNDLE_ID,
        "CFBundleExecutable": EXECUTABLE,
        "CFBundleIconFile": ICON_FILE,
        "CFBundlePackageType": "APPL",
        "CFBundleInfoDictionaryVersion": "6.0",
        "CFBundleShortVersionString": short,
        "CFBundleVersion": short,
        "CFBundleDevelopmentRegion": "en",
        # The languages the app speaks: native dialogs follow the user's choice among them.
        "CFBundleLocalizations": ["en", "zh_CN"],
        "LSMinimumSystemVersion": MINIMUM_MACOS,
        "LSApplicationCategoryType": "public.app-category.video",
        "NSPrincipalClass": "NSApplication",
        "NSHighResolutionCapable": True,
        "NSRequiresAquaSystemAppearance": False,  # Qt follows the dark appearance
        "CFBundleDocumentTypes": document_types(),
        "UTImportedTypeDeclarations": imported_types(),
    }


def dmg_name(version: str, arch: str) -> str:
    return f"Fredica-{version}-macos-{arch}.dmg"


def make_dmg(
    app: Path, out: Path, version: str, *, runner: Runner = run, arch: str | None = None
) -> Path:
    """``out/Fredica-VERSION-macos-ARCH.dmg``: a compressed (UDZO) image of a folder that
    holds the app and a link to ``/Applications``, to drag it onto."""
    if app.suffix != ".app" or not app.is_dir():
        raise MacPackagingError(f"{app} is not an app bundle: build it first")
    out.mkdir(parents=True, exist_ok=True)
    dmg = out / dmg_name(version, arch or platform.machine())
    work = Path(tempfile.mkdtemp(prefix="fredica-dmg-"))
    try:
        staging = work / "Fredica"
        staging.mkdir()
        # ditto keeps what a copy in Python would lose: extended attributes, signatures.
        runner(["ditto", str(app), str(staging / app.name)])
        (staging / "Applications").symlink_to("/Applications")
        runner(
            [
                "hdiutil", "create",
                "-volname", "Fredica",
                "-srcfolder", str(staging),
                "-fs", "HFS+",
                "-format", "UDZO",
                "-ov", str(dmg),
            ]
        )  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dmg


def sign(target: Path, *, runner: Runner = run, environ: Mapping[str, str] | None = None) -> bool:
    """Sign the app (every binary inside, hardened runtime, secure timestamp) or the disk
    image with ``$FREDICA_CODESIGN_IDENTITY``; False, with one line, when it is not set."""
    env = os.environ if environ is None else environ
    identity = env.get(ENV_IDENTITY, "")
    if not identity:
        print(f"macOS code signing skipped: {ENV_IDENTITY} is not set")
        return False
    if target.suffix != ".app":
        runner(["codesign", "--force", "--timestamp", "--sign", identity, str(target)])
        return True
    with tempfile.TemporaryDirectory(prefix="fredica-sign-") as tmp:
        entitlements = Path(tmp) / "entitlements.plist"
        entitlements.write_bytes(plistlib.dumps(dict(ENTITLEMENTS)))
        runner(
            [
                "codesign", "--force", "--deep", "--timestamp",
                "--options", "runtime",
                "--entitlements", str(entitlements),
                "--sign", identity,
                str(target),
            ]
        )  # fmt: skip
    runner(["codesign", "--verify", "--deep", "--strict", "--verbose=2", str(target)])
    return True


def notary_credentials(environ: Mapping[str, str] | None = None) -> list[str] | None:
    """notarytool's credential options from the environment; None when none are set."""
    env = os.environ if environ is None else environ
    profile = env.get(ENV_NOTARY_PROFILE, "")
    if profile:
        return ["--keychain-profile", profile]
    given = [k for k in ENV_APPLE_CREDENTIALS if env.get(k)]
    if not given:
        return None
    if len(given) < len(ENV_APPLE_CREDENTIALS):
        missing = ", ".join(k for k in ENV_APPLE_CREDENTIALS if k not in given)
        raise MacPackagingError(f"notarization needs {missing} as well as {', '.join(given)}")
    apple_id, team_id, password = (env[k] for k in ENV_APPLE_CREDENTIALS)
    return ["--apple-id", apple_id, "--team-id", team_id, "--password", password]


def notarize(dmg: Path, *, runner: Runner = run, environ: Mapping[str, str] | None = None) -> bool:
    """Submit the signed disk image to Apple's notary service, wait for its verdict, and
    staple the ticket to it; False, with one line, when no credentials are set."""
    credentials = notary_credentials(environ)
    if credentials is None:
        print(
            f"macOS notarization skipped: set {ENV_NOTARY_PROFILE}, or "
            f"{', '.join(ENV_APPLE_CREDENTIALS)}"
        )
        return False
    output = runner(
        [
            "xcrun", "notarytool", "submit", str(dmg),
            *credentials,
            "--wait", "--output-format", "json",
        ]
    )  # fmt: skip
    # notarytool exits 0 whatever the verdict: the status is in its report.
    report = _last_json_object(output)
    status = report.get("status")
    if status != "Accepted":
        submission = report.get("id", "<submission id>")
        raise MacPackagingError(
            f"Apple's notary service answered {status!r} for {dmg.name}; see why with: "
            f"xcrun notarytool log {submission} (and the same credentials)"
        )
    runner(["xcrun", "stapler", "staple", str(dmg)])
    return True


def _last_json_object(text: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        if line.lstrip().startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise MacPackagingError(f"notarytool printed no JSON report: {text.strip()[:200]!r}")


def package(
    app: Path,
    out: Path,
    version: str,
    *,
    runner: Runner = run,
    environ: Mapping[str, str] | None = None,
    arch: str | None = None,
) -> Path:
    """Sign the app, make the disk image, sign and notarize it: each step that has what it
    needs. Returns the ``.dmg``."""
    signed = sign(app, runner=runner, environ=environ)
    dmg = make_dmg(app, out, version, runner=runner, arch=arch)
    if not signed:
        if notary_credentials(environ) is not None:
            print("macOS notarization skipped: Apple notarizes signed apps only")
        return dmg
    sign(dmg, runner=runner, environ=environ)
    notarize(dmg, runner=runner, environ=environ)
    return dmg


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", type=Path, default=ROOT / "dist" / "Fredica.app")
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--version", help="default: the installed fredica's version")
    parser.add_argument(
        "--print-plist", action="store_true", help="print the Info.plist keys and stop"
    )
    args = parser.parse_args(argv)
    if args.version:
        version = args.version
    else:
        from importlib.metadata import version as installed_version

        version = installed_version("fredica")
    if args.print_plist:
        sys.stdout.write(plistlib.dumps(info_plist(version)).decode())
        return 0
    try:
        dmg = package(args.app, args.out, version)
    except MacPackagingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"disk image: {dmg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
