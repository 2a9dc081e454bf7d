"""Bringing media into the library: files, folders (recursively), URLs.

Media stay where the user keeps them; a material's outputs go to its own folder under the
library directory, named after its title so that a person finds them.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from fredica_app.errors import MediaImportError
from fredica_app.library.fingerprint import fingerprint, is_media_name, is_url, kind_from_name
from fredica_app.library.records import MaterialRecord
from fredica_app.library.store import LibraryStore, NewMaterial


@dataclass
class ImportReport:
    added: list[MaterialRecord] = field(default_factory=list)
    #: Already in the library (same fingerprint or URL): the existing material.
    existing: list[MaterialRecord] = field(default_factory=list)
    #: Files in a folder that were not media, by extension.
    skipped: list[Path] = field(default_factory=list)
    #: Folders given that held no media file (none at all, or only files skipped).
    empty_folders: list[Path] = field(default_factory=list)

    @property
    def materials(self) -> list[MaterialRecord]:
        return self.added + self.existing


def safe_name(text: str, limit: int = 80) -> str:
    """A file name any OS accepts, readable: letters, digits, ``-_.`` and spaces."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r'[<>:"/\\|?*\x00-\x1f]', "_", text).strip(" .")
    return (text[:limit].rstrip(" .") or "untitled").replace(" ", "_")


def material_dir(library_dir: Path, material: MaterialRecord) -> Path:
    """Where a material's outputs go: ``<library>/<title>-<id8>/``; a URL material's is the
    folder its download was put in at import (``<folder>/source/<file>``)."""
    if material.is_url and material.local_path:
        source = Path(material.local_path).parent
        if source.name == "source":
            return source.parent
    return library_dir / f"{safe_name(material.title)}-{material.id[:8]}"


def material_stem(material: MaterialRecord) -> str:
    """The stem of a material's output files: its file-name-safe title, or for a URL material
    the stem of its downloaded file (the title of a URL names its host too)."""
    if material.is_url and material.local_path:
        return Path(material.local_path).stem
    return safe_name(material.title)


def _host(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


def _last_segment(url: str) -> str:
    return unquote(PurePosixPath(urlsplit(url).path).name)


def url_title(url: str) -> str:
    """A URL's title for a person: its last path segment and host, ``talk.mp4 (example.org)``,
    or its host alone for a bare one, ``127.0.0.1:8765``."""
    name = _last_segment(url)
    return f"{name} ({_host(url)})" if name else _host(url)


def url_file_name(url: str) -> str:
    """The file a URL is downloaded to: its last path segment, file-name-safe, or its host
    for a bare one; a page (no media extension) is downloaded by yt-dlp into Matroska, which
    holds anything."""
    name = _last_segment(url)
    if not name:
        return f"{safe_name(_host(url))}.mkv"
    stem = safe_name(PurePosixPath(name).stem or name)
    return (
        f"{stem}{PurePosixPath(name).suffix.lower()}"
        if is_media_name(Path(name))
        else f"{stem}.mkv"
    )


class Importer:
    def __init__(self, store: LibraryStore, library_dir: Path) -> None:
        self.store = store
        self.library_dir = library_dir

    def import_items(self, items: list[str]) -> ImportReport:
        report = ImportReport()
        for item in items:
            if is_url(item):
                self._import_url(item, report)
            elif "://" in item:
                raise MediaImportError(f"{item}: only http and https URLs can be imported")
            else:
                self._import_path(Path(item).expanduser(), report)
        return report

    def _import_url(self, url: str, report: ImportReport) -> None:
        parts = urlsplit(url)
        if not parts.hostname:
            raise MediaImportError(f"{url}: not a valid URL (no host)")
        existing = self.store.find_by_source(url)
        if existing is not None:
            report.existing.append(existing)
            return
        material_id = str(uuid.uuid4())
        filename = Path(url_file_name(url))
        # Downloaded into the material's folder, apart from what is made of it (an MP4 of an
        # MP4 must not be written over its source).
        folder = self.library_dir / f"{filename.stem}-{material_id[:8]}" / "source"
        report.added.append(
            self.store.add(
                material_id=material_id,
                source=url,
                title=url_title(url),
                local_path=str(folder / filename),
                # A page's kind is unknown until PROBE has seen what was downloaded.
                kind=kind_from_name(Path(_last_segment(url))),
            )
        )

    def _import_path(self, path: Path, report: ImportReport) -> None:
        try:
            path = path.resolve(strict=True)
        except (FileNotFoundError, RuntimeError):
            raise MediaImportError(f"{path}: no such file or folder") from None
        if path.is_dir():
            files: list[Path] = []
            for f in _walk(path):
                (files if is_media_name(f) else report.skipped).append(f)
            if not files:
                report.empty_folders.append(path)
        elif path.is_file():
            files = [path]  # named explicitly: PROBE decides whether it is media
        else:
            raise MediaImportError(f"{path}: not a regular file or folder")
        self._import_files(files, report)

    def _import_files(self, files: list[Path], report: ImportReport) -> None:
        prints: dict[Path, str] = {}
        for f in files:
            try:
                prints[f] = fingerprint(f)
            except PermissionError:
                raise MediaImportError(f"{f}: permission denied (cannot read it)") from None
        known = self.store.find_by_fingerprints(list(prints.values()))
        # The new ones in one transaction (one commit for a folder); a second file with the
        # fingerprint of a new one (a copy beside it) is that material, as before.
        new: dict[str, NewMaterial] = {}
        for f, fp in prints.items():
            if fp not in known and fp not in new:
                new[fp] = NewMaterial(
                    source=str(f),
                    title=f.stem,
                    local_path=str(f),
                    kind=kind_from_name(f),
                    size=f.stat().st_size,
                    fingerprint=fp,
                )
        added = dict(zip(new, self.store.add_all(list(new.values())), strict=True))
        for fp in prints.values():
            if fp in known:
                report.existing.append(known[fp])
            else:
                report.added.append(added[fp])
                known[fp] = added[fp]  # a later copy of it is existing


def _walk(root: Path) -> Iterator[Path]:
    """Files under ``root``, sorted, hidden files and folders skipped, symlinked folders not
    followed (no loops)."""
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry)
        elif entry.is_file():
            yield entry
