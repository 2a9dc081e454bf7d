"""Start at login: the entry each system reads, written into a temporary home and read back
the way that system reads it (a desktop entry's Exec unquoted by the specification's rules, a
plist parsed, a registry value split as the C runtime splits a command line), for commands
whose paths hold spaces, quotes and other characters a shell would interpret. Windows runs on
a fake registry: the real one exists only there."""

from __future__ import annotations

import plistlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fredica_app.desktop import autostart
from fredica_app.desktop.autostart import (
    LAUNCH_AGENT,
    RUN_KEY,
    RUN_VALUE,
    data_dir_argument,
    desktop_exec,
    launch_command,
    set_start_at_login,
    start_at_login_enabled,
)
from fredica_app.errors import FredicaError
from tests.support.host import as_another_user, folder_for_another_user, need_tool

AWKWARD = [
    '/opt/My Apps/Fredica\'s "build"/fredica',
    "--data-dir",
    "/home/ann/média $HOME `x` 100% (a;b) back\\slash #1 ~/*?",
    "gui",
    "--minimized",
]


# --- reading entries back as their systems do -------------------------------------------------


def desktop_keys(path: Path) -> dict[str, str]:
    """The [Desktop Entry] group's keys, values with the format's string escapes undone."""
    keys: dict[str, str] = {}
    group = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            group = line
        elif "=" in line and group == "[Desktop Entry]":
            key, value = line.split("=", 1)
            keys[key] = unescape_string(value)
    return keys


def unescape_string(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            out.append({"s": " ", "n": "\n", "t": "\t", "r": "\r", "\\": "\\"}[value[i + 1]])
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def split_exec(exec_value: str) -> list[str]:
    """The argv of an (unescaped) Exec value: words split on spaces, double quotes grouping,
    a backslash in quotes escaping ``"`$\\``, and ``%%`` a literal ``%``."""
    words: list[str] = []
    word: list[str] | None = None
    quoted = False
    i = 0
    while i < len(exec_value):
        c = exec_value[i]
        if quoted:
            if c == "\\":
                assert exec_value[i + 1] in '"`$\\', f"bad escape in {exec_value!r}"
                word = [*(word or []), exec_value[i + 1]]
                i += 1
            elif c == '"':
                quoted = False
            else:
                word = [*(word or []), c]
        elif c == " ":
            if word is not None:
                words.append("".join(word))
            word = None
        elif c == '"':
            quoted, word = True, word or []
        else:
            assert c not in autostart._RESERVED, f"unquoted {c!r} in {exec_value!r}"
            word = [*(word or []), c]
        i += 1
    assert not quoted
    if word is not None:
        words.append("".join(word))
    return [w.replace("%%", "%") for w in words]


def split_windows(line: str) -> list[str]:
    """How the Microsoft C runtime splits a command line into argv (the common rules: 2n
    backslashes before a quote give n and toggle quoting; 2n+1 give n and a literal quote)."""
    args: list[str] = []
    cur: list[str] = []
    in_arg = quoted = False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            n = 0
            while i < len(line) and line[i] == "\\":
                n, i = n + 1, i + 1
            if i < len(line) and line[i] == '"':
                cur += ["\\"] * (n // 2)
                if n % 2:
                    cur.append('"')
                    i += 1
                in_arg = True
            else:
                cur += ["\\"] * n
                in_arg = True
            continue
        if c == '"':
            quoted, in_arg = not quoted, True
        elif c in " \t" and not quoted:
            if in_arg:
                args.append("".join(cur))
            cur, in_arg = [], False
        else:
            cur.append(c)
            in_arg = True
        i += 1
    if in_arg:
        args.append("".join(cur))
    return args


# --- Linux ------------------------------------------------------------------------------------


def test_linux_writes_an_autostart_entry_that_runs_the_same_argv(tmp_path: Path) -> None:
    path = set_start_at_login(True, platform="linux", home=tmp_path, command=AWKWARD)
    assert path == tmp_path / ".config" / "autostart" / "fredica.desktop"
    keys = desktop_keys(path)
    assert keys["Type"] == "Application" and keys["Name"] == "Fredica"
    assert split_exec(keys["Exec"]) == AWKWARD
    assert start_at_login_enabled(platform="linux", home=tmp_path)
    assert not [p for p in path.parent.iterdir() if p != path]  # no temporary file left


def test_linux_autostart_entry_passes_desktop_file_validate(tmp_path: Path) -> None:
    validate = need_tool("desktop-file-validate", "desktop-file-utils")
    path = set_start_at_login(True, platform="linux", home=tmp_path, command=AWKWARD)
    assert isinstance(path, Path)
    check = subprocess.run([validate, str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_linux_enable_and_disable_are_idempotent(tmp_path: Path) -> None:
    assert not start_at_login_enabled(platform="linux", home=tmp_path)
    removed = set_start_at_login(False, platform="linux", home=tmp_path, command=["x"])
    assert isinstance(removed, Path) and not removed.exists()  # nothing to remove: fine
    first = set_start_at_login(True, platform="linux", home=tmp_path, command=["/a/fredica"])
    again = set_start_at_login(True, platform="linux", home=tmp_path, command=["/b/fredica"])
    assert first == again
    assert split_exec(desktop_keys(again)["Exec"]) == ["/b/fredica"]  # written again
    set_start_at_login(False, platform="linux", home=tmp_path, command=["x"])
    set_start_at_login(False, platform="linux", home=tmp_path, command=["x"])
    assert not first.exists()
    assert not start_at_login_enabled(platform="linux", home=tmp_path)
    assert (tmp_path / ".config" / "autostart").is_dir()  # the folder is the user's: kept


def test_linux_follows_xdg_config_home_and_ignores_a_relative_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = set_start_at_login(True, platform="linux", command=["/a/fredica"])
    assert path == tmp_path / "xdg" / "autostart" / "fredica.desktop"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/xdg")
    path = set_start_at_login(True, platform="linux", command=["/a/fredica"])
    assert path == tmp_path / "home" / ".config" / "autostart" / "fredica.desktop"


def test_an_entry_switched_off_in_its_file_is_not_enabled(tmp_path: Path) -> None:
    path = set_start_at_login(True, platform="linux", home=tmp_path, command=["/a/fredica"])
    assert isinstance(path, Path)
    path.write_text(path.read_text().replace("X-GNOME-Autostart-enabled=true", "Hidden=true"))
    assert not start_at_login_enabled(platform="linux", home=tmp_path)


def test_an_unwritable_folder_is_a_clear_error() -> None:
    """As an unprivileged user (dropped to from root: root writes into read-only folders)."""
    with folder_for_another_user() as home:

        def check() -> None:
            autostart_dir = home / ".config" / "autostart"
            autostart_dir.mkdir(parents=True)
            autostart_dir.chmod(0o500)
            with pytest.raises(FredicaError, match=r"could not write the start-at-login entry"):
                set_start_at_login(True, platform="linux", home=home, command=["/a/fredica"])
            assert list(autostart_dir.iterdir()) == []
            autostart_dir.chmod(0o700)

        as_another_user(check)


def test_a_file_in_the_way_of_the_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".config").write_text("not a folder")  # fails for root too
    with pytest.raises(FredicaError, match=r"\.config/autostart/fredica\.desktop"):
        set_start_at_login(True, platform="linux", home=tmp_path, command=["/a/fredica"])


def test_a_command_with_a_control_character_is_refused() -> None:
    with pytest.raises(FredicaError, match="control characters"):
        desktop_exec(["/opt/new\nline/fredica"])


def test_desktop_exec_quotes_only_what_needs_it() -> None:
    assert desktop_exec(["/usr/bin/fredica", "gui", "--minimized"]) == (
        "/usr/bin/fredica gui --minimized"
    )
    assert desktop_exec(["/a b/fredica", ""]) == '"/a b/fredica" ""'
    assert desktop_exec(["/x/100%"]) == "/x/100%%"
    # In quotes the backslash is escaped, then doubled again by the file's string escapes.
    assert desktop_exec(["a\\b"]) == '"a\\\\\\\\b"'


# --- macOS ------------------------------------------------------------------------------------


def test_macos_writes_a_launch_agent_that_runs_at_load(tmp_path: Path) -> None:
    path = set_start_at_login(True, platform="darwin", home=tmp_path, command=AWKWARD)
    assert path == tmp_path / "Library" / "LaunchAgents" / f"{LAUNCH_AGENT}.plist"
    assert isinstance(path, Path)
    with path.open("rb") as f:
        agent = plistlib.load(f)
    assert agent["Label"] == LAUNCH_AGENT
    assert agent["ProgramArguments"] == AWKWARD  # an argv: nothing to quote
    assert agent["RunAtLoad"] is True
    assert start_at_login_enabled(platform="darwin", home=tmp_path)
    set_start_at_login(True, platform="darwin", home=tmp_path, command=AWKWARD)
    set_start_at_login(False, platform="darwin", home=tmp_path)
    set_start_at_login(False, platform="darwin", home=tmp_path)
    assert not path.exists()
    assert not start_at_login_enabled(platform="darwin", home=tmp_path)


# --- Windows ----------------------------------------------------------------------------------


class FakeRegistry:
    """A FAKE of the few :mod:`winreg` calls used (the real registry exists only on Windows):
    keys are dicts of values under HKEY_CURRENT_USER, by path. ``fail`` makes every call
    raise ``PermissionError``, as a key the user may not write does."""

    HKEY_CURRENT_USER = "HKCU"
    KEY_READ = 1
    KEY_SET_VALUE = 2
    REG_SZ = 7

    def __init__(self) -> None:
        self.keys: dict[str, dict[str, tuple[Any, int]]] = {}
        self.fail = False

    class _Handle:
        def __init__(self, values: dict[str, tuple[Any, int]]) -> None:
            self.values = values

        def __enter__(self) -> FakeRegistry._Handle:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    def _check(self, root: Any) -> None:
        assert root == "HKCU"
        if self.fail:
            raise PermissionError(5, "Access is denied")

    def CreateKeyEx(self, key: Any, sub_key: str, reserved: int = 0, access: int = 0) -> Any:
        self._check(key)
        return self._Handle(self.keys.setdefault(sub_key, {}))

    def OpenKey(self, key: Any, sub_key: str, reserved: int = 0, access: int = 0) -> Any:
        self._check(key)
        if sub_key not in self.keys:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return self._Handle(self.keys[sub_key])

    def QueryValueEx(self, key: Any, name: str) -> tuple[Any, int]:
        if name not in key.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return key.values[name]  # type: ignore[no-any-return]

    def SetValueEx(self, key: Any, name: str, reserved: int, type: int, value: str) -> None:
        key.values[name] = (value, type)

    def DeleteValue(self, key: Any, name: str) -> None:
        if name not in key.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        del key.values[name]


def test_windows_sets_a_run_value_that_splits_back_into_the_argv() -> None:
    reg = FakeRegistry()
    reg.keys[RUN_KEY] = {"Other": ("C:\\other.exe", 7)}  # another program's: kept
    argv = [
        r"C:\Program Files\Fredica\fredica.exe",
        "--data-dir",
        'D:\\Média "quoted" dir\\',
        "gui",
        "--minimized",
    ]
    where = set_start_at_login(True, platform="win32", command=argv, registry=reg)
    assert where == f"HKEY_CURRENT_USER\\{RUN_KEY}\\{RUN_VALUE}"
    line, kind = reg.keys[RUN_KEY][RUN_VALUE]
    assert kind == reg.REG_SZ  # not REG_EXPAND_SZ: %VARIABLES% are not expanded
    assert line.startswith('"C:\\Program Files\\Fredica\\fredica.exe" ')
    assert split_windows(line) == argv
    assert start_at_login_enabled(platform="win32", registry=reg)
    set_start_at_login(True, platform="win32", command=argv, registry=reg)
    set_start_at_login(False, platform="win32", registry=reg, command=argv)
    set_start_at_login(False, platform="win32", registry=reg, command=argv)
    assert reg.keys[RUN_KEY] == {"Other": ("C:\\other.exe", 7)}
    assert not start_at_login_enabled(platform="win32", registry=reg)


def test_windows_without_the_run_key_is_disabled_and_disabling_it_is_fine() -> None:
    reg = FakeRegistry()
    assert not start_at_login_enabled(platform="win32", registry=reg)
    set_start_at_login(False, platform="win32", registry=reg, command=["x"])
    assert reg.keys == {}


def test_windows_refused_access_is_a_clear_error() -> None:
    reg = FakeRegistry()
    reg.fail = True
    with pytest.raises(FredicaError, match=r"could not write .*CurrentVersion\\Run.*denied"):
        set_start_at_login(True, platform="win32", command=["C:\\f.exe"], registry=reg)
    with pytest.raises(FredicaError, match="could not remove"):
        set_start_at_login(False, platform="win32", command=["C:\\f.exe"], registry=reg)
    assert not start_at_login_enabled(platform="win32", registry=reg)


@pytest.mark.skipif(sys.platform == "win32", reason="winreg exists on Windows")
def test_windows_without_a_registry_elsewhere_is_an_error() -> None:
    with pytest.raises(FredicaError, match="only on Windows"):
        set_start_at_login(True, platform="win32", command=["x"])


# --- the command ------------------------------------------------------------------------------


def test_the_command_is_the_frozen_executable_in_a_build(tmp_path: Path) -> None:
    exe = tmp_path / "Fredica App" / "Fredica"
    assert launch_command(executable=str(exe), frozen=True) == [str(exe), "gui", "--minimized"]
    assert launch_command(tmp_path / "d", executable=str(exe), frozen=True) == [
        str(exe), "--data-dir", str(tmp_path / "d"), "gui", "--minimized",
    ]  # fmt: skip


def test_the_command_is_the_script_beside_python_else_python_m(tmp_path: Path) -> None:
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.touch()
    assert launch_command(executable=str(python), frozen=False, platform="linux") == [
        str(python), "-m", "fredica_app.cli", "gui", "--minimized",
    ]  # fmt: skip
    (tmp_path / "bin" / "fredica").touch()
    assert launch_command(executable=str(python), frozen=False, platform="linux") == [
        str(tmp_path / "bin" / "fredica"), "gui", "--minimized",
    ]  # fmt: skip
    # Windows' script is fredica.exe, beside python.exe in Scripts\.
    assert launch_command(executable=str(python), frozen=False, platform="win32")[1] == "-m"
    (tmp_path / "bin" / "fredica.exe").touch()
    assert launch_command(executable=str(python), frozen=False, platform="win32")[0] == str(
        tmp_path / "bin" / "fredica.exe"
    )


def test_this_checkouts_command_runs_fredica() -> None:
    """The default command, as a login would run it, starts this Fredica (asked its version,
    not the window)."""
    argv = launch_command(args=["--version"])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("fredica ")


def test_the_data_dir_is_named_only_when_it_is_not_the_default(tmp_path: Path) -> None:
    import platformdirs

    default = Path(platformdirs.PlatformDirs("Fredica", appauthor=False).user_data_dir)
    assert data_dir_argument(default) is None
    assert data_dir_argument(tmp_path) == tmp_path


# --- the desktop entry of packaging/linux -------------------------------------------------


PACKAGED_ENTRY = Path(__file__).parents[2] / "packaging" / "linux" / "fredica.desktop"
SHARED_MIME_GLOBS = Path("/usr/share/mime/globs2")


def test_the_packaged_desktop_entry_opens_files_with_fredica() -> None:
    keys = desktop_keys(PACKAGED_ENTRY)
    assert split_exec(keys["Exec"]) == ["fredica", "%F"]  # files: `fredica FILE…`
    assert keys["Terminal"] == "false" and keys["Icon"] == "fredica"
    assert keys["Categories"].split(";")[:2] == ["AudioVideo", "Video"]


def test_the_packaged_desktop_entry_passes_desktop_file_validate() -> None:
    validate = need_tool("desktop-file-validate", "desktop-file-utils")
    check = subprocess.run([validate, str(PACKAGED_ENTRY)], capture_output=True, text=True)
    assert check.returncode == 0 and not check.stdout.strip(), check.stdout


@pytest.mark.skipif(
    not SHARED_MIME_GLOBS.is_file(),
    reason="no shared-mime-info database (apt install shared-mime-info)",
)
def test_the_packaged_entry_names_a_type_of_every_media_extension() -> None:
    """Each extension Fredica imports has a MIME type (as this system's shared-mime-info
    names it) in the entry: a file manager offers Fredica for it."""
    from fredica_app.library.fingerprint import MEDIA_EXTENSIONS

    listed = set(desktop_keys(PACKAGED_ENTRY)["MimeType"].rstrip(";").split(";"))
    by_glob: dict[str, set[str]] = {}
    for line in SHARED_MIME_GLOBS.read_text().splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2].startswith("*."):
            by_glob.setdefault(parts[2][1:].lower(), set()).add(parts[1])
    for ext in sorted(MEDIA_EXTENSIONS):
        media = {t for t in by_glob.get(ext, set()) if t.startswith(("video/", "audio/"))}
        assert not media or media & listed, f"{ext}: none of {sorted(media)} in the entry"
