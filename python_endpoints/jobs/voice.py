"""The voice encoder of DIARIZE: a unit vector of 256 values per window of mel frames.

``assets/voice_encoder.onnx`` — Resemblyzer's Apache-2.0 weights, converted by
``packaging/voice_encoder.py`` — run by ONNX Runtime on the CPU. Imported only by the job that
uses it (NumPy and ONNX Runtime take a while to import).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from python_endpoints.serving.child import ChildContext
from python_endpoints.status import said

MODEL = Path(__file__).parent / "assets" / "voice_encoder.onnx"
#: Windows embedded at once (a cancel is seen between batches).
BATCH = 64


class Encoder:
    """The voice encoder: a unit vector of 256 values per window of mel frames."""

    def __init__(self, ctx: ChildContext, threads: int = 2) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            str(MODEL), options, providers=["CPUExecutionProvider"]
        )
        self.ctx = ctx

    def __call__(
        self,
        mel: np.ndarray,
        windows: Sequence[tuple[int, int]],
        *,
        before: int = 0,
        total: int = 0,
    ) -> np.ndarray:
        """Each window's vector; progress said as ``before`` windows of ``total`` were done
        before these (from 10 % to 90 %)."""
        total = total or len(windows)
        out = np.zeros((len(windows), 256), np.float32)
        by_length: dict[int, list[int]] = {}
        for i, (a, b) in enumerate(windows):
            by_length.setdefault(b - a, []).append(i)
        done = before
        for indices in by_length.values():
            for start in range(0, len(indices), BATCH):
                if self.ctx.cancelled:
                    raise Cancelled
                batch = indices[start : start + BATCH]
                mels = np.stack([mel[windows[i][0] : windows[i][1]] for i in batch])
                out[batch] = self.session.run(None, {"mels": mels})[0]
                done += len(batch)
                self.ctx.progress(10.0 + 80.0 * done / total, said("step.finding_speakers"))
        return out


class Cancelled(Exception):
    """The job was cancelled while windows were embedded."""
