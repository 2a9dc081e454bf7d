"""The endpoints this server offers, by the name in ``/tasks/<name>``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from python_endpoints.downloads.download import DownloadEndpoint
from python_endpoints.downloads.model_download import ModelDownloadEndpoint
from python_endpoints.jobs import outputs, site
from python_endpoints.jobs.analyze import ANALYZE, analyze_job
from python_endpoints.jobs.export import EXPORT_SUBTITLES, export_subtitles_job
from python_endpoints.jobs.media import (
    EXTRACT_AUDIO,
    EXTRACT_SUBTITLES,
    PROBE,
    TRANSCODE_MP4,
    extract_audio_job,
    extract_subtitles_job,
    ffmpeg_binary,
    hardware_encoder,
    probe_job,
    transcode_job,
)
from python_endpoints.jobs.sleep import sleep_job
from python_endpoints.jobs.transcribe import TRANSCRIBE, transcribe_job
from python_endpoints.params import (
    AnalyzeParams,
    ExportSubtitlesParams,
    ExtractAudioParams,
    ExtractSubtitlesParams,
    ProbeParams,
    SiteDownloadParams,
    SleepParams,
    TranscodeParams,
    TranscribeParams,
)
from python_endpoints.serving.child import JobFailed
from python_endpoints.serving.endpoint import Emit, ProcessEndpoint, TaskEndpoint


class SleepEndpoint(ProcessEndpoint):
    name: ClassVar[str] = "sleep"
    params_model = SleepParams
    target = staticmethod(sleep_job)


class MediaEndpoint(ProcessEndpoint):
    """A media job: it knows, from its params, the temporary files a run may leave, so that
    they are removed after a cancel or a crash even though the child that wrote them is dead.

    Each run gets a part id of its own, which its temporary names carry
    (:func:`~python_endpoints.jobs.outputs.temp_path`): the cleanup removes this run's files
    only, never those of another attempt at the same output."""

    #: The job's name in :mod:`python_endpoints.jobs.outputs` (the task type).
    job: ClassVar[str]

    def __init__(self, emit: Emit) -> None:
        super().__init__(emit)
        self._params: dict[str, Any] = {}
        self.part_id = outputs.new_part_id()

    async def run(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.params_model is not None:
            try:
                self._params = self.child_params(
                    self.params_model.model_validate(params).model_dump()
                )
            except ValidationError:
                pass  # the base class reports it as a PAYLOAD_ERROR
        return await super().run(params)

    def child_params(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**params, outputs.PART_ID: self.part_id}

    def partial_outputs(self) -> list[Path]:
        # A user's cancel (not an interruption: a shutdown, a lost client) ends the work: the
        # pieces a segmented re-encode kept for resuming go too.
        user_cancel = self._cancelling and not self.interrupted
        return outputs.partial_outputs(self.job, self._params, keep_pieces=not user_cancel)


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

    async def run(self, params: dict[str, Any]) -> dict[str, Any]:
        # The hardware encoders are tested once per ffmpeg binary for the server's life (a few
        # one-frame encodes, ~0.3 s where some are listed), not once per job in its child.
        if params.get("hardware", True) and params.get("hardware_encoder") is None:
            try:
                binary = ffmpeg_binary(params)
            except JobFailed:
                pass  # the job reports it
            else:
                found = await asyncio.get_running_loop().run_in_executor(
                    None, hardware_encoder, binary
                )
                params = {**params, "hardware_encoder": found or "none"}
        return await super().run(params)


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


class SiteDownloadEndpoint(MediaEndpoint):
    """A video site's page to one file, with yt-dlp (:mod:`python_endpoints.jobs.site`).

    Its temporary files are found by their prefix. A user's cancel and a definitive failure
    remove them all; a network failure, a crash or an interruption (the client went away, the
    server stopped) keep what a retry continues from (yt-dlp's .part and .ytdl files)."""

    name: ClassVar[str] = "download_site"
    job = site.DOWNLOAD_SITE
    params_model = SiteDownloadParams
    suspend_on_pause = True  # yt-dlp cannot be asked to wait: its process tree is suspended
    target = staticmethod(site.site_download_job)

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


class ExportSubtitlesEndpoint(MediaEndpoint):
    """TRANSCRIBE's transcript as SRT, WebVTT, text and JSON
    (:mod:`python_endpoints.jobs.export`)."""

    name: ClassVar[str] = "export_subtitles"
    job = EXPORT_SUBTITLES
    pausable = "never"  # a few seconds at most
    params_model = ExportSubtitlesParams
    target = staticmethod(export_subtitles_job)


class AnalyzeEndpoint(MediaEndpoint):
    """Key phrases, and a summary with chapters from a language model when one is configured
    (:mod:`python_endpoints.jobs.analyze`)."""

    name: ClassVar[str] = "analyze"
    job = ANALYZE
    pausable = "never"  # a model's answer cannot be paused; a cancel stops the wait at once
    params_model = AnalyzeParams
    target = staticmethod(analyze_job)


class TranscribeEndpoint(MediaEndpoint):
    """Speech to text with faster-whisper (:mod:`python_endpoints.jobs.transcribe`), resumable
    from its checkpoint. Pause: on the CPU the job allows a suspension (it is stopped at once,
    in the middle of a window); on a GPU it waits between segments, its model unloaded."""

    name: ClassVar[str] = "transcribe"
    job = TRANSCRIBE
    params_model = TranscribeParams
    suspend_on_pause = False  # only when the job allows it (``allow_suspend``)
    target = staticmethod(transcribe_job)


ENDPOINTS: dict[str, type[TaskEndpoint]] = {
    e.name: e
    for e in (
        SleepEndpoint,
        ProbeEndpoint,
        TranscodeEndpoint,
        ExtractAudioEndpoint,
        ExtractSubtitlesEndpoint,
        DownloadEndpoint,
        SiteDownloadEndpoint,
        ExportSubtitlesEndpoint,
        AnalyzeEndpoint,
        TranscribeEndpoint,
        ModelDownloadEndpoint,
    )
}
