"""Media jobs run in a child process: PROBE, TRANSCODE_MP4, EXTRACT_AUDIO, EXTRACT_SUBTITLES.

Runs in the child: standard library, PyAV and the bundled ffmpeg only. Params were validated by
the server (:mod:`python_endpoints.params`) and come complete, defaults filled: a job reads
``params["crf"]``, and each default is stated once, in its params model. The decisions (which
streams are copied, ffmpeg's argv, progress parsing, tolerances) are pure functions in
:mod:`python_endpoints.jobs.ffmpeg`, what a failed ffmpeg run means in
:mod:`python_endpoints.jobs.failures`; what is read with PyAV (the probe, captions, outputs read
back) in :mod:`python_endpoints.jobs.avread`; where outputs go and how they are put in place, in
:mod:`python_endpoints.jobs.outputs`. This module is the shell around them: it probes, runs
ffmpeg, verifies, commits.

Every output goes through a temporary name and is renamed into place only once verified with
PyAV; a failed or cancelled job removes its temporary files and leaves the final path alone.
ffmpeg is started through :func:`python_endpoints.serving.child.start_process`, so it dies with the
child however the child dies. One job does without it where it can: EXTRACT_AUDIO of a short
file takes the sound out with PyAV in this process (:mod:`python_endpoints.jobs.audiodecode`),
the same samples for less than ffmpeg's start costs. A cancel is seen by polling
``ctx.cancelled`` while ffmpeg runs; a pause needs nothing here: the endpoint suspends the
whole process tree, ffmpeg included.

A job that cannot apply to its input — TRANSCODE_MP4 of a file without video, EXTRACT_AUDIO of
one without sound — fails (``UNSUPPORTED_MEDIA``, ``NO_AUDIO``) unless its params say
``if_no_video``/``if_no_audio: "skip"``: then it completes with
``{"skipped": true, "reason": "no video"}`` and writes nothing. Templates that make several
things of a material ask for that, so that a silent video still gets its MP4.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import os
import queue
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import IO, Any, cast

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import audiodecode, avread, failures, outputs, segments
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs.avread import count_cues, open_media, probe, verify_media
from python_endpoints.serving.child import ChildContext, JobFailed, start_process, untrack_process
from python_endpoints.status import said

__all__ = ["count_cues", "open_media", "probe", "verify_media"]

PROBE = "PROBE"
TRANSCODE_MP4 = "TRANSCODE_MP4"
BURN_SUBTITLES = "BURN_SUBTITLES"
ADD_SUBTITLE_TRACK = "ADD_SUBTITLE_TRACK"
EXTRACT_AUDIO = "EXTRACT_AUDIO"
EXTRACT_SUBTITLES = "EXTRACT_SUBTITLES"

#: How often the job looks at the cancel flag while ffmpeg runs.
POLL = 0.1
#: At most this many progress reports a second.
REPORTS_PER_SECOND = 5
#: A short ffmpeg run (the encoder list, a one-frame test encode) that takes longer is stuck.
QUICK_TIMEOUT = 30.0
#: Seconds a terminated ffmpeg gets to exit before it is killed.
STOP_GRACE = 2.0
#: The share of a transcode's progress that loudnorm's measuring pass takes (it only
#: decodes the audio: far faster than the encode).
LOUDNESS_SPAN = 20.0


# --- running ffmpeg ---------------------------------------------------------------------------


#: Seconds between looks for the bundled ffmpeg when one fails (see :func:`bundled_ffmpeg`).
LOOKUP_WAITS = (0.05, 0.2, 0.5)


def bundled_ffmpeg() -> str:
    """The ffmpeg imageio-ffmpeg bundles (or the one ``IMAGEIO_FFMPEG_EXE`` names).

    imageio-ffmpeg checks its binary by running ``ffmpeg -version`` once per process and keeps
    the answer, a failure included: a check killed from outside (a user ending every ffmpeg,
    the system freeing memory) would leave the process — and, in the fork server, every child
    forked from it — saying "no ffmpeg" for good. A failed look is forgotten and tried again
    after each of :data:`LOOKUP_WAITS`, and forgotten once more if the last one fails too, so
    the next call looks afresh. Raises ``RuntimeError`` when no ffmpeg can be found."""
    import imageio_ffmpeg  # where used: importing the job's modules stays cheap (see avread)

    for wait in (*LOOKUP_WAITS, None):
        try:
            return str(imageio_ffmpeg.get_ffmpeg_exe())
        except RuntimeError:
            _forget_ffmpeg_lookup()
            if wait is None:
                raise
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def _forget_ffmpeg_lookup() -> None:
    """Drop imageio-ffmpeg's kept answer (a private cache of the pinned version; without it,
    a failed look is simply not tried again)."""
    from imageio_ffmpeg import _utils

    cache_clear = getattr(getattr(_utils, "_get_ffmpeg_exe", None), "cache_clear", None)
    if cache_clear is not None:
        cache_clear()


def ffmpeg_binary(params: Mapping[str, Any]) -> str:
    """The ffmpeg to run: the params' (the settings'), else the one imageio-ffmpeg bundles.
    ``params`` may lack ``ffmpeg`` (its default is None): the doctor and the warm-up ask
    without a job's params."""
    if params.get("ffmpeg"):
        return str(params["ffmpeg"])
    try:
        return bundled_ffmpeg()
    except RuntimeError as exc:
        raise JobFailed(
            f"no ffmpeg found ({exc}); set the path of an ffmpeg binary in the settings",
            ErrorType.EXECUTOR_ERROR,
        ) from exc


@dataclass(frozen=True)
class FfmpegRun:
    """How an ffmpeg run ended."""

    returncode: int
    #: The lines of its stderr worth keeping (the first and the last ones).
    stderr: list[str]
    cancelled: bool

    @property
    def signal(self) -> str | None:
        """The signal that killed it (``SIGKILL``), if one did."""
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    @property
    def how(self) -> str:
        """How it ended, for a message: ``exit code 1``, ``killed by SIGKILL``."""
        return f"killed by {self.signal}" if self.signal else f"exit code {self.returncode}"


def _start(args: list[str], cwd: str | None = None) -> subprocess.Popen[bytes]:
    try:
        return start_process(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    except OSError as exc:
        raise JobFailed(
            f"cannot run ffmpeg {args[0]!r}: {avread.reason(exc)}; fix the ffmpeg path in the "
            "settings, or clear it to use the bundled ffmpeg",
            ErrorType.EXECUTOR_ERROR,
        ) from exc


def _pump(stream: IO[bytes] | None, sink: Callable[[str], None]) -> None:
    if stream is None:
        return
    for raw in iter(stream.readline, b""):
        sink(raw.decode("utf-8", "replace").rstrip())


def _read_here(
    process: subprocess.Popen[bytes],
    on_out: Callable[[str], None],
    on_err: Callable[[str], None],
    cancelled: Callable[[], bool],
) -> bool:
    """Read the process's stdout and stderr line by line, in this thread, until both end or
    ``cancelled()`` (then True). POSIX: a pipe can be waited on. A short job spent ~1 ms
    starting the two threads that read them otherwise."""
    pending: dict[int, bytes] = {}
    with selectors.DefaultSelector() as selector:
        for stream, sink in ((process.stdout, on_out), (process.stderr, on_err)):
            if stream is not None:
                selector.register(stream.fileno(), selectors.EVENT_READ, sink)
                pending[stream.fileno()] = b""
        while selector.get_map():
            if cancelled():
                return True
            for key, _ in selector.select(POLL):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:  # its end; a last line without a newline too
                    selector.unregister(key.fd)
                    chunk = b"\n" if pending[key.fd] else b""
                *lines, pending[key.fd] = (pending[key.fd] + chunk).split(b"\n")
                for raw in lines:
                    key.data(raw.decode("utf-8", "replace").rstrip())
    return cancelled()


def _read_in_threads(
    process: subprocess.Popen[bytes],
    on_out: Callable[[str], None],
    on_err: Callable[[str], None],
    cancelled: Callable[[], bool],
) -> bool:
    """:func:`_read_here` where pipes cannot be waited on (Windows): a thread for each."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read_out() -> None:
        _pump(process.stdout, lines.put)
        lines.put(None)

    readers = [
        threading.Thread(target=read_out, daemon=True),
        threading.Thread(target=_pump, args=(process.stderr, on_err), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        while not cancelled():
            try:
                line = lines.get(timeout=POLL)
            except queue.Empty:
                continue
            if line is None:
                return False
            on_out(line)
        return True
    finally:
        _stop(process)  # ended, or stopped now: the readers see their pipes end
        for reader in readers:
            reader.join()


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate, then kill: a terminated ffmpeg still writes its trailer, briefly."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait()


def run_ffmpeg(
    args: list[str],
    ctx: ChildContext,
    *,
    duration: float | None,
    verb: str,
    span: tuple[float, float] = (0.0, 100.0),
    cwd: str | None = None,
) -> FfmpegRun:
    """Run ffmpeg (with ``-progress pipe:1`` in ``args``), reporting progress at most 5 times
    a second — its percent mapped onto ``span`` of the job's —, and stop it if the job is
    cancelled. ``cwd``: the folder it runs in (where a filter's relative file name is)."""
    process = _start(args, cwd)
    stderr = failures.StderrLog()
    parser = ff.ProgressParser()
    throttle = ff.Throttle(1.0 / REPORTS_PER_SECOND)
    low, high = span

    def feed(line: str) -> None:
        snapshot = parser.feed(line)
        if snapshot is not None and (snapshot.done or throttle.ready(time.monotonic())):
            percent = snapshot.percent(duration)
            ctx.progress(
                low + (high - low) * percent / 100.0,
                ff.status_text(verb, percent, snapshot.speed),
            )

    with process:  # closes its pipes on the way out
        try:
            read = _read_here if os.name == "posix" else _read_in_threads
            cancelled = read(process, feed, stderr.add, lambda: ctx.cancelled)
        finally:
            _stop(process)
            untrack_process(process)
    return FfmpegRun(process.returncode, stderr.lines, cancelled)


def _run_quick(args: list[str], cwd: str | None = None) -> tuple[int, str]:
    """A short ffmpeg run: its exit code and stdout (-1 when it could not run in time)."""
    try:
        process = start_process(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
    except OSError:
        return -1, ""
    with process:
        try:
            out, _ = process.communicate(timeout=QUICK_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return -1, ""
        finally:
            untrack_process(process)
    return process.returncode, out.decode("utf-8", "replace")


def renders_subtitles(binary: str, text: str) -> bool | None:
    """Whether ``binary`` draws ``text`` as subtitles — libass, and a font with its glyphs: a
    cue burned into one black frame, read back (libass leaves out a glyph no font has).
    None: this ffmpeg has no ``subtitles`` filter (no libass)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fredica-libass-") as tmp:
        Path(tmp, "cue.srt").write_text(f"1\n00:00:00,000 --> 00:00:05,000\n{text}\n", "utf-8")
        code, listing = _run_quick([binary, "-hide_banner", "-filters"])
        if code or not any(line.split()[1:2] == ["subtitles"] for line in listing.splitlines()):
            return None
        args = [binary, "-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-f", "lavfi"]
        args += ["-i", "color=c=black:s=320x120:d=1", "-vf"]
        args += ["subtitles=filename=cue.srt:force_style='FontSize=36'", "-frames:v", "1"]
        code, _ = _run_quick([*args, "-f", "image2", "-c:v", "png", "frame.png"], cwd=tmp)
        if code:
            return False
        with open_media(str(Path(tmp, "frame.png"))) as container:
            frame = next(container.decode(video=0))
            return bool(frame.to_ndarray(format="gray").max() > 128)


def list_encoders(binary: str) -> dict[str, str]:
    """The encoders an ffmpeg binary was built with (``{name: V|A|S}``)."""
    code, out = _run_quick(ff.encoders_args(binary))
    return ff.parse_encoders(out) if code == 0 else {}


def encoder_works(binary: str, encoder: str) -> bool:
    """Whether ``encoder`` encodes one frame on this machine. A hardware encoder is listed
    whenever ffmpeg was built with it, with or without the GPU and driver it needs."""
    return _run_quick(ff.trial_encode_args(binary, encoder))[0] == 0


_hardware: dict[str, str | None] = {}


@functools.cache
def possible_hardware_encoders() -> list[str]:
    """The hardware H.264 encoders that could work on this system, best first, untested: those
    with a device for their driver (:func:`ffmpeg.could_work`) — none on most servers and
    virtual machines, where nothing needs testing, nor an ffmpeg looked up to test with.
    Looked at once per process, as the encoders are tested once (:func:`hardware_encoder`)."""
    present = [d for d in {*chain(*ff.LINUX_DEVICES.values())} if os.path.exists(d)]
    return [e for e in ff.HARDWARE_H264_ENCODERS if ff.could_work(e, sys.platform, present)]


def hardware_encoder(binary: str) -> str | None:
    """The best hardware H.264 encoder that works here, or None; tested once per binary for
    the life of this process. An encoder that cannot work on this system (no device for its
    driver: :func:`ffmpeg.could_work`) is not tested; with none that could, nothing runs."""
    if binary not in _hardware:
        possible = possible_hardware_encoders()
        listed = ff.hardware_candidates(list_encoders(binary)) if possible else []
        candidates = [e for e in listed if e in possible]
        _hardware[binary] = first_working(candidates, lambda e: encoder_works(binary, e))
    return _hardware[binary]


def first_working(candidates: list[str], works: Callable[[str], bool]) -> str | None:
    """The first of ``candidates`` (best first) that ``works``, all tested side by side: a
    test mostly waits for its driver to start, and one after another their waits would add
    up in front of a batch's first transcodes."""
    if not candidates:
        return None
    with concurrent.futures.ThreadPoolExecutor(len(candidates)) as pool:
        results = list(pool.map(works, candidates))
    return next((e for e, ok in zip(candidates, results, strict=True) if ok), None)


def warm_up(endpoint: str) -> None:
    """In a warm spare, before its job arrives: import PyAV, and find the bundled ffmpeg
    (imageio-ffmpeg runs ``ffmpeg -version`` once per process, ~20 ms), so that the job does
    not wait for them. Those of :mod:`python_endpoints.jobs.thumbnail` too."""
    import av  # noqa: F401

    with contextlib.suppress(JobFailed):
        ffmpeg_binary({})


def ffmpeg_failed(run: FfmpegRun, what: str) -> JobFailed:
    """The job's error for a failed ffmpeg run: the type :func:`failures.classify` gives (what
    the input causes is never retried), its cause, ffmpeg's lines that say why, and what to
    do."""
    failure = failures.classify(run.stderr, run.returncode, run.signal)
    said = " | ".join(failure.lines).rstrip(".") or "nothing"
    return JobFailed(
        f"ffmpeg failed while {what} ({run.how}): {failure.cause}; ffmpeg said: {said}; "
        f"{failure.advice}",
        failure.error_type,
    )


# --- space, committing ------------------------------------------------------------------------


def check_space(directory: Path, needed: int, keep_free: int) -> None:
    """Refuse to start without room for the output (``NO_SPACE``)."""
    free = shutil.disk_usage(directory).free
    if not ff.has_room(free, needed, keep_free):
        raise JobFailed(
            f"not enough free space in {directory}: the output needs about "
            f"{ff.human_bytes(needed)}, {ff.human_bytes(free)} is free and "
            f"{ff.human_bytes(keep_free)} must stay free; free some space or move the library "
            "to a larger disk, then retry",
            ErrorType.NO_SPACE,
        )


def distinct(input: Path, output: Path) -> None:
    """Refuse an output that is the input itself (``PAYLOAD_ERROR``)."""
    if os.path.normcase(os.path.abspath(input)) == os.path.normcase(os.path.abspath(output)):
        raise JobFailed(
            f"the output {output} is the input itself; choose another output path",
            ErrorType.PAYLOAD_ERROR,
        )


def make_dir(directory: Path) -> None:
    """Make an output's folder; a failure is ``IO_ERROR`` (or ``NO_SPACE``)."""
    with outputs.writing(directory):
        directory.mkdir(parents=True, exist_ok=True)


def _size(path: Path) -> int:
    return path.stat().st_size


def _not_applicable(ctx: ChildContext, reason: str, why: str) -> dict[str, Any]:
    """The result of a job whose input has nothing for it to work on, when asked to skip."""
    ctx.progress(100.0, said("skipped") + why)
    return {"outputs": [], "skipped": True, "reason": reason}


def _with_note(result: dict[str, Any], verified: avread.Verified) -> dict[str, Any]:
    if verified.note:
        result.update(note=verified.note, declared_duration=verified.declared)
    return result


# --- the jobs ---------------------------------------------------------------------------------


def probe_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """PROBE: streams, container format, duration (s), size, kind, text subtitle count."""
    info = probe(params["input"])
    ctx.progress(100.0, said("probed"))
    return {"outputs": [], **info.as_dict()}


def transcode_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """TRANSCODE_MP4: stream-copy what fits MP4, re-encode the rest to H.264/AAC, text
    subtitles to mov_text, faststart; verify; put in place. See
    :mod:`python_endpoints.jobs.ffmpeg` for the rules."""
    input, output = Path(params["input"]), Path(params["output"])
    distinct(input, output)
    return _transcode(params, ctx, TRANSCODE_MP4, probe(params["input"]))


def burn_subtitles_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """BURN_SUBTITLES: TRANSCODE_MP4 with the video re-encoded and the subtitles drawn into
    it (libass, through ffmpeg's ``subtitles`` filter): a subtitle file's, or an embedded text
    track's. The subtitles are first copied (a file) or extracted (a track, as ASS) next to the
    output under a plain name, and ffmpeg runs in that folder: no path of the user's goes into
    the filter graph. Segmented and resumable as any long re-encode."""
    input, output = Path(params["input"]), Path(params["output"])
    distinct(input, output)
    info = probe(params["input"])
    make_dir(output.parent)
    digest = hashlib.sha256(output.name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    source: str
    if params["subtitles"] is not None:
        given = Path(params["subtitles"])
        suffix = given.suffix.lower()
        if suffix not in (".srt", ".vtt", ".ass", ".ssa"):
            raise JobFailed(
                f"{given.name}: not a subtitle file Fredica can burn (SRT, WebVTT or ASS)",
                ErrorType.UNSUPPORTED_MEDIA,
            )
        local = output.parent / f".fredica-burn-{digest}{suffix}"
        try:
            shutil.copyfile(given, local)
        except FileNotFoundError:
            raise JobFailed(
                f"{given.name}: no such subtitle file", ErrorType.INPUT_MISSING
            ) from None
        except OSError as exc:
            raise JobFailed(
                f"cannot read {given.name}: {avread.reason(exc)}", ErrorType.IO_ERROR
            ) from exc
        styled = suffix in (".srt", ".vtt")
        source = given.name
    else:
        tracks = [s for s in info.streams if s.type == "subtitle"]
        number = int(params["track"])
        if number >= len(tracks):
            raise JobFailed(
                f"{input.name} has {len(tracks)} subtitle track(s): there is no track {number} "
                "(counted from 0)",
                ErrorType.UNSUPPORTED_MEDIA,
            )
        if not tracks[number].text:
            raise JobFailed(
                f"{input.name}: subtitle track {number} is a bitmap one ({tracks[number].codec}); "
                "only text subtitles can be burned",
                ErrorType.UNSUPPORTED_MEDIA,
            )
        local = output.parent / f".fredica-burn-{digest}.ass"
        styled = tracks[number].codec not in ("ass", "ssa")
        args = [ffmpeg_binary(params), "-hide_banner", "-nostdin", "-y", "-loglevel", "error"]
        args += ["-i", str(input), "-map", f"0:{tracks[number].index}", "-c:s", "ass", str(local)]
        code, _ = _run_quick(args)
        if code:
            outputs.remove_quietly(local)
            raise JobFailed(
                f"cannot read subtitle track {number} of {input.name} (ffmpeg: exit code {code})",
                ErrorType.INPUT_DAMAGED,
            )
        source = f"track {number}"
    burn = ff.burn_filter(
        local.name,
        font=params["font"] if styled else None,
        size=params["font_size"],
        outline=params["outline"],
        top=params["position"] == "top",
    )
    try:
        result = _transcode(params, ctx, BURN_SUBTITLES, info, burn=burn)
    finally:
        outputs.remove_quietly(local)
    return None if result is None else {**result, "subtitles": source}


def add_subtitle_track_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """ADD_SUBTITLE_TRACK: the input's streams copied into an MP4 with the subtitle file as one
    more text track (``mov_text``) that players let the viewer turn on; nothing re-encoded,
    so the input's codecs must fit MP4 (make an MP4 first otherwise). Its bitmap subtitle
    tracks are left out (MP4 holds text ones only), and said."""
    input, output = Path(params["input"]), Path(params["output"])
    given = Path(params["subtitles"])
    distinct(input, output)
    if given.suffix.lower() not in (".srt", ".vtt", ".ass", ".ssa"):
        raise JobFailed(
            f"{given.name}: not a subtitle file Fredica can add (SRT, WebVTT or ASS)",
            ErrorType.UNSUPPORTED_MEDIA,
        )
    if not given.is_file():
        raise JobFailed(f"{given.name}: no such subtitle file", ErrorType.INPUT_MISSING)
    info = probe(params["input"])
    keep = [
        s for s in info.streams if s.type in ("video", "audio") or (s.type == "subtitle" and s.text)
    ]
    dropped = [s.index for s in info.streams if s not in keep and s.type == "subtitle"]
    language = params["language"] or _language_of(given, input)
    binary = ffmpeg_binary(params)
    make_dir(output.parent)
    check_space(output.parent, info.size, params["keep_free_bytes"])
    temp = outputs.temp_path(output, outputs.part_id(params))
    verb = said("step.remuxing")
    try:
        args = ff.add_track_args(
            binary, str(input), str(given), str(temp), keep=[s.index for s in keep],
            language=language,
        )  # fmt: skip
        ctx.progress(0.0, verb)
        run = run_ffmpeg(args, ctx, duration=info.duration, verb=verb)
        if run.cancelled:
            return None
        if run.returncode:
            raise ffmpeg_failed(run, f"adding {given.name} to {input.name} (its streams are "
                                "copied as they are: if MP4 cannot hold one, make an MP4 "
                                "first, with transcode_mp4)")  # fmt: skip
        ctx.finishing()  # what is left, reading the output back, takes no slot
        counts = {kind: sum(1 for s in keep if s.type == kind) for kind in ("video", "audio")}
        counts["subtitle"] = sum(1 for s in keep if s.type == "subtitle") + 1
        verified = verify_media(
            temp,
            "mp4",
            name=output.name,
            declared=ff.longest([s for s in keep if s.plays]) or info.duration,
            input_holds=lambda: avread.holds(str(input), [s.index for s in keep if s.plays]),
            streams=counts,
        )
        with outputs.writing(output):
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)
    with outputs.writing(output):
        outputs.write_sidecar(output, input, ADD_SUBTITLE_TRACK, params)
    ctx.progress(100.0, said("done"))
    result = {
        "outputs": [str(output)],
        "subtitles": given.name,
        "language": language,
        "duration": verified.duration,
        "bytes": _size(output),
        "dropped": [{"index": i, "reason": "a bitmap subtitle track"} for i in dropped],
    }
    return _with_note(result, verified)


def _language_of(subtitles: Path, video: Path) -> str | None:
    """The language a subtitle file's name says: ``talk.en.srt`` beside ``talk.mkv``."""
    base = subtitles.name[: -len(subtitles.suffix)]
    lang = (
        base[len(video.stem) + 1 :].lower()
        if base.lower().startswith(video.stem.lower() + ".")
        else ""
    )
    return lang if 2 <= len(lang) <= 3 and lang.isalpha() and lang.isascii() else None


def _transcode(
    params: dict[str, Any],
    ctx: ChildContext,
    job: str,
    info: ff.MediaInfo,
    *,
    burn: str | None = None,
) -> dict[str, Any] | None:
    """TRANSCODE_MP4's work (and BURN_SUBTITLES', with the ``burn`` filter after the video's
    own: ffmpeg then runs in the output's folder, where the filter's subtitle file is)."""
    input, output = Path(params["input"]), Path(params["output"])
    if params["if_no_video"] == "skip" and not any(s.is_main_video for s in info.streams):
        return _not_applicable(ctx, "no video", said("no_video_stream", name=input.name))
    profile: ff.Profile = params["profile"]
    limits = ff.Limits(
        max_height=params["max_height"], max_fps=params["max_fps"], loudness=params["loudness"]
    )
    try:
        plan = ff.plan_transcode(info.streams, params["mode"], profile, limits)
    except ff.UnsupportedMedia as exc:
        raise JobFailed(f"{input.name}: {exc}", ErrorType.UNSUPPORTED_MEDIA) from None
    if burn is not None:
        plan = ff.TranscodePlan(
            tuple(
                dataclasses.replace(s, filters=(*s.filters, burn)) if s.type == "video" else s
                for s in plan.streams
            ),
            plan.dropped,
        )
    runner = run_ffmpeg if burn is None else functools.partial(run_ffmpeg, cwd=str(output.parent))
    kept = {s.index for s in plan.streams}
    playing = [s for s in info.streams if s.index in kept and s.plays]
    declared = ff.longest(playing) or info.duration
    binary = ffmpeg_binary(params)
    make_dir(output.parent)
    needed = ff.estimate_output_bytes(TRANSCODE_MP4, input_size=info.size, duration=declared)
    check_space(output.parent, needed, params["keep_free_bytes"])
    encoder = "copy"
    if plan.encodes_video:
        known = params["hardware_encoder"]
        if not params["hardware"] or known == "none":
            encoder = ff.CPU_H264_ENCODER
        elif known:
            encoder = str(known)
        else:
            ctx.progress(0.0, said("finding_encoder"))
            encoder = hardware_encoder(binary) or ff.CPU_H264_ENCODER
    verb = said("step.transcoding" if plan.mode == "reencode" else "step.remuxing")
    part = outputs.part_id(params)
    temp = outputs.temp_path(output, part)
    # A long re-encode goes by segments that a next attempt resumes from (see segments.py).
    target = float(params["segment_seconds"])
    segmented = None
    if plan.encodes_video and segments.worth_segmenting(declared, target):
        segmented = segments.SegmentedEncode(
            ctx,
            binary,
            input,
            output,
            temp,
            plan,
            crf=params["crf"],
            preset=params["preset"],
            compatible=profile == "compatible",
            target=target,
            part=part,
            resume=params["resume"],
            runner=runner,
        )

    def attempt(with_encoder: str) -> FfmpegRun:
        if segmented is not None:
            segmented.span = (start, 100.0)
            return cast(FfmpegRun, segmented.execute(with_encoder, measured))
        args = ff.transcode_args(
            binary,
            str(input),
            str(temp),
            plan,
            encoder=with_encoder,
            crf=params["crf"],
            preset=params["preset"],
            compatible=profile == "compatible",
            loudness=measured,
        )
        return runner(args, ctx, duration=declared, verb=verb, span=(start, 100.0))

    measured: dict[int, ff.Loudness] = {}
    start = 0.0
    try:
        if ctx.cancelled:
            return None
        if limits.loudness and plan.encoded_audio():
            start = LOUDNESS_SPAN
            found = measure_loudness(binary, input, plan.encoded_audio(), ctx, declared)
            if found is None:
                return None
            measured = found
        ctx.progress(start, verb)
        run = attempt(encoder)
        if run.returncode and not run.cancelled and encoder not in ("copy", ff.CPU_H264_ENCODER):
            # The hardware encoder passed its one-frame test but failed on the real thing
            # (a driver, a size it does not take): once more on the CPU.
            encoder = ff.CPU_H264_ENCODER
            outputs.remove_quietly(temp)
            ctx.progress(start, verb + said("encoder_fallback"))
            run = attempt(encoder)
        if run.cancelled:
            return None
        if run.returncode:
            raise ffmpeg_failed(run, f"{verb} {input.name}")
        ctx.finishing()  # the next file's encode may start while this one is checked and synced
        verified = verify_media(
            temp,
            "mp4",
            name=output.name,
            declared=declared,
            input_holds=lambda: avread.holds(str(input), [s.index for s in playing]),
            streams={kind: plan.count(kind) for kind in ("video", "audio", "subtitle")},
        )
        with outputs.writing(output):
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)
    if segmented is not None:
        segmented.remove_pieces()
    with outputs.writing(output):
        outputs.write_sidecar(output, input, job, params)
    ctx.progress(100.0, said("done"))
    result = {
        "outputs": [str(output)],
        "probe": info.as_dict(),  # the input's, as PROBE gives it: no PROBE task needed
        "mode": plan.mode,
        "profile": profile,
        "video_encoder": encoder,
        "duration": verified.duration,
        "bytes": _size(output),
        "dropped": [{"index": i, "reason": why} for i, why in plan.dropped],
        **(segmented.summary() if segmented is not None else {}),
    }
    return _with_note(result, verified)


def measure_loudness(
    binary: str, input: Path, streams: list[int], ctx: ChildContext, duration: float | None
) -> dict[int, ff.Loudness] | None:
    """loudnorm's first pass over each audio stream, within the job's first
    :data:`LOUDNESS_SPAN` percent: what it measured by input index (a silent stream, which
    has no loudness to measure, is left out). None when the job was cancelled."""
    found: dict[int, ff.Loudness] = {}
    step = LOUDNESS_SPAN / len(streams)
    for n, index in enumerate(streams):
        span = (n * step, (n + 1) * step)
        args = ff.loudness_measure_args(binary, str(input), index)
        run = run_ffmpeg(
            args, ctx, duration=duration, verb=said("step.measuring_loudness"), span=span
        )
        if run.cancelled:
            return None
        if run.returncode:
            raise ffmpeg_failed(run, f"measuring the loudness of {input.name}")
        measured = ff.parse_loudnorm(run.stderr)
        if measured is not None:
            found[index] = measured
    return found


def extract_audio_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """EXTRACT_AUDIO: the main audio stream to 16-bit PCM WAV (or FLAC) at the rate and
    channels asked for (16 kHz mono by default: what speech-to-text wants)."""
    input, output = Path(params["input"]), Path(params["output"])
    distinct(input, output)
    info = probe(params["input"])
    stream = info.main_audio()
    if stream is None:
        silent = [s.index for s in info.of_type("audio")]
        why = (
            said("no_audio_with_sound", name=input.name, stream=silent[0])
            if silent
            else said("no_audio_stream", name=input.name)
        )
        if params["if_no_audio"] == "skip":
            return _not_applicable(ctx, "no audio", why)
        raise JobFailed(
            f"{why}, so there is no audio to extract; check that it is the right file",
            ErrorType.NO_AUDIO,
        )
    if not stream.decodable:
        raise JobFailed(
            f"{input.name}: its audio ({stream.codec}) cannot be decoded by this ffmpeg; "
            "set another ffmpeg in the settings",
            ErrorType.UNSUPPORTED_MEDIA,
        )
    fmt, rate, channels = params["format"], params["sample_rate"], params["channels"]
    declared = stream.duration or info.playing_duration
    binary = ffmpeg_binary(params)
    make_dir(output.parent)
    needed = ff.estimate_output_bytes(
        EXTRACT_AUDIO,
        input_size=info.size,
        duration=declared,
        sample_rate=rate,
        channels=channels,
        audio_format=fmt,
    )
    check_space(output.parent, needed, params["keep_free_bytes"])
    temp = outputs.temp_path(output, outputs.part_id(params))
    args = ff.extract_audio_args(
        binary,
        str(input),
        str(temp),
        stream=stream.index,
        format=fmt,
        sample_rate=rate,
        channels=channels,
    )
    verb = said("step.extracting_audio")
    try:
        if ctx.cancelled:
            return None
        ctx.progress(0.0, verb)
        done: bool | None = False
        if audiodecode.worth_in_process(declared, params):
            done = audiodecode.extract(
                input,
                stream.index,
                temp,
                format=fmt,
                sample_rate=rate,
                channels=channels,
                ctx=ctx,
                duration=declared,
                verb=verb,
            )
            if done is None:
                return None
            if not done:  # PyAV could not: ffmpeg does it, and says what is wrong if anything
                outputs.remove_quietly(temp)
        if not done:
            run = run_ffmpeg(args, ctx, duration=declared, verb=verb)
            if run.cancelled:
                return None
            if run.returncode:
                raise ffmpeg_failed(run, f"extracting the audio of {input.name}")
            ctx.finishing()  # a short file's in-process decode is light all through: unsaid
        verified = verify_media(
            temp,
            fmt,
            name=output.name,
            declared=declared,
            input_holds=lambda: avread.holds(str(input), [stream.index]),
            streams={"audio": 1, "video": 0},
            sample_rate=rate,
            channels=channels,
        )
        with outputs.writing(output):
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)
    with outputs.writing(output):
        outputs.write_sidecar(output, input, EXTRACT_AUDIO, params)
    ctx.progress(100.0, said("done"))
    result = {
        "outputs": [str(output)],
        "probe": info.as_dict(),  # the input's, as PROBE gives it: no PROBE task needed
        "duration": verified.duration,
        "bytes": _size(output),
        "format": fmt,
        "sample_rate": rate,
        "channels": channels,
        "stream": stream.index,
        # What took the audio out: PyAV in the job's process (a short file), or ffmpeg.
        "tool": "pyav" if done else "ffmpeg",
    }
    return _with_note(result, verified)


@dataclass(frozen=True)
class _Source:
    """Where EXTRACT_SUBTITLES finds cues: a text subtitle stream, or the closed captions a
    video stream carries in its frames."""

    stream: ff.StreamInfo
    captions: bool = False


def _caption_sources(input: Path, info: ff.MediaInfo) -> list[_Source]:
    return [
        _Source(s, captions=True)
        for s in info.streams
        if s.is_main_video
        and s.codec in ff.CAPTION_CODECS
        and s.decodable
        and avread.has_captions(str(input), s.index)
    ]


def extract_subtitles_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """EXTRACT_SUBTITLES: every embedded text subtitle stream, and the closed captions
    (CEA-608) a video stream carries in its frames, to SRT and/or WebVTT, with the stream's own
    timestamps. Bitmap subtitles are skipped (and listed as such); a file with neither is a
    success with no outputs."""
    input, output_dir = Path(params["input"]), Path(params["output_dir"])
    info = probe(params["input"])
    skipped = [
        {"index": s.index, "codec": s.codec, "reason": "bitmap subtitles cannot become text"}
        for s in info.of_type("subtitle")
        if not s.text
    ]
    if ctx.cancelled:
        return None
    texts = [_Source(s) for s in info.text_subtitles]
    captions = _caption_sources(input, info)
    if not texts and not captions:
        ctx.progress(100.0, said("no_text_subtitles"))
        return {"outputs": [], "streams": [], "skipped": skipped}
    formats: list[ff.SubtitleFormat] = list(dict.fromkeys(params["formats"]))
    stem = str(params["stem"])
    files = {
        (source, fmt): (
            outputs.caption_path(output_dir, stem, source.stream.index, fmt)
            if source.captions
            else outputs.subtitle_path(
                output_dir, stem, source.stream.index, source.stream.language, fmt
            )
        )
        for source in [*texts, *captions]
        for fmt in formats
    }
    part = outputs.part_id(params)
    temps = {key: outputs.temp_path(final, part) for key, final in files.items()}
    binary = ffmpeg_binary(params)
    make_dir(output_dir)
    needed = ff.estimate_output_bytes(
        EXTRACT_SUBTITLES, input_size=info.size, duration=info.duration, files=len(files)
    )
    check_space(output_dir, needed, params["keep_free_bytes"])
    # Captions need the video decoded, text streams only read: most of the time goes there.
    split = 100.0 if not captions else (20.0 if texts else 0.0)
    report: list[dict[str, Any]] = []
    keep: list[tuple[Path, Path]] = []  # (temporary, final)
    try:
        if texts:
            args = ff.extract_subtitles_args(
                binary,
                str(input),
                [(s.stream.index, fmt, str(temps[s, fmt])) for s in texts for fmt in formats],
            )
            ctx.progress(0.0, said("step.extracting_subtitles"))
            run = run_ffmpeg(
                args,
                ctx,
                duration=info.duration,
                verb=said("step.extracting_subtitles"),
                span=(0.0, split),
            )
            if run.cancelled:
                return None
            if run.returncode:
                raise ffmpeg_failed(run, f"extracting the subtitles of {input.name}")
        for source in captions:
            args = ff.extract_captions_args(
                binary,
                str(input),
                source.stream.index,
                [(fmt, str(temps[source, fmt])) for fmt in formats],
            )
            ctx.progress(split, said("step.extracting_captions"))
            run = run_ffmpeg(
                args,
                ctx,
                duration=source.stream.duration or info.playing_duration,
                verb=said("step.extracting_captions"),
                span=(split, 100.0),
            )
            if run.cancelled:
                return None
            if run.returncode:
                raise ffmpeg_failed(run, f"extracting the captions of {input.name}")
            srt = temps.get((source, "srt"))
            if srt is not None and srt.exists():
                with outputs.writing(files[source, "srt"]):
                    srt.write_text(ff.tidy_captions(srt.read_text("utf-8")), "utf-8")
        for source in [*texts, *captions]:
            s = source.stream
            cues = {fmt: count_cues(temps[source, fmt], fmt) for fmt in formats}
            first = files[source, formats[0]]
            if (
                not source.captions
                and not any(cues.values())
                and avread.count_packets(str(input), s.index)
            ):
                raise avread.verify_failed(
                    first.name,
                    f"no cue could be read back from subtitle stream {s.index} ({s.codec}): "
                    "the stream is damaged",
                    ErrorType.INPUT_DAMAGED,
                )
            if min(cues.values()) != max(cues.values()):
                raise avread.verify_failed(first.name, f"the formats disagree on the cues: {cues}")
            written = [files[source, fmt] for fmt in formats] if cues[formats[0]] else []
            keep += [(temps[source, fmt], files[source, fmt]) for fmt in formats if written]
            entry = {
                "index": s.index,
                "codec": "eia_608" if source.captions else s.codec,
                "language": None if source.captions else s.language,
                "files": [str(f) for f in written],
                "cues": cues[formats[0]],
            }
            if source.captions:
                entry["captions"] = True  # carried in the frames of video stream `index`
            report.append(entry)
        # Verified all, then moved all: a failure above leaves no final file behind.
        for temp, final in keep:
            with outputs.writing(final):
                outputs.commit(temp, final)
    finally:
        for temp in temps.values():
            outputs.remove_quietly(temp)
    for _, final in keep:
        with outputs.writing(final):
            outputs.write_sidecar(final, input, EXTRACT_SUBTITLES, params)
    ctx.progress(100.0, said("done"))
    return {
        "outputs": [str(final) for _, final in keep],
        "streams": report,
        "skipped": skipped,
    }
