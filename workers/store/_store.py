"""The store whole: :class:`TaskStore`, its parts put together (see the package's docstring)."""

from __future__ import annotations

from workers.store._attempts import AttemptsMixin
from workers.store._base import StoreBase
from workers.store._changes import ChangesMixin
from workers.store._control import ControlMixin
from workers.store._notices import NoticesMixin
from workers.store._reads import ReadsMixin
from workers.store._recovery import RecoveryMixin
from workers.store._retention import RetentionMixin
from workers.store._workers import WorkersMixin

__all__ = ["StoreBase", "TaskStore"]


class TaskStore(
    AttemptsMixin,
    ControlMixin,
    RecoveryMixin,
    RetentionMixin,
    ReadsMixin,
    ChangesMixin,
    NoticesMixin,
    WorkersMixin,
):
    """Async access to the queue's tables on an already-migrated database."""
