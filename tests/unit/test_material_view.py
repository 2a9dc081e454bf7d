"""The library's details pane in words (:mod:`fredica_app.views.material_view`)."""

from __future__ import annotations

from typing import Any

import pytest

from fredica_app.views.material_view import (
    WORDS,
    OutputGroup,
    chapter_line,
    facts_line,
    output_groups,
    stream_line,
)
from tests.unit.test_library_view import run, task
from workers.states import RunStatus, TaskStatus


@pytest.mark.parametrize(
    ("stream", "line"),
    [
        (
            {"type": "video", "codec": "h264", "width": 1920, "height": 1080, "fps": 25.0},
            "video · h264 · 1920x1080 · 25 fps",
        ),
        (
            {"type": "video", "codec": "hevc", "fps": 29.97, "language": "eng"},
            "video · hevc · 29.97 fps · eng",
        ),
        (
            {"type": "video", "codec": "mjpeg", "width": 600, "height": 600, "attached_pic": True},
            "video · mjpeg · 600x600 · cover art",
        ),
        ({"type": "video", "codec": "h264", "width": 0, "height": 0, "fps": None}, "video · h264"),
        (
            {
                "type": "audio",
                "codec": "opus",
                "sample_rate": 48000,
                "channels": 2,
                "language": "eng",
            },
            "audio · opus · 48 kHz · stereo · eng",
        ),
        (
            {"type": "audio", "codec": "aac", "sample_rate": 44100, "channels": 1},
            "audio · aac · 44.1 kHz · mono",
        ),
        (
            {"type": "audio", "codec": "ac3", "channels": 6, "language": "und"},
            "audio · ac3 · 6 channels",
        ),
        (
            {"type": "audio", "codec": "aac", "channels": 0, "empty": True},
            "audio · aac · no sound in it",
        ),
        ({"type": "audio", "codec": "aac", "channels": True}, "audio · aac"),  # not a count
        (
            {
                "type": "subtitle",
                "codec": "subrip",
                "text": True,
                "language": "eng",
                "title": "English",
            },
            "subtitles · subrip · text · eng · “English”",
        ),
        (
            {"type": "subtitle", "codec": "dvd_subtitle", "text": False},
            "subtitles · dvd_subtitle · bitmap",
        ),
        ({"type": "data", "codec": None}, "data · ?"),
        ({"type": "timecode", "codec": "tmcd"}, "timecode · tmcd"),  # a kind with no word: as is
        ({}, "data · ?"),
    ],
)
def test_a_stream_in_a_line(stream: dict[str, Any], line: str) -> None:
    assert stream_line(stream) == line


def test_a_stream_in_the_callers_words() -> None:
    words = {**WORDS, "audio": "音频", "channels": "%1 声道"}
    assert (
        stream_line({"type": "audio", "codec": "ac3", "channels": 6}, words)
        == "音频 · ac3 · 6 声道"
    )


def test_chapters_numbered_with_their_times_and_titles() -> None:
    assert (
        chapter_line(1, {"start": 0.0, "end": 90.4, "title": "Opening"}) == "1. 0:00 - 1:30 Opening"
    )
    assert chapter_line(2, {"start": 90.4, "end": 3725.0}) == "2. 1:30 - 1:02:05"
    assert chapter_line(3, {"start": "x", "end": None, "title": ""}) == "3.  - "


def test_the_facts_of_a_material_in_a_line() -> None:
    meta = {"format": "matroska,webm"}
    assert (
        facts_line("video", 3723.0, 1536 * 1024 * 1024, meta)
        == "video · 1:02:03 · 1.5 GB · matroska,webm"
    )
    assert facts_line("unknown", None, None, {}) == "unknown"
    assert facts_line("audio", 7.0, None, {"format": None}) == "audio · 0:07"


def test_the_newest_run_of_each_template_with_its_files_newest_first() -> None:
    old = run("r1", template="transcode_mp4", created_at=100.0, status=RunStatus.COMPLETED)
    new = run("r2", template="transcode_mp4", created_at=300.0, status=RunStatus.RUNNING)
    subs = run("r3", template="subtitles", created_at=200.0, status=RunStatus.COMPLETED)
    bare = run("r4", template=None, created_at=50.0, status=RunStatus.FAILED)
    files = {"outputs": ["/lib/a/a.mp4", "/lib/a/a.srt"]}
    tasks = {
        "r2": [task("t1", "r2", status=TaskStatus.COMPLETED, result={"outputs": ["/lib/a/a.mp4"]})],
        "r3": [
            task("t2", "r3", status=TaskStatus.COMPLETED, result=files),
            task(
                "t3",
                "r3",
                status=TaskStatus.COMPLETED,
                result={"outputs": ["/lib/a/a.srt", "/out/a.vtt"]},
            ),
            task("t4", "r3", status=TaskStatus.COMPLETED, result={"skipped": True}),
        ],
    }
    groups = output_groups([new, subs, old, bare], tasks)
    assert groups == [
        OutputGroup("transcode_mp4", "r2", "running", ("/lib/a/a.mp4",)),
        OutputGroup("subtitles", "r3", "completed", ("/lib/a/a.mp4", "/lib/a/a.srt", "/out/a.vtt")),
        OutputGroup("", "r4", "failed", ()),
    ]
    assert groups[1].folders() == ["/lib/a", "/out"]
    assert groups[2].folders() == []
    assert output_groups([], {}) == []
