"""A contact sheet's decisions, as pure functions: the tiles' shape, the layout, when the
pictures are taken, how many frames one ffmpeg run picks, and ffmpeg's argv."""

from __future__ import annotations

import pytest

from python_endpoints.jobs import ffmpeg as ff

FF = "ffmpeg-bin"


# --- the tiles and the layout -----------------------------------------------------------------


def test_a_picture_is_shown_with_its_aspect_ratio_and_its_rotation() -> None:
    assert ff.shown_size(640, 480) == (640.0, 480.0)
    # A DVD: 720x480 stored, 16:9 shown.
    width, height = ff.shown_size(720, 480, sar=32 / 27)
    assert width / height == pytest.approx(16 / 9)
    # A phone's portrait video is stored landscape, with a display matrix that turns it.
    assert ff.shown_size(1920, 1080, rotation=90) == (1080.0, 1920.0)
    assert ff.shown_size(1920, 1080, rotation=270) == (1080.0, 1920.0)
    assert ff.shown_size(1920, 1080, rotation=180) == (1920.0, 1080.0)
    assert ff.shown_size(640, 480, sar=0.0) == (640.0, 480.0)  # unknown: square pixels


def test_twelve_frames_four_to_a_row() -> None:
    layout = ff.sheet_layout(12, 4, 320, (640, 480))
    assert layout == ff.SheetLayout(frames=12, columns=4, rows=3, tile_width=320, tile_height=240)
    assert (layout.width, layout.height) == (1280, 720)


@pytest.mark.parametrize(
    ("frames", "columns", "expected"),
    [
        (1, 4, (1, 1)),  # never more columns than frames
        (3, 4, (3, 1)),
        (10, 4, (4, 3)),  # the last row is short
        (100, 20, (20, 5)),
        (5, 1, (1, 5)),
    ],
)
def test_columns_and_rows(frames: int, columns: int, expected: tuple[int, int]) -> None:
    layout = ff.sheet_layout(frames, columns, 320, (1920, 1080))
    assert (layout.columns, layout.rows) == expected


@pytest.mark.parametrize(
    ("shown", "height"),
    [
        ((1920, 1080), 180),
        ((640, 480), 240),
        ((720, 405), 180),
        ((1080, 1920), 568),  # portrait: 568.9 rounded to even
        ((128 * 8, 81 * 8), 202),  # 720x480 at SAR 32:27 (16:9 of a DVD, not quite)
        ((0, 0), 180),  # unknown: 16:9
    ],
)
def test_a_tile_keeps_the_picture_s_shape_at_an_even_height(
    shown: tuple[float, float], height: int
) -> None:
    layout = ff.sheet_layout(4, 4, 320, shown)
    assert layout.tile_height == height and height % 2 == 0


def test_a_sheet_too_large_to_open_is_refused_with_what_to_do() -> None:
    # 100 portrait frames in one column: 100 tiles of 1920x3414 pixels.
    with pytest.raises(ff.SheetTooLarge, match="fewer frames, more columns or a smaller width"):
        ff.sheet_layout(100, 1, 1920, (1080, 1920))
    with pytest.raises(ff.SheetTooLarge, match="megapixels"):
        ff.sheet_layout(100, 10, 1920, (1920, 1080))  # 19200x10800
    assert ff.sheet_layout(100, 20, 320, (1920, 1080)).width == 6400


# --- when the pictures are taken --------------------------------------------------------------


def test_times_are_the_middles_of_equal_slices() -> None:
    times = ff.sheet_times(12, 60.0, 60.0, 25.0)
    assert times == pytest.approx([2.5 + 5 * i for i in range(12)])
    assert ff.sheet_times(1, 10.0) == [5.0]


def test_no_time_is_past_the_last_picture() -> None:
    # A 0.2 s clip at 25 fps has five pictures (0 to 0.16 s): 12 tiles show some twice.
    times = ff.sheet_times(12, 0.2, 0.2, 25.0)
    assert max(times) == pytest.approx(0.14)
    assert times == sorted(times)
    # Sound that lasts longer than the picture: the times span the sound, the picture's last
    # frame is shown for the slices after it.
    times = ff.sheet_times(4, 8.0, 4.0, 25.0)
    assert times == pytest.approx([1.0, 3.0, 3.94, 3.94])


def test_a_still_picture_or_an_unknown_duration_is_taken_at_the_start() -> None:
    assert ff.sheet_times(3, None) == [0.0, 0.0, 0.0]
    assert ff.sheet_times(2, 0.0) == [0.0, 0.0]


# --- runs and their memory --------------------------------------------------------------------


def test_frames_of_an_ordinary_video_are_picked_in_one_run() -> None:
    assert ff.pick_runs(12, 640, 480) == [range(12)]
    assert ff.pick_runs(100, 640, 480) == [range(100)]
    assert ff.pick_runs(12, 3840, 2160) == [range(12)]


def test_many_frames_of_4k_are_picked_in_runs_of_bounded_memory() -> None:
    runs = ff.pick_runs(100, 3840, 2160)
    assert len(runs) > 1
    assert [i for r in runs for i in r] == list(range(100))  # every frame once, in order
    per_input = 4 * 3840 * 2160 * 3 // 2 + (2 << 20)
    assert all(len(r) * per_input <= ff.PICK_MEMORY for r in runs)
    assert ff.pick_runs(100, None, None) == ff.pick_runs(100, 1920, 1080)


def test_a_damaged_short_video_is_decoded_whole_a_long_one_only_when_nothing_was_found() -> None:
    assert not ff.decode_whole(12, 12, 60.0)
    assert ff.decode_whole(0, 12, 7200.0)
    assert ff.decode_whole(11, 12, 60.0)
    assert not ff.decode_whole(11, 12, 7200.0)
    assert ff.decode_whole(3, 12, None)


def test_the_space_a_sheet_needs_covers_its_pieces_and_the_jpeg() -> None:
    layout = ff.sheet_layout(12, 4, 320, (640, 480))
    assert ff.sheet_bytes(layout) >= 12 * 320 * 240


# --- argv -------------------------------------------------------------------------------------

LAYOUT = ff.SheetLayout(frames=3, columns=3, rows=1, tile_width=320, tile_height=180)


def test_picking_seeks_once_per_frame_in_one_run() -> None:
    args = ff.pick_frames_args(FF, "/m/in.mkv", 2, [1.0, 3.0, 5.0], LAYOUT, "/m/piece.nut", step=2)
    assert args[:6] == [FF, "-hide_banner", "-nostdin", "-y", "-loglevel", "error"]
    assert "-progress" in args and args[args.index("-progress") + 1] == "pipe:1"
    # An input per time, each with its own accurate seek and one decoding thread.
    seeks = [args[i + 1] for i, a in enumerate(args) if a == "-ss"]
    assert seeks == ["1.000000", "3.000000", "5.000000"]
    assert args.count("-i") == 3 and args.count("/m/in.mkv") == 3
    assert args.count("-threads") == 3
    graph = args[args.index("-filter_complex") + 1]
    chains = graph.split(";")
    fit = (
        "scale=320:180:force_original_aspect_ratio=decrease:force_divisible_by=2:reset_sar=1,"
        "pad=320:180:-1:-1:color=black,setsar=1"
    )
    assert chains[:3] == [f"[{i}:2]trim=end_frame=1,{fit}[f{i}]" for i in range(3)]
    assert chains[3] == ("[f0][f1][f2]concat=n=3:v=1:a=0,settb=1/1000,setpts=N*2.000000/TB[picked]")
    assert args[-9:] == [
        "-map",
        "[picked]",
        "-fps_mode",
        "passthrough",
        "-c:v",
        "ffv1",
        "-f",
        "nut",
        "/m/piece.nut",
    ]


def test_decoding_whole_takes_the_first_picture_at_or_after_each_time() -> None:
    args = ff.decode_whole_args(FF, "/m/in.ts", 0, [0.5, 1.5, 2.5], LAYOUT, "/m/p.nut", step=1)
    assert "-ss" not in args and args.count("-i") == 1
    graph = args[args.index("-filter_complex") + 1]
    assert graph.startswith("[0:0]select='if(gte(t,0.500000+ld(0)),st(0,ld(0)+1.000000))',")
    assert "force_original_aspect_ratio=decrease" in graph
    assert graph.endswith("setpts=N*1.000000/TB,trim=end_frame=3[picked]")
    assert args[-3:] == ["-f", "nut", "/m/p.nut"]


def test_the_sheet_is_laid_out_in_rows_as_one_jpeg() -> None:
    layout = ff.SheetLayout(frames=10, columns=4, rows=3, tile_width=320, tile_height=240)
    args = ff.sheet_args(FF, ["/m/a.nut"], layout, "/m/.sheet.part.jpg")
    assert "-progress" not in args  # written at the end, in a moment
    graph = args[args.index("-filter_complex") + 1]
    assert graph == "[0:v]tile=4x3:nb_frames=10[sheet]"
    quality = str(ff.SHEET_QUALITY)
    assert args[-7:] == ["-frames:v", "1", "-q:v", quality, "-f", "mjpeg", "/m/.sheet.part.jpg"]
    several = ff.sheet_args(FF, ["/m/a.nut", "/m/b.nut"], layout, "/m/s.jpg")
    graph = several[several.index("-filter_complex") + 1]
    assert graph == "[0:v][1:v]concat=n=2:v=1:a=0,tile=4x3:nb_frames=10[sheet]"
    assert several.count("-i") == 2
