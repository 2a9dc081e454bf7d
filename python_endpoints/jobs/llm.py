"""Asking an OpenAI-compatible chat endpoint (a local Ollama, a hosted API): what ANALYZE and
TRANSLATE_SUBTITLES share.

One ``POST {base_url}/chat/completions``, tried again after a connection error, a 5xx or a 429
(``retries`` times, backing off); the API key is read from the environment variable
``api_key_env`` names — the endpoints server's environment, which the job's process inherits —
never from the params. A local URL is never sent through a proxy from the environment. A model
that cannot be reached fails the task with ``LLM_UNREACHABLE``, a request it refuses (4xx) or
an answer that cannot be read with ``LLM_ERROR``; each message ends with the job's ``note``
(what works without the model, what to set). The request runs in a thread (:func:`ask`), so
that a cancel is seen at once and progress keeps coming while the model thinks.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from python_endpoints.errorcodes import ErrorType
from python_endpoints.jobs import analysis
from python_endpoints.serving.child import ChildContext, JobFailed
from python_endpoints.status import said

if TYPE_CHECKING:
    import httpx

#: How often a waiting job looks at the cancel flag…
POLL = 0.1
#: …and tells that it is still waiting (a quiet task would look stalled).
HEARTBEAT = 15.0


# --- the language model -----------------------------------------------------------------------


def api_key(llm: dict[str, Any], note: str) -> str | None:
    """The API key from the environment variable the settings name (None: no key). ``note``
    ends every error message (what works without the model)."""
    name = llm["api_key_env"]
    if not name:
        return None
    key = os.environ.get(name)
    if not key:
        raise JobFailed(
            f"the LLM setting takes its API key from the environment variable {name}, which "
            "is not set for Fredica's endpoints server; set it before starting Fredica, or "
            f"clear the API key setting (a local Ollama needs none). {note}",
            ErrorType.AWAITING_CREDENTIAL,
        )
    return key


class _Waitable(Protocol):
    def wait(self, timeout: float | None = None) -> bool: ...


class _Stopped(BaseException):
    """The job was cancelled while it waited to try again."""


def _refused(url: str, llm: dict[str, Any], status: int, message: str, note: str) -> JobFailed:
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
        f"{hint}. {note}",
        ErrorType.LLM_ERROR,
    )


def request_completion(
    llm: dict[str, Any],
    messages: list[dict[str, str]],
    cancel: _Waitable,
    note: str,
) -> str:
    """POST the chat request, trying again on a connection error, a 5xx or a 429; return the
    answer's text. Raises :class:`JobFailed`, or :class:`_Stopped` when ``cancel`` is set
    while it waits between attempts."""
    import httpx

    url = analysis.chat_url(str(llm["base_url"]))
    key = api_key(llm, note)
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
                        f"LLM timeout, or choose a smaller model. {note}",
                        ErrorType.LLM_UNREACHABLE,
                    ) from exc
                problem, http_failed = "the connection timed out", False
            except httpx.TransportError as exc:
                problem, http_failed = str(exc) or type(exc).__name__, False
            else:
                if response.is_success:
                    return _content(url, response, note)
                message = analysis.server_message(response.text)
                if not analysis.retryable_status(response.status_code):
                    raise _refused(url, llm, response.status_code, message, note)
                problem, http_failed = f"HTTP {response.status_code}: {message}", True
                delay = analysis.retry_delay(attempt, response.headers.get("Retry-After"))
                continue
            delay = analysis.retry_delay(attempt)
    tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
    if http_failed:
        raise JobFailed(
            f"the language model at {url} failed {tries} ({problem}); check its server's "
            f"log, then retry. {note}",
            ErrorType.LLM_ERROR,
        )
    raise JobFailed(
        f"cannot reach the language model at {url} ({problem}; {tries}): check that its "
        "server is running and that the LLM URL in the settings is right — for Ollama, is "
        f"it running? Start it with `ollama serve`. {note}",
        ErrorType.LLM_UNREACHABLE,
    )


def _content(url: str, response: httpx.Response, note: str) -> str:
    try:
        return analysis.completion_content(response.json())
    except ValueError as exc:  # a JSONDecodeError is one too
        raise JobFailed(
            f"the server at {url} did not answer with an OpenAI chat completion ({exc}); "
            f"check that the LLM URL is an OpenAI-compatible API (Ollama's ends with /v1). "
            f"{note}",
            ErrorType.LLM_ERROR,
        ) from exc


def ask(
    llm: dict[str, Any],
    messages: list[dict[str, str]],
    ctx: ChildContext,
    percent: float,
    note: str,
) -> str | None:
    """:func:`request_completion` in a thread, so that a cancel is seen at once and progress
    (at ``percent``) keeps coming while the model thinks. None when cancelled."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["content"] = request_completion(llm, messages, ctx.cancel_event, note)
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
            ctx.progress(percent, said("waiting_for_model", model=llm["model"], seconds=waited))
    error = outcome.get("error")
    if isinstance(error, _Stopped):
        return None
    if error is not None:
        raise error
    return str(outcome["content"])
