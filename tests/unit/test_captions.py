"""Readable captions (:mod:`python_endpoints.jobs.captions`): pure functions, tested by
example and by property (hypothesis)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from python_endpoints.jobs import captions
from python_endpoints.jobs.captions import (
    CaptionRules,
    Cue,
    Segment,
    build_cues,
    count_lines,
    ordered,
    paragraphs,
    plain_text,
    split_words,
    to_ms,
    wrap,
)

RULES = CaptionRules(max_line_chars=42, max_lines=2, max_cue_seconds=7.0, min_cue_seconds=1.0)


def times(cues: list[Cue]) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in cues]


# --- lines ------------------------------------------------------------------------------------


def test_wrap_balances_lines_and_never_cuts_a_word() -> None:
    words = "the quick brown fox jumps over the lazy dog again".split()
    assert wrap(words, 50) == ["the quick brown fox jumps over the lazy dog again"]
    # Greedy would give "the quick brown fox jumps over the" / "lazy dog again".
    assert wrap(words, 35) == ["the quick brown fox jumps", "over the lazy dog again"]
    assert wrap(["a", "supercalifragilisticexpialidocious", "b"], 10) == [
        "a",
        "supercalifragilisticexpialidocious",
        "b",
    ]
    assert wrap([], 10) == []


def test_wrap_prefers_a_break_after_punctuation() -> None:
    # Greedy: "It was late, so we all" / "went home"; balanced: "It was late, so we" / "all
    # went home"; a little less balanced, but after the comma:
    assert wrap("It was late, so we all went home".split(), 25) == [
        "It was late,",
        "so we all went home",
    ]
    # Not at any price: "Well," alone on a line would be too unbalanced.
    assert wrap("Well, I think we should probably leave now.".split(), 40) == [
        "Well, I think we should",
        "probably leave now.",
    ]


def test_split_words_fills_cues_and_shares_the_last_two_evenly() -> None:
    words = ("one two three four five six seven eight nine ten " * 3).split()
    chunks = split_words(words, 20, 1)
    assert all(len(" ".join(words[a:b])) <= 20 for a, b in chunks)
    assert [w for a, b in chunks for w in words[a:b]] == words
    last, before = chunks[-1], chunks[-2]
    # No orphan at the end: the last two cues are about the same length.
    assert abs(len(" ".join(words[slice(*last)])) - len(" ".join(words[slice(*before)]))) <= 8


# --- cues -------------------------------------------------------------------------------------


def test_short_segments_are_cues_as_they_are() -> None:
    cues = build_cues(
        [Segment(0.0, 2.5, "Hello there."), Segment(3.0, 5.25, "How are you?")], RULES
    )
    assert cues == [Cue(0, 2500, ("Hello there.",)), Cue(3000, 5250, ("How are you?",))]


def test_a_long_segment_is_split_with_times_by_character_count() -> None:
    # 4 words of 9 characters (+1 space each): 40 characters in 4 s, one word per cue.
    rules = CaptionRules(max_line_chars=10, max_lines=1, max_cue_seconds=7, min_cue_seconds=0)
    cues = build_cues([Segment(10.0, 14.0, "aaaaaaaaa bbbbbbbbb ccccccccc ddddddddd")], rules)
    assert times(cues) == [(10000, 11000), (11000, 12000), (12000, 13000), (13000, 14000)]
    # Unequal words: the time follows the characters.
    cues = build_cues([Segment(0.0, 3.0, "aaaaaaaaa bbbb cccc")], rules)
    assert [c.lines for c in cues] == [("aaaaaaaaa",), ("bbbb cccc",)]
    assert times(cues) == [(0, 1500), (1500, 3000)]


def test_a_cue_longer_than_the_maximum_is_split() -> None:
    rules = CaptionRules(max_line_chars=42, max_lines=2, max_cue_seconds=5, min_cue_seconds=1)
    # It fits one cue, but 9 s is too long: halved (by characters, after the full stop).
    cues = build_cues([Segment(0.0, 9.0, "one two three four. five six seven eight")], rules)
    # 20 of the 41 characters (each word with its space) in the first: 9 s · 20/41.
    assert cues == [
        Cue(0, 4390, ("one two three four.",)),
        Cue(4390, 9000, ("five six seven eight",)),
    ]
    # 12 s: halved, then each half halved again.
    cues = build_cues([Segment(0.0, 12.0, "one two three four. five six seven eight")], rules)
    assert [c.lines for c in cues] == [
        ("one two",),
        ("three four.",),
        ("five six",),
        ("seven eight",),
    ]
    assert all(c.end - c.start <= 5000 for c in cues)
    # A single word cannot be split: it is shown for the maximum, then a gap.
    cues = build_cues([Segment(0.0, 20.0, "Hello.")], rules)
    assert times(cues) == [(0, 5000)]


def test_a_short_cue_is_extended_into_the_silence_never_over_the_next() -> None:
    segments = [
        Segment(0.0, 0.2, "Yes."),  # room until 3.0: extended to the minimum
        Segment(3.0, 3.3, "No."),  # the next starts at 3.5: extended to it only
        Segment(3.5, 3.6, "Maybe."),  # the last: up to the media's end (4.0)
    ]
    cues = build_cues(segments, RULES, duration=4.0)
    assert times(cues) == [(0, 1000), (3000, 3500), (3500, 4000)]
    assert times(build_cues(segments, RULES)) == [(0, 1000), (3000, 3500), (3500, 4500)]


def test_overlapping_segments_give_cues_that_do_not_overlap() -> None:
    segments = [
        Segment(0.0, 5.0, "first"),
        Segment(4.0, 6.0, "second"),
        Segment(4.0, 4.0, "third"),  # starts with the second, lasts nothing: pushed 1 ms
        Segment(1.0, 2.0, "   "),  # empty: dropped
    ]
    cues = build_cues(segments, RULES)
    assert [c.lines for c in cues] == [("first",), ("second",), ("third",)]
    # "first" ends where "second" starts; "second" ends where "third" starts (1 ms later, a
    # cue is never empty), and "third", too short, is extended to the minimum.
    assert times(cues) == [(0, 4000), (4000, 4001), (4001, 5001)]


def test_no_segment_no_cue() -> None:
    assert build_cues([], RULES) == []
    assert build_cues([Segment(0, 1, ""), Segment(1, 2, " \n ")], RULES) == []
    assert plain_text([]) == ""


def test_plain_text_starts_a_paragraph_where_speech_pauses() -> None:
    segments = [
        Segment(0.0, 2.0, "Hello  there."),
        Segment(2.5, 4.0, "How are you?"),
        Segment(6.5, 8.0, "Fine."),  # 2.5 s of silence before
        Segment(9.0, 9.5, ""),
        Segment(9.9, 10.0, "Thanks."),
    ]
    assert paragraphs(segments) == ["Hello there. How are you?", "Fine. Thanks."]
    assert plain_text(segments) == "Hello there. How are you?\n\nFine. Thanks.\n"


# --- properties -------------------------------------------------------------------------------

_word = st.one_of(
    st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzé"), min_size=1, max_size=12).flatmap(
        lambda w: st.sampled_from([w, w + ",", w + ".", w + "?", '"' + w + '."'])
    ),
    st.text(st.sampled_from("xyz"), min_size=30, max_size=70),  # longer than some lines
)
_segment = st.builds(
    lambda start, length, words, pad: Segment(
        start, start + length, pad + " ".join(words) + pad.replace("\n", "")
    ),
    st.floats(0, 600, allow_nan=False),
    st.floats(0, 40, allow_nan=False),
    st.lists(_word, min_size=0, max_size=60),
    st.sampled_from(["", " ", "\n "]),
)
_rules = st.builds(
    lambda width, lines, longest, shortest: CaptionRules(
        width, lines, longest, min(shortest, longest)
    ),
    st.integers(10, 60),
    st.integers(1, 4),
    st.floats(0.5, 10),
    st.floats(0, 3),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_segment, max_size=12), _rules, st.none() | st.floats(0, 700))
def test_cue_properties(
    segments: list[Segment], rules: CaptionRules, duration: float | None
) -> None:
    cues = build_cues(segments, rules, duration)
    # Every word exactly once, in order (segments by start, ties in their order).
    assert [w for c in cues for line in c.lines for w in line.split()] == [
        w for s in ordered(segments) for w in s.text.split()
    ]
    # In order, no overlap, never empty, never longer than the maximum.
    longest = max(1, to_ms(rules.max_cue_seconds))
    for cue in cues:
        assert 0 < cue.end - cue.start <= longest
    for before, after in itertools.pairwise(cues):
        assert before.end <= after.start
    # Line limits, except a single word longer than a line.
    for cue in cues:
        assert 1 <= len(cue.lines) <= rules.max_lines
        for line in cue.lines:
            assert len(line) <= rules.max_line_chars or " " not in line
    # Shorter than the minimum only where the next cue (or the media's end) left no room.
    shortest = to_ms(rules.min_cue_seconds)
    for index, cue in enumerate(cues):
        if cue.end - cue.start < shortest:
            if index + 1 < len(cues):
                assert cue.end == cues[index + 1].start
            else:
                assert duration is not None and cue.end >= to_ms(duration)


@settings(max_examples=200, deadline=None)
@given(st.lists(_word, max_size=40), st.integers(10, 50))
def test_wrap_properties(words: list[str], width: int) -> None:
    lines = wrap(words, width)
    assert " ".join(lines).split() == words
    assert len(lines) == count_lines(words, width)
    assert all(len(line) <= width or " " not in line for line in lines)


def test_unheard_speech_takes_its_place_among_the_segments() -> None:
    said = [Segment(0.0, 2.0, "Hello."), Segment(9.0, 10.0, "Bye.")]
    shown = captions.with_unheard(said, [(2.5, 8.0)])
    assert shown == [said[0], Segment(2.5, 8.0, captions.INAUDIBLE), said[1]]
    assert captions.with_unheard(said, []) == said


def test_a_segment_is_split_where_its_words_change_speaker() -> None:
    words = (
        captions.Word(0.0, 0.5, " Hello"),
        captions.Word(0.5, 1.0, " there."),
        captions.Word(1.2, 1.6, " Hi"),
        captions.Word(1.6, 2.0, " back."),
    )
    segment = captions.Segment(0.0, 2.0, " Hello there. Hi back.", words)
    turns = [(0.0, 1.1, 1), (1.1, 2.5, 2)]
    one, two = captions.with_speakers([segment], turns)
    assert (one.text, one.speaker, one.start, one.end) == ("Hello there.", 1, 0.0, 1.0)
    assert (two.text, two.speaker, two.start, two.end) == ("Hi back.", 2, 1.2, 2.0)
    # Without word times: the segment whole, to the turn it overlaps most; a pause between
    # turns goes to the nearest.
    plain = captions.Segment(0.9, 2.0, "Mostly the second.")
    assert [s.speaker for s in captions.with_speakers([plain], turns)] == [2]
    gap = captions.Segment(3.0, 3.2, "After.")
    assert [s.speaker for s in captions.with_speakers([gap], turns)] == [2]
    assert [s.speaker for s in captions.with_speakers([gap], [])] == [None]


def test_text_and_markdown_say_who_speaks_at_each_change() -> None:
    said = [
        captions.Segment(0.0, 1.0, "One.", speaker=1),
        captions.Segment(1.1, 2.0, "Two.", speaker=1),
        captions.Segment(2.1, 3.0, "*Three*", speaker=2),
    ]
    assert captions.plain_text(said) == "Speaker 1: One. Two.\n\nSpeaker 2: *Three*\n"
    names = {"2": "Ben"}
    assert captions.markdown("talk_1", said, names=names) == (
        "# talk\\_1\n\n**Speaker 1:** One. Two.\n\n**Ben:** \\*Three\\*\n"
    )
