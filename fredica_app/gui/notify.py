"""Everything the desktop app tells the user outside its pages goes through one
:class:`Notifier`: a run finished or failed, work to review after a restart, the disk
nearly full, "Fredica keeps running in the tray".

It shows a notification the best way the desktop offers, trying in order:

1. **The desktop's notification server** (``org.freedesktop.Notifications`` on the D-Bus
   session bus: GNOME, KDE Plasma, Xfce, dunst, mako…), on Linux and the BSDs, when the
   bus has that service. Clicking the notification, or its "Show" button, opens the run
   (or the queue) in the window: the server's ``ActionInvoked`` signal.
2. **The tray icon's balloon** (``QSystemTrayIcon.showMessage``) where there is a tray and it
   can show messages: Windows' notifications, macOS's Notification Center.
3. **A toast in the window** (:mod:`~fredica_app.gui.toast`): always possible, offscreen
   too.

Nothing here may crash or hang the app without a tray or a notification server. Every D-Bus
call (finding the server, sending a notification) is made on a thread of its own, with a
timeout of a few seconds: a notification server that is slow to start (D-Bus activation) or
hung costs that thread a few seconds and the GUI thread nothing. Its answers come back
as queued signals. A notification the server cannot take (an error, a timeout) is shown the
next way down instead; after :data:`MAX_FAILURES` failures in a row the server is not asked
again in this session.

Why D-Bus calls go through ``QDBusInterface`` and a meta-object taught by a local object
(:func:`_typed_interface`): ``Notify`` takes its ``replaces_id`` as an unsigned 32-bit
integer, and notification servers check the signature (GDBus-based ones refuse
``(sisssasa{sv}i)``). PySide6 turns a Python ``int`` into a signed ``int`` (``i``), and has
no ``QVariant`` to say otherwise. A ``QDBusInterface`` marshals by the types of its
meta-object instead; QtDBus builds that meta-object from the service's introspection and
keeps it per interface name on the connection — but from the introspection of real servers
it cannot type the ``a{sv}`` hints. So the worker thread first introspects a local object
whose slot declares the exact signature, which leaves the right meta-object for
``org.freedesktop.Notifications`` on the connection, and then calls the real server with
it. If a future Qt no longer works that way, the check of the meta-object fails and the
next way down is used.

``settings.notifications`` off: nothing is shown (:attr:`Notifier.enabled`), except what
the user must know to find the app again (``essential``: the tray's first-time message).
What was shown is kept in a bounded record (:attr:`Notifier.shown`): title, text and the
way it was shown.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import sys
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from PySide6.QtCore import (
    Q_ARG,
    Q_RETURN_ARG,
    SLOT,
    ClassInfo,
    QMetaObject,
    QObject,
    Qt,
    Signal,
    SignalInstance,
    Slot,
)
from PySide6.QtDBus import QDBus, QDBusConnection, QDBusInterface, QDBusMessage
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QSystemTrayIcon, QWidget
from shiboken6 import isValid

from fredica_app.gui.toast import TOAST_MS, ToastStack

log = logging.getLogger(__name__)

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
INTERFACE = SERVICE
#: The typed signature of ``Notify`` in the meta-object the calls are made with.
NOTIFY = "Notify(QString,uint,QString,QString,QString,QStringList,QVariantMap,int)"
#: Where the local object that declares that signature is registered, for a moment.
SHAPE_PATH = "/org/fredica/NotificationsShape"
#: How long the notification server may take to answer (milliseconds): to be found (it may
#: be started by D-Bus activation) and to take a notification.
PROBE_MS = 5000
CALL_MS = 3000
#: After this many failed notifications in a row, the server is not asked again.
MAX_FAILURES = 3
#: What the record of shown notifications keeps.
KEEP = 200
#: The desktop entry the notifications say they come from (its name and icon).
DESKTOP_ENTRY = "fredica"

Backend = Literal["dbus", "tray", "toast", "log"]
BusFactory = Callable[[], QDBusConnection]
_REPLY = QDBusMessage.MessageType.ReplyMessage


@dataclass(frozen=True, slots=True)
class Shown:
    """A notification as it was shown: its title, its text, and how (``dbus``: the
    desktop's notification server; ``tray``: the tray icon's balloon; ``toast``: in the
    window; ``log``: nowhere to show it, written to the log)."""

    title: str
    body: str
    backend: Backend
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class _Note:
    title: str
    body: str
    run_id: str | None
    urgent: bool


def desktop_bus() -> BusFactory | None:
    """The session bus, where desktop notifications live: on Linux and the BSDs, when the
    app is on a screen (not offscreen)."""
    if sys.platform.startswith(("win", "darwin", "cygwin")):
        return None
    if QGuiApplication.platformName() in ("offscreen", "minimal"):
        return None
    return QDBusConnection.sessionBus


# --- D-Bus, on a thread of its own ------------------------------------------------------------


#: Exports a class's slots as members of the notification interface.
_AS_NOTIFICATIONS: Any = ClassInfo(**{"D-Bus Interface": INTERFACE})  # type: ignore[arg-type]


@_AS_NOTIFICATIONS
class _NotifyShape(QObject):
    """Declares ``Notify``'s exact D-Bus signature (see the module's docstring); never
    called."""

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
        return 0


def _typed_interface(bus: QDBusConnection) -> QDBusInterface | None:
    """An interface to the notification server whose ``Notify`` marshals the spec's types;
    None when QtDBus did not give one."""
    shape = _NotifyShape()
    if bus.registerObject(SHAPE_PATH, shape, QDBusConnection.RegisterOption.ExportAllSlots):
        try:
            QDBusInterface(bus.baseService(), SHAPE_PATH, INTERFACE, bus)
        finally:
            bus.unregisterObject(SHAPE_PATH)
    iface = QDBusInterface(SERVICE, PATH, INTERFACE, bus)
    if iface.metaObject().indexOfMethod(NOTIFY) < 0:
        return None
    return iface


def _call_notify(iface: QDBusInterface, *args: Any) -> int:
    """``Notify`` with the types of the interface's meta-object; the notification's id."""
    app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout = args
    invoke: Any = QMetaObject.invokeMethod  # its stubs do not know Q_ARG's holders
    result = invoke(
        iface,
        "Notify",
        Qt.ConnectionType.DirectConnection,
        Q_RETURN_ARG("uint"),
        Q_ARG(str, app_name),
        Q_ARG("uint", replaces_id),
        Q_ARG(str, app_icon),
        Q_ARG(str, summary),
        Q_ARG(str, body),
        Q_ARG("QStringList", actions),
        Q_ARG("QVariantMap", hints),
        Q_ARG(int, expire_timeout),
    )
    return int(result or 0)


class DBusNotifications(QObject):
    """``org.freedesktop.Notifications`` on a bus, every call on a thread of its own.

    :meth:`start` looks for the server (``GetCapabilities``, which also starts one that
    D-Bus activates) and says on :attr:`ready` whether it can be used; :meth:`send` queues a
    notification, answered on :attr:`sent` (its id) or :attr:`failed`. The server's
    ``ActionInvoked`` and ``NotificationClosed`` arrive on :attr:`action_invoked` and
    :attr:`notification_closed` (for every application's notifications: the ids say whose).
    """

    #: (usable, why not).
    ready = Signal(bool, str)
    #: (token, the notification's id).
    sent = Signal(object, object)
    #: (token, why).
    failed = Signal(object, str)
    #: (notification id, action key).
    action_invoked = Signal(object, str)
    #: The notification id.
    notification_closed = Signal(object)

    def __init__(
        self,
        connect: BusFactory,
        *,
        app_name: str = "Fredica",
        probe_ms: int = PROBE_MS,
        call_ms: int = CALL_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._connect = connect
        self._app_name = app_name
        self._probe_ms = probe_ms
        self._call_ms = call_ms
        self._jobs: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        #: What the server said it can do (``actions``, ``body``, ``persistence``…).
        self.capabilities: list[str] = []

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="fredica-dbus", daemon=True)
            self._thread.start()

    def send(self, token: int, title: str, body: str, *, actions: list[str], urgent: bool) -> None:
        """Queue a notification. ``actions``: keys and labels, in turn (``default`` is a click
        on the notification itself); left out where the server shows no actions."""
        self._jobs.put((token, title, body, actions, urgent))

    def stop(self) -> None:
        """Let the thread end (after the call it is making, if any); it never holds the app."""
        self._jobs.put(None)

    def _emit(self, signal: SignalInstance, *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # this object has gone meanwhile
            signal.emit(*args)

    @Slot("uint", str)
    def _on_action(self, notification_id: int, key: str) -> None:
        self.action_invoked.emit(int(notification_id), key)

    @Slot("uint", "uint")
    def _on_closed(self, notification_id: int, _reason: int) -> None:
        self.notification_closed.emit(int(notification_id))

    # --- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._serve()
        except Exception as exc:  # never into the app: notifications go another way
            log.exception("desktop notifications over D-Bus failed")
            self._emit(self.ready, False, str(exc))

    def _serve(self) -> None:
        bus = self._connect()
        if not bus.isConnected():
            self._emit(self.ready, False, bus.lastError().message() or "no session bus")
            return
        probe = QDBusMessage.createMethodCall(SERVICE, PATH, INTERFACE, "GetCapabilities")
        reply = bus.call(probe, QDBus.CallMode.Block, self._probe_ms)
        if reply.type() != _REPLY:
            self._emit(self.ready, False, reply.errorMessage() or reply.errorName())
            return
        answer = reply.arguments()
        self.capabilities = [str(c) for c in answer[0]] if answer else []
        iface = _typed_interface(bus)
        if iface is None:
            self._emit(self.ready, False, "QtDBus cannot type the Notify call")
            return
        iface.setTimeout(self._call_ms)
        connect: Any = bus.connect  # its stubs want bytes for the slot; it takes a str
        for name, slot in (
            ("ActionInvoked", "_on_action(uint,QString)"),
            ("NotificationClosed", "_on_closed(uint,uint)"),
        ):
            if not connect(SERVICE, PATH, INTERFACE, name, self, SLOT(slot)):
                log.warning("cannot follow the notification server's %s", name)
        self._emit(self.ready, True, "")
        with_actions = "actions" in self.capabilities
        while (job := self._jobs.get()) is not None:
            token, title, body, actions, urgent = job
            hints: dict[str, Any] = {"desktop-entry": DESKTOP_ENTRY}
            if urgent:
                hints["urgency"] = 2  # critical: it stays until dismissed
            pairs = actions if with_actions else []
            nid = _call_notify(iface, self._app_name, 0, "", title, body, pairs, hints, -1)
            error = iface.lastError()
            if error.isValid():
                self._emit(self.failed, token, error.message() or error.name())
            else:
                self._emit(self.sent, token, nid)


# --- the notifier -------------------------------------------------------------------------------

_DEFAULT: Any = object()


class Notifier(QObject):
    """Shows the app's notifications (see the module's docstring)."""

    #: A notification about a run was clicked: show that run (its id).
    show_run = Signal(str)
    #: A notification about the queue (a summary, the disk, a restart) was clicked.
    show_queue = Signal()
    #: A notification was shown (a :class:`Shown`).
    delivered = Signal(object)

    def __init__(
        self,
        *,
        enabled: bool = True,
        bus: BusFactory | None = _DEFAULT,
        call_ms: int = CALL_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        #: ``settings.notifications``: off, nothing is shown but what is essential.
        self.enabled = enabled
        self._record: deque[Shown] = deque(maxlen=KEEP)
        self._tray: QSystemTrayIcon | None = None
        self._tray_run: str | None = None
        self._toasts: ToastStack | None = None
        self._tokens = itertools.count(1)
        #: Sent to the server (or waiting for it to be found), by token.
        self._pending: OrderedDict[int, _Note] = OrderedDict()
        #: The server's ids of what it shows for us → the run (None: the queue).
        self._targets: OrderedDict[int, str | None] = OrderedDict()
        self._failures = 0
        self._dbus: DBusNotifications | None = None
        #: ``off``: no server; ``probing``: looking for one; ``on``: using it.
        self.dbus_state: Literal["off", "probing", "on"] = "off"
        connect = desktop_bus() if bus is _DEFAULT else bus
        if connect is not None:
            self._dbus = DBusNotifications(connect, call_ms=call_ms, parent=self)
            self._dbus.ready.connect(self._on_ready)
            self._dbus.sent.connect(self._on_sent)
            self._dbus.failed.connect(self._on_failed)
            self._dbus.action_invoked.connect(self._on_action)
            self._dbus.notification_closed.connect(self._on_closed)
            self.dbus_state = "probing"
            self._dbus.start()

    # --- where to show ---------------------------------------------------------------------------

    def set_tray(self, tray: QSystemTrayIcon | None) -> None:
        """The tray icon whose balloon is the second way (None: no tray)."""
        if self._tray is not None and isValid(self._tray):
            with contextlib.suppress(RuntimeError, TypeError):
                self._tray.messageClicked.disconnect(self._on_tray_click)
        self._tray = tray
        if tray is not None:
            tray.messageClicked.connect(self._on_tray_click)

    def set_window(self, window: QWidget | None, *, toast_ms: int = TOAST_MS) -> None:
        """The window whose toasts are the last way (a new window replaces the old)."""
        self._toasts = ToastStack(window, timeout_ms=toast_ms) if window is not None else None

    @property
    def toasts(self) -> ToastStack | None:
        return self._toasts

    @property
    def shown(self) -> list[Shown]:
        """What was shown, oldest first (the last :data:`KEEP`)."""
        return list(self._record)

    # --- showing ---------------------------------------------------------------------------------

    def notify(
        self,
        title: str,
        body: str,
        *,
        run_id: str | None = None,
        urgent: bool = False,
        essential: bool = False,
    ) -> None:
        """Show a notification; a click on it shows ``run_id`` (None: the queue). ``urgent``:
        it stays until dismissed where the desktop can do that. ``essential``: shown even
        with notifications off."""
        if not (self.enabled or essential):
            log.debug("notifications are off: not shown: %s — %s", title, body)
            return
        note = _Note(title, body, run_id, urgent)
        if self.dbus_state == "off" or self._dbus is None:
            self._fallback(note)
            return
        token = next(self._tokens)
        self._pending[token] = note
        if self.dbus_state == "on":
            self._send(token, note)

    def close(self) -> None:
        """Stop using the notification server (the app is quitting)."""
        if self._dbus is not None:
            self._dbus.stop()
        self.dbus_state = "off"
        for note in self._take_pending():
            self._fallback(note)

    def _send(self, token: int, note: _Note) -> None:
        assert self._dbus is not None
        actions = ["default", self.tr("Open"), "show", self.tr("Show")]
        self._dbus.send(token, note.title, note.body, actions=actions, urgent=note.urgent)

    def _take_pending(self) -> list[_Note]:
        notes = list(self._pending.values())
        self._pending.clear()
        return notes

    def _show(self, shown: Shown) -> None:
        self._record.append(shown)
        self.delivered.emit(shown)

    def _fallback(self, note: _Note) -> None:
        """The tray's balloon, else a toast, else the log."""
        tray = self._tray
        if (
            tray is not None
            and isValid(tray)
            and tray.isVisible()
            and QSystemTrayIcon.supportsMessages()
        ):
            icon = (
                QSystemTrayIcon.MessageIcon.Warning
                if note.urgent
                else QSystemTrayIcon.MessageIcon.Information
            )
            self._tray_run = note.run_id
            tray.showMessage(note.title, note.body, icon, TOAST_MS)
            self._show(Shown(note.title, note.body, "tray", note.run_id))
            return
        toasts = self._toasts
        if toasts is not None and isValid(toasts.window):
            run_id = note.run_id
            link = self.tr("Show") if run_id else self.tr("Open the queue")
            toasts.show_toast(
                note.title, note.body, link_text=link, on_link=lambda: self._open(run_id)
            )
            self._show(Shown(note.title, note.body, "toast", note.run_id))
            return
        log.info("notification: %s — %s", note.title, note.body)
        self._show(Shown(note.title, note.body, "log", note.run_id))

    def _open(self, run_id: str | None) -> None:
        if run_id:
            self.show_run.emit(run_id)
        else:
            self.show_queue.emit()

    def _on_tray_click(self) -> None:
        self._open(self._tray_run)

    # --- the server's answers ----------------------------------------------------------------

    def _on_ready(self, usable: bool, why: str) -> None:
        """The server was found (or not); also, not usable, when its thread failed later."""
        if self.dbus_state == "off":  # closed meanwhile
            return
        if usable and self._dbus is not None:
            log.info("desktop notifications: the session bus's notification server")
            self.dbus_state = "on"
            for token, note in self._pending.items():
                self._send(token, note)
            return
        log.info("desktop notifications: no notification server on D-Bus (%s)", why)
        self.dbus_state = "off"
        for note in self._take_pending():
            self._fallback(note)

    def _on_sent(self, token: int, notification_id: int) -> None:
        note = self._pending.pop(token, None)
        if note is None:
            return
        self._failures = 0
        self._targets[notification_id] = note.run_id
        while len(self._targets) > KEEP:
            self._targets.popitem(last=False)
        self._show(Shown(note.title, note.body, "dbus", note.run_id))

    def _on_failed(self, token: int, why: str) -> None:
        note = self._pending.pop(token, None)
        if note is None:
            return
        self._failures += 1
        log.warning("the notification server did not take a notification: %s", why)
        if self._failures >= MAX_FAILURES and self.dbus_state == "on":
            log.warning("desktop notifications: not using the notification server any more")
            self.close()
        self._fallback(note)

    def _on_action(self, notification_id: int, key: str) -> None:
        if notification_id not in self._targets or key not in ("default", "show"):
            return  # another application's notification, or an action not ours
        self._open(self._targets[notification_id])

    def _on_closed(self, notification_id: int) -> None:
        self._targets.pop(notification_id, None)
