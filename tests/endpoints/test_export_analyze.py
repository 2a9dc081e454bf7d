"""EXPORT_SUBTITLES and ANALYZE: their pure parts, then the jobs for real, in child processes
behind a real endpoints server on 127.0.0.1:0, on transcripts the tests write. The language
model is a real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions API
(:mod:`tests.support.llmserver`, standing in for Ollama). After every server test: no job process is
left behind."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from python_endpoints.jobs import analysis, analyze, export, outputs, speech, textio
from python_endpoints.jobs.captions import Segment, Word
from python_endpoints.protocol import Cancel, dump
from python_endpoints.serving.child import ChildContext, JobFailed
from python_endpoints.serving.registry import ENDPOINTS
from python_endpoints.serving.server import EndpointServer
from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, running_child, start
from tests.support import clips
from tests.support.llmserver import Answer, FakeChatServer
from tests.support.process_table import assert_no_job_process_left

KEY_ENV = "FREDICA_TEST_LLM_KEY"
KEY = "sk-test-0123456789"
MISSING_ENV = "FREDICA_TEST_NO_SUCH_KEY"
FORMATS = ("srt", "vtt", "txt", "json")

SIMPLE: list[dict[str, Any]] = [
    {"start": 0.0, "end": 2.5, "text": " Hello there."},
    {
        "start": 3.0,
        "end": 5.25,
        "text": " How are you today? I hope that everything is going well for you & yours.",
    },
    {"start": 9.0, "end": 9.4, "text": " Fine."},
]
TALK: list[dict[str, Any]] = [
    {"start": 0.0, "end": 4.0, "text": "Today we talk about machine learning and neural networks."},
    {
        "start": 4.0,
        "end": 8.0,
        "text": "Machine learning needs data, and neural networks need a lot.",
    },
    {"start": 8.0, "end": 12.0, "text": "Gardening is a different topic entirely."},
    {"start": 20.0, "end": 24.0, "text": "Back to machine learning: training neural networks."},
]


def timed(segment: dict[str, Any], step: float = 0.25) -> dict[str, Any]:
    """``segment`` as TRANSCRIBE writes it when the decoder timed its words: one every
    ``step`` seconds from its start."""
    start, text = float(segment["start"]), str(segment["text"])
    said = enumerate(text.split())
    words = [(start + i * step, start + (i + 1) * step, f" {w}") for i, w in said]
    return speech.segment_dict(start, float(segment["end"]), text, -0.3, 0.01, 0, words)


GOOD = json.dumps(
    {
        "summary": "A talk about machine learning, with a word on gardening.",
        "chapters": [
            {"start": 8, "title": "Gardening"},
            {"start": "0:00", "title": "Machine learning"},
            {"start": 999, "title": "Beyond the end"},
        ],
    }
)


def transcript_file(
    path: Path,
    segments: list[dict[str, Any]],
    language: str | None = "en",
    duration: float | None = 12.0,
    unheard: list[list[float]] | None = None,
) -> Path:
    """A transcript as TRANSCRIBE writes it (with the decoder's extras per segment)."""
    document: dict[str, Any] = {
        "version": 1,
        "language": language,
        "duration": duration,
        "model": "tiny.en",
        "segments": [
            {"avg_logprob": -0.3, "no_speech_prob": 0.01, "chunk": 0, **s} for s in segments
        ],
    }
    if unheard is not None:
        document["unheard"] = unheard
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# --- the pure parts ---------------------------------------------------------------------------


def test_a_transcript_is_checked_and_what_is_wrong_is_said() -> None:
    good = {"version": 1, "language": "en", "duration": 3.0, "model": None, "segments": SIMPLE}
    transcript = textio.parse_transcript(good)
    assert transcript.language == "en" and transcript.duration == 3.0
    assert transcript.segments[0] == Segment(0.0, 2.5, "Hello there.")
    assert transcript.segments[0].words == ()  # written before words were kept: none

    def with_words(words: Any) -> dict[str, Any]:
        return {**good, "segments": [{"start": 0, "end": 2, "text": "a b", "words": words}]}

    # Each word spans its characters of the text, the space before it its own.
    [segment] = textio.parse_transcript(with_words([[0, 1, 1], [1.2, 2, 2]])).segments
    assert segment == Segment(0.0, 2.0, "a b", (Word(0.0, 1.0, "a"), Word(1.2, 2.0, " b")))
    assert transcript.unheard == ()  # none said
    assert textio.parse_transcript({**good, "unheard": [[5.5, 8]]}).unheard == ((5.5, 8.0),)
    for data, says in [
        ([], "not an object"),
        ({**good, "version": 2}, "version is 2"),
        ({**good, "segments": None}, '"segments" is missing'),
        ({**good, "duration": "long"}, '"duration" is "long", not a number'),
        ({**good, "segments": [{"start": 1, "end": 2}]}, 'segment 0: "text" is null'),
        ({**good, "segments": [*SIMPLE, {"end": 2, "text": ""}]}, 'segment 3: "start" is null'),
        ({**good, "segments": [{"start": 2, "end": 1, "text": "x"}]}, "ends (1.0 s) before"),
        ({**good, "segments": [{"start": True, "end": 1, "text": "x"}]}, "not a number"),
        ({**good, "segments": [{"start": -1, "end": 1, "text": "x"}]}, "negative"),
        ({**good, "language": 3}, '"language" is 3'),
        ({**good, "unheard": {}}, '"unheard" is {}, not a list'),
        ({**good, "unheard": [[1.0]]}, '"unheard" 0 is [1.0], not [start, end]'),
        ({**good, "unheard": [[3, 1]]}, '"unheard" 0 ends (1.0 s) before it starts (3.0 s)'),
        ({**good, "unheard": [[0, "x"]]}, '"unheard" 0: end is "x", not a number'),
        (with_words({}), 'segment 0: "words" is {}, not a list'),
        (with_words([[0, 1]]), "segment 0: word 0 is [0, 1], not [start, end, length]"),
        (with_words([[0, "x", 3]]), 'segment 0: word 0: end is "x", not a number'),
        (with_words([[0, 1, 0], [1, 2, 3]]), "word 0: its length is 0, not a count of"),
        (with_words([[0, 1, 1.5], [1, 2, 2]]), "word 0: its length is 1.5"),
        (with_words([[0, 1, 1], [1, 2, 1]]), "its words span 2 characters of its text, which has"),
        (with_words([[0, 1, 1], [1, 2, 9]]), "its words span 10 characters of its text, which"),
        (with_words([[1, 1.5, 1], [0.5, 2, 2]]), "word 1 starts (0.5 s) before the word or"),
        (with_words([[-1, 1, 1], [1, 2, 2]]), "word 0: start is negative"),
        (with_words([[0, 1, 1], [2.5, 3, 2]]), "word 1 starts (2.5 s) after its segment ends"),
    ]:
        with pytest.raises(ValueError) as info:
            textio.parse_transcript(data)
        assert says in str(info.value), (data, str(info.value))


def test_where_a_phrase_is_said() -> None:
    # Segments without their words (a transcript written before words were kept): a phrase is
    # said when its segment starts.
    spoken = analysis.SpokenText.of(
        [
            Segment(0.0, 2.0, "We like Machine Learning."),
            Segment(2.0, 4.0, "machine-learning, again; and machine"),
            Segment(4.0, 6.0, "learning across segments."),
            Segment(6.0, 8.0, "machinelearning is not it"),
        ]
    )
    assert spoken.times("machine learning") == [0.0, 2.0]
    assert spoken.times("Machine") == [0.0, 2.0]  # once per segment
    assert spoken.times("machine learning across") == [2.0]  # from one segment to the next
    assert spoken.times("segments") == [4.0]
    assert spoken.times("learn") == []  # whole words only
    assert analysis.SpokenText.of([]).times("x") == []
    assert analysis.covered("neural", ["neural networks"])
    assert not analysis.covered("networks neural", ["neural networks"])


def test_a_phrase_is_timed_by_its_first_word_when_the_words_are_known() -> None:
    # A transcript read back: words one every 0.5 s; the second segment was written
    # without its words (an older transcript, or words the decoder did not time).
    document = {
        "version": 1,
        "language": "en",
        "duration": 20.0,
        "model": "tiny.en",
        "segments": [
            timed({"start": 0.0, "end": 2.0, "text": "We like Machine Learning."}, 0.5),
            {"start": 2.0, "end": 4.0, "text": "machine-learning, again; and machine"},
            timed({"start": 4.0, "end": 6.0, "text": "learning across segments."}, 0.5),
            timed({"start": 10.0, "end": 13.0, "text": "So machine learning is machine learning"}),
        ],
    }
    spoken = analysis.SpokenText.of(textio.parse_transcript(document).segments)
    assert spoken.times("machine learning") == [1.0, 2.0, 10.25, 11.0]
    assert spoken.times("learning across") == [4.0]
    assert spoken.times("machine learning across") == [2.0]  # where it begins
    assert spoken.times("segments") == [5.0]
    assert spoken.times("is") == [10.75]
    assert spoken.times("learn") == []
    # A word joined to the one before it (no space before it), spaces doubled in the text.
    joined = Segment(
        30.0,
        32.0,
        "a  round-trip",
        (Word(30.0, 30.5, "a"), Word(30.5, 31.0, "  round"), Word(31.0, 31.5, "-trip")),
    )
    assert analysis.SpokenText.of([joined]).times("round trip") == [30.5]
    assert analysis.SpokenText.of([joined]).times("trip") == [31.0]
    # Words that do not spell their segment's text: the segment's start.
    odd = Segment(40.0, 42.0, "one two", (Word(41.0, 41.5, "three"),))
    assert analysis.SpokenText.of([odd]).times("two") == [40.0]


def test_the_prompt_carries_times_and_a_long_transcript_is_shortened() -> None:
    segments = [Segment(float(i), i + 1.0, f"line {i} " + "word " * 20) for i in range(100)]
    prompt = analysis.build_prompt(segments, "en", 100.0)
    assert not prompt.truncated and prompt.note is None
    user = prompt.messages[1]["content"]
    assert "[0.0] line 0 word" in user and "[99.0] line 99" in user
    assert '"summary"' in user and '"chapters"' in user and '("en")' in user
    short = analysis.build_prompt(segments, "en", 100.0, max_chars=2000)
    assert short.truncated and short.total == 100 and 10 < short.sent < 25
    assert f"{short.sent} of its 100 segments" in (short.note or "")
    user = short.messages[1]["content"]
    assert len(user) < 3000 and "[0.0] line 0" in user and "only" in user
    # Spread over the whole transcript, not only its beginning.
    assert any(f"[{i}.0]" in user for i in range(80, 100))


def test_a_models_answer_is_read_robustly() -> None:
    expected = analysis.Reply(
        "A talk about machine learning, with a word on gardening.",
        [
            {"start": 0.0, "title": "Machine learning"},
            {"start": 8.0, "title": "Gardening"},
            {"start": 24.0, "title": "Beyond the end"},  # clamped to the duration
        ],
    )
    for content in [
        GOOD,
        f"```json\n{GOOD}\n```",
        f"Sure! Here is the JSON you asked for:\n\n```\n{GOOD}\n```\nAnything else?",
        f"Here it is: {GOOD} Hope it helps {{not json}}",
        f"<think>The user wants {{a summary}}.</think>\n{GOOD}",
    ]:
        assert analysis.parse_reply(content, 24.0) == expected, content
    reply = analysis.parse_reply(
        '{"summary": "s", "chapters": [{"time": "1:02:03", "name": " A  b "}, '
        '{"start": "x", "title": "dropped"}, {"start": 5}, "junk", {"start": -3, "title": "c"}]}',
        None,
    )
    assert reply.chapters == [{"start": 0.0, "title": "c"}, {"start": 3723.0, "title": "A b"}]
    with pytest.raises(ValueError, match="no JSON object"):
        analysis.parse_reply("I cannot help with that.", 10.0)
    with pytest.raises(ValueError, match="neither"):
        analysis.parse_reply('{"answer": 42}', 10.0)
    assert analysis.completion_content({"choices": [{"message": {"content": "hi"}}]}) == "hi"
    with pytest.raises(ValueError, match="no choices"):
        analysis.completion_content({"error": "x"})


def test_servers_errors_and_retry_delays() -> None:
    assert (
        analysis.server_message('{"error": {"message": "Invalid  API key"}}') == "Invalid API key"
    )
    assert analysis.server_message('{"error": "model \\"x\\" not found"}') == 'model "x" not found'
    assert analysis.server_message("<html>Bad Gateway</html>") == "<html>Bad Gateway</html>"
    assert len(analysis.server_message("x" * 1000)) == 300
    assert [analysis.retry_delay(a) for a in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert analysis.retry_delay(0, "3") == 3.0 and analysis.retry_delay(0, "600") == 30.0
    assert analysis.retry_delay(1, "Wed, 21 Oct 2015 07:28:00 GMT") == 1.0
    assert [analysis.retryable_status(s) for s in (429, 500, 503, 400, 401, 404)] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    assert analysis.is_loopback("http://127.0.0.1:11434/v1")
    assert analysis.is_loopback("http://localhost:11434/v1") and analysis.is_loopback(
        "http://[::1]/"
    )
    assert not analysis.is_loopback("https://api.openai.com/v1")
    assert analysis.chat_url("http://h/v1/") == "http://h/v1/chat/completions"


class _Channel:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def put(self, message: dict[str, Any]) -> None:
        self.messages.append(message)


def in_process() -> ChildContext:
    """A job's context for running it in this process (threads' events for the child's)."""
    resume = threading.Event()
    resume.set()
    return ChildContext(_Channel(), threading.Event(), resume)  # type: ignore[arg-type]


def test_a_failed_verification_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file is verified before any is put in place: the SRT passed, the WebVTT did not,
    neither is there. Run in this process, to damage what is read back."""
    transcript = transcript_file(tmp_path / "m.transcript.json", SIMPLE)
    params = {"transcript": str(transcript), "output_dir": str(tmp_path), "stem": "m"}
    read_text = textio.read_text

    def cut_short(path: Path) -> str:
        text = read_text(path)
        return text[: len(text) // 2] if path.suffix == ".vtt" else text

    monkeypatch.setattr(textio, "read_text", cut_short)
    with pytest.raises(JobFailed) as info:
        clips.run_job(export.export_subtitles_job, params, in_process())
    assert info.value.error_type == "VERIFY_FAILED"
    assert str(info.value) == "the output m.vtt failed verification: 2 cues read back, 3 written"
    assert names(tmp_path) == ["m.transcript.json"]
    monkeypatch.setattr(textio, "read_text", lambda path: read_text(path) + "x")
    with pytest.raises(JobFailed, match=r"m\.transcript\.txt failed verification"):
        clips.run_job(export.export_subtitles_job, {**params, "formats": ["txt"]}, in_process())
    monkeypatch.setattr(textio, "read_text", lambda path: "{")
    with pytest.raises(JobFailed, match=r"m\.segments\.json failed verification: it is not valid"):
        clips.run_job(export.export_subtitles_job, {**params, "formats": ["json"]}, in_process())
    assert names(tmp_path) == ["m.transcript.json"]


def test_export_keeps_odd_characters_as_they_were_said(tmp_path: Path) -> None:
    said = r"Braces {\i1} stay, a back\Nslash too, <b>tags</b> & all."
    transcript = transcript_file(
        tmp_path / "m.transcript.json", [{"start": 0, "end": 3, "text": said}]
    )
    params = {"transcript": str(transcript), "output_dir": str(tmp_path), "stem": "m"}
    result = clips.run_job(
        export.export_subtitles_job, {**params, "max_line_chars": 100}, in_process()
    )
    assert result is not None and result["cues"] == 1
    srt = (tmp_path / "m.srt").read_text(encoding="utf-8")
    assert srt.split("\n")[2].replace("\u2060", "") == said
    vtt = (tmp_path / "m.vtt").read_text(encoding="utf-8")
    assert "&lt;b&gt;tags&lt;/b&gt; &amp; all." in vtt


def test_without_a_model_analyze_opens_no_socket_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job itself, in this process, with every way to open a connection taken away."""
    attempts: list[Any] = []

    def no_network(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("the network is off in this test")

    for name in ("socket", "create_connection", "getaddrinfo"):
        monkeypatch.setattr(socket, name, no_network)
    ctx = in_process()
    transcript = transcript_file(tmp_path / "talk.transcript.json", TALK, duration=24.0)
    params = {"transcript": str(transcript), "output": str(tmp_path / "talk.analysis.json")}
    result = clips.run_job(
        analyze.analyze_job, {**params, "keywords": 5, "language": "auto", "llm": None}, ctx
    )
    assert result is not None and result["keywords"] == 5 and not result["summary"]
    assert attempts == []
    # The guard works: with a model configured, the job does reach for the network.
    llm = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "timeout": 5, "retries": 0}
    with pytest.raises(JobFailed) as info:
        clips.run_job(analyze.analyze_job, {**params, "llm": llm}, ctx)
    assert info.value.error_type == "LLM_UNREACHABLE" and attempts


# --- through the server -----------------------------------------------------------------------


@pytest.fixture
async def server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[EndpointServer, int]]:
    # The API key lives in the server's environment (set before it starts: a job's process
    # inherits it), in a variable the server was told its jobs may read.
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.delenv(MISSING_ENV, raising=False)
    srv = EndpointServer(ENDPOINTS, TOKEN, api_key_envs=[KEY_ENV, MISSING_ENV])
    port = await srv.start()
    yield srv, port
    await srv.close()
    await assert_no_job_process_left()


async def run_job(port: int, name: str, within: float = 60, **params: Any) -> list[dict[str, Any]]:
    async with open_task(port, name=name) as ws:
        await start(ws, **params)
        return await frames_until(ws, "result", "error", "cancelled", within=within)


async def result_of(port: int, name: str, **params: Any) -> dict[str, Any]:
    frames = await run_job(port, name, **params)
    assert frames[-1]["type"] == "result", frames[-1]
    result: dict[str, Any] = frames[-1]["result"]
    return result


async def error_of(port: int, name: str, **params: Any) -> dict[str, Any]:
    frames = await run_job(port, name, **params)
    assert frames[-1]["type"] == "error", frames[-1]
    return frames[-1]


async def until_status(ws: ClientConnection, prefix: str, within: float = 30) -> None:
    """Read progress frames until one whose status starts with ``prefix``."""
    async with asyncio.timeout(within):
        while True:
            frame = json.loads(await ws.recv())
            assert frame["type"] == "progress", frame
            if (frame.get("status_text") or "").startswith(prefix):
                return


# --- EXPORT_SUBTITLES -------------------------------------------------------------------------

SRT = """\
1
00:00:00,000 --> 00:00:02,500
Hello there.

2
00:00:03,000 --> 00:00:05,250
How are you today? I hope that everything
is going well for you & yours.

3
00:00:09,000 --> 00:00:10,000
Fine.

"""


async def test_export_writes_srt_vtt_text_and_json(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(tmp_path / "movie.transcript.json", SIMPLE, duration=12.0)
    before = transcript.read_bytes()
    frames = await run_job(
        server[1],
        "export_subtitles",
        transcript=str(transcript),
        output_dir=str(tmp_path),
        stem="movie",
    )
    result = frames[-1]["result"]
    assert result == {
        "outputs": [
            str(tmp_path / "movie.srt"),
            str(tmp_path / "movie.vtt"),
            str(tmp_path / "movie.transcript.txt"),
            str(tmp_path / "movie.segments.json"),
        ],
        "cues": 3,
        "language": "en",
        "duration": 12.0,
    }
    assert transcript.read_bytes() == before  # the input is never written over
    assert names(tmp_path) == [
        "movie.segments.json",
        "movie.srt",
        "movie.transcript.json",
        "movie.transcript.txt",
        "movie.vtt",
    ]
    # Times exact to the millisecond; "Fine." (0.4 s) is extended to the 1 s minimum.
    assert (tmp_path / "movie.srt").read_text(encoding="utf-8") == SRT
    vtt = (tmp_path / "movie.vtt").read_text(encoding="utf-8")
    assert vtt.startswith("WEBVTT\n\n1\n00:00:00.000 --> 00:00:02.500\nHello there.\n")
    assert "00:00:09.000 --> 00:00:10.000\nFine." in vtt
    assert "for you &amp; yours." in vtt  # markup in WebVTT: escaped
    assert (tmp_path / "movie.transcript.txt").read_text(encoding="utf-8") == (
        "Hello there. How are you today? I hope that everything is going well for you & yours."
        "\n\nFine.\n"
    )
    assert json.loads((tmp_path / "movie.segments.json").read_text(encoding="utf-8")) == {
        "version": 1,
        "language": "en",
        "duration": 12.0,
        "segments": [
            {"start": 0.0, "end": 2.5, "text": "Hello there."},
            {"start": 3.0, "end": 5.25, "text": SIMPLE[1]["text"].strip()},
            {"start": 9.0, "end": 9.4, "text": "Fine."},
        ],
        "unheard": [],
    }
    progress = [f["percent"] for f in frames if f["type"] == "progress"]
    assert progress[-1] == 100 and progress == sorted(progress)
    assert all(f["pausable"] == "never" for f in frames if f["type"] == "progress")


async def test_speech_that_could_not_be_made_out_is_captioned_inaudible(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(tmp_path / "t.transcript.json", SIMPLE, unheard=[[5.5, 8.5]])
    job = {"transcript": str(transcript), "output_dir": str(tmp_path), "stem": "t"}
    assert (await result_of(server[1], "export_subtitles", **job))["cues"] == 4
    srt = (tmp_path / "t.srt").read_text(encoding="utf-8")
    assert "\n3\n00:00:05,500 --> 00:00:08,500\n[inaudible]\n\n4\n00:00:09,000" in srt
    assert "00:00:05.500 --> 00:00:08.500\n[inaudible]" in (tmp_path / "t.vtt").read_text()
    text = (tmp_path / "t.transcript.txt").read_text(encoding="utf-8")
    assert text.endswith("for you & yours. [inaudible] Fine.\n"), text
    segments = json.loads((tmp_path / "t.segments.json").read_text(encoding="utf-8"))
    assert segments["unheard"] == [[5.5, 8.5]]
    assert [s["text"] for s in segments["segments"]] == [s["text"].strip() for s in SIMPLE]


async def test_export_with_other_rules_and_some_formats(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    segments = [{"start": 0.0, "end": 8.0, "text": "one two three four five six seven eight"}]
    transcript = transcript_file(tmp_path / "in" / "t.transcript.json", segments, language=None)
    out = tmp_path / "out"
    result = await result_of(
        server[1],
        "export_subtitles",
        transcript=str(transcript),
        output_dir=str(out),  # created
        stem="t",
        formats=["vtt", "srt", "vtt"],
        max_line_chars=10,
        max_lines=1,
        max_cue_seconds=3,
        min_cue_seconds=0.5,
    )
    assert result["outputs"] == [str(out / "t.vtt"), str(out / "t.srt")]
    assert result["cues"] == 5 and result["language"] is None
    assert names(out) == ["t.srt", "t.vtt"]
    srt = (out / "t.srt").read_text(encoding="utf-8")
    # One line of 10 characters a cue; 8 s shared by characters ("one " and "two ": 8 of 40).
    assert "1\n00:00:00,000 --> 00:00:01,600\none two\n" in srt
    assert "5\n00:00:06,800 --> 00:00:08,000\neight\n" in srt
    assert srt.count("-->") == 5


async def test_an_empty_transcript_gives_empty_files(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(
        tmp_path / "quiet.transcript.json", [{"start": 0, "end": 1, "text": "  "}]
    )
    result = await result_of(
        server[1],
        "export_subtitles",
        transcript=str(transcript),
        output_dir=str(tmp_path),
        stem="quiet",
    )
    assert result["cues"] == 0 and len(result["outputs"]) == 4
    assert (tmp_path / "quiet.srt").read_text(encoding="utf-8") == ""
    assert (tmp_path / "quiet.vtt").read_text(encoding="utf-8") == "WEBVTT\n\n"
    assert (tmp_path / "quiet.transcript.txt").read_text(encoding="utf-8") == ""
    segments = json.loads((tmp_path / "quiet.segments.json").read_text(encoding="utf-8"))
    assert segments["segments"] == []


async def test_a_missing_or_bad_transcript_is_refused_with_what_is_wrong(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    port = server[1]
    common = {"output_dir": str(tmp_path), "stem": "m"}
    error = await error_of(
        port, "export_subtitles", transcript=str(tmp_path / "gone.json"), **common
    )
    assert error["error_type"] == "INPUT_MISSING" and "does not exist" in error["error"]
    cut = tmp_path / "cut.json"
    cut.write_text('{"version": 1, "segments": [{"start": 0', encoding="utf-8")
    error = await error_of(port, "export_subtitles", transcript=str(cut), **common)
    assert error["error_type"] == "BAD_TRANSCRIPT" and "not valid JSON" in error["error"]
    assert "transcribe the media again" in error["error"]
    odd = transcript_file(tmp_path / "odd.json", [{"start": 3, "end": 1, "text": "x"}])
    error = await error_of(port, "analyze", transcript=str(odd), output=str(tmp_path / "a.json"))
    assert error["error_type"] == "BAD_TRANSCRIPT"
    assert "segment 0 ends (1.0 s) before it starts (3.0 s)" in error["error"]
    assert names(tmp_path) == ["cut.json", "odd.json"]  # nothing written
    # Never over the input, even when it is named like an output.
    same = transcript_file(tmp_path / "m.segments.json", SIMPLE)
    error = await error_of(port, "export_subtitles", transcript=str(same), **common)
    assert error["error_type"] == "PAYLOAD_ERROR" and "is the transcript itself" in error["error"]
    error = await error_of(port, "export_subtitles", transcript="rel.json", **common)
    assert error["error_type"] == "PAYLOAD_ERROR"


def _long_transcript(path: Path) -> Path:
    segments = [
        {"start": 2.0 * i, "end": 2.0 * i + 1.5, "text": f"Segment {i} says something, and more."}
        for i in range(20_000)
    ]
    return transcript_file(path, segments, duration=40_000.0)


def _stale_parts(directory: Path, stem: str) -> list[Path]:
    """What a crashed attempt left: every temporary name the export writes (the next run
    removes them)."""
    parts = [
        outputs.temp_path(outputs.export_path(directory, stem, f), "deadbeef") for f in FORMATS
    ]
    for part in parts:
        part.write_text("partial", encoding="utf-8")
    return parts


async def test_a_cancelled_export_leaves_no_file(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = _long_transcript(tmp_path / "in" / "long.transcript.json")
    out = tmp_path / "out"
    out.mkdir()
    _stale_parts(out, "long")
    async with open_task(server[1], "export_subtitles") as ws:
        await start(ws, transcript=str(transcript), output_dir=str(out), stem="long")
        await until_status(ws, "writing long.srt")  # the first file is being written
        await ws.send(dump(Cancel()))
        frames = await frames_until(ws, "cancelled", "result", "error", within=20)
    assert frames[-1]["type"] == "cancelled", frames[-1]
    assert names(out) == []


async def test_a_killed_export_leaves_no_file(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = _long_transcript(tmp_path / "in" / "long.transcript.json")
    out = tmp_path / "out"
    out.mkdir()
    _stale_parts(out, "long")
    async with open_task(server[1], "export_subtitles") as ws:
        await start(ws, transcript=str(transcript), output_dir=str(out), stem="long")
        await until_status(ws, "writing long.srt")
        running_child(server[0]).kill()
        frames = await frames_until(ws, "cancelled", "result", "error", within=20)
    assert frames[-1]["type"] == "error" and frames[-1]["error_type"] == "SUBPROCESS_CRASHED"
    assert names(out) == []


# --- ANALYZE ----------------------------------------------------------------------------------


def _llm(url: str, **more: Any) -> dict[str, Any]:
    return {"base_url": url, "model": "llama3.2", "timeout": 10, "retries": 2, **more}


async def test_key_phrases_offline_with_their_times(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(tmp_path / "talk.transcript.json", TALK, duration=24.0)
    output = tmp_path / "talk.analysis.json"
    with FakeChatServer() as llm:  # there, but not configured: never asked
        result = await result_of(
            server[1], "analyze", transcript=str(transcript), output=str(output), keywords=5
        )
        assert llm.requests == []
    assert result == {
        "outputs": [str(output)],
        "keywords": 5,
        "summary": False,
        "chapters": 0,
        "truncated": False,
    }
    document = json.loads(output.read_text(encoding="utf-8"))
    assert document["summary"] is None and document["chapters"] == [] and document["model"] is None
    assert document["language"] == "en" and document["truncated"] is False
    phrases = {k["phrase"].lower(): k for k in document["keywords"]}
    assert len(document["keywords"]) == 5
    assert phrases["machine learning"]["times"] == [0.0, 4.0, 20.0]
    assert phrases["neural networks"]["times"] == [0.0, 4.0, 20.0]
    assert "neural" not in phrases  # inside a better phrase
    scores = [k["score"] for k in document["keywords"]]
    assert scores == sorted(scores)  # YAKE: lower is better, best first
    assert names(tmp_path) == ["talk.analysis.json", "talk.transcript.json"]


async def test_a_transcript_with_words_is_exported_and_its_phrases_timed_by_them(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    plain = transcript_file(tmp_path / "plain" / "talk.transcript.json", TALK, duration=24.0)
    source = tmp_path / "words" / "talk.transcript.json"
    transcript = transcript_file(source, [timed(s) for s in TALK], duration=24.0)
    for path in (plain, transcript):
        job = {"transcript": str(path), "output_dir": str(path.parent), "stem": "talk"}
        assert (await result_of(server[1], "export_subtitles", **job))["cues"] > 0
    # The captions and the text are made of the segments: the same with words or without.
    for name in ("talk.srt", "talk.vtt", "talk.transcript.txt"):
        assert (plain.parent / name).read_bytes() == (source.parent / name).read_bytes(), name
    # The segments' JSON carries the words, as words.
    exported = json.loads((source.parent / "talk.segments.json").read_text(encoding="utf-8"))
    first = exported["segments"][0]
    assert first["text"] == TALK[0]["text"]
    assert first["words"][:3] == [[0.0, 0.25, "Today"], [0.25, 0.5, "we"], [0.5, 0.75, "talk"]]
    assert [w[2] for s in exported["segments"] for w in s["words"]] == " ".join(
        s["text"] for s in TALK
    ).split()
    output = tmp_path / "talk.analysis.json"
    await result_of(
        server[1], "analyze", transcript=str(transcript), output=str(output), keywords=5
    )
    phrases = {k["phrase"].lower(): k for k in json.loads(output.read_text())["keywords"]}
    # When the phrase's first word is said, not when its segment starts (0, 4 and 20 s).
    assert phrases["machine learning"]["times"] == [1.0, 4.0, 20.5]
    assert phrases["neural networks"]["times"] == [1.75, 5.25, 21.25]


async def test_a_summary_and_chapters_from_the_model(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(tmp_path / "talk.transcript.json", TALK, duration=24.0)
    output = tmp_path / "talk.analysis.json"
    fenced = f"Sure! Here is the JSON:\n```json\n{GOOD}\n```\nHope this helps."
    for content in (GOOD, fenced):
        with FakeChatServer([Answer(content)]) as llm:
            result = await result_of(
                server[1],
                "analyze",
                transcript=str(transcript),
                output=str(output),
                language="en",
                llm=_llm(llm.url),
            )
            [request] = llm.requests
        assert result["summary"] is True and result["chapters"] == 3
        document = json.loads(output.read_text(encoding="utf-8"))
        assert document["summary"] == "A talk about machine learning, with a word on gardening."
        assert document["chapters"] == [
            {"start": 0.0, "title": "Machine learning"},
            {"start": 8.0, "title": "Gardening"},
            {"start": 24.0, "title": "Beyond the end"},
        ]
        assert document["model"] == "llama3.2" and document["keywords"]
        assert request.path == "/v1/chat/completions" and "authorization" not in request.headers
        assert request.body["model"] == "llama3.2" and request.body["stream"] is False
        user = request.body["messages"][-1]["content"]
        assert "[0.0] Today we talk about machine learning" in user and "[20.0] Back to" in user


async def test_a_failing_model_is_tried_again(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(tmp_path / "talk.transcript.json", TALK, duration=24.0)
    with FakeChatServer([Answer("overloaded", status=500), Answer(GOOD)]) as llm:
        result = await result_of(
            server[1],
            "analyze",
            transcript=str(transcript),
            output=str(tmp_path / "a.json"),
            llm=_llm(llm.url),
        )
        assert len(llm.requests) == 2
    assert result["summary"] is True and result["chapters"] == 3
    # Failing every time: LLM_ERROR with the server's message, after retries + 1 attempts.
    with FakeChatServer([Answer("overloaded", status=503)]) as llm:
        error = await error_of(
            server[1],
            "analyze",
            transcript=str(transcript),
            output=str(tmp_path / "b.json"),
            llm=_llm(llm.url, retries=1),
        )
        assert len(llm.requests) == 2
    assert error["error_type"] == "LLM_ERROR" and "HTTP 503: overloaded" in error["error"]
    assert not (tmp_path / "b.json").exists()


async def test_a_model_that_cannot_be_reached(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    transcript = transcript_file(tmp_path / "talk.transcript.json", TALK, duration=24.0)
    url = f"http://127.0.0.1:{dead}/v1"
    began = time.monotonic()
    error = await error_of(
        server[1],
        "analyze",
        transcript=str(transcript),
        output=str(tmp_path / "a.json"),
        llm=_llm(url, timeout=5, retries=1),
    )
    assert time.monotonic() - began < 5
    assert error["error_type"] == "LLM_UNREACHABLE"
    assert f"{url}/chat/completions" in error["error"] and "ollama serve" in error["error"]
    assert "Key phrases alone work without the LLM setting" in error["error"]
    assert names(tmp_path) == ["talk.transcript.json"]


async def test_the_api_key_comes_from_the_servers_environment(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(tmp_path / "talk.transcript.json", TALK, duration=24.0)
    output = tmp_path / "a.json"
    with FakeChatServer([Answer(GOOD)]) as llm:
        result = await result_of(
            server[1],
            "analyze",
            transcript=str(transcript),
            output=str(output),
            llm=_llm(llm.url, api_key_env=KEY_ENV),
        )
        [request] = llm.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(result) and KEY not in output.read_text(encoding="utf-8")
    # Refused: LLM_ERROR with the server's message, not tried again.
    with FakeChatServer([Answer("Invalid API key provided", status=401)]) as llm:
        error = await error_of(
            server[1],
            "analyze",
            transcript=str(transcript),
            output=str(tmp_path / "b.json"),
            llm=_llm(llm.url, api_key_env=KEY_ENV),
        )
        assert len(llm.requests) == 1
    assert error["error_type"] == "LLM_ERROR"
    assert "HTTP 401: Invalid API key provided" in error["error"]
    assert KEY_ENV in error["error"] and KEY not in error["error"]
    # A variable that is not set: said so, and nothing is sent.
    with FakeChatServer() as llm:
        error = await error_of(
            server[1],
            "analyze",
            transcript=str(transcript),
            output=str(tmp_path / "c.json"),
            llm=_llm(llm.url, api_key_env=MISSING_ENV),
        )
        assert llm.requests == []
    assert error["error_type"] == "AWAITING_CREDENTIAL"
    assert f"environment variable {MISSING_ENV}" in error["error"]
    assert names(tmp_path) == ["a.json", "talk.transcript.json"]


async def test_a_variable_the_server_was_not_told_of_is_refused_unread(
    server: tuple[EndpointServer, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A secret of the server's environment that a token holder would like sent to its URL.
    monkeypatch.setenv("FREDICA_TEST_OTHER_SECRET", "do-not-send")
    transcript = transcript_file(tmp_path / "talk.transcript.json", TALK, duration=24.0)
    for name in ("FREDICA_TEST_OTHER_SECRET", "HOME"):
        with FakeChatServer([Answer(GOOD)]) as llm:
            error = await error_of(
                server[1],
                "analyze",
                transcript=str(transcript),
                output=str(tmp_path / "a.json"),
                llm=_llm(llm.url, api_key_env=name),
            )
            assert llm.requests == []  # nothing sent anywhere
        assert error["error_type"] == "PAYLOAD_ERROR", error
        refusal = f"llm.api_key_env {name!r} is not a variable this server lets jobs read"
        assert refusal in error["error"]
        assert f"allowed: {KEY_ENV}, {MISSING_ENV}" in error["error"]
        assert "llm_api_key_env" in error["error"] and "do-not-send" not in error["error"]
    assert names(tmp_path) == ["talk.transcript.json"]


async def test_an_answer_without_the_json_asked_for(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(tmp_path / "talk.transcript.json", TALK, duration=24.0)
    with FakeChatServer([Answer("I am sorry, I cannot summarize this.")]) as llm:
        error = await error_of(
            server[1],
            "analyze",
            transcript=str(transcript),
            output=str(tmp_path / "a.json"),
            llm=_llm(llm.url),
        )
    assert error["error_type"] == "LLM_ERROR" and "no JSON object" in error["error"]
    assert "I am sorry" in error["error"]


async def test_cancel_while_the_model_thinks(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(tmp_path / "talk.transcript.json", TALK, duration=24.0)
    output = tmp_path / "a.json"
    with FakeChatServer([Answer(GOOD, delay=60)]) as llm:
        async with open_task(server[1], "analyze") as ws:
            await start(ws, transcript=str(transcript), output=str(output), llm=_llm(llm.url))
            await until_status(ws, "asking llama3.2")
            began = time.monotonic()
            await ws.send(dump(Cancel()))
            frames = await frames_until(ws, "cancelled", "result", "error", within=20)
        assert frames[-1]["type"] == "cancelled", frames[-1]
        assert time.monotonic() - began < 2  # the job saw it, no need to kill it
    assert names(tmp_path) == ["talk.transcript.json"]


async def test_an_empty_transcript_is_analyzed_without_asking(
    server: tuple[EndpointServer, int], tmp_path: Path
) -> None:
    transcript = transcript_file(tmp_path / "q.transcript.json", [], language=None, duration=None)
    with FakeChatServer() as llm:
        result = await result_of(
            server[1],
            "analyze",
            transcript=str(transcript),
            output=str(tmp_path / "q.json"),
            llm=_llm(llm.url),
        )
        assert llm.requests == []
    assert result["keywords"] == 0 and result["summary"] is False
    document = json.loads((tmp_path / "q.json").read_text(encoding="utf-8"))
    assert document["keywords"] == [] and document["language"] is None
