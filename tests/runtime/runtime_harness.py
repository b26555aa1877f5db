"""Test plumbing for the runtime SDK: how tests reach a real provider and a recording LLM.

- :class:`BlockingASGITransport` lets the *sync* client talk to an ASGI app in-process: an anyio
  blocking portal runs ``httpx.ASGITransport`` on its own event loop thread.
- :class:`Wire` wraps any transport to count requests by path, to cut the network (a refused
  connection, as a provider that is down gives) and to flip bytes of response bodies in flight.
- :class:`LoopbackServer` serves an ASGI app with uvicorn on a pre-bound 127.0.0.1 socket, so a
  client can connect at once (the kernel queues the connection until the loop accepts it).
- :class:`RecordingLLM` is a small OpenAI-compatible ``/v1/chat/completions`` endpoint on
  loopback that records every request and answers with a fixed completion.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio.from_thread
import httpx
import uvicorn

from engram.core.canonical import JsonValue, canonicalize, parse_strict

_HOP_HEADERS = ("content-length", "content-encoding", "transfer-encoding")


class BlockingASGITransport(httpx.BaseTransport):
    """Serve sync httpx requests from an ASGI app running in a portal thread."""

    def __init__(self, app: Any) -> None:
        self._inner = httpx.ASGITransport(app=app)
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self._portal = self._portal_cm.__enter__()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()

        async def exchange() -> tuple[int, list[tuple[str, str]], bytes]:
            forwarded = httpx.Request(
                request.method, request.url, headers=request.headers, content=body
            )
            response = await self._inner.handle_async_request(forwarded)
            content = await response.aread()
            await response.aclose()
            headers = [(k, v) for k, v in response.headers.items() if k not in _HOP_HEADERS]
            return response.status_code, headers, content

        status, headers, content = self._portal.call(exchange)
        return httpx.Response(status, headers=headers, content=content, request=request)

    def close(self) -> None:
        self._portal_cm.__exit__(None, None, None)


@dataclass
class Wire:
    """A transport wrapper a test controls: counts, outages and in-flight tampering."""

    inner: httpx.BaseTransport | httpx.AsyncBaseTransport
    requests: Counter[str] = field(default_factory=Counter)
    down: bool = False
    tamper: Callable[[str, bytes], bytes] | None = None

    def _before(self, request: httpx.Request) -> None:
        self.requests[request.url.path] += 1
        if self.down:
            raise httpx.ConnectError("connection refused (provider down)", request=request)

    def _after(
        self, request: httpx.Request, status: int, headers: Any, body: bytes
    ) -> httpx.Response:
        if self.tamper is not None:
            body = self.tamper(request.url.path, body)
        kept = [(k, v) for k, v in headers.items() if k not in _HOP_HEADERS]
        return httpx.Response(status, headers=kept, content=body, request=request)

    def sync(self) -> httpx.BaseTransport:
        wire, inner = self, self.inner
        assert isinstance(inner, httpx.BaseTransport)

        class _Sync(httpx.BaseTransport):
            def handle_request(self, request: httpx.Request) -> httpx.Response:
                wire._before(request)
                response = inner.handle_request(request)
                body = response.read()
                return wire._after(request, response.status_code, response.headers, body)

        return _Sync()

    def async_(self) -> httpx.AsyncBaseTransport:
        wire, inner = self, self.inner
        assert isinstance(inner, httpx.AsyncBaseTransport)

        class _Async(httpx.AsyncBaseTransport):
            async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
                wire._before(request)
                response = await inner.handle_async_request(request)
                body = await response.aread()
                return wire._after(request, response.status_code, response.headers, body)

        return _Async()


class LoopbackServer:
    """uvicorn serving ``app`` on 127.0.0.1 in a thread, for subprocess and socket tests."""

    def __init__(self, app: Any) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


class RecordingLLM:
    """An OpenAI-compatible chat endpoint on loopback that records what it was asked."""

    def __init__(self, reply: str = "Noted.") -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.authorization: list[str | None] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                payload = parse_strict(self.rfile.read(length))
                if self.path.rstrip("/") != "/v1/chat/completions" or not isinstance(payload, dict):
                    self._answer(404, {"error": {"message": "not found", "type": "invalid"}})
                    return
                recorder.requests.append(payload)
                recorder.authorization.append(self.headers.get("Authorization"))
                self._answer(200, recorder._completion(payload))

            def _answer(self, status: int, value: JsonValue) -> None:
                body = canonicalize(value)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _completion(self, payload: dict[str, Any]) -> dict[str, JsonValue]:
        turn = len(self.requests)
        return {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": 1767261600,
            "model": str(payload.get("model", "")),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"{self.reply} ({turn})"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def system_prompts(self) -> list[str]:
        """The system message of every request, in order."""
        out = []
        for request in self.requests:
            messages = request.get("messages", [])
            out.append(next(m["content"] for m in messages if m.get("role") == "system"))
        return out

    def __enter__(self) -> RecordingLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@contextlib.contextmanager
def blocking_transport(app: Any) -> Iterator[BlockingASGITransport]:
    transport = BlockingASGITransport(app)
    try:
        yield transport
    finally:
        transport.close()


__all__ = ["BlockingASGITransport", "LoopbackServer", "RecordingLLM", "Wire", "blocking_transport"]
