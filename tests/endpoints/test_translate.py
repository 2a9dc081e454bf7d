"""TRANSLATE_SUBTITLES against the project's fake chat server (tests/support/llmserver.py — a
stand-in for Ollama, which cannot run here): answering right, with a wrong cue count, slowly,
with a dropped connection, with a refusal; stopped and resumed. Every case ends with every
cue at its own times, or a clear error and no file."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pysubs2
import pytest

from python_endpoints.jobs import translate, translation
from python_endpoints.serving.child import JobFailed
from tests.support.clips import JobContext, run_job
from tests.support.llmserver import Answer, FakeChatServer, asked, translator

#: Cue times to the millisecond, some cues of two lines, a gap, one that starts at 0.
CUES = [
    (0, 1_234, "Hello, I am Ana."),
    (1_500, 3_007, "Welcome to the show."),
    (3_300, 5_999, "Today we talk about\nrivers and bridges."),
]
CUES += [(6_000 + 2_000 * i, 7_801 + 2_000 * i, f"Line number {i + 4}.") for i in range(22)]


def write_srt(path: Path, cues: list[tuple[int, int, str]] = CUES) -> Path:
    subs = pysubs2.SSAFile()
    for start, end, text in cues:
        subs.append(pysubs2.SSAEvent(start=start, end=end, text=text.replace("\n", r"\N")))
    path.write_text(subs.to_string("srt"), encoding="utf-8")
    return path


def params(srt: Path, llm: FakeChatServer, **more: Any) -> dict[str, Any]:
    return {
        "input": str(srt),
        "output_dir": str(srt.parent / "out"),
        "stem": "talk",
        "lang": "fr",
        "chunk_cues": 10,
        "context_cues": 2,
        "llm": {"base_url": llm.url, "model": "fake-model", "timeout": 10, "retries": 1},
        **more,
    }


def read(path: Path) -> list[tuple[int, int, str]]:
    return [(e.start, e.end, e.plaintext) for e in pysubs2.load(str(path))]


def test_every_cue_is_translated_at_its_own_times_with_context_and_glossary(
    tmp_path: Path,
) -> None:
    srt = write_srt(tmp_path / "talk.srt")
    with FakeChatServer([translator(glossary={"Ana": "Ana"})]) as llm:
        result = run_job(translate.translate_subtitles_job, params(srt, llm))
        requests = llm.requests
    assert result is not None
    assert (result["cues"], result["chunks"], result["requests"]) == (25, 3, 4)
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["talk.fr.srt", "talk.fr.vtt"]
    for fmt in ("srt", "vtt"):
        got = read(out / f"talk.fr.{fmt}")
        assert [(a, b) for a, b, _ in got] == [(a, b) for a, b, _ in CUES]  # to the ms
        assert [t for _, _, t in got] == ["FR: " + t for _, _, t in CUES]
    srt_text = (out / "talk.fr.srt").read_text()
    assert srt_text.startswith("1\n00:00:00,000 --> 00:00:01,234\nFR: Hello, I am Ana.\n")
    assert "\n25\n00:00:48,000 --> 00:00:49,801\n" in srt_text  # numbered as the original
    # The glossary first (the whole text), then three chunks, each with its context.
    assert [asked(r) for r in requests] == [[], list(range(1, 11)), list(range(11, 21)),
                                            list(range(21, 26))]  # fmt: skip
    second = json.loads(requests[2].body["messages"][1]["content"])
    assert second["glossary"] == {"Ana": "Ana"}
    assert second["before"] == [
        {"n": 9, "text": "Line number 9.", "translation": "FR: Line number 9."},
        {"n": 10, "text": "Line number 10.", "translation": "FR: Line number 10."},
    ]
    assert [c["n"] for c in second["after"]] == [21, 22]
    assert "French" in requests[1].body["messages"][0]["content"]


def test_bilingual_cues_hold_the_original_above_the_translation(tmp_path: Path) -> None:
    srt = write_srt(tmp_path / "talk.srt", CUES[:3])
    with FakeChatServer([translator()]) as llm:
        run_job(translate.translate_subtitles_job, params(srt, llm, bilingual=True))
    got = read(tmp_path / "out" / "talk.fr.srt")
    assert got[2] == (3_300, 5_999, "Today we talk about\nrivers and bridges.\nFR: Today we "
                      "talk about\nrivers and bridges.")  # fmt: skip


def wrong_count(body: Any) -> str:
    """An answer that leaves out the last cue asked for."""
    request = json.loads(body["messages"][1]["content"])
    cues = [{"n": c["n"], "text": "X"} for c in request["translate"]][:-1]
    return json.dumps({"cues": cues})


def test_an_answer_with_a_wrong_cue_count_is_asked_again_saying_why(tmp_path: Path) -> None:
    srt = write_srt(tmp_path / "talk.srt")
    answers = [translator(), Answer(reply=wrong_count), translator()]
    with FakeChatServer(answers) as llm:
        result = run_job(translate.translate_subtitles_job, params(srt, llm))
        requests = llm.requests
    assert result is not None and result["requests"] == 5
    assert [asked(r) for r in requests][1:3] == [list(range(1, 11))] * 2
    again = requests[2].body["messages"][-1]["content"]
    assert "9 cue(s) answered for the 10 sent (1 to 10)" in again
    assert "exactly 10 cues, numbered 1 to 10" in again
    assert [t for _, _, t in read(tmp_path / "out" / "talk.fr.srt")][:10] == [
        "FR: " + t for _, _, t in CUES[:10]
    ]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (Answer(reply=wrong_count), "9 cue(s) answered for the 10 sent"),
        (Answer("I'm sorry, but I can't help with that."), "I'm sorry, but I can't help"),
        (Answer(json.dumps({"cues": [{"n": 2, "text": "a"}] * 10})), "cue 1 is answered as 2"),
    ],
)
def test_a_chunk_never_answered_usably_fails_the_task_and_writes_nothing(
    tmp_path: Path, answer: Answer, said: str
) -> None:
    srt = write_srt(tmp_path / "talk.srt")
    ctx = JobContext()
    with FakeChatServer([translator(), answer]) as llm, pytest.raises(JobFailed) as failed:
        run_job(translate.translate_subtitles_job, params(srt, llm), ctx)
    assert failed.value.error_type == "LLM_ERROR"
    message = str(failed.value)
    assert "did not translate cues 1 to 10 usably in 3 tries" in message and said in message
    assert "nothing was shifted" in message
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert len(llm.requests) == 4  # the glossary, then the chunk three times


def test_a_dropped_connection_is_tried_again(tmp_path: Path) -> None:
    srt = write_srt(tmp_path / "talk.srt", CUES[:5])
    with FakeChatServer([translator(), Answer(drop=True), translator()]) as llm:
        result = run_job(translate.translate_subtitles_job, params(srt, llm))
    assert result is not None and len(read(tmp_path / "out" / "talk.fr.srt")) == 5


def test_a_model_slower_than_the_timeout_fails_clearly_and_a_slow_one_is_waited_for(
    tmp_path: Path,
) -> None:
    srt = write_srt(tmp_path / "talk.srt", CUES[:5])
    with FakeChatServer([Answer(delay=2.0)]) as llm, pytest.raises(JobFailed) as failed:
        slow = params(srt, llm, glossary=False)
        slow["llm"]["timeout"] = 0.5
        run_job(translate.translate_subtitles_job, slow)
    assert failed.value.error_type == "LLM_UNREACHABLE"
    assert "did not answer within 0.5 s" in str(failed.value)
    assert "The original subtitles are kept as they are." in str(failed.value)
    with FakeChatServer([Answer(reply=translator().reply, delay=0.5)]) as llm:
        assert run_job(translate.translate_subtitles_job, params(srt, llm)) is not None


class CancelAfter(JobContext):
    """Stopped once ``chunks`` chunks are checkpointed (to the job, a kill: its checkpoint
    is what the queue keeps)."""

    def __init__(self, chunks: int) -> None:
        super().__init__()
        self.chunks = chunks

    def progress(self, percent: float, *args: Any, **kw: Any) -> None:
        super().progress(percent, *args, **kw)
        if self.checkpoints and len(self.checkpoints[-1]["chunks"]) >= self.chunks:
            self.cancel_event.set()

    @property  # type: ignore[override]
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()


def test_a_stopped_translation_resumes_with_only_the_chunks_left(tmp_path: Path) -> None:
    srt = write_srt(tmp_path / "talk.srt")
    with FakeChatServer([translator(glossary={"Ana": "Ana"})]) as llm:
        run_job(translate.translate_subtitles_job, params(srt, llm, stem="whole"))
        first = CancelAfter(chunks=2)
        assert run_job(translate.translate_subtitles_job, params(srt, llm), first) is None
        checkpoint = first.checkpoints[-1]
        assert sorted(checkpoint["chunks"]) == ["0", "1"]
        assert checkpoint["glossary"] == {"Ana": "Ana"}
        before = len(llm.requests)
        ctx = JobContext()
        result = run_job(
            translate.translate_subtitles_job, params(srt, llm, resume=checkpoint), ctx
        )
        resumed_asks = [asked(r) for r in llm.requests[before:]]
        # Another language: nothing of the checkpoint is reused.
        other = run_job(
            translate.translate_subtitles_job, params(srt, llm, lang="de", resume=checkpoint)
        )
    assert result is not None and result["chunks_reused"] == 2 and result["requests"] == 1
    assert resumed_asks == [list(range(21, 26))]  # no glossary again, only the last chunk
    out = tmp_path / "out"
    assert (out / "talk.fr.srt").read_text() == (out / "whole.fr.srt").read_text()
    found = [p for p, text in ctx.reports if text and "translating" in text]
    assert found and min(found) >= 5.0 + 90.0 * 2 / 3 - 1e-6  # from where it got
    assert other is not None and other["chunks_reused"] == 0 and other["requests"] == 4


def test_without_a_language_model_it_fails_at_once_saying_which_setting(tmp_path: Path) -> None:
    srt = write_srt(tmp_path / "talk.srt", CUES[:2])
    given = {"input": str(srt), "output_dir": str(tmp_path), "stem": "talk", "lang": "fr"}
    with pytest.raises(JobFailed) as failed:
        run_job(translate.translate_subtitles_job, given)
    assert failed.value.error_type == "PAYLOAD_ERROR"
    assert "set llm_base_url and llm_model" in str(failed.value)
    assert "\n" not in str(failed.value)


def test_a_transcript_is_translated_as_its_subtitles_would_be_cut(tmp_path: Path) -> None:
    transcript = tmp_path / "talk.transcript.json"
    segments = [
        {"start": 0.0, "end": 2.5, "text": "Good morning everyone."},
        {"start": 3.0, "end": 5.25, "text": "Let us begin."},
    ]
    transcript.write_text(json.dumps({"version": 1, "language": "en", "duration": 6.0,
                                      "segments": segments}))  # fmt: skip
    with FakeChatServer([translator()]) as llm:
        result = run_job(translate.translate_subtitles_job, params(transcript, llm))
        system = llm.requests[-1].body["messages"][0]["content"]
    assert result is not None
    assert read(tmp_path / "out" / "talk.fr.vtt") == [
        (0, 2_500, "FR: Good morning everyone."),
        (3_000, 5_250, "FR: Let us begin."),
    ]
    assert "from English into French" in system


def test_the_chunks_and_answers_of_the_pure_part() -> None:
    assert [(c.start, c.end) for c in translation.chunks(25, 10)] == [(0, 10), (10, 20), (20, 25)]
    assert [(c.start, c.end) for c in translation.chunks(23, 10)] == [(0, 10), (10, 23)]
    assert translation.chunks(0, 10) == []
    chunk = translation.Chunk(0, 4, 6)
    good = '```json\n{"cues": [{"n": 5, "text": " a "}, {"n": 6, "text": "b"}]}\n```'
    assert translation.read_answer(good, chunk).texts == ["a", "b"]
    for bad, why in [
        ('{"cues": [{"n": 5, "text": "a"}]}', "1 cue(s) answered for the 2 sent"),
        ('{"cues": [{"n": 5, "text": "a"}, {"n": 6, "text": " "}]}', "cue 6 has no text"),
        ('{"answer": 1}', "no list of cues"),
        ("no", "not JSON"),
    ]:
        with pytest.raises(ValueError, match=re.escape(why)):
            translation.read_answer(bad, chunk)
    assert translation.merged({"Ana": "Ana"}, {"ana": "Anna", "Bo": "Beau"}) == {
        "Ana": "Ana",
        "Bo": "Beau",
    }
    assert translation.lines_of("one two three four five six", 12) == (
        "one two three",
        "four five six",
    )
    assert translation.lines_of("中文字幕很长很长很长很长很长很长", 5) == (
        "中文字幕很长很长很长很长很长很长",
    )
    assert translation.language_name("pt-BR") == "Portuguese (pt-BR)"


# --- through the endpoints server: pause and cancel for real -------------------------------


async def test_a_pause_holds_between_chunks_and_a_cancel_ends_it_through_the_server(
    tmp_path: Path,
) -> None:
    from python_endpoints.protocol import Cancel, Pause, Resume, dump
    from python_endpoints.serving.registry import ENDPOINTS
    from python_endpoints.serving.server import EndpointServer
    from tests.endpoints.test_endpoints import TOKEN, frames_until, open_task, start
    from tests.support.process_table import assert_no_job_process_left

    srt = write_srt(tmp_path / "talk.srt")
    slow = Answer(reply=translator().reply, delay=0.3)
    srv = EndpointServer(ENDPOINTS, TOKEN)
    port = await srv.start()
    try:
        with FakeChatServer([slow]) as llm:
            async with open_task(port, "translate_subtitles") as ws:
                await start(ws, **params(srt, llm, chunk_cues=5, glossary=False))
                seen = await frames_until(ws, "progress")
                while "translating" not in str(seen[-1].get("status_text")):
                    seen += await frames_until(ws, "progress")
                await ws.send(dump(Pause()))
                seen += await frames_until(ws, "paused", within=20)
                asked_before = len(llm.requests)
                assert 1 <= asked_before < 5  # the chunk under way was finished, then held
                await asyncio.sleep(1.0)
                assert len(llm.requests) == asked_before  # nothing asked while paused
                await ws.send(dump(Resume()))
                seen += await frames_until(ws, "progress", within=10)
                await ws.send(dump(Cancel()))
                seen += await frames_until(ws, "cancelled", within=20)
        assert seen[-1] == {"type": "cancelled"}
        assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    finally:
        await srv.close()
    await assert_no_job_process_left()
