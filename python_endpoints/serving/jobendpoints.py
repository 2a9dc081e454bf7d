"""The endpoint classes a catalogue row runs on (:mod:`python_endpoints.catalogue`).

A row with a ``target`` runs on :class:`MediaEndpoint`; a row that needs more names a class of
its own (:class:`EncoderTestingEndpoint`, :class:`SiteDownloadEndpoint`, the in-loop
downloads). None of these classes says which job it runs: the registry
(:mod:`python_endpoints.serving.registry`) derives one class per row, with the row's name,
params model, target, pause support and skip rule.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from pathlib import Path
from typing import Any, ClassVar

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import outputs, site
from python_endpoints.jobs.media import (
    ffmpeg_binary,
    hardware_encoder,
    possible_hardware_encoders,
)
from python_endpoints.serving.child import JobFailed
from python_endpoints.serving.endpoint import Emit, ProcessEndpoint

#: The inputs on which a job's child died (``SUBPROCESS_CRASHED``) in this server's life, by
#: job: their next runs are told so (``outputs.AFTER_CRASH``), and a job with a way of its own
#: in the child takes its ffmpeg process instead — a retry of a short file whose sound PyAV's
#: decoder crashed on goes through ffmpeg rather than crashing again.
_crashed_inputs: set[tuple[str, str]] = set()


class MediaEndpoint(ProcessEndpoint):
    """A job in a child process that knows, from its params, the temporary files a run may
    leave, so that they are removed after a cancel or a crash even though the child that wrote
    them is dead.

    Each run gets a part id of its own, which its temporary names carry
    (:func:`~python_endpoints.jobs.outputs.temp_path`): the cleanup removes this run's files
    only, never those of another attempt at the same output."""

    #: The job's name in :mod:`python_endpoints.jobs.outputs` (its task type).
    job: ClassVar[str]

    def __init__(self, emit: Emit) -> None:
        super().__init__(emit)
        #: The params the child got (empty until then): what its partial outputs are.
        self._params: dict[str, Any] = {}
        self.part_id = outputs.new_part_id()

    async def run(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return await super().run(params)
        except JobFailed as exc:
            if exc.error_type == ErrorType.SUBPROCESS_CRASHED and self._params.get("input"):
                _crashed_inputs.add((self.job, str(self._params["input"])))
            raise

    def child_params(self, params: dict[str, Any]) -> dict[str, Any]:
        self._params = {**params, outputs.PART_ID: self.part_id}
        if (self.job, str(params.get("input"))) in _crashed_inputs:
            self._params[outputs.AFTER_CRASH] = True
        return self._params

    def partial_outputs(self) -> list[Path]:
        # A user's cancel (not an interruption: a shutdown, a lost client) ends the work: the
        # pieces a segmented re-encode kept for resuming go too.
        user_cancel = self._cancelling and not self.interrupted
        return outputs.partial_outputs(self.job, self._params, keep_pieces=not user_cancel)


class EncoderTestingEndpoint(MediaEndpoint):
    """A job that may encode H.264 on hardware (TRANSCODE_MP4): the server tests the hardware
    encoders once per ffmpeg binary for its life (a few one-frame encodes, ~0.3 s where some
    are listed) and hands each job the one that works (``hardware_encoder``), instead of each
    job testing them in its child."""

    @classmethod
    def prepare_early(cls, ffmpeg: str | None) -> None:
        # The test takes ~0.3 s: a batch's first job would wait for it. Where no hardware
        # encoder could work, there is nothing to test: not even the bundled ffmpeg's check
        # (``ffmpeg -version``) runs here, at the start that the first jobs wait for.
        if possible_hardware_encoders():
            with contextlib.suppress(JobFailed):  # no ffmpeg: the job reports it
                _hardware_test(ffmpeg_binary({"ffmpeg": ffmpeg}))

    async def prepare(self, params: dict[str, Any]) -> dict[str, Any]:
        if params["hardware"] and params["hardware_encoder"] is None:
            if not possible_hardware_encoders():
                return {**params, "hardware_encoder": "none"}
            try:
                binary = ffmpeg_binary(params)
            except JobFailed:
                pass  # the job reports it
            else:
                found = await asyncio.wrap_future(_hardware_test(binary))
                params = {**params, "hardware_encoder": found or "none"}
        return params


#: The hardware encoder test of each ffmpeg binary, started once for the server's life (by
#: the first job that needs it, or ahead by ``warm``); jobs that arrive while it runs wait
#: for the same test.
_hardware_tests: dict[str, concurrent.futures.Future[str | None]] = {}
_hardware_lock = threading.Lock()


def _hardware_test(binary: str) -> concurrent.futures.Future[str | None]:
    with _hardware_lock:
        test = _hardware_tests.get(binary)
        if test is None:
            test = _hardware_tests[binary] = concurrent.futures.Future()
            threading.Thread(
                target=_run_hardware_test, args=(binary, test), name="hardware test", daemon=True
            ).start()
    return test


def _run_hardware_test(binary: str, test: concurrent.futures.Future[str | None]) -> None:
    try:
        test.set_result(hardware_encoder(binary))
    except BaseException as exc:  # told to each job that waits for it
        test.set_exception(exc)


class SiteDownloadEndpoint(MediaEndpoint):
    """A video site's page to one file, with yt-dlp (:mod:`python_endpoints.jobs.site`).

    Its temporary files are found by their prefix. A user's cancel and a definitive failure
    remove them all; a network failure, a crash or an interruption (the client went away, the
    server stopped) keep what a retry continues from (yt-dlp's .part and .ytdl files)."""

    def __init__(self, emit: Emit) -> None:
        super().__init__(emit)
        self._discard_all = False

    async def run(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return await super().run(params)
        except JobFailed as exc:
            self._discard_all = exc.error_type in site.DISCARD_ON
            raise

    async def cancel(self) -> None:
        self._discard_all = not self.interrupted
        await super().cancel()

    def partial_outputs(self) -> list[Path]:
        output = self._params.get("output")
        return site.temp_files(Path(output), resumable=self._discard_all) if output else []
