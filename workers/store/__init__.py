"""The queue's SQL: every read and write of ``workflow_run``, ``task``, ``task_dependency`` and
``task_event`` (and ``notice``) goes through :class:`TaskStore`.

Each public method is one transaction. Writes begin ``IMMEDIATE`` (see :mod:`workers.db`), and
every status change is a compare-and-set (``WHERE status IN …``); writes that finish an
attempt are also fenced by the attempt's ``lease_token``, so a stale worker changes nothing.

The API is async, but a transaction runs whole on a store thread: one thread hop per
transaction rather than one per statement (aiosqlite's model costs ~27 hops per claim+complete
cycle, measured at a third of this design's throughput; see docs/architecture.md). Writes go
through one writer thread — SQLite has one writer anyway — and reads through a small pool that
runs beside it under WAL.

Every visible change of a task or a run is numbered by SQLite itself (triggers, migration
0005): :meth:`TaskStore.changes_since` gives a viewer what changed after its cursor.

A run keeps a count of its tasks in each status, updated in the same transaction as every task
change, so its status is derived in O(1) (:func:`workers.states.derive_run_status`).

The package loads the store (and SQLAlchemy) when :class:`TaskStore` is first asked for:
:mod:`workers.store.quick`, the read-only look of the commands that must answer at once, has
no use for either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workers.store._base import StoreBase as StoreBase
    from workers.store._store import TaskStore as TaskStore

__all__ = ["StoreBase", "TaskStore"]


def __getattr__(name: str) -> Any:
    if name == "TaskStore":
        from workers.store._store import TaskStore

        return TaskStore
    if name == "StoreBase":
        from workers.store._base import StoreBase

        return StoreBase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
