"""What a failed ffmpeg run means (pure): its error type — never retried when the input causes
it —, its cause, and the lines of its stderr that say why. The stderr lines are what the bundled
ffmpeg wrote on real inputs (addresses kept: the classifier removes them)."""

from __future__ import annotations

import pytest

from python_endpoints.jobs import failures
from python_endpoints.jobs.failures import StderrLog, classify
from workers.states import NON_RETRYABLE

ODD_SIZE = [
    "[libx264 @ 0x562f7ac44840] height not divisible by 2 (720x405)",
    "[vost#0:0/libx264 @ 0x562f7ac43cc0] [enc:libx264 @ 0x562f7ac44780] Error while opening "
    "encoder - maybe incorrect parameters such as bit_rate, rate, width or height.",
    "[vf#0:0 @ 0x562f7ac54bc0] Error sending frames to consumers: Generic error in an external "
    "library",
    "[vost#0:0/libx264 @ 0x562f7ac43cc0] [enc:libx264 @ 0x562f7ac44780] Could not open encoder "
    "before EOF",
    "[vost#0:0/libx264 @ 0x562f7ac43cc0] Task finished with error code: -22 (Invalid argument)",
    "[out#0/mp4 @ 0x562f7ac41540] Nothing was written into output file, because at least one "
    "of its streams received no packets.",
]
DAMAGED = [
    "[in#0/matroska,webm @ 0x5624c683d100] Invalid track number 1056",
    "[vf#0:0 @ 0x5624c684f540] Cannot determine format of input 0:0 after EOF",
    "[vf#0:0 @ 0x5624c684f540] Task finished with error code: -1094995529 (Invalid data found "
    "when processing input)",
    "[vost#0:0/libx264 @ 0x5624c6841140] [enc:libx264 @ 0x5624c6841c00] Could not open encoder "
    "before EOF",
    "[out#0/mp4 @ 0x5624c6845780] Nothing was written into output file, because at least one "
    "of its streams received no packets.",
]
NO_SPACE = [
    "[out#0/mp4 @ 0x55] Error muxing a packet",
    "[mp4 @ 0x55] av_interleaved_write_frame(): No space left on device",
    "Error writing trailer: No space left on device",
]


@pytest.mark.parametrize(
    ("stderr", "returncode", "signal", "error_type", "cause"),
    [
        (ODD_SIZE, 187, None, "UNSUPPORTED_MEDIA", "frame size is odd"),
        (DAMAGED, 183, None, "INPUT_DAMAGED", "damaged"),
        (
            ["[h264 @ 0x1] Invalid NAL unit size (4519 > 1024).", "[h264 @ 0x1] Error splitting"],
            1,
            None,
            "INPUT_DAMAGED",
            "damaged",
        ),
        (
            ["Decoder (codec none) not found for input stream #0:1"],
            1,
            None,
            "UNSUPPORTED_MEDIA",
            "",
        ),
        (
            [
                "[mp4 @ 0x1] Could not find tag for codec pcm_s24le in stream #1, codec not "
                "currently supported in container"
            ],
            1,
            None,
            "UNSUPPORTED_MEDIA",
            "output's format",
        ),
        (NO_SPACE, 1, None, "NO_SPACE", "disk is full"),
        (["[in#0 @ 0x1] Error during demuxing: Input/output error"], 1, None, "IO_ERROR", ""),
        (["[tcp @ 0x1] Connection reset by peer"], 1, None, "NETWORK_ERROR", ""),
        (["[mp4 @ 0x1] Cannot allocate memory"], 1, None, "OUT_OF_MEMORY", ""),
        ([], -9, "SIGKILL", "SUBPROCESS_CRASHED", "killed (SIGKILL)"),
        ([], -11, "SIGSEGV", "FFMPEG_FAILED", "crashed (SIGSEGV)"),
        # SIGTERM or SIGINT: ffmpeg exits 255 and says nothing at -loglevel error.
        ([], 255, None, "SUBPROCESS_CRASHED", "stopped by another program"),
        (
            ["[mp4 @ 0x1] sample rate not set", "Could not write header"],
            234,
            None,
            "FFMPEG_FAILED",
            "",
        ),
        (["Error muxing a packet", "Conversion failed!"], 1, None, "FFMPEG_FAILED", ""),
        ([], 1, None, "FFMPEG_FAILED", "stopped with an error"),
    ],
)
def test_classify(
    stderr: list[str], returncode: int, signal: str | None, error_type: str, cause: str
) -> None:
    failure = classify(stderr, returncode, signal)
    assert failure.error_type == error_type
    assert cause in failure.cause and failure.advice
    # What the input causes is never retried; what could go differently is.
    assert failure.retryable == (error_type not in NON_RETRYABLE)


def test_only_what_could_go_differently_is_retried() -> None:
    assert failures.TRANSIENT.isdisjoint(NON_RETRYABLE)
    permanent = {rule.error_type for rule in failures.RULES} - failures.TRANSIENT
    assert permanent | {"FFMPEG_FAILED"} <= NON_RETRYABLE
    assert permanent == {"NO_SPACE", "UNSUPPORTED_MEDIA", "INPUT_DAMAGED"}


def test_the_line_that_explains_is_quoted_not_just_the_tail() -> None:
    failure = classify(ODD_SIZE, 187)
    assert failure.lines[0] == "[libx264] height not divisible by 2 (720x405)"  # no address
    assert failure.lines[-1].startswith("[out#0/mp4] Nothing was written")
    assert len(failure.lines) <= failures.QUOTED_LINES
    assert all("@ 0x" not in line for line in failure.lines)
    # The earliest complaint decides: a decoder error after the cause does not.
    failure = classify([ODD_SIZE[0], *["[h264 @ 0x1] error while decoding MB 3 4"] * 3], 1)
    assert failure.error_type == "UNSUPPORTED_MEDIA" and "odd" in failure.cause
    # A full disk decides whatever came before it.
    assert classify([DAMAGED[0], *NO_SPACE], 1).error_type == "NO_SPACE"


def test_explaining_lines_are_few_short_and_in_order() -> None:
    lines = [f"line {i}" for i in range(10)] + ["x" * 500, "an Error here", "the end"]
    picked = failures.explaining_lines(lines, first=3)
    assert picked[0] == "line 0" and picked[1] == "line 3" and picked[-1] == "the end"
    assert "an Error here" in picked or len(picked) == failures.QUOTED_LINES
    assert all(len(line) <= failures.QUOTED_WIDTH for line in picked)
    assert failures.explaining_lines([]) == ()
    assert failures.tidy("[h264 @ 0x55d0a1b2c3d4] bad") == "[h264] bad"


def test_a_long_stderr_keeps_its_first_and_last_lines() -> None:
    log = StderrLog(head=3, tail=2)
    for i in range(1000):
        log.add(f"line {i}")
    assert log.lines == ["line 0", "line 1", "line 2", "line 998", "line 999"]
    assert log.dropped == 995
    short = StderrLog()
    short.add("only")
    assert short.lines == ["only"] and short.dropped == 0
    # The cause on the first line survives a flood of decoder complaints.
    flood = StderrLog()
    for line in [ODD_SIZE[0], *(["[h264 @ 0x1] concealing 20 DC errors"] * 5000), ODD_SIZE[-1]]:
        flood.add(line)
    assert classify(flood.lines, 187).error_type == "UNSUPPORTED_MEDIA"
