"""The params each endpoint takes (``init_param_and_run``'s ``data.params``). Pure models, part
of the protocol: the engine's task payloads reuse them, so both sides validate the same thing."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SleepParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

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

    @model_validator(mode="after")
    def _resume_needs_pause(self) -> SleepParams:
        if self.resume_after is not None and self.pause_after is None:
            raise ValueError("resume_after needs pause_after")
        return self
