"""A mutational corpus of media: small valid clips cut, bit-flipped (seeded), given sizes no
file has, or made of thousands of streams. Pure: bytes in, bytes out (the clips themselves are
made by the tests with :func:`python_endpoints.jobs.sample.make_sample`).
"""

from __future__ import annotations

import random
import struct

#: Where a clip is cut: a few bytes, a share of it, all but its last byte.
CUTS = (1, 16, 0.01, 0.1, 0.5, 0.9, -1)


def truncations(name: str, clip: bytes) -> dict[str, bytes]:
    """``clip`` cut at each of :data:`CUTS`."""
    out = {}
    for cut in CUTS:
        end = cut if isinstance(cut, int) else int(len(clip) * cut)
        out[f"{name}-cut{cut}"] = clip[:end]
    return out


def flipped(clip: bytes, seed: int, *, share: float = 0.005, within: int | None = None) -> bytes:
    """``clip`` with a bit flipped in ``share`` of its bytes, at positions drawn from
    ``seed`` (among its first ``within`` bytes: its header, when given)."""
    data = bytearray(clip)
    draw = random.Random(seed)
    span = min(len(data), within or len(data))
    for _ in range(max(1, int(span * share))):
        data[draw.randrange(span)] ^= 1 << draw.randrange(8)
    return bytes(data)


def huge_matroska_segment(clip: bytes) -> bytes:
    """A Matroska clip whose Segment declares 2^56 - 2 bytes (the largest size that is not
    "unknown")."""
    data = bytearray(clip)
    at = data.index(b"\x18\x53\x80\x67") + 4  # the Segment's ID, then its size
    assert data[at] == 0x01, "ffmpeg writes the Segment's size on 8 bytes"
    data[at : at + 8] = b"\x01" + b"\xff" * 6 + b"\xfe"
    return bytes(data)


def mp4_boxes(clip: bytes) -> dict[bytes, int]:
    """The offset of each top-level box of an MP4."""
    offsets, at = {}, 0
    while at + 8 <= len(clip):
        size, kind = struct.unpack(">I4s", clip[at : at + 8])
        offsets[kind] = at
        if size < 8:
            break
        at += size
    return offsets


def huge_mp4_mdat(clip: bytes) -> bytes:
    """An MP4 whose media data box declares 2^62 bytes (a 64-bit size, written over the 8-byte
    ``free`` box ffmpeg puts before it, so no offset moves)."""
    boxes = mp4_boxes(clip)
    free, mdat = boxes[b"free"], boxes[b"mdat"]
    assert mdat == free + 8, "ffmpeg writes an 8-byte free box before the media data"
    data = bytearray(clip)
    data[free : mdat + 8] = struct.pack(">I4sQ", 1, b"mdat", 1 << 62)
    return bytes(data)


def huge_mp4_moov(clip: bytes) -> bytes:
    """An MP4 whose movie box declares 2^31 - 1 bytes."""
    data = bytearray(clip)
    at = mp4_boxes(clip)[b"moov"]
    data[at : at + 4] = struct.pack(">I", 0x7FFF_FFFF)
    return bytes(data)


def streaming_wav(seconds: float = 0.5, rate: int = 8000) -> bytes:
    """A WAV whose RIFF and data sizes are 0xFFFFFFFF (what a recorder writes before it knows
    the length), over half a second of silence."""
    pcm = bytes(int(seconds * rate) * 2)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 0xFFFF_FFFF)
        + b"WAVEfmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", 0xFFFF_FFFF)
        + pcm
    )


# --- Matroska of many tracks, written by hand -----------------------------------------------
#
# ffmpeg's muxers refuse more than 1000 streams (``max_streams``, which their command line
# cannot raise), so a file of thousands is written here: EBML elements with 8-byte sizes.


def _element(ident: bytes, payload: bytes) -> bytes:
    return ident + b"\x01" + len(payload).to_bytes(7, "big") + payload


def _uint(ident: bytes, value: int) -> bytes:
    return _element(ident, value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big"))


def matroska_of_tracks(count: int, *, segment_size: int | None = None) -> bytes:
    """Matroska declaring ``count`` PCM audio tracks (8 kHz mono), with 0.1 s of silence in
    the first; ``segment_size``: what its Segment declares (default: its true size)."""
    header = _element(
        b"\x1a\x45\xdf\xa3",
        _uint(b"\x42\x86", 1)  # EBMLVersion
        + _uint(b"\x42\xf7", 1)  # EBMLReadVersion
        + _uint(b"\x42\xf2", 4)  # EBMLMaxIDLength
        + _uint(b"\x42\xf3", 8)  # EBMLMaxSizeLength
        + _element(b"\x42\x82", b"matroska")  # DocType
        + _uint(b"\x42\x87", 4)  # DocTypeVersion
        + _uint(b"\x42\x85", 2),  # DocTypeReadVersion
    )
    info = _element(
        b"\x15\x49\xa9\x66",
        _uint(b"\x2a\xd7\xb1", 1_000_000)  # TimestampScale: milliseconds
        + _element(b"\x4d\x80", b"fredica fuzz")  # MuxingApp
        + _element(b"\x57\x41", b"fredica fuzz"),  # WritingApp
    )
    audio = _element(
        b"\xe1",
        _element(b"\xb5", struct.pack(">d", 8000.0))  # SamplingFrequency
        + _uint(b"\x9f", 1)  # Channels
        + _uint(b"\x62\x64", 16),  # BitDepth
    )
    tracks = _element(
        b"\x16\x54\xae\x6b",
        b"".join(
            _element(
                b"\xae",  # TrackEntry
                _uint(b"\xd7", n)  # TrackNumber
                + _uint(b"\x73\xc5", n)  # TrackUID
                + _uint(b"\x83", 2)  # TrackType: audio
                + _element(b"\x86", b"A_PCM/INT/LIT")  # CodecID
                + audio,
            )
            for n in range(1, count + 1)
        ),
    )
    block = b"\x81" + b"\x00\x00" + b"\x80" + bytes(1600)  # track 1, time 0, a key frame
    cluster = _element(b"\x1f\x43\xb6\x75", _uint(b"\xe7", 0) + _element(b"\xa3", block))
    body = info + tracks + cluster
    size = len(body) if segment_size is None else segment_size
    return header + b"\x18\x53\x80\x67" + b"\x01" + size.to_bytes(7, "big") + body
