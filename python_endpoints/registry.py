"""The endpoints this server offers, by the name in ``/tasks/<name>``."""

from __future__ import annotations

from typing import ClassVar

from python_endpoints.endpoint import ProcessEndpoint, TaskEndpoint
from python_endpoints.jobs.sleep import sleep_job
from python_endpoints.params import SleepParams


class SleepEndpoint(ProcessEndpoint):
    name: ClassVar[str] = "sleep"
    params_model = SleepParams
    target = staticmethod(sleep_job)


ENDPOINTS: dict[str, type[TaskEndpoint]] = {SleepEndpoint.name: SleepEndpoint}
