"""When the queue is done: do nothing, notify, quit, put the computer to sleep or shut it down.

The commands are chosen to work for the person at the computer without administrator rights:

=========  =====================================  ==========================================
system     sleep                                  shut down
=========  =====================================  ==========================================
Linux      ``systemctl suspend``                  ``systemctl poweroff``
macOS      ``pmset sleepnow``                     ``osascript -e 'tell app "System Events"
                                                  to shut down'``
Windows    ``rundll32.exe powrprof.dll,           ``shutdown.exe /s /t 0``
           SetSuspendState 0,1,0``
=========  =====================================  ==========================================

- Linux: logind (through polkit) lets the user of the active local session suspend or power
  off; it asks for a password — which a command cannot give, so it fails — from a session
  that is not (over SSH), to power off while another user is logged in, and while another
  program holds a blocking inhibitor.
- macOS: ``shutdown -h now`` needs root; asking System Events shuts down as the Apple menu
  does (applications are asked to quit, one with unsaved work can stop it). The first time,
  macOS asks the user to let Fredica control System Events.
- Windows: ``SetSuspendState`` hibernates instead when hibernation is on (``powercfg /h off``
  makes it sleep).

A command is an argv list, never a shell line. Everything but :func:`run_command` is pure or
takes the runner as a parameter, so the CLI and the GUI run the real one and tests a fake.
"""

from __future__ import annotations

import logging
import math
import subprocess
import sys
from enum import StrEnum
from typing import Protocol

from fredica_app.errors import FredicaError

log = logging.getLogger(__name__)

#: Seconds between the queue being done and the computer going to sleep or shutting down,
#: for the user to cancel.
COUNTDOWN_SECONDS = 60
#: The longest a power or notification command may take before it counts as failed.
COMMAND_TIMEOUT = 120.0


class WhenDone(StrEnum):
    """What to do once the queue is done (nothing runs, nothing is left to claim)."""

    NOTHING = "nothing"
    NOTIFY = "notify"
    QUIT = "quit"
    SLEEP = "sleep"
    SHUTDOWN = "shutdown"

    @property
    def powers_off(self) -> bool:
        """Whether it ends the computer's session: counted down first, cancellable."""
        return self in (WhenDone.SLEEP, WhenDone.SHUTDOWN)


class CommandRunner(Protocol):
    """Runs a command given as an argv list and returns its exit status. May raise
    :class:`OSError` (the program is missing) or :class:`subprocess.SubprocessError` (it
    timed out)."""

    def __call__(self, argv: list[str]) -> int: ...


def run_command(argv: list[str]) -> int:
    """The real runner: no shell, no input, a timeout. What the command says on standard error
    when it fails is logged as a warning (the CLI shows it; the app's log keeps it)."""
    done = subprocess.run(
        argv,
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=COMMAND_TIMEOUT,
    )
    if done.returncode != 0 and done.stderr.strip():
        log.warning("%s: %s", argv[0], " ".join(done.stderr.split())[:500])
    return done.returncode


# --- sleep and shut down --------------------------------------------------------------------


def power_command(action: WhenDone, platform: str = sys.platform) -> list[str]:
    """The command that puts the computer to sleep (``sleep``) or shuts it down
    (``shutdown``) on ``platform`` (a :data:`sys.platform` value)."""
    if not action.powers_off:
        raise ValueError(f"{action!r} runs no power command")
    sleep = action is WhenDone.SLEEP
    if platform.startswith("linux"):
        return ["systemctl", "suspend" if sleep else "poweroff"]
    if platform == "darwin":
        if sleep:
            return ["pmset", "sleepnow"]
        return ["osascript", "-e", 'tell app "System Events" to shut down']
    if platform == "win32":
        if sleep:
            return ["rundll32.exe", "powrprof.dll,SetSuspendState", "0,1,0"]
        return ["shutdown.exe", "/s", "/t", "0"]
    raise FredicaError(
        f"Fredica cannot {_what(action)} on this system ({platform}): it knows the commands "
        "of Linux (systemd), macOS and Windows only; choose another action for when the queue "
        "is done"
    )


def perform(action: WhenDone, runner: CommandRunner, platform: str = sys.platform) -> None:
    """Put the computer to sleep or shut it down through ``runner``. Raises
    :class:`FredicaError` saying what failed and what to try when the command is missing,
    cannot run or exits non-zero."""
    argv = power_command(action, platform)
    what, program = _what(action), argv[0]
    try:
        code = runner(argv)
    except FileNotFoundError as exc:
        raise FredicaError(f"could not {what}: {program} was not found; {_hint(platform)}") from exc
    except (OSError, subprocess.SubprocessError) as exc:
        raise FredicaError(f"could not {what}: {program} did not run ({exc})") from exc
    if code != 0:
        raise FredicaError(f"could not {what}: {program} exited {code}; {_hint(platform)}")


def _what(action: WhenDone) -> str:
    return "put the computer to sleep" if action is WhenDone.SLEEP else "shut the computer down"


def _hint(platform: str) -> str:
    if platform.startswith("linux"):
        return (
            "logind refuses it while another user is logged in or a program inhibits it "
            "(`systemd-inhibit --list` shows which); try the same from your desktop's menu"
        )
    if platform == "darwin":
        return (
            "allow Fredica to control System Events (System Settings, Privacy & Security, "
            "Automation) and try again"
        )
    return "try the same from the system's menu"


# --- a notification without a window -----------------------------------------------------


def notify_command(title: str, body: str, platform: str = sys.platform) -> list[str] | None:
    """The command that shows a desktop notification on ``platform``, or None where there is
    no such command (Windows: the app's tray shows notifications; headless, nothing does).
    The texts are arguments, never code: macOS's script reads them from its argv."""
    if platform.startswith("linux"):
        return ["notify-send", "--app-name=Fredica", title, body]
    if platform == "darwin":
        return [
            "osascript",
            "-e",
            "on run argv",
            "-e",
            "display notification (item 2 of argv) with title (item 1 of argv)",
            "-e",
            "end run",
            title,
            body,
        ]
    return None


def notify(title: str, body: str, runner: CommandRunner, platform: str = sys.platform) -> bool:
    """Show a desktop notification through ``runner``; whether it was shown. Never raises: a
    missing or failing notifier is the caller's cue to say it another way."""
    argv = notify_command(title, body, platform)
    if argv is None:
        return False
    try:
        return runner(argv) == 0
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("no desktop notification: %s did not run (%s)", argv[0], exc)
        return False


# --- the countdown --------------------------------------------------------------------------


def seconds_left(started_at: float, now: float, total: float = COUNTDOWN_SECONDS) -> int:
    """Whole seconds a countdown of ``total`` started at ``started_at`` shows at ``now`` (the
    same clock): rounded up, so that it reads ``total`` at the start and 0 only at the end —
    give or take a millisecond, as a timer may fire that much early."""
    return max(0, math.ceil(total - (now - started_at) - 0.001))


def countdown_text(action: WhenDone, seconds: int) -> str:
    """``shutting down in 50 s``, ``going to sleep in 50 s`` (the CLI's line)."""
    doing = "going to sleep" if action is WhenDone.SLEEP else "shutting down"
    return f"{doing} in {seconds} s" if seconds > 0 else f"{doing} now"
