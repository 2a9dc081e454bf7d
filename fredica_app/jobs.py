"""The job catalogue (:mod:`python_endpoints.catalogue`) as the app uses it.

The queue knows task types and executors only as data it is given; this module derives them
from the catalogue's rows, one of each per row:

- a :class:`~workers.tasktypes.TaskType` named after the row (``TRANSCODE_MP4``), whose
  payload model is the queue's :class:`~workers.tasktypes.TaskPayload` with the row's params
  (:func:`registry`: these and the queue's diagnostic types);
- an :class:`~workers.executors.websocket.EndpointExecutor` that runs it on the row's
  endpoint (:func:`executors`) — but PROBE's, run in the engine's own process
  (:mod:`fredica_app.probing`);
- the params a task takes from the app's settings (:func:`fill_from_settings`), from one flat
  dict of values built once from the settings and the paths (:func:`app_values`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import create_model

from fredica_app.settings import Settings
from python_endpoints.catalogue import CATALOGUE, Job
from python_endpoints.params import path_fields
from workers.spec import TaskSpec
from workers.tasktypes import TaskPayload, TaskType, TaskTypeRegistry, builtin_registry

if TYPE_CHECKING:
    from workers.executor import TaskExecutor
    from workers.executors.remote import Router
    from workers.executors.websocket import AddressSource

#: The catalogue's rows by task type.
JOBS: dict[str, Job] = {job.task_type: job for job in CATALOGUE}


def endpoints_of(executors: Iterable[TaskExecutor], task_types: Collection[str]) -> list[str]:
    """The endpoints on which these executors run tasks of these types, sorted (an executor
    that runs its tasks in the engine has none)."""
    from workers.executors.websocket import WebSocketExecutor  # see executors()

    return sorted(
        {
            e.endpoint
            for e in executors
            if isinstance(e, WebSocketExecutor) and e.task_type.name in task_types
        }
    )


def payload_model(job: Job) -> type[TaskPayload]:
    """The payload of ``job``'s tasks: the queue's own keys (``schema_version``,
    ``check_skip``) and the job's params, validated as the endpoint validates them."""
    title = "".join(part.capitalize() for part in job.name.split("_"))
    model = create_model(f"{title}Payload", __base__=(TaskPayload, job.params), __module__=__name__)
    return cast(type[TaskPayload], model)


@cache
def task_types() -> tuple[TaskType, ...]:
    """One task type per row of the catalogue (made once: their payload models are classes)."""
    return tuple(
        TaskType(job.task_type, payload_model(job), job.resource, job.description)
        for job in CATALOGUE
    )


def registry() -> TaskTypeRegistry:
    """The task types the app submits: the queue's diagnostic ones and the catalogue's."""
    types = builtin_registry()
    for task_type in task_types():
        types.register(task_type)
    return types


#: Settings a job is given when it runs, read from the settings then, never written into its
#: payload: they may hold a credential (a proxy's password), and payloads are stored in the
#: database, shown in the window and printed by ``run --json``.
RUN_TIME_SETTINGS = frozenset({"proxy"})


def _no_values() -> Mapping[str, Any]:
    return {}


def executors(
    address: AddressSource,
    values: Callable[[], Mapping[str, Any]] = _no_values,
    router: Router | None = None,
) -> list[TaskExecutor]:
    """An executor per task type of :func:`registry`; those of the catalogue reach the
    endpoints server at ``address``, or an endpoint host of ``router`` for the resource
    classes it serves. ``values`` gives :func:`app_values` as the settings are now: the
    :data:`RUN_TIME_SETTINGS` params are taken from it at each attempt.

    The executors (the websocket client among them) are imported here, by the process that
    runs an engine: a command that only submits work (``add``) needs the task types alone."""
    from fredica_app.probing import ProbeExecutor
    from workers.executors.diagnostic import NoopExecutor, SleepExecutor, SleepSubprocessExecutor
    from workers.executors.websocket import EndpointExecutor

    types = {t.name: t for t in task_types()}
    return [
        NoopExecutor(),
        SleepExecutor(),
        SleepSubprocessExecutor(address, router),
        ProbeExecutor(types["PROBE"], JOBS["PROBE"].stall_timeout),
        *(
            EndpointExecutor(
                address,
                types[job.task_type],
                job.name,
                resumes=job.resumes,
                stall_timeout=job.stall_timeout,
                run_time_params=_run_time_params(job.settings, values),
                router=router,
                path_keys=path_fields(job.params),
            )
            for job in CATALOGUE
            if job.task_type != "PROBE"
        ),
    ]


def app_values(settings: Settings, models_dir: Path) -> dict[str, Any]:
    """The values the catalogue's rows take from the app (their ``settings`` name them). None:
    the app has none to give, the params' own default stands."""
    llm = None
    if settings.llm_base_url and settings.llm_model:
        llm = {
            "base_url": settings.llm_base_url,
            "model": settings.llm_model,
            "api_key_env": settings.llm_api_key_env,
        }
    return {
        "proxy": settings.proxy,
        "mp4_profile": settings.mp4_profile,
        "diarize_speakers": settings.diarize_speakers,
        "burn_font": settings.burn_font,
        "burn_font_size": settings.burn_font_size,
        "burn_outline": settings.burn_outline,
        "burn_position": settings.burn_position,
        "models_dir": str(models_dir),
        "model_base_url": settings.model_base_url,
        "whisper_model": settings.whisper_model,
        "whisper_device": settings.whisper_device,
        "whisper_compute_type": settings.whisper_compute_type,
        "language": settings.language,
        "vad": settings.vad,
        "beam_size": settings.beam_size,
        "allow_cpu_fallback": settings.allow_cpu_fallback,
        "initial_prompt": settings.initial_prompt or None,
        "llm": llm,
    }


def _run_time_params(
    settings: Mapping[str, str], values: Callable[[], Mapping[str, Any]]
) -> Callable[[], Mapping[str, Any]] | None:
    """The params of a job's row taken from the settings when it runs (None: it has none)."""
    wanted = {param: key for param, key in settings.items() if key in RUN_TIME_SETTINGS}
    if not wanted:
        return None

    def params() -> Mapping[str, Any]:
        now = values()
        return {param: now.get(key) for param, key in wanted.items()}

    return params


def fill_from_settings(task: TaskSpec, values: Mapping[str, Any]) -> None:
    """Give ``task`` the params its row takes from the app (``values``: :func:`app_values`),
    those its payload does not give already: a template that names an MP4 profile keeps it.
    Not the :data:`RUN_TIME_SETTINGS`: the executor adds those when the task runs."""
    job = JOBS.get(task.type)
    if job is None:
        return
    for param, key in job.settings.items():
        if key in RUN_TIME_SETTINGS:
            continue
        value = values[key]
        if value is not None:
            task.payload.setdefault(param, value)
