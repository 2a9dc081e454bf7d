"""The queue's tables: ``workflow_run``, ``task``, ``task_dependency``, ``task_event``,
``restart_task_log``.

Times are Unix seconds (UTC by definition) stored as floats: they compare as numbers in the
claim query, survive a round trip through SQLite and PostgreSQL unchanged, and are what the API
shows. Only :mod:`workers.store` and :mod:`workers.recovery` read or write these tables.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from workers.states import RunStatus, TaskStatus

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONValue = Any

#: The claimable indexes' predicate. The claim's WHERE repeats it word for word: SQLite uses a
#: partial index only when it can see that the query's WHERE implies the index's.
CLAIMABLE = "status = 'pending' AND unmet_deps = 0 AND NOT is_paused AND next_run_at IS NULL"
#: The predicate of the index of finished runs (retention), repeated word for word by its users.
FINISHED_RUN = "status IN ('completed', 'failed', 'cancelled')"


class Base(DeclarativeBase):
    """Declarative base shared by every table of the one Fredica database."""

    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {  # noqa: RUF012 - SQLAlchemy reads this class attribute
        dict[str, Any]: sa.JSON,
        list[str]: sa.JSON,
        float: sa.Float(),
    }


def _enum(cls: type[TaskStatus] | type[RunStatus], name: str) -> sa.Enum:
    return sa.Enum(
        cls,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=16,
        values_callable=lambda e: [m.value for m in e],
        validate_strings=True,
    )


class WorkflowRun(Base):
    __tablename__ = "workflow_run"
    __table_args__ = (
        # Retention: finished runs, by when they finished.
        sa.Index(
            "ix_workflow_run_finished",
            "completed_at",
            sqlite_where=sa.text(FINISHED_RUN),
            postgresql_where=sa.text(FINISHED_RUN),
        ),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True)
    material_id: Mapped[str | None] = mapped_column(sa.String(64), index=True)
    template: Mapped[str | None] = mapped_column(sa.String(128))
    status: Mapped[RunStatus] = mapped_column(_enum(RunStatus, "run_status"))
    total_tasks: Mapped[int] = mapped_column(server_default="0")
    # How many tasks are in each status, kept in the transaction of every task change so that
    # the run's status is derived in O(1) whatever the size of the run.
    done_tasks: Mapped[int] = mapped_column(server_default="0")
    pending_tasks: Mapped[int] = mapped_column(server_default="0")
    claimed_tasks: Mapped[int] = mapped_column(server_default="0")
    running_tasks: Mapped[int] = mapped_column(server_default="0")
    failed_tasks: Mapped[int] = mapped_column(server_default="0")
    cancelled_tasks: Mapped[int] = mapped_column(server_default="0")
    created_at: Mapped[float]
    completed_at: Mapped[float | None]


class Task(Base):
    __tablename__ = "task"
    __table_args__ = (
        # Serve the claim: only what could be claimed now is in them, in claim order. A task
        # waiting for its retry timer (next_run_at set) is not: the claim first clears the
        # next_run_at of retries that came due (through ix_task_retry_due), so a claim never
        # walks past tasks that wait. The unfiltered claim walks ix_task_claimable; a claim
        # for some resource classes takes the head of each class in ix_task_claimable_by_resource,
        # so that what other classes have queued costs it nothing.
        sa.Index(
            "ix_task_claimable",
            sa.text("priority DESC"),
            "created_at",
            sqlite_where=sa.text(CLAIMABLE),
            postgresql_where=sa.text(CLAIMABLE),
        ),
        sa.Index(
            "ix_task_claimable_by_resource",
            "resource",
            sa.text("priority DESC"),
            "created_at",
            sqlite_where=sa.text(CLAIMABLE),
            postgresql_where=sa.text(CLAIMABLE),
        ),
        # One active task per idempotency key; a finished task's key may be used again.
        sa.Index(
            "uq_task_idempotency_active",
            "idempotency_key",
            unique=True,
            sqlite_where=sa.text(
                "idempotency_key IS NOT NULL AND status IN ('pending', 'claimed', 'running')"
            ),
            postgresql_where=sa.text(
                "idempotency_key IS NOT NULL AND status IN ('pending', 'claimed', 'running')"
            ),
        ),
        # Heartbeats and recovery look only at held tasks.
        sa.Index(
            "ix_task_held",
            "worker_id",
            sqlite_where=sa.text("status IN ('claimed', 'running')"),
            postgresql_where=sa.text("status IN ('claimed', 'running')"),
        ),
        # The engine's retry timer: the earliest next_run_at among waiting retries.
        sa.Index(
            "ix_task_retry_due",
            "next_run_at",
            sqlite_where=sa.text("status = 'pending' AND next_run_at IS NOT NULL"),
            postgresql_where=sa.text("status = 'pending' AND next_run_at IS NOT NULL"),
        ),
        sa.CheckConstraint("progress >= 0 AND progress <= 100", name="progress_range"),
        sa.CheckConstraint("unmet_deps >= 0", name="unmet_deps_nonnegative"),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True)
    key: Mapped[str | None] = mapped_column(sa.String(128))
    type: Mapped[str] = mapped_column(sa.String(64))
    workflow_run_id: Mapped[str | None] = mapped_column(
        sa.ForeignKey("workflow_run.id", ondelete="SET NULL"), index=True
    )
    material_id: Mapped[str | None] = mapped_column(sa.String(64), index=True)
    status: Mapped[TaskStatus] = mapped_column(_enum(TaskStatus, "task_status"))
    priority: Mapped[int] = mapped_column(server_default="0")
    depends_on: Mapped[list[str]] = mapped_column(server_default="[]")
    payload: Mapped[dict[str, Any]] = mapped_column(server_default="{}")
    result: Mapped[dict[str, Any] | None]
    error: Mapped[str | None] = mapped_column(sa.Text)
    error_type: Mapped[str | None] = mapped_column(sa.String(64))
    idempotency_key: Mapped[str | None] = mapped_column(sa.String(256))
    retry_count: Mapped[int] = mapped_column(server_default="0")
    max_retries: Mapped[int] = mapped_column(server_default="0")
    progress: Mapped[float] = mapped_column(server_default="0")
    is_paused: Mapped[bool] = mapped_column(server_default=sa.false())
    is_pausable: Mapped[bool] = mapped_column(server_default=sa.true())
    created_at: Mapped[float]
    claimed_at: Mapped[float | None]
    started_at: Mapped[float | None]
    completed_at: Mapped[float | None]
    heartbeat_at: Mapped[float | None]
    # What a durable queue needs beyond a task's record (docs/architecture.md).
    unmet_deps: Mapped[int] = mapped_column(server_default="0")
    attempt: Mapped[int] = mapped_column(server_default="0")
    lease_token: Mapped[str | None] = mapped_column(sa.String(36))
    worker_id: Mapped[str | None] = mapped_column(sa.String(128))
    lease_until: Mapped[float | None]
    next_run_at: Mapped[float | None]
    resource: Mapped[str] = mapped_column(sa.String(16), server_default="cpu")
    status_text: Mapped[str | None] = mapped_column(sa.String(512))
    checkpoint: Mapped[dict[str, Any] | None]
    #: Times the app stopped while this task ran (not failures: they use no retry).
    interruptions: Mapped[int] = mapped_column(server_default="0")


class TaskDependency(Base):
    """One edge of the DAG: ``task_id`` waits for ``depends_on_id``."""

    __tablename__ = "task_dependency"

    task_id: Mapped[str] = mapped_column(
        sa.ForeignKey("task.id", ondelete="CASCADE"), primary_key=True
    )
    depends_on_id: Mapped[str] = mapped_column(
        sa.ForeignKey("task.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class TaskEvent(Base):
    """The timeline a user reads. Progress ticks are not events."""

    __tablename__ = "task_event"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    # No index on the task id: task ids are random, so each event would land on a random
    # index page (measured: 5 of a drain transaction's 12 WAL pages). Indexed by run, new
    # events append at the end of their run's range; a task's timeline is read within its run.
    task_id: Mapped[str] = mapped_column(sa.ForeignKey("task.id", ondelete="CASCADE"))
    workflow_run_id: Mapped[str | None] = mapped_column(sa.String(36), index=True)
    at: Mapped[float]
    kind: Mapped[str] = mapped_column(sa.String(32))
    detail: Mapped[dict[str, Any] | None]


class RestartTaskLog(Base):
    """What start-up recovery found and did, with a disposition the user can act on."""

    __tablename__ = "restart_task_log"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(sa.String(36), index=True)
    task_id: Mapped[str] = mapped_column(sa.String(36), index=True)
    task_type: Mapped[str] = mapped_column(sa.String(64))
    workflow_run_id: Mapped[str | None] = mapped_column(sa.String(36))
    material_id: Mapped[str | None] = mapped_column(sa.String(64))
    status_at_restart: Mapped[str] = mapped_column(sa.String(16))
    progress: Mapped[float] = mapped_column(server_default="0")
    action: Mapped[str] = mapped_column(sa.String(16))
    disposition: Mapped[str] = mapped_column(sa.String(16), server_default="pending_review")
    detail: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[float]
    updated_at: Mapped[float]
