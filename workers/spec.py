"""Workflow specs: what a client submits, validated before anything is written.

A spec names its tasks by local keys; dependencies refer to those keys. :func:`prepare_run`
checks everything (types, payloads, priorities, the DAG) and returns a :class:`PreparedRun` the
store can insert in one transaction without further checks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from workers import dag
from workers.errors import SpecError
from workers.tasktypes import TaskTypeRegistry

RESOURCE_CLASSES = ("cpu", "gpu", "net", "io")

_KEY_PATTERN = r"^[A-Za-z0-9_.:\-]+$"


class TaskSpec(BaseModel):
    """One task of a workflow spec, as written in ``SPEC.json``."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, max_length=128, pattern=_KEY_PATTERN)
    type: str = Field(min_length=1, max_length=64)
    payload: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[str] = Field(default_factory=list)
    priority: int = Field(default=0, ge=0, le=1_000_000)
    max_retries: int = Field(default=0, ge=0, le=100)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=256)
    resource: str | None = None
    material_id: str | None = Field(default=None, max_length=64)

    @field_validator("resource")
    @classmethod
    def _known_resource(cls, value: str | None) -> str | None:
        if value is not None and value not in RESOURCE_CLASSES:
            raise ValueError(f"resource must be one of {', '.join(RESOURCE_CLASSES)}")
        return value


class WorkflowSpec(BaseModel):
    """A whole run: its tasks and what it is about."""

    model_config = ConfigDict(extra="forbid")

    template: str | None = Field(default=None, max_length=128)
    material_id: str | None = Field(default=None, max_length=64)
    tasks: list[TaskSpec] = Field(min_length=1, max_length=1_000_000)


@dataclass(frozen=True, slots=True)
class PreparedTask:
    key: str
    type: str
    payload: dict[str, Any]
    depends_on: tuple[str, ...]  # local keys, deduplicated, in spec order
    priority: int
    max_retries: int
    idempotency_key: str | None
    resource: str
    material_id: str | None


@dataclass(frozen=True, slots=True)
class PreparedRun:
    template: str | None
    material_id: str | None
    tasks: tuple[PreparedTask, ...]  # dependencies first


def parse_spec(data: Any) -> WorkflowSpec:
    """Validate raw JSON data as a :class:`WorkflowSpec`, with a readable error."""
    try:
        return WorkflowSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"invalid workflow spec: {_describe(exc)}") from None


def prepare_tasks(
    tasks: list[TaskSpec],
    registry: TaskTypeRegistry,
    *,
    material_id: str | None = None,
    known: frozenset[str] = frozenset(),
) -> tuple[PreparedTask, ...]:
    """Validate tasks (types, payloads, DAG) and return them dependencies first.

    ``known`` are keys outside ``tasks`` that may be depended on (tasks already in the run).
    """
    counts = Counter(t.key for t in tasks)
    duplicates = sorted(k for k, n in counts.items() if n > 1)
    if duplicates:
        raise SpecError(f"duplicate task key: {', '.join(map(repr, duplicates))}")
    prepared: dict[str, PreparedTask] = {}
    for task in tasks:
        task_type = registry.get(task.type)
        if task_type is None:
            raise SpecError(
                f"task {task.key!r}: unknown task type {task.type!r} "
                f"(known: {', '.join(registry.names())})"
            )
        try:
            payload = task_type.validate_payload(task.payload)
        except ValueError as exc:
            raise SpecError(f"task {task.key!r}: invalid {task.type} payload: {exc}") from None
        prepared[task.key] = PreparedTask(
            key=task.key,
            type=task.type,
            payload=payload,
            depends_on=tuple(dict.fromkeys(task.depends_on)),
            priority=task.priority,
            max_retries=task.max_retries,
            idempotency_key=task.idempotency_key,
            resource=task.resource or task_type.resource,
            material_id=task.material_id or material_id,
        )
    try:
        order = dag.validate({k: t.depends_on for k, t in prepared.items()}, known)
    except dag.DagError as exc:
        raise SpecError(f"invalid workflow spec: {exc}") from None
    return tuple(prepared[k] for k in order)


def prepare_run(spec: WorkflowSpec, registry: TaskTypeRegistry) -> PreparedRun:
    return PreparedRun(
        template=spec.template,
        material_id=spec.material_id,
        tasks=prepare_tasks(spec.tasks, registry, material_id=spec.material_id),
    )


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "spec"
        parts.append(f"{where}: {err['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
