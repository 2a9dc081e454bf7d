"""What a PCM WAV file's header says, read without a demuxer.

ffmpeg writes EXTRACT_AUDIO's WAV as RIFF: a ``fmt `` chunk (format tag, channels, rate, bits),
maybe a ``LIST`` of tags, then ``data``; it writes the sizes last, once it knows them. Reading
those few bytes tells what opening the file with PyAV tells of it — streams, rate, channels,
duration — in microseconds rather than the ~1.5 ms of an ``av.open`` (a folder of short voice
memos verifies one per file). Anything else than a complete PCM WAV is an error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WavError", "WavHeader", "parse", "read"]

#: Enough for the chunks before ``data`` as ffmpeg writes them (tags included).
_HEAD = 64 * 1024
_PCM, _EXTENSIBLE = 0x0001, 0xFFFE


class WavError(ValueError):
    """Not a complete PCM WAV file: what is wrong with it."""


@dataclass(frozen=True, slots=True)
class WavHeader:
    channels: int
    sample_rate: int
    bits: int
    #: Bytes of samples the ``data`` chunk holds.
    data_bytes: int

    @property
    def duration(self) -> float:
        return self.data_bytes / (self.channels * self.bits // 8) / self.sample_rate


def read(path: Path) -> WavHeader:
    """The header of the WAV file at ``path`` (:class:`WavError` when it is not one, or is
    cut short)."""
    with open(path, "rb") as f:
        head = f.read(_HEAD)
        size = f.seek(0, 2)
    return parse(head, size)


def parse(head: bytes, size: int) -> WavHeader:
    """The header in ``head``, the first bytes of a file of ``size`` bytes."""
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        raise WavError("it is not a RIFF WAVE file")
    fmt: tuple[int, int, int, int] | None = None
    at = 12
    while at + 8 <= len(head):
        kind, length = head[at : at + 4], struct.unpack_from("<I", head, at + 4)[0]
        body = at + 8
        if kind == b"fmt ":
            if length < 16 or body + 16 > len(head):
                raise WavError("its format chunk is cut short")
            tag, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", head, body)
            fmt = (tag, channels, rate, bits)
        elif kind == b"data":
            if fmt is None:
                raise WavError("its samples come before their format")
            tag, channels, rate, bits = fmt
            if tag not in (_PCM, _EXTENSIBLE) or not channels or not rate or bits % 8 or not bits:
                raise WavError(f"it is not PCM (format {tag:#x}, {bits} bits)")
            if body + length > size:
                raise WavError(f"it holds {size - body} bytes of samples of the {length} it says")
            if length % (channels * bits // 8):
                raise WavError("its samples end part-way through a frame")
            return WavHeader(channels, rate, bits, length)
        at = body + length + (length & 1)  # chunks are padded to an even size
    raise WavError("it has no samples chunk")
