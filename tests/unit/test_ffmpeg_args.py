"""The media jobs' decisions, as pure functions: the MP4 rule and a transcode's plan, ffmpeg's
argv, the ``-encoders`` listing, ``-progress`` parsing, tolerances and space estimates."""

from __future__ import annotations

import pytest

from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs.ffmpeg import MediaInfo, StreamInfo

FF = "ffmpeg-bin"

VIDEO_H264 = StreamInfo(0, "video", "h264", width=320, height=240, fps=25.0)
AUDIO_OPUS = StreamInfo(1, "audio", "opus", sample_rate=48000, channels=2)
SUB_SRT = StreamInfo(2, "subtitle", "subrip", language="eng", text=True)


# --- the MP4 rule -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "fits"),
    [
        (StreamInfo(0, "video", "h264"), True),
        (StreamInfo(0, "video", "hevc"), True),
        (StreamInfo(0, "video", "av1"), True),
        (StreamInfo(0, "video", "mpeg4"), True),
        (StreamInfo(0, "video", "vp9"), False),
        (StreamInfo(0, "video", "mpeg2video"), False),
        (StreamInfo(1, "audio", "aac"), True),
        (StreamInfo(1, "audio", "mp3"), True),
        (StreamInfo(1, "audio", "ac3"), True),
        (StreamInfo(1, "audio", "eac3"), True),
        (StreamInfo(1, "audio", "opus"), True),
        (StreamInfo(1, "audio", "flac"), True),
        (StreamInfo(1, "audio", "alac"), True),
        (StreamInfo(1, "audio", "vorbis"), False),
        (StreamInfo(1, "audio", "pcm_s16le"), False),
        (StreamInfo(2, "subtitle", "subrip", text=True), False),
    ],
)
def test_which_codecs_fit_mp4(stream: StreamInfo, fits: bool) -> None:
    assert ff.fits_mp4(stream) is fits


def test_all_fit_ignores_subtitles_and_cover_art() -> None:
    cover = StreamInfo(3, "video", "mjpeg", attached_pic=True)
    assert ff.all_fit_mp4([VIDEO_H264, AUDIO_OPUS, SUB_SRT, cover])
    assert not ff.all_fit_mp4([VIDEO_H264, StreamInfo(1, "audio", "vorbis")])


def test_auto_remuxes_when_everything_fits_and_text_subtitles_become_mov_text() -> None:
    plan = ff.plan_transcode([VIDEO_H264, AUDIO_OPUS, SUB_SRT], "auto")
    assert plan.mode == "remux" and not plan.encodes_video
    assert [(s.index, s.action, s.codec) for s in plan.streams] == [
        (0, "copy", "h264"),
        (1, "copy", "opus"),
        (2, "encode", "mov_text"),
    ]


def test_auto_reencodes_only_what_does_not_fit() -> None:
    vorbis = StreamInfo(1, "audio", "vorbis")
    plan = ff.plan_transcode([VIDEO_H264, vorbis], "auto")
    assert plan.mode == "reencode" and not plan.encodes_video
    assert [(s.action, s.codec) for s in plan.streams] == [("copy", "h264"), ("encode", "aac")]
    plan = ff.plan_transcode([StreamInfo(0, "video", "vp9"), AUDIO_OPUS], "auto")
    assert plan.encodes_video
    assert [(s.action, s.codec) for s in plan.streams] == [("encode", "h264"), ("copy", "opus")]


def test_reencode_encodes_every_audio_and_video_stream() -> None:
    plan = ff.plan_transcode([VIDEO_H264, AUDIO_OPUS, SUB_SRT], "reencode")
    assert plan.mode == "reencode" and plan.encodes_video
    assert [(s.action, s.codec) for s in plan.streams] == [
        ("encode", "h264"),
        ("encode", "aac"),
        ("encode", "mov_text"),
    ]


def test_remux_refuses_a_stream_that_does_not_fit() -> None:
    with pytest.raises(ff.UnsupportedMedia, match="cannot be copied"):
        ff.plan_transcode([VIDEO_H264, StreamInfo(1, "audio", "vorbis")], "remux")


def test_no_video_stream_is_unsupported() -> None:
    cover = StreamInfo(0, "video", "mjpeg", attached_pic=True)
    with pytest.raises(ff.UnsupportedMedia, match="no video stream"):
        ff.plan_transcode([cover, AUDIO_OPUS], "auto")


def test_an_undecodable_stream_cannot_be_reencoded_but_can_be_copied() -> None:
    odd = StreamInfo(0, "video", "h264", decodable=False)
    assert ff.plan_transcode([odd], "auto").mode == "remux"
    with pytest.raises(ff.UnsupportedMedia, match="cannot be decoded"):
        ff.plan_transcode([odd], "reencode")


def test_what_is_dropped_and_why() -> None:
    streams = [
        VIDEO_H264,
        StreamInfo(1, "video", "mjpeg", attached_pic=True),
        StreamInfo(2, "subtitle", "hdmv_pgs_subtitle", text=False),
        StreamInfo(3, "data", "bin_data"),
        StreamInfo(4, "attachment", "ttf"),
    ]
    plan = ff.plan_transcode(streams, "auto")
    assert [s.index for s in plan.streams] == [0]
    reasons = dict(plan.dropped)
    assert reasons[1] == "cover art"
    assert "bitmap" in reasons[2]
    assert set(reasons) == {1, 2, 3, 4}


def test_text_subtitles_by_property_or_by_name() -> None:
    assert ff.is_text_subtitle("subrip", None)
    assert ff.is_text_subtitle("ass", None)
    assert not ff.is_text_subtitle("dvd_subtitle", None)
    assert ff.is_text_subtitle("microdvd", True)  # the decoder knows better than our list
    assert not ff.is_text_subtitle("hdmv_pgs_subtitle", False)


def test_media_info_kind_and_result_shape() -> None:
    info = MediaInfo("matroska,webm", 4.0, 1000, (VIDEO_H264, AUDIO_OPUS, SUB_SRT))
    assert info.kind == "video"
    result = info.as_dict()
    assert result["subtitles"] == 1 and result["duration"] == 4.0 and result["size"] == 1000
    assert result["streams"][0] == {
        "index": 0,
        "type": "video",
        "codec": "h264",
        "language": None,
        "title": None,
        "width": 320,
        "height": 240,
        "fps": 25.0,
    }
    assert result["streams"][1]["sample_rate"] == 48000 and result["streams"][1]["channels"] == 2
    cover = StreamInfo(0, "video", "mjpeg", attached_pic=True)
    assert MediaInfo("mp3", 4.0, 1, (cover, AUDIO_OPUS)).kind == "audio"
    assert MediaInfo("image2", None, 1, (StreamInfo(0, "video", "png"),)).kind == "other"
    assert MediaInfo("srt", 4.0, 1, (SUB_SRT,)).kind == "other"


def test_chapters_in_seconds_with_their_titles() -> None:
    from fractions import Fraction

    nano = Fraction(1, 1_000_000_000)
    first = ff.chapter(0, 1_500_000_000, nano, {"title": "Opening"})
    assert first == ff.Chapter(0.0, 1.5, "Opening")
    assert ff.chapter(3, 7, Fraction(1, 2), {"TITLE": "Ende"}) == ff.Chapter(1.5, 3.5, "Ende")
    assert ff.chapter(0, 10, Fraction(1, 10), {}) == ff.Chapter(0.0, 1.0, None)
    assert ff.chapter(10, 5, nano, {}) is None  # ends before it starts
    assert ff.chapter(0, 5, None, {}) is None  # no time base
    info = MediaInfo("matroska,webm", 4.0, 1000, (VIDEO_H264,), (first,))
    assert info.as_dict()["chapters"] == [{"start": 0.0, "end": 1.5, "title": "Opening"}]
    assert MediaInfo("mp3", 4.0, 1, (AUDIO_OPUS,)).as_dict()["chapters"] == []


def test_what_is_media() -> None:
    assert MediaInfo("matroska,webm", 4.0, 1, (VIDEO_H264,)).is_media
    assert MediaInfo("srt", 4.0, 1, (SUB_SRT,)).is_media
    assert not MediaInfo("matroska,webm", None, 1, (StreamInfo(0, "attachment", "ttf"),)).is_media
    # A text file, claimed by FFmpeg's ANSI-art demuxer as a 640x400 "video".
    assert not MediaInfo("tty", 0.2, 1, (StreamInfo(0, "video", "ansi"),)).is_media


def test_main_audio_prefers_the_default_stream() -> None:
    a = StreamInfo(1, "audio", "aac")
    b = StreamInfo(2, "audio", "aac", default=True)
    assert MediaInfo("x", 1.0, 1, (VIDEO_H264, a, b)).main_audio() == b
    assert MediaInfo("x", 1.0, 1, (VIDEO_H264, a)).main_audio() == a
    assert MediaInfo("x", 1.0, 1, (VIDEO_H264,)).main_audio() is None


# --- argv -------------------------------------------------------------------------------------


def test_remux_argv() -> None:
    plan = ff.plan_transcode([VIDEO_H264, AUDIO_OPUS, SUB_SRT], "auto")
    args = ff.transcode_args(FF, "in put.mkv", ".out.fredica-part.mp4", plan)
    assert args[0] == FF and all(isinstance(a, str) for a in args)
    assert args[-3:] == ["-f", "mp4", ".out.fredica-part.mp4"]
    assert args[args.index("-i") + 1] == "in put.mkv"  # one argument, no shell quoting
    for flag in ("-y", "-nostdin", "-nostats"):
        assert flag in args
    assert args[args.index("-progress") + 1] == "pipe:1"
    assert args[args.index("-loglevel") + 1] == "error"
    assert args[args.index("-movflags") + 1] == "+faststart"
    maps = [args[i + 1] for i, a in enumerate(args) if a == "-map"]
    assert maps == ["0:0", "0:1", "0:2"]
    assert args[args.index("-c:0") + 1] == "copy" and args[args.index("-c:1") + 1] == "copy"
    assert args[args.index("-c:2") + 1] == "mov_text"
    assert "libx264" not in args and "-crf:0" not in args


def test_reencode_argv_with_libx264() -> None:
    plan = ff.plan_transcode([VIDEO_H264, AUDIO_OPUS], "reencode")
    args = ff.transcode_args(FF, "in.mkv", "out.mp4", plan, crf=20, preset="slow")
    assert args[args.index("-c:0") + 1] == "libx264"
    assert args[args.index("-preset:0") + 1] == "slow"
    assert args[args.index("-crf:0") + 1] == "20"
    assert args[args.index("-pix_fmt:0") + 1] == "yuv420p"
    assert args[args.index("-c:1") + 1] == "aac"
    assert args[args.index("-movflags") + 1] == "+faststart"


def test_hevc_copy_is_tagged_for_apple_players() -> None:
    plan = ff.plan_transcode([StreamInfo(0, "video", "hevc")], "auto")
    args = ff.transcode_args(FF, "in.mkv", "out.mp4", plan)
    assert args[args.index("-tag:0") + 1] == "hvc1"


def test_hardware_encoders_get_their_device_and_quality_options() -> None:
    plan = ff.plan_transcode([VIDEO_H264], "reencode")
    vaapi = ff.transcode_args(FF, "in.mkv", "out.mp4", plan, encoder="h264_vaapi")
    assert vaapi.index("-init_hw_device") < vaapi.index("-i")
    assert vaapi[vaapi.index("-filter:0") + 1] == f"{ff.EVEN_SIZE},format=nv12,hwupload"
    nvenc = ff.transcode_args(FF, "in.mkv", "out.mp4", plan, encoder="h264_nvenc", crf=25)
    assert nvenc[nvenc.index("-cq:0") + 1] == "25" and "-init_hw_device" not in nvenc
    remux = ff.plan_transcode([VIDEO_H264], "auto")
    assert "-init_hw_device" not in ff.transcode_args(FF, "i", "o", remux, encoder="h264_vaapi")


def test_extract_audio_argv() -> None:
    wav = ff.extract_audio_args(FF, "in.mkv", "o.wav", stream=1)
    assert wav[wav.index("-map") + 1] == "0:1"
    assert wav[wav.index("-ar") + 1] == "16000" and wav[wav.index("-ac") + 1] == "1"
    assert wav[wav.index("-c:a") + 1] == "pcm_s16le"
    assert wav[-3:] == ["-f", "wav", "o.wav"]
    flac = ff.extract_audio_args(
        FF, "in.mkv", "o.flac", stream=2, format="flac", sample_rate=44100, channels=2
    )
    assert flac[flac.index("-c:a") + 1] == "flac" and flac[-3:] == ["-f", "flac", "o.flac"]
    assert flac[flac.index("-ar") + 1] == "44100" and flac[flac.index("-ac") + 1] == "2"


def test_extract_subtitles_argv_writes_every_file_in_one_pass() -> None:
    args = ff.extract_subtitles_args(FF, "in.mkv", [(2, "srt", "a.srt"), (2, "vtt", "a.vtt")])
    assert args.count("-i") == 1
    tail = args[args.index("in.mkv") + 1 :]
    assert tail == [
        *("-map", "0:2", "-c:s", "srt", "-f", "srt", "a.srt"),
        *("-map", "0:2", "-c:s", "webvtt", "-f", "webvtt", "a.vtt"),
    ]


def test_trial_encode_argv() -> None:
    args = ff.trial_encode_args(FF, "h264_nvenc")
    assert args[args.index("-f") + 1] == "lavfi"
    assert args[args.index("-i") + 1] == "color=size=256x256:duration=0.1"
    assert args[args.index("-frames:v") + 1] == "1"
    assert args[args.index("-c:v") + 1] == "h264_nvenc"
    assert args[-3:] == ["-f", "null", "-"]


ENCODERS = """\
Encoders:
 V..... = Video
 A..... = Audio
 S..... = Subtitle
 .F.... = Frame-level multithreading
 ..S... = Slice-level multithreading
 ...X.. = Codec is experimental
 ....B. = Supports draw_horiz_band
 .....D = Supports direct rendering method 1
 ------
 V....D libx264              libx264 H.264 / AVC / MPEG-4 AVC / MPEG-4 part 10 (codec h264)
 V....D h264_amf             AMD AMF H.264 Encoder (codec h264)
 V....D h264_nvenc           NVIDIA NVENC H.264 encoder (codec h264)
 V..... h264_qsv             H.264 (Intel Quick Sync Video acceleration) (codec h264)
 V....D h264_vaapi           H.264/AVC (VAAPI) (codec h264)
 A....D aac                  AAC (Advanced Audio Coding)
 A..X.D opus                 Opus
 S..... srt                  SubRip subtitle (codec subrip)
"""


def test_parse_encoders_and_the_hardware_candidates_best_first() -> None:
    encoders = ff.parse_encoders(ENCODERS)
    assert encoders["libx264"] == "V" and encoders["aac"] == "A" and encoders["srt"] == "S"
    assert "Video" not in encoders and "=" not in encoders  # the legend is not a listing
    assert ff.hardware_candidates(encoders) == ["h264_nvenc", "h264_qsv", "h264_amf", "h264_vaapi"]
    assert ff.parse_encoders("") == {} and ff.hardware_candidates({}) == []


def test_a_hardware_encoder_is_tested_only_where_its_driver_has_a_device() -> None:
    def possible(platform: str, present: list[str]) -> list[str]:
        return [e for e in ff.HARDWARE_H264_ENCODERS if ff.could_work(e, platform, present)]

    assert possible("linux", []) == []  # a server or a virtual machine: no test encode at all
    assert possible("linux", ["/dev/dri"]) == ["h264_qsv", "h264_amf", "h264_vaapi"]
    assert possible("linux", ["/dev/nvidiactl"]) == ["h264_nvenc"]
    assert possible("linux", ["/proc/driver/nvidia"]) == ["h264_nvenc"]  # no device file yet
    assert possible("linux", ["/dev/dxg", "/dev/dri"]) == [  # WSL 2
        "h264_nvenc",
        "h264_qsv",
        "h264_amf",
        "h264_vaapi",
    ]
    assert possible("darwin", []) == [
        "h264_nvenc",
        "h264_qsv",
        "h264_videotoolbox",
        "h264_amf",
        "h264_vaapi",
    ]
    assert "h264_videotoolbox" not in possible("win32", [])
    assert possible("win32", []) == ["h264_nvenc", "h264_qsv", "h264_amf", "h264_vaapi"]


# --- -progress --------------------------------------------------------------------------------


def feed(parser: ff.ProgressParser, block: str) -> list[ff.ProgressSnapshot]:
    return [s for line in block.splitlines() if (s := parser.feed(line)) is not None]


def test_progress_blocks_give_snapshots() -> None:
    parser = ff.ProgressParser()
    block = "frame=10\nout_time_us=1500000\nout_time_ms=1500000\nout_time=00:00:01.500000\n"
    [snap] = feed(parser, block + "speed=3.14x\nprogress=continue\n")
    assert snap == ff.ProgressSnapshot(1.5, 3.14, False)
    assert snap.percent(6.0) == 25.0
    assert ff.status_text("transcoding", snap.percent(6.0), snap.speed) == "transcoding 25 % (3.1x)"


def test_progress_skips_na_and_never_goes_back() -> None:
    parser = ff.ProgressParser()
    [first] = feed(parser, "out_time_us=N/A\nout_time=N/A\nspeed=N/A\nprogress=continue\n")
    assert first.out_time == 0.0 and first.speed is None
    [second] = feed(parser, "out_time_us=4000000\nspeed=2x\nprogress=continue\n")
    # Several streams: the time of the stream just written can be behind the others.
    [third] = feed(parser, "out_time_us=3000000\nout_time=00:00:03.000000\nprogress=continue\n")
    [fourth] = feed(parser, "out_time_us=N/A\nprogress=continue\n")
    assert [second.out_time, third.out_time, fourth.out_time] == [4.0, 4.0, 4.0]


def test_progress_end_is_100_percent() -> None:
    parser = ff.ProgressParser()
    [snap] = feed(parser, "out_time_us=2000000\nspeed=1.41e+03x\nprogress=end\n")
    assert snap.done and snap.percent(10.0) == 100.0 and snap.speed == 1410.0
    assert ff.status_text("remuxing", 100.0, snap.speed) == "remuxing 100 % (1410x)"


def test_progress_before_the_first_packet_and_without_a_duration() -> None:
    parser = ff.ProgressParser()
    [snap] = feed(parser, "out_time=-00:00:00.040000\nprogress=continue\n")
    assert snap.out_time == 0.0
    assert ff.ProgressSnapshot(5.0, None, False).percent(None) == 0.0
    assert ff.ProgressSnapshot(12.0, None, False).percent(10.0) == 100.0
    assert ff.status_text("extracting audio", 42.4, None) == "extracting audio 42 %"
    assert parser.feed("garbage without an equals sign") is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:00:01.500000", 1.5),
        ("01:02:03.25", 3723.25),
        ("-00:00:00.040000", -0.04),
        ("N/A", None),
        ("12.5", None),
        ("aa:bb:cc", None),
    ],
)
def test_parse_clock(text: str, seconds: float | None) -> None:
    parsed = ff.parse_clock(text)
    assert parsed == pytest.approx(seconds) if seconds is not None else parsed is None


def test_throttle() -> None:
    throttle = ff.Throttle(0.2)
    assert throttle.ready(10.0)
    assert not throttle.ready(10.1)
    assert throttle.ready(10.25)
    assert not throttle.ready(10.3)


# --- judging the result -----------------------------------------------------------------------


def test_duration_tolerance() -> None:
    assert ff.duration_tolerance(4.0) == 0.5
    assert ff.duration_tolerance(100.0) == pytest.approx(2.0)
    assert ff.duration_ok(4.3, 4.0) and not ff.duration_ok(3.4, 4.0)
    assert ff.duration_ok(98.5, 100.0) and not ff.duration_ok(97.0, 100.0)
    assert ff.duration_ok(None, None) and not ff.duration_ok(None, 4.0)


def test_space_estimates() -> None:
    assert ff.estimate_output_bytes("TRANSCODE_MP4", input_size=10_000, duration=4.0) == 10_000
    wav = ff.estimate_output_bytes("EXTRACT_AUDIO", input_size=1, duration=10.0)
    assert wav == 10 * 16000 * 2 + 4096
    flac = ff.estimate_output_bytes(
        "EXTRACT_AUDIO", input_size=1, duration=10.0, audio_format="flac"
    )
    assert flac < wav
    stereo = ff.estimate_output_bytes(
        "EXTRACT_AUDIO", input_size=1, duration=10.0, sample_rate=48000, channels=2
    )
    assert stereo == 10 * 48000 * 2 * 2 + 4096
    assert ff.estimate_output_bytes("EXTRACT_SUBTITLES", input_size=1, duration=1, files=3) == (
        3 * ff.SUBTITLE_FILE_BYTES
    )
    assert ff.has_room(free=1000, needed=400, keep_free=600)
    assert not ff.has_room(free=1000, needed=401, keep_free=600)
    assert ff.human_bytes(512) == "512 B" and ff.human_bytes(3 << 30) == "3.0 GiB"


# --- inputs from elsewhere: what the decisions do with them -----------------------------------


def test_an_audio_stream_without_sound_is_treated_as_absent() -> None:
    # A transport stream that declares audio it never sends: FFmpeg finds no sample rate.
    silent = StreamInfo(1, "audio", "aac", empty=True)
    plan = ff.plan_transcode([VIDEO_H264, silent], "auto")
    assert [s.index for s in plan.streams] == [0] and plan.count("audio") == 0
    assert dict(plan.dropped) == {1: ff.EMPTY_AUDIO}
    info = MediaInfo("mpegts", 3.0, 1, (VIDEO_H264, silent))
    assert info.main_audio() is None and info.kind == "video"
    assert info.as_dict()["streams"][1]["empty"] is True
    assert "empty" not in info.as_dict()["streams"][0]
    assert MediaInfo("mpegts", 3.0, 1, (silent,)).kind == "other"
    assert MediaInfo("mpegts", 3.0, 1, (VIDEO_H264, silent, AUDIO_OPUS)).main_audio() == AUDIO_OPUS


def test_how_long_media_plays_is_its_longest_audio_or_video_stream() -> None:
    # Matroska counts a subtitle running past the picture in its duration.
    video = StreamInfo(0, "video", "h264", duration=3.0)
    audio = StreamInfo(1, "audio", "opus", duration=3.008)
    late = StreamInfo(2, "subtitle", "subrip", text=True, duration=6.0)
    cover = StreamInfo(3, "video", "mjpeg", attached_pic=True, duration=9.0)
    assert MediaInfo("matroska,webm", 6.0, 1, (video, audio, late, cover)).playing_duration == 3.008
    assert ff.longest([video, late]) == 3.0 and ff.longest([late]) is None
    assert MediaInfo("matroska,webm", 6.0, 1, (VIDEO_H264, late)).playing_duration == 6.0


def test_what_ffmpeg_only_guessed_from_a_file_name_is_not_media() -> None:
    raw = MediaInfo("image2", 0.04, 1, (StreamInfo(0, "video", "rawvideo"),))
    assert raw.guessed_as == "an image sequence of raw video (image2, rawvideo)"
    garbage = MediaInfo("image2", 0.04, 1, (StreamInfo(0, "video", "png"),))
    assert garbage.guessed_as is not None and "no picture" in garbage.guessed_as
    jpeg = StreamInfo(0, "video", "mjpeg", width=64, height=64)
    assert MediaInfo("image2", 0.04, 1, (jpeg,)).guessed_as is None  # a real picture
    assert MediaInfo("png_pipe", None, 1, (StreamInfo(0, "video", "png"),)).guessed_as is None
    assert MediaInfo("matroska,webm", 4.0, 1, (VIDEO_H264,)).guessed_as is None


def test_reencoded_video_is_padded_to_even_dimensions() -> None:
    plan = ff.plan_transcode([StreamInfo(0, "video", "vp8"), AUDIO_OPUS], "auto")
    for encoder in ("libx264", "h264_nvenc", "h264_qsv"):
        args = ff.transcode_args(FF, "in.mkv", "out.mp4", plan, encoder=encoder)
        assert args[args.index("-filter:0") + 1] == ff.EVEN_SIZE
        assert args[args.index("-pix_fmt:0") + 1] == "yuv420p"
    assert ff.EVEN_SIZE == "pad=ceil(iw/2)*2:ceil(ih/2)*2"
    copied = ff.transcode_args(FF, "in.mkv", "out.mp4", ff.plan_transcode([VIDEO_H264], "auto"))
    assert not any(a.startswith("-filter") for a in copied)


def test_duration_verdict_trusts_what_the_input_holds_over_its_header() -> None:
    assert ff.duration_verdict(12.7, 12.72) == "ok"
    assert ff.duration_verdict(10.72, 12.73) == "mismatch"  # not measured yet
    assert ff.duration_verdict(10.72, 12.73, 10.73) == "input_shorter"
    assert ff.duration_verdict(20.0, 10.0, 20.1) == "input_longer"  # a header written early
    assert ff.duration_verdict(1.0, 4.0, 4.0) == "mismatch"  # the output lost part of it
    assert ff.duration_verdict(None, 4.0, 4.0) == "mismatch"
    assert ff.duration_verdict(3.0, None) == "ok"  # nothing declared: nothing to compare


def test_captions_argv_reads_them_from_the_decoded_video_whatever_the_path() -> None:
    path = "/media/we ird's [a],b;c:d\\e=f.ts"
    args = ff.extract_captions_args(FF, path, 0, [("srt", "o.srt"), ("vtt", "o.vtt")])
    assert args[args.index("-f") + 1] == "lavfi"
    graph = args[args.index("-i") + 1]
    assert graph == ff.captions_graph(path, 0)
    # Both levels of ffmpeg's parsing undone give the path back: the graph's backslashes,
    # then the option's quotes.
    assert graph.startswith("movie=") and graph.endswith("[out0+subcc]")
    assert graph == (
        "movie=filename=\\'/media/we ird\\'\\\\\\'\\'s \\[a\\]\\,b\\;c:d\\\\e=f.ts\\'"
        ":stream_index=0[out0+subcc]"
    )
    tail = args[args.index(graph) + 1 :]
    assert tail == [
        *("-map", "0:s", "-c:s", "srt", "-f", "srt", "o.srt"),
        *("-map", "0:s", "-c:s", "webvtt", "-f", "webvtt", "o.vtt"),
        *("-map", "0:v", "-c:v", "wrapped_avframe", "-f", "null", "-"),
    ]
    assert "h264" in ff.CAPTION_CODECS and "mpeg2video" in ff.CAPTION_CODECS


def test_caption_markup_is_left_out_of_an_srt() -> None:
    srt = (
        '1\n00:00:01,080 --> 00:00:01,720\n<font face="Monospace">{\\an7}HELLO FROM FREDICA'
        "</font>\n\n"
    )
    assert ff.tidy_captions(srt) == "1\n00:00:01,080 --> 00:00:01,720\nHELLO FROM FREDICA\n\n"


# --- output profiles, limits, loudness --------------------------------------------------------

H264_HIGH = StreamInfo(
    0,
    "video",
    "h264",
    width=1920,
    height=1080,
    fps=25.0,
    profile="High",
    level=40,
    pix_fmt="yuv420p",
)
AAC_LC = StreamInfo(1, "audio", "aac", sample_rate=48000, channels=2, profile="LC")


@pytest.mark.parametrize(
    ("stream", "fits"),
    [
        (H264_HIGH, True),
        (StreamInfo(0, "video", "h264", profile="Main", level=31, pix_fmt="yuv420p"), True),
        (
            StreamInfo(
                0, "video", "h264", profile="Constrained Baseline", level=13, pix_fmt="yuv420p"
            ),
            True,
        ),
        (StreamInfo(0, "video", "h264", profile="High", level=42, pix_fmt="yuv420p"), False),
        (StreamInfo(0, "video", "h264", profile="High", level=None, pix_fmt="yuv420p"), False),
        (StreamInfo(0, "video", "h264", profile="High 10", level=40, pix_fmt="yuv420p10le"), False),
        (StreamInfo(0, "video", "h264", profile="High 4:2:2", level=40, pix_fmt="yuv422p"), False),
        (StreamInfo(0, "video", "h264", profile="High", level=40, pix_fmt="yuvj420p"), False),
        (StreamInfo(0, "video", "hevc", profile="Main", level=93, pix_fmt="yuv420p"), False),
        (AAC_LC, True),
        (StreamInfo(1, "audio", "aac", channels=1, profile="LC"), True),
        (StreamInfo(1, "audio", "aac", channels=6, profile="LC"), False),
        (StreamInfo(1, "audio", "aac", channels=2, profile="HE-AAC"), False),
        (StreamInfo(1, "audio", "opus", channels=2), False),
        (StreamInfo(1, "audio", "flac", channels=2), False),
    ],
)
def test_what_the_compatible_profile_copies(stream: StreamInfo, fits: bool) -> None:
    assert ff.fits_profile(stream, "compatible") is fits
    assert ff.fits_profile(stream, "modern") is ff.fits_mp4(stream)


def test_compatible_reencodes_opus_and_high10_but_copies_what_plays_everywhere() -> None:
    high10 = StreamInfo(0, "video", "h264", profile="High 10", level=30, pix_fmt="yuv420p10le")
    plan = ff.plan_transcode([high10, AUDIO_OPUS, SUB_SRT], "auto", "compatible")
    assert [(s.index, s.action, s.codec) for s in plan.streams] == [
        (0, "encode", "h264"),
        (1, "encode", "aac"),
        (2, "encode", "mov_text"),
    ]
    plan = ff.plan_transcode([H264_HIGH, AAC_LC], "auto", "compatible")
    assert plan.mode == "remux"
    with pytest.raises(ff.UnsupportedMedia, match="High 10 level 3 yuv420p10le"):
        ff.plan_transcode([high10, AAC_LC], "remux", "compatible")


def test_modern_copies_opus() -> None:
    plan = ff.plan_transcode([VIDEO_H264, AUDIO_OPUS], "auto", "modern")
    assert plan.mode == "remux"


def test_archive_copies_and_refuses_what_mp4_cannot_hold() -> None:
    plan = ff.plan_transcode([VIDEO_H264, AUDIO_OPUS, SUB_SRT], "auto", "archive")
    assert [s.action for s in plan.streams] == ["copy", "copy", "encode"]
    vorbis = StreamInfo(1, "audio", "vorbis", sample_rate=48000, channels=2)
    with pytest.raises(ff.UnsupportedMedia, match="use profile modern"):
        ff.plan_transcode([VIDEO_H264, vorbis], "auto", "archive")
    pgs = StreamInfo(2, "subtitle", "hdmv_pgs_subtitle")
    with pytest.raises(ff.UnsupportedMedia, match="bitmap subtitles"):
        ff.plan_transcode([VIDEO_H264, pgs], "auto", "archive")
    with pytest.raises(ff.UnsupportedMedia, match="archive"):
        ff.plan_transcode([VIDEO_H264], "auto", "archive", ff.Limits(loudness=True))


def test_limits_force_a_reencode_with_a_scale_and_an_fps_filter() -> None:
    fast = StreamInfo(
        0,
        "video",
        "h264",
        width=1920,
        height=1080,
        fps=59.94,
        profile="High",
        level=40,
        pix_fmt="yuv420p",
    )
    limits = ff.Limits(max_height=721, max_fps=30)
    plan = ff.plan_transcode([fast, AAC_LC], "auto", "compatible", limits)
    video, audio = plan.streams
    assert video.action == "encode" and video.filters == ("scale=-2:720", "fps=30")
    assert audio.action == "copy"
    args = ff.transcode_args(FF, "in.mkv", "out.mp4", plan, compatible=True)
    assert args[args.index("-filter:0") + 1] == f"scale=-2:720,fps=30,{ff.EVEN_SIZE}"
    # Within the limits: nothing to do, copied.
    plan = ff.plan_transcode([fast], "auto", "compatible", ff.Limits(max_height=1080, max_fps=60))
    assert plan.mode == "remux"


def test_compatible_argv_is_high_at_4_1_and_stereo_aac() -> None:
    six = StreamInfo(1, "audio", "eac3", sample_rate=48000, channels=6)
    plan = ff.plan_transcode([VIDEO_H264, six], "reencode", "compatible")
    args = ff.transcode_args(FF, "in.mkv", "out.mp4", plan, compatible=True)
    assert args[args.index("-profile:0") + 1] == "high"
    assert args[args.index("-level:0") + 1] == "4.1"
    assert args[args.index("-pix_fmt:0") + 1] == "yuv420p"
    assert args[args.index("-c:1") + 1] == "aac" and args[args.index("-ac:1") + 1] == "2"
    assert args[args.index("-movflags") + 1] == "+faststart"
    modern = ff.transcode_args(FF, "in.mkv", "out.mp4", plan)
    assert "-profile:0" not in modern and "-ac:1" not in modern


LOUDNORM_STDERR = """[Parsed_loudnorm_0 @ 0x5581] 
{
	"input_i" : "-27.61",
	"input_tp" : "-4.47",
	"input_lra" : "18.06",
	"input_thresh" : "-39.20",
	"output_i" : "-16.58",
	"output_tp" : "-1.50",
	"output_lra" : "14.78",
	"output_thresh" : "-27.71",
	"normalization_type" : "dynamic",
	"target_offset" : "0.58"
}
[out#0/null @ 0x5582] video:0KiB audio:1KiB"""  # noqa: W291 - ffmpeg's own trailing space


def test_loudness_two_passes() -> None:
    args = ff.loudness_measure_args(FF, "in.mkv", 3)
    assert args[args.index("-map") + 1] == "0:3"
    assert args[args.index("-loglevel") + 1] == "info"  # loudnorm prints at info
    assert args[args.index("-filter:a") + 1] == "loudnorm=I=-23:TP=-1:LRA=7:print_format=json"
    assert args[-3:] == ["-f", "null", "-"]
    measured = ff.parse_loudnorm(LOUDNORM_STDERR.splitlines())
    assert measured == ff.Loudness(-27.61, -4.47, 18.06, -39.2, 0.58)
    assert ff.parse_loudnorm(["nothing"]) is None
    silent = LOUDNORM_STDERR.replace('"-27.61"', '"-inf"').splitlines()
    assert ff.parse_loudnorm(silent) is None
    plan = ff.plan_transcode([H264_HIGH, AAC_LC], "auto", "compatible", ff.Limits(loudness=True))
    assert plan.encoded_audio() == [1] and not plan.encodes_video
    args = ff.transcode_args(FF, "in.mkv", "out.mp4", plan, loudness={1: measured})
    assert args[args.index("-filter:1") + 1] == (
        "loudnorm=I=-23:TP=-1:LRA=7:measured_I=-27.61:measured_TP=-4.47:measured_LRA=18.06"
        ":measured_thresh=-39.2:offset=0.58:linear=true,aresample=48000"
    )
