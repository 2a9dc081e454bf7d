"""DOWNLOAD_SITE: a video site's page to one media file, with yt-dlp used as a library.

Runs in the child: standard library, ``yt_dlp`` and ``imageio_ffmpeg`` only. Params were
validated by the server (:class:`python_endpoints.params.SiteDownloadParams`). yt-dlp is an
optional extra (``pip install 'fredica[sites]'``): without it the job fails at once with
``UNSUPPORTED_MEDIA`` and says how to install it.

**Files.** yt-dlp writes under one temporary prefix next to the output, ``out.mp4`` →
``.out.mp4.fredica-part.<ext>`` (its ``outtmpl``): the file itself, and on the way its
``.part`` and ``.ytdl`` files, one ``.f<format>.<ext>`` file per stream before a merge, the
merger's ``.temp.<ext>``. Once yt-dlp is done, the file it made is checked (it exists and is
not empty), flushed and renamed to ``output`` (``os.replace``): the final path never holds a
partial file. The output's suffix picks the container of a *merge* (``.mp4`` → MP4, anything
else → Matroska, which takes any codec); a single file is kept as the site serves it, byte
for byte (the result's ``ext`` says which container that is). These names are the output's on
purpose (a retry continues them): two downloads to one output never run at once, the server
locks the output for the job's duration (:mod:`python_endpoints.serving.outputlocks`).

**Resume.** yt-dlp's own ``continuedl``: a ``.part`` left by an earlier attempt is continued
with an HTTP Range request (a ``.ytdl`` file records a fragmented download's place), and a
stream already downloaded in full before a merge is not downloaded again. So the files a
retry can continue from (:func:`temp_files` with ``resumable``) are kept when an attempt
fails on the network, crashes or is interrupted (the client went away, the server stopped);
a cancel by the user and a definitive failure (:data:`DISCARD_ON`) remove every temporary
file. yt-dlp resumes without If-Range: a resource that changed between two attempts would be
spliced, as a browser's resumed download would be.

**Progress.** yt-dlp reports one file at a time; :class:`ProgressMapper` turns that into one
overall percent (streams weighted by their announced sizes, else a video stream 9 times an
audio stream), at most five reports a second: ``downloading 12.3 MB of 40.0 MB, 5.1 MB/s,
6 s left``, then ``merging video and audio``. Cancel: the progress hook sees
``ctx.cancelled`` and raises, which unwinds yt-dlp (the endpoint kills the process tree
anyway if it is stuck). Pause: the endpoint suspends the process tree.

**Errors** (``error_type``)::

    HTTP_ERROR         a definitive HTTP 4xx; the site's own refusal (private, removed,
                       geo-blocked, login needed)
    NETWORK_ERROR      refused/reset/timed out, HTTP 5xx/408/425/429, a body cut short
    UNSUPPORTED_MEDIA  no extractor or no video at the URL, no format matches ``format``, a
                       playlist of several videos, larger than ``max_bytes``, no yt-dlp
    NO_SPACE           the announced size does not fit; the disk filled up
    IO_ERROR           the output's folder cannot be written
    EXECUTOR_ERROR     anything else (an extractor that broke, a merge that failed)

yt-dlp is kept to itself: no configuration file, no cache directory, no plugins, no
playlists, nothing on stdout or stderr (a quiet logger drops its messages; errors arrive as
exceptions).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import math
import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import outputs
from python_endpoints.jobs.ffmpeg import has_room, human_bytes
from python_endpoints.jobs.text import format_bytes, format_duration, shown
from python_endpoints.serving.child import ChildContext, JobFailed
from python_endpoints.status import said

DOWNLOAD_SITE = "DOWNLOAD_SITE"

NOT_INSTALLED = "site downloads need the optional yt-dlp package: pip install 'fredica[sites]'"
#: At most five progress reports a second.
REPORT_EVERY = 0.2
#: Of 100 %, what downloading takes when the streams are merged afterwards.
MERGE_SHARE = 95.0
#: Of 100 %, what downloading a single file takes (the rest: checking and renaming it).
SINGLE_SHARE = 99.0
#: How much more a video stream weighs than an audio-only one when sizes are unknown.
VIDEO_WEIGHT = 9.0
#: Attempts yt-dlp makes (from where it got) after a connection is lost, per file and per
#: fragment, before the job fails with ``NETWORK_ERROR`` (and the engine retries it later).
RETRIES = 10
#: An error message quotes at most this much of yt-dlp's.
MESSAGE_CHARS = 300
#: Failures after which nothing is worth resuming: every temporary file is removed.
DISCARD_ON = frozenset(
    {
        ErrorType.HTTP_ERROR,
        ErrorType.UNSUPPORTED_MEDIA,
        ErrorType.PAYLOAD_ERROR,
        ErrorType.VERIFY_FAILED,
    }
)

_RETRYABLE_STATUSES = frozenset({408, 425, 429})
_NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
#: How yt-dlp says that a download failed after its retries: by message only, with no
#: exception attached (what it retries is network trouble: a reset, a body cut short, a 5xx).
_GAVE_UP = "[download] got error:"


# --- temporary files (the endpoint uses these too) --------------------------------------------


def temp_prefix(output: Path) -> Path:
    """The name every temporary file of a download to ``output`` starts with."""
    return output.with_name(f".{output.name}{outputs.PART_MARK}")


def outtmpl(output: Path) -> str:
    """yt-dlp's output template: the prefix, then the extension yt-dlp picks."""
    return str(temp_prefix(output)).replace("%", "%%") + ".%(ext)s"


# What a retry continues from: yt-dlp's .part and .ytdl files, fragments, and a stream
# downloaded in full before a merge (``f<format id>.<ext>``; a merge's ``temp.<ext>`` is not).
_RESUMABLE = re.compile(r"(\.part|\.ytdl|\.part-Frag\d+(\.part)?)$|^f[^.]+(\..+)?\.\w+$")


def is_resumable(name: str, output: Path) -> bool:
    """Whether a temporary file of ``output`` (by name) is something a retry continues from."""
    rest = name[len(temp_prefix(output).name) + 1 :]
    return bool(_RESUMABLE.search(rest))


def temp_files(output: Path, *, resumable: bool) -> list[Path]:
    """The temporary files a download to ``output`` left, those a retry could continue from
    included only with ``resumable``."""
    start = temp_prefix(output).name + "."
    try:
        with os.scandir(output.parent) as entries:
            names = [e.name for e in entries if e.name.startswith(start)]
    except OSError:
        return []
    return [output.parent / n for n in names if resumable or not is_resumable(n, output)]


# --- progress (pure) --------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value >= 0 else None


def stream_kind(fmt: Mapping[str, Any]) -> str:
    """``audio`` for an audio-only format, else ``video`` (with or without its audio)."""
    return "audio" if fmt.get("vcodec") == "none" and fmt.get("acodec") != "none" else "video"


@dataclass
class _Stream:
    format_id: str
    kind: str
    size: float | None  # announced (filesize, else filesize_approx)
    done: float = 0.0
    total: float | None = None  # what the download says, once it started


class ProgressMapper:
    """yt-dlp's progress reports, one file at a time, as one overall percent and a status text.

    :meth:`plan` is given the video's info once its formats are chosen (before any byte);
    :meth:`download` each progress report, :meth:`postprocess` each post-processor's start.
    Percents never go back."""

    def __init__(self, interval: float = REPORT_EVERY) -> None:
        self.interval = interval
        self.streams: list[_Stream] = [_Stream("", "video", None)]
        self.percent = 0.0
        self._last_report = -math.inf

    def plan(self, info: Mapping[str, Any]) -> None:
        formats: Sequence[Mapping[str, Any]] = info.get("requested_formats") or [info]
        self.streams = [
            _Stream(
                str(f.get("format_id")),
                stream_kind(f),
                _number(f.get("filesize")) or _number(f.get("filesize_approx")),
            )
            for f in formats
        ]

    @property
    def merging(self) -> bool:
        return len(self.streams) > 1

    @property
    def announced_bytes(self) -> float | None:
        """What every stream together announced before the download, if each one did."""
        sizes = [s.size for s in self.streams]
        return None if any(size is None for size in sizes) else sum(s or 0 for s in sizes)

    @property
    def expected_bytes(self) -> float:
        """The bytes the download comes to, as far as known now (at least those written)."""
        return sum(max(s.done, s.total or s.size or 0) for s in self.streams)

    def _weights(self) -> list[float]:
        sizes = [s.size for s in self.streams]
        if all(size for size in sizes):
            return [size or 0.0 for size in sizes]
        return [1.0 if s.kind == "audio" else VIDEO_WEIGHT for s in self.streams]

    def _index(self, status: Mapping[str, Any]) -> int | None:
        info = status.get("info_dict") or {}
        ids = [s.format_id for s in self.streams]
        fid = str(info.get("format_id"))
        return ids.index(fid) if fid in ids else (0 if len(ids) == 1 else None)

    def download(self, status: Mapping[str, Any], now: float) -> tuple[float, str] | None:
        """Take one report; return ``(percent, status_text)`` when it is time to say so."""
        index = self._index(status)
        finished = status.get("status") == "finished"
        done = _number(status.get("downloaded_bytes")) or 0.0
        total = _number(status.get("total_bytes"))
        if finished:
            total = total or done
            done = max(done, total)
        estimate = total or _number(status.get("total_bytes_estimate"))
        if estimate:
            fraction = min(1.0, done / estimate)
        elif _number(status.get("fragment_count")):
            fraction = (_number(status.get("fragment_index")) or 0.0) / status["fragment_count"]
        else:
            fraction = 1.0 if finished else 0.0
        if index is None:  # streams downloaded together (by ffmpeg): one whole
            stream = _Stream("", "video", None, done, total)
            self.streams = [stream]
            index = 0
        stream = self.streams[index]
        stream.done, stream.total = done, total or stream.total
        weights = self._weights()
        whole = sum(weights) or 1.0
        share = MERGE_SHARE if self.merging else SINGLE_SHARE
        percent = share * (sum(weights[:index]) + weights[index] * min(1.0, fraction)) / whole
        self.percent = max(self.percent, round(percent, 2))
        if not finished and now - self._last_report < self.interval:
            return None
        self._last_report = now
        part = (stream.kind, index + 1, len(self.streams)) if self.merging else None
        text = status_text(
            part, done, total, estimate, _number(status.get("speed")), _number(status.get("eta"))
        )
        return self.percent, text

    def postprocess(self, status: Mapping[str, Any]) -> tuple[float, str] | None:
        """A post-processor's hook: say what it does when it starts."""
        name = str(status.get("postprocessor"))
        if status.get("status") != "started" or name == "MoveFiles":
            return None  # MoveFiles renames within the folder: nothing to say
        if name == "Merger":
            self.percent = max(self.percent, MERGE_SHARE)
            return self.percent, said("merging")
        if name.startswith("Fixup"):
            return self.percent, said("repairing")
        return self.percent, said("post_processing", name=name)


def status_text(
    stream: tuple[str, int, int] | None,
    done: float,
    total: float | None,
    estimate: float | None,
    speed: float | None,
    eta: float | None,
) -> str:
    """``downloading 12.3 MB of 40.0 MB, 5.1 MB/s, 6 s left``; ``of ~40.0 MB`` when only
    estimated; ``downloading audio 2 of 2: …`` for one of the ``stream`` (kind, number,
    count) of a merge. As status messages."""
    if stream is None:
        text: str = said("downloading", done=format_bytes(done))
    else:
        kind, number, count = stream
        text = said(
            "downloading_stream", stream=kind, number=number, count=count, done=format_bytes(done)
        )
    if total:
        text += said("of_total", total=format_bytes(total))
    elif estimate:
        text += said("of_about", total=format_bytes(estimate))
    if speed:
        text += said("rate", rate=format_bytes(speed))
    if eta is not None and speed:
        text += said("left", left=format_duration(eta))
    return text


# --- errors (pure) ----------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def shorten(message: str, limit: int = MESSAGE_CHARS) -> str:
    """yt-dlp's message without its ``ERROR:`` prefix, its bug-report plea, the repr of the
    exception it wraps and colours; at most ``limit`` characters."""
    text = _ANSI.sub("", message).strip()
    text = re.sub(r"^(ERROR|WARNING):\s*", "", text)
    text = text.split("; please report this issue", 1)[0]
    text = re.sub(r"\s*\(caused by .*\)\s*$", "", text, flags=re.S)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception behind it: yt-dlp's ``exc_info`` and ``cause``, Python's
    ``__cause__`` and ``__context__``; each once, nearest first."""
    seen: list[BaseException] = []
    todo: list[Any] = [exc]
    while todo:
        e = todo.pop(0)
        if not isinstance(e, BaseException) or any(e is s for s in seen):
            continue
        seen.append(e)
        exc_info = getattr(e, "exc_info", None)
        if isinstance(exc_info, tuple) and len(exc_info) > 1:
            todo.append(exc_info[1])
        todo += [getattr(e, "cause", None), e.__cause__, e.__context__]
    return seen


def classify(exc: BaseException) -> ErrorType:
    """The error type of a yt-dlp failure (see the module's docstring), from its causes."""
    from yt_dlp.networking.exceptions import HTTPError, TransportError
    from yt_dlp.utils import (
        ContentTooShortError,
        ExtractorError,
        UnsupportedError,
    )

    chain = causes(exc)

    def found(kind: type[BaseException] | tuple[type[BaseException], ...]) -> list[Any]:
        return [e for e in chain if isinstance(e, kind)]

    if any(getattr(e, "errno", None) in _NO_SPACE for e in found(OSError)):
        return ErrorType.NO_SPACE
    for http in found(HTTPError):
        status = int(getattr(http, "status", 0) or 0)
        if status >= 500 or status in _RETRYABLE_STATUSES:
            return ErrorType.NETWORK_ERROR
        if 400 <= status < 500:
            return ErrorType.HTTP_ERROR
    if found((TransportError, ContentTooShortError)):
        return ErrorType.NETWORK_ERROR
    if found(UnsupportedError):
        return ErrorType.UNSUPPORTED_MEDIA
    extractor = found(ExtractorError)
    if any("requested format is not available" in str(e).lower() for e in extractor):
        return ErrorType.UNSUPPORTED_MEDIA
    if any(getattr(e, "expected", False) for e in extractor):
        return ErrorType.HTTP_ERROR
    if found(OSError):
        return ErrorType.IO_ERROR
    if _GAVE_UP in str(exc).lower():
        return ErrorType.NETWORK_ERROR
    return ErrorType.EXECUTOR_ERROR


_ADVICE = {
    ErrorType.HTTP_ERROR: "check the URL (the video may be private, removed, or need a login)",
    ErrorType.NETWORK_ERROR: "check the network connection; what was downloaded so far is kept, "
    "and a retry continues from it",
    ErrorType.UNSUPPORTED_MEDIA: "check that the page holds a video; a direct file URL can also "
    "be downloaded as a plain download",
    ErrorType.NO_SPACE: "free some space, then retry the task",
    ErrorType.IO_ERROR: "check that the folder exists and is writable, then retry",
    ErrorType.EXECUTOR_ERROR: "the site may have changed: updating yt-dlp often fixes this",
}


def failure(exc: BaseException, url: str) -> JobFailed:
    """yt-dlp's exception as the job's error: its type, yt-dlp's own words, what to do."""
    kind = classify(exc)
    return JobFailed(
        f"downloading {shown(url)} failed: {shorten(str(exc)) or type(exc).__name__}; "
        f"{_ADVICE[kind]}",
        kind,
    )


# --- the shell around yt-dlp ------------------------------------------------------------------


def load_yt_dlp() -> ModuleType:
    """yt-dlp, or ``UNSUPPORTED_MEDIA`` saying how to install it."""
    # This process's own environment (a job's child): no user plugins, ever.
    os.environ["YTDLP_NO_PLUGINS"] = "1"
    try:
        return importlib.import_module("yt_dlp")
    except ImportError as exc:
        raise JobFailed(NOT_INSTALLED, ErrorType.UNSUPPORTED_MEDIA) from exc


def warm_up(endpoint: str = "download_site") -> None:
    """Pay ahead what the first download in a process costs: importing yt-dlp and compiling
    the URL patterns of its ~1,900 extractors (1 s and 3 s on a small machine). Called by
    :func:`python_endpoints.serving.child._child_main` in a warm spare, before its job arrives (the
    server imports this module too, only to name the job: there yt-dlp stays unimported)."""
    try:
        load_yt_dlp()
        extractors: Any = importlib.import_module("yt_dlp.extractor")
        for extractor in extractors.gen_extractor_classes():
            extractor.suitable("https://www.example.com/")
    except Exception:  # a warm-up must never break a spare: the job will say what is wrong
        pass


class _Stop(BaseException):
    """Raised in a yt-dlp hook to unwind yt-dlp: a cancel (``failure`` None) or a limit.
    A BaseException, so that none of yt-dlp's handlers can take it for its own error."""

    def __init__(self, failure: JobFailed | None = None) -> None:
        super().__init__()
        self.failure = failure


class _QuietLogger:
    """yt-dlp's messages go nowhere: debug and info are progress noise, warnings are about
    what it guessed (the generic extractor…), and errors arrive as exceptions anyway."""

    def debug(self, msg: str) -> None:
        pass

    def info(self, msg: str) -> None:
        pass

    def warning(self, msg: str) -> None:
        pass

    def error(self, msg: str) -> None:
        pass


def ffmpeg_location(params: Mapping[str, Any]) -> str | None:
    """The ffmpeg that merges streams: the params' (the settings'), else the bundled one, else
    None (yt-dlp then looks on the PATH, and says so if a merge needs one it cannot find)."""
    if params["ffmpeg"]:
        return str(params["ffmpeg"])
    from python_endpoints.jobs.media import bundled_ffmpeg

    try:
        return bundled_ffmpeg()
    except (ImportError, RuntimeError):
        return None


def _io_failure(exc: OSError, path: Path) -> JobFailed:
    if exc.errno in _NO_SPACE:
        return JobFailed(
            f"the disk is full (writing {path}); free some space, then retry", ErrorType.NO_SPACE
        )
    return JobFailed(
        f"cannot write {path}: {exc.strerror or exc}; check that the folder exists and is "
        "writable, then retry",
        ErrorType.IO_ERROR,
    )


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Translate a file system error, once, here."""
    try:
        yield
    except OSError as exc:
        raise _io_failure(exc, path) from exc


class _Download:
    """One run: yt-dlp's options and hooks, the limits, the progress."""

    def __init__(self, params: Mapping[str, Any], ctx: ChildContext) -> None:
        self.url = str(params["url"])
        self.output = Path(params["output"])
        self.ctx = ctx
        self.max_bytes: int | None = params["max_bytes"]
        self.keep_free: int = params["keep_free_bytes"]
        self.progress = ProgressMapper()
        self.checked: set[str] = set()  # the files whose announced size was checked

    def options(self, params: Mapping[str, Any]) -> dict[str, Any]:
        opts: dict[str, Any] = {
            "outtmpl": {"default": outtmpl(self.output)},
            "format": params["format"],
            "merge_output_format": "mp4" if self.output.suffix.lower() == ".mp4" else "mkv",
            "noplaylist": True,
            "continuedl": True,  # resume a .part left by an earlier attempt
            # yt-dlp's command line retries 10 times; as a library, not at all by default.
            "retries": RETRIES,
            "fragment_retries": RETRIES,
            "updatetime": False,  # the file's mtime is when it was downloaded
            "ignoreconfig": True,  # (a library reads no config file anyway)
            "cachedir": False,
            "quiet": True,
            "no_warnings": True,
            "noprogress": True,
            "color": "no_color",
            "logger": _QuietLogger(),
            "match_filter": self.match_filter,
            "progress_hooks": [self.progress_hook],
            "postprocessor_hooks": [self.postprocessor_hook],
        }
        location = ffmpeg_location(params)
        if location is not None:
            opts["ffmpeg_location"] = location
        if params["proxy"]:
            opts["proxy"] = str(params["proxy"])
        return opts

    def _fail(self, message: str, error_type: str) -> _Stop:
        return _Stop(JobFailed(message, error_type))

    def _too_large(self, size: float, announced: bool) -> _Stop:
        what = "announces" if announced else "comes to"
        return self._fail(
            f"{shown(self.url)} {what} {format_bytes(size)}, more than the "
            f"{format_bytes(self.max_bytes or 0)} allowed (max_bytes)",
            ErrorType.UNSUPPORTED_MEDIA,
        )

    def _check_room(self, needed: float) -> None:
        try:
            free = shutil.disk_usage(self.output.parent).free
        except OSError:
            return  # cannot tell: writing will say
        if not has_room(free, int(needed), self.keep_free):
            raise self._fail(
                f"not enough free space in {self.output.parent} for {shown(self.url)}: it "
                f"needs about {human_bytes(needed)}, {human_bytes(free)} is free and "
                f"{human_bytes(self.keep_free)} must stay free; free some space or move the "
                "library to a larger disk, then retry",
                ErrorType.NO_SPACE,
            )

    def match_filter(self, info: Mapping[str, Any], incomplete: Any = False) -> str | None:
        """Called by yt-dlp for each video before it is downloaded (and, ``incomplete``,
        before its formats are known): refuse playlists, sizes over the limits."""
        if self.ctx.cancelled:
            raise _Stop()
        entries = info.get("n_entries")
        if isinstance(entries, int) and entries > 1:
            raise self._fail(
                f"{shown(self.url)} is a playlist of {entries} videos; download them one by "
                "one (the URL of each video)",
                ErrorType.UNSUPPORTED_MEDIA,
            )
        if incomplete is not False:
            return None
        self.progress.plan(info)
        announced = self.progress.announced_bytes
        if announced is not None:
            if self.max_bytes is not None and announced > self.max_bytes:
                raise self._too_large(announced, announced=True)
        # Streams to merge are on the disk twice for a moment: as downloaded, then merged.
        self._check_room((announced or 0) * (2 if self.progress.merging else 1))
        return None

    def progress_hook(self, status: dict[str, Any]) -> None:
        if self.ctx.cancelled:
            raise _Stop()
        if status.get("status") not in ("downloading", "finished"):
            return
        report = self.progress.download(status, time.monotonic())
        expected = self.progress.expected_bytes
        if self.max_bytes is not None and expected > self.max_bytes:
            raise self._too_large(expected, announced=False)
        name = str(status.get("filename"))
        total = _number(status.get("total_bytes"))
        if total is not None and name not in self.checked:
            self.checked.add(name)
            done = _number(status.get("downloaded_bytes")) or 0.0
            self._check_room(max(0.0, total - done))
        if report is not None:
            self.ctx.progress(*report)

    def postprocessor_hook(self, status: dict[str, Any]) -> None:
        if self.ctx.cancelled:
            raise _Stop()
        report = self.progress.postprocess(status)
        if report is not None:
            self.ctx.progress(*report)


def _the_video(info: Mapping[str, Any]) -> Mapping[str, Any]:
    """The video's info: for a URL that is a playlist (of one video: more are refused), yt-dlp
    returns the playlist's, with the video's among its entries."""
    if info.get("_type") == "playlist":
        entries = [e for e in info.get("entries") or [] if isinstance(e, dict)]
        if entries:
            return entries[0]
    return info


def _produced(info: Mapping[str, Any], output: Path) -> Path:
    """The file yt-dlp made (under the temporary prefix)."""
    downloads = info.get("requested_downloads") or [info]
    path = downloads[-1].get("filepath") or info.get("filepath")
    if not path or not Path(path).name.startswith(temp_prefix(output).name + "."):
        raise JobFailed(
            f"yt-dlp did not say where it wrote {output.name} ({path!r}); retry the task",
            ErrorType.EXECUTOR_ERROR,
        )
    return Path(path)


def _verified(path: Path, output: Path) -> int:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = -1
    if size <= 0:
        state = "missing" if size < 0 else "empty"
        raise JobFailed(
            f"the output {output.name} failed verification: the file yt-dlp made is {state}",
            ErrorType.VERIFY_FAILED,
        )
    return size


def site_download_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """DOWNLOAD_SITE: download ``params["url"]`` with yt-dlp to ``params["output"]``.

    Result: ``{"outputs": [output], "bytes": n, "title", "extractor", "url": the page's URL,
    "duration": seconds or None, "ext": the container yt-dlp made, "format": yt-dlp's format
    id(s)}``."""
    yt = load_yt_dlp()
    run = _Download(params, ctx)
    output = run.output
    with _writing(output.parent):
        output.parent.mkdir(parents=True, exist_ok=True)
    # What an earlier attempt made but did not rename is made again; its .part files are
    # continued.
    for stale in temp_files(output, resumable=False):
        outputs.remove_quietly(stale)
    ctx.progress(0.0, said("looking_for_video", url=shown(run.url)))
    try:
        with yt.YoutubeDL(run.options(params)) as ydl:
            info = ydl.extract_info(run.url, download=True)
    except _Stop as stop:
        if stop.failure is None:
            return None  # cancelled: the endpoint removes the temporary files
        raise stop.failure from None
    except yt.utils.YoutubeDLError as exc:
        raise failure(exc, run.url) from None
    except OSError as exc:  # yt-dlp turns most into a DownloadError, not every one
        raise _io_failure(exc, output) from exc
    if not isinstance(info, dict):
        raise JobFailed(
            f"yt-dlp found nothing to download at {shown(run.url)}", ErrorType.EXECUTOR_ERROR
        )
    info = _the_video(info)
    made = _produced(info, output)
    size = _verified(made, output)
    if ctx.cancelled:
        return None  # never publish after a cancel: the endpoint removes the file
    with _writing(output):
        outputs.commit(made, output)
    ctx.progress(100.0, said("downloaded", size=format_bytes(size)))
    duration = _number(info.get("duration"))
    return {
        "outputs": [str(output)],
        "bytes": size,
        "title": info.get("title"),
        "extractor": info.get("extractor"),
        "url": info.get("webpage_url") or run.url,
        "duration": duration,
        "ext": made.suffix.lstrip(".") or None,
        "format": info.get("format_id"),
    }
