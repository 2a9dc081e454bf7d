"""ANALYZE: key phrases with the times they are said (offline, YAKE) and, only when a language
model is configured, a summary and chapters from it (an OpenAI-compatible chat endpoint, such
as a local Ollama).

Runs in the child: standard library, yake and httpx — those two imported where used (and
ahead of time by :func:`warm_up` in a warm spare), so that importing this module (the job
catalogue does, in the app's every command) costs little. Params were validated by the server
(:class:`python_endpoints.params.AnalyzeParams`), and come complete: every field, the
``llm``'s too, with its default filled. The decisions (where phrases are said, the
prompt, reading the answer, retry delays) are pure functions in
:mod:`python_endpoints.jobs.analysis`; this module is the shell around them.

Without ``llm`` nothing touches the network. With it: one request through
:mod:`python_endpoints.jobs.llm` (retries, the API key from the environment, no proxy for a
local URL); its errors say that key phrases alone work without the LLM setting.

The analysis (``<stem>.analysis.json``)::

    {"version": 1, "language": "en",
     "keywords": [{"phrase": "machine learning", "score": 0.02, "times": [12.5, 80.0]}],
     "summary": "..." | null, "chapters": [{"start": 0.0, "title": "..."}],
     "model": "llama3.2" | null, "truncated": false, "note": null}

``score`` is YAKE's: lower is more relevant. ``truncated`` (and ``note``) say when the
transcript was too long to be sent whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import analysis, outputs, textio
from python_endpoints.jobs import llm as llm_client
from python_endpoints.jobs.analysis import SpokenText
from python_endpoints.serving.child import ChildContext, JobFailed
from python_endpoints.status import said

ANALYZE = "ANALYZE"
OUTPUT_VERSION = 1
#: The longest key phrases, in words.
PHRASE_WORDS = 3
OFFLINE = "Key phrases alone work without the LLM setting: clear it to analyze offline."


def warm_up(endpoint: str) -> None:
    """Import YAKE (with numpy and networkx, about a second) and httpx ahead, while a spare
    waits."""
    import httpx  # noqa: F401
    import yake  # noqa: F401


def key_phrases(spoken: SpokenText, language: str | None, top: int) -> list[dict[str, Any]]:
    """YAKE's ``top`` key phrases (up to 3 words), best first, with their score and when they
    are said; a phrase inside a better one (``neural`` after ``neural networks``) is left out.
    An unknown language uses YAKE's language-neutral stop words."""
    import yake

    # More candidates than needed: some are left out as covered by better ones.
    extractor = yake.KeywordExtractor(lan=language or "und", n=PHRASE_WORDS, top=3 * top)
    kept: list[tuple[str, float]] = []
    for phrase, score in extractor.extract_keywords(spoken.text) if spoken.text else []:
        if len(kept) < top and not analysis.covered(str(phrase), (p for p, _ in kept)):
            kept.append((str(phrase), float(score)))
    return [
        {"phrase": phrase, "score": score, "times": spoken.times(phrase)} for phrase, score in kept
    ]


# --- the language model ---------------------------------------------------------------------


def ask_model(llm: dict[str, Any], prompt: analysis.Prompt, ctx: ChildContext) -> str | None:
    """:func:`ask` for the analysis (at 30 %)."""
    return llm_client.ask(llm, prompt.messages, ctx, 30.0, OFFLINE)


# --- the job ----------------------------------------------------------------------------------


def analyze_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """ANALYZE; result ``{"outputs", "keywords", "summary", "chapters", "truncated"}``."""
    source, output = Path(params["transcript"]), Path(params["output"])
    textio.distinct(source, output)
    ctx.progress(0.0, said("reading_transcript"))
    transcript = textio.load_transcript(source)
    language = params["language"]
    if language == "auto":
        language = transcript.language
    ctx.progress(5.0, said("finding_key_phrases"))
    spoken = SpokenText.of(transcript.segments)
    keywords = key_phrases(spoken, language, params["keywords"])
    if ctx.cancelled:
        return None
    llm: dict[str, Any] | None = params["llm"]
    reply = analysis.Reply(None, [])
    prompt: analysis.Prompt | None = None
    if llm and spoken.text:  # nothing to summarize in an empty transcript
        prompt = analysis.build_prompt(transcript.segments, language, transcript.duration)
        ctx.progress(30.0, said("asking_model", model=llm["model"]))
        content = ask_model(llm, prompt, ctx)
        if content is None:
            return None
        try:
            reply = analysis.parse_reply(content, transcript.duration)
        except ValueError as exc:
            quoted = " ".join(content.split())[:200]
            raise JobFailed(
                f"the answer of {llm['model']} cannot be used ({exc}): {quoted!r}; retry, or "
                f"choose a model that follows instructions better. {OFFLINE}",
                ErrorType.LLM_ERROR,
            ) from None
    document = {
        "version": OUTPUT_VERSION,
        "language": language,
        "keywords": keywords,
        "summary": reply.summary,
        "chapters": reply.chapters,
        "model": llm["model"] if llm else None,
        "truncated": bool(prompt and prompt.truncated),
        "note": prompt.note if prompt else None,
    }
    ctx.progress(90.0, said("writing", name=output.name))
    _write(output, document, outputs.part_id(params))
    ctx.progress(100.0, said("done"))
    return {
        "outputs": [str(output)],
        "keywords": len(keywords),
        "summary": reply.summary is not None,
        "chapters": len(reply.chapters),
        "truncated": document["truncated"],
    }


def _write(output: Path, document: dict[str, Any], part: str) -> None:
    """Through the temporary name of run ``part``, read back, then put in place."""
    content = json.dumps(document, ensure_ascii=False, indent=1) + "\n"
    with outputs.writing(output.parent):
        output.parent.mkdir(parents=True, exist_ok=True)
    temp = outputs.temp_path(output, part)
    try:
        textio.write_text(temp, content)
        try:
            ok = json.loads(textio.read_text(temp)) == document
        except ValueError:
            ok = False
        if not ok:
            raise textio.verify_failed(output, "it does not hold what was written")
        with outputs.writing(output):
            outputs.commit(temp, output)
    finally:
        outputs.remove_quietly(temp)
