"""The window's one feed of records: the change bridge's snapshot and batches, relayed.

Pages connect to a :class:`Feed` when they are built; the window starts the bridge behind it
once the application is open (``host``), and starts it again on a new data directory. Every
page sees the same snapshot, then the same batches, on the GUI thread.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class Feed(QObject):
    #: A ``workers.changes.Snapshot``: (re)load from it.
    snapshot = Signal(object)
    #: A list of ``workers.changes.Change``, one per row, latest state: apply it.
    changes = Signal(object)
