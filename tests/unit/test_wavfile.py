"""The WAV header read that verifies EXTRACT_AUDIO's output: against PyAV on real ffmpeg
output, and on the ways a file can be incomplete or something else."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import av
import imageio_ffmpeg
import pytest

from python_endpoints.jobs import wavfile
from python_endpoints.jobs.avread import verify_media
from python_endpoints.serving.child import JobFailed


def _wav(path: Path, seconds: float, rate: int = 16000, channels: int = 1) -> Path:
    subprocess.run(
        [
            imageio_ffmpeg.get_ffmpeg_exe(),
            "-nostdin",
            "-loglevel",
            "error",
            "-f",
            "lavfi",
            "-i",
            f"sine=frequency=440:duration={seconds}",
            "-metadata",
            "title=a tag before the samples",
            "-ar",
            str(rate),
            "-ac",
            str(channels),
            "-c:a",
            "pcm_s16le",
            str(path),
        ],
        check=True,
    )
    return path


@pytest.mark.parametrize(("rate", "channels"), [(16000, 1), (44100, 2)])
def test_a_wav_ffmpeg_wrote_reads_as_pyav_reads_it(
    tmp_path: Path, rate: int, channels: int
) -> None:
    path = _wav(tmp_path / "a.wav", 1.5, rate, channels)
    header = wavfile.read(path)
    with av.open(str(path)) as container:
        [audio] = container.streams.audio
        assert (header.sample_rate, header.channels) == (
            audio.codec_context.sample_rate,
            audio.codec_context.layout.nb_channels,
        )
        assert header.duration == pytest.approx(float(audio.duration * audio.time_base), abs=1e-3)
    assert header.duration == pytest.approx(1.5, abs=1e-3) and header.bits == 16


def test_what_is_not_a_complete_pcm_wav_is_refused(tmp_path: Path) -> None:
    whole = _wav(tmp_path / "a.wav", 1.0).read_bytes()
    data_at = whole.index(b"data") + 8
    cases = {
        "cut short": whole[: len(whole) - 1000],
        "not RIFF": b"OggS" + whole[4:],
        "no samples chunk": whole[: whole.index(b"data")],
        "a frame cut in two": whole[: data_at - 4]
        + struct.pack("<I", len(whole) - data_at - 1)
        + whole[data_at : len(whole) - 1],
    }
    fmt_at = whole.index(b"fmt ") + 8
    cases["float samples"] = whole[:fmt_at] + struct.pack("<H", 3) + whole[fmt_at + 2 :]
    for why, data in cases.items():
        with pytest.raises(wavfile.WavError):
            wavfile.parse(data, len(data))
            pytest.fail(why)


def test_verifying_a_wav_output_checks_its_format_and_length(tmp_path: Path) -> None:
    path = _wav(tmp_path / "a.wav", 2.0)

    def holds() -> float | None:
        return 2.0

    def verify(**kw: object) -> object:
        args: dict[str, object] = {
            "name": "a.wav",
            "declared": 2.0,
            "input_holds": holds,
            "streams": {"audio": 1, "video": 0},
            "sample_rate": 16000,
            "channels": 1,
        } | kw
        return verify_media(path, "wav", **args)  # type: ignore[arg-type]

    assert verify().duration == pytest.approx(2.0, abs=1e-3)  # type: ignore[attr-defined]
    with pytest.raises(JobFailed, match="it has 16000 Hz and 1 channels"):
        verify(sample_rate=44100)
    with pytest.raises(JobFailed, match=r"lasts 2\.00 s"):
        verify(declared=5.0, input_holds=lambda: 5.0)  # the output lost part of the input
    path.write_bytes(path.read_bytes()[:-20000])  # ffmpeg stopped part-way
    with pytest.raises(JobFailed, match="cannot be read back"):
        verify()
