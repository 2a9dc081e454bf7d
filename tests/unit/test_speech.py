"""The speech-to-text decisions (:mod:`python_endpoints.jobs.speech`), pure: windows, the merge
(with property tests: a transcript decoded in windows, interrupted and resumed anywhere, is the
spoken one, every word once, in order), the language vote, the coverage check, compute types."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from python_endpoints.jobs import speech, textio
from python_endpoints.jobs.speech import Merger, RawSegment, RawWord, Verdict, Window

# --- windows ----------------------------------------------------------------------------------


def test_windows_overlap_and_the_last_one_is_short() -> None:
    windows = speech.plan_windows(61.0, 20.0, 4.0)
    assert [(w.start, w.end) for w in windows] == [(0, 20), (16, 36), (32, 52), (48, 61)]
    assert [w.cut for w in windows] == [18, 34, 50, 61]  # the middle of each overlap
    assert [w.index for w in windows] == [0, 1, 2, 3]
    assert [w.last for w in windows] == [False, False, False, True]


def test_windows_fit_exactly_or_in_one() -> None:
    assert speech.plan_windows(36.0, 20.0, 4.0)[-1] == Window(1, 16, 36, 36, True)
    assert speech.plan_windows(5.0, 300.0, 60.0) == [Window(0, 0.0, 5.0, 5.0, True)]
    assert len(speech.plan_windows(36.0000001, 20.0, 4.0)) == 2  # float dust is no window


def test_windows_after_a_resume_start_at_the_position() -> None:
    windows = speech.plan_windows(50.0, 20.0, 4.0, start=12.5, first_index=7)
    assert [(w.index, w.start, w.end) for w in windows] == [
        (7, 12.5, 32.5),
        (8, 28.5, 48.5),
        (9, 44.5, 50.0),
    ]
    assert speech.plan_windows(50.0, 20.0, 4.0, start=50.0) == []
    assert speech.plan_windows(0.0, 20.0, 4.0) == []


def test_windows_without_overlap_and_no_drift_over_hours() -> None:
    windows = speech.plan_windows(3 * 3600.0, 300.0, 0.0)
    assert len(windows) == 36 and windows[-1].start == 35 * 300.0
    assert all(w.cut == w.end for w in windows)


@pytest.mark.parametrize(("chunk", "overlap"), [(0, 0), (10, -1), (10, 5), (10, 6)])
def test_windows_refuse_bad_sizes(chunk: float, overlap: float) -> None:
    with pytest.raises(ValueError, match="overlap_seconds"):
        speech.plan_windows(100.0, chunk, overlap)


# --- the merge, by hand ------------------------------------------------------------------------


def seg(start: float, end: float, text: str = "words", **kw: Any) -> RawSegment:
    return RawSegment(start, end, text, **kw)


def words(*spec: tuple[float, float, str]) -> RawSegment:
    """A segment made of timed words (times from the window's start)."""
    ws = tuple(RawWord(a, b, f" {t}") for a, b, t in spec)
    return RawSegment(ws[0].start, ws[-1].end, "".join(w.text for w in ws), -0.25, 0.125, ws)


def test_a_segment_is_kept_from_the_window_whose_territory_holds_its_midpoint() -> None:
    m = Merger(61.0)
    w0, w1, *_ = speech.plan_windows(61.0, 20.0, 4.0)
    m.begin(w0, "en", 0.9)
    assert m.offer(seg(1.0, 5.0, " Hello there. ", avg_logprob=-0.31234, no_speech_prob=0.01)) == (
        Verdict.KEEP,
        {
            "start": 1.0,
            "end": 5.0,
            "text": "Hello there.",
            "avg_logprob": -0.3123,
            "no_speech_prob": 0.01,
            "chunk": 0,
        },
    )
    assert m.position == 5.0
    verdict, kept = m.offer(seg(15.0, 19.0))  # midpoint 17 < cut 18: this window's
    assert verdict is Verdict.KEEP and kept is not None and kept["end"] == 19.0
    assert m.offer(seg(17.5, 20.0)) == (Verdict.STOP, None)  # midpoint 18.75: the next one's
    assert m.finish() == 19.0  # the last kept segment ends after the cut
    m.begin(w1, "en", 0.8)
    assert m.offer(seg(0.0, 2.5)) == (Verdict.DROP, None)  # 16-18.5: merged already
    verdict, kept = m.offer(seg(2.0, 6.0))  # 18-22, midpoint 20: kept, clipped to 19
    assert verdict is Verdict.KEEP and kept is not None and (kept["start"], kept["end"]) == (19, 22)
    assert kept["chunk"] == 1
    assert [s["end"] for s in m.segments] == [5.0, 19.0, 22.0]
    assert m.languages == {"en": 4.0 + 4.0 + 3.0} and m.probabilities == {"en": 0.9}


def test_a_window_ends_where_its_first_segment_past_the_cut_starts() -> None:
    m = Merger(61.0)
    w0, w1, *_ = speech.plan_windows(61.0, 20.0, 4.0)
    m.begin(w0, None, 0.0)
    m.offer(seg(2.0, 10.0))
    assert m.offer(seg(17.0, 20.0)) == (Verdict.STOP, None)  # straddles the cut 18
    assert m.offer(seg(19.0, 20.0)) == (Verdict.STOP, None)  # (the first one counts)
    assert m.finish() == 17.0  # not 18: the next window gives that segment whole
    m.begin(w1, None, 0.0)
    verdict, kept = m.offer(seg(0.9, 4.0))  # 16.9-20: midpoint 18.45, after the position
    assert verdict is Verdict.KEEP and kept is not None and kept["start"] == 17.0
    assert m.languages == {}  # no language: no vote


def test_silence_moves_the_position_to_the_cut_and_the_last_window_to_the_end() -> None:
    m = Merger(30.0)
    w0, w1 = speech.plan_windows(30.0, 20.0, 4.0)
    m.begin(w0, "en", 1.0)
    assert m.finish() == 18.0
    m.begin(w1, "en", 1.0)
    assert m.offer(seg(12.0, 13.0)) == (Verdict.KEEP, m.segments[-1])  # the last: no cut
    assert m.offer(seg(13.5, 20.0)) == (Verdict.KEEP, m.segments[-1])  # clamped to its end
    assert m.segments[-1]["end"] == 30.0
    assert m.finish() == 30.0
    assert m.languages == {"en": 1.0 + 0.5}


def test_empty_text_and_segments_before_the_territory_are_dropped() -> None:
    m = Merger(100.0, position=45.0)
    m.begin(Window(3, 40.0, 60.0, 58.0, False), "en", 1.0)
    assert m.offer(seg(6.0, 7.0, "   ")) == (Verdict.DROP, None)
    assert m.offer(seg(-1.0, 4.0)) == (Verdict.DROP, None)  # 40-44: before the position
    assert m.segments == [] and m.position == 45.0


def test_words_split_a_segment_at_the_cut() -> None:
    m = Merger(61.0)
    w0, w1, *_ = speech.plan_windows(61.0, 20.0, 4.0)
    m.begin(w0, "en", 1.0)
    verdict, kept = m.offer(words((15.0, 16.0, "one"), (16.5, 17.5, "two"), (17.8, 18.6, "three")))
    assert verdict is Verdict.STOP and kept is not None
    assert (kept["start"], kept["end"], kept["text"]) == (15.0, 17.5, "one two")
    assert (kept["avg_logprob"], kept["no_speech_prob"]) == (-0.25, 0.125)
    assert m.finish() == 17.8
    m.begin(w1, "en", 1.0)
    # The next window hears the same words (16-20 is its 0-4): "two" is merged already.
    verdict, kept = m.offer(words((0.5, 1.5, "two"), (1.8, 2.6, "three"), (3.0, 3.5, "four")))
    assert verdict is Verdict.KEEP and kept is not None
    assert (kept["start"], kept["end"], kept["text"]) == (17.8, 19.5, "three four")


def test_a_segment_whose_first_word_is_past_the_cut_stops_the_window() -> None:
    m = Merger(61.0)
    m.begin(speech.plan_windows(61.0, 20.0, 4.0)[0], "en", 1.0)
    assert m.offer(words((18.5, 19.0, "late"), (19.0, 19.5, "words"))) == (Verdict.STOP, None)
    assert m.finish() == 18.0  # the cut comes first


def test_a_segment_keeps_its_words_without_repeating_its_text() -> None:
    m = Merger(61.0)
    m.begin(speech.plan_windows(61.0, 20.0, 4.0)[0], "en", 1.0)
    _, kept = m.offer(words((1.0, 1.4, "Hello,"), (1.5, 1.9, "world."), (2.0, 2.5, "Again")))
    assert kept is not None and kept["text"] == "Hello, world. Again"
    # [start, end, characters of the text]: the space before a word is its own.
    assert kept["words"] == [[1.0, 1.4, 6], [1.5, 1.9, 7], [2.0, 2.5, 6]]
    # Words that do not spell the text (the decoder's text differs) are not kept.
    odd = RawSegment(3.0, 4.0, " Hi there", words=(RawWord(3.0, 4.0, " Hello"),))
    _, kept = m.offer(odd)
    assert kept is not None and kept["text"] == "Hi there" and "words" not in kept
    _, kept = m.offer(seg(5.0, 6.0, " No words."))  # the decoder timed none
    assert kept is not None and "words" not in kept
    assert speech.word_lengths("a b", [" a", " b"]) == [1, 2]
    assert speech.word_lengths("a b", [" a", " ", "b"]) == [1, 1, 1]
    assert speech.word_lengths("a b", [" a", " c"]) is None
    # Words that span none of the text (blank ones) time nothing: no "words" at all.
    assert "words" not in speech.segment_dict(0.0, 1.0, " ", 0.0, 0.0, 0, [(0.0, 1.0, " ")])


def test_a_segment_whose_words_are_all_merged_already_is_dropped_whole() -> None:
    m = Merger(61.0, [{"start": 0.0, "end": 3.0, "text": "a b", "chunk": 0}])
    m.begin(Window(1, 0.0, 20.0, 18.0, False), "en", 1.0)
    assert m.offer(words((1.0, 1.5, "a"), (2.0, 2.5, "b"))) == (Verdict.DROP, None)
    verdict, kept = m.offer(words((2.0, 2.5, "b"), (4.0, 4.5, "c")))
    assert verdict is Verdict.KEEP and kept is not None and kept["text"] == "c"


def test_merging_outside_a_window_is_a_bug() -> None:
    m = Merger(10.0)
    with pytest.raises(RuntimeError, match="begin"):
        m.offer(seg(0, 1))
    with pytest.raises(RuntimeError, match="begin"):
        m.finish()
    m.begin(Window(0, 0.0, 10.0, 10.0, True), "en", 1.0)
    m.abandon()
    with pytest.raises(RuntimeError):
        m.finish()


def test_an_abandoned_window_keeps_what_it_merged_and_the_position() -> None:
    m = Merger(61.0)
    m.begin(speech.plan_windows(61.0, 20.0, 4.0)[0], "en", 1.0)
    m.offer(seg(1.0, 4.0))
    m.abandon()
    assert m.position == 4.0 and len(m.segments) == 1
    assert speech.plan_windows(61.0, 20.0, 4.0, m.position, m.next_chunk)[0].start == 4.0


def test_decoding_again_starts_with_the_last_merged_phrase_when_it_is_near() -> None:
    # A lead-in from the start of the last merged segment, if within the overlap.
    (first, *_) = speech.plan_from(61.0, 20.0, 4.0, 30.0, 3, lead_in=27.5)
    assert (first.index, first.start, first.end, first.cut) == (3, 27.5, 47.5, 45.5)
    assert speech.plan_from(61.0, 20.0, 4.0, 30.0, lead_in=25.0)[0].start == 30.0  # too far
    assert speech.plan_from(61.0, 20.0, 4.0, 30.0, lead_in=30.0)[0].start == 30.0
    assert speech.plan_from(61.0, 20.0, 4.0, 30.0)[0].start == 30.0
    assert speech.plan_from(61.0, 20.0, 4.0, 61.0, lead_in=60.0) == []  # nothing left
    m = Merger(61.0)
    assert m.lead_in is None
    m.begin(speech.plan_windows(61.0, 20.0, 4.0)[0], "en", 1.0)
    m.offer(seg(1.0, 4.0))
    assert m.lead_in == 1.0


def test_where_the_next_words_start_and_where_the_window_reaches() -> None:
    m = Merger(61.0, [{"start": 0.0, "end": 3.0, "text": "a b", "chunk": 0}])
    window = Window(1, 0.0, 20.0, 18.0, False)
    with pytest.raises(RuntimeError, match="begin"):
        m.first_kept(seg(4.0, 5.0))
    m.begin(window, "en", 1.0)
    assert m.reach() == 18.0  # the cut, as nothing was seen past it
    assert m.first_kept(words((1.0, 1.5, "a"), (2.0, 2.5, "b"))) is None  # merged already
    assert m.first_kept(words((2.5, 3.7, "b"), (9.0, 9.5, "c"))) == 3.0  # clipped to it
    assert m.first_kept(seg(9.0, 10.0)) == 9.0
    assert m.first_kept(seg(18.5, 19.0)) is None  # past the cut
    assert m.offer(words((9.0, 9.5, "c"), (18.5, 19.0, "d")))[0] is Verdict.STOP
    assert m.reach() == 18.0 and m.finish() == 18.0
    m.begin(Window(2, 16.0, 61.0, 61.0, True), "en", 1.0)
    assert m.reach() == 61.0 and m.first_kept(seg(40.0, 45.0)) == 56.0  # the last: all of it
    m.offer(words((9.0, 9.5, "c"), (12.0, 14.0, "e")))
    assert m.reach() == 61.0


def test_a_stretch_no_decoding_made_out_is_kept_in_the_checkpoint() -> None:
    m = Merger(61.0)
    m.mark_unheard(3.0004, 9.5)
    assert m.unheard == [(3.0, 9.5)] and m.extras()["unheard"] == [[3.0, 9.5]]
    assert Merger.resume(61.0, {"position": 10.0, **m.extras()}).unheard == [(3.0, 9.5)]


def test_a_checkpoint_resumes_after_its_last_segment() -> None:
    checkpoint = {
        "segments": [
            {"start": 0.5, "end": 4.0, "text": "a", "chunk": 0},
            {"start": 4.0, "end": 9.5, "text": "b", "chunk": 2},
        ],
        "position": 8.0,  # a progress report throttled away after the last segment
        "languages": {"en": 9},
    }
    m = Merger.resume(60.0, checkpoint)
    assert (m.position, m.resumed_from, m.next_chunk) == (9.5, 9.5, 3)
    assert m.extras() == {"position": 9.5, "languages": {"en": 9.0}, "unheard": []}
    m = Merger.resume(60.0, {**checkpoint, "unheard": [[1, 2.5]]})
    assert m.unheard == [(1.0, 2.5)] and m.extras()["unheard"] == [[1.0, 2.5]]
    assert Merger.resume(60.0, {**checkpoint, "position": 30.0}).position == 30.0
    assert Merger.resume(20.0, {"position": 30.0}).position == 20.0  # clamped to the media
    fresh = Merger.resume(60.0, None)
    assert (fresh.position, fresh.segments, fresh.next_chunk) == (0.0, [], 0)


def test_a_window_planned_after_the_position_leaves_no_gap() -> None:
    m = Merger(100.0, position=10.0)
    m.begin(Window(0, 12.0, 32.0, 30.0, False), "en", 1.0)
    assert m.position == 12.0


# --- the merge, by properties ------------------------------------------------------------------


@dataclass(frozen=True)
class Spoken:
    """What was said: units (words, or whole segments) in order, none overlapping."""

    duration: float
    units: list[tuple[float, float, str]]


@st.composite
def spoken(draw: st.DrawFn, longest: float) -> Spoken:
    # Hundredths of a second, so that the arithmetic is exact enough to compare.
    t = draw(st.integers(0, 300))
    units = []
    for i in range(draw(st.integers(0, 60))):
        length = draw(st.integers(1, int(longest * 100)))
        units.append((t / 100, (t + length) / 100, f"w{i}"))
        t += length + draw(st.integers(0, 400))
    return Spoken((t + draw(st.integers(0, 300))) / 100 or 0.01, units)


def decode(spoken: Spoken, window: Window, grouping: list[int], timed: bool) -> list[RawSegment]:
    """What a decoder that hears well gives for ``window``: the units it holds (those cut
    by its edges cut too), grouped into segments, times from the window's start."""
    heard = [
        (max(a, window.start) - window.start, min(b, window.end) - window.start, f" {t}")
        for a, b, t in spoken.units
        if b > window.start and a < window.end
    ]
    out: list[RawSegment] = []
    i = 0
    for size in grouping:
        part = heard[i : i + max(1, size)] if timed else heard[i : i + 1]
        i += len(part)
        if not part:
            break
        text = "".join(t for _, _, t in part)
        ws = tuple(RawWord(a, b, t) for a, b, t in part) if timed else ()
        out.append(RawSegment(part[0][0], part[-1][1], text, words=ws))
    for a, b, t in heard[i:]:
        out.append(RawSegment(a, b, t, words=(RawWord(a, b, t),) if timed else ()))
    return out


def transcribe(
    spoken: Spoken,
    chunk: float,
    overlap: float,
    grouping: list[int],
    timed: bool,
    stop_after: int | None,
) -> tuple[list[dict[str, Any]], list[float]]:
    """Decode in windows as the job does, interrupted after ``stop_after`` offers and resumed
    from the checkpoint (as the engine keeps it); returns the segments and every position."""
    checkpoint: dict[str, Any] = {"segments": [], "position": 0.0, "languages": {}}
    positions: list[float] = []
    offers = 0
    while True:
        m = Merger.resume(spoken.duration, checkpoint)
        interrupted = False
        for window in speech.plan_windows(
            spoken.duration, chunk, overlap, m.position, m.next_chunk
        ):
            m.begin(window, "en", 1.0)
            for raw in decode(spoken, window, grouping, timed):
                if stop_after is not None and offers == stop_after:
                    interrupted = True
                    break
                offers += 1
                verdict, kept = m.offer(raw)
                if kept is not None:
                    assert not positions or kept["start"] >= positions[-1] - 1e-9
                    checkpoint["segments"].append(kept)
                positions.append(m.position)
                if verdict is Verdict.STOP:
                    break
            if interrupted:
                break
            positions.append(m.finish())
            checkpoint["position"] = m.position
        if not interrupted:
            return checkpoint["segments"], positions
        stop_after = None  # once


def assert_well_formed(segments: list[dict[str, Any]], positions: list[float]) -> None:
    assert positions == sorted(positions), "the position only grows"
    for a, b in itertools.pairwise(segments):
        assert a["end"] <= b["start"] + 1e-9, f"{a} overlaps {b}"
    for s in segments:
        assert s["start"] <= s["end"] and s["text"] == s["text"].strip() != ""


@settings(max_examples=300, deadline=None)
@given(
    spoken=spoken(longest=1.5),
    chunk=st.integers(10, 40),
    overlap=st.integers(3, 4),
    grouping=st.lists(st.integers(1, 12), max_size=20),
    stop_after=st.none() | st.integers(0, 80),
)
def test_timed_words_are_merged_exactly_once_in_order(
    spoken: Spoken,
    chunk: int,
    overlap: int,
    grouping: list[int],
    stop_after: int | None,
) -> None:
    # Words shorter than half the overlap, segments of any length: the merge is exact.
    segments, positions = transcribe(spoken, chunk, overlap, grouping, True, stop_after)
    assert_well_formed(segments, positions)
    assert " ".join(s["text"] for s in segments).split() == [t for _, _, t in spoken.units]
    assert positions[-1] == pytest.approx(spoken.duration) if positions else True
    # Every word is kept with its segment, when it was said, as the transcript file reads it
    # back (a word cut by a window's edge or a resume point starts there).
    document = speech.transcript_document("en", spoken.duration, "tiny.en", segments)
    words = [w for s in textio.parse_transcript(document).segments for w in s.words]
    assert [w.text.strip() for w in words] == [t for _, _, t in spoken.units]
    for word, (start, end, _) in zip(words, spoken.units, strict=True):
        assert start - 1e-9 <= word.start <= word.end <= end + 1e-9, (word, start, end)


@settings(max_examples=200, deadline=None)
@given(
    spoken=spoken(longest=5.0),
    chunk=st.integers(30, 60),
    overlap=st.integers(11, 14),
    stop_after=st.none() | st.integers(0, 80),
)
def test_segments_shorter_than_half_the_overlap_are_merged_exactly_once(
    spoken: Spoken, chunk: int, overlap: int, stop_after: int | None
) -> None:
    segments, positions = transcribe(spoken, chunk, overlap, [], False, stop_after)
    assert_well_formed(segments, positions)
    assert [s["text"] for s in segments] == [t for _, _, t in spoken.units]


@st.composite
def noisy_window(draw: st.DrawFn, window: Window) -> list[RawSegment]:
    """Whatever a decoder might give: out of order, overlapping, past the window's edges."""
    out = []
    for i in range(draw(st.integers(0, 8))):
        a = draw(st.floats(-2, window.end - window.start + 2))
        b = a + draw(st.floats(0, 12))
        n = draw(st.integers(0, 3))
        ws = tuple(
            RawWord(a + (b - a) * k / n, a + (b - a) * (k + 1) / n, f" x{i}.{k}") for k in range(n)
        )
        out.append(RawSegment(a, b, draw(st.sampled_from([" x", "", " y "])), words=ws))
    return out


@settings(max_examples=200, deadline=None)
@given(data=st.data(), hundredths=st.integers(100, 12000), chunk=st.integers(10, 40))
def test_whatever_the_decoder_says_the_transcript_is_ordered_and_never_overlaps(
    data: st.DataObject, hundredths: int, chunk: int
) -> None:
    duration = hundredths / 100  # the job's durations are whole milliseconds too
    m = Merger(duration)
    positions = [m.position]
    for window in speech.plan_windows(duration, chunk, chunk / 4):
        territory = m.position
        m.begin(window, "en", 1.0)
        for raw in data.draw(noisy_window(window)):
            verdict, kept = m.offer(raw)
            if kept is not None:
                # Nothing kept from outside the window's territory, nor before the position.
                assert kept["start"] >= positions[-1] - 1e-9 and kept["start"] >= territory - 1e-9
                assert kept["end"] <= window.end + 1e-6
            positions.append(m.position)
            if verdict is Verdict.STOP:
                break
        positions.append(m.finish())
    assert_well_formed(m.segments, positions)
    assert m.position == duration
    # Whatever the words, the transcript written from them reads back.
    textio.parse_transcript(speech.transcript_document("en", duration, "tiny.en", m.segments))


# --- language ---------------------------------------------------------------------------------


def test_the_language_with_most_speech_wins_ties_go_to_the_surer_detection() -> None:
    assert speech.vote({"en": 30.0, "fr": 10.0}, {"en": 0.5, "fr": 0.99}) == ("en", 0.5)
    assert speech.vote({"en": 10.0, "fr": 10.0}, {"en": 0.5, "fr": 0.9}) == ("fr", 0.9)
    assert speech.vote({"fr": 0.0, "en": 0.0}, {}) == ("en", None)  # then by name
    assert speech.vote({}, {}) == (None, None)
    assert speech.vote({"en": 30.0}, {"en": 0.5}, fixed="de") == ("de", 1.0)


# --- coverage ---------------------------------------------------------------------------------


def test_a_transcript_that_reaches_the_end_or_silence_is_complete() -> None:
    assert not speech.needs_tail_check(2709.0, 2710.0)
    assert speech.check_coverage(2709.0, 2710.0, [(2700.0, 2710.0)]) is None  # within 2 s
    assert speech.check_coverage(600.0, 2710.0, []) is None  # silence after it
    assert speech.check_coverage(600.0, 2710.0, [(599.5, 602.4), (900.0, 901.0)]) is None
    assert speech.check_coverage(None, 60.0, []) is None  # no speech at all
    assert speech.needs_tail_check(None, 60.0)


def test_speech_after_the_transcript_is_a_clear_failure() -> None:
    problem = speech.check_coverage(723.4, 2710.2, [(724.0, 730.0), (800.0, 2715.0)])
    assert problem is not None
    assert problem.startswith("the transcript stops at 12:03 of 45:10, but there is speech")
    assert "(1915 s from 12:05)" in problem and "retry" in problem
    problem = speech.check_coverage(None, 3700.0, [(3600.0, 3610.0)])
    assert problem is not None and "the transcript is empty" in problem and "1:00:00" in problem


# --- devices and compute types ----------------------------------------------------------------

CPU = {"float32", "int8", "int8_float32"}
GPU = {"float32", "float16", "bfloat16", "int8_float16", "int8_float32", "int8"}


def test_the_device() -> None:
    assert speech.choose_device("auto", 0) == "cpu"
    assert speech.choose_device("auto", 1) == "cuda"
    assert speech.choose_device("cuda", 0) == "cuda"  # asked for: its failure says why


def test_auto_tries_float16_float32_int8_as_supported_the_remembered_first() -> None:
    assert speech.load_order("auto", GPU, None) == ["float16", "float32", "int8"]
    assert speech.load_order("auto", CPU, None) == ["float32", "int8"]
    assert speech.load_order("auto", CPU, "int8") == ["int8", "float32"]
    assert speech.load_order("auto", GPU, "int8_float16")[0] == "int8_float16"
    assert speech.load_order("auto", CPU, "float16") == ["float32", "int8"]  # not here
    assert speech.load_order("int8_float16", CPU, "int8") == ["int8_float16"]  # as asked


def test_load_candidates_fall_back_to_the_cpu_when_allowed() -> None:
    supported = {"cpu": CPU, "cuda": GPU}
    assert speech.load_candidates("auto", 0, "auto", False, supported, {}) == [
        ("cpu", "float32"),
        ("cpu", "int8"),
    ]
    assert speech.load_candidates("auto", 1, "float16", False, supported, {"cpu": "int8"}) == [
        ("cuda", "float16"),
        ("cpu", "int8"),
        ("cpu", "float32"),
    ]
    assert speech.load_candidates("cuda", 1, "auto", False, supported, {}) == [
        ("cuda", "float16"),
        ("cuda", "float32"),
        ("cuda", "int8"),
    ]
    assert speech.load_candidates("cuda", 1, "float32", True, supported, {})[1:] == [
        ("cpu", "float32"),
        ("cpu", "int8"),
    ]


def test_out_of_memory_falls_back_to_smaller_types_then_the_cpu() -> None:
    supported = {"cpu": CPU, "cuda": GPU}
    assert speech.smaller_type("float32", GPU) == "float16"
    assert speech.smaller_type("float16", GPU) == "int8_float16"
    assert speech.smaller_type("float32", CPU) == "int8"
    assert speech.smaller_type("int8", CPU) is None
    assert speech.after_out_of_memory("cuda", "float16", supported, {}) == ("cuda", "int8_float16")
    assert speech.after_out_of_memory("cuda", "int8", supported, {"cpu": "int8"}) == ("cpu", "int8")
    assert speech.after_out_of_memory("cpu", "float32", supported, {}) == ("cpu", "int8")
    assert speech.after_out_of_memory("cpu", "int8", supported, {}) is None
    assert speech.after_out_of_memory("cuda", "int8", {"cuda": GPU}, {}) is None
    assert speech.fallback_chain("cuda", "float32", supported, {}) == [
        ("cuda", "float16"),
        ("cuda", "int8_float16"),
        ("cpu", "float32"),
        ("cpu", "int8"),
    ]
    assert speech.fallback_chain("cpu", "int8", supported, {}) == []


def test_out_of_memory_is_recognised_in_ctranslate2s_messages() -> None:
    assert speech.is_out_of_memory(speech.CUDA_OOM_MESSAGE)
    assert speech.is_out_of_memory("cuBLAS failed with status CUBLAS_STATUS_ALLOC_FAILED")
    assert not speech.is_out_of_memory("CUDA failed with error unspecified launch failure")


# --- reporting --------------------------------------------------------------------------------


def test_clock_percent_and_status() -> None:
    assert [speech.clock(s) for s in (0, 59.9, 723.4, 2710.2, 3723.0, -1)] == [
        "0:00",
        "0:59",
        "12:03",
        "45:10",
        "1:02:03",
        "0:00",
    ]
    assert speech.percent(30.0, 60.0) == 50.0
    assert speech.percent(61.0, 60.0) == 100.0 and speech.percent(0.0, 0.0) == 100.0
    assert speech.status_text(200.0, 2710.0, 1.84) == "transcribing 3:20 of 45:10 (1.8x)"
    assert speech.status_text(0.0, 2710.0, None) == "transcribing 0:00 of 45:10"
    assert speech.status_text(0.0, 2710.0, 0.0) == "transcribing 0:00 of 45:10"


def test_the_transcript_document() -> None:
    segments = [{"start": 0.0, "end": 1.0, "text": "Hi."}]
    document = speech.transcript_document("en", 12.34567, "tiny.en", segments)
    assert document == {
        "version": 1,
        "language": "en",
        "duration": 12.346,
        "model": "tiny.en",
        "segments": segments,
        "unheard": [],
    }
    assert document["segments"][0] is not segments[0]
    with_gap = speech.transcript_document("en", 12.0, "tiny.en", segments, [(3.0, 6.5)])
    assert with_gap["unheard"] == [[3.0, 6.5]]


def test_speech_seconds_adds_the_spans_and_ignores_reversed_ones() -> None:
    assert speech.speech_seconds([(0.0, 1.5), (3.0, 4.0), (5.0, 4.0)]) == 2.5
    assert speech.speech_seconds([]) == 0.0
