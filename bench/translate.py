"""Translation benchmark: the requests and tokens TRANSLATE_SUBTITLES spends on an hour of
subtitles, against translating cue by cue.

The subtitles: one hour of cues, a sentence each (English sentences of the speech bench, in
turn), one every 3.5 s with 0.5 s between — about 1,030 cues, the density of a talky film.
The model: the project's fake chat server (tests/support/llmserver.py), answering every
request correctly and at once — what is measured is what is sent and answered, not a model's
speed. Tokens are estimated as characters / 4 (the usual rule of thumb for English with GPT
tokenizers), over every message sent and every answer; the requests' JSON framing counted.

Lanes, on the same file:

- **Fredica**: the job's defaults — chunks of 40 cues, 5 cues of context on each side, a
  glossary built from the whole file first.
- **cue by cue**: the same job with chunks of one cue, no context and no glossary: one
  request per cue, as a naive translator does.

    .venv/bin/python bench/translate.py [--minutes 60] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:  # the repository's root is on sys.path when imported as bench.<name>, not as a script
    import bench  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._chain import table
from bench.speech import MORE_SENTENCES
from python_endpoints.jobs import translate
from tests.endpoints.test_translate import write_srt
from tests.support.clips import run_job
from tests.support.llmserver import FakeChatServer, translator
from tests.support.voices import SENTENCES

CUE_EVERY_MS = 3_500
GAP_MS = 500


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def subtitles(path: Path, minutes: float) -> int:
    sentences = [*SENTENCES, *MORE_SENTENCES]
    count = int(minutes * 60_000 // CUE_EVERY_MS)
    cues = [
        (i * CUE_EVERY_MS, (i + 1) * CUE_EVERY_MS - GAP_MS, sentences[i % len(sentences)])
        for i in range(count)
    ]
    write_srt(path, cues)
    return count


def lane(srt: Path, out: Path, **params: Any) -> dict[str, Any]:
    answer = translator()
    assert answer.reply is not None
    with FakeChatServer([answer]) as llm:
        started = time.perf_counter()
        result = run_job(
            translate.translate_subtitles_job,
            {
                "input": str(srt),
                "output_dir": str(out),
                "stem": "film",
                "lang": "fr",
                "llm": {"base_url": llm.url, "model": "fake-model"},
                **params,
            },
        )
        elapsed = time.perf_counter() - started
        requests = llm.requests
    assert result is not None
    sent = sum(tokens(m["content"]) for r in requests for m in r.body["messages"])
    answered = sum(tokens(answer.reply(r.body)) for r in requests)
    return {
        "requests": len(requests),
        "prompt_tokens": sent,
        "completion_tokens": answered,
        "tokens": sent + answered,
        "cues": result["cues"],
        "seconds": elapsed,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--minutes", type=float, default=60.0, help="length of the subtitles")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="fredica-translate-bench-"))
    try:
        srt = work / "film.srt"
        count = subtitles(srt, args.minutes)
        ours = lane(srt, work / "ours")
        naive = lane(srt, work / "naive", chunk_cues=1, context_cues=0, glossary=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_hour = 60.0 / args.minutes
    rows = []
    for name, found in (("Fredica (40-cue chunks, context, glossary)", ours),
                        ("cue by cue", naive)):  # fmt: skip
        rows.append(
            (
                name,
                f"{found['requests'] * per_hour:,.0f} requests/h",
                f"{found['tokens'] * per_hour:,.0f} tokens/h (prompt "
                f"{found['prompt_tokens'] * per_hour:,.0f}, answers "
                f"{found['completion_tokens'] * per_hour:,.0f})",
                "",
            )
        )
    ratio_requests = ours["requests"] / naive["requests"]
    ratio_tokens = ours["tokens"] / naive["tokens"]
    rows.append(
        ("Fredica / cue by cue", f"{ratio_requests:.3f} requests", f"{ratio_tokens:.3f} tokens", "")
    )
    print(
        f"Translation benchmark: {count} cues over {args.minutes:g} min of subtitles into "
        "French, the fake chat server answering at once; tokens = characters / 4 of every "
        "message and answer; figures per hour of subtitles"
    )
    print()
    print(table(rows))
    if args.json:
        print(json.dumps({"cues": count, "fredica": ours, "cue_by_cue": naive}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
