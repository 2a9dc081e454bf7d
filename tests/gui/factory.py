"""Task and run records for the GUI's tests, without a database."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.support.records import task_record
from workers.records import RunRecord, TaskRecord
from workers.states import RunStatus, TaskStatus


def make_task(n: int, **fields: Any) -> TaskRecord:
    return task_record(
        **{
            "id": f"task-{n:05d}",
            "key": f"t{n}",
            "type": "TRANSCODE_MP4",
            "workflow_run_id": "run-0001",
            "max_retries": 0,
            "created_at": 1_700_000_000.0 + n,
            **fields,
        }
    )


def running(n: int, progress: float, text: str | None = None, **fields: Any) -> TaskRecord:
    fields = {"attempt": 1, **fields}
    return make_task(n, status=TaskStatus.RUNNING, progress=progress, status_text=text, **fields)


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
