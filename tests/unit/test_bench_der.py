"""The diarization error rate that bench/speech.py --speakers reports (bench/_speakers.py),
on turns made up so that the answer is known."""

from __future__ import annotations

import pytest

from bench._speakers import der

REFERENCE = [(0.0, 10.0, "a"), (10.0, 20.0, "b")]


def test_the_same_turns_under_other_names_score_nothing() -> None:
    assert der(REFERENCE, [(0.0, 10.0, "2"), (10.0, 20.0, "1")])["der"] == 0.0


def test_a_turn_heard_as_the_other_speaker_is_confusion_outside_the_collars() -> None:
    score = der(REFERENCE, [(0.0, 15.0, "1"), (15.0, 20.0, "2")])
    # Scored: 0.25-9.75 and 10.25-19.75 (19 s); 10.25-15 (4.75 s) given to the wrong voice.
    assert score["speech_s"] == pytest.approx(19.0, abs=0.02)
    assert score["confusion"] == pytest.approx(4.75 / 19.0, abs=0.002)
    assert score["missed"] == score["false_alarm"] == 0.0


def test_missed_speech_and_speech_where_there_was_none() -> None:
    score = der(REFERENCE, [(0.0, 10.0, "1"), (21.0, 25.0, "2")])
    assert score["missed"] == pytest.approx(9.5 / 19.0, abs=0.002)
    # 21-25 is outside every collar: 4 s of false alarm, scored against the 19 s of speech.
    assert score["false_alarm"] == pytest.approx(4.0 / 19.0, abs=0.002)
    assert score["der"] == pytest.approx(13.5 / 19.0, abs=0.003)


def test_one_voice_for_two_speaking_at_once_misses_one_of_them() -> None:
    score = der([(0.0, 10.0, "a"), (0.0, 10.0, "b")], [(0.0, 10.0, "1")])
    assert score["missed"] == pytest.approx(0.5, abs=0.002)
    assert score["confusion"] == 0.0
