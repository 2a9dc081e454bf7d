"""TRANSLATE_SUBTITLES: subtitles in another language, through the settings' chat endpoint
(an OpenAI-compatible API: a local Ollama, a hosted model).

The cues are read (SRT, WebVTT, ASS with pysubs2; a Fredica transcript as EXPORT_SUBTITLES
cuts it into cues), a glossary of names and terms is built from the whole file, then the cues
go to the model in chunks with the cues around them and the glossary, which each answer may
grow (the prompts and the checks of an answer: :mod:`python_endpoints.jobs.translation`). An
answer whose cue count or numbering differs is refused and the chunk asked again, saying why;
after ``chunk_retries`` the task fails, naming the chunk and what was wrong, rather than
shifting lines onto other cues. Each cue keeps its own times (to the millisecond) and its
place: cue *n* of the output is cue *n* of the input.

It resumes: the checkpoint holds the chunks translated and the glossary; a next attempt of
the same cues and settings asks only for the chunks left. Progress and the time left come
from the chunks done in this attempt.

The files: ``<stem>.<lang>.srt`` and ``.vtt``, read back and checked (the cue count and every
cue's times) before they are put in place; ``bilingual`` puts the original lines above the
translation in each cue.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import captions, export, outputs, textio, translation
from python_endpoints.jobs import llm as llm_client
from python_endpoints.jobs.text import format_duration
from python_endpoints.serving.child import ChildContext, JobFailed
from python_endpoints.status import said

NOTE = "The original subtitles are kept as they are."
NO_MODEL = (
    "no language model is set to translate with: set llm_base_url and llm_model (Settings > "
    "Language model, or `fredica settings set llm_base_url http://127.0.0.1:11434/v1` and "
    "`fredica settings set llm_model NAME` for a local Ollama), then start the translation again"
)


def warm_up(endpoint: str) -> None:
    """Import pysubs2 and httpx ahead, while a spare waits."""
    import httpx  # noqa: F401
    import pysubs2  # noqa: F401


# --- the cues ---------------------------------------------------------------------------------


def read_cues(path: Path) -> tuple[list[captions.Cue], str | None]:
    """The cues of a subtitle file or a transcript, and their language when it says."""
    if path.suffix.lower() == ".json":
        transcript = textio.load_transcript(path)
        shown = captions.with_unheard(list(transcript.segments), transcript.unheard)
        rules = captions.CaptionRules(
            max_line_chars=42, max_lines=2, max_cue_seconds=7.0, min_cue_seconds=1.0
        )  # EXPORT_SUBTITLES's defaults: the cues its SRT would have
        return captions.build_cues(shown, rules, transcript.duration), transcript.language
    import pysubs2

    text = textio.read_text(path)
    try:
        subs = pysubs2.SSAFile.from_string(text)
    except Exception as exc:  # pysubs2 raises several kinds on a file it cannot read
        raise JobFailed(
            f"{path.name} cannot be read as subtitles ({exc}); give an SRT, WebVTT or ASS file",
            ErrorType.INPUT_DAMAGED,
        ) from exc
    cues = []
    for event in subs:
        if event.is_comment:
            continue
        lines = tuple(line.strip() for line in event.plaintext.splitlines() if line.strip())
        if lines:
            cues.append(captions.Cue(int(event.start), int(event.end), lines))
    return cues, None


# --- the model --------------------------------------------------------------------------------


class _Translator:
    """The requests of one attempt: the glossary, then the chunks left."""

    def __init__(self, params: dict[str, Any], ctx: ChildContext, texts: list[str]) -> None:
        self.params, self.ctx, self.texts = params, ctx, texts
        self.llm: dict[str, Any] = params["llm"]
        self.model = str(self.llm["model"])
        self.requests = 0

    def ask(self, messages: list[dict[str, str]], percent: float) -> str | None:
        self.requests += 1
        return llm_client.ask(self.llm, messages, self.ctx, percent, NOTE)

    def glossary(self) -> dict[str, str] | None:
        """The names and terms of the whole file (None: cancelled). An answer that cannot be
        read adds nothing: the chunks build the glossary then."""
        found: dict[str, str] = {}
        prompts = translation.glossary_prompts(self.texts, self.params["lang"])
        for part, messages in enumerate(prompts, 1):
            status = said("building_glossary", model=self.model, part=part, parts=len(prompts))
            self.ctx.progress(2.0, status)
            content = self.ask(messages, 2.0)
            if content is None:
                return None
            try:
                found = translation.merged(found, translation.read_glossary(content))
            except ValueError:
                continue
        return found

    def chunk(
        self,
        chunk: translation.Chunk,
        done: dict[int, str],
        glossary: dict[str, str],
        source: str | None,
        percent: float,
    ) -> translation.Answer | None:
        """The chunk's translations, asked again (saying why) while an answer cannot be used;
        :class:`JobFailed` after the last try. None: cancelled."""
        problem: str | None = None
        quoted = ""
        tries = int(self.params["chunk_retries"]) + 1
        for _ in range(tries):
            messages = translation.chunk_prompt(
                self.texts,
                done,
                chunk,
                int(self.params["context_cues"]),
                source,
                self.params["lang"],
                glossary,
                problem,
            )
            content = self.ask(messages, percent)
            if content is None:
                return None
            try:
                return translation.read_answer(content, chunk)
            except ValueError as exc:
                problem = str(exc)
                quoted = " ".join(content.split())[:160]
        raise JobFailed(
            f"{self.model} did not translate cues {chunk.start + 1} to {chunk.end} usably in "
            f"{tries} tries ({problem}; it answered {quoted!r}); nothing was shifted: retry "
            "the task (it resumes with the chunks done), or choose a model that follows "
            f"instructions better. {NOTE}",
            ErrorType.LLM_ERROR,
        )


def _eta(status: str, started: float, done_here: int, left: int) -> str:
    """``status`` and the time left, from the chunks this attempt translated."""
    if not done_here or not left:
        return status
    seconds = (time.monotonic() - started) / done_here * left
    return status + said("left", left=format_duration(seconds))


# --- the job ----------------------------------------------------------------------------------


def translate_subtitles_job(params: dict[str, Any], ctx: ChildContext) -> dict[str, Any] | None:
    """TRANSLATE_SUBTITLES; result ``{"outputs", "cues", "chunks", "chunks_reused",
    "requests", "glossary", "language"}``."""
    source_file = Path(params["input"])
    output_dir, stem, lang = Path(params["output_dir"]), str(params["stem"]), params["lang"]
    formats = list(dict.fromkeys(params["formats"]))
    finals = {fmt: output_dir / f"{stem}.{lang}.{fmt}" for fmt in formats}
    for final in finals.values():
        textio.distinct(source_file, final)
    if params["llm"] is None:
        raise JobFailed(NO_MODEL, ErrorType.PAYLOAD_ERROR)
    ctx.progress(0.0, said("reading_subtitles"))
    cues, spoken = read_cues(source_file)
    source = None if params["source_language"] == "auto" else params["source_language"]
    source = source or spoken
    texts = [cue.text for cue in cues]
    plan = translation.chunks(len(texts), int(params["chunk_cues"]))
    key = translation.checkpoint_key(
        texts,
        {
            "lang": lang,
            "source": source,
            "chunk_cues": params["chunk_cues"],
            "model": params["llm"]["model"],
        },
    )
    done, glossary = translation.resumed(params.get("resume"), key, plan)
    reused = len(done)
    translator = _Translator(params, ctx, texts)
    if params["glossary"] and not glossary and texts and not done:
        found = translator.glossary()
        if found is None:
            return None
        glossary = found
        ctx.progress(
            5.0,
            said("building_glossary", model=translator.model, part=1, parts=1),
            extras={"checkpoint": translation.checkpoint(key, done, glossary)},
        )
    started, done_here = time.monotonic(), 0
    for chunk in plan:
        if chunk.index in done:
            continue
        ctx.wait_if_paused()  # a pause takes effect between two chunks
        if ctx.cancelled:
            return None
        percent = 5.0 + 90.0 * len(done) / len(plan)
        status = said(
            "translating_chunk", first=chunk.start + 1, last=chunk.end, cues=len(texts),
            model=translator.model,
        )  # fmt: skip
        left = len(plan) - len(done)
        ctx.progress(percent, _eta(status, started, done_here, left))
        flat = {i: t for c, ts in done.items() for i, t in zip(_indexes(plan[c]), ts, strict=True)}
        answer = translator.chunk(chunk, flat, glossary, source, percent)
        if answer is None:
            return None
        done[chunk.index] = answer.texts
        done_here += 1
        glossary = translation.merged(glossary, answer.glossary)
        ctx.progress(
            5.0 + 90.0 * len(done) / len(plan),
            _eta(status, started, done_here, len(plan) - len(done)),
            extras={"checkpoint": translation.checkpoint(key, done, glossary)},
        )
    translated = [t for chunk in plan for t in done[chunk.index]]
    out = _cues(cues, translated, bool(params["bilingual"]), int(params["max_line_chars"]))
    _write(finals, out, outputs.part_id(params), ctx)
    ctx.progress(100.0, said("done"))
    return {
        "outputs": [str(finals[fmt]) for fmt in formats],
        "cues": len(out),
        "chunks": len(plan),
        "chunks_reused": reused,
        "requests": translator.requests,
        "glossary": len(glossary),
        "language": lang,
    }


def _indexes(chunk: translation.Chunk) -> range:
    return range(chunk.start, chunk.end)


def _cues(
    cues: list[captions.Cue], translated: list[str], bilingual: bool, width: int
) -> list[captions.Cue]:
    """Each cue at its own times with its translation (under its original, ``bilingual``)."""
    out = []
    for cue, text in zip(cues, translated, strict=True):
        lines = translation.lines_of(text, width)
        out.append(captions.Cue(cue.start, cue.end, (*cue.lines, *lines) if bilingual else lines))
    return out


def _write(finals: dict[str, Path], cues: list[captions.Cue], part: str, ctx: ChildContext) -> None:
    """Every format written, read back and checked, then all put in place."""
    directory = next(iter(finals.values())).parent
    with outputs.writing(directory):
        directory.mkdir(parents=True, exist_ok=True)
    temps = {fmt: outputs.temp_path(final, part) for fmt, final in finals.items()}
    try:
        for fmt, final in finals.items():
            ctx.progress(96.0, said("writing", name=final.name))
            content = export.render_subtitles(cues, fmt)
            textio.write_text(temps[fmt], content)
            export.verify_written(fmt, temps[fmt], final, content, cues)
        for fmt, final in finals.items():
            with outputs.writing(final):
                outputs.commit(temps[fmt], final)
    finally:
        for temp in temps.values():
            outputs.remove_quietly(temp)
