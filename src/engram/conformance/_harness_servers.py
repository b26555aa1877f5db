"""Loopback servers for the runtime harness: a scripted Engram provider and a recording
OpenAI-compatible LLM endpoint, sharing one ordered request log.

Spec: Engram v0.1 Conformance §"Runtime Checklist" ("confirm via network log"; the injection
"appears in your LLM system prompt"). The runtime under test is a separate process, so these are
real sockets on 127.0.0.1 with port 0, served from threads for the length of one harness run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from engram.core.canonical import Json, parse_strict
from engram.core.jsonio import dumps_text
from engram.errors import EngramError

Answer = tuple[int, Json | bytes]
"""A status and a JSON body, or the bytes of an event stream."""
Route = Callable[["Request"], Answer]


@dataclass(frozen=True)
class Request:
    """One request a loopback server received, in global arrival order."""

    seq: int
    server: str
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Json
    """The parsed JSON body; its text when it is not JSON; None when empty."""


@dataclass
class RequestLog:
    """Every request both servers saw, numbered in arrival order across the two."""

    requests: list[Request] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self, server: str, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> Request:
        parts = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        body: Json
        try:
            body = parse_strict(raw) if raw else None
        except EngramError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            request = Request(len(self.requests), server, method, parts.path, query, headers, body)
            self.requests.append(request)
        return request

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def of(self, server: str, method: str | None = None, path: str | None = None) -> list[Request]:
        with self._lock:
            return [
                r
                for r in self.requests
                if r.server == server
                and (method is None or r.method == method)
                and (path is None or r.path == path)
            ]


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 that answers through ``route`` and logs each request."""

    def __init__(self, name: str, log: RequestLog, route: Route) -> None:
        self.name = name
        handler = _handler(name, log, route)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _handler(name: str, log: RequestLog, route: Route) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            request = log.add(name, self.command, self.path, headers, raw)
            status, body = route(request)
            if isinstance(body, bytes):
                data, kind = body, "text/event-stream"
            else:
                data, kind = dumps_text(body).encode("utf-8"), "application/json"
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = _serve  # noqa: N815 - the names http.server dispatches to
        do_POST = _serve  # noqa: N815

        # http.server's own signature: the arguments are %-format values of any type.
        def log_message(self, format: str, *args: Any) -> None:  # noqa: ARG002
            # The log is the RequestLog; nothing goes to stderr.
            return

    return Handler


def error(status: int, code: str, message: str) -> Answer:
    return status, {"error": {"code": code, "message": message, "status": status}}


def completion(request: Request, content: str = "Noted.") -> Answer:
    """An OpenAI-style chat completion (or a one-chunk stream when the client asked for one)."""
    body = request.body if isinstance(request.body, dict) else {}
    model = str(body.get("model", "harness"))
    if body.get("stream") is True:
        chunk = {
            "id": f"harness-{request.seq}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        return 200, f"data: {dumps_text(chunk)}\n\ndata: [DONE]\n\n".encode()
    return 200, {
        "id": f"harness-{request.seq}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def system_prompt(request: Request) -> str:
    """Everything the LLM request carried as system (or developer) instructions."""
    body = request.body if isinstance(request.body, dict) else {}
    parts: list[str] = []
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") not in ("system", "developer"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    system = body.get("system")
    if isinstance(system, str):
        parts.append(system)
    return "\n".join(parts)


__all__ = [
    "Answer",
    "LoopbackServer",
    "Request",
    "RequestLog",
    "Route",
    "completion",
    "error",
    "system_prompt",
]
