"""Skipping a run whose output is already there, decided where the files are.

A client asks for it with ``init_param_and_run``'s ``check_skip``; the endpoint's rule (its
catalogue row's ``skip``) says what "already there" means:

- ``current``: the output's sidecar records the same input (size and mtime) and the same
  params that shape the output (:func:`~python_endpoints.jobs.outputs.output_is_current`):
  a stat of two files, never a hash of the media;
- ``exists``: the final path is a file — for jobs that rename their output into place last,
  so that the final path never holds a partial one.

A skipped run's result names its output, as a run that made it does:
``{"skipped": true, "outputs": [output]}``. The session asks once the job holds its outputs'
lock, so no other job is writing them meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from python_endpoints.jobs import outputs
from python_endpoints.serving.endpoint import TaskEndpoint
from python_endpoints.serving.jobendpoints import MediaEndpoint


def skipped_result(endpoint: TaskEndpoint, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of a run of ``endpoint`` with ``params`` that need not run, or None (run
    it). Blocking (file stats): call it in a thread."""
    cls = type(endpoint)
    output = params.get("output")
    if cls.skip is None or not isinstance(output, str):
        return None
    if cls.skip == "exists":
        return _skipped(output) if Path(output).is_file() else None
    if cls.skip == "current":
        return current_result(cls, params)
    raise ValueError(f"{cls.name}: unknown skip rule {cls.skip!r}")


def current_result(cls: type[TaskEndpoint], params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of a skip when the output of a run of ``cls`` with ``params`` is current:
    its sidecar records the same input and the same params that shape it (``params`` are
    validated here first: invalid ones are the job's to refuse); else None. Blocking."""
    output, source = params.get("output"), params.get("input")
    if not isinstance(output, str) or not isinstance(source, str):
        return None
    checked = _validated(getattr(cls, "params_model", None), params)
    if checked is None:
        return None
    job = cls.job if issubclass(cls, MediaEndpoint) else cls.name
    return _skipped(output) if outputs.output_is_current(output, source, job, checked) else None


def _validated(model: type[BaseModel] | None, params: dict[str, Any]) -> dict[str, Any] | None:
    """The params as the job would run with them, defaults filled; None when invalid (the job
    refuses them: nothing to skip)."""
    if model is None:
        return params
    try:
        return model.model_validate(params).model_dump()
    except ValidationError:
        return None


def _skipped(output: str) -> dict[str, Any]:
    return {"skipped": True, "outputs": [output]}
