"""The endpoints this server offers, by the name in ``/tasks/<name>``."""

from __future__ import annotations

from typing import ClassVar

from python_endpoints.download import DownloadEndpoint
from python_endpoints.endpoint import ProcessEndpoint, TaskEndpoint
from python_endpoints.jobs.media import (
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


class ProbeEndpoint(ProcessEndpoint):
    name: ClassVar[str] = "probe"
    pausable = "never"
    params_model = ProbeParams
    target = staticmethod(probe_job)


class TranscodeEndpoint(ProcessEndpoint):
    name: ClassVar[str] = "transcode_mp4"
    params_model = TranscodeParams
    suspend_on_pause = True  # ffmpeg cannot check a flag: its process tree is suspended
    target = staticmethod(transcode_job)


class ExtractAudioEndpoint(ProcessEndpoint):
    name: ClassVar[str] = "extract_audio"
    params_model = ExtractAudioParams
    suspend_on_pause = True
    target = staticmethod(extract_audio_job)


class ExtractSubtitlesEndpoint(ProcessEndpoint):
    name: ClassVar[str] = "extract_subtitles"
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
