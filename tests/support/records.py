"""Task records made without a database, for the tests of what is shown of them (the CLI's
display, the GUI's badges and models): every field set, the test overriding what it is about."""

from __future__ import annotations

import dataclasses
from typing import Any

from workers.records import TaskRecord
from workers.states import TaskStatus


def task_record(**fields: Any) -> TaskRecord:
    """A pending task of run ``r-1`` that nothing holds; ``fields`` override."""
    base: dict[str, Any] = {f.name: None for f in dataclasses.fields(TaskRecord)}
    base.update(
        id="t-1",
        key="transcribe",
        type="TRANSCRIBE",
        workflow_run_id="r-1",
        status=TaskStatus.PENDING,
        priority=0,
        depends_on=[],
        payload={},
        retry_count=0,
        max_retries=1,
        progress=0.0,
        is_paused=False,
        is_pausable=True,
        created_at=0.0,
        unmet_deps=0,
        attempt=0,
        interruptions=0,
        charged_interruptions=0,
        resource="cpu",
    )
    base.update(fields)
    return TaskRecord(**base)
