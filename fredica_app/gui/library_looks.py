"""The library page's first looks at its materials (probe and poster frame, see
:mod:`fredica_app.services.inspection`), one at a time, in the background.

The page hands every read of the library to :meth:`Looks.want`; materials not yet looked at
are queued in the table's order, and each look runs through the page's host call. A look that
stored something says so (:attr:`Looks.looked`): the page reads the library again, and the
row gets its length and picture. A look that could not run (the server was stopping) is not
asked again for :data:`RETRY_AFTER` seconds; a URL not yet downloaded is asked again with the
next read of the library (its download's end brings one).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from fredica_app.library.records import MaterialRecord
from fredica_app.services.inspection import Look, look_at, needs_look

if TYPE_CHECKING:
    from fredica_app.services import Fredica

#: Seconds before a look that could not run is tried again.
RETRY_AFTER = 60.0

Call = Callable[
    [Callable[["Fredica"], Awaitable[Any]], Callable[[Any], Any], Callable[[Exception], Any]],
    None,
]


class Looks(QObject):
    """Materials waiting for their first look, and the one being looked at."""

    #: A material's look stored something (its id): read the library again.
    looked = Signal(str)

    def __init__(self, call: Call, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._call = call
        self._waiting: deque[MaterialRecord] = deque()
        self._queued: set[str] = set()
        self._busy: str | None = None
        #: When a look that could not run was last tried, by material id.
        self._deferred: dict[str, float] = {}
        #: Looks done (stored something) since the page opened.
        self.done = 0
        self._calling = False  # in the host call of :meth:`_next`

    @property
    def pending(self) -> int:
        """Materials waiting or being looked at."""
        return len(self._waiting) + (self._busy is not None)

    def want(self, materials: Iterable[MaterialRecord]) -> None:
        """Queue the materials not looked at yet (those not already queued)."""
        now = time.monotonic()
        for m in materials:
            if m.id in self._queued or m.id == self._busy or not needs_look(m):
                continue
            if now - self._deferred.get(m.id, -RETRY_AFTER) < RETRY_AFTER:
                continue
            self._waiting.append(m)
            self._queued.add(m.id)
        self._next()

    def _next(self) -> None:
        # A loop, not a call from each answer to the next: a call that fails at once (the
        # host is closing) answers before it returns, and 2,000 waiting materials would go
        # 2,000 calls deep.
        if self._calling:
            return
        while self._busy is None and self._waiting:
            material = self._waiting.popleft()
            self._queued.discard(material.id)
            self._busy = material.id

            self._calling = True
            try:
                self._call(*self._look(material))
            finally:
                self._calling = False

    def _look(
        self, material: MaterialRecord
    ) -> tuple[
        Callable[[Fredica], Awaitable[Look]], Callable[[Look], None], Callable[[Exception], None]
    ]:
        """A look at ``material``: the work, what follows it, what follows its failure."""

        def work(app: Fredica) -> Awaitable[Look]:
            return look_at(app, material)

        def failed(exc: Exception) -> None:
            self._failed(material.id)

        return work, self._finished, failed

    def _finished(self, look: Look) -> None:
        self._busy = None
        if look.waiting:
            pass  # a URL not downloaded yet: asked again with the next read, which its
            # download's completion brings (its PROBE fills the material)
        elif look.deferred:
            self._deferred[look.material_id] = time.monotonic()
        else:
            self.done += 1
            self.looked.emit(look.material_id)
        self._next()

    def _failed(self, material_id: str) -> None:
        self._busy = None
        self._deferred[material_id] = time.monotonic()
        self._next()
