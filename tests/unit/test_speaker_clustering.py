"""The pure part of DIARIZE (python_endpoints/jobs/speakers.py) on made-up voices: clusters
of unit vectors around a few centres, many more than are clustered at once too."""

from __future__ import annotations

import numpy as np
import pytest

from python_endpoints.jobs import speakers


def voices(count: int, n: int, seed: int = 0, spread: float = 1.6) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors of 256 values around ``count`` centres, in runs of a few windows
    each (as turns are): the vectors and whose each is."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(count, 256))
    who = np.repeat(rng.integers(0, count, n // 8 + 1), 8)[:n]
    vectors = centres[who] + rng.normal(scale=spread, size=(n, 256))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32), who


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    pairs = {(int(x), int(y)) for x, y in zip(a, b, strict=True)}
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("count", [2, 3, 4])
def test_the_number_of_voices_is_estimated_and_each_window_goes_to_its_own(count: int) -> None:
    vectors, who = voices(count, 400, seed=count)
    labels = speakers.cluster(vectors)
    assert same_partition(labels, who)


def test_more_windows_than_are_clustered_at_once_still_each_go_to_their_voice() -> None:
    vectors, who = voices(3, 3 * speakers.MAX_CLUSTERED + 17, seed=7)
    labels = speakers.cluster(vectors)
    assert same_partition(labels, who)
    given = speakers.cluster(vectors, 2)  # two asked for: two given, numbered from 0
    assert sorted(set(given.tolist())) == [0, 1]


def test_one_window_or_one_speaker_is_one_label() -> None:
    vectors, _ = voices(3, 50)
    assert speakers.cluster(vectors[:1]).tolist() == [0]
    assert set(speakers.cluster(vectors, 1).tolist()) == {0}


def test_the_plan_digest_is_the_audio_s() -> None:
    rng = np.random.default_rng(3)
    audio = (rng.normal(scale=0.1, size=16000 * 4) * np.repeat([1, 0, 1, 0], 16000)).astype(
        np.float32
    )
    planned = speakers.plan(audio)
    assert planned.windows  # two stretches of noise loud enough to be "speech"
    assert speakers.plan_digest(speakers.plan(audio.copy())) == speakers.plan_digest(planned)
    louder = audio.copy()
    louder[16000:17000] += 0.5  # speech where there was none: other windows
    assert speakers.plan_digest(speakers.plan(louder)) != speakers.plan_digest(planned)
