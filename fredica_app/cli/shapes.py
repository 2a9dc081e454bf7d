"""The stable JSON shapes the CLI prints (docs/cli.md, "JSON output"): records in, plain
data out. Scripts rely on these fields; add to them, never rename or drop one."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # shapes only: a quick command imports this module, not the app's stack
    from fredica_app.library.records import MaterialRecord
    from fredica_app.services import ControlResult
    from workers.records import CreatedRun, RestartLogEntry, RunRecord, TaskRecord, WorkerRecord


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, sort_keys=False))


def task_json(task: TaskRecord, waiting: str | None = None) -> dict[str, Any]:
    return {
        "id": task.id,
        "key": task.key,
        "type": task.type,
        "workflow_run_id": task.workflow_run_id,
        "material_id": task.material_id,
        "status": task.status.value,
        "progress": task.progress,
        "is_paused": task.is_paused,
        "is_pausable": task.is_pausable,
        "status_text": task.status_text or waiting,
        "error": task.error,
        "error_type": task.error_type,
        "retry_count": task.retry_count,
        "max_retries": task.max_retries,
        "attempt": task.attempt,
        "interruptions": task.interruptions,
        "charged_interruptions": task.charged_interruptions,
        "priority": task.priority,
        "resource": task.resource,
        "depends_on": task.depends_on,
        "payload": task.payload,
        "result": task.result,
        "created_at": task.created_at,
        "claimed_at": task.claimed_at,
        "started_at": task.started_at,
        "completed_at": task.completed_at,
        "next_run_at": task.next_run_at,
    }


def restart_entry_json(entry: RestartLogEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "session_id": entry.session_id,
        "task_id": entry.task_id,
        "task_type": entry.task_type,
        "workflow_run_id": entry.workflow_run_id,
        "material_id": entry.material_id,
        "status_at_restart": entry.status_at_restart,
        "progress": entry.progress,
        "action": entry.action,
        "disposition": entry.disposition,
        "detail": entry.detail,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "home_id": entry.home_id,
    }


def material_json(material: MaterialRecord) -> dict[str, Any]:
    return {
        "id": material.id,
        "source": material.source,
        "title": material.title,
        "local_path": material.local_path,
        "kind": material.kind,
        "size": material.size,
        "duration": material.duration,
        "fingerprint": material.fingerprint,
        "metadata": material.meta,
        "created_at": material.created_at,
    }


def run_json(
    run: RunRecord,
    tasks: list[TaskRecord] | None = None,
    waiting: dict[str, str] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": run.id,
        "template": run.template,
        "material_id": run.material_id,
        "status": run.status.value,
        "total_tasks": run.total_tasks,
        "done_tasks": run.done_tasks,
        "failed_tasks": run.failed_tasks,
        "cancelled_tasks": run.cancelled_tasks,
        "created_at": run.created_at,
        "completed_at": run.completed_at,
    }
    if tasks is not None:
        out["tasks"] = [task_json(t, (waiting or {}).get(t.id)) for t in tasks]
    return out


def created_json(created: CreatedRun) -> dict[str, Any]:
    """``submit --json``; ``add --json`` adds the material to it."""
    return {
        "run_id": created.run_id,
        "task_ids": created.task_ids,
        "deduplicated": created.deduplicated,
    }


def control_json(result: ControlResult) -> dict[str, Any]:
    """``pause|resume|cancel|retry ID --json``."""
    return {"id": result.id, "action": result.action, "changed": list(result.changed)}


def worker_json(w: WorkerRecord) -> dict[str, Any]:
    return {
        "worker_id": w.id,
        "host": w.host,
        "home_id": w.home_id,
        "pid": w.pid,
        "build": w.build,
        "slots": w.slots,
        "task_types": w.task_types,
        "running": w.running,
        "draining": w.draining,
        "started_at": w.started_at,
        "heartbeat_at": w.heartbeat_at,
        "stopped_at": w.stopped_at,
    }
