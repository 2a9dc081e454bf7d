"""Where media jobs write, and how they put an output in place.

An output is written to a temporary name next to its final path, in the same directory (so
that the final rename is atomic), unique to the attempt: ``out.mp4`` is written as
``.out.<part id>.fredica-part.mp4``, the part id (8 hex digits) given to the job by the
endpoints server (``params["part_id"]``; a job run without a server makes its own). Two
attempts writing the same output never share a temporary file, and the cleanup after a cancel
or a crash (:func:`partial_outputs`) removes only its own attempt's files. What a crashed
attempt left (its server killed with it) is removed by the next job for the same output, once
it holds that output's lock in the server (:func:`leftover_parts`; see
:mod:`python_endpoints.serving.outputlocks`). Once verified an output is fsync'd and renamed into
place, and a sidecar ``.out.mp4.fredica.json`` records what it was made from (sizes and mtimes
of the output and the input, the job, the params that shape the output).
:func:`output_is_current` compares that with the files as they are now — stats only, never a
hash of the media — so that the engine can skip a task whose output is already there.

Standard library only: the endpoint (in the server) and the job (in its child) both use it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from python_endpoints.errorcodes import ErrorType
from python_endpoints.serving.child import JobFailed

PART_MARK = ".fredica-part"
#: The key of the params under which the endpoints server gives a job its part id (added to
#: the validated params: a client cannot send it).
PART_ID = "part_id"
#: The key under which the endpoints server tells a job that an earlier run on the same input
#: crashed its child (added to the validated params, as the part id): a job with a way of its
#: own in the child — EXTRACT_AUDIO's PyAV decode of a short file — takes the ffmpeg process
#: instead, whose crash the child outlives and reports.
AFTER_CRASH = "after_crash"
SIDECAR_SUFFIX = ".fredica.json"
SIDECAR_VERSION = 1

#: The names of the params that shape each job's output: its sidecar records their values.
#: Others (the ffmpeg binary, the space reserve) do not shape the output. The values are read
#: from validated params, every field there and defaults filled (the server validates a
#: payload before the job or a skip check sees it): a payload that leaves a param to its
#: default and one that gives the default compare equal.
_TRANSCODE = ("mode", "hardware", "crf", "preset", "profile", "max_height", "max_fps", "loudness")
RELEVANT_PARAMS: dict[str, tuple[str, ...]] = {
    "TRANSCODE_MP4": _TRANSCODE,
    "BURN_SUBTITLES": (
        *_TRANSCODE,
        *("subtitles", "track", "font", "font_size", "outline", "position"),
    ),
    "ADD_SUBTITLE_TRACK": ("subtitles", "language"),
    "EXTRACT_AUDIO": ("format", "sample_rate", "channels"),
    "EXTRACT_SUBTITLES": (),  # a file's name says its stream and its format
    "THUMBNAIL": ("frames", "columns", "width"),
}


_PART_ID = re.compile(r"^[0-9a-f]{8}$")
_TEMP_NAME = re.compile(
    rf"^\.(?P<stem>.+)\.(?P<part>[0-9a-f]{{8}}){re.escape(PART_MARK)}(?P<suffix>\.[^.]*)?$"
)


def new_part_id() -> str:
    """A fresh part id: 8 random hex digits."""
    return secrets.token_hex(4)


def part_id(params: Mapping[str, Any]) -> str:
    """The part id the server gave this run (``params["part_id"]``), or a fresh one for a job
    run without a server (a test, a bench): its temporary files are then its own all the same.
    Call it once per run."""
    given = params.get(PART_ID)
    return given if isinstance(given, str) and _PART_ID.match(given) else new_part_id()


def temp_path(final: Path, part: str) -> Path:
    """The temporary name run ``part`` writes ``final`` to:
    ``dir/.stem.<part>.fredica-part.ext``."""
    return final.with_name(f".{final.stem}.{part}{PART_MARK}{final.suffix}")


def parse_temp(name: str) -> tuple[str, str] | None:
    """``(final name, part id)`` of a temporary name made by :func:`temp_path`, else None."""
    match = _TEMP_NAME.match(name)
    if match is None:
        return None
    return match["stem"] + (match["suffix"] or ""), match["part"]


#: The pieces a run leaves for the next attempt to resume from, by the final-like name
#: :func:`piece_path` gives them: a segmented re-encode's (:mod:`python_endpoints.jobs.segments`)
#: ``<stem>.seg00003.mp4``, ``<stem>.rest.mp4``, ``<stem>.concat.txt`` for ``<stem>.mp4``;
#: DIARIZE's embeddings ``<stem>.emb00003.npy`` for ``<stem>.json``.
_PIECE = r"\.(seg\d{5}\.mp4|rest\.mp4|concat\.txt|emb\d{5}\.npy)"


def piece_path(output: Path, part: str, piece: str) -> Path:
    """Where run ``part`` writes a piece of ``output`` (``seg00003.mp4``, ``rest.mp4``,
    ``concat.txt``): a temporary name next to it, ``.<stem>.seg00003.<part>.fredica-part.mp4``."""
    return temp_path(output.with_name(f"{output.stem}.{piece}"), part)


def is_piece_of(output: Path, name: str) -> bool:
    """Whether ``name`` (in ``output``'s folder) is a piece of ``output`` made by
    :func:`piece_path`."""
    parsed = parse_temp(name)
    return parsed is not None and _is_piece(output.stem, parsed[0])


def _is_piece(stem: str, final: str) -> bool:
    return re.fullmatch(re.escape(stem) + _PIECE, final) is not None


#: The frames one ffmpeg run of a contact sheet picked (see
#: :mod:`python_endpoints.jobs.thumbnail`), by the final-like name :func:`sheet_piece_path`
#: gives them: ``<name>.pick00.nut``. Scratch that nothing resumes from: unlike a re-encode's
#: pieces they go with their run's other temporary files, however the run ended.
_SHEET_PIECE = r"\.pick\d{2,3}\.nut"  # up to 100 runs and a decode


def sheet_piece_path(output: Path, part: str, run: int) -> Path:
    """Where run ``part`` of a contact sheet ``output`` writes the frames its ``run``-th ffmpeg
    run picked: ``.<name>.pick00.<part>.fredica-part.nut`` next to it (the output's whole
    name: ``movie.jpg`` and a transcode's ``movie.mp4`` never share a piece's name)."""
    return temp_path(output.with_name(f"{output.name}.pick{run:02d}.nut"), part)


def _is_sheet_piece(name: str, final: str) -> bool:
    return re.fullmatch(re.escape(name) + _SHEET_PIECE, final) is not None


def resumed_pieces(resume: object) -> set[str]:
    """The file names a checkpoint with pieces (``params["resume"]``: a segmented re-encode's,
    DIARIZE's) lists: the pieces a resumed attempt reuses, which no sweep may remove."""
    if not isinstance(resume, Mapping):
        return set()
    entries = resume.get("segments")
    listed = [*(entries if isinstance(entries, list) else []), resume.get("rest")]
    return {
        e["file"]
        for e in listed
        if isinstance(e, Mapping)
        and isinstance(e.get("file"), str)
        and "/" not in e["file"]
        and "\\" not in e["file"]
    }


def sidecar_path(final: Path) -> Path:
    """The sidecar of an output: ``dir/.name.fredica.json``."""
    return final.with_name(f".{final.name}{SIDECAR_SUFFIX}")


_LANGUAGE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")


def subtitle_path(output_dir: Path, stem: str, index: int, language: str | None, fmt: str) -> Path:
    """``<output_dir>/<stem>.<stream index>[.<language>].<fmt>``; a language tag that is not a
    plain code (``und``, or odd characters) is left out."""
    parts = [stem, str(index)]
    if language and language.lower() != "und" and _LANGUAGE.match(language):
        parts.append(language)
    return output_dir / ".".join([*parts, fmt])


def caption_path(output_dir: Path, stem: str, index: int, fmt: str) -> Path:
    """Where the closed captions carried in video stream ``index`` go:
    ``<output_dir>/<stem>.<stream index>.cc.<fmt>`` (``cc`` where a subtitle stream's file
    has its language)."""
    return output_dir / f"{stem}.{index}.cc.{fmt}"


#: What EXPORT_SUBTITLES writes, by format. Never ``<stem>.transcript.json``: that is
#: TRANSCRIBE's output, the export's input.
EXPORT_NAMES = {
    "srt": "{stem}.srt",
    "vtt": "{stem}.vtt",
    "txt": "{stem}.transcript.txt",
    "json": "{stem}.segments.json",
    "md": "{stem}.transcript.md",
}


def export_path(output_dir: Path, stem: str, fmt: str) -> Path:
    """Where EXPORT_SUBTITLES writes ``fmt`` (see :data:`EXPORT_NAMES`)."""
    return output_dir / EXPORT_NAMES[fmt].format(stem=stem)


#: Jobs that write one file, ``params["output"]``, through :func:`temp_path`.
_ONE_OUTPUT = frozenset(
    {
        "TRANSCODE_MP4",
        "BURN_SUBTITLES",
        "ADD_SUBTITLE_TRACK",
        "DIARIZE",
        "EXTRACT_AUDIO",
        "ANALYZE",
        "TRANSCRIBE",
        "THUMBNAIL",
    }
)
#: Jobs that write ``params["output"]`` through temporary files of their own, named after the
#: output on purpose so that a retry resumes them (a download's ``.part``, yt-dlp's files).
_OWN_TEMPORARIES = frozenset({"DOWNLOAD", "DOWNLOAD_SITE"})


def _absolute(params: Mapping[str, Any], key: str) -> Path | None:
    # The params may not be validated yet (the server locks before the job validates them).
    value = params.get(key)
    return Path(value) if isinstance(value, str) and os.path.isabs(value) else None


def _stem(params: Mapping[str, Any]) -> str | None:
    stem = params.get("stem")
    if isinstance(stem, str) and stem and "/" not in stem and "\\" not in stem:
        return stem
    return None


def locked_paths(job: str, params: Mapping[str, Any]) -> list[Path]:
    """What a run of ``job`` with ``params`` writes, as the endpoints server locks it: the
    final paths known from the params. EXTRACT_SUBTITLES knows its files' names only once the
    input is probed: it locks ``<output_dir>/<stem>.*``, the name of all of them. Empty for a
    job that writes nothing or params that name no absolute path (the job refuses them)."""
    job = job_name(job)
    if job in _ONE_OUTPUT or job in _OWN_TEMPORARIES:
        output = _absolute(params, "output")
        return [] if output is None else [output]
    if job == "DOWNLOAD_MODEL":
        models_dir, name = _absolute(params, "models_dir"), params.get("name")
        if models_dir is None or not isinstance(name, str) or not name or "/" in name:
            return []
        return [models_dir / name]
    if job not in ("EXPORT_SUBTITLES", "EXTRACT_SUBTITLES", "TRANSLATE_SUBTITLES"):
        return []
    directory, stem = _absolute(params, "output_dir"), _stem(params)
    if directory is None or stem is None:
        return []
    if job == "EXPORT_SUBTITLES":
        return [export_path(directory, stem, fmt) for fmt in EXPORT_NAMES]
    if job == "TRANSLATE_SUBTITLES":
        lang = params.get("lang")
        if not isinstance(lang, str) or not _LANGUAGE.match(lang):
            return []
        return [directory / f"{stem}.{lang}.{fmt}" for fmt in ("srt", "vtt")]
    return [directory / f"{stem}.*"]


def _final_names(
    job: str, params: Mapping[str, Any], *, pieces: bool = True
) -> list[tuple[Path, Callable[[str], bool]]]:
    """Where ``job`` writes through :func:`temp_path`: (folder, whether a final name in it is
    one of the job's — an output or its sidecar; with ``pieces``, a piece of a segmented
    re-encode too)."""
    job = job_name(job)
    if job in _ONE_OUTPUT or job in ("EXPORT_SUBTITLES", "TRANSLATE_SUBTITLES"):
        wanted: dict[Path, set[str]] = {}
        stems: dict[Path, str] = {}
        sheets: dict[Path, str] = {}
        for final in locked_paths(job, params):
            wanted.setdefault(final.parent, set()).update({final.name, sidecar_path(final).name})
            if job in ("TRANSCODE_MP4", "BURN_SUBTITLES", "DIARIZE") and pieces:
                stems[final.parent] = final.stem
            if job == "THUMBNAIL":
                sheets[final.parent] = final.name
        return [
            (folder, _one_of(names, stems.get(folder), sheets.get(folder)))
            for folder, names in wanted.items()
        ]
    if job == "EXTRACT_SUBTITLES":
        directory, stem = _absolute(params, "output_dir"), _stem(params)
        if directory is None or stem is None:
            return []
        # <stem>.<stream index>[.<language>|.cc].<srt|vtt> (subtitle_path, caption_path), and
        # its sidecar.
        file = re.escape(stem) + r"\.\d+(\.[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*)?\.(srt|vtt)"
        pattern = re.compile(rf"^({file}|\.{file}{re.escape(SIDECAR_SUFFIX)})$")
        return [(directory, lambda name: pattern.match(name) is not None)]
    return []


def _one_of(names: set[str], stem: str | None, sheet: str | None = None) -> Callable[[str], bool]:
    """Whether a final name is one of ``names``, a piece of ``<stem>.mp4``, or frames picked
    for the contact sheet ``sheet``."""
    return lambda name: (
        name in names
        or (stem is not None and _is_piece(stem, name))
        or (sheet is not None and _is_sheet_piece(sheet, name))
    )


def _temporaries(
    job: str, params: Mapping[str, Any], keep: Callable[[str], bool], *, pieces: bool = True
) -> list[Path]:
    out = []
    for folder, is_final in _final_names(job, params, pieces=pieces):
        try:
            with os.scandir(folder) as entries:
                names = [e.name for e in entries if e.is_file(follow_symlinks=False)]
        except OSError:
            continue
        for name in names:
            parsed = parse_temp(name)
            if parsed is not None and is_final(parsed[0]) and keep(parsed[1]):
                out.append(folder / name)
    return sorted(out)


def partial_outputs(job: str, params: Mapping[str, Any], *, keep_pieces: bool = True) -> list[Path]:
    """The temporary files this run of ``job`` left — those of its part id
    (``params["part_id"]``) only, never another attempt's: for the endpoint to remove after a
    cancel or a crash (the child that knew them is dead by then). The pieces (a segmented
    re-encode's, DIARIZE's) stay unless ``keep_pieces`` is False (the user cancelled: nothing
    will resume from them; then the pieces this run took over from its checkpoint go too): a
    next attempt resumes from them (and the sweep before it removes those its checkpoint does
    not list)."""
    part = params.get(PART_ID)
    if not isinstance(part, str) or not _PART_ID.match(part):
        return []
    if keep_pieces:
        return _temporaries(job, params, part.__eq__, pieces=False)
    taken_over = resumed_pieces(params.get("resume"))
    others = _temporaries(job, params, lambda other: other != part)
    return _temporaries(job, params, part.__eq__) + [p for p in others if p.name in taken_over]


def leftover_parts(job: str, params: Mapping[str, Any]) -> list[Path]:
    """The temporary files of ``job``'s outputs made by any other run than this one (of
    another part id). Only for a caller that holds the outputs' lock, before the job starts:
    then no other run is writing them, and these are what a crashed attempt left. The pieces a
    checkpoint lists (``params["resume"]``) are spared: the job resumes
    from them."""
    own = params.get(PART_ID)
    kept = resumed_pieces(params.get("resume"))
    return [
        path
        for path in _temporaries(job, params, lambda part: part != own)
        if path.name not in kept
    ]


def remove_quietly(path: Path) -> None:
    """Remove a file if it is there."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def fsync_file(path: Path) -> None:
    """Flush a file's data to the disk (a rename alone may land before the data does)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flush a folder (a file created or renamed in it is durable once it is)."""
    _fsync_dir(path)


def _fsync_dir(path: Path) -> None:
    # A rename is durable once its directory is: POSIX only (Windows cannot open a directory,
    # and NTFS journals the rename itself).
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit(temp: Path, final: Path) -> None:
    """Put a verified temporary file in place: flush it, rename it over ``final``, flush the
    directory. After a crash the final path holds the old file or the whole new one.

    On POSIX the folder is opened without following a link (``O_NOFOLLOW``) and the rename is
    made relative to it: a folder replaced by a link while the job ran (to lead its output
    out of the folders the server may write to) is refused, and nothing is put there."""
    fsync_file(temp)
    if os.name != "posix" or temp.parent != final.parent:
        os.replace(temp, final)
        _fsync_dir(final.parent)
        return
    try:
        folder = os.open(final.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        raise JobFailed(
            f"the output folder {final.parent} was replaced by a link while the job ran: "
            "nothing is put there",
            ErrorType.PAYLOAD_ERROR,
        ) from None
    try:
        os.replace(temp.name, final.name, src_dir_fd=folder, dst_dir_fd=folder)
        with contextlib.suppress(OSError):
            os.fsync(folder)
    finally:
        os.close(folder)


def job_name(job: str) -> str:
    """The task type's name, given it or the endpoint's (``transcode_mp4``)."""
    return job.upper()


def relevant_params(job: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The params that shape ``job``'s output (:data:`RELEVANT_PARAMS`), taken from validated
    ``params``: every one of them is there."""
    return {key: params[key] for key in RELEVANT_PARAMS.get(job_name(job), ())}


def _stat(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _input_key(input: Path) -> str:
    return os.path.normcase(os.path.abspath(input))


def write_sidecar(output: Path, input: Path, job: str, params: Mapping[str, Any]) -> Path:
    """Record what ``output`` was made from (after it was put in place), ``params`` being the
    validated params the job ran with. Atomic."""
    record = {
        "version": SIDECAR_VERSION,
        "job": job_name(job),
        "output": {"name": output.name, **_stat(output)},
        "input": {"path": _input_key(input), **_stat(input)},
        "params": relevant_params(job, params),
    }
    path = sidecar_path(output)
    temp = temp_path(path, part_id(params))
    with open(temp, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, path)
    return path


def output_is_current(
    output: Path | str, input: Path | str, job: str, params: Mapping[str, Any]
) -> bool:
    """Whether ``output`` is what ``job`` (the task type or the endpoint's name) would make of
    ``input`` with ``params`` (validated) now: its sidecar exists, and the output's and the
    input's sizes and mtimes, the job and the params that shape the output are what it
    recorded. Stats only: cheap on any size of media."""
    output, input = Path(output), Path(input)
    try:
        with open(sidecar_path(output), encoding="utf-8") as f:
            record = json.load(f)
        return bool(
            record.get("version") == SIDECAR_VERSION
            and record.get("job") == job_name(job)
            and record.get("output") == {"name": output.name, **_stat(output)}
            and record.get("input") == {"path": _input_key(input), **_stat(input)}
            and record.get("params") == relevant_params(job, params)
        )
    except (OSError, ValueError, AttributeError):
        return False


def sidecar_stamp(output: Path | str) -> tuple[int, int, int] | None:
    """The sidecar's inode, size and mtime (None without one): when they change, a run put a
    new output in place (a sidecar is replaced, never rewritten in place)."""
    try:
        st = sidecar_path(Path(output)).stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Translate a file system error while writing ``path`` (an output or its folder), once,
    here: ``NO_SPACE`` for a full disk, ``IO_ERROR`` otherwise."""
    try:
        yield
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise JobFailed(
                f"the disk is full (writing {path}); free some space, then retry",
                ErrorType.NO_SPACE,
            ) from exc
        raise JobFailed(
            f"cannot write {path}: {exc.strerror or exc}; check that the folder exists and is "
            "writable, then retry",
            ErrorType.IO_ERROR,
        ) from exc
