"""The endpoints this server offers, by the name in ``/tasks/<name>``."""

from __future__ import annotations

from python_endpoints.endpoint import TaskEndpoint
from python_endpoints.jobs.sleep import SleepEndpoint

ENDPOINTS: dict[str, type[TaskEndpoint]] = {SleepEndpoint.name: SleepEndpoint}
