"""The endpoints this server offers, by the name in ``/tasks/<name>``: one per row of the job
catalogue (:mod:`python_endpoints.catalogue`), the diagnostic ``sleep``, and ``path_probe``
(an endpoint host's path map checked: :mod:`python_endpoints.serving.pathprobe`).

Each row gets a class of its own, derived here from the row: its base is the row's
``endpoint`` class, or :class:`~python_endpoints.serving.jobendpoints.MediaEndpoint` for a
row with a ``target`` alone (both imported here, from the names the row gives); the row
gives it its name, params model, target, pause support and skip rule.
"""

from __future__ import annotations

from typing import Any, ClassVar

from python_endpoints.catalogue import CATALOGUE, Job, load
from python_endpoints.jobs.sleep import sleep_job
from python_endpoints.params import SleepParams
from python_endpoints.serving.endpoint import ProcessEndpoint, TaskEndpoint
from python_endpoints.serving.jobendpoints import MediaEndpoint
from python_endpoints.serving.pathprobe import PathProbeEndpoint


class SleepEndpoint(ProcessEndpoint):
    """The diagnostic job that takes every path of the protocol (SLEEP_SUBPROCESS)."""

    name: ClassVar[str] = "sleep"
    params_model = SleepParams
    target = staticmethod(sleep_job)
    reuse_child = True


def _load(job: Job, reference: str) -> object:
    """What ``reference`` names, or an ImportError naming ``job``'s row as well."""
    try:
        return load(reference)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"{job.name}: {reference} cannot be loaded ({exc})") from exc


def endpoint_class(job: Job) -> type[TaskEndpoint]:
    """The endpoint class of a catalogue row; an error naming the row when a reference of it
    names nothing (ImportError) or not what it must (TypeError)."""
    base = MediaEndpoint if job.endpoint is None else _load(job, job.endpoint)
    if not (isinstance(base, type) and issubclass(base, TaskEndpoint)):
        raise TypeError(f"{job.name}: {job.endpoint} is not an endpoint class")
    attrs: dict[str, Any] = {
        "__module__": __name__,
        "__doc__": f"``/tasks/{job.name}``: {job.description}",
        "name": job.name,
        "params_model": job.params,
        "pausable": job.pausable,
        "skip": job.skip,
    }
    if issubclass(base, ProcessEndpoint):
        attrs["suspend_on_pause"] = job.suspend_on_pause
        attrs["reuse_child"] = job.reuse_child
    if issubclass(base, MediaEndpoint):
        attrs["job"] = job.task_type
    if job.target is not None:
        target = _load(job, job.target)
        if not callable(target):
            raise TypeError(f"{job.name}: {job.target} is not a function")
        attrs["target"] = staticmethod(target)
    title = "".join(part.capitalize() for part in job.name.split("_"))
    return type(f"{title}Endpoint", (base,), attrs)


ENDPOINTS: dict[str, type[TaskEndpoint]] = {
    SleepEndpoint.name: SleepEndpoint,
    PathProbeEndpoint.name: PathProbeEndpoint,
    **{job.name: endpoint_class(job) for job in CATALOGUE},
}

#: The classes tests subclass or build by hand.
TranscodeEndpoint = ENDPOINTS["transcode_mp4"]
TranscribeEndpoint = ENDPOINTS["transcribe"]
