"""Workflow templates: named, described task graphs, as data.

A template expands to a :class:`workers.spec.WorkflowSpec`. The media templates come with the
media pipeline; for now there are the diagnostic ones, which exercise the queue without media.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fredica_app.errors import TemplateError
from workers.spec import TaskSpec, WorkflowSpec


class Template(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    tasks: list[TaskSpec] = Field(min_length=1)

    def expand(self, *, material_id: str | None = None) -> WorkflowSpec:
        return WorkflowSpec(template=self.name, material_id=material_id, tasks=list(self.tasks))


def _t(key: str, type_: str, *deps: str, **payload: Any) -> TaskSpec:
    return TaskSpec(key=key, type=type_, depends_on=list(deps), payload=payload)


BUILTIN: dict[str, Template] = {
    t.name: t
    for t in [
        Template(
            name="diagnostic",
            description=(
                "A small fan-out/fan-in DAG of diagnostic tasks: prepare, three sleeps side "
                "by side (two in the engine, one in a child process of the endpoints server), "
                "then a merge"
            ),
            tasks=[
                _t("prepare", "NOOP", step="prepare"),
                _t("sleep_a", "SLEEP", "prepare", seconds=1.0),
                _t("sleep_b", "SLEEP", "prepare", seconds=1.5),
                _t("sleep_child", "SLEEP_SUBPROCESS", "prepare", seconds=1.0),
                _t("merge", "NOOP", "sleep_a", "sleep_b", "sleep_child", step="merge"),
            ],
        ),
        Template(
            name="noop_chain",
            description="Ten NOOP tasks, each depending on the previous one",
            tasks=[_t("n0", "NOOP")] + [_t(f"n{i}", "NOOP", f"n{i - 1}") for i in range(1, 10)],
        ),
    ]
}


def get_template(name: str) -> Template:
    try:
        return BUILTIN[name]
    except KeyError:
        known = ", ".join(sorted(BUILTIN))
        raise TemplateError(f"unknown template {name!r} (known: {known})") from None
