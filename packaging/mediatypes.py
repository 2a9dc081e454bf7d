"""The media types Fredica opens, as one list that every installer derives from.

A file manager offers "Open with Fredica" only for the types an installer declares, and
each system names a type its own way: Linux desktops by MIME type (the ``.desktop`` file's
``MimeType`` line), Windows by file extension (``HKCU\\Software\\Classes\\.mp4``), macOS by
Uniform Type Identifier (``public.mpeg-4`` in ``Info.plist``). Keeping the three in one table
means a format added here reaches every installer, and a test holds the table to the
extensions the library imports (``fredica_app.library.fingerprint.MEDIA_EXTENSIONS``).

Pure data and pure functions: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["video", "audio"]


@dataclass(frozen=True, slots=True)
class MediaType:
    """One format: its MIME type, the extensions of its files, and its macOS UTI.

    ``aliases`` are further MIME types that shared-mime-info gives the same files (an
    ``.ogg`` file with Vorbis in it is ``audio/x-vorbis+ogg``, not ``audio/ogg``): a desktop
    entry must name them too, or the file manager does not offer Fredica for them.

    ``uti_by_system`` is True when macOS declares the UTI itself (a documented ``UTType``
    constant). The others are third-party identifiers that the app must import
    (``UTImportedTypeDeclarations``), with the extensions and MIME type that map files to
    them; where the system or another app also declares one, that declaration wins, so
    importing it is harmless.
    """

    mime: str
    extensions: tuple[str, ...]
    kind: Kind
    uti: str
    uti_by_system: bool
    description: str
    aliases: tuple[str, ...] = ()

    @property
    def mime_types(self) -> tuple[str, ...]:
        return (self.mime, *self.aliases)


def _t(
    mime: str,
    extensions: str,
    kind: Kind,
    uti: str,
    description: str,
    *,
    system: bool,
    aliases: tuple[str, ...] = (),
) -> MediaType:
    return MediaType(mime, tuple(extensions.split()), kind, uti, system, description, aliases)


#: Video first, then audio; inside each, the order of the ``.desktop`` file's MimeType line.
MEDIA_TYPES: tuple[MediaType, ...] = (
    _t("video/mp4", ".mp4", "video", "public.mpeg-4", "MPEG-4 video", system=True),
    _t("video/x-m4v", ".m4v", "video", "com.apple.m4v-video", "M4V video", system=True),
    _t("video/x-matroska", ".mkv", "video", "org.matroska.mkv", "Matroska video", system=False),
    _t("video/webm", ".webm", "video", "org.webmproject.webm", "WebM video", system=False),
    _t("video/quicktime", ".mov", "video", "com.apple.quicktime-movie", "QuickTime movie",
       system=True),
    _t("video/x-msvideo", ".avi", "video", "public.avi", "AVI video", system=True),
    _t("video/x-ms-wmv", ".wmv", "video", "com.microsoft.windows-media-wmv",
       "Windows Media video", system=False),
    _t("video/x-flv", ".flv", "video", "com.adobe.flash.video", "Flash video", system=False),
    _t("video/mpeg", ".mpg .mpeg", "video", "public.mpeg", "MPEG video", system=True),
    _t("video/mp2t", ".ts .m2ts .mts", "video", "public.mpeg-2-transport-stream",
       "MPEG-2 transport stream", system=True),
    _t("video/3gpp", ".3gp", "video", "public.3gpp", "3GPP video", system=True),
    _t("video/ogg", ".ogv", "video", "org.xiph.ogv", "Ogg video", system=False),
    _t("audio/mpeg", ".mp3", "audio", "public.mp3", "MP3 audio", system=True),
    _t("audio/mp4", ".m4a", "audio", "com.apple.m4a-audio", "MPEG-4 audio", system=True),
    _t("audio/aac", ".aac", "audio", "public.aac-audio", "AAC audio", system=False),
    _t("audio/x-wav", ".wav", "audio", "com.microsoft.waveform-audio", "WAVE audio",
       system=True),
    _t("audio/flac", ".flac", "audio", "org.xiph.flac", "FLAC audio", system=False),
    _t("audio/ogg", ".ogg", "audio", "org.xiph.ogg-audio", "Ogg audio", system=False,
       aliases=("audio/x-vorbis+ogg",)),
    _t("audio/x-opus+ogg", ".opus", "audio", "org.xiph.opus", "Opus audio", system=False),
    _t("audio/x-ms-wma", ".wma", "audio", "com.microsoft.windows-media-wma",
       "Windows Media audio", system=False),
    _t("audio/x-aiff", ".aiff .aif", "audio", "public.aiff-audio", "AIFF audio", system=True),
)  # fmt: skip


def of_kind(kind: Kind) -> tuple[MediaType, ...]:
    return tuple(t for t in MEDIA_TYPES if t.kind == kind)


def extensions(kind: Kind | None = None) -> tuple[str, ...]:
    """Every extension (``.mp4``), in table order; of one kind if given."""
    chosen = MEDIA_TYPES if kind is None else of_kind(kind)
    return tuple(ext for t in chosen for ext in t.extensions)


def desktop_mime_types() -> tuple[str, ...]:
    """The MIME types a desktop entry declares, aliases included, in table order."""
    return tuple(mime for t in MEDIA_TYPES for mime in t.mime_types)


def desktop_mime_line() -> str:
    """The value of the ``.desktop`` file's ``MimeType`` key (``;``-terminated list)."""
    return "".join(f"{mime};" for mime in desktop_mime_types())
