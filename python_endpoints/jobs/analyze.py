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

Without ``llm`` nothing touches the network. With it: one ``POST {base_url}/chat/completions``,
tried again after a connection error, a 5xx or a 429 (``retries`` times, backing off); the API
key is read from the environment variable ``api_key_env`` names — the endpoints server's
environment, which the job's process inherits — never from the params. A local URL is never
sent through a proxy from the environment. A model that cannot be reached fails the task with
``LLM_UNREACHABLE``, a request it refuses (4xx) or an answer that cannot be read with
``LLM_ERROR``; both messages say that key phrases alone work without the LLM setting.

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
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import analysis, outputs, textio
from python_endpoints.jobs.analysis import SpokenText
from python_endpoints.serving.child import ChildContext, JobFailed
from python_endpoints.status import said

if TYPE_CHECKING:
    import httpx

ANALYZE = "ANALYZE"
OUTPUT_VERSION = 1
#: The longest key phrases, in words.
PHRASE_WORDS = 3
#: How often the job looks at the cancel flag while it waits for the model…
POLL = 0.1
#: …and tells that it is still waiting (a quiet task would look stalled).
HEARTBEAT = 15.0
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


# --- the language model -----------------------------------------------------------------------


def api_key(llm: dict[str, Any]) -> str | None:
    """The API key from the environment variable the settings name (None: no key)."""
    name = llm["api_key_env"]
    if not name:
        return None
    key = os.environ.get(name)
    if not key:
        raise JobFailed(
            f"the LLM setting takes its API key from the environment variable {name}, which "
            "is not set for Fredica's endpoints server; set it before starting Fredica, or "
            f"clear the API key setting (a local Ollama needs none). {OFFLINE}",
            ErrorType.AWAITING_CREDENTIAL,
        )
    return key


class _Waitable(Protocol):
    def wait(self, timeout: float | None = None) -> bool: ...


class _Stopped(BaseException):
    """The job was cancelled while it waited to try again."""


def _refused(url: str, llm: dict[str, Any], status: int, message: str) -> JobFailed:
    if status in (401, 403):
        hint = "check the API key"
        if llm["api_key_env"]:
            hint += f" (the environment variable {llm['api_key_env']})"
    elif status == 404:
        model = llm["model"]
        hint = f"check the URL and that the model {model!r} exists (Ollama: `ollama pull {model}`)"
    else:
        hint = "check the LLM settings"
    return JobFailed(
        f"the language model at {url} refused the request (HTTP {status}: {message}); "
        f"{hint}. {OFFLINE}",
        ErrorType.LLM_ERROR,
    )


def request_completion(
    llm: dict[str, Any], messages: list[dict[str, str]], cancel: _Waitable
) -> str:
    """POST the chat request, trying again on a connection error, a 5xx or a 429; return the
    answer's text. Raises :class:`JobFailed`, or :class:`_Stopped` when ``cancel`` is set
    while it waits between attempts."""
    import httpx

    url = analysis.chat_url(str(llm["base_url"]))
    key = api_key(llm)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"model": llm["model"], "messages": messages, "stream": False, "temperature": 0.2}
    timeout = float(llm["timeout"])
    attempts = int(llm["retries"]) + 1
    problem, http_failed, delay = "", False, 0.0
    with httpx.Client(timeout=timeout, trust_env=not analysis.is_loopback(url)) as client:
        for attempt in range(attempts):
            if attempt and cancel.wait(delay):
                raise _Stopped
            try:
                response = client.post(url, json=body, headers=headers)
            except httpx.TimeoutException as exc:
                if not isinstance(exc, httpx.ConnectTimeout):
                    raise JobFailed(
                        f"the language model at {url} did not answer within {timeout:g} s; a "
                        "large model on a CPU (or one still loading) can be slow: raise the "
                        f"LLM timeout, or choose a smaller model. {OFFLINE}",
                        ErrorType.LLM_UNREACHABLE,
                    ) from exc
                problem, http_failed = "the connection timed out", False
            except httpx.TransportError as exc:
                problem, http_failed = str(exc) or type(exc).__name__, False
            else:
                if response.is_success:
                    return _content(url, response)
                message = analysis.server_message(response.text)
                if not analysis.retryable_status(response.status_code):
                    raise _refused(url, llm, response.status_code, message)
                problem, http_failed = f"HTTP {response.status_code}: {message}", True
                delay = analysis.retry_delay(attempt, response.headers.get("Retry-After"))
                continue
            delay = analysis.retry_delay(attempt)
    tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
    if http_failed:
        raise JobFailed(
            f"the language model at {url} failed {tries} ({problem}); check its server's "
            f"log, then retry. {OFFLINE}",
            ErrorType.LLM_ERROR,
        )
    raise JobFailed(
        f"cannot reach the language model at {url} ({problem}; {tries}): check that its "
        "server is running and that the LLM URL in the settings is right — for Ollama, is "
        f"it running? Start it with `ollama serve`. {OFFLINE}",
        ErrorType.LLM_UNREACHABLE,
    )


def _content(url: str, response: httpx.Response) -> str:
    try:
        return analysis.completion_content(response.json())
    except ValueError as exc:  # a JSONDecodeError is one too
        raise JobFailed(
            f"the server at {url} did not answer with an OpenAI chat completion ({exc}); "
            f"check that the LLM URL is an OpenAI-compatible API (Ollama's ends with /v1). "
            f"{OFFLINE}",
            ErrorType.LLM_ERROR,
        ) from exc


def ask_model(llm: dict[str, Any], prompt: analysis.Prompt, ctx: ChildContext) -> str | None:
    """:func:`request_completion` in a thread, so that a cancel is seen at once and progress
    keeps coming while the model thinks. None when cancelled."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["content"] = request_completion(llm, prompt.messages, ctx.cancel_event)
        except BaseException as exc:  # handed to the job's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="llm-request", daemon=True)
    began = last = time.monotonic()
    worker.start()
    while worker.is_alive():
        worker.join(POLL)
        if ctx.cancelled:
            return None  # the child exits: the request dies with it
        if time.monotonic() - last >= HEARTBEAT:
            last = time.monotonic()
            waited = int(last - began)
            ctx.progress(30.0, said("waiting_for_model", model=llm["model"], seconds=waited))
    error = outcome.get("error")
    if isinstance(error, _Stopped):
        return None
    if error is not None:
        raise error
    return str(outcome["content"])


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
