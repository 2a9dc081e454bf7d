"""TRANSCODE_MP4's output profiles (issue 13) on real media: inputs made here with the bundled
ffmpeg, the jobs run in this process, the outputs read back stream by stream with PyAV."""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import pytest

from fredica_app.services import Fredica
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs import media
from python_endpoints.serving.child import JobFailed
from tests.support.clips import JobContext, SampleCache, run_job

FFMPEG = imageio_ffmpeg.get_ffmpeg_exe()


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleCache:
    return SampleCache(tmp_path_factory.mktemp("samples"))


def transcode(**params: Any) -> dict[str, Any]:
    result = run_job(media.transcode_job, {"hardware": False, **params})
    assert result is not None
    return result


def make(out: Path, *args: str) -> Path:
    cmd = [FFMPEG, "-hide_banner", "-nostdin", "-y", "-loglevel", "error", *args, str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return out


def awkward_mkv(out: Path) -> Path:
    """H.264 High 4:2:2 10-bit, Opus stereo, AC-3 5.1 and an SRT track: nothing of it plays
    everywhere but the subtitles."""
    srt = out.with_suffix(".srt")
    srt.write_text("1\n00:00:00,500 --> 00:00:01,500\nHello\n\n", encoding="utf-8")
    return make(
        out,
        *("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=2"),
        *("-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2"),
        *("-f", "lavfi", "-i", "sine=frequency=220:sample_rate=48000:duration=2"),
        *("-i", str(srt)),
        *("-map", "0:v", "-map", "1:a", "-map", "2:a", "-map", "3:s"),
        *("-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv422p10le"),
        *("-c:a:0", "libopus", "-ac:a:0", "2", "-c:a:1", "ac3", "-ac:a:1", "6"),
        *("-c:s", "srt", "-f", "matroska"),
    )


def top_level_boxes(path: Path) -> list[str]:
    """The MP4's top-level box types, in file order."""
    boxes = []
    with open(path, "rb") as f:
        while header := f.read(8):
            size, kind = struct.unpack(">I4s", header)
            if size == 1:
                size = struct.unpack(">Q", f.read(8))[0] - 8
            elif size == 0:
                boxes.append(kind.decode("latin-1"))
                break
            boxes.append(kind.decode("latin-1"))
            f.seek(size - 8, 1)
    return boxes


def streams(path: Path) -> list[dict[str, Any]]:
    with media.open_media(path) as container:
        out = []
        for s in container.streams:
            cc = s.codec_context
            entry: dict[str, Any] = {"type": s.type, "codec": cc.codec.canonical_name}
            if s.type == "video":
                entry.update(
                    profile=cc.profile,
                    level=cc.level,
                    pix_fmt=cc.format.name,
                    width=cc.width,
                    height=cc.height,
                    fps=float(s.average_rate) if s.average_rate else None,
                )
            elif s.type == "audio":
                entry.update(profile=cc.profile, channels=cc.layout.nb_channels)
            out.append(entry)
        return out


def assert_plays_everywhere(path: Path) -> list[dict[str, Any]]:
    found = streams(path)
    for s in found:
        if s["type"] == "video":
            assert s["codec"] == "h264"
            assert s["profile"] in ("High", "Main", "Baseline", "Constrained Baseline"), s
            assert 0 < s["level"] <= 41 and s["pix_fmt"] == "yuv420p", s
        elif s["type"] == "audio":
            assert s["codec"] == "aac" and s["profile"] == "LC" and s["channels"] <= 2, s
        else:
            assert s["codec"] == "mov_text", s
    boxes = top_level_boxes(path)
    assert boxes.index("moov") < boxes.index("mdat"), boxes  # +faststart
    return found


def test_compatible_reencodes_what_does_not_play_everywhere(tmp_path: Path) -> None:
    source = awkward_mkv(tmp_path / "awkward.mkv")
    out = tmp_path / "out.mp4"
    result = transcode(input=str(source), output=str(out))  # compatible: the default
    assert result["profile"] == "compatible" and result["mode"] == "reencode"
    found = assert_plays_everywhere(out)
    assert [s["type"] for s in found] == ["video", "audio", "audio", "subtitle"]
    assert found[0]["profile"] == "High"


def test_compatible_copies_what_already_plays_everywhere(
    samples: SampleCache, tmp_path: Path
) -> None:
    out = tmp_path / "out.mp4"
    result = transcode(input=str(samples.get("mp4")), output=str(out), profile="compatible")
    assert result["mode"] == "remux" and result["video_encoder"] == "copy"
    assert_plays_everywhere(out)


def test_modern_keeps_opus_and_archive_copies_or_refuses(
    samples: SampleCache, tmp_path: Path
) -> None:
    out = tmp_path / "modern.mp4"
    result = transcode(input=str(samples.get("mkv")), output=str(out), profile="modern")
    assert result["mode"] == "remux"
    assert [s["codec"] for s in streams(out)] == ["h264", "opus", "mov_text"]
    out = tmp_path / "archive.mp4"
    result = transcode(input=str(samples.get("mkv")), output=str(out), profile="archive")
    assert result["mode"] == "remux" and result["video_encoder"] == "copy"
    assert [s["codec"] for s in streams(out)] == ["h264", "opus", "mov_text"]
    legacy = samples.get("legacy")  # MPEG-2 video, MP2 audio: MP4 holds neither as it is
    with pytest.raises(JobFailed) as info:
        transcode(input=str(legacy), output=str(tmp_path / "no.mp4"), profile="archive")
    assert info.value.error_type == "UNSUPPORTED_MEDIA"
    assert "mpeg2video" in str(info.value) and "use profile modern" in str(info.value)
    assert not (tmp_path / "no.mp4").exists()


def test_max_height_and_max_fps_scale_down_a_1080p60_input(tmp_path: Path) -> None:
    source = make(
        tmp_path / "fast.mkv",
        *("-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=60:duration=1"),
        *("-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-f", "matroska"),
    )
    out = tmp_path / "out.mp4"
    result = transcode(input=str(source), output=str(out), max_height=720, max_fps=30)
    assert result["mode"] == "reencode"
    (video,) = assert_plays_everywhere(out)
    assert (video["width"], video["height"]) == (1280, 720)
    assert video["fps"] == pytest.approx(30, abs=0.1)


def integrated_loudness(path: Path) -> float:
    """What ffmpeg's ebur128 filter measures of the file's audio (LUFS)."""
    args = [FFMPEG, "-hide_banner", "-nostdin", "-i", str(path), "-map", "0:a"]
    done = subprocess.run(
        [*args, "-af", "ebur128", "-f", "null", "-"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    summary = done.stderr[done.stderr.rindex("Summary:") :]
    match = re.search(r"I:\s+(-?[\d.]+) LUFS", summary)
    assert match, summary
    return float(match[1])


def test_loudness_is_normalised_to_ebu_r128_in_two_passes(tmp_path: Path) -> None:
    quiet = "aevalsrc=0.02*sin(2*PI*(220+110*floor(t))*t):s=48000:d=8"
    source = make(
        tmp_path / "quiet.mkv",
        *("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=8"),
        *("-f", "lavfi", "-i", quiet),
        *("-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"),
        *("-c:a", "aac", "-f", "matroska"),
    )
    before = integrated_loudness(source)
    assert before < ff.LOUDNESS_TARGET - 6  # far from the target to begin with
    out = tmp_path / "out.mp4"
    ctx = JobContext()
    result = run_job(
        media.transcode_job,
        {"input": str(source), "output": str(out), "hardware": False, "loudness": True},
        ctx,
    )
    assert result is not None and result["video_encoder"] == "copy"  # only audio re-encoded
    assert any(text and "measuring loudness" in text for _, text in ctx.reports)
    # Its heavy part ends with the encode, not with the measuring run before it: only the
    # last report (done) follows the word.
    assert ctx.finishing_after == len(ctx.reports) - 1 and ctx.reports[-1][0] == 100
    assert abs(integrated_loudness(out) - ff.LOUDNESS_TARGET) <= 1.5
    assert_plays_everywhere(out)


async def test_the_mp4_profile_setting_fills_transcode_payloads(tmp_path: Path) -> None:
    app = Fredica.open(tmp_path / "data")
    try:
        f = tmp_path / "a.mkv"
        f.write_bytes(b"m" * 100)
        (material,) = (await app.import_items([str(f)])).added
        spec = app.spec_for_material(material, "transcode_mp4")
        (transcode_task,) = [t for t in spec.tasks if t.type == "TRANSCODE_MP4"]
        assert transcode_task.payload["profile"] == "compatible"
        app.settings.mp4_profile = "modern"
        spec = app.spec_for_material(material, "media")
        (transcode_task,) = [t for t in spec.tasks if t.type == "TRANSCODE_MP4"]
        assert transcode_task.payload["profile"] == "modern"
    finally:
        await app.close()
