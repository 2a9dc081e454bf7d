"""Test speech: English sentences spoken by eSpeak NG, made once per session.

Synthetic speech is what a test can rely on: the same words every time, no recording to
license, and Whisper's tiny.en understands most of it (it mishears a few words: assert a
majority of a keyword list, not every word).
"""

from __future__ import annotations

import shutil
import subprocess
import wave
from collections.abc import Sequence
from pathlib import Path

import pytest

ESPEAK = shutil.which("espeak-ng")
#: eSpeak NG writes 16-bit mono WAV at this rate (the job resamples to 16 kHz itself).
RATE = 22050

#: Distinct sentences (no four words repeat across them, so a duplicate in a merged transcript
#: shows), about four seconds each.
SENTENCES = (
    "The quick brown fox jumps over the lazy dog.",
    "Speech recognition turns spoken words into written text.",
    "A small library keeps every recording safe on the disk.",
    "Yesterday the orchestra played music in the old theatre.",
    "Mountains covered with snow rise above the quiet valley.",
    "Please remember to water the garden before the weekend.",
    "The train to Paris leaves from platform number nine.",
    "Fresh bread and warm coffee make a pleasant breakfast.",
    "Scientists measured the temperature of the distant ocean.",
    "Children were laughing while they played football outside.",
    "The museum opens its doors at ten in the morning.",
    "A gentle wind moved the leaves of the tall trees.",
    "Engineers tested the new bridge with heavy trucks.",
    "Thank you for listening to this short recording.",
)


#: Two voices a listener tells apart: a low American man's and a high British woman's.
VOICES = (("-v", "en-us", "-p", "35"), ("-v", "en-gb+f3", "-p", "70"))


def _say(
    text: str, out: Path, words_per_minute: int, voice: Sequence[str] = ("-v", "en-us")
) -> bytes:
    assert ESPEAK is not None
    subprocess.run(
        [ESPEAK, *voice, "-s", str(words_per_minute), "-w", str(out), text],
        check=True,
        capture_output=True,
        timeout=60,
    )
    with wave.open(str(out), "rb") as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, RATE)
        return w.readframes(w.getnframes())


def _silence(seconds: float) -> bytes:
    return b"\0\0" * round(seconds * RATE)


class SpeechCache:
    """WAV files of spoken sentences (and of silence), made on first use and kept for the
    session. Tests must not modify them."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._made: dict[tuple[object, ...], Path] = {}
        self._turns: dict[tuple[object, ...], list[tuple[float, float, int]]] = {}

    def speech(
        self,
        sentences: Sequence[str],
        *,
        gap: float = 0.7,
        lead: float = 0.5,
        tail: float = 0.5,
        words_per_minute: int = 150,
    ) -> Path:
        """The sentences spoken one after the other, ``gap`` seconds of silence between them,
        ``lead`` before and ``tail`` after."""
        key = ("speech", tuple(sentences), gap, lead, tail, words_per_minute)
        if key not in self._made:
            if ESPEAK is None:
                pytest.skip("espeak-ng is not installed (apt install espeak-ng)")
            path = self.directory / f"speech-{len(self._made)}.wav"
            parts = [_silence(lead)]
            for i, sentence in enumerate(sentences):
                if i:
                    parts.append(_silence(gap))
                parts.append(_say(sentence, self.directory / "say.wav", words_per_minute))
            parts.append(_silence(tail))
            self._write(path, b"".join(parts))
            self._made[key] = path
        return self._made[key]

    def dialogue(
        self, turns: int = 8, gaps: Sequence[float] = (0.4, 0.7, 0.5, 0.8)
    ) -> tuple[Path, list[tuple[float, float, int]]]:
        """Two voices taking turns (the first speaks first), a sentence each, ``gaps`` of
        silence between them in turn: the WAV, and each turn's ``(start, end, speaker)``
        with speakers 1 and 2 — where eSpeak NG's speech starts and ends, its own silence at
        either end of a sentence cut off."""
        key = ("dialogue", turns, tuple(gaps))
        if key in self._made:
            return self._made[key], self._turns[key]
        if ESPEAK is None:
            pytest.skip("espeak-ng is not installed (apt install espeak-ng)")
        path = self.directory / f"dialogue-{len(self._made)}.wav"
        parts, known, at = [_silence(0.5)], [], 0.5
        for n in range(turns):
            said = _trim(_say(SENTENCES[n % len(SENTENCES)], self.directory / "say.wav", 160,
                              VOICES[n % 2]))  # fmt: skip
            known.append((round(at, 3), round(at + len(said) / 2 / RATE, 3), n % 2 + 1))
            gap = gaps[n % len(gaps)]
            parts += [said, _silence(gap)]
            at += len(said) / 2 / RATE + len(_silence(gap)) / 2 / RATE
        self._write(path, b"".join(parts))
        self._made[key], self._turns[key] = path, known
        return path, known

    def silence(self, seconds: float) -> Path:
        key = ("silence", seconds)
        if key not in self._made:
            path = self.directory / f"silence-{seconds:g}s.wav"
            self._write(path, _silence(seconds))
            self._made[key] = path
        return self._made[key]

    @staticmethod
    def _write(path: Path, frames: bytes) -> None:
        with wave.open(str(path), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(frames)


def _trim(frames: bytes, threshold: int = 600) -> bytes:
    """``frames`` (16-bit mono) without the quiet eSpeak NG leaves before and after speech."""
    import array

    samples = array.array("h", frames)
    loud = [i for i, v in enumerate(samples) if abs(v) > threshold]
    if not loud:
        return frames
    return samples[loud[0] : loud[-1] + 1].tobytes()


def duration(path: Path) -> float:
    with wave.open(str(path), "rb") as w:
        return w.getnframes() / w.getframerate()
