"""What a token holder may not choose: the binaries a job runs and the secrets it reads.

A token lets its holder run jobs; it does not let them pick what the server executes or which
of its environment variables a job sends away. Both are decided by whoever started the server
(the app passes its settings), and params that ask for anything else are refused
(``PAYLOAD_ERROR``) before the job starts — nothing is run, nothing is read:

- ``ffmpeg`` (media jobs, and the merges of ``download_site``) must be the server's own ffmpeg:
  the one it was started with (``--ffmpeg``), else the one imageio-ffmpeg bundles. Params that
  name none get the server's.
- ``llm.api_key_env`` (ANALYZE, TRANSLATE_SUBTITLES) must be one of the variables the server
  was told its jobs may read (``--allow-key-env``; the app passes its ``llm_api_key_env``
  setting).

Where a job may write is checked beside this (``write_roots``,
:mod:`python_endpoints.serving.server`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from python_endpoints.serving.endpoint import TaskEndpoint

#: The params that name a binary to run.
BINARY_KEYS = ("ffmpeg",)


def _bundled_ffmpeg() -> str | None:
    from python_endpoints.jobs.media import bundled_ffmpeg

    try:
        return bundled_ffmpeg()
    except RuntimeError:  # pragma: no cover - a broken install
        return None


class JobPolicy:
    """The server's choices: its ffmpeg (None: the bundled one) and the environment variables
    a job may read its API key from."""

    def __init__(self, ffmpeg: str | None = None, api_key_envs: Iterable[str] = ()) -> None:
        self.ffmpeg = ffmpeg
        self.api_key_envs = frozenset(api_key_envs)
        self._found: str | None = ffmpeg

    @property
    def _binary(self) -> str | None:
        """The server's ffmpeg; the bundled one is looked up until it is found (a failed look,
        its check killed from outside, is not kept)."""
        if self._found is None:
            self._found = _bundled_ffmpeg()
        return self._found

    def refusal(self, params: Mapping[str, Any]) -> str | None:
        """Why these params may not run, or None when they may."""
        for key in BINARY_KEYS:
            value = params.get(key)
            if value is None or value == self._binary:
                continue
            if (
                isinstance(value, str)
                and "\0" not in value  # no file's path; the system refuses to resolve it
                and self._binary is not None
                and os.path.realpath(value) == os.path.realpath(self._binary)
            ):
                continue
            own = self._binary or "none: start it with --ffmpeg"
            return (
                f"{key} {value!r} is not the ffmpeg this server runs ({own}); a job cannot "
                "choose the binary: set ffmpeg_path in the settings (the app starts its "
                "server with it), or start the server with --ffmpeg"
            )
        llm = params.get("llm")
        name = llm.get("api_key_env") if isinstance(llm, Mapping) else None
        if name and (not isinstance(name, str) or name not in self.api_key_envs):
            allowed = ", ".join(sorted(self.api_key_envs)) or "none"
            return (
                f"llm.api_key_env {name!r} is not a variable this server lets jobs read "
                f"(allowed: {allowed}); name it in the settings (llm_api_key_env), or start "
                f"the server with --allow-key-env {name}"
            )
        return None

    def fill(self, params: dict[str, Any], endpoint: TaskEndpoint) -> dict[str, Any]:
        """The params with the server's ffmpeg where the endpoint takes one: filled in where
        none is named, and put in place of the name :meth:`refusal` accepted (the same file
        under another path, a link to it). The job runs the path the server chose, never the
        one it was given: a link re-pointed between the check and the start (while the job
        waits for its outputs) changes nothing."""
        named = params.get("ffmpeg") is not None
        if named and self._binary is not None:
            return {**params, "ffmpeg": self._binary}
        model = getattr(endpoint, "params_model", None)
        fields = getattr(model, "model_fields", {})
        if self.ffmpeg is None or "ffmpeg" not in fields or named:
            return params
        return {**params, "ffmpeg": self.ffmpeg}
