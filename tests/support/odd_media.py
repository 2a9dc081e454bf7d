"""Test media of the kinds that failed on real files from elsewhere, each made with the bundled
ffmpeg (and, where ffmpeg will not write the fault itself, a few bytes changed afterwards):

- :func:`latin1_tags` — an AVI (MPEG-4 Part 2 + MP3: both fit MP4) whose title is Latin-1,
  as old AVI, RealMedia and WMA files have; ffmpeg copies the tag into what it makes.
- :func:`silent_audio_ts` — a transport stream that declares an AAC stream and never sends a
  packet of it (its packets dropped from the file).
- :func:`odd_size` — VP8 in WebM at 720x405: re-encoded, and libx264 refuses an odd height.
- :func:`late_subtitles` — Matroska whose subtitle runs 3 s past the picture.
- :func:`raw_audio` — headerless PCM in a ``.raw`` file (ffmpeg takes it for an image).
- :func:`short_opus` — an Ogg Opus file whose header says 12.73 s and that holds 10.73 s (two
  pages cut out of its middle: its granule positions still count them).
- :func:`damaged` — MPEG-2 in Matroska whose video packets were overwritten with noise.
- :func:`captions_ts` — H.264 in a transport stream carrying CEA-608 closed captions in its
  frames (ATSC A/53 caption data in SEI), as TV recordings and HLS do. ffmpeg's encoders
  write such SEI only from captions already in decoded frames, so the SEI is added here to the
  H.264 stream libx264 wrote: pop-on captions "HELLO FROM FREDICA" (shown 1.08 to 1.72 s) and "A
  SECOND CUE" (2.48 to 3.24 s), a byte pair per frame like a real 608 stream.
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import av
import imageio_ffmpeg

TIMEOUT = 120.0


def ffmpeg(*args: str | bytes) -> bytes:
    """Run the bundled ffmpeg; its stdout."""
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error"]
    done = subprocess.run([*command, *args], capture_output=True, timeout=TIMEOUT, check=False)
    if done.returncode:
        raise RuntimeError(done.stderr.decode("utf-8", "replace"))
    return done.stdout


def _picture(seconds: float, size: str = "320x240", rate: int = 25) -> list[str]:
    return ["-f", "lavfi", "-i", f"testsrc=size={size}:rate={rate}:duration={seconds}"]


def _tone(seconds: float, rate: int = 48000) -> list[str]:
    return ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}:sample_rate={rate}"]


LATIN1_TITLE = b"Caf\xe9 \xa9 1999"


def latin1_tags(out: Path, seconds: float = 2.0) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    ffmpeg(
        *_picture(seconds),
        *_tone(seconds),
        *("-c:v", "mpeg4", "-c:a", "libmp3lame", "-t", str(seconds)),
        "-metadata",
        b"title=" + LATIN1_TITLE,  # bytes in argv: what an old tagger wrote
        *("-f", "avi", str(out)),
    )
    return out


def _ts_packets(data: bytes) -> list[bytes]:
    assert len(data) % 188 == 0
    return [data[i : i + 188] for i in range(0, len(data), 188)]


def _pid(packet: bytes) -> int:
    return ((packet[1] & 0x1F) << 8) | packet[2]


def silent_audio_ts(out: Path, seconds: float = 3.0) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    data = ffmpeg(
        *_picture(seconds),
        *_tone(seconds),
        *("-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"),
        *("-c:a", "aac", "-t", str(seconds), "-f", "mpegts", "-"),
    )
    # ffmpeg numbers its streams from PID 0x100: the audio is 0x101. The program table still
    # declares it.
    out.write_bytes(b"".join(p for p in _ts_packets(data) if _pid(p) != 0x101))
    return out


def odd_size(out: Path, seconds: float = 1.0) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    # testsrc (RGB) keeps an odd height; a YUV source would be cut to even by the scaler.
    ffmpeg(
        *_picture(seconds, "720x405"),
        *("-vf", "format=yuv420p", "-c:v", "libvpx", "-b:v", "500k", "-f", "webm", str(out)),
    )
    return out


def late_subtitles(out: Path, scratch: Path, seconds: float = 3.0) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    srt = scratch / "late.srt"
    srt.write_text(
        "1\n00:00:00,500 --> 00:00:01,500\nDuring the picture\n\n"
        f"2\n00:00:05,000 --> 00:00:{seconds + 3:06.3f}\nAfter the end\n\n".replace(".", ","),
        encoding="utf-8",
    )
    ffmpeg(
        *_picture(seconds),
        *_tone(seconds),
        *("-i", str(srt), "-map", "0:v", "-map", "1:a", "-map", "2:s"),
        *("-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"),
        *("-c:a", "libopus", "-c:s", "srt", "-f", "matroska", str(out)),
    )
    return out


def raw_audio(out: Path, seconds: float = 3.0) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    assert out.suffix == ".raw"
    ffmpeg(*_tone(seconds, 16000), "-f", "s16le", str(out))
    return out


def short_opus(out: Path, seconds: float = 12.72) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    data = ffmpeg(*_tone(seconds), "-c:a", "libopus", "-b:a", "32k", "-f", "ogg", "-")
    pages = []
    at = 0
    while at < len(data):
        assert data[at : at + 4] == b"OggS", at
        segments = data[at + 26]
        size = 27 + segments + sum(data[at + 27 : at + 27 + segments])
        pages.append(data[at : at + size])
        at += size
    middle = len(pages) // 2  # a page holds a second of sound; the last page's granule stays
    out.write_bytes(b"".join(pages[:middle] + pages[middle + 2 :]))
    return out


def damaged(out: Path, seconds: float = 3.0) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    # Bit-exact: the same file every time (no random track ids), so the same noise lands on it.
    video = ["-c:v", "mpeg2video", "-g", "25", "-fflags", "+bitexact"]
    ffmpeg(*_picture(seconds), *video, "-f", "matroska", str(out))
    data = bytearray(out.read_bytes())
    with av.open(str(out)) as container:
        where = [
            (p.pos, p.size) for p in container.demux(container.streams.video[0]) if p.pos and p.size
        ]
    noise = random.Random(13)
    for pos, size in where:
        data[pos : pos + size] = bytes(noise.randrange(256) for _ in range(size))
    out.write_bytes(bytes(data))
    return out


# --- CEA-608 captions in H.264 ----------------------------------------------------------------

CAPTIONS = [(1.08, 1.72, "HELLO FROM FREDICA"), (2.48, 3.24, "A SECOND CUE")]


def _odd_parity(byte: int) -> int:
    byte &= 0x7F
    return byte | (0x80 if bin(byte).count("1") % 2 == 0 else 0)


def _pair(a: int, b: int) -> bytes:
    return bytes([_odd_parity(a), _odd_parity(b)])


def _control(a: int, b: int) -> list[bytes]:
    return [_pair(a, b)] * 2  # control codes are sent twice


def _pop_on(text: str) -> list[bytes]:
    """Resume caption loading, erase the hidden memory, row 15, the text, end of caption (the
    caption shows when this last pair arrives)."""
    chars = text.encode("ascii")
    pairs = [_pair(chars[i], chars[i + 1]) for i in range(0, len(chars) - 1, 2)]
    if len(chars) % 2:
        pairs.append(bytes([_odd_parity(chars[-1]), 0x80]))
    return [
        *_control(0x14, 0x20),
        *_control(0x14, 0x2E),
        *_control(0x14, 0x60),
        *pairs,
        *_control(0x14, 0x2F),
    ]


def _erase() -> list[bytes]:
    return _control(0x14, 0x2C)


def _rbsp_to_ebsp(rbsp: bytes) -> bytes:
    out = bytearray()
    zeros = 0
    for byte in rbsp:
        if zeros >= 2 and byte <= 3:
            out.append(3)
            zeros = 0
        out.append(byte)
        zeros = zeros + 1 if byte == 0 else 0
    return bytes(out)


def _caption_sei(pair: bytes) -> bytes:
    """An SEI NAL unit: user data registered by ITU-T T.35 (USA, ATSC), "GA94", cc_data with
    one CEA-608 field-1 byte pair."""
    cc_data = bytes([0x40 | 1, 0xFF]) + b"\xfc" + pair + b"\xff"
    payload = b"\xb5\x00\x31" + b"GA94" + b"\x03" + cc_data
    sei = bytes([4, len(payload)]) + payload + b"\x80"
    return b"\x00\x00\x00\x01\x06" + _rbsp_to_ebsp(sei)


def captions_ts(out: Path, seconds: float = 4.0, rate: int = 25) -> Path:
    """See the module's docstring. No B-frames: each picture's caption data then comes in
    display order, as a 608 stream must."""
    out.parent.mkdir(parents=True, exist_ok=True)
    h264 = ffmpeg(
        *_picture(seconds, rate=rate),
        *("-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-pix_fmt", "yuv420p"),
        *("-f", "h264", "-"),
    )
    # Frame → what starts there. A caption loads from its first pair and shows at its end of
    # caption: frame 27 (1.08 s) and 62 (2.48 s); erased at frames 43 and 81.
    schedule = {12: _pop_on(CAPTIONS[0][2]), 43: _erase(), 50: _pop_on(CAPTIONS[1][2])}
    schedule[81] = _erase()
    by_frame: dict[int, bytes] = {}
    for start, pairs in schedule.items():
        for k, pair in enumerate(pairs):
            by_frame[start + k] = pair
    starts = [m.start() for m in re.finditer(b"\x00\x00\x01", h264)]
    stream = bytearray()
    frame = 0
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(h264)
        nal = h264[start + 3 : end]
        if i + 1 < len(starts):
            nal = nal.rstrip(b"\x00")  # the next start code's leading zero
        if nal[0] & 0x1F in (1, 5):  # a picture's slice: its caption data goes before it
            stream += _caption_sei(by_frame.get(frame, b"\x80\x80"))  # 0x80 0x80: padding
            frame += 1
        stream += b"\x00\x00\x00\x01" + nal
    raw = out.with_suffix(".h264")
    raw.write_bytes(bytes(stream))
    try:
        ffmpeg(
            "-r", str(rate), "-f", "h264", "-i", str(raw), "-c", "copy", "-f", "mpegts", str(out)
        )
    finally:
        raw.unlink()
    return out
