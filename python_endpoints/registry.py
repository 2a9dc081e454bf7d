"""The endpoints this server offers, by the name in ``/tasks/<name>``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from python_endpoints.download import DownloadEndpoint
from python_endpoints.endpoint import Emit, ProcessEndpoint, TaskEndpoint
from python_endpoints.jobs import outputs
from python_endpoints.jobs.media import (
    EXTRACT_AUDIO,
    EXTRACT_SUBTITLES,
    PROBE,
    TRANSCODE_MP4,
    extract_audio_job,
    extract_subtitles_job,
    probe_job,
    transcode_job,
)
from python_endpoints.jobs.sleep import sleep_job
from python_endpoints.params import (
    ExtractAudioParams,
    ExtractSubtitlesParams,
    ProbeParams,
    SleepParams,
    TranscodeParams,
)


class SleepEndpoint(ProcessEndpoint):
    name: ClassVar[str] = "sleep"
    params_model = SleepParams
    target = staticmethod(sleep_job)


class MediaEndpoint(ProcessEndpoint):
    """A media job: it knows, from its params, the temporary files a run may leave, so that
    they are removed after a cancel or a crash even though the child that wrote them is dead."""

    #: The job's name in :mod:`python_endpoints.jobs.outputs` (the task type).
    job: ClassVar[str]

    def __init__(self, emit: Emit) -> None:
        super().__init__(emit)
        self._params: dict[str, Any] = {}

    async def run(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.params_model is not None:
            try:
                self._params = self.params_model.model_validate(params).model_dump()
            except ValidationError:
                pass  # the base class reports it as a PAYLOAD_ERROR
        return await super().run(params)

    def partial_outputs(self) -> list[Path]:
        return outputs.partial_outputs(self.job, self._params)


class ProbeEndpoint(MediaEndpoint):
    name: ClassVar[str] = "probe"
    job = PROBE
    pausable = "never"
    params_model = ProbeParams
    target = staticmethod(probe_job)


class TranscodeEndpoint(MediaEndpoint):
    name: ClassVar[str] = "transcode_mp4"
    job = TRANSCODE_MP4
    params_model = TranscodeParams
    suspend_on_pause = True  # ffmpeg cannot check a flag: its process tree is suspended
    target = staticmethod(transcode_job)


class ExtractAudioEndpoint(MediaEndpoint):
    name: ClassVar[str] = "extract_audio"
    job = EXTRACT_AUDIO
    params_model = ExtractAudioParams
    suspend_on_pause = True
    target = staticmethod(extract_audio_job)


class ExtractSubtitlesEndpoint(MediaEndpoint):
    name: ClassVar[str] = "extract_subtitles"
    job = EXTRACT_SUBTITLES
    params_model = ExtractSubtitlesParams
    suspend_on_pause = True
    target = staticmethod(extract_subtitles_job)


ENDPOINTS: dict[str, type[TaskEndpoint]] = {
    e.name: e
    for e in (
        SleepEndpoint,
        ProbeEndpoint,
        TranscodeEndpoint,
        ExtractAudioEndpoint,
        ExtractSubtitlesEndpoint,
        DownloadEndpoint,
    )
}
