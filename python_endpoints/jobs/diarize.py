"""DIARIZE: who speaks when (:mod:`python_endpoints.jobs.speakers`; docs/diarization.md).

The voice encoder (:mod:`python_endpoints.jobs.voice`) runs on the CPU — a tenth of the time of
the smallest transcription —, its windows embedded in batches, the job cancellable between
them.
The turns are written as JSON: ``{"version": 1, "speakers": N, "duration": s, "turns":
[{"start", "end", "speaker"}]}``, speakers numbered from 1 in the order they first speak.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from python_endpoints.jobs import outputs
from python_endpoints.serving.child import ChildContext
from python_endpoints.status import said


def diarize_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    # NumPy, ONNX Runtime and the decoder when the job runs, not when the catalogue is read.
    from python_endpoints.jobs import speakers
    from python_endpoints.jobs.transcribe import load_audio
    from python_endpoints.jobs.voice import Cancelled, Encoder

    input, output = Path(params["input"]), Path(params["output"])
    ctx.progress(0.0, said("reading_audio"))
    audio = load_audio(input)
    duration = round(len(audio) / speakers.SAMPLE_RATE, 3)
    try:
        found = speakers.diarize(audio, Encoder(ctx), params["speakers"] or None)
    except Cancelled:
        return None
    document = {
        "version": 1,
        "speakers": len({t.speaker for t in found}),
        "duration": duration,
        "turns": [
            {"start": round(t.start, 2), "end": round(t.end, 2), "speaker": t.speaker}
            for t in found
        ],
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    temp = outputs.temp_path(output, outputs.part_id(params))
    try:
        temp.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        with outputs.writing(output):
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)
    ctx.progress(100.0, said("done"))
    return {
        "outputs": [str(output)],
        "speakers": document["speakers"],
        "turns": len(found),
        "duration": duration,
    }
