"""DIARIZE: who speaks when (:mod:`python_endpoints.jobs.speakers`; docs/diarization.md).

The voice encoder (:mod:`python_endpoints.jobs.voice`) runs on the CPU — a tenth of the time of
the smallest transcription —, its windows embedded in batches, the job cancellable between
them.
The turns are written as JSON: ``{"version": 1, "speakers": N, "duration": s, "turns":
[{"start", "end", "speaker"}]}``, speakers numbered from 1 in the order they first speak.

It resumes: the windows are embedded ``checkpoint_windows`` at a time, each lot saved as a
piece next to the output (``.<name>.emb00003.<part>.fredica-part.npy``, float32, fsync'd) and
listed in the checkpoint (``{"version", "key", "segments": [{"index", "file", "bytes"}]}``,
the shape the sweep of :mod:`python_endpoints.jobs.outputs` knows). A next attempt reuses the
pieces whose key — the plan's digest, the model, the lot size — is its own, and embeds the rest;
the vectors are the same as in one pass, so are the turns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from python_endpoints.jobs import outputs
from python_endpoints.serving.child import ChildContext
from python_endpoints.status import said

if TYPE_CHECKING:
    import numpy as np

    from python_endpoints.jobs.speakers import Plan
    from python_endpoints.jobs.voice import Encoder

CHECKPOINT_VERSION = 1


def diarize_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    # NumPy, ONNX Runtime and the decoder when the job runs, not when the catalogue is read.
    from python_endpoints.jobs import speakers
    from python_endpoints.jobs.transcribe import load_audio
    from python_endpoints.jobs.voice import Cancelled, Encoder

    input, output = Path(params["input"]), Path(params["output"])
    ctx.progress(0.0, said("reading_audio"))
    audio = load_audio(input)
    duration = round(len(audio) / speakers.SAMPLE_RATE, 3)
    planned = speakers.plan(audio)
    output.parent.mkdir(parents=True, exist_ok=True)
    lots = _Lots(output, params, planned, ctx)
    try:
        embeddings = lots.embed(Encoder(ctx))
    except Cancelled:
        return None
    found = speakers.finish(planned, embeddings, params["speakers"] or None)
    document = {
        "version": 1,
        "speakers": len({t.speaker for t in found}),
        "duration": duration,
        "turns": [
            {"start": round(t.start, 2), "end": round(t.end, 2), "speaker": t.speaker}
            for t in found
        ],
    }
    temp = outputs.temp_path(output, lots.part)
    try:
        with outputs.writing(output):
            temp.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)
    lots.remove()
    ctx.progress(100.0, said("done"))
    return {
        "outputs": [str(output)],
        "speakers": document["speakers"],
        "turns": len(found),
        "duration": duration,
        "windows": len(planned.windows),
        "windows_reused": lots.reused,
    }


class _Lots:
    """The windows embedded a lot at a time, each lot a piece on disk listed in the
    checkpoint; the lots of the checkpoint handed back (``params["resume"]``) reused."""

    def __init__(
        self, output: Path, params: dict[str, Any], planned: Plan, ctx: ChildContext
    ) -> None:
        from python_endpoints.jobs import speakers, voice

        self.output, self.planned, self.ctx = output, planned, ctx
        self.part = outputs.part_id(params)
        self.resume: object = params.get("resume")
        self.size = int(params["checkpoint_windows"])
        self.key = {
            "plan": speakers.plan_digest(planned),
            "windows": len(planned.windows),
            "model": voice.MODEL.stat().st_size,
            "lot": self.size,
        }
        self.checkpoint: dict[str, Any] = {
            "version": CHECKPOINT_VERSION,
            "key": self.key,
            "segments": [],
        }
        self.reused = 0

    def embed(self, encoder: Encoder) -> np.ndarray:
        """Every window's vector: the lots kept, the others embedded and saved."""
        import numpy as np

        windows = self.planned.windows
        kept = self._kept()
        out = np.zeros((len(windows), 256), np.float32)
        for index, start in enumerate(range(0, len(windows), self.size)):
            lot = windows[start : start + self.size]
            if index in kept:
                out[start : start + len(lot)] = kept[index]
                self.reused += len(lot)
                continue
            vectors = encoder(self.planned.mel, lot, before=start, total=len(windows))
            out[start : start + len(lot)] = vectors
            self._save(index, vectors)
        return out

    def _kept(self) -> dict[int, np.ndarray]:
        """The lots of the checkpoint handed back that are of this plan and intact; the
        pieces of one that is not are removed."""

        resume = self.resume
        if not isinstance(resume, dict):
            return {}
        if resume.get("version") != CHECKPOINT_VERSION or resume.get("key") != self.key:
            self._discard(resume)
            return {}
        kept: dict[int, np.ndarray] = {}
        entries = resume.get("segments")
        for entry in entries if isinstance(entries, list) else []:
            vectors = self._load(entry)
            if vectors is None:
                continue
            kept[entry["index"]] = vectors
            self.checkpoint["segments"].append(entry)
        self._discard(resume, keep=self.checkpoint)
        return kept

    def _load(self, entry: object) -> np.ndarray | None:
        """A checkpoint entry's vectors: the piece is this output's, of the size recorded, and
        holds the lot's count of vectors."""
        import numpy as np

        if not isinstance(entry, dict):
            return None
        index, file, size = entry.get("index"), entry.get("file"), entry.get("bytes")
        if not isinstance(index, int) or not isinstance(file, str):
            return None
        if not outputs.is_piece_of(self.output, file):
            return None
        expected = len(self.planned.windows[index * self.size : (index + 1) * self.size])
        path = self.output.parent / file
        try:
            if path.stat().st_size != size:
                return None
            vectors = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None
        ok = vectors.shape == (expected, 256) and vectors.dtype == np.float32 and expected
        return vectors if ok else None

    def _save(self, index: int, vectors: np.ndarray) -> None:
        """Save a lot as a piece, synced, then send the checkpoint that lists it."""
        import numpy as np

        path = outputs.piece_path(self.output, self.part, f"emb{index:05d}.npy")
        with outputs.writing(path):
            with path.open("wb") as file:
                np.save(file, vectors, allow_pickle=False)
            outputs.fsync_file(path)
            outputs.fsync_dir(path.parent)
            size = path.stat().st_size
        entries = [e for e in self.checkpoint["segments"] if e["index"] != index]
        entries.append({"index": index, "file": path.name, "bytes": size})
        self.checkpoint = {**self.checkpoint, "segments": sorted(entries, key=lambda e: e["index"])}
        done = min(len(self.planned.windows), (index + 1) * self.size)
        self.ctx.progress(
            10.0 + 80.0 * done / len(self.planned.windows),
            said("step.finding_speakers"),
            extras={"checkpoint": self.checkpoint},
        )

    def _discard(self, checkpoint: object, keep: object = None) -> None:
        for name in outputs.resumed_pieces(checkpoint) - outputs.resumed_pieces(keep):
            if outputs.is_piece_of(self.output, name):
                outputs.remove_quietly(self.output.parent / name)

    def remove(self) -> None:
        """Once the turns are in place: the pieces are of no more use."""
        self._discard(self.checkpoint)
