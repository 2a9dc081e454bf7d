"""Where media jobs write, and how they put an output in place.

An output is written to a temporary name next to its final path, in the same directory (so
that the final rename is atomic), named deterministically so that a retry after a crash
overwrites what the crashed attempt left: ``out.mp4`` is written as
``.out.fredica-part.mp4``. Once verified it is fsync'd and renamed into place, and a sidecar
``.out.mp4.fredica.json`` records what it was made from (sizes and mtimes of the output and
the input, the job, the params that shape the output). :func:`output_is_current` compares that
with the files as they are now — stats only, never a hash of the media — so that the engine can
skip a task whose output is already there.

Standard library only: the endpoint (in the server) and the job (in its child) both use it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from python_endpoints.child import JobFailed

PART_MARK = ".fredica-part"
SIDECAR_SUFFIX = ".fredica.json"
SIDECAR_VERSION = 1

#: The params that shape each job's output, with their defaults (those of
#: :mod:`python_endpoints.params`, which a job's child cannot import; a test keeps them equal):
#: a payload stored without its defaults must compare equal to the validated params the job
#: ran with. Others (the ffmpeg binary, the space reserve) do not shape the output.
RELEVANT_PARAMS: dict[str, dict[str, Any]] = {
    "TRANSCODE_MP4": {"mode": "auto", "hardware": True, "crf": 23, "preset": "veryfast"},
    "EXTRACT_AUDIO": {"format": "wav", "sample_rate": 16000, "channels": 1},
    "EXTRACT_SUBTITLES": {},  # a file's name says its stream and its format
}


def temp_path(final: Path) -> Path:
    """The temporary name an output is written to: ``dir/.stem.fredica-part.ext``."""
    return final.with_name(f".{final.stem}{PART_MARK}{final.suffix}")


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


#: What EXPORT_SUBTITLES writes, by format. Never ``<stem>.transcript.json``: that is
#: TRANSCRIBE's output, the export's input.
EXPORT_NAMES = {
    "srt": "{stem}.srt",
    "vtt": "{stem}.vtt",
    "txt": "{stem}.transcript.txt",
    "json": "{stem}.segments.json",
}


def export_path(output_dir: Path, stem: str, fmt: str) -> Path:
    """Where EXPORT_SUBTITLES writes ``fmt`` (see :data:`EXPORT_NAMES`)."""
    return output_dir / EXPORT_NAMES[fmt].format(stem=stem)


def partial_outputs(job: str, params: Mapping[str, Any]) -> list[Path]:
    """The temporary files a run of ``job`` with ``params`` may have left (for the endpoint to
    remove after a cancel or a crash: the child that knew them is dead by then)."""
    job = job_name(job)
    try:
        if job in ("TRANSCODE_MP4", "EXTRACT_AUDIO", "ANALYZE"):
            return [temp_path(Path(params["output"]))]
        if job == "EXTRACT_SUBTITLES":
            return _subtitle_parts(Path(params["output_dir"]), str(params["stem"]))
        if job == "EXPORT_SUBTITLES":
            directory, stem = Path(params["output_dir"]), str(params["stem"])
            return [temp_path(export_path(directory, stem, fmt)) for fmt in EXPORT_NAMES]
    except (KeyError, TypeError):
        pass
    return []


def _subtitle_parts(output_dir: Path, stem: str) -> list[Path]:
    # Stream indexes are only known once the input is probed: find what matches the pattern.
    prefix = f".{stem}."
    try:
        with os.scandir(output_dir) as entries:
            names = [e.name for e in entries if e.is_file(follow_symlinks=False)]
    except OSError:
        return []
    out = []
    for name in names:
        rest = name[len(prefix) :] if name.startswith(prefix) else ""
        index, _, tail = rest.partition(".")
        if index.isdigit() and PART_MARK + "." in "." + tail:
            out.append(output_dir / name)
    return out


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
    directory. After a crash the final path holds the old file or the whole new one."""
    fsync_file(temp)
    os.replace(temp, final)
    _fsync_dir(final.parent)


def job_name(job: str) -> str:
    """The task type's name, given it or the endpoint's (``transcode_mp4``)."""
    return job.upper()


def relevant_params(job: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The params that shape ``job``'s output, defaults filled in."""
    defaults = RELEVANT_PARAMS.get(job_name(job), {})
    return {
        key: default if params.get(key) is None else params[key]
        for key, default in defaults.items()
    }


def _stat(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _input_key(input: Path) -> str:
    return os.path.normcase(os.path.abspath(input))


def write_sidecar(output: Path, input: Path, job: str, params: Mapping[str, Any]) -> Path:
    """Record what ``output`` was made from (after it was put in place). Atomic."""
    record = {
        "version": SIDECAR_VERSION,
        "job": job_name(job),
        "output": {"name": output.name, **_stat(output)},
        "input": {"path": _input_key(input), **_stat(input)},
        "params": relevant_params(job, params),
    }
    path = sidecar_path(output)
    temp = temp_path(path)
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
    ``input`` with ``params`` now: its sidecar exists, and the output's and the input's sizes
    and mtimes, the job and the params that shape the output are what it recorded. Stats
    only: cheap on any size of media."""
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


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Translate a file system error while writing ``path`` (an output or its folder), once,
    here: ``NO_SPACE`` for a full disk, ``IO_ERROR`` otherwise."""
    try:
        yield
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise JobFailed(
                f"the disk is full (writing {path}); free some space, then retry", "NO_SPACE"
            ) from exc
        raise JobFailed(
            f"cannot write {path}: {exc.strerror or exc}; check that the folder exists and is "
            "writable, then retry",
            "IO_ERROR",
        ) from exc
