"""THUMBNAIL for real: clips made with the bundled ffmpeg, the job run in this process
(:func:`~tests.support.clips.run_job`: its params validated as the server does), then through
a real endpoints server on 127.0.0.1:0. After every test: no ffmpeg left running in its
folder."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import av
import imageio_ffmpeg
import numpy as np
import pytest

from python_endpoints.jobs import outputs
from python_endpoints.jobs.thumbnail import thumbnail_job
from python_endpoints.protocol import InitData, InitParamAndRun, dump
from python_endpoints.serving.child import JobFailed
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task
from tests.support import odd_media
from tests.support.clips import JobContext, SampleCache, ffmpeg_processes, job_params, run_job
from tests.support.process_table import assert_no_job_process_left


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory) -> SampleCache:
    return SampleCache(tmp_path_factory.mktemp("samples"))


@pytest.fixture(autouse=True)
def _no_ffmpeg_left(tmp_path: Path) -> Iterator[None]:
    yield
    assert ffmpeg_processes(str(tmp_path)) == []


def sheet(params: dict[str, Any], ctx: JobContext | None = None) -> dict[str, Any]:
    result = run_job(thumbnail_job, params, ctx)
    assert result is not None
    return result


def fails(params: dict[str, Any]) -> JobFailed:
    with pytest.raises(JobFailed) as info:
        run_job(thumbnail_job, params)
    return info.value


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def picture(path: Path) -> tuple[str, np.ndarray]:
    """The codec of a picture file and its brightness (``gray``: a row of pixels a row)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frame = next(container.decode(stream))
        return stream.codec_context.name, frame.to_ndarray(format="gray")


def ramp(out: Path, seconds: float = 4.0, container: str = "matroska", gop: int = 25) -> Path:
    """A clip whose brightness says when each picture was taken: grey level 32 + 40 t (tv
    range) at t seconds."""
    out.parent.mkdir(parents=True, exist_ok=True)
    source = f"nullsrc=s=320x240:r=25:d={seconds},geq=lum='32+40*T':cb=128:cr=128"
    encode = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", str(gop)]
    odd_media.ffmpeg("-f", "lavfi", "-i", source, *encode, "-f", container, str(out))
    return out


def tile_levels(path: Path, rows: int, columns: int) -> list[float]:
    """The mean grey level of each tile of a sheet, in reading order (a tile's middle half:
    its edges blend with its neighbours' in the JPEG)."""
    _, gray = picture(path)
    h, w = gray.shape[0] // rows, gray.shape[1] // columns
    middles = [
        gray[r * h + h // 4 : (r + 1) * h - h // 4, c * w + w // 4 : (c + 1) * w - w // 4]
        for r in range(rows)
        for c in range(columns)
    ]
    return [float(m.mean()) for m in middles]


def level_at(t: float) -> float:
    """The full-range grey level a JPEG shows of :func:`ramp` at ``t`` seconds."""
    return (32 + 40 * t - 16) * 255 / 219


# --- what it makes ----------------------------------------------------------------------------


def test_a_sheet_of_twelve_frames(samples: SampleCache, tmp_path: Path) -> None:
    source = samples.get("mkv", 8.0)  # 320x240
    output = tmp_path / "out" / "clip.thumbnails.jpg"
    ctx = JobContext()
    result = sheet({"input": str(source), "output": str(output)}, ctx)
    assert result["outputs"] == [str(output)]
    assert (result["frames"], result["columns"], result["rows"]) == (12, 4, 3)
    assert (result["tile_width"], result["tile_height"]) == (320, 240)
    assert (result["width"], result["height"]) == (1280, 720)
    assert result["times"] == pytest.approx(
        [(i + 0.5) * result["duration"] / 12 for i in range(12)]
    )
    assert "note" not in result and result["bytes"] == output.stat().st_size
    codec, gray = picture(output)
    assert codec == "mjpeg" and gray.shape == (720, 1280)
    # Only the sheet and its sidecar: no temporary file, no piece.
    assert names(output.parent) == [".clip.thumbnails.jpg.fredica.json", "clip.thumbnails.jpg"]
    percents = [p for p, _ in ctx.reports]
    assert percents == sorted(percents) and ctx.reports[-1] == (100.0, "done")
    assert any(text and text.startswith("picking frames ") for _, text in ctx.reports)


def test_each_tile_is_the_picture_at_its_time_in_order(tmp_path: Path) -> None:
    source = ramp(tmp_path / "ramp.mkv")
    output = tmp_path / "ramp.jpg"
    result = sheet({"input": str(source), "output": str(output), "frames": 8, "columns": 4})
    # The first picture at or after each time: within a frame (0.04 s, 1.9 grey levels).
    expected = [level_at(t) for t in result["times"]]
    assert tile_levels(output, 2, 4) == pytest.approx(expected, abs=4)


def test_a_sheet_of_a_re_run_with_the_same_params_can_be_skipped(
    samples: SampleCache, tmp_path: Path
) -> None:
    source = samples.get("mkv", 4.0)
    output = tmp_path / "sheet.jpg"
    params = {"input": str(source), "output": str(output), "frames": 6, "columns": 3}
    sheet(params)
    checked = job_params(thumbnail_job, params)
    assert outputs.output_is_current(output, source, "THUMBNAIL", checked)
    assert outputs.output_is_current(output, source, "thumbnail", {**checked, "ffmpeg": "x"})
    assert not outputs.output_is_current(output, source, "THUMBNAIL", {**checked, "frames": 12})
    assert not outputs.output_is_current(output, source, "THUMBNAIL", {**checked, "width": 160})
    record = json.loads(outputs.sidecar_path(output).read_text())
    assert record["params"] == {"frames": 6, "columns": 3, "width": 320}


def test_a_one_second_clip(samples: SampleCache, tmp_path: Path) -> None:
    result = sheet({"input": str(samples.get("mkv", 1.0)), "output": str(tmp_path / "s.jpg")})
    assert result["frames"] == 12 and (result["width"], result["height"]) == (1280, 720)
    assert max(result["times"]) < 1.0


def test_a_clip_with_fewer_pictures_than_frames_still_fills_its_sheet(
    samples: SampleCache, tmp_path: Path
) -> None:
    # 0.2 s at 25 fps: five pictures for twelve tiles, some shown twice, none black.
    output = tmp_path / "s.jpg"
    result = sheet({"input": str(samples.get("mkv", 0.2)), "output": str(output)})
    assert result["frames"] == 12 and "note" not in result
    assert picture(output)[1].shape == (720, 1280)


def test_a_portrait_or_anamorphic_video_gets_tiles_of_its_shape(tmp_path: Path) -> None:
    clip = str(ramp(tmp_path / "r.mkv"))  # 320x240
    # Stored landscape, shown turned a quarter (a phone's portrait video): 240 wide, 320 high.
    phone = tmp_path / "phone.mp4"
    odd_media.ffmpeg("-display_rotation:v:0", "90", "-i", clip, "-c", "copy", str(phone))
    # Pixels wider than high (a DVD's): 320x240 stored, shown 379x240.
    dvd = tmp_path / "dvd.mkv"
    odd_media.ffmpeg("-i", clip, "-vf", "setsar=32/27", "-c:v", "libx264", str(dvd))
    for source, tile in [(phone, (320, 426)), (dvd, (320, 202))]:
        output = tmp_path / f"{source.stem}.jpg"
        result = sheet({"input": str(source), "output": str(output), "frames": 2})
        assert (result["tile_width"], result["tile_height"]) == tile
        assert picture(output)[1].shape == (tile[1], 2 * tile[0])


def test_a_transport_stream_with_one_keyframe_is_decoded_whole(tmp_path: Path) -> None:
    # No index, one keyframe: every seek lands past it and finds no picture.
    source = ramp(tmp_path / "ramp.ts", container="mpegts", gop=250)
    output = tmp_path / "ts.jpg"
    ctx = JobContext()
    result = sheet({"input": str(source), "output": str(output), "frames": 8}, ctx)
    assert result["frames"] == 8 and "note" not in result
    assert any("decoding the whole video" in (text or "") for _, text in ctx.reports)
    expected = [level_at(t) for t in result["times"]]
    assert tile_levels(output, 2, 4) == pytest.approx(expected, abs=4)


def test_a_file_cut_short_gives_its_sheet_with_black_tiles_and_says_so(
    samples: SampleCache, tmp_path: Path
) -> None:
    # Matroska cut in half: its header says 4 s, it holds 2.
    output = tmp_path / "s.jpg"
    result = sheet({"input": str(samples.get("corrupt", 4.0)), "output": str(output)})
    assert 0 < result["frames"] < 12
    assert "could not be found" in result["note"] and "black" in result["note"]
    assert (result["width"], result["height"]) == (1280, 720)
    assert tile_levels(output, 3, 4)[-1] < 2  # the last tile: black


# --- what it refuses, and what a failure leaves -----------------------------------------------


def test_an_audio_file_fails_saying_it_has_no_video(tmp_path: Path) -> None:
    audio = odd_media.short_opus(tmp_path / "talk.ogg", seconds=3.0)
    error = fails({"input": str(audio), "output": str(tmp_path / "out" / "talk.jpg")})
    assert error.error_type == "UNSUPPORTED_MEDIA"
    assert "talk.ogg has no video stream" in str(error) and "an audio file" in str(error)
    assert names(tmp_path / "out") == []


def test_cover_art_is_not_video(tmp_path: Path) -> None:
    song = tmp_path / "song.mp3"
    odd_media.ffmpeg(
        "-f", "lavfi", "-i", "sine=duration=2", "-f", "lavfi", "-i", "color=red:s=64x64:d=1",
        "-map", "0", "-map", "1", "-frames:v", "1", "-c:v", "png", "-c:a", "libmp3lame",
        "-disposition:v", "attached_pic", str(song),
    )  # fmt: skip
    error = fails({"input": str(song), "output": str(tmp_path / "song.jpg")})
    assert error.error_type == "UNSUPPORTED_MEDIA" and "cover art" in str(error)


def test_a_video_that_decodes_nothing_fails_for_good(tmp_path: Path) -> None:
    damaged = odd_media.damaged(tmp_path / "damaged.mkv")
    error = fails({"input": str(damaged), "output": str(tmp_path / "d.jpg")})
    assert error.error_type == "INPUT_DAMAGED" and "no picture" in str(error)
    assert names(tmp_path) == ["damaged.mkv"]


@pytest.mark.parametrize(
    ("change", "error_type", "says"),
    [
        # (A .jpg both: the params model takes no other output.)
        (
            {"input": "{folder}/in/a.jpg", "output": "{folder}/in/a.jpg"},
            "PAYLOAD_ERROR",
            "is the input itself",
        ),
        # 100 tiles of 1920x1440 in one column: a picture no viewer opens.
        ({"frames": 100, "columns": 1, "width": 1920}, "PAYLOAD_ERROR", "fewer frames"),
        ({"output": "{folder}/a-file/sheet.jpg"}, "IO_ERROR", "cannot write"),
        ({"keep_free_bytes": 1 << 62}, "NO_SPACE", "not enough free space"),
    ],
)
def test_refused_before_ffmpeg_runs(
    samples: SampleCache, tmp_path: Path, change: dict[str, Any], error_type: str, says: str
) -> None:
    source = samples.copy(tmp_path / "in", "mkv", 2.0)
    (tmp_path / "a-file").write_text("not a folder")
    params = {"input": str(source), "output": str(tmp_path / "sheet.jpg")}
    for key, value in change.items():
        params[key] = (
            value.format(input=source, folder=tmp_path) if isinstance(value, str) else value
        )
    error = fails(params)
    assert error.error_type == error_type and says in str(error)
    assert names(tmp_path) == ["a-file", "in"] and names(tmp_path / "in") == [source.name]


def fake_ffmpeg(tmp_path: Path, body: str) -> Path:
    """A shell script standing in for ffmpeg: ``body``, with the real one as ``$REAL``."""
    script = tmp_path / "ffmpeg"
    script.write_text(f'#!/bin/sh\nREAL="{imageio_ffmpeg.get_ffmpeg_exe()}"\n{body}\n')
    script.chmod(0o755)
    return script


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for ffmpeg")
def test_a_sheet_that_fails_verification_is_never_put_in_place(
    samples: SampleCache, tmp_path: Path
) -> None:
    # The frames are picked for real; the sheet "made" is not a JPEG.
    body = (
        'case "$*" in *mjpeg*) for last; do :; done; echo "not a picture" > "$last"; exit 0;; '
        'esac\nexec "$REAL" "$@"'
    )
    ffmpeg = fake_ffmpeg(tmp_path, body)
    output = tmp_path / "out" / "sheet.jpg"
    output.parent.mkdir()
    output.write_text("the sheet made before")
    params = {"input": str(samples.get("mkv", 2.0)), "output": str(output), "ffmpeg": str(ffmpeg)}
    error = fails(params)
    assert error.error_type == "FFMPEG_FAILED" and "failed verification" in str(error)
    # The final path keeps what it held; no temporary sheet, no piece is left.
    assert output.read_text() == "the sheet made before"
    assert names(output.parent) == ["sheet.jpg"]


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for ffmpeg")
def test_a_failing_ffmpeg_is_reported_and_leaves_nothing(
    samples: SampleCache, tmp_path: Path
) -> None:
    ffmpeg = fake_ffmpeg(tmp_path, "echo 'Conversion failed!' >&2\nexit 1")
    output = tmp_path / "out" / "sheet.jpg"
    error = fails(
        {"input": str(samples.get("mkv", 2.0)), "output": str(output), "ffmpeg": str(ffmpeg)}
    )
    assert error.error_type == "FFMPEG_FAILED"
    assert "picking frames of" in str(error) and "Conversion failed!" in str(error)
    assert names(output.parent) == []


def test_a_cancel_while_ffmpeg_runs_leaves_nothing(samples: SampleCache, tmp_path: Path) -> None:
    class CancelOnStart(JobContext):
        """Cancelled as soon as the job says it starts picking: ffmpeg is running then."""

        cancelled = False

        def progress(
            self, percent: float, status_text: str | None = None, pausable: Any = None
        ) -> None:
            super().progress(percent, status_text, pausable)
            self.cancelled = True

    output = tmp_path / "sheet.jpg"
    ctx = CancelOnStart()
    params = {"input": str(samples.get("mkv", 4.0)), "output": str(output)}
    assert run_job(thumbnail_job, params, ctx) is None
    assert ctx.reports == [(0.0, "picking frames")]
    assert names(tmp_path) == []


# --- what the endpoints server knows of its files ---------------------------------------------


def test_a_run_s_temporary_files_are_its_sheet_and_its_pieces(tmp_path: Path) -> None:
    output = tmp_path / "movie.jpg"
    params = {"input": "/m/movie.mkv", "output": str(output), outputs.PART_ID: "0000000a"}
    assert outputs.locked_paths("thumbnail", params) == [output]
    mine = [
        outputs.temp_path(output, "0000000a"),
        outputs.sheet_piece_path(output, "0000000a", 0),
        outputs.sheet_piece_path(output, "0000000a", 1),
    ]
    theirs = [
        outputs.temp_path(output, "0000000b"),
        outputs.sheet_piece_path(output, "0000000b", 0),
    ]
    # A transcode of the same material writes movie.mp4: its pieces are not the sheet's.
    transcode = tmp_path / "movie.mp4"
    other = [outputs.piece_path(transcode, "0000000c", "seg00000.mp4")]
    for path in [*mine, *theirs, *other]:
        path.write_bytes(b"")
    assert mine[1].name == ".movie.jpg.pick00.0000000a.fredica-part.nut"
    assert outputs.partial_outputs("THUMBNAIL", params) == sorted(mine)
    assert outputs.leftover_parts("THUMBNAIL", params) == sorted(theirs)
    transcoding = {"input": "/m/movie.mkv", "output": str(transcode), outputs.PART_ID: "0000000d"}
    assert outputs.leftover_parts("TRANSCODE_MP4", transcoding) == other


def test_the_thumbnail_template_makes_one_sheet_next_to_the_material() -> None:
    from fredica_app.jobs import registry
    from fredica_app.templates import get_template
    from workers.spec import prepare_run

    template = get_template("thumbnail")
    values = {"input": "/m/in.mkv", "output_dir": "/m/out", "stem": "in"}
    spec = template.expand(material_id="m1", values=values)
    (task,) = spec.tasks
    assert (task.type, task.payload["output"]) == ("THUMBNAIL", "/m/out/in.thumbnails.jpg")
    assert task.payload["check_skip"] is True
    assert len(prepare_run(spec, registry()).tasks) == 1


# --- through a real endpoints server ----------------------------------------------------------


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[int]:
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()
    yield port
    await srv.close()
    await assert_no_job_process_left()


async def run(port: int, *, check_skip: bool = False, **params: Any) -> list[dict[str, Any]]:
    async with open_task(port, name="thumbnail") as ws:
        await ws.send(dump(InitParamAndRun(data=InitData(params=params, check_skip=check_skip))))
        return await frames_until(ws, "result", "error", "cancelled", within=60)


async def test_a_sheet_through_the_endpoints_server(
    server: int, samples: SampleCache, tmp_path: Path
) -> None:
    source = samples.get("mkv", 4.0)
    output = tmp_path / "out" / "clip.jpg"
    frames = await run(server, input=str(source), output=str(output), frames=6, columns=3)
    assert frames[-1]["type"] == "result", frames[-1]
    result = frames[-1]["result"]
    assert result["outputs"] == [str(output)] and result["frames"] == 6
    assert (result["width"], result["height"]) == (960, 480)
    assert any(f["type"] == "progress" and f["percent"] > 0 for f in frames)
    assert picture(output)[1].shape == (480, 960)
    assert names(output.parent) == [".clip.jpg.fredica.json", "clip.jpg"]
    # The same again, asked to skip a current output: done at once, nothing made again.
    mtime = output.stat().st_mtime_ns
    again = await run(
        server, check_skip=True, input=str(source), output=str(output), frames=6, columns=3
    )
    assert again[-1] == {"type": "result", "result": {"skipped": True, "outputs": [str(output)]}}
    assert output.stat().st_mtime_ns == mtime
    # Params the job cannot take are refused before it starts.
    refused = await run(server, input=str(source), output=str(tmp_path / "clip.png"))
    assert refused[-1]["type"] == "error" and refused[-1]["error_type"] == "PAYLOAD_ERROR"
    assert ".jpg" in refused[-1]["error"]


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for ffmpeg")
async def test_two_sheets_to_one_output_the_second_waits_then_completes_skipped(
    samples: SampleCache, tmp_path: Path
) -> None:
    """Two tasks (two templates, say) make one sheet: the second waits for the first, which
    holds the output, then finds it made meanwhile from the same input with the same params,
    and completes as skipped, its ffmpeg never run — as a transcode does (THUMBNAIL's row
    says ``skip="current"``)."""
    # The server's ffmpeg, a second slow to start: the first job still holds its output when
    # the second arrives, however fast the machine.
    slow = fake_ffmpeg(tmp_path, 'sleep 1\nexec "$REAL" "$@"')
    srv = EndpointServer(ENDPOINTS, TOKEN, ffmpeg=str(slow))
    port = await srv.start()
    try:
        output = tmp_path / "out" / "clip.jpg"
        params = {"input": str(samples.get("mkv", 2.0)), "output": str(output), "frames": 4}
        async with (
            open_task(port, name="thumbnail") as first,
            open_task(port, name="thumbnail") as second,
        ):
            await first.send(dump(InitParamAndRun(data=InitData(params=params))))
            started = await frames_until(first, "progress", "result", "error", within=30)
            assert started[-1]["type"] == "progress", started[-1]  # it holds the output
            await second.send(dump(InitParamAndRun(data=InitData(params=params))))
            seen = await frames_until(second, "progress", within=10)
            assert seen[-1]["status_text"] == "waiting: another task is writing clip.jpg"
            done = await frames_until(first, "result", "error", within=60)
            assert done[-1]["type"] == "result", done[-1]
            made = output.stat().st_mtime_ns
            seen += await frames_until(second, "result", "error", within=30)
        assert seen[-1] == {"type": "result", "result": {"skipped": True, "outputs": [str(output)]}}
        assert "made meanwhile by another task" in seen[-2]["status_text"]
        assert output.stat().st_mtime_ns == made
        assert names(output.parent) == [".clip.jpg.fredica.json", "clip.jpg"]
    finally:
        await srv.close()
    await assert_no_job_process_left()
