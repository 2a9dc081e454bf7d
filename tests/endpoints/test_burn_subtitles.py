"""BURN_SUBTITLES on real media: the cues are drawn into the picture at their times — in a
whole encode and in a segmented one (each segment shifted to its own times) —, from a subtitle
file or an embedded track; what cannot be burned says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from python_endpoints.jobs import media
from python_endpoints.jobs.sample import srt_text
from python_endpoints.serving.child import JobFailed
from tests.endpoints.test_segments import Context
from tests.support.clips import SampleCache, run_job

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def a_font() -> None:
    """libass draws with the system's fonts (none is shipped): without one, nothing is drawn."""
    if not media.renders_subtitles(media.ffmpeg_binary({"ffmpeg": None}), "Subtitles"):
        pytest.skip("libass finds no font here (Debian: apt install fonts-dejavu-core)")


CUES = [(1.0, 1.9, "FIRST CUE HERE"), (7.0, 7.9, "SECOND CUE HERE")]


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleCache:
    return SampleCache(tmp_path_factory.mktemp("samples"))


def frame_at(path: Path, seconds: float) -> np.ndarray:
    """The picture shown at ``seconds`` (grey levels)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        container.seek(int(max(0.0, seconds - 1.0) / stream.time_base), stream=stream)
        shown = None
        for frame in container.decode(stream):
            if frame.time is not None and frame.time > seconds + 1e-6:
                break
            shown = frame
        assert shown is not None
        return shown.to_ndarray(format="gray").astype(np.float64)


def band_difference(source: Path, burned: Path, seconds: float, top: bool = False) -> float:
    """How much the band where cues go differs between the source and the output at
    ``seconds`` (mean absolute grey difference)."""
    a, b = frame_at(source, seconds), frame_at(burned, seconds)
    assert a.shape == b.shape
    h = a.shape[0]
    rows = slice(0, h // 4) if top else slice(h * 3 // 4, h)
    return float(np.abs(a[rows] - b[rows]).mean())


def burn(source: Path, output: Path, **more: Any) -> dict[str, Any]:
    params = {"input": str(source), "output": str(output), "hardware": False, **more}
    result = run_job(media.burn_subtitles_job, params, Context())
    assert result is not None
    return result


def assert_burned(source: Path, output: Path, at: list[float], between: list[float]) -> None:
    quiet = [band_difference(source, output, t) for t in between]
    drawn = [band_difference(source, output, t) for t in at]
    assert max(quiet) < 2, quiet  # the encode's own noise (about 0.5)
    assert min(drawn) > 5 * max(quiet) and min(drawn) > 3, (drawn, quiet)  # about 6


def test_a_subtitle_file_is_drawn_at_its_cues_whole_and_in_segments(
    samples: SampleCache, tmp_path: Path
) -> None:
    source = samples.get("mkv", 12.0)
    srt = tmp_path / "talk.en.srt"
    srt.write_text(srt_text(CUES), encoding="utf-8")
    # A folder whose name a filter graph would choke on: ffmpeg runs there, nothing escaped.
    out_dir = tmp_path / "it's: a [folder], with; commas"
    whole = burn(source, out_dir / "whole.mp4", subtitles=str(srt))
    assert whole["subtitles"] == "talk.en.srt" and "segments" not in whole
    pieces = burn(source, out_dir / "pieces.mp4", subtitles=str(srt), segment_seconds=3.0)
    assert pieces["segments"] == 4  # the second cue is in the third segment
    for made in (out_dir / "whole.mp4", out_dir / "pieces.mp4"):
        assert_burned(source, made, at=[1.4, 7.4], between=[4.5, 10.5])
        with av.open(str(made)) as container:
            assert container.duration / 1e6 == pytest.approx(12.0, abs=0.1)
            kinds = sorted(s.type for s in container.streams)
        assert kinds == ["audio", "subtitle", "video"]  # the source's streams, its track too
    assert sorted(p.name for p in out_dir.iterdir() if p.name.startswith(".")) == [
        ".pieces.mp4.fredica.json",
        ".whole.mp4.fredica.json",
    ]  # the copied subtitle file is gone; the sidecars stay


def test_an_embedded_track_is_drawn_and_the_top_is_the_top(
    samples: SampleCache, tmp_path: Path
) -> None:
    source = samples.get("mkv", 6.0)  # its track's cues: 0.5-1.75 s and 2.0-3.25 s
    made = tmp_path / "track.mp4"
    result = burn(source, made, track=0, position="top")
    assert result["subtitles"] == "track 0"
    assert band_difference(source, made, 1.0, top=True) > 3
    assert band_difference(source, made, 1.0) < 2  # not at the bottom
    assert band_difference(source, made, 5.0, top=True) < 2


def test_what_cannot_be_burned_says_why(samples: SampleCache, tmp_path: Path) -> None:
    source = samples.get("mkv", 2.0)
    with pytest.raises(JobFailed) as missing:
        burn(source, tmp_path / "a.mp4", subtitles=str(tmp_path / "none.srt"))
    assert missing.value.error_type == "INPUT_MISSING" and "none.srt" in str(missing.value)
    with pytest.raises(JobFailed) as no_track:
        burn(source, tmp_path / "a.mp4", track=3)
    assert no_track.value.error_type == "UNSUPPORTED_MEDIA"
    assert "has 1 subtitle track(s): there is no track 3" in str(no_track.value)
    text = tmp_path / "notes.txt"
    text.write_text("not subtitles")
    with pytest.raises(JobFailed) as kind:
        burn(source, tmp_path / "a.mp4", subtitles=str(text))
    assert kind.value.error_type == "UNSUPPORTED_MEDIA"
    with pytest.raises(JobFailed) as archive:
        burn(source, tmp_path / "a.mp4", track=0, profile="archive")
    assert archive.value.error_type == "PAYLOAD_ERROR" and "never re-encodes" in str(archive.value)
    with pytest.raises(JobFailed) as both:
        burn(source, tmp_path / "a.mp4", track=0, subtitles=str(text))
    assert both.value.error_type == "PAYLOAD_ERROR"
    assert not (tmp_path / "a.mp4").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".fredica-burn")] == []


def test_a_subtitle_file_becomes_a_track_the_viewer_turns_on(
    samples: SampleCache, tmp_path: Path
) -> None:
    source = samples.get("mkv", 3.0)  # H.264, Opus, a text track
    srt = tmp_path / "mkv-3s-320x240.fr.srt"
    srt.write_text(srt_text(CUES[:1]), encoding="utf-8")
    video = tmp_path / "clip.mkv"
    video.write_bytes(source.read_bytes())
    srt = srt.rename(tmp_path / "clip.fr.srt")
    output = tmp_path / "out" / "clip.with-subtitles.mp4"
    params = {"input": str(video), "subtitles": str(srt), "output": str(output)}
    result = run_job(media.add_subtitle_track_job, params, Context())
    assert result is not None and result["language"] == "fr"
    with av.open(str(output)) as container:
        subs = container.streams.subtitles
        assert [s.codec_context.name for s in subs] == ["mov_text", "mov_text"]
        assert subs[1].language == "fra"  # a track's language has three letters
        assert container.streams.video[0].codec_context.name == "h264"  # copied
        assert container.duration / 1e6 == pytest.approx(3.0, abs=0.1)
    with pytest.raises(JobFailed) as missing:
        params = {
            **params,
            "subtitles": str(tmp_path / "gone.srt"),
            "output": str(tmp_path / "x.mp4"),
        }
        run_job(media.add_subtitle_track_job, params, Context())
    assert missing.value.error_type == "INPUT_MISSING"
