"""The hardware encoders an ffmpeg offers, read from its ``-encoders`` listing (the settings
page's "Detect" button).

``ffmpeg -hide_banner -encoders`` prints a legend, a line of dashes, then one line per encoder:
six flag characters (the first ``V``, ``A`` or ``S``), the name, a description that may end
with ``(codec NAME)``. A *hardware* encoder is one whose name has a part (between ``_``) naming
a hardware API: ``h264_nvenc``, ``hevc_vaapi``, ``av1_qsv``, ``nvenc_h264`` (older builds).

Being listed means ffmpeg was built with it, not that this machine has the GPU and driver it
needs: a trial encode tells that (``fredica doctor``, and TRANSCODE_MP4 before it uses one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: The hardware APIs, as they appear in encoder names, and what to call them; in the order
#: they are listed.
BACKENDS: dict[str, str] = {
    "nvenc": "NVIDIA NVENC",
    "qsv": "Intel Quick Sync",
    "vaapi": "VA-API",
    "videotoolbox": "Apple VideoToolbox",
    "amf": "AMD AMF",
    "v4l2m2m": "V4L2 mem2mem",
    "vulkan": "Vulkan",
    "d3d12va": "Direct3D 12",
    "mf": "Media Foundation",
}

_CODEC = re.compile(r"\(codec ([^)\s]+)\)\s*$")
_VERSION = re.compile(r"^ffmpeg version (\S+)")


@dataclass(frozen=True, slots=True)
class Encoder:
    """One line of the listing."""

    name: str
    #: ``V`` (video), ``A`` (audio) or ``S`` (subtitle).
    kind: str
    description: str
    #: The codec it makes (``h264``): the description's ``(codec …)``, else the name's part
    #: before the first ``_``.
    codec: str
    #: The key of :data:`BACKENDS` for a hardware encoder, None for a software one.
    backend: str | None


def parse_encoders(text: str) -> list[Encoder]:
    """Every encoder of an ``-encoders`` listing, in its order (nothing before the line of
    dashes: the legend's lines look like encoders)."""
    found: list[Encoder] = []
    listing = False
    for line in text.splitlines():
        parts = line.split(None, 2)
        if not listing:
            listing = bool(parts) and set(parts[0]) == {"-"}
            continue
        if len(parts) < 2 or len(parts[0]) != 6 or parts[0][0] not in "VAS":
            continue
        name = parts[1]
        description = parts[2].strip() if len(parts) == 3 else ""
        codec = _CODEC.search(description)
        found.append(
            Encoder(
                name=name,
                kind=parts[0][0],
                description=description,
                codec=codec.group(1) if codec else name.split("_", 1)[0],
                backend=backend_of(name),
            )
        )
    return found


def backend_of(name: str) -> str | None:
    """The hardware API an encoder's name says it uses (a key of :data:`BACKENDS`), if any."""
    for part in name.split("_"):
        if part in BACKENDS:
            return part
    return None


def hardware_encoders(text: str) -> list[Encoder]:
    """The hardware encoders of an ``-encoders`` listing."""
    return [e for e in parse_encoders(text) if e.backend is not None]


def by_backend(encoders: Iterable[Encoder]) -> list[tuple[str, list[str]]]:
    """``[(API's name, [encoder names])]`` for the hardware encoders among ``encoders``, the
    APIs in :data:`BACKENDS`' order, each one's encoders sorted."""
    groups: dict[str, list[str]] = {}
    for encoder in encoders:
        if encoder.backend is not None:
            groups.setdefault(encoder.backend, []).append(encoder.name)
    return [(label, sorted(groups[key])) for key, label in BACKENDS.items() if key in groups]


def parse_version(text: str) -> str | None:
    """The version in ``ffmpeg -version``'s first line (``7.1``, ``n6.0``,
    ``2024-05-01-git-…``), if it has one."""
    lines = text.strip().splitlines()
    match = _VERSION.match(lines[0]) if lines else None
    return match.group(1) if match else None
