"""Python's cyclic garbage collection, on the GUI thread only.

CPython runs a collection in whichever thread's allocation crosses a generation's threshold.
In the window's process that is mostly the application host's thread (the engine, the
store's replies) and the change bridge's: a collection there finalizes whatever garbage it
finds — a closed dialog's widgets held in a cycle with a Python slot, say — and Qt objects
destroyed from a thread that does not own them are what Qt forbids: a crash, or a deadlock
when the destructor waits for a lock the GUI thread holds while it waits for the
interpreter's lock.

:class:`GuiThreadCollector` turns the automatic collection off and looks at the collector's
counters every :data:`INTERVAL_MS` on the GUI thread, collecting the oldest generation whose
count has passed its threshold — the decision CPython takes at an allocation, taken a few
times a second instead, with its rule for the oldest generation too: a full collection only
once the objects that reached it since the last one are a quarter of those it held then
(else the middle generation is collected). Reference counting, which frees nearly
everything, is untouched: only objects in cycles wait, at most one interval. Other threads
never collect, and the thresholds (``gc.set_threshold``) keep their meaning.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

#: Between two looks at the counters: short against the time a cycle's memory matters, long
#: against a look's cost (three integers read).
INTERVAL_MS = 250


class GuiThreadCollector(QObject):
    """Runs the cyclic garbage collector from a timer of the thread it is made on (the GUI
    thread): :meth:`start` turns the automatic collection off, :meth:`stop` collects once
    more and turns it back on as it was."""

    def __init__(self, interval_ms: int = INTERVAL_MS, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)
        self._was_enabled: bool | None = None
        #: Objects in the oldest generation after the last full collection (or the start).
        self._long_lived = 0
        #: The oldest generation's count when its rule last said no (not asked again until
        #: the count moves: the rule walks that generation's list).
        self._declined_at = -1
        #: Collections made, by generation (for the tests and the logs).
        self.collections = [0, 0, 0]

    @property
    def running(self) -> bool:
        return self._was_enabled is not None

    def start(self) -> None:
        if self.running:
            return
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._long_lived = len(gc.get_objects(generation=2))
        self._declined_at = -1
        self._timer.start()

    def stop(self) -> None:
        """Stop looking: collect what is garbage now (here, on this thread), then give the
        collection back to the interpreter if it had it."""
        if self._was_enabled is None:
            return
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
        self._was_enabled = None

    def check(self) -> int | None:
        """Collect the oldest generation whose count is past its threshold, as CPython would
        at an allocation; the generation collected, or None."""
        if gc.isenabled():
            # Something turned it back on (a block that disabled it around its imports and
            # restored what it found): this thread alone collects while the window runs.
            gc.disable()
        counts = gc.get_count()
        thresholds = gc.get_threshold()
        for generation in (2, 1, 0):
            threshold = thresholds[generation]
            if not threshold or counts[generation] <= threshold:
                continue
            if generation == 2:
                if counts[2] == self._declined_at:
                    continue
                oldest = len(gc.get_objects(generation=2))
                if oldest - self._long_lived < self._long_lived // 4:
                    self._declined_at = counts[2]
                    continue  # few new long-lived objects: a full walk would find little
            gc.collect(generation)
            self.collections[generation] += 1
            if generation == 2:
                self._long_lived = len(gc.get_objects(generation=2))
            return generation
        return None
