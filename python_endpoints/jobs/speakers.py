"""Who speaks when: the pure part of DIARIZE (docs/diarization.md).

Audio (16 kHz mono floats) becomes a 40-band mel power spectrogram of 25 ms frames every
10 ms; frames loud enough are speech; speech is cut into windows of 1.5 s every 0.75 s, each
of which the voice encoder (an ONNX model, run by the job) makes a unit vector of 256 values;
the windows are clustered by voice (spectral clustering of their cosine affinities, the number
of speakers given or read from the eigenvalues); then every frame of speech gets the speaker
whose windows it is most like, and turns shorter than :data:`MIN_TURN` join a neighbour.

NumPy only, no I/O: the job reads the audio and runs the encoder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SAMPLE_RATE = 16000
#: A frame every 10 ms, 25 ms long; 40 mel bands (the voice encoder's input).
HOP = 160
N_FFT = 400
MELS = 40
FRAMES_PER_SECOND = SAMPLE_RATE // HOP
#: Each embedding's window, and the step between two.
WINDOW = 1.5
STEP = 0.75
#: A turn shorter than this joins the turn beside it (a cough, a word heard as another voice).
MIN_TURN = 0.4
#: Speech: silences shorter than this inside it are kept; speech shorter than this is dropped.
MIN_SILENCE = 0.25
MIN_SPEECH = 0.1
#: At most this many speakers when their number is estimated.
MAX_SPEAKERS = 8
#: At most this many windows (12 minutes of speech) are clustered: the eigenvectors cost the
#: cube of their number (1,000: about a second; 2,000: seven), their affinities its square.
MAX_CLUSTERED = 1000
#: The voice encoder's level: audio quieter than this (dBFS) is raised to it.
LEVEL_DBFS = -30.0


@dataclass(frozen=True, slots=True)
class Turn:
    """``speaker`` (from 1, in the order they first speak) from ``start`` to ``end`` s."""

    start: float
    end: float
    speaker: int


# --- features --------------------------------------------------------------------------------


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    linear = hz / (200.0 / 3)
    log = 15.0 + np.log(np.maximum(hz, 1e-9) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(hz >= 1000.0, log, linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    linear = mel * (200.0 / 3)
    log = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0))
    return np.where(mel >= 15.0, log, linear)


def mel_filters() -> np.ndarray:
    """``[MELS, N_FFT // 2 + 1]`` triangular filters on Slaney's scale, each of unit area
    (the voice encoder was trained on these)."""
    bins = np.linspace(0, SAMPLE_RATE / 2, N_FFT // 2 + 1)
    edges = _mel_to_hz(
        np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(SAMPLE_RATE / 2)), MELS + 2)
    )
    widths = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    rising = -ramps[:-2] / widths[:-1, None]
    falling = ramps[2:] / widths[1:, None]
    filters = np.maximum(0.0, np.minimum(rising, falling))
    area: np.ndarray = (filters * (2.0 / (edges[2:] - edges[:-2]))[:, None]).astype(np.float32)
    return area


_FILTERS = mel_filters()
_HANN = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)


def mel_power(audio: np.ndarray) -> np.ndarray:
    """``[frames, MELS]``: the power in each band of each 10 ms frame (frames centred on their
    times: the audio is padded by half a frame at each end)."""
    padded = np.pad(audio.astype(np.float32), N_FFT // 2)
    count = 1 + (len(padded) - N_FFT) // HOP
    if count <= 0:
        return np.zeros((0, MELS), np.float32)
    frames = np.lib.stride_tricks.as_strided(
        padded, (count, N_FFT), (padded.strides[0] * HOP, padded.strides[0])
    )
    spectrum = np.abs(np.fft.rfft(frames * _HANN, axis=1)) ** 2
    power: np.ndarray = (spectrum @ _FILTERS.T).astype(np.float32)
    return power


def levelled(audio: np.ndarray) -> np.ndarray:
    """``audio`` raised to :data:`LEVEL_DBFS` when quieter (never lowered)."""
    rms = float(np.sqrt(np.mean(np.square(audio, dtype=np.float64)))) if len(audio) else 0.0
    if rms <= 0.0:
        return audio
    gain = 10 ** ((LEVEL_DBFS - 20 * np.log10(rms)) / 20)
    return audio * np.float32(gain) if gain > 1 else audio


# --- speech, windows -------------------------------------------------------------------------


def speech_spans(mel: np.ndarray) -> list[tuple[int, int]]:
    """The frame spans ``[start, end)`` of speech: frames whose energy stands well above the
    recording's floor, short silences inside speech kept, short bursts dropped."""
    if not len(mel):
        return []
    energy = 10 * np.log10(mel.sum(axis=1) + 1e-10)
    floor, peak = np.percentile(energy, 10), np.percentile(energy, 99)
    loud = energy > max(floor + 0.25 * (peak - floor), peak - 45.0)
    spans: list[list[int]] = []
    start = None
    for i, on in enumerate([*loud.tolist(), False]):
        if on and start is None:
            start = i
        elif not on and start is not None:
            if spans and (start - spans[-1][1]) < MIN_SILENCE * FRAMES_PER_SECOND:
                spans[-1][1] = i
            else:
                spans.append([start, i])
            start = None
    return [(a, b) for a, b in spans if b - a >= MIN_SPEECH * FRAMES_PER_SECOND]


def windows(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The frame spans embedded: each stretch of speech cut into :data:`WINDOW`-long windows
    every :data:`STEP` (the last one ending with the stretch); a shorter stretch whole."""
    size, step = round(WINDOW * FRAMES_PER_SECOND), round(STEP * FRAMES_PER_SECOND)
    out = []
    for a, b in spans:
        if b - a <= size:
            out.append((a, b))
            continue
        start = a
        while start + size < b:
            out.append((start, start + size))
            start += step
        out.append((b - size, b))
    return out


# --- clustering ------------------------------------------------------------------------------


def _kmeans(points: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, float]:
    """k-means from a k-means++ start: the labels and the sum of squared distances."""
    rng = np.random.default_rng(seed)
    centres = [points[rng.integers(len(points))]]
    for _ in range(1, k):
        d = np.min([np.sum((points - c) ** 2, axis=1) for c in centres], axis=0)
        total = d.sum()
        pick = rng.choice(len(points), p=d / total) if total > 0 else rng.integers(len(points))
        centres.append(points[pick])
    c = np.array(centres)
    labels = np.zeros(len(points), int)
    for _ in range(100):
        distances = ((points[:, None, :] - c[None, :, :]) ** 2).sum(axis=2)
        new = distances.argmin(axis=1)
        if _ and np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            if np.any(labels == j):
                c[j] = points[labels == j].mean(axis=0)
    sse = float(((points - c[labels]) ** 2).sum())
    return labels, sse


def cluster(embeddings: np.ndarray, speakers: int | None = None) -> np.ndarray:
    """A speaker label (from 0) per embedding: spectral clustering of the cosine affinities,
    each row's nearest 30 % kept; ``speakers`` of them, or as many as the largest gap of the
    eigenvalues says (at most :data:`MAX_SPEAKERS`). Of more than :data:`MAX_CLUSTERED`
    embeddings, that many spread evenly over the recording are clustered, and every one
    takes the label of the mean voice it is most like."""
    n = len(embeddings)
    if n > MAX_CLUSTERED:
        picked = np.unique(np.linspace(0, n - 1, MAX_CLUSTERED).round().astype(int))
        some = embeddings[picked]
        labels = cluster(some, speakers)
        centres = np.stack([some[labels == c].mean(axis=0) for c in range(labels.max() + 1)])
        nearest = np.argmax(embeddings @ centres.T, axis=1)
        compact: np.ndarray = np.unique(nearest, return_inverse=True)[1]
        return compact
    if n < 2 or speakers == 1:
        return np.zeros(n, int)
    affinity = np.clip(embeddings @ embeddings.T, 0.0, None)
    keep = max(2, int(np.ceil(0.3 * n)))
    nearest = np.argsort(-affinity, axis=1)[:, :keep]
    pruned = np.zeros_like(affinity)
    rows = np.arange(n)[:, None]
    pruned[rows, nearest] = affinity[rows, nearest]
    symmetric = (pruned + pruned.T) / 2
    degree = symmetric.sum(axis=1)
    scale = 1.0 / np.sqrt(degree + 1e-9)
    laplacian = np.eye(n) - scale[:, None] * symmetric * scale[None, :]
    values, vectors = np.linalg.eigh(laplacian)
    k = speakers or int(np.argmax(np.diff(values[: min(MAX_SPEAKERS, n - 1) + 1]))) + 1
    k = max(1, min(k, n))
    if k == 1:
        return np.zeros(n, int)
    points = vectors[:, :k]
    points = points / (np.linalg.norm(points, axis=1, keepdims=True) + 1e-9)
    best = min((_kmeans(points, k, seed) for seed in range(10)), key=lambda r: r[1])
    return best[0]


# --- turns -----------------------------------------------------------------------------------


def turns(
    spans: Sequence[tuple[int, int]],
    spans_embedded: Sequence[tuple[int, int]],
    embeddings: np.ndarray,
    labels: np.ndarray,
) -> list[Turn]:
    """The turns: each frame of speech given the speaker whose windows (their mean voice) the
    windows over it are most like; turns shorter than :data:`MIN_TURN` joined to a neighbour;
    speakers numbered from 1 in the order they first speak."""
    if not len(labels):
        return []
    count = int(labels.max()) + 1
    centres = np.stack([embeddings[labels == c].mean(axis=0) for c in range(count)])
    centres /= np.linalg.norm(centres, axis=1, keepdims=True) + 1e-9
    likeness = embeddings @ centres.T
    end = max(b for _, b in spans)
    score = np.zeros((end, count))
    covered = np.zeros(end)
    for (a, b), row in zip(spans_embedded, likeness, strict=True):
        score[a:b] += row
        covered[a:b] += 1
    runs: list[list[int]] = []  # [start frame, end frame, label]
    for a, b in spans:
        best = np.argmax(score[a:b] / np.maximum(covered[a:b, None], 1), axis=1)
        start = a
        for i in range(1, len(best) + 1):
            if i == len(best) or best[i] != best[start - a]:
                runs.append([start, a + i, int(best[start - a])])
                start = a + i
    runs = _absorb_short(runs)
    order: dict[int, int] = {}
    for _, _, label in runs:
        order.setdefault(label, len(order) + 1)
    return [Turn(a / FRAMES_PER_SECOND, b / FRAMES_PER_SECOND, order[s]) for a, b, s in runs]


def _absorb_short(runs: list[list[int]]) -> list[list[int]]:
    """Runs shorter than :data:`MIN_TURN` take the label of the run they touch (the one before
    first); touching runs of one label become one."""
    shortest = MIN_TURN * FRAMES_PER_SECOND
    changed = True
    while changed:
        changed = False
        for i, (a, b, label) in enumerate(runs):
            if b - a >= shortest:
                continue
            before = i > 0 and runs[i - 1][1] == a and runs[i - 1][2] != label
            after = i + 1 < len(runs) and runs[i + 1][0] == b and runs[i + 1][2] != label
            if before or after:
                runs[i][2] = runs[i - 1][2] if before else runs[i + 1][2]
                changed = True
        merged: list[list[int]] = []
        for run in runs:
            if merged and merged[-1][2] == run[2] and merged[-1][1] == run[0]:
                merged[-1][1] = run[1]
            else:
                merged.append(list(run))
        runs = merged
    return runs


@dataclass(frozen=True, slots=True)
class Plan:
    """What the voice encoder is run on: the mel frames, the spans of speech, the windows
    (frame spans) embedded. The same audio always gives the same plan, so a resumed run can
    tell whether the embeddings it kept are of it (:func:`plan_digest`)."""

    mel: np.ndarray
    spans: list[tuple[int, int]]
    windows: list[tuple[int, int]]


def plan(audio: np.ndarray) -> Plan:
    """The plan of ``audio`` (16 kHz mono)."""
    mel = mel_power(levelled(audio))
    spans = speech_spans(mel)
    return Plan(mel, spans, windows(spans))


def plan_digest(planned: Plan) -> str:
    """A digest of the windows and of the mel frames under them: two plans with one digest
    embed to the same vectors."""
    digest = hashlib.sha256(np.asarray(planned.windows, np.int64).tobytes())
    digest.update(np.ascontiguousarray(planned.mel[::FRAMES_PER_SECOND]).tobytes())
    return digest.hexdigest()[:32]


def finish(planned: Plan, embeddings: np.ndarray, speakers: int | None = None) -> list[Turn]:
    """The turns, from the plan and each window's unit vector."""
    if not planned.windows:
        return []
    labels = cluster(embeddings, speakers)
    return turns(planned.spans, planned.windows, embeddings, labels)
