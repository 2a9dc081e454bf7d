"""``/tasks/download_model``: a Whisper model in CTranslate2 format (faster-whisper's), fetched
by name from a Hugging Face compatible server, and never half-installed.

::

    GET {base_url}/api/models/{repository}/tree/{revision}   the files: sizes, sha256 of LFS files
    GET {base_url}/{repository}/resolve/{revision}/{path}    each file (LFS ones redirect to a CDN)

Only the files faster-whisper loads are fetched (its own allow-list: ``config.json``,
``preprocessor_config.json``, ``model.bin``, ``tokenizer.json``, ``vocabulary.txt|json``);
README, .gitattributes and the rest are skipped. A repository without ``model.bin``,
``config.json``, ``tokenizer.json`` and a vocabulary is not a model faster-whisper can load
offline (without ``tokenizer.json`` it fetches one from the Hub; without a vocabulary
CTranslate2 refuses it): ``UNSUPPORTED_MEDIA`` before anything is written.

**On disk** (``<name>`` as given)::

    <models_dir>/.<name>.partial/   the files while they download: <path>.part, then <path>
                                    once verified (size; sha256 of LFS files, hashed while
                                    streaming; git blob id of the others; JSON files parse)
    <models_dir>/<name>/            the installed model, with fredica-model.json (the manifest)
    <models_dir>/.<name>.old/       the model it replaces, for the instant of the swap

Each file is one :class:`~python_endpoints.downloads.transfer.Transfer` (Range/If-Range resume,
pause,
fsync before a checkpoint). Once every file is verified the manifest is written, the partial
folder fsynced, then swapped in: a previous ``<name>`` is renamed aside, the new one renamed
in, the old one removed. ``<name>`` thus never holds a partial model; after a crash between
the two renames the next attempt puts the old one back first.

**Progress** (at most five frames a second): ``downloading model small: 120.0 MB of 464.0 MB,
12.3 MB/s, 28 s left``; ``extras``: ``bytes_done``, ``total``, ``speed``, ``eta``, ``file``,
``files_done``, ``files`` and, at most once a second (and at a pause or a failure that keeps
the files), ``checkpoint`` — a :class:`ModelResume`: the files complete and verified, and the
fsynced bytes of the current one with its validator. The engine hands it back as ``resume``.

**Errors**: the listing's 404 (or 401, which the Hub answers for a repository that does not
exist) ``HTTP_ERROR``; connection trouble, 5xx and a body cut short ``NETWORK_ERROR``; a file
whose size or hash is wrong ``VERIFY_FAILED`` (that file is removed); not a faster-whisper
model ``UNSUPPORTED_MEDIA``; the files do not fit on the disk ``NO_SPACE``; bad params, or a
``<name>`` that exists and is not a model ``PAYLOAD_ERROR``. The user's cancel, ``HTTP_ERROR``
and ``UNSUPPORTED_MEDIA`` of the listing remove the partial folder; other failures, a pause
and an interrupted stop (client gone, server closing) keep it for the next attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from python_endpoints.downloads.transfer import (
    CHECKPOINT_EVERY,
    MAX_REDIRECTS,
    PROGRESS_EVERY,
    DownloadFailed,
    Transfer,
    api_client,
    http_client,
    io_failure,
    network_failure,
    status_failure,
    sync_dir,
    until_cancelled,
    validated,
    what_is_kept,
)
from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs.httpfacts import SpeedMeter, eta, host_of, status_text
from python_endpoints.jobs.text import format_bytes, shown
from python_endpoints.params import DownloadParams, DownloadResume, ModelDownloadParams
from python_endpoints.serving.child import JobCancelled, JobFailed
from python_endpoints.serving.endpoint import Emit, LoopContext, LoopEndpoint
from python_endpoints.status import said

if TYPE_CHECKING:
    import httpx

#: What faster-whisper loads from a model folder (its ``download_model`` allow-list), in the
#: order they are fetched: the small files first, so that a wrong one fails fast.
MODEL_FILES = (
    "config.json",
    "preprocessor_config.json",
    "tokenizer.json",
    "vocabulary.json",
    "vocabulary.txt",
    "model.bin",
)
VOCABULARIES = ("vocabulary.txt", "vocabulary.json")
MANIFEST = "fredica-model.json"
MANIFEST_FORMAT = 1
#: A file listing is a few kB; more is not a listing.
MAX_LISTING_BYTES = 4 << 20
_REPOSITORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


# --- pure helpers ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RemoteFile:
    """One file of the listing."""

    path: str
    size: int
    #: An LFS file's sha256 (the Hub gives it); None for a file stored in git itself.
    sha256: str | None
    #: The git blob id of a file stored in git (sha1, or sha256 in a SHA-256 repository).
    blob: str | None


def parse_listing(data: Any) -> list[RemoteFile]:
    """The files of a tree listing (directories skipped). ValueError if it is not one."""
    if not isinstance(data, list):
        raise ValueError("not a list of files")
    files = []
    for entry in data:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise ValueError(f"not a file entry: {entry!r:.100}")
        if entry.get("type", "file") != "file":
            continue
        size, lfs = entry.get("size"), entry.get("lfs")
        if isinstance(lfs, dict):
            size = lfs.get("size", size)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"{entry['path']}: no size")
        if isinstance(lfs, dict):
            sha256, blob = _hex(lfs.get("oid"), 64), None
        else:
            sha256, blob = None, _hex(entry.get("oid"), 40) or _hex(entry.get("oid"), 64)
        files.append(RemoteFile(path=entry["path"], size=size, sha256=sha256, blob=blob))
    return files


def _hex(value: object, length: int) -> str | None:
    """``value`` in lower case when it is a hex digest of ``length`` digits, else None."""
    if not isinstance(value, str) or len(value) != length:
        return None
    value = value.lower()
    return value if all(c in "0123456789abcdef" for c in value) else None


def missing_files(files: Sequence[RemoteFile]) -> list[str]:
    """What a faster-whisper model lacks to load offline; empty when nothing."""
    names = {f.path for f in files}
    missing = [name for name in ("model.bin", "config.json", "tokenizer.json") if name not in names]
    if not names.intersection(VOCABULARIES):
        missing.append("vocabulary.txt or vocabulary.json")
    return missing


def model_files(files: Sequence[RemoteFile]) -> list[RemoteFile]:
    """The files to fetch, in :data:`MODEL_FILES` order."""
    by_path = {f.path: f for f in files}
    return [by_path[name] for name in MODEL_FILES if name in by_path]


def blob_hasher(file: RemoteFile) -> Any:
    """A hash that ends as the file's git blob id once fed its bytes; None when not known."""
    if file.blob is None:
        return None
    h = hashlib.sha1(usedforsecurity=False) if len(file.blob) == 40 else hashlib.sha256()
    h.update(b"blob %d\0" % file.size)
    return h


def listing_url(base_url: str, repository: str, revision: str) -> str:
    return f"{base_url.rstrip('/')}/api/models/{repository}/tree/{urllib.parse.quote(revision)}"


def file_url(base_url: str, repository: str, revision: str, path: str) -> str:
    return (
        f"{base_url.rstrip('/')}/{repository}/resolve/{urllib.parse.quote(revision)}/"
        f"{urllib.parse.quote(path)}"
    )


def model_status(name: str, done: int, total: int, speed: float, left: float | None) -> str:
    """``downloading model small: 120.0 MB of 464.0 MB, 12.3 MB/s, 28 s left``."""
    return status_text(done, total, speed, left, model=name)


# --- the checkpoint ----------------------------------------------------------------------------


class FileDone(BaseModel):
    """A file complete, verified and fsynced in the partial folder."""

    model_config = ConfigDict(extra="forbid")

    path: str
    size: int = Field(ge=0)
    sha256: str
    #: The listing's git blob id for a file stored in git (to tell whether it changed).
    blob: str | None = None


class FilePart(DownloadResume):
    """The file being downloaded: its fsynced bytes and validator (as a download's)."""

    path: str


class ModelResume(BaseModel):
    """A model download's checkpoint, given back as ``params["resume"]``."""

    model_config = ConfigDict(extra="forbid")

    repository: str
    revision: str
    done: list[FileDone] = Field(default_factory=list)
    current: FilePart | None = None


def parse_resume(value: dict[str, Any] | None, repository: str, revision: str) -> ModelResume:
    """The checkpoint to resume from; an empty one when there is none, when it is for another
    repository or revision, or when it cannot be read (an older shape): start over."""
    empty = ModelResume(repository=repository, revision=revision)
    if value is None:
        return empty
    try:
        resume = ModelResume.model_validate(value)
    except ValidationError:
        return empty
    if (resume.repository, resume.revision) != (repository, revision):
        return empty
    return resume


# --- one file ------------------------------------------------------------------------------------


class _ModelFile(Transfer):
    """One file of the model: a download into the partial folder, hashed as it streams,
    verified before it takes its name, reported as part of the whole model."""

    def __init__(self, params: DownloadParams, ctx: LoopContext, install: _Install) -> None:
        super().__init__(params, ctx)
        self.install = install
        self.remote = install.by_path[self.output.name]
        self._reset_hashes()

    def _reset_hashes(self) -> None:
        self.sha256 = hashlib.sha256()
        self.blob = blob_hasher(self.remote)

    def _hash(self, data: bytes | memoryview) -> None:
        self.sha256.update(data)
        if self.blob is not None:
            self.blob.update(data)

    def _hash_prefix(self, size: int) -> None:
        """Hash the bytes kept from an earlier attempt (in a thread: they can be gigabytes)."""
        with self.part.open("rb") as f:
            left = size
            while left > 0:
                data = f.read(min(left, 1 << 20))
                if not data:
                    break
                self._hash(data)
                left -= len(data)

    async def _started(self) -> None:
        if self.done:
            try:
                await asyncio.to_thread(self._hash_prefix, self.done)
            except OSError as exc:
                raise io_failure(exc, f"read {self.part}") from exc

    def _write(self, chunk: bytes) -> None:
        super()._write(chunk)
        self._hash(chunk)

    def _truncate(self) -> None:
        super()._truncate()
        self._reset_hashes()
        self.install.meter.reset()

    def _check_size(self, total: int | None) -> None:
        if total is not None and total != self.remote.size:
            raise self._wrong(
                f"the server sends {total} bytes, the listing says {self.remote.size}"
            )
        super()._check_size(total)

    def _too_large(self, size: int, *, so_far: bool) -> DownloadFailed:
        return self._wrong(f"the server sent more than the {self.remote.size} bytes listed")

    def _wrong(self, why: str) -> DownloadFailed:
        return DownloadFailed(
            f"{self.remote.path} of model {self.install.name} is not the file listed ({why}); "
            "it was removed: a retry downloads it again",
            ErrorType.VERIFY_FAILED,
            discard=True,
        )

    async def _finish(self) -> dict[str, Any]:
        remote = self.remote
        if self.done != remote.size:
            raise self._wrong(f"{self.done} bytes received, {remote.size} listed")
        digest = self.sha256.hexdigest()
        if remote.sha256 is not None and digest != remote.sha256:
            raise self._wrong(f"its sha256 is {digest}, the listing says {remote.sha256}")
        if self.blob is not None and self.blob.hexdigest() != remote.blob:
            raise self._wrong(f"its git blob id is {self.blob.hexdigest()}, not {remote.blob}")
        if remote.path.endswith(".json"):
            try:
                await asyncio.to_thread(lambda: json.loads(self.part.read_bytes()))
            except ValueError as exc:
                raise self._wrong(f"it is not valid JSON: {exc}") from exc
            except OSError as exc:
                raise io_failure(exc, f"read {self.part}") from exc
        return await super()._finish()  # fsync, then <path>.part -> <path>

    async def _checkpoint_now(self, text: str | None = None) -> None:
        self.install.force_next_report = True  # a pause or a failure: it must go out now
        await super()._checkpoint_now(text)

    async def _report(
        self, now: float, text: str | None, checkpoint: dict[str, Any] | None
    ) -> None:
        part = None if checkpoint is None else FilePart(path=self.remote.path, **checkpoint)
        await self.install.report(
            now, self.done, paused=text is not None and self.paused, part=part
        )

    @property
    def paused(self) -> bool:
        return not self.ctx.resume_event.is_set()

    async def _finished(self) -> None:
        pass  # the model reports as a whole


# --- the model -----------------------------------------------------------------------------------


def free_space(path: Path) -> int | None:
    """Free bytes on the disk of ``path``; None when it cannot be told."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def remove_tree(path: Path) -> None:
    """Remove a folder and what it holds (a link: the link only); nothing there is fine."""
    if path.is_symlink() or path.is_file():
        with contextlib.suppress(OSError):
            path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def is_model_dir(path: Path) -> bool:
    """Whether ``path`` is a model folder that may be replaced (never any other folder)."""
    return (path / MANIFEST).is_file() or (path / "model.bin").is_file()


class _Install:
    """One run of a model download: list, fetch each file, verify, swap in."""

    def __init__(self, params: ModelDownloadParams, ctx: LoopContext) -> None:
        self.params = params
        self.ctx = ctx
        self.name = params.name
        self.repository = params.repository.replace("{name}", params.name)
        if not _REPOSITORY.match(self.repository) or ".." in self.repository:
            raise JobFailed(
                f"invalid download_model params: repository: {self.repository!r} is not "
                "<owner>/<name>",
                ErrorType.PAYLOAD_ERROR,
            )
        self.models_dir = Path(params.models_dir)
        self.final = self.models_dir / self.name
        self.partial = self.models_dir / f".{self.name}.partial"
        self.old = self.models_dir / f".{self.name}.old"
        self.files: list[RemoteFile] = []
        self.by_path: dict[str, RemoteFile] = {}
        self.done: dict[str, FileDone] = {}
        self.total = 0
        self.resumed_from = 0
        self.meter = SpeedMeter()
        self.force_next_report = False
        self._bytes_before = 0  # of the files done
        self._current: RemoteFile | None = None
        self._transfer: Transfer | None = None  # of the current file
        self._pending: dict[str, Any] | None = None  # a checkpoint not sent yet
        self._last_progress = -math.inf
        self._last_checkpoint = -math.inf

    async def run(self) -> dict[str, Any]:
        self._check_target()
        base, proxy, timeout = self.params.base_url, self.params.proxy, self.params.timeout
        # The listing in the event loop; the files' bodies are read in threads (Transfer).
        async with api_client(base, proxy, timeout) as api:
            await self.ctx.report_progress(
                0.0, said("listing_model", model=self.name, host=host_of(base))
            )
            listed = await self._listing(api)
        missing = missing_files(listed)
        if missing:
            raise DownloadFailed(
                f"{self.repository} at {shown(base)} is not a faster-whisper model: it has no "
                f"{', '.join(missing)}; choose a CTranslate2 conversion (such as "
                "Systran/faster-whisper-<name>)",
                ErrorType.UNSUPPORTED_MEDIA,
                discard=True,
            )
        self.files = model_files(listed)
        self.by_path = {f.path: f for f in self.files}
        self.total = sum(f.size for f in self.files)
        current = self._prepare_partial()
        self._check_space()
        with http_client(base, proxy, timeout) as client:
            for remote in self.files:
                if remote.path not in self.done:
                    await self._wait_if_paused()
                    part = current if current is not None and current.path == remote.path else None
                    await self._fetch(client, remote, part)
        if self.ctx.cancel_event.is_set():
            raise JobCancelled
        await self.ctx.report_progress(100.0, said("installing_model", model=self.name))
        # From here on nothing awaits: a cancel cannot land between the swap and the result.
        self._install()
        return {
            "outputs": [str(self.final)],
            "name": self.name,
            "repository": self.repository,
            "revision": self.params.revision,
            "bytes": self.total,
            "files": len(self.files),
            "resumed_from": self.resumed_from,
        }

    # -- the folders --

    def _check_target(self) -> None:
        """Make the models folder; finish a swap a crash interrupted; never replace a folder
        that is not a model."""
        try:
            self.models_dir.mkdir(parents=True, exist_ok=True)
            if self.old.exists():
                if not self.final.exists():
                    os.replace(self.old, self.final)  # the crash came between the two renames
                else:
                    remove_tree(self.old)
        except OSError as exc:
            raise io_failure(exc, f"prepare {self.models_dir}") from exc
        if (self.final.exists() or self.final.is_symlink()) and not (
            self.final.is_dir() and is_model_dir(self.final)
        ):
            raise JobFailed(
                f"{self.final} exists and is not a Whisper model (no {MANIFEST} nor model.bin): "
                "move it away, or download the model to another models folder",
                ErrorType.PAYLOAD_ERROR,
            )

    def _prepare_partial(self) -> FilePart | None:
        """Keep what the checkpoint vouches for and still matches the listing; remove the rest.
        Returns the part to resume, if any."""
        resume = parse_resume(self.params.resume, self.repository, self.params.revision)
        keep: dict[str, FileDone] = {}
        current = resume.current
        try:
            for done in resume.done:
                remote = self.by_path.get(done.path)
                if remote is None or remote.size != done.size:
                    continue
                if remote.sha256 is not None and remote.sha256 != done.sha256:
                    continue
                if remote.blob != done.blob:  # a file in git: its id says whether it changed
                    continue
                path = self.partial / done.path
                if path.is_file() and path.stat().st_size == done.size:
                    keep[done.path] = done
            if current is not None and (current.path not in self.by_path or current.path in keep):
                current = None
            wanted = set(keep) | ({current.path + ".part"} if current is not None else set())
            self.partial.mkdir(exist_ok=True)
            for entry in self.partial.iterdir():
                if entry.name not in wanted:
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
        except OSError as exc:
            raise io_failure(exc, f"prepare {self.partial}") from exc
        self.done = keep
        self._bytes_before = self.resumed_from = sum(d.size for d in keep.values())
        return current

    def _check_space(self) -> None:
        needed = self.total - self._bytes_before
        free = free_space(self.models_dir)
        if free is not None and needed > free:
            raise DownloadFailed(
                f"not enough free space in {self.models_dir} for model {self.name}: "
                f"{format_bytes(needed)} needed, {format_bytes(free)} free; free some space, "
                "then retry the task",
                ErrorType.NO_SPACE,
            )

    def _install(self) -> None:
        """Write the manifest, then swap the verified folder in (every file is fsynced)."""
        manifest = {
            "format": MANIFEST_FORMAT,
            "name": self.name,
            "repository": self.repository,
            "revision": self.params.revision,
            "source": shown(self.params.base_url),
            "files": [
                {"path": f.path, "size": f.size, "sha256": self.done[f.path].sha256}
                for f in self.files
            ],
            "bytes": self.total,
            "installed_at": int(time.time()),
        }
        target = self.partial / MANIFEST
        temp = target.with_name(target.name + ".part")
        try:
            with temp.open("w", encoding="utf-8") as f:
                json.dump(manifest, f, indent=2)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, target)
            sync_dir(self.partial)
            had_old = self.final.exists()
            if had_old:
                os.replace(self.final, self.old)
            try:
                os.replace(self.partial, self.final)
            except OSError:
                if had_old:
                    os.replace(self.old, self.final)
                raise
            sync_dir(self.models_dir)
        except OSError as exc:
            raise io_failure(exc, f"install model {self.name} in {self.final}") from exc
        # The new model is in place: the old one is only in the way now.
        remove_tree(self.old)

    # -- HTTP --

    async def _listing(self, client: httpx.AsyncClient) -> list[RemoteFile]:
        import httpx

        url = listing_url(self.params.base_url, self.repository, self.params.revision)
        try:
            async with client.stream("GET", url) as response:
                status = response.status_code
                if status in (401, 404):
                    raise self._not_found(response.headers.get("x-error-code"))
                if status != 200:
                    raise status_failure(status, response.reason_phrase, url)
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_LISTING_BYTES:
                        raise ValueError("too long")
            return parse_listing(json.loads(body))
        except ValueError as exc:  # JSONDecodeError included
            raise DownloadFailed(
                f"{shown(url)} is not a Hugging Face file listing ({exc}): is base_url "
                f"{shown(self.params.base_url)} a Hugging Face compatible server?",
                ErrorType.HTTP_ERROR,
                discard=True,
            ) from exc
        except httpx.TooManyRedirects as exc:
            raise DownloadFailed(
                f"{shown(url)} redirects more than {MAX_REDIRECTS} times", ErrorType.HTTP_ERROR
            ) from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise DownloadFailed(
                f"{shown(url)} cannot be listed: {exc}", ErrorType.PAYLOAD_ERROR
            ) from exc
        except httpx.HTTPError as exc:
            raise network_failure(exc, url) from exc

    def _not_found(self, code: str | None) -> DownloadFailed:
        where = f"{shown(self.params.base_url)} ({self.repository})"
        if code == "RevisionNotFound":
            what = f"model {self.name} at {where} has no revision {self.params.revision!r}"
        else:
            what = f"no model named {self.name} at {where}"
        return DownloadFailed(
            f"{what}: check the model's name (tiny, base, small, medium, large-v3…), the "
            "repository and the revision",
            ErrorType.HTTP_ERROR,
            discard=True,
        )

    async def _fetch(self, client: httpx.Client, remote: RemoteFile, part: FilePart | None) -> None:
        params = DownloadParams(
            url=file_url(self.params.base_url, self.repository, self.params.revision, remote.path),
            output=str(self.partial / remote.path),
            proxy=self.params.proxy,
            max_bytes=remote.size or None,
            timeout=self.params.timeout,
            resume=None if part is None else DownloadResume(**part.model_dump(exclude={"path"})),
        )
        transfer = _ModelFile(params, self.ctx, self)
        self._current, self._transfer = remote, transfer
        try:
            await transfer.run(client)
        except DownloadFailed as exc:
            if exc.discard:
                with contextlib.suppress(OSError):
                    transfer.part.unlink(missing_ok=True)
                exc.discard = False  # that file alone was worthless: the others are kept
                # ...and the next attempt must know it has them.
                self._current, self._pending = None, self._checkpoint(None)
                self.force_next_report = True
                await self.report(time.monotonic(), 0, paused=False, part=None)
            raise
        self.resumed_from += transfer.resumed_from or 0
        self.done[remote.path] = FileDone(
            path=remote.path, size=remote.size, sha256=transfer.sha256.hexdigest(), blob=remote.blob
        )
        self._bytes_before += remote.size
        self._current = None
        self._pending = self._checkpoint(None)  # sent within the once-a-second limit

    def kept(self) -> str | None:
        """What the next attempt starts from, once this one failed keeping its folder: the
        files done, and the current one's bytes when they can be resumed."""
        part = self._transfer if self._current is not None else None
        current = part.done if part is not None and part.resumable else 0
        return what_is_kept(self._bytes_before + current, True)

    async def _wait_if_paused(self) -> None:
        if not self.ctx.resume_event.is_set():
            self.force_next_report = True
            await self.report(time.monotonic(), 0, paused=True, part=None)
            await self.ctx.wait_if_paused()

    # -- reporting --

    def _checkpoint(self, part: FilePart | None) -> dict[str, Any]:
        return ModelResume(
            repository=self.repository,
            revision=self.params.revision,
            done=list(self.done.values()),
            current=part,
        ).model_dump()

    async def report(
        self, now: float, current_bytes: int, *, paused: bool, part: FilePart | None
    ) -> None:
        """A progress frame for the whole model (``current_bytes``: of the file being
        fetched); ``part``: a new checkpoint of that file."""
        if part is not None:
            self._pending = self._checkpoint(part)
        force, self.force_next_report = self.force_next_report, False
        if not force and now - self._last_progress < PROGRESS_EVERY:
            return  # a pending checkpoint goes with a later frame
        self._last_progress = now
        done = self._bytes_before + current_bytes
        if paused:
            self.meter.reset()
            speed, left = 0.0, None
            text: str = said(
                "paused_at",
                done=format_bytes(done),
                total=format_bytes(self.total),
                model=self.name,
            )
        else:
            self.meter.add(now, done)
            speed = self.meter.speed()
            left = eta(done, self.total, speed)
            text = model_status(self.name, done, self.total, speed, left)
        extras: dict[str, Any] = {
            "bytes_done": done,
            "total": self.total,
            "speed": round(speed, 1),
            "eta": None if left is None else round(left, 1),
            "file": None if self._current is None else self._current.path,
            "files_done": len(self.done),
            "files": len(self.files),
        }
        if self._pending is not None and (force or now - self._last_checkpoint >= CHECKPOINT_EVERY):
            extras["checkpoint"], self._pending = self._pending, None
            self._last_checkpoint = now
        percent = round(100.0 * done / self.total, 2) if self.total else 0.0
        await self.ctx.report_progress(percent, text, extras=extras)


# --- the endpoint ------------------------------------------------------------------------------


class ModelDownloadEndpoint(LoopEndpoint):
    """Fetch a Whisper model by name into ``models_dir/<name>``
    (:class:`~python_endpoints.params.ModelDownloadParams`).

    Result: ``{"outputs": [model_dir], "name", "repository", "revision", "bytes": total size,
    "files": n, "resumed_from": bytes kept from earlier attempts}``.
    """

    def __init__(self, emit: Emit) -> None:
        super().__init__(emit)
        self._partial: Path | None = None
        self._discard = False

    def remove_partial_outputs(self) -> None:
        # The partial folder is kept for the next attempt unless cancelled or worthless.
        if self._partial is not None and self._discard:
            remove_tree(self._partial)

    async def cancel(self) -> None:
        # A disconnect or a shutdown is not the user's cancel: keep the files for the retry.
        self._discard = not self.interrupted
        self.ctx.cancel_event.set()
        self.ctx.resume_event.set()
        # The folder is removed once the job has stopped and closed its files.

    async def job(self, params: dict[str, Any], ctx: LoopContext) -> dict[str, Any]:
        # A second job for the same model waits in the server until this one has ended (its
        # output lock: models_dir/<name>), so the partial folder is this job's alone.
        install = _Install(validated(ModelDownloadParams, params, "download_model"), ctx)
        self._partial = install.partial
        try:
            return await until_cancelled(ctx, install.run())
        except DownloadFailed as exc:
            self._discard = self._discard or exc.discard
            exc.keeping(install.kept())
            raise
        finally:
            self.remove_partial_outputs()  # the server asks again: a no-op
