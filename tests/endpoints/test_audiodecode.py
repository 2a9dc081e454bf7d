"""EXTRACT_AUDIO of a short file in the job's own process (PyAV), against the ffmpeg command it
stands in for: the same samples out, and ffmpeg wherever PyAV gives way (a long file, an ffmpeg
chosen in the settings, a stream PyAV cannot follow). Real clips made by the bundled ffmpeg."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
from pathlib import Path
from typing import Any

import av
import pytest

from python_endpoints.jobs import audiodecode, outputs
from python_endpoints.jobs.media import bundled_ffmpeg, extract_audio_job
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, start
from tests.support.clips import JobContext, SampleCache, job_params
from tests.support.process_table import assert_no_job_process_left


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleCache:
    return SampleCache(tmp_path_factory.mktemp("samples"))


def extract(input: Path, output: Path, **params: Any) -> dict[str, Any]:
    given = {"input": str(input), "output": str(output), **params}
    result: dict[str, Any] = extract_audio_job(job_params(extract_audio_job, given), JobContext())
    return result


def samples_of(path: Path) -> tuple[int, int, bytes]:
    """The rate, channel count and 16-bit samples a file decodes to."""
    with av.open(str(path)) as container:
        [audio] = container.streams.audio
        rate, channels = audio.codec_context.sample_rate, audio.codec_context.layout.nb_channels
        data = b"".join(bytes(frame.planes[0])[: frame.samples * 2 * channels]
                        for frame in container.decode(audio))  # fmt: skip
    return rate, channels, data


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        pytest.param("mkv", {}, id="opus in matroska to 16 kHz mono WAV"),
        pytest.param(
            "mp4",
            {"format": "flac", "sample_rate": 22050, "channels": 2},
            id="aac in mp4 to 22.05 kHz stereo FLAC",
        ),
        pytest.param("legacy", {"sample_rate": 44100}, id="mp2 in matroska to 44.1 kHz WAV"),
    ],
)
def test_a_short_file_gives_the_samples_the_ffmpeg_command_gives(
    samples: SampleCache, tmp_path: Path, kind: str, params: dict[str, Any]
) -> None:
    clip = samples.get(kind)
    suffix = "." + params.get("format", "wav")
    here = extract(clip, tmp_path / f"here{suffix}", **params)
    # An ffmpeg chosen in the settings does the work itself: the command the job always ran.
    there = extract(clip, tmp_path / f"there{suffix}", ffmpeg=bundled_ffmpeg(), **params)
    assert (here["tool"], there["tool"]) == ("pyav", "ffmpeg")
    mine, theirs = samples_of(tmp_path / f"here{suffix}"), samples_of(tmp_path / f"there{suffix}")
    assert mine[:2] == theirs[:2] == (params.get("sample_rate", 16000), params.get("channels", 1))
    assert len(mine[2]) > 0.9 * 4.0 * mine[0] * mine[1] * 2
    assert mine[2] == theirs[2]
    # Verified, committed and described as the ffmpeg path's output is.
    assert here["duration"] == pytest.approx(there["duration"], abs=0.01)
    assert outputs.output_is_current(
        tmp_path / f"here{suffix}", clip, "EXTRACT_AUDIO", job_params(extract_audio_job, {
            "input": str(clip), "output": str(tmp_path / f"here{suffix}"), **params})
    )  # fmt: skip
    assert [p.name for p in tmp_path.iterdir() if outputs.parse_temp(p.name)] == []


def test_a_file_longer_than_the_limit_goes_to_ffmpeg(
    samples: SampleCache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audiodecode, "IN_PROCESS_UP_TO", 3.0)
    assert extract(samples.get("mkv"), tmp_path / "long.wav")["tool"] == "ffmpeg"
    monkeypatch.setattr(audiodecode, "IN_PROCESS_UP_TO", 5.0)
    assert extract(samples.get("mkv"), tmp_path / "short.wav")["tool"] == "pyav"


def test_three_channels_go_to_ffmpeg(samples: SampleCache, tmp_path: Path) -> None:
    """Only mono and stereo are made here: another count's layout is ffmpeg's to choose."""
    result = extract(samples.get("mkv"), tmp_path / "three.wav", channels=3)
    assert result["tool"] == "ffmpeg" and result["channels"] == 3


def test_a_stream_whose_rate_changes_midway_gives_way_to_ffmpeg(tmp_path: Path) -> None:
    """Two PCM pieces of different rates and channels joined without re-encoding: PyAV's
    resampler refuses the second piece, ffmpeg's filter graph reconfigures. The job removes
    what PyAV wrote and ffmpeg writes the whole file."""
    binary = bundled_ffmpeg()
    pieces = []
    for name, rate, channels in (("a", 44100, 1), ("b", 22050, 2)):
        piece = tmp_path / f"{name}.wav"
        subprocess.run(
            [binary, "-v", "error", "-y", "-f", "lavfi", "-i", f"sine=f=440:d=1:r={rate}",
             "-ac", str(channels), "-c:a", "pcm_s16le", str(piece)],
            check=True,
        )  # fmt: skip
        pieces.append(piece)
    listing = tmp_path / "list.txt"
    listing.write_text("".join(f"file '{p.name}'\n" for p in pieces))
    joined = tmp_path / "joined.mkv"
    subprocess.run(
        [binary, "-v", "error", "-y", "-f", "concat", "-i", str(listing), "-c", "copy",
         str(joined)],
        check=True,
    )  # fmt: skip
    out = tmp_path / "out" / "joined.wav"
    result = extract(joined, out)
    assert result["tool"] == "ffmpeg"
    assert result["duration"] == pytest.approx(2.0, abs=0.1)
    assert sorted(p.name for p in out.parent.iterdir()) == [
        ".joined.wav.fredica.json",
        "joined.wav",
    ]


def test_a_file_cut_short_gives_what_ffmpeg_gives(samples: SampleCache, tmp_path: Path) -> None:
    """A download cut off at a third: its header says 4 s, it holds 1.4. Both ways take out
    what is there, the same samples, and the result says the input was short."""
    data = samples.get("mkv").read_bytes()
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(data[: len(data) // 3])
    here = extract(cut, tmp_path / "here.wav")
    there = extract(cut, tmp_path / "there.wav", ffmpeg=bundled_ffmpeg())
    assert (here["tool"], there["tool"]) == ("pyav", "ffmpeg")
    assert 1.0 < here["duration"] < 2.0 and here["duration"] == pytest.approx(there["duration"])
    assert "shorter than its header claims" in here["note"] and there["note"] == here["note"]
    assert samples_of(tmp_path / "here.wav") == samples_of(tmp_path / "there.wav")
    assert [p.name for p in tmp_path.iterdir() if outputs.parse_temp(p.name)] == []


def test_sound_past_a_header_that_says_less_goes_to_ffmpeg(tmp_path: Path) -> None:
    """An MP4 whose audio track's header (``mdhd``) says 1 s over 4 s of sound. ffmpeg takes
    out all 4 s; cutting at the header's length would lose 3 s without a word. A whole
    frame past the declared length sends the file to ffmpeg."""
    whole = tmp_path / "whole.m4a"
    subprocess.run(
        [bundled_ffmpeg(), "-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=4:r=48000",
         "-c:a", "aac", str(whole)],
        check=True,
    )  # fmt: skip
    data = bytearray(whole.read_bytes())
    at = data.index(b"mdhd") + 4 + 4 + 8 + 4  # version 0: flags, two times, the timescale
    (duration,) = struct.unpack_from(">I", data, at)
    struct.pack_into(">I", data, at, duration // 4)
    lying = tmp_path / "lying.m4a"
    lying.write_bytes(bytes(data))
    with av.open(str(lying)) as container:
        [audio] = container.streams.audio
        assert audio.duration is not None and audio.time_base is not None
        assert float(audio.duration * audio.time_base) == pytest.approx(1.0, abs=0.05)
    result = extract(lying, tmp_path / "out" / "lying.wav")
    assert result["tool"] == "ffmpeg"
    assert result["duration"] == pytest.approx(4.0, abs=0.1)


class CancelsAfter(JobContext):
    """A context whose job is cancelled after it has looked ``checks`` times."""

    def __init__(self, checks: int) -> None:
        super().__init__()
        self.checks = checks

    @property  # type: ignore[override]
    def cancelled(self) -> bool:
        self.checks -= 1
        return self.checks < 0


def test_a_cancel_between_frames_stops_it_and_leaves_nothing(
    samples: SampleCache, tmp_path: Path
) -> None:
    clip = samples.get("mkv", seconds=20.0)
    out = tmp_path / "out" / "long.wav"
    params = job_params(extract_audio_job, {"input": str(clip), "output": str(out)})
    ctx = CancelsAfter(checks=30)  # the job's own look, then some frames
    assert extract_audio_job(params, ctx) is None
    assert ctx.checks < 0  # it looked until it saw the cancel
    assert [p.name for p in out.parent.iterdir()] == []  # its part removed, nothing committed


def crash_in_pyav(params: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
    """EXTRACT_AUDIO with PyAV's decode crashing its process, as a decoder fault would (a real
    SIGSEGV, in the child): the ffmpeg path runs as it is."""

    def segfault(*args: Any, **kwargs: Any) -> bool:
        os.kill(os.getpid(), signal.SIGSEGV)
        raise AssertionError("still alive")

    audiodecode.extract = segfault  # type: ignore[assignment]  # this child's copy only
    result: dict[str, Any] | None = extract_audio_job(params, ctx)
    return result


class CrashingExtractAudio(ENDPOINTS["extract_audio"]):  # type: ignore[misc,valid-type]
    """The real endpoint, its PyAV decode crashing: offered by this test's server only."""

    name = "extract_audio_crashing"
    target = staticmethod(crash_in_pyav)
    reuse_child = False


async def test_a_retry_after_pyav_crashed_the_child_goes_to_ffmpeg(
    samples: SampleCache, tmp_path: Path
) -> None:
    """A short file whose sound crashes PyAV's decoder takes the job's child with it
    (SUBPROCESS_CRASHED, nothing left behind); the server remembers the input, and the next
    run on it — a retry — goes through an ffmpeg process. Another input still gets PyAV."""
    server = EndpointServer({CrashingExtractAudio.name: CrashingExtractAudio}, TOKEN)
    port = await server.start()
    clip, other = samples.get("mkv"), samples.get("mp4")

    async def run(input: Path, output: Path) -> dict[str, Any]:
        async with open_task(port, name=CrashingExtractAudio.name) as ws:
            await start(ws, input=str(input), output=str(output))
            frames = await frames_until(ws, "result", "error", within=60)
        return frames[-1]

    try:
        first = await run(clip, tmp_path / "a.wav")
        assert first["type"] == "error" and first["error_type"] == "SUBPROCESS_CRASHED"
        assert "SIGSEGV" in first["error"]
        assert os.listdir(tmp_path) == []  # its temporary file removed
        again = await run(clip, tmp_path / "a.wav")
        assert again["type"] == "result" and again["result"]["tool"] == "ffmpeg", again
        assert samples_of(tmp_path / "a.wav")[:2] == (16000, 1)
        elsewhere = await run(other, tmp_path / "b.wav")
        assert elsewhere["type"] == "error" and "SIGSEGV" in elsewhere["error"]
    finally:
        await server.close()
    await assert_no_job_process_left()
