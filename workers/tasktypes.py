"""Task types: a name, a validated payload with a schema version, and a resource class.

The registry is what a submitted spec is checked against. Executors (issue of the engine)
attach behaviour to these names; a type can be known here before any executor runs it.

The queue's own types are the diagnostic ones (``NOOP``, ``SLEEP``, ``SLEEP_SUBPROCESS``). The
jobs' types are data the app gives the queue (made from the job catalogue: a payload model
is :class:`TaskPayload` with a job's params); nothing here knows a media job.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

#: The payload key that carries its schema version.
SCHEMA_VERSION_KEY = "schema_version"


class TaskPayload(BaseModel):
    """Base of every payload model. ``schema_version`` lets an upgraded Fredica refuse an old
    task whose meaning changed, instead of running it wrongly."""

    model_config = ConfigDict(extra="forbid")

    SCHEMA_VERSION: ClassVar[int] = 1
    SUPPORTED_VERSIONS: ClassVar[frozenset[int]] = frozenset({1})

    schema_version: int = Field(default=1, ge=1)
    #: Complete at once with ``{"skipped": true}`` when the executor finds valid outputs.
    check_skip: bool = False


class UnsupportedPayloadVersion(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class TaskType:
    name: str
    payload_model: type[TaskPayload]
    resource: str = "cpu"
    description: str = ""

    def validate_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload as stored: validated, defaults filled, the schema version set.

        Raises ``ValueError`` with a readable message.
        """
        data = dict(payload)
        data.setdefault(SCHEMA_VERSION_KEY, self.payload_model.SCHEMA_VERSION)
        stored = self.parse_payload(data).model_dump(mode="json", exclude_defaults=True)
        stored[SCHEMA_VERSION_KEY] = data[SCHEMA_VERSION_KEY]
        return stored

    def parse_payload(self, payload: dict[str, Any]) -> TaskPayload:
        """Parse a stored payload; reject a schema version this Fredica does not support."""
        version = payload.get(SCHEMA_VERSION_KEY, 1)
        # A number, not a list (unhashable), a bool or a string that prints like one.
        number = isinstance(version, int | float) and not isinstance(version, bool)
        if not number or version not in self.payload_model.SUPPORTED_VERSIONS:
            supported = ", ".join(map(str, sorted(self.payload_model.SUPPORTED_VERSIONS)))
            raise UnsupportedPayloadVersion(
                f"{self.name} payload schema_version {version!r} is not supported by this "
                f"version of Fredica (supported: {supported})"
            )
        try:
            return self.payload_model.model_validate(payload)
        except ValidationError as exc:
            msgs = [
                f"{'.'.join(str(p) for p in e['loc']) or 'payload'}: {e['msg']}"
                for e in exc.errors()[:5]
            ]
            raise ValueError("; ".join(msgs)) from None


@dataclass
class TaskTypeRegistry:
    _types: dict[str, TaskType] = field(default_factory=dict)

    def register(self, task_type: TaskType) -> TaskType:
        if task_type.name in self._types:
            raise ValueError(f"task type {task_type.name!r} is already registered")
        self._types[task_type.name] = task_type
        return task_type

    def get(self, name: str) -> TaskType | None:
        return self._types.get(name)

    def names(self) -> list[str]:
        return sorted(self._types)

    def __iter__(self) -> Iterator[TaskType]:
        return iter(self._types.values())

    def __contains__(self, name: object) -> bool:
        return name in self._types


# --- Diagnostic task types: exercise and benchmark the queue without media. ---


class NoopPayload(TaskPayload):
    """Anything goes: NOOP's result echoes its payload."""

    model_config = ConfigDict(extra="allow")


class SleepPayload(TaskPayload):
    seconds: float = Field(ge=0, le=7 * 24 * 3600)


# The diagnostic types use the ``io`` class: they take no CPU worth a ``cpu`` slot.
NOOP = TaskType("NOOP", NoopPayload, "io", "completes at once; its result echoes its payload")
SLEEP = TaskType(
    "SLEEP", SleepPayload, "io", "sleeps `seconds`, reporting progress; pausable, cancellable"
)


class SleepSubprocessPayload(TaskPayload):
    """The ``/tasks/sleep`` endpoint's params (the endpoints server validates them again):
    sleep ``seconds``, and on cue pause, resume, crash or exit without a result."""

    seconds: float = Field(ge=0, le=24 * 3600)
    #: After this many seconds of sleep, ask for a pause (reason "requested").
    pause_after: float | None = Field(default=None, ge=0)
    #: That many seconds after its own pause request, resume by itself (absent: wait).
    resume_after: float | None = Field(default=None, ge=0)
    #: After this many seconds, crash: exit with ``exit_code``, or die by ``signal``.
    crash_after: float | None = Field(default=None, ge=0)
    exit_code: int = Field(default=3, ge=1, le=255)
    signal: Literal["SIGKILL", "SIGTERM", "SIGSEGV", "SIGABRT"] | None = None
    #: Exit 0 at the end without a result.
    exit_silently: bool = False
    #: After this many seconds, say ``finishing`` (its heavy part done) and sleep on.
    finishing_after: float | None = Field(default=None, ge=0)
    #: Bytes written on standard output at its start, in lines, as a talkative library would.
    chatter: int = Field(default=0, ge=0, le=64 * 1024 * 1024)
    #: Say after the result that its child may not take another job.
    not_reusable: bool = False

    @model_validator(mode="after")
    def _resume_needs_pause(self) -> SleepSubprocessPayload:
        if self.resume_after is not None and self.pause_after is None:
            raise ValueError("resume_after needs pause_after")
        return self


SLEEP_SUBPROCESS = TaskType(
    "SLEEP_SUBPROCESS",
    SleepSubprocessPayload,
    "io",
    "SLEEP in a child process behind the endpoints server; can pause itself, crash, or exit "
    "without a result, to exercise the whole chain",
)


DIAGNOSTIC_TYPES = (NOOP, SLEEP, SLEEP_SUBPROCESS)


def builtin_registry() -> TaskTypeRegistry:
    """A registry with the diagnostic types: what the queue knows by itself. The app
    registers the types of its jobs on top (they are data to the queue)."""
    registry = TaskTypeRegistry()
    for task_type in DIAGNOSTIC_TYPES:
        registry.register(task_type)
    return registry
