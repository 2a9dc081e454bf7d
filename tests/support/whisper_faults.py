"""TRANSCRIBE with the decoder's faults on cue: what Whisper does now and then (skip a stretch
of speech) or on a GPU (run out of memory), neither of which happens when a test wants it.

Test code only. A test server offers the job as ``/tasks/transcribe_faulty`` (see
``test_transcribe.py``): its params are TRANSCRIBE's plus the faults, and the job's child
imports this module (the standard library and the real job, nothing else), which wraps the
real job's decoder (:meth:`~python_endpoints.jobs.transcribe.Transcription.decoded`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from python_endpoints.jobs import speech
from python_endpoints.jobs.transcribe import Transcription
from python_endpoints.serving.child import ChildContext

#: The params that name the faults (taken out before the real job sees its params).
FAULTS = ("skip", "out_of_memory_in")


class FaultyTranscription(Transcription):
    def __init__(
        self,
        params: dict[str, Any],
        ctx: ChildContext,
        skip: tuple[float, float, int] | None = None,
        out_of_memory_in: int | None = None,
    ) -> None:
        super().__init__(params, ctx)
        #: ``(start, end, times)``: the first ``times`` decodings that reach the stretch from
        #: ``start`` to ``end`` seconds of the media drop the segments whose middle lies in it.
        self.stretch = (skip[0], skip[1]) if skip else None
        self.skips_left = skip[2] if skip else 0
        #: The n-th window decoded (every attempt of this run counted) fails after its first
        #: segment with CTranslate2's CUDA out-of-memory error.
        self.out_of_memory_in = out_of_memory_in

    def decoded(self, segments: Iterable[Any], window: speech.Window) -> Iterable[Any]:
        return self._out_of_memory_once(self._skipping(segments, window))

    def _skipping(self, segments: Iterable[Any], window: speech.Window) -> Iterator[Any]:
        counted = False
        for raw in segments:
            middle = window.start + (raw.start + raw.end) / 2
            within = self.stretch and self.stretch[0] <= middle < self.stretch[1]
            if within and (counted or self.skips_left):
                if not counted:
                    self.skips_left, counted = self.skips_left - 1, True
                continue
            yield raw

    def _out_of_memory_once(self, segments: Iterable[Any]) -> Iterator[Any]:
        if self.attempts != self.out_of_memory_in:
            yield from segments
            return
        for raw in segments:
            yield raw
            break
        raise RuntimeError(speech.CUDA_OOM_MESSAGE)


def faulty_transcribe_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """TRANSCRIBE, with the faults its params name."""
    faults = {key: params.pop(key) for key in FAULTS if key in params}
    return FaultyTranscription(params, ctx, **faults).run()
