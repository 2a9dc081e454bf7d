"""A FAKE desktop notification server, and a private D-Bus session bus to run it on.

A desktop's notification server (GNOME Shell, Plasma, dunst…) cannot run here; this fake
stands in for it. It owns ``org.freedesktop.Notifications`` on a bus and answers ``Notify``
and ``GetCapabilities`` with the specification's exact signatures — QtDBus dispatches by
signature, so a call with a signed ``replaces_id`` finds no method, as it would on a real
server. It writes each notification it receives as a JSON line to a file, and has two
methods of its own for tests: ``Invoke(key)`` emits ``ActionInvoked`` for the last
notification, as if the user had clicked it; ``Stall(seconds)`` makes the next notification
wait that long before it is answered, as a hung server would.

    python -m tests.gui.fake_notifications ADDRESS RECORD_FILE

:func:`private_bus` starts a real ``dbus-daemon`` (no service activation: nothing of this
machine's starts on it) and yields its address.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"

BUS_CONFIG = """
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={folder}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


@contextmanager
def private_bus(folder: Path) -> Iterator[str]:
    """A session bus of its own, for one test; its address."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "bus.conf"
    config.write_text(textwrap.dedent(BUS_CONFIG).format(folder=folder))
    daemon = subprocess.Popen(
        ["dbus-daemon", f"--config-file={config}", "--print-address=1", "--nofork"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert daemon.stdout is not None
        address = daemon.stdout.readline().strip()
        assert address, "dbus-daemon gave no address"
        yield address
    finally:
        daemon.terminate()
        daemon.communicate(timeout=30)  # waits, and closes its pipe


@contextmanager
def fake_server(address: str, record: Path) -> Iterator[subprocess.Popen[str]]:
    """The fake server on the bus at ``address``, running until the block ends; returns
    once it owns its name."""
    record.write_text("")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.gui.fake_notifications", address, str(record)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "ready" once it owns the name
        assert line.strip() == "ready", "the fake server did not start"
        yield server
    finally:
        server.terminate()
        server.communicate(timeout=30)


def received(record: Path) -> list[dict[str, Any]]:
    """The notifications the fake has received, in order."""
    text = record.read_text() if record.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def call_fake(address: str, method: str, argument: Any, timeout: float = 10) -> None:
    """Call one of the fake's test methods (``Invoke``, ``Stall``) from a connection of the
    test's own."""
    from PySide6.QtDBus import QDBus, QDBusConnection, QDBusMessage

    name = f"fredica-test-caller-{time.monotonic_ns()}"
    bus = QDBusConnection.connectToBus(address, name)
    try:
        message = QDBusMessage.createMethodCall(SERVICE, PATH, SERVICE, method)
        message.setArguments([argument])
        reply = bus.call(message, QDBus.CallMode.Block, int(timeout * 1000))
        assert reply.type() == QDBusMessage.MessageType.ReplyMessage, reply.errorMessage()
    finally:
        QDBusConnection.disconnectFromBus(name)


def main(address: str, record_file: str) -> int:
    from PySide6.QtCore import ClassInfo, QCoreApplication, QObject, Signal, Slot
    from PySide6.QtDBus import QDBusConnection

    app = QCoreApplication([])
    bus = QDBusConnection.connectToBus(address, "fake-notifications")
    record = Path(record_file)

    @ClassInfo(**{"D-Bus Interface": SERVICE})  # type: ignore[arg-type, operator]
    class FakeServer(QObject):
        ActionInvoked = Signal("uint", str)
        NotificationClosed = Signal("uint", "uint")

        def __init__(self) -> None:
            super().__init__()
            self.last = 0
            self.stall = 0.0

        @Slot(str, "uint", str, str, str, "QStringList", "QVariantMap", int, result="uint")
        def Notify(
            self,
            app_name: str,
            replaces_id: int,
            app_icon: str,
            summary: str,
            body: str,
            actions: list[str],
            hints: dict[str, Any],
            expire_timeout: int,
        ) -> int:
            if self.stall:  # the caller gives up first: this one is not shown
                time.sleep(self.stall)
                self.stall = 0.0
                return 0
            self.last += 1
            entry = {
                "id": self.last,
                "app_name": app_name,
                "replaces_id": replaces_id,
                "summary": summary,
                "body": body,
                "actions": list(actions),
                "hints": {k: v for k, v in hints.items() if isinstance(v, (str, int))},
                "expire_timeout": expire_timeout,
            }
            with record.open("a") as f:
                f.write(json.dumps(entry) + "\n")
            return self.last

        @Slot(result="QStringList")
        def GetCapabilities(self) -> list[str]:
            return ["actions", "body", "persistence"]

        @Slot(str)
        def Invoke(self, key: str) -> None:
            self.ActionInvoked.emit(self.last, key)

        @Slot(float)
        def Stall(self, seconds: float) -> None:
            self.stall = seconds

    server = FakeServer()
    options = (
        QDBusConnection.RegisterOption.ExportAllSlots
        | QDBusConnection.RegisterOption.ExportAllSignals
    )
    if not (bus.registerObject(PATH, server, options) and bus.registerService(SERVICE)):
        print(f"cannot own {SERVICE}: {bus.lastError().message()}", file=sys.stderr, flush=True)
        return 1
    print("ready", flush=True)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
