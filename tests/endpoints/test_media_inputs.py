"""Media from elsewhere: the kinds of input that failed when the pipeline ran on real files,
each made by :mod:`tests.support.odd_media` with the bundled ffmpeg. The jobs run in this process
(real ffmpeg, real PyAV); the last tests run whole templates through ``fredica process``."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import av
import pytest

from fredica_app.cli import main
from python_endpoints.jobs import ffmpeg as ff
from python_endpoints.jobs import media
from python_endpoints.jobs.sample import make_sample
from python_endpoints.serving.child import JobFailed
from tests.support import odd_media
from tests.support.clips import ffmpeg_processes, media_summary, run_job
from workers.executors.websocket import skipped_upstream
from workers.states import NON_RETRYABLE

JOBS = {
    "probe": media.probe_job,
    "transcode": media.transcode_job,
    "extract_audio": media.extract_audio_job,
    "extract_subtitles": media.extract_subtitles_job,
}


def run(job: str, **params: Any) -> dict[str, Any]:
    if job == "transcode":  # no hardware encoder is tested unless a test asks for it
        params = {"hardware": False, **params}
    result = run_job(JOBS[job], params)
    assert result is not None
    return result


def fails(job: str, **params: Any) -> JobFailed:
    with pytest.raises(JobFailed) as info:
        run_job(JOBS[job], params)
    return info.value


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.fixture(autouse=True)
def _no_ffmpeg_left(tmp_path: Path) -> Any:
    yield
    assert ffmpeg_processes(str(tmp_path)) == []


# --- 1. tags that are not UTF-8 ---------------------------------------------------------------


def test_latin1_tags_do_not_break_a_job(tmp_path: Path) -> None:
    source = odd_media.latin1_tags(tmp_path / "old.avi")
    with pytest.raises(UnicodeDecodeError), av.open(str(source)):
        pass  # the fault: PyAV's strict default
    out = tmp_path / "out"
    result = run("transcode", input=str(source), output=str(out / "old.mp4"), profile="modern")
    assert result["mode"] == "remux"  # MPEG-4 Part 2 and MP3 fit: the tag is copied too
    with media.open_media(out / "old.mp4") as container:
        assert container.metadata["title"] == "Caf\ufffd \ufffd 1999"
    result = run("extract_audio", input=str(source), output=str(out / "old.wav"))
    assert result["duration"] == pytest.approx(2.0, abs=0.1)
    assert run("extract_subtitles", input=str(source), output_dir=str(out), stem="old") == {
        "outputs": [],
        "streams": [],
        "skipped": [],
    }
    assert names(out) == [".old.mp4.fredica.json", ".old.wav.fredica.json", "old.mp4", "old.wav"]


def test_media_is_opened_in_one_place() -> None:
    """Every job opens media through ``avread.open_media`` (lenient tags): no other module of
    the endpoints calls ``av.open``."""
    package = Path(media.__file__).parent.parent
    calls = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "av.open(" in path.read_text(encoding="utf-8")
    }
    assert calls == {"jobs/avread.py"}


# --- 2. a declared audio stream that never carries a packet -----------------------------------


def test_an_audio_stream_that_never_carries_a_packet_is_absent(tmp_path: Path) -> None:
    source = odd_media.silent_audio_ts(tmp_path / "recording.ts")
    probed = run("probe", input=str(source))
    assert probed["kind"] == "video"
    assert probed["streams"][1] == {
        "index": 1,
        "type": "audio",
        "codec": "aac",
        "language": None,
        "title": None,
        "sample_rate": None,
        "channels": None,
        "empty": True,
    }
    out = tmp_path / "out"
    result = run("transcode", input=str(source), output=str(out / "recording.mp4"))
    assert result["dropped"] == [{"index": 1, "reason": ff.EMPTY_AUDIO}]
    assert result["duration"] == pytest.approx(3.0, abs=0.1)
    assert media_summary(out / "recording.mp4")["streams"] == {"video": ["h264"]}
    error = fails("extract_audio", input=str(source), output=str(out / "recording.wav"))
    assert error.error_type == "NO_AUDIO"
    assert "stream 1 declares audio but carries none" in str(error)
    skipped = run("extract_audio", input=str(source), output=str(out / "r.wav"), if_no_audio="skip")
    assert skipped == {"outputs": [], "skipped": True, "reason": "no audio"}
    assert names(out) == [".recording.mp4.fredica.json", "recording.mp4"]


# --- 3. odd frame sizes -----------------------------------------------------------------------


def test_an_odd_frame_size_is_padded_to_even_dimensions(tmp_path: Path) -> None:
    source = odd_media.odd_size(tmp_path / "clip.webm")
    assert run("probe", input=str(source))["streams"][0]["height"] == 405
    output = tmp_path / "clip.mp4"
    result = run("transcode", input=str(source), output=str(output))
    assert result["mode"] == "reencode" and result["video_encoder"] == "libx264"
    with media.open_media(output) as container:
        video = container.streams.video[0]
        assert (video.codec_context.width, video.codec_context.height) == (720, 406)
        assert video.codec_context.codec.canonical_name == "h264"


# --- 4. subtitles that run past the picture ---------------------------------------------------


def test_subtitles_past_the_picture_do_not_fail_verification(tmp_path: Path) -> None:
    source = odd_media.late_subtitles(tmp_path / "film.mkv", tmp_path)
    probed = run("probe", input=str(source))
    assert probed["duration"] == pytest.approx(6.0, abs=0.1)  # Matroska counts the subtitle
    result = run("transcode", input=str(source), output=str(tmp_path / "film.mp4"))
    assert result["duration"] == pytest.approx(3.0, abs=0.1) and "note" not in result
    assert media_summary(tmp_path / "film.mp4")["streams"]["subtitle"] == ["mov_text"]
    audio = run("extract_audio", input=str(source), output=str(tmp_path / "film.wav"))
    assert audio["duration"] == pytest.approx(3.0, abs=0.1)


# --- 5. headerless raw audio ------------------------------------------------------------------


def test_headerless_raw_audio_is_not_media(tmp_path: Path) -> None:
    source = odd_media.raw_audio(tmp_path / "voice.raw")
    out = tmp_path / "out"
    for job, params in [
        ("probe", {}),
        ("transcode", {"output": str(out / "voice.mp4")}),
        ("extract_audio", {"output": str(out / "voice.wav")}),
    ]:
        error = fails(job, input=str(source), **params)
        assert error.error_type == "NOT_MEDIA", (job, error)
        assert "only guessed" in str(error) and "image sequence of raw video" in str(error)
        assert "convert it" in str(error)
    assert names(out) == []


# --- 6. what the input causes is not retried --------------------------------------------------


def test_a_damaged_input_fails_for_good_with_its_cause(tmp_path: Path) -> None:
    source = odd_media.damaged(tmp_path / "tape.mkv")
    run("probe", input=str(source))  # its header is intact: it probes
    out = tmp_path / "out"
    error = fails("transcode", input=str(source), output=str(out / "tape.mp4"), hardware=False)
    assert error.error_type == "INPUT_DAMAGED" and error.error_type in NON_RETRYABLE
    message = str(error)
    assert "exit code" in message and "the input is damaged" in message
    assert "Invalid data found when processing input" in message  # ffmpeg's own words
    assert "@ 0x" not in message and "check that the file plays" in message
    assert names(out) == []


@pytest.mark.skipif(sys.platform == "win32", reason="a Python script stands in for ffmpeg")
def test_an_output_that_lost_part_of_its_input_fails_for_good(tmp_path: Path) -> None:
    """An ffmpeg that stops early (here: told ``-t 1``) makes a short output of a whole input:
    verification fails, and the same input would fail the same way — never retried."""
    real = media.ffmpeg_binary({})
    short = tmp_path / "ffmpeg"
    short.write_text(
        f"#!{sys.executable}\nimport os, sys\nargs = sys.argv[1:]\n"
        f"os.execv({real!r}, [{real!r}, *args[:-1], '-t', '1', args[-1]])\n"
    )
    short.chmod(0o755)
    source = make_sample(tmp_path / "clip.mp4", 4.0, kind="mp4")
    out = tmp_path / "out"
    error = fails("transcode", input=str(source), output=str(out / "clip.mp4"), ffmpeg=str(short))
    assert error.error_type == "FFMPEG_FAILED" and error.error_type in NON_RETRYABLE
    assert "lasts 1.0" in str(error) and "holds 4.0" in str(error)
    assert "lost part of the input" in str(error)
    assert names(out) == []


# --- 7. a header that promises more than the file holds ---------------------------------------


def test_an_input_shorter_than_its_header_keeps_its_output_and_says_so(tmp_path: Path) -> None:
    source = odd_media.short_opus(tmp_path / "talk.opus")
    assert run("probe", input=str(source))["duration"] == pytest.approx(12.72, abs=0.05)
    output = tmp_path / "talk.wav"
    result = run("extract_audio", input=str(source), output=str(output))
    assert result["duration"] == pytest.approx(10.72, abs=0.1)
    assert result["declared_duration"] == pytest.approx(12.72, abs=0.05)
    assert result["note"].startswith("the input is shorter than its header claims: it holds 10.7")
    assert output.is_file()


# --- 9. closed captions carried in the video --------------------------------------------------


def srt_clock(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"00:00:{ms // 1000:02d},{ms % 1000:03d}"


def test_captions_carried_in_the_video_are_extracted(tmp_path: Path) -> None:
    # A folder whose name the lavfi graph must escape at both of its levels.
    folder = tmp_path / "TV [news], it's: 9;30"
    folder.mkdir()
    source = odd_media.captions_ts(folder / "news.ts")
    out = tmp_path / "out"
    result = run("extract_subtitles", input=str(source), output_dir=str(out), stem="news")
    srt, vtt = out / "news.0.cc.srt", out / "news.0.cc.vtt"
    assert result == {
        "outputs": [str(srt), str(vtt)],
        "streams": [
            {
                "index": 0,
                "codec": "eia_608",
                "language": None,
                "files": [str(srt), str(vtt)],
                "cues": 2,
                "captions": True,
            }
        ],
        "skipped": [],
    }
    expected = "".join(
        f"{i}\n{srt_clock(a)} --> {srt_clock(b)}\n{text}\n\n"
        for i, (a, b, text) in enumerate(odd_media.CAPTIONS, 1)
    )
    assert srt.read_text(encoding="utf-8").strip() == expected.strip()  # no decoder markup
    assert vtt.read_text(encoding="utf-8").startswith("WEBVTT")
    assert "00:02.480 --> 00:03.240\nA SECOND CUE" in vtt.read_text(encoding="utf-8")
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [
        ".news.0.cc.srt.fredica.json",
        ".news.0.cc.vtt.fredica.json",
    ]
    # They ride in the video's frames: a re-encode to MP4 keeps them.
    mp4 = tmp_path / "mp4" / "news.mp4"
    run("transcode", input=str(source), output=str(mp4), mode="reencode")
    again = run("extract_subtitles", input=str(mp4), output_dir=str(mp4.parent), stem="news")
    assert [(s["captions"], s["cues"]) for s in again["streams"]] == [(True, 2)]


# --- 8. steps that cannot apply to a material -------------------------------------------------


def fredica(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_job_that_cannot_apply_is_skipped_with_its_reason_when_asked(tmp_path: Path) -> None:
    sound = odd_media.short_opus(tmp_path / "talk.opus")  # no video
    out = tmp_path / "out"
    error = fails("transcode", input=str(sound), output=str(out / "talk.mp4"))
    assert error.error_type == "UNSUPPORTED_MEDIA" and "no video stream" in str(error)
    skipped = run("transcode", input=str(sound), output=str(out / "talk.mp4"), if_no_video="skip")
    assert skipped == {"outputs": [], "skipped": True, "reason": "no video"}
    assert names(out) == []
    # The tasks that depend on a step skipped for a reason are skipped with it; a step skipped
    # because its output was already there is no reason to skip anything.
    assert skipped_upstream({"probe": {"kind": "audio"}, "extract_audio": skipped}) == "no video"
    assert skipped_upstream({"extract_audio": {"skipped": True, "outputs": ["a.wav"]}}) is None
    assert skipped_upstream({"probe": None}) is None


@pytest.mark.slow
def test_a_video_without_audio_completes_its_run_with_the_audio_steps_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clip = make_sample(tmp_path / "media" / "silent.mkv", 2.0, kind="noaudio")
    data = tmp_path / "data"
    code, out, err = fredica(capsys, data, "process", str(clip), "--template", "media", "--json")
    assert code == 0, err
    run_ = json.loads(out)
    tasks = {t["key"]: t for t in run_["tasks"]}
    assert run_["status"] == "completed"
    assert tasks["extract_audio"]["result"] == {
        "outputs": [],
        "skipped": True,
        "reason": "no audio",
    }
    assert Path(tasks["transcode"]["result"]["outputs"][0]).is_file()  # the MP4 was made
    assert tasks["extract_subtitles"]["result"]["streams"][0]["cues"] == 2

    # Speech-to-text and what is made of it are skipped with it: no model is needed.
    code, out, err = fredica(capsys, data, "process", str(clip), "--template", "full")
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    for key in ("extract_audio", "transcribe", "export_subtitles", "analyze"):
        assert "skipped: no audio" in rows[key], out
    assert "skipped: its output is already up to date" in rows["transcode"]
    with sqlite3.connect(data / "fredica.db") as db:
        attempts = db.execute(
            "SELECT key, retry_count FROM task WHERE type = 'TRANSCRIBE'"
        ).fetchall()
    assert attempts == [("transcribe", 0)]


@pytest.mark.slow
def test_a_damaged_input_fails_its_run_once_not_retried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = odd_media.damaged(tmp_path / "media" / "tape.mkv")
    data = tmp_path / "data"
    code, out, _ = fredica(
        capsys, data, "process", str(source), "--template", "transcode_mp4", "--json"
    )
    assert code == 1
    tasks = {t["key"]: t for t in json.loads(out)["tasks"]}
    assert tasks["transcode"]["error_type"] == "INPUT_DAMAGED"
    assert "the input is damaged" in tasks["transcode"]["error"]
    with sqlite3.connect(data / "fredica.db") as db:
        (started,) = db.execute(
            "SELECT count(*) FROM task_event JOIN task ON task.id = task_event.task_id "
            "WHERE task.key = 'transcode' AND task_event.kind = 'started'"
        ).fetchone()
        (retries,) = db.execute("SELECT retry_count FROM task WHERE key = 'transcode'").fetchone()
    assert (started, retries) == (1, 0)
