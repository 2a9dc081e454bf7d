"""Task and run records for the GUI's tests, without a database."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from workers.records import RunRecord, TaskRecord
from workers.states import RunStatus, TaskStatus


def make_task(n: int, **fields: Any) -> TaskRecord:
    base = TaskRecord(
        id=f"task-{n:05d}",
        key=f"t{n}",
        type="TRANSCODE",
        workflow_run_id="run-0001",
        material_id=None,
        status=TaskStatus.PENDING,
        priority=0,
        depends_on=[],
        payload={},
        result=None,
        error=None,
        error_type=None,
        idempotency_key=None,
        retry_count=0,
        max_retries=0,
        progress=0.0,
        is_paused=False,
        is_pausable=True,
        created_at=1_700_000_000.0 + n,
        claimed_at=None,
        started_at=None,
        completed_at=None,
        heartbeat_at=None,
        unmet_deps=0,
        attempt=0,
        interruptions=0,
        lease_token=None,
        worker_id=None,
        lease_until=None,
        next_run_at=None,
        resource="cpu",
        status_text=None,
        checkpoint=None,
    )
    return replace(base, **fields)


def running(n: int, progress: float, text: str | None = None, **fields: Any) -> TaskRecord:
    return make_task(
        n, status=TaskStatus.RUNNING, progress=progress, status_text=text, attempt=1, **fields
    )


def make_run(n: int, **fields: Any) -> RunRecord:
    base = RunRecord(
        id=f"run-{n:04d}",
        material_id=None,
        template="transcribe",
        status=RunStatus.RUNNING,
        total_tasks=4,
        done_tasks=1,
        pending_tasks=2,
        claimed_tasks=0,
        running_tasks=1,
        failed_tasks=0,
        cancelled_tasks=0,
        created_at=1_700_000_000.0 + n,
        completed_at=None,
    )
    return replace(base, **fields)
