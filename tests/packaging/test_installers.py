"""The installers' recipes: the media types, the AppImage's AppDir, the Inno Setup script and
compiler call, the macOS Info.plist and the commands that make, sign and notarize the .dmg.

Only Linux runs here, so: the AppDir is built and its AppRun executed for real (around a
stand-in bundle); the Inno Setup script is rendered and parsed, and a stand-in compiler
records how it is called; the macOS commands go through a recording runner. Each stand-in
says in its docstring that it is one.
"""

from __future__ import annotations

import configparser
import json
import os
import plistlib
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import appimage
import macos
import mediatypes
import pytest
import windows

from fredica_app.library.fingerprint import AUDIO_EXTENSIONS, MEDIA_EXTENSIONS
from tests.support.host import need_tool

ROOT = Path(__file__).resolve().parents[2]
DESKTOP_FILE = ROOT / "packaging" / "linux" / "fredica.desktop"

posix_only = pytest.mark.skipif(
    sys.platform == "win32", reason="POSIX: stand-in scripts, symbolic links, executable bits"
)
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="an AppImage runs on Linux"
)


def read_desktop_entry(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def validate_desktop_file(path: Path) -> None:
    tool = need_tool("desktop-file-validate", "desktop-file-utils")
    done = subprocess.run([tool, str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def write_tool(path: Path, body: str) -> Path:
    """Write an executable Python script (used for the stand-in tools)."""
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body), encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture(scope="session")
def icons(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real icon files, drawn by packaging/icons.py in a child process (its Qt
    application must not be the test process's)."""
    out = tmp_path_factory.mktemp("icons")
    subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "icons.py"), str(out)],
        check=True,
        capture_output=True,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    return {
        "hicolor": out / "hicolor",
        "png": out / "fredica.png",
        "ico": out / "fredica.ico",
        "icns": out / "fredica.icns",
    }


# --- the media types ------------------------------------------------------------------


def test_media_types_are_the_files_the_library_imports() -> None:
    assert set(mediatypes.extensions()) == MEDIA_EXTENSIONS
    assert set(mediatypes.extensions("audio")) == AUDIO_EXTENSIONS
    assert set(mediatypes.extensions("video")) == MEDIA_EXTENSIONS - AUDIO_EXTENSIONS


def test_media_types_name_each_extension_mime_type_and_uti_once() -> None:
    exts = mediatypes.extensions()
    assert len(exts) == len(set(exts))
    assert all(e.startswith(".") and e == e.lower() and " " not in e for e in exts)
    mimes = mediatypes.desktop_mime_types()
    assert len(mimes) == len(set(mimes))
    assert all(m.split("/")[0] in ("video", "audio") for m in mimes)
    utis = [t.uti for t in mediatypes.MEDIA_TYPES]
    assert len(utis) == len(set(utis))
    assert all(t.kind == t.mime.split("/")[0] for t in mediatypes.MEDIA_TYPES)


def test_desktop_file_declares_exactly_the_media_types() -> None:
    entry = read_desktop_entry(DESKTOP_FILE)
    assert entry["MimeType"] == mediatypes.desktop_mime_line()
    assert "audio/x-vorbis+ogg" in entry["MimeType"].split(";")  # an alias is kept


# --- the AppImage ---------------------------------------------------------------------


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A stand-in for the PyInstaller bundle: a ``fredica`` shell script that prints the
    path it runs from and its arguments, one a line, and an ``_internal`` folder with a
    library and a symbolic link to it, as PyInstaller makes."""
    folder = tmp_path / "dist" / "fredica"
    internal = folder / "_internal"
    internal.mkdir(parents=True)
    (internal / "libQt6Core.so.6.11.3").write_bytes(b"\x7fELF stand-in")
    (internal / "libQt6Core.so.6").symlink_to("libQt6Core.so.6.11.3")
    script = folder / "fredica"
    script.write_text('#!/bin/sh\nprintf "%s\\n" "$0" "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return folder


@posix_only
def test_appdir_has_the_layout_appimagetool_expects(
    bundle: Path, tmp_path: Path, icons: dict[str, Path]
) -> None:
    appdir = appimage.make_appdir(bundle, tmp_path / "work", "1.2.3", icons)

    assert appdir == tmp_path / "work" / "Fredica.AppDir"
    assert os.access(appdir / "AppRun", os.X_OK)
    lib = appdir / "usr" / "lib" / "fredica"
    assert os.access(lib / "fredica", os.X_OK)
    assert (lib / "_internal" / "libQt6Core.so.6").is_symlink()  # links stay links
    assert (appdir / "fredica.png").read_bytes() == icons["png"].read_bytes()
    assert os.readlink(appdir / ".DirIcon") == "fredica.png"
    for size in (16, 48, 256):
        assert (appdir / f"usr/share/icons/hicolor/{size}x{size}/apps/fredica.png").is_file()

    root_entry = appdir / "fredica.desktop"
    assert root_entry.read_text() == (appdir / "usr/share/applications/fredica.desktop").read_text()
    entry = read_desktop_entry(root_entry)
    assert entry["Icon"] == "fredica"
    assert entry["X-AppImage-Version"] == "1.2.3"
    assert "TryExec" not in entry
    assert entry["MimeType"] == mediatypes.desktop_mime_line()


@posix_only
def test_the_appdir_s_entry_passes_desktop_file_validate(
    bundle: Path, tmp_path: Path, icons: dict[str, Path]
) -> None:
    appdir = appimage.make_appdir(bundle, tmp_path / "work", "1.2.3", icons)
    validate_desktop_file(appdir / "fredica.desktop")


@linux_only
def test_apprun_runs_the_bundled_executable_with_the_arguments(
    bundle: Path, tmp_path: Path, icons: dict[str, Path]
) -> None:
    appdir = appimage.make_appdir(bundle, tmp_path / "work", "1.2.3", icons)
    args = ["two words", "--flag", "ünïcode", "$HOME", ""]
    expected = [str(appdir / "usr/lib/fredica/fredica"), *args]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = elsewhere / "fredica-link"
    link.symlink_to(appdir / "AppRun")
    env = {k: v for k, v in os.environ.items() if k != "APPDIR"}

    for argv0, environ in (
        (str(appdir / "AppRun"), env),  # an extracted AppDir
        (str(link), env),  # through a symbolic link: it finds its real folder
        ("./AppRun", {**env, "APPDIR": str(appdir)}),  # as the AppImage runtime runs it
    ):
        cwd = appdir if argv0 == "./AppRun" else elsewhere
        done = subprocess.run(
            [argv0, *args], cwd=cwd, env=environ, capture_output=True, text=True, check=True
        )
        assert done.stdout.split("\n")[:-1] == expected, argv0


@posix_only
def test_appdir_needs_a_built_bundle_and_the_icons(tmp_path: Path, icons: dict[str, Path]) -> None:
    with pytest.raises(appimage.AppImageError, match=r"build\.py"):
        appimage.make_appdir(tmp_path / "nothing", tmp_path / "work", "1.0", icons)
    folder = tmp_path / "fredica"
    folder.mkdir()
    (folder / "fredica").write_text("not executable")
    with pytest.raises(appimage.AppImageError, match="not an executable"):
        appimage.make_appdir(folder, tmp_path / "work", "1.0", icons)
    (folder / "fredica").chmod(0o755)
    with pytest.raises(appimage.AppImageError, match="icons missing: png"):
        appimage.make_appdir(folder, tmp_path / "work", "1.0", {"hicolor": icons["hicolor"]})


@posix_only
def test_appdir_is_made_anew(bundle: Path, tmp_path: Path, icons: dict[str, Path]) -> None:
    appdir = appimage.make_appdir(bundle, tmp_path / "work", "1.0", icons)
    stale = appdir / "usr" / "lib" / "fredica" / "left-from-last-time.so"
    stale.write_text("old")
    appimage.make_appdir(bundle, tmp_path / "work", "1.1", icons)
    assert not stale.exists()
    assert read_desktop_entry(appdir / "fredica.desktop")["X-AppImage-Version"] == "1.1"


@posix_only
def test_without_appimagetool_no_appimage_and_the_commands_are_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    appdir = tmp_path / "work" / "Fredica.AppDir"
    out = tmp_path / "dist"

    assert appimage.make_appimage(appdir, out, "1.2.3", None) is None

    printed = capsys.readouterr().out
    arch = appimage.machine_arch()
    assert (
        f"https://github.com/AppImage/appimagetool/releases/download/1.9.0/"
        f"appimagetool-{arch}.AppImage" in printed
    )
    assert f"ARCH={arch} VERSION=1.2.3 APPIMAGE_EXTRACT_AND_RUN=1 ./appimagetool" in printed
    assert f"{appdir} {out / f'Fredica-1.2.3-{arch}.AppImage'}" in printed
    assert not out.exists()


FAKE_APPIMAGETOOL = """\
'''A stand-in for appimagetool (fake): records its arguments and the environment it reads,
then writes the destination as the real tool does, or exits with FAKE_EXIT.'''
import json, os, sys
from pathlib import Path
record = {"argv": sys.argv[1:],
          "env": {k: os.environ.get(k) for k in ("ARCH", "VERSION", "APPIMAGE_EXTRACT_AND_RUN")}}
Path(__file__).with_suffix(".json").write_text(json.dumps(record))
code = int(os.environ.get("FAKE_EXIT", "0"))
if code == 0 and os.environ.get("FAKE_WRITE", "1") == "1":
    Path(sys.argv[2]).write_bytes(b"AppImage stand-in")
sys.exit(code)
"""


@posix_only
def test_appimagetool_is_given_the_appdir_the_destination_and_its_environment(
    tmp_path: Path,
) -> None:
    tool = write_tool(tmp_path / "appimagetool", FAKE_APPIMAGETOOL)
    appdir = tmp_path / "Fredica.AppDir"
    out = tmp_path / "dist"

    image = appimage.make_appimage(appdir, out, "1.2.3", tool)

    arch = appimage.machine_arch()
    assert image == out / f"Fredica-1.2.3-{arch}.AppImage"
    assert image.read_bytes() == b"AppImage stand-in"
    record = json.loads(tool.with_suffix(".json").read_text())
    assert record["argv"] == [str(appdir), str(image)]
    assert record["env"] == {"ARCH": arch, "VERSION": "1.2.3", "APPIMAGE_EXTRACT_AND_RUN": "1"}


@posix_only
def test_appimagetool_found_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_tool(bin_dir / "appimagetool", FAKE_APPIMAGETOOL)
    monkeypatch.setenv("PATH", str(bin_dir))
    image = appimage.make_appimage(tmp_path / "Fredica.AppDir", tmp_path / "dist", "2.0", None)
    assert image is not None and image.is_file()


@posix_only
def test_appimagetool_failures_are_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = write_tool(tmp_path / "appimagetool", FAKE_APPIMAGETOOL)
    monkeypatch.setenv("FAKE_EXIT", "3")
    with pytest.raises(appimage.AppImageError, match="exit code 3"):
        appimage.make_appimage(tmp_path / "A.AppDir", tmp_path / "dist", "1.0", tool)
    monkeypatch.setenv("FAKE_EXIT", "0")
    monkeypatch.setenv("FAKE_WRITE", "0")
    with pytest.raises(appimage.AppImageError, match="wrote no"):
        appimage.make_appimage(tmp_path / "A.AppDir", tmp_path / "dist", "1.0", tool)
    with pytest.raises(appimage.AppImageError, match="cannot run appimagetool"):
        appimage.make_appimage(
            tmp_path / "A.AppDir", tmp_path / "dist", "1.0", tmp_path / "missing-tool"
        )


# --- Windows: the Inno Setup script ---------------------------------------------------


def iss_sections(script: str) -> dict[str, list[str]]:
    """The script's entries by section, without comments, blank lines and preprocessor
    lines (``#…``)."""
    sections: dict[str, list[str]] = {}
    current = ""
    for raw in script.splitlines():
        line = raw.strip()
        if not line or line.startswith((";", "#")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            assert current not in sections, f"section [{current}] twice"
            sections[current] = []
        else:
            sections.setdefault(current, []).append(line)
    return sections


def iss_params(entry: str) -> dict[str, str]:
    """``Name: "x"; Flags: a b`` as a dict (values unquoted, doubled quotes undone)."""
    params: dict[str, str] = {}
    for part in entry.split("; "):
        key, _, value = part.partition(": ")
        value = value.strip()
        if value.startswith('"') and value.endswith('"'):
            value = value[1:-1].replace('""', '"')
        params[key.strip()] = value
    return params


@pytest.fixture(scope="module")
def iss() -> dict[str, list[str]]:
    return iss_sections(windows.render_script())


def setup_directives(iss: dict[str, list[str]]) -> dict[str, str]:
    return {key: value for key, _, value in (line.partition("=") for line in iss["Setup"])}


def test_iss_installs_per_user_without_administrator_rights(iss: dict[str, list[str]]) -> None:
    assert {"Setup", "Languages", "Tasks", "Files", "Icons", "Registry", "Run"} <= set(iss)
    setup = setup_directives(iss)
    assert setup["PrivilegesRequired"] == "lowest"
    # Per user only: the associations go to HKCU, which an all-users install would not own.
    assert "PrivilegesRequiredOverridesAllowed" not in setup
    assert setup["DefaultDirName"] == r"{autopf}\Fredica"
    assert setup["AppVersion"] == "{#AppVersion}"
    # "{{" is a literal brace: the AppId is a braced GUID.
    assert re.fullmatch(r"\{\{[0-9A-F]{8}(-[0-9A-F]{4}){3}-[0-9A-F]{12}\}", setup["AppId"])
    assert setup["ChangesAssociations"] == "yes"
    assert setup["SetupIconFile"] == "{#IconFile}"


def test_iss_requires_the_version_on_the_command_line() -> None:
    script = windows.render_script()
    guard = script.index("#ifndef AppVersion")
    assert script[guard:].splitlines()[1].strip().startswith("#error")


def test_iss_copies_the_whole_bundle_and_adds_the_shortcuts(iss: dict[str, list[str]]) -> None:
    (files,) = (iss_params(e) for e in iss["Files"])
    assert files["Source"] == r"{#BundleDir}\*"
    assert files["DestDir"] == "{app}"
    assert {"recursesubdirs", "createallsubdirs", "ignoreversion"} <= set(files["Flags"].split())
    icons = [iss_params(e) for e in iss["Icons"]]
    assert {i["Name"]: i.get("Tasks") for i in icons} == {
        r"{autoprograms}\Fredica": None,
        r"{autodesktop}\Fredica": "desktopicon",
    }
    tasks = {t["Name"]: t for t in map(iss_params, iss["Tasks"])}
    assert set(tasks) == {"desktopicon", "associate"}
    assert all("unchecked" in t["Flags"] for t in tasks.values())


def test_iss_uninstall_leaves_the_users_data_alone() -> None:
    script = windows.render_script()
    sections = iss_sections(script)
    assert "UninstallDelete" not in sections
    for constant in ("{localappdata}", "{userappdata}", "{autoappdata}", "{commonappdata}"):
        assert constant not in script.lower()
    for entry in map(iss_params, sections["InstallDelete"]):
        assert entry["Name"].startswith("{app}\\") and ".." not in entry["Name"]


def test_iss_file_associations_are_per_user_open_with_entries_of_the_task(
    iss: dict[str, list[str]],
) -> None:
    entries = [iss_params(e) for e in iss["Registry"]]
    assert entries
    for entry in entries:
        assert entry["Root"] == "HKCU"
        assert entry["Subkey"].startswith("Software\\Classes\\")
        assert entry["Tasks"] == "associate"
        key = entry["Subkey"].removeprefix("Software\\Classes\\")
        # Never the default value of an extension's key: that would make Fredica the
        # default program for it.
        assert not (key.startswith(".") and "\\" not in key)
    progid_of = {"video": "Fredica.Video", "audio": "Fredica.Audio"}
    for t in mediatypes.MEDIA_TYPES:
        for ext in t.extensions:
            (entry,) = (
                e for e in entries if e["Subkey"] == f"Software\\Classes\\{ext}\\OpenWithProgids"
            )
            assert entry["ValueName"] == progid_of[t.kind]
            assert entry["Flags"] == "uninsdeletevalue"
            assert any(
                e["ValueName"] == ext and e["Subkey"].endswith("fredica-gui.exe\\SupportedTypes")
                for e in entries
            )
    for progid in progid_of.values():
        keys = {e["Subkey"]: e for e in entries if progid in e["Subkey"]}
        assert keys[f"Software\\Classes\\{progid}"]["Flags"] == "uninsdeletekey"
        command = keys[f"Software\\Classes\\{progid}\\shell\\open\\command"]
        assert command["ValueData"] == '"{app}\\fredica-gui.exe" "%1"'


def test_iss_template_must_hold_the_marker_once() -> None:
    with pytest.raises(windows.InnoSetupError, match="exactly once"):
        windows.render_script("[Setup]\nAppName=x\n")
    marker = windows.MARKER
    with pytest.raises(windows.InnoSetupError, match="exactly once"):
        windows.render_script(f"{marker}\n{marker}\n")


def test_windows_file_version_is_numeric() -> None:
    assert windows.numeric_version("1.2.3") == "1.2.3"
    assert windows.numeric_version("1.2.3rc1") == "1.2.3"
    assert windows.numeric_version("0.4") == "0.4.0"
    with pytest.raises(windows.InnoSetupError, match="does not start with a number"):
        windows.numeric_version("dev")


FAKE_ISCC = """\
'''A stand-in for Inno Setup's ISCC.exe (fake): records its arguments and the script it
was given, then writes the setup file where /O and /F say, or exits with FAKE_EXIT.'''
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
here = Path(__file__).parent
(here / "iscc-record.json").write_text(json.dumps(
    {"argv": args, "script": Path(args[-1]).read_text(encoding="utf-8-sig"),
     "bom": Path(args[-1]).read_bytes().startswith(b"\\xef\\xbb\\xbf")}))
code = int(os.environ.get("FAKE_EXIT", "0"))
if code == 0:
    out = next(a[2:] for a in args if a.startswith("/O"))
    name = next(a[2:] for a in args if a.startswith("/F"))
    Path(out, name + ".exe").write_bytes(b"MZ stand-in")
sys.exit(code)
"""


@pytest.fixture
def win_bundle(tmp_path: Path) -> Path:
    """A stand-in for the Windows bundle: only the file names the recipe checks."""
    folder = tmp_path / "dist" / "fredica"
    (folder / "_internal").mkdir(parents=True)
    (folder / "fredica-gui.exe").write_bytes(b"MZ stand-in")
    return folder


@posix_only
def test_make_installer_calls_the_compiler_with_the_defines(
    tmp_path: Path, win_bundle: Path, icons: dict[str, Path]
) -> None:
    iscc = write_tool(tmp_path / "iscc", FAKE_ISCC)
    out = tmp_path / "out"

    setup = windows.make_installer(win_bundle, out, "1.2.3rc1", icons, iscc=iscc)

    assert setup == out / "Fredica-1.2.3rc1-setup.exe"
    assert setup.read_bytes() == b"MZ stand-in"
    record = json.loads((tmp_path / "iscc-record.json").read_text())
    script = Path(record["argv"][-1])
    assert record["argv"] == [
        "/DAppVersion=1.2.3rc1",
        "/DNumericVersion=1.2.3",
        f"/DBundleDir={win_bundle.resolve()}",
        f"/DIconFile={icons['ico'].resolve()}",
        f"/O{out.resolve()}",
        "/FFredica-1.2.3rc1-setup",
        str(script),
    ]
    assert record["script"] == windows.render_script()
    assert record["bom"]
    assert not script.parent.exists()  # the rendered script is removed once compiled


@posix_only
def test_make_installer_failure_keeps_the_script_and_says_so(
    tmp_path: Path, win_bundle: Path, icons: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    iscc = write_tool(tmp_path / "iscc", FAKE_ISCC)
    monkeypatch.setenv("FAKE_EXIT", "2")
    with pytest.raises(windows.InnoSetupError, match="exit code 2") as failure:
        windows.make_installer(win_bundle, tmp_path / "out", "1.0", icons, iscc=iscc)
    script = Path(json.loads((tmp_path / "iscc-record.json").read_text())["argv"][-1])
    assert str(script) in str(failure.value)
    assert script.is_file()
    shutil.rmtree(script.parent)


def test_make_installer_without_inno_setup_says_where_to_get_it(
    tmp_path: Path, win_bundle: Path, icons: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    for name in ("ProgramFiles", "ProgramFiles(x86)", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(windows.InnoSetupError, match=r"jrsoftware\.org"):
        windows.make_installer(win_bundle, tmp_path / "out", "1.0", icons)


def test_make_installer_needs_the_bundle_and_the_icon(
    tmp_path: Path, win_bundle: Path, icons: dict[str, Path]
) -> None:
    with pytest.raises(windows.InnoSetupError, match=r"fredica-gui\.exe is missing"):
        windows.make_installer(tmp_path / "none", tmp_path / "out", "1.0", icons)
    with pytest.raises(windows.InnoSetupError, match=r"\.ico icon is missing"):
        windows.make_installer(win_bundle, tmp_path / "out", "1.0", {"png": icons["png"]})


def test_inno_setup_is_found_in_program_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    per_user = tmp_path / "Local" / "Programs" / "Inno Setup 6" / "ISCC.exe"
    per_user.parent.mkdir(parents=True)
    per_user.write_bytes(b"MZ")
    environ = {"ProgramFiles(x86)": str(tmp_path / "x86"), "LOCALAPPDATA": str(tmp_path / "Local")}
    assert windows.find_iscc(environ) == per_user
    assert windows.find_iscc({}) is None


# --- macOS ----------------------------------------------------------------------------


def test_info_plist_is_a_valid_property_list() -> None:
    keys = macos.info_plist("1.2.3")
    for fmt in (plistlib.FMT_XML, plistlib.FMT_BINARY):
        assert plistlib.loads(plistlib.dumps(keys, fmt=fmt)) == keys
    assert {
        "CFBundleName": "Fredica",
        "CFBundleDisplayName": "Fredica",
        "CFBundleIdentifier": "io.github.fredica.Fredica",
        "CFBundleExecutable": "fredica",
        "CFBundlePackageType": "APPL",
        "CFBundleInfoDictionaryVersion": "6.0",
        "CFBundleShortVersionString": "1.2.3",
        "CFBundleVersion": "1.2.3",
        "CFBundleIconFile": "fredica.icns",
        "NSHighResolutionCapable": True,
        "LSMinimumSystemVersion": "14.0",
    }.items() <= keys.items()


def test_info_plist_versions_are_numbers() -> None:
    keys = macos.info_plist("2.0rc1")
    assert keys["CFBundleShortVersionString"] == keys["CFBundleVersion"] == "2.0.0"
    with pytest.raises(macos.MacPackagingError, match="does not start with a number"):
        macos.info_plist("latest")


def test_info_plist_offers_fredica_for_every_media_type_as_an_alternative() -> None:
    keys = macos.info_plist("1.0")
    documents = {d["CFBundleTypeName"]: d for d in keys["CFBundleDocumentTypes"]}
    assert set(documents) == {"Video", "Audio"}
    for document in documents.values():
        assert document["CFBundleTypeRole"] == "Viewer"
        assert document["LSHandlerRank"] == "Alternate"
    for t in mediatypes.MEDIA_TYPES:
        assert t.uti in documents[t.kind.capitalize()]["LSItemContentTypes"]


def test_info_plist_declares_the_third_party_utis_it_uses() -> None:
    imported = {
        d["UTTypeIdentifier"]: d for d in macos.info_plist("1.0")["UTImportedTypeDeclarations"]
    }
    assert set(imported) == {t.uti for t in mediatypes.MEDIA_TYPES if not t.uti_by_system}
    assert {"org.matroska.mkv", "org.webmproject.webm"} <= set(imported)
    for t in mediatypes.MEDIA_TYPES:
        if t.uti_by_system:
            continue
        declared = imported[t.uti]
        tags = declared["UTTypeTagSpecification"]
        assert tags["public.filename-extension"] == [e.lstrip(".") for e in t.extensions]
        assert tags["public.mime-type"][0] == t.mime
        assert declared["UTTypeConformsTo"] == [
            "public.movie" if t.kind == "video" else "public.audio"
        ]


class FakeRunner:
    """A stand-in for running macOS's tools (fake): records each argv, copies for ``ditto``
    (so the staging folder is real), notes what the ``hdiutil`` source folder holds and the
    entitlements given to ``codesign``, and answers ``notarytool`` with ``notary_status``."""

    def __init__(self, notary_status: str = "Accepted") -> None:
        self.calls: list[list[str]] = []
        self.notary_status = notary_status
        self.staged: dict[str, str] = {}
        self.entitlements: dict[str, object] | None = None

    def __call__(self, argv: Sequence[str]) -> str:
        argv = list(argv)
        self.calls.append(argv)
        if argv[0] == "ditto":
            shutil.copytree(argv[1], argv[2], symlinks=True)
        elif argv[0] == "hdiutil":
            source = Path(argv[argv.index("-srcfolder") + 1])
            self.staged = {
                p.name: os.readlink(p) if p.is_symlink() else "dir" if p.is_dir() else "file"
                for p in source.iterdir()
            }
        elif argv[0] == "codesign" and "--entitlements" in argv:
            path = Path(argv[argv.index("--entitlements") + 1])
            self.entitlements = plistlib.loads(path.read_bytes())
        elif argv[:2] == ["xcrun", "notarytool"]:
            return "progress\n" + json.dumps(
                {"id": "6f1c-submission", "status": self.notary_status, "message": "done"}
            )
        return ""

    def tools(self) -> list[str]:
        return [" ".join(c[:2]) if c[0] in ("xcrun", "codesign") else c[0] for c in self.calls]


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A stand-in for Fredica.app: the folders of a bundle, and the executable's name."""
    bundle = tmp_path / "dist" / "Fredica.app"
    (bundle / "Contents" / "MacOS").mkdir(parents=True)
    (bundle / "Contents" / "MacOS" / "fredica").write_bytes(b"\xcf\xfa\xed\xfe stand-in")
    return bundle


@posix_only
def test_dmg_holds_the_app_and_a_link_to_applications(app: Path, tmp_path: Path) -> None:
    runner = FakeRunner()
    out = tmp_path / "out"

    dmg = macos.make_dmg(app, out, "1.2.3", runner=runner, arch="arm64")

    assert dmg == out / "Fredica-1.2.3-macos-arm64.dmg"
    ditto, hdiutil = runner.calls
    staging = Path(ditto[2]).parent
    assert ditto == ["ditto", str(app), str(staging / "Fredica.app")]
    assert hdiutil == [
        "hdiutil", "create", "-volname", "Fredica", "-srcfolder", str(staging),
        "-fs", "HFS+", "-format", "UDZO", "-ov", str(dmg),
    ]  # fmt: skip
    assert runner.staged == {"Fredica.app": "dir", "Applications": "/Applications"}
    assert not staging.exists()  # the staging folder is cleaned up


def test_dmg_needs_an_app_bundle(tmp_path: Path) -> None:
    with pytest.raises(macos.MacPackagingError, match="not an app bundle"):
        macos.make_dmg(tmp_path / "Fredica", tmp_path, "1.0", runner=FakeRunner())


def test_signing_is_skipped_without_an_identity(
    app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = FakeRunner()
    assert macos.sign(app, runner=runner, environ={}) is False
    assert runner.calls == []
    assert capsys.readouterr().out == (
        "macOS code signing skipped: FREDICA_CODESIGN_IDENTITY is not set\n"
    )


def test_signing_the_app_uses_the_hardened_runtime_and_checks_the_result(app: Path) -> None:
    runner = FakeRunner()
    identity = "Developer ID Application: Fredica (TEAM123456)"

    assert macos.sign(app, runner=runner, environ={"FREDICA_CODESIGN_IDENTITY": identity})

    sign_call, verify = runner.calls
    entitlements = sign_call[sign_call.index("--entitlements") + 1]
    assert sign_call == [
        "codesign", "--force", "--deep", "--timestamp", "--options", "runtime",
        "--entitlements", entitlements, "--sign", identity, str(app),
    ]  # fmt: skip
    assert runner.entitlements == {"com.apple.security.cs.allow-unsigned-executable-memory": True}
    assert not Path(entitlements).exists()
    assert verify == ["codesign", "--verify", "--deep", "--strict", "--verbose=2", str(app)]


def test_signing_the_disk_image(tmp_path: Path) -> None:
    runner = FakeRunner()
    dmg = tmp_path / "Fredica-1.0-macos-arm64.dmg"
    assert macos.sign(dmg, runner=runner, environ={"FREDICA_CODESIGN_IDENTITY": "ID"})
    assert runner.calls == [["codesign", "--force", "--timestamp", "--sign", "ID", str(dmg)]]


def test_notarization_is_skipped_without_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = FakeRunner()
    assert macos.notarize(tmp_path / "F.dmg", runner=runner, environ={}) is False
    assert runner.calls == []
    assert capsys.readouterr().out.startswith("macOS notarization skipped: set FREDICA_NOTARY")


@pytest.mark.parametrize(
    ("environ", "credentials"),
    [
        ({"FREDICA_NOTARY_PROFILE": "fredica"}, ["--keychain-profile", "fredica"]),
        (
            {
                "APPLE_ID": "a@example.org",
                "APPLE_TEAM_ID": "TEAM123456",
                "APPLE_APP_PASSWORD": "pw",
            },
            ["--apple-id", "a@example.org", "--team-id", "TEAM123456", "--password", "pw"],
        ),
    ],
)
def test_notarization_submits_waits_and_staples(
    tmp_path: Path, environ: dict[str, str], credentials: list[str]
) -> None:
    runner = FakeRunner()
    dmg = tmp_path / "Fredica-1.0-macos-arm64.dmg"
    assert macos.notarize(dmg, runner=runner, environ=environ)
    assert runner.calls == [
        ["xcrun", "notarytool", "submit", str(dmg), *credentials,
         "--wait", "--output-format", "json"],
        ["xcrun", "stapler", "staple", str(dmg)],
    ]  # fmt: skip


def test_notarization_half_configured_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(macos.MacPackagingError, match="needs APPLE_TEAM_ID, APPLE_APP_PASSWORD"):
        macos.notarize(tmp_path / "F.dmg", runner=FakeRunner(), environ={"APPLE_ID": "a@b.c"})


def test_a_rejected_notarization_is_an_error_and_nothing_is_stapled(tmp_path: Path) -> None:
    runner = FakeRunner(notary_status="Invalid")
    with pytest.raises(macos.MacPackagingError, match=r"'Invalid'.*notarytool log 6f1c-submission"):
        macos.notarize(tmp_path / "F.dmg", runner=runner, environ={"FREDICA_NOTARY_PROFILE": "p"})
    assert [c[1] for c in runner.calls] == ["notarytool"]


@posix_only
def test_package_signs_makes_signs_and_notarizes_in_that_order(app: Path, tmp_path: Path) -> None:
    runner = FakeRunner()
    environ = {"FREDICA_CODESIGN_IDENTITY": "ID", "FREDICA_NOTARY_PROFILE": "p"}
    dmg = macos.package(app, tmp_path / "out", "1.0", runner=runner, environ=environ, arch="arm64")
    assert dmg.name == "Fredica-1.0-macos-arm64.dmg"
    assert runner.tools() == [
        "codesign --force", "codesign --verify", "ditto", "hdiutil", "codesign --force",
        "xcrun notarytool", "xcrun stapler",
    ]  # fmt: skip
    assert runner.calls[4][-1] == str(dmg)


@posix_only
def test_package_unsigned_makes_the_dmg_only(
    app: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = FakeRunner()
    macos.package(
        app, tmp_path / "out", "1.0", runner=runner, environ={"FREDICA_NOTARY_PROFILE": "p"}
    )
    assert runner.tools() == ["ditto", "hdiutil"]
    assert "Apple notarizes signed apps only" in capsys.readouterr().out


@posix_only
def test_the_real_runner_returns_the_output_and_hides_the_arguments_of_a_failure() -> None:
    assert macos.run(["sh", "-c", "echo made"]) == "made\n"
    with pytest.raises(macos.MacPackagingError) as failure:
        macos.run(["sh", "-c", "exit 4", "secret-password"])
    assert "sh failed (exit code 4)" in str(failure.value)
    assert "secret-password" not in str(failure.value)
    with pytest.raises(macos.MacPackagingError, match="cannot run no-such-tool"):
        macos.run(["no-such-tool"])


def test_strip_symbols_strips_extension_modules_but_never_grafted_or_qt_libraries(
    tmp_path: Path,
) -> None:
    """What ``build.py`` strips: a wheel's extension module with a symbol table; not a
    library auditwheel grafted (``*.libs``), nor Qt's (kept as shipped)."""
    import shutil
    import subprocess
    import sys

    import build
    import sqlalchemy

    if not sys.platform.startswith("linux") or shutil.which("strip") is None:
        pytest.skip("strips on Linux with binutils only")
    with_symbols = [
        p
        for p in Path(sqlalchemy.__file__).parent.rglob("*.so")
        if ".symtab"
        in subprocess.run(["readelf", "-S", "-W", str(p)], capture_output=True, text=True).stdout
    ]
    if not with_symbols:
        pytest.skip("no extension module with a symbol table in this SQLAlchemy wheel")
    source = with_symbols[0]
    places = [tmp_path / "pkg", tmp_path / "pkg.libs", tmp_path / "PySide6" / "Qt" / "lib"]
    for folder in places:
        folder.mkdir(parents=True)
        shutil.copy2(source, folder / source.name)
    (tmp_path / "pkg" / "data.bin").write_bytes(b"not an ELF file")
    saved = build.strip_symbols(tmp_path)
    size = source.stat().st_size
    assert saved > 0
    assert (tmp_path / "pkg" / source.name).stat().st_size == size - saved
    assert (tmp_path / "pkg.libs" / source.name).stat().st_size == size
    assert (tmp_path / "PySide6" / "Qt" / "lib" / source.name).stat().st_size == size
