"""Starting Fredica when the user logs in: one entry, where each system looks at login.

=========  ==================================================================================
Linux      ``$XDG_CONFIG_HOME/autostart/fredica.desktop`` (``~/.config`` when the variable is
           unset): a desktop entry, read by every XDG desktop (GNOME, KDE, Xfce, …)
macOS      ``~/Library/LaunchAgents/<LAUNCH_AGENT>.plist``: a launchd agent with
           ``RunAtLoad``, loaded at the next login
Windows    the value ``Fredica`` of ``HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run``
=========  ==================================================================================

The entry runs ``fredica gui --minimized`` (:func:`launch_command`): the window starts hidden
in the tray, or minimised where there is no tray. A command is an argv list, never a shell
line; each system gets it quoted by its own rules (the desktop entry's ``Exec`` quoting, a
plist's array of strings, the Windows C runtime's command line), so a folder with spaces or
quotes in its name starts the same program.

Enabling writes the entry again each time (an install that has moved is followed); disabling
removes Fredica's own entry and nothing else; both are idempotent. What cannot be written is a
:class:`~fredica_app.errors.FredicaError` that names the place. The registry is a parameter
(``registry``, the :mod:`winreg` module by default) so the Windows branch is tested on any
system with a fake.
"""

from __future__ import annotations

import importlib
import os
import plistlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, cast

import platformdirs

from fredica_app.errors import FredicaError
from fredica_app.files import write_atomically
from fredica_app.paths import APP_NAME

__all__ = [
    "DESKTOP_FILE",
    "LAUNCH_AGENT",
    "RUN_KEY",
    "RUN_VALUE",
    "Registry",
    "data_dir_argument",
    "desktop_exec",
    "launch_command",
    "set_start_at_login",
    "start_at_login_enabled",
    "windows_command_line",
]

#: The autostart entry's file name under ``autostart/`` (Linux and other XDG desktops).
DESKTOP_FILE = "fredica.desktop"
#: The launchd agent's label, and its file's name without ``.plist`` (macOS).
LAUNCH_AGENT = "io.github.fredica.Fredica"
#: The registry key whose values Windows runs at login (under HKEY_CURRENT_USER).
RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
#: Fredica's value under :data:`RUN_KEY`.
RUN_VALUE = APP_NAME
#: What the entry asks of ``fredica``: the window, hidden in the tray.
GUI_ARGS = ("gui", "--minimized")

# The characters the desktop entry specification reserves in Exec: an argument holding any of
# them is quoted.
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


class Registry(Protocol):
    """What is used of :mod:`winreg` (a test passes a fake with the same names)."""

    HKEY_CURRENT_USER: Any
    KEY_READ: int
    KEY_SET_VALUE: int
    REG_SZ: int

    def CreateKeyEx(self, key: Any, sub_key: str, reserved: int = 0, access: int = ...) -> Any:
        """A context manager over the key, created if missing."""

    def OpenKey(self, key: Any, sub_key: str, reserved: int = 0, access: int = ...) -> Any:
        """A context manager over the key; ``FileNotFoundError`` when it is missing."""

    def QueryValueEx(self, key: Any, name: str) -> tuple[Any, int]:
        """``(value, type)``; ``FileNotFoundError`` when there is no such value."""

    def SetValueEx(self, key: Any, name: str, reserved: int, type: int, value: str) -> None: ...

    def DeleteValue(self, key: Any, name: str) -> None:
        """``FileNotFoundError`` when there is no such value."""


# --- the command ------------------------------------------------------------------------------


def launch_command(
    data_dir: Path | None = None,
    *,
    args: Sequence[str] = GUI_ARGS,
    executable: str | None = None,
    frozen: bool | None = None,
    platform: str = sys.platform,
) -> list[str]:
    """The argv that starts Fredica with ``args``: the frozen executable itself in an
    installed build, else the ``fredica`` script beside the Python that runs this (a virtual
    environment's ``bin/``, or ``Scripts\\`` on Windows), else ``python -m fredica_app.cli``.
    With ``data_dir``, ``--data-dir DATA_DIR`` comes first (see :func:`data_dir_argument`)."""
    exe = Path(executable or sys.executable)
    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    tail = [*(["--data-dir", str(data_dir)] if data_dir is not None else []), *args]
    if frozen:
        return [str(exe), *tail]
    # Not resolved: a virtual environment's python is a link out of the environment.
    script = exe.with_name("fredica.exe" if platform == "win32" else "fredica")
    if script.is_file():
        return [str(script), *tail]
    return [str(exe), "-m", "fredica_app.cli", *tail]


def data_dir_argument(data_dir: Path) -> Path | None:
    """``data_dir`` when the entry must name it (it is not the platform's default folder, the
    one a login start opens by itself), else None."""
    default = Path(platformdirs.PlatformDirs(APP_NAME, appauthor=False).user_data_dir)
    same = os.path.normcase(os.path.abspath(data_dir)) == os.path.normcase(str(default))
    return None if same else data_dir


def desktop_exec(argv: Sequence[str]) -> str:
    """``argv`` as the value of a desktop entry's ``Exec`` key: each argument that needs it
    in double quotes (inside them ``"``, `````, ``$`` and ``\\`` escaped with a backslash),
    ``%`` doubled (it starts a field code otherwise), then the string escapes of the file
    format (``\\`` doubled)."""
    words = []
    for arg in argv:
        if any(ord(c) < 0x20 or c == "\x7f" for c in arg):
            raise FredicaError(
                f"cannot start {arg!r} at login: a desktop entry cannot hold its control "
                "characters; install Fredica in a folder whose name has none"
            )
        if not arg or _RESERVED & set(arg):
            arg = '"' + "".join("\\" + c if c in '"`$\\' else c for c in arg) + '"'
        words.append(arg.replace("%", "%%"))
    return " ".join(words).replace("\\", "\\\\")


def windows_command_line(argv: Sequence[str]) -> str:
    """``argv`` as one command line, quoted as the Windows C runtime splits it."""
    return subprocess.list2cmdline(list(argv))


# --- the entry --------------------------------------------------------------------------------


def set_start_at_login(
    enabled: bool,
    *,
    platform: str = sys.platform,
    home: Path | None = None,
    command: list[str] | None = None,
    registry: Registry | None = None,
) -> Path | str:
    """Make Fredica start at login (``enabled``) or not; where the entry is (a file, or the
    registry value's name on Windows). ``command``: the argv to run (default:
    :func:`launch_command`). ``home``: the user's home folder (default: the real one, and on
    Linux ``$XDG_CONFIG_HOME`` when set)."""
    argv = command if command is not None else launch_command(platform=platform)
    if platform == "win32":
        return _set_windows(enabled, argv, registry or _winreg())
    if platform == "darwin":
        path = _launch_agent(home)
        text = plistlib.dumps(_plist(argv)) if enabled else None
    else:
        path = _autostart_file(home)
        text = _desktop_entry(argv).encode("utf-8") if enabled else None
    try:
        if text is None:
            path.unlink(missing_ok=True)
        else:
            write_atomically(path, text)
    except OSError as exc:
        what = "write" if enabled else "remove"
        raise FredicaError(
            f"could not {what} the start-at-login entry {path}: {exc.strerror or exc}; check "
            f"that you may write to {path.parent}"
        ) from exc
    return path


def set_for_data_dir(enabled: bool, data_dir: Path) -> Path | str:
    """:func:`set_start_at_login` for Fredica on ``data_dir`` (named in the entry when it is
    not the default one): what the settings page and ``fredica settings`` write."""
    return set_start_at_login(enabled, command=launch_command(data_dir_argument(data_dir)))


def start_at_login_enabled(
    *,
    platform: str = sys.platform,
    home: Path | None = None,
    registry: Registry | None = None,
) -> bool:
    """Whether Fredica's entry is there (and, on Linux, not switched off in it)."""
    if platform == "win32":
        reg = registry or _winreg()
        try:
            with reg.OpenKey(reg.HKEY_CURRENT_USER, RUN_KEY, 0, reg.KEY_READ) as key:
                reg.QueryValueEx(key, RUN_VALUE)
        except OSError:
            return False
        return True
    if platform == "darwin":
        return _launch_agent(home).is_file()
    try:
        lines = _autostart_file(home).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    off = {"Hidden=true", "X-GNOME-Autostart-enabled=false"}
    return not off & {line.strip() for line in lines}


# --- per system -------------------------------------------------------------------------------


def _autostart_file(home: Path | None) -> Path:
    config = os.environ.get("XDG_CONFIG_HOME", "")
    # The specification ignores a relative XDG_CONFIG_HOME; a given home is a test's.
    if home is None and config and Path(config).is_absolute():
        base = Path(config)
    else:
        base = (home or Path.home()) / ".config"
    return base / "autostart" / DESKTOP_FILE


def _desktop_entry(argv: Sequence[str]) -> str:
    return "\n".join(
        [
            "[Desktop Entry]",
            "Type=Application",
            f"Name={APP_NAME}",
            "Comment=Start Fredica in the tray at login",
            f"Exec={desktop_exec(argv)}",
            "Icon=fredica",
            "Terminal=false",
            "X-GNOME-Autostart-enabled=true",
            "",
        ]
    )


def _launch_agent(home: Path | None) -> Path:
    return (home or Path.home()) / "Library" / "LaunchAgents" / f"{LAUNCH_AGENT}.plist"


def _plist(argv: Sequence[str]) -> dict[str, Any]:
    return {
        "Label": LAUNCH_AGENT,
        "ProgramArguments": list(argv),
        "RunAtLoad": True,
        # A program the user interacts with: not throttled as a background daemon.
        "ProcessType": "Interactive",
    }


def _winreg() -> Registry:
    try:
        return cast(Registry, importlib.import_module("winreg"))
    except ImportError as exc:
        raise FredicaError("the Windows registry is only on Windows") from exc


def _set_windows(enabled: bool, argv: Sequence[str], reg: Registry) -> str:
    where = f"HKEY_CURRENT_USER\\{RUN_KEY}\\{RUN_VALUE}"
    try:
        if enabled:
            with reg.CreateKeyEx(reg.HKEY_CURRENT_USER, RUN_KEY, 0, reg.KEY_SET_VALUE) as key:
                reg.SetValueEx(key, RUN_VALUE, 0, reg.REG_SZ, windows_command_line(argv))
        else:
            try:
                with reg.OpenKey(reg.HKEY_CURRENT_USER, RUN_KEY, 0, reg.KEY_SET_VALUE) as key:
                    reg.DeleteValue(key, RUN_VALUE)
            except FileNotFoundError:
                pass  # no key or no value: nothing starts at login already
    except OSError as exc:
        what = "write" if enabled else "remove"
        raise FredicaError(
            f"could not {what} the start-at-login entry {where}: {exc.strerror or exc}"
        ) from exc
    return where
