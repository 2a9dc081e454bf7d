"""Reading an ffmpeg's hardware encoders from its ``-encoders`` listing."""

from __future__ import annotations

from fredica_app.views.encoders import (
    BACKENDS,
    Encoder,
    backend_of,
    by_backend,
    hardware_encoders,
    parse_encoders,
    parse_version,
)

# Lines of a real ``ffmpeg -hide_banner -encoders`` (the imageio-ffmpeg build of FFmpeg 9.0),
# as it printed them: the legend, the dashes, then a selection of its 230 encoders.
LISTING = """\
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
 V....D a64multi             Multicolor charset for Commodore 64 (codec a64_multi)
 V....D av1_nvenc            NVIDIA NVENC av1 encoder (codec av1)
 V....D av1_amf              AMD AMF AV1 encoder (codec av1)
 V..... h263_v4l2m2m         V4L2 mem2mem H.263 encoder wrapper (codec h263)
 V....D libx264              libx264 H.264 / AVC / MPEG-4 AVC / MPEG-4 part 10 (codec h264)
 V....D h264_amf             AMD AMF H.264 Encoder (codec h264)
 V....D h264_nvenc           NVIDIA NVENC H.264 encoder (codec h264)
 V..... h264_qsv             H.264 / AVC / MPEG-4 AVC / MPEG-4 part 10 (Intel Quick Sync Video \
acceleration) (codec h264)
 V..... h264_v4l2m2m         V4L2 mem2mem H.264 encoder wrapper (codec h264)
 V....D h264_vaapi           H.264/AVC (VAAPI) (codec h264)
 V....D h264_vulkan          H.264/AVC (Vulkan) (codec h264)
 V....D hevc_nvenc           NVIDIA NVENC hevc encoder (codec hevc)
 V....D mjpeg                MJPEG (Motion JPEG)
 A....D aac                  AAC (Advanced Audio Coding)
 A....D libopus              libopus Opus (codec opus)
 S..... mov_text             3GPP Timed Text subtitle
"""

VERSION = (
    "ffmpeg version n9.0.2-17-g2a571b6068-20260930 Copyright (c) 2000-2026 the FFmpeg "
    "developers\nbuilt with gcc 16.2.0 (crosstool-NG 1.29.0.7_b1a94f6)\n"
)


def test_every_encoder_of_a_real_listing_is_read_and_the_legend_is_not() -> None:
    encoders = parse_encoders(LISTING)
    names = [e.name for e in encoders]
    assert names[0] == "a64multi" and names[-1] == "mov_text"
    assert len(names) == 16
    assert "=" not in names  # the legend's " V..... = Video" is no encoder
    assert encoders[-1] == Encoder(
        name="mov_text",
        kind="S",
        description="3GPP Timed Text subtitle",
        codec="mov",
        backend=None,
    )
    assert {e.kind for e in encoders} == {"V", "A", "S"}


def test_the_codec_comes_from_the_description_else_from_the_name() -> None:
    codecs = {e.name: e.codec for e in parse_encoders(LISTING)}
    assert codecs["libx264"] == "h264"
    assert codecs["h264_qsv"] == "h264"  # a description with two parentheses
    assert codecs["a64multi"] == "a64_multi"
    assert codecs["mjpeg"] == "mjpeg"  # no "(codec …)": the name


def test_the_hardware_encoders_of_a_real_listing() -> None:
    hardware = hardware_encoders(LISTING)
    assert [(e.name, e.backend) for e in hardware] == [
        ("av1_nvenc", "nvenc"),
        ("av1_amf", "amf"),
        ("h263_v4l2m2m", "v4l2m2m"),
        ("h264_amf", "amf"),
        ("h264_nvenc", "nvenc"),
        ("h264_qsv", "qsv"),
        ("h264_v4l2m2m", "v4l2m2m"),
        ("h264_vaapi", "vaapi"),
        ("h264_vulkan", "vulkan"),
        ("hevc_nvenc", "nvenc"),
    ]
    assert by_backend(hardware) == [
        ("NVIDIA NVENC", ["av1_nvenc", "h264_nvenc", "hevc_nvenc"]),
        ("Intel Quick Sync", ["h264_qsv"]),
        ("VA-API", ["h264_vaapi"]),
        ("AMD AMF", ["av1_amf", "h264_amf"]),
        ("V4L2 mem2mem", ["h263_v4l2m2m", "h264_v4l2m2m"]),
        ("Vulkan", ["h264_vulkan"]),
    ]


def test_by_backend_leaves_software_encoders_out() -> None:
    assert by_backend(parse_encoders(LISTING)) == by_backend(hardware_encoders(LISTING))
    assert by_backend([]) == []


def test_a_backend_is_a_whole_part_of_the_name() -> None:
    assert backend_of("nvenc_h264") == "nvenc"  # older builds put the API first
    assert backend_of("nvenc") == "nvenc"
    assert backend_of("h264_videotoolbox") == "videotoolbox"
    assert backend_of("h264_mf") == "mf"
    assert backend_of("libx264") is None
    assert backend_of("mf4") is None  # "mf" inside a word is not Media Foundation
    assert set(BACKENDS) >= {"nvenc", "qsv", "vaapi", "videotoolbox", "amf", "v4l2m2m"}


def test_lines_that_are_not_encoders_are_skipped() -> None:
    text = "\n".join(
        [
            " V..... = Video",  # before the dashes: the legend
            "",
            " ------",
            "",  # blank
            " V....D",  # flags alone
            " X....D weird  not a kind",  # not V, A or S
            " V..D short  flags too short",
            " V....D bare",  # no description
            " A....D aac  AAC",
        ]
    )
    encoders = parse_encoders(text)
    assert [(e.name, e.description, e.codec) for e in encoders] == [
        ("bare", "", "bare"),
        ("aac", "AAC", "aac"),
    ]


def test_no_dashes_no_encoders() -> None:
    assert parse_encoders("") == []
    assert parse_encoders("ffmpeg: unrecognized option '-encoders'\n") == []
    assert hardware_encoders("") == []


def test_the_version_of_a_real_ffmpeg() -> None:
    assert parse_version(VERSION) == "n9.0.2-17-g2a571b6068-20260930"
    assert parse_version("ffmpeg version 7.1 Copyright (c) 2000-2024\n") == "7.1"
    assert parse_version("") is None
    assert parse_version("  \n") is None
    assert parse_version("avconv version 12\n") is None
