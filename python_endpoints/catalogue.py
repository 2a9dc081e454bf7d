"""The job catalogue: one row per job, everything else about a job derives from it.

A row names the job (``transcode_mp4``: the endpoint ``/tasks/transcode_mp4``, the task type
``TRANSCODE_MP4``), its params model, what runs it (a function in a child process, or an
endpoint class of its own), and what the queue and the app need to know of it: its resource
class, how it pauses, whether its checkpoint comes back as ``params["resume"]``, when a run
can be skipped, how long it may stay silent, which app settings fill its params, and a line
that describes it.

What derives from the rows: the endpoints server's table of endpoints
(:mod:`python_endpoints.serving.registry`), and on the app's side the task types, their
payload models and the executors that reach the endpoints (``fredica_app.jobs``). The queue
(``workers``) never imports this module: it is given task types and executors as data.

A row names what runs the job (``"python_endpoints.jobs.media:transcode_job"``) rather than
holding it: the app reads every row at each start, and the job modules (PyAV, the ffmpeg
argv builders, speech, downloads) are the server's to import — ``fredica add`` and the
engine's process start without them (``tests/app/test_catalogue.py`` says so).

Adding a job: its params model in :mod:`python_endpoints.params`, its function in
:mod:`python_endpoints.jobs`, one row here.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from python_endpoints.params import (
    AddSubtitleTrackParams,
    AnalyzeParams,
    BurnSubtitlesParams,
    DiarizeParams,
    DownloadParams,
    ExportSubtitlesParams,
    ExtractAudioParams,
    ExtractSubtitlesParams,
    ModelDownloadParams,
    ProbeParams,
    SiteDownloadParams,
    ThumbnailParams,
    TranscodeParams,
    TranscribeParams,
    TranslateSubtitlesParams,
)

if TYPE_CHECKING:
    from python_endpoints.protocol import Pausable

#: When a run asked to be skipped if its output is there (the payload's ``check_skip``) is:
#: ``current`` — the output's sidecar says it was made from the same input with the same
#: params; ``exists`` — the final path is a file (a job that renames its output into place
#: last, so that the final path never holds a partial file).
SkipRule = Literal["current", "exists"]


@dataclass(frozen=True, slots=True)
class Job:
    """One job: one endpoint, one task type."""

    #: ``transcode_mp4``: the endpoint ``/tasks/transcode_mp4``; the task type is
    #: :attr:`task_type`.
    name: str
    #: Its params model (:mod:`python_endpoints.params`): the endpoint validates its params
    #: with it, and the app's payload model for the task type extends it.
    params: type[BaseModel]
    #: The job function run in a child process (``(params, ctx) -> result``), named
    #: ``"module:function"``: the endpoints server imports it (:func:`load`), the app never
    #: does — it reads the rows for their params and what the queue needs to know.
    target: str | None = None
    #: An endpoint class of its own, named as :attr:`target` is: an in-loop job, a special
    #: cleanup, work the server does before the child starts. With a ``target`` too, the
    #: class runs that target.
    endpoint: str | None = None
    #: The engine's resource class: ``cpu``, ``gpu``, ``net`` or ``io``.
    resource: str = "cpu"
    #: The endpoint's pause support, as its progress frames say it.
    pausable: Pausable = "always"
    #: A pause suspends the child's process tree (a job that cannot check a flag: ffmpeg).
    suspend_on_pause: bool = False
    #: Its child, after a job that ended with a result, stays for the next job of the same
    #: row (a batch pays one start per core, not one per job), unless its module's
    #: ``reusable()`` says no after a job. Off for a job that runs a library with state of its
    #: own (yt-dlp).
    reuse_child: bool = True
    #: Its checkpoint (a progress frame's ``extras.checkpoint``) comes back to the next
    #: attempt as ``params["resume"]``.
    resumes: bool = False
    #: When a run with ``check_skip`` completes at once, as skipped (:data:`SkipRule`).
    skip: SkipRule | None = None
    #: Seconds without a frame after which the engine counts an attempt as stalled.
    stall_timeout: float = 120.0
    #: Param name -> the name of an app value that fills it when the payload does not give
    #: it (the proxy, the MP4 profile, the speech settings…).
    settings: Mapping[str, str] = field(default_factory=dict)
    #: What it does, in a line (``fredica types``, the GUI).
    description: str = ""

    @property
    def task_type(self) -> str:
        """The queue's name for it: ``TRANSCODE_MP4``."""
        return self.name.upper()


def load(reference: str) -> object:
    """What a row's ``"module:name"`` names, its module imported now."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


CATALOGUE: tuple[Job, ...] = (
    Job(
        "probe",
        ProbeParams,
        "python_endpoints.jobs.media:probe_job",
        resource="io",
        pausable="never",
        stall_timeout=60.0,
        description="reads streams, codecs, duration and subtitles (PyAV)",
    ),
    Job(
        "transcode_mp4",
        TranscodeParams,
        "python_endpoints.jobs.media:transcode_job",
        "python_endpoints.serving.jobendpoints:EncoderTestingEndpoint",
        suspend_on_pause=True,  # ffmpeg cannot check a flag: its process tree is suspended
        resumes=True,  # a long re-encode goes by segments; the checkpoint lists those done
        skip="current",
        settings={"profile": "mp4_profile"},
        description="an MP4: stream copy when the codecs fit, else H.264/AAC; pausable",
    ),
    Job(
        "burn_subtitles",
        BurnSubtitlesParams,
        "python_endpoints.jobs.media:burn_subtitles_job",
        "python_endpoints.serving.jobendpoints:EncoderTestingEndpoint",
        suspend_on_pause=True,
        resumes=True,  # segments, as TRANSCODE_MP4's
        skip="current",
        # Not the MP4 profile of the settings: archive there would refuse every burn.
        settings={
            "font": "burn_font",
            "font_size": "burn_font_size",
            "outline": "burn_outline",
            "position": "burn_position",
        },
        description="an MP4 with subtitles drawn into the picture (a subtitle file or a text "
        "track); pausable, resumable",
    ),
    Job(
        "add_subtitle_track",
        AddSubtitleTrackParams,
        "python_endpoints.jobs.media:add_subtitle_track_job",
        resource="io",
        suspend_on_pause=True,
        skip="current",
        description="an MP4 with a subtitle file as one more track the viewer can turn on "
        "(nothing re-encoded)",
    ),
    Job(
        "extract_audio",
        ExtractAudioParams,
        "python_endpoints.jobs.media:extract_audio_job",
        # Reading the whole container is most of it (the audio's decoding is a fraction of a
        # core): a disk job, as EXTRACT_SUBTITLES; on the ``io`` slots, the next files' audio
        # is taken out while transcriptions hold the ``cpu`` ones.
        resource="io",
        suspend_on_pause=True,
        skip="current",
        description="16 kHz mono WAV (or FLAC) for speech-to-text",
    ),
    Job(
        "extract_subtitles",
        ExtractSubtitlesParams,
        "python_endpoints.jobs.media:extract_subtitles_job",
        resource="io",
        suspend_on_pause=True,
        description="every embedded text subtitle stream to SRT and WebVTT",
    ),
    Job(
        "thumbnail",
        ThumbnailParams,
        "python_endpoints.jobs.thumbnail:thumbnail_job",
        suspend_on_pause=True,  # ffmpeg cannot check a flag: its process tree is suspended
        skip="current",
        # Silent until ffmpeg has opened the input once per frame and decoded up to the first.
        stall_timeout=300.0,
        description="a contact sheet: one JPEG of frames picked at evenly spaced times",
    ),
    Job(
        "download",
        DownloadParams,
        endpoint="python_endpoints.downloads.download:DownloadEndpoint",
        resource="net",
        resumes=True,  # the bytes on disk and the validator that says they still belong
        skip="exists",
        settings={"proxy": "proxy"},
        description=(
            "HTTP(S) download to a .part file, resumed with Range after a pause, crash or error"
        ),
    ),
    Job(
        "download_site",
        SiteDownloadParams,
        "python_endpoints.jobs.site:site_download_job",
        "python_endpoints.serving.jobendpoints:SiteDownloadEndpoint",
        resource="net",
        suspend_on_pause=True,  # yt-dlp cannot be asked to wait: its process tree is suspended
        reuse_child=False,  # yt-dlp keeps state of its own; a page's wait dwarfs a start
        skip="exists",
        stall_timeout=300.0,  # extraction of a page can take a while before any progress
        settings={"proxy": "proxy"},
        description=(
            "a video page's media, with yt-dlp (the optional `sites` extra); resumed after an error"
        ),
    ),
    Job(
        # Its resource class is ``cpu`` unless it runs on a GPU: the app sets ``gpu`` then.
        "transcribe",
        TranscribeParams,
        "python_endpoints.jobs.transcribe:transcribe_job",
        # Not on every pause: on the CPU the job allows a suspension (``allow_suspend``); on a
        # GPU it waits between segments, its model unloaded.
        suspend_on_pause=False,
        # Its child is kept after a job on the CPU (the model is freed with the job), not
        # after one on a GPU (``transcribe.reusable``): the card's memory goes with the process.
        resumes=True,  # its segments so far, where decoding got, the language votes
        stall_timeout=600.0,  # loading a large model or decoding a long window is quiet
        settings={
            "model": "whisper_model",
            "models_dir": "models_dir",
            "device": "whisper_device",
            "compute_type": "whisper_compute_type",
            "language": "language",
            "vad": "vad",
            "beam_size": "beam_size",
            "allow_fallback": "allow_cpu_fallback",
            "initial_prompt": "initial_prompt",
        },
        description=(
            "speech to text with faster-whisper; segments stream out and are checkpointed, so "
            "it resumes where it stopped"
        ),
    ),
    Job(
        "diarize",
        DiarizeParams,
        "python_endpoints.jobs.diarize:diarize_job",
        # A few seconds for an hour of speech: a pause suspends it.
        suspend_on_pause=True,
        resumes=True,  # the windows embedded so far, a lot at a time
        settings={"speakers": "diarize_speakers"},
        description="who speaks when: speaker turns of an audio track (offline, an ONNX "
        "voice encoder)",
    ),
    Job(
        "export_subtitles",
        ExportSubtitlesParams,
        "python_endpoints.jobs.export:export_subtitles_job",
        resource="io",
        pausable="never",  # a few seconds at most
        stall_timeout=300.0,
        description=(
            "SRT, WebVTT, text and JSON from a transcript, with readable line lengths and durations"
        ),
    ),
    Job(
        "analyze",
        AnalyzeParams,
        "python_endpoints.jobs.analyze:analyze_job",
        pausable="never",  # a model's answer cannot be paused; a cancel stops the wait at once
        stall_timeout=1800.0,  # a language model on a small machine can take minutes
        settings={"llm": "llm"},
        description=(
            "key phrases with their times (offline), and a summary with chapters when an "
            "OpenAI-compatible endpoint is configured"
        ),
    ),
    Job(
        "translate_subtitles",
        TranslateSubtitlesParams,
        "python_endpoints.jobs.translate:translate_subtitles_job",
        resource="net",
        # A pause waits for the chunk under way (a model's answer cannot be paused), then
        # holds before the next.
        pausable="always",
        resumes=True,  # the chunks translated and the glossary
        stall_timeout=1800.0,  # a language model on a small machine can take minutes
        settings={"llm": "llm"},
        description=(
            "subtitles in another language through the settings' language model: chunks with "
            "their context and a glossary, cue times and numbering kept, resumable"
        ),
    ),
    Job(
        "download_model",
        ModelDownloadParams,
        endpoint="python_endpoints.downloads.model_download:ModelDownloadEndpoint",
        resource="net",
        resumes=True,  # the files done and the bytes of the current one
        stall_timeout=300.0,
        settings={"models_dir": "models_dir", "base_url": "model_base_url", "proxy": "proxy"},
        description=(
            "a Whisper model by name into the models folder: resumable, verified, never "
            "half-installed"
        ),
    ),
)
