"""A test double standing in for Ollama, which cannot run here: a real HTTP server on
127.0.0.1:0 that speaks the part of the OpenAI chat-completions API ANALYZE uses
(``POST /v1/chat/completions``, answered with a ``chat.completion`` object), for ANALYZE and
TRANSLATE_SUBTITLES.

Its answers are scripted (:class:`Answer`: a status, the model's text, a delay), one per
request, the last one repeated; every request is logged (path, headers, JSON body) so that a
test can assert what was sent — or that nothing was. ``close()`` ends every connection and
joins every thread.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Answer:
    #: The model's reply (status 200), or the error message (any other status).
    content: str = ""
    status: int = 200
    #: Seconds to think before answering.
    delay: float = 0.0
    #: The reply made from the request's JSON body instead of ``content``.
    reply: Callable[[Any], str] | None = None
    #: Close the connection without answering (a dropped connection).
    drop: bool = False


def translator(prefix: str = "FR: ", glossary: dict[str, str] | None = None) -> Answer:
    """A model that translates right: each cue of TRANSLATE_SUBTITLES's ``translate`` list
    answered with ``prefix`` before its text, numbered as asked; a glossary request answered
    with ``glossary``."""

    def reply(body: Any) -> str:
        request = json.loads(body["messages"][1]["content"])
        if "subtitles" in request:
            return json.dumps({"glossary": glossary or {}})
        cues = [{"n": c["n"], "text": prefix + c["text"]} for c in request["translate"]]
        return json.dumps({"cues": cues, "glossary": {}}, ensure_ascii=False)

    return Answer(reply=reply)


def asked(request: Request) -> list[int]:
    """The cue numbers a TRANSLATE_SUBTITLES request asked to translate (none: a glossary
    request)."""
    body = json.loads(request.body["messages"][1]["content"])
    return [c["n"] for c in body.get("translate", [])]


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any


@dataclass
class _State:
    answers: list[Answer]
    log: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)
    connections: set[socket.socket] = field(default_factory=set)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread
    block_on_close = True

    def __init__(self, state: _State) -> None:
        self.state = state
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away (a cancelled job) is what some tests do on purpose


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.state.lock:
            self.server.state.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.state.lock:
            self.server.state.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with state.lock:
            state.log.append(
                Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            answer = state.answers[min(len(state.log), len(state.answers)) - 1]
        if answer.delay and state.closing.wait(answer.delay):
            return  # the server is closing
        if answer.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": f"no route {self.path}"})  # as Ollama says it
        elif answer.status != 200:
            self._send(answer.status, {"error": {"message": answer.content, "type": "error"}})
        else:
            model = body.get("model") if isinstance(body, dict) else None
            self._send(
                200,
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                "content": answer.reply(body) if answer.reply else answer.content,
                            },
                            "finish_reason": "stop",
                        }
                    ],
                },
            )

    def _send(self, status: int, document: Any) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FakeChatServer:
    """``with FakeChatServer([Answer(content=...)]) as llm: ... llm.url ... llm.requests``."""

    def __init__(self, answers: list[Answer] | None = None) -> None:
        self._state = _State(answers or [Answer('{"summary": "ok", "chapters": []}')])
        self._server = _Server(self._state)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The API's base URL, as Ollama's: ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[Request]:
        with self._state.lock:
            return list(self._state.log)

    def close(self) -> None:
        self._state.closing.set()
        if self._thread.is_alive():
            self._server.shutdown()
        with self._state.lock:
            connections = list(self._state.connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._server.server_close()  # joins the handler threads
        self._thread.join(5)
