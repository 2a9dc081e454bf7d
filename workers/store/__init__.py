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
"""

from __future__ import annotations

from workers.store._attempts import AttemptsMixin
from workers.store._base import StoreBase
from workers.store._changes import ChangesMixin
from workers.store._control import ControlMixin
from workers.store._notices import NoticesMixin
from workers.store._reads import ReadsMixin
from workers.store._recovery import RecoveryMixin
from workers.store._retention import RetentionMixin

__all__ = ["StoreBase", "TaskStore"]


class TaskStore(
    AttemptsMixin,
    ControlMixin,
    RecoveryMixin,
    RetentionMixin,
    ReadsMixin,
    ChangesMixin,
    NoticesMixin,
):
    """Async access to the queue's tables on an already-migrated database."""
