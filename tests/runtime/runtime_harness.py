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
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio.from_thread
import httpx
import uvicorn

from engram.context.internals import DemoSubject, seed_demo
from engram.core.canonical import Json, JsonObject, canonicalize, parse_strict
from engram.core.clock import FixedClock
from engram.provider import ProviderConfig, create_app
from engram.runtime import AsyncEngramClient, EngramClient, RuntimeConfig
from engram.store import Store, open_store

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
    """Switches between clients and the provider: counts, outages, lost answers, tampering."""

    requests: Counter[str] = field(default_factory=Counter)
    sent: list[httpx.Request] = field(default_factory=list)
    down: bool = False
    tamper: Callable[[str, bytes], bytes] | None = None
    lose_next_response: set[str] = field(default_factory=set)
    bodies: dict[str, bytes] = field(default_factory=dict)

    def _before(self, request: httpx.Request) -> None:
        self.requests[request.url.path] += 1
        self.sent.append(request)
        if self.down:
            raise httpx.ConnectError("connection refused (provider down)", request=request)

    def _after(
        self, request: httpx.Request, status: int, headers: Any, body: bytes
    ) -> httpx.Response:
        if request.url.path in self.lose_next_response:
            # The provider did the work; its answer is lost on the way back.
            self.lose_next_response.discard(request.url.path)
            raise httpx.ReadError("connection reset before the answer arrived", request=request)
        if self.tamper is not None:
            body = self.tamper(request.url.path, body)
        self.bodies[request.url.path] = body
        kept = [(k, v) for k, v in headers.items() if k not in _HOP_HEADERS]
        return httpx.Response(status, headers=kept, content=body, request=request)

    def sync(self, inner: httpx.BaseTransport) -> httpx.BaseTransport:
        """A sync transport that passes through this wire to ``inner``."""
        wire = self

        class _Sync(httpx.BaseTransport):
            def handle_request(self, request: httpx.Request) -> httpx.Response:
                wire._before(request)
                response = inner.handle_request(request)
                body = response.read()
                return wire._after(request, response.status_code, response.headers, body)

        return _Sync()

    def async_(self, inner: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
        """An async transport that passes through this wire to ``inner``."""
        wire = self

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

            def _answer(self, status: int, value: Json) -> None:
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

    def _completion(self, payload: dict[str, Any]) -> JsonObject:
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


PROVIDER_URL = "http://provider.test"


@dataclass
class RealProvider:
    """engram's own provider app over an in-memory store, with the demo subject seeded.

    ``clock`` is the provider's; runtimes get their own clock (``runtime_clock``), so tests can
    put the two apart. ``wire`` sits between every client made here and the app.
    """

    store: Store
    clock: FixedClock
    runtime_clock: FixedClock
    app: Any
    demo: DemoSubject
    wire: Wire
    _blocking: BlockingASGITransport | None = None

    @classmethod
    @contextlib.contextmanager
    def start(
        cls, public_url: str = PROVIDER_URL, now: datetime | None = None, **settings: Any
    ) -> Iterator[RealProvider]:
        store = open_store("memory://")
        clock = FixedClock() if now is None else FixedClock(now)
        app = create_app(ProviderConfig(public_url=public_url, **settings), store, clock)
        demo = seed_demo(store, clock)
        clock.advance(timedelta(seconds=1))
        provider = cls(store, clock, FixedClock(clock.now()), app, demo, Wire())
        try:
            yield provider
        finally:
            if provider._blocking is not None:
                provider._blocking.close()

    def advance(self, delta: timedelta) -> None:
        """Move the provider's and the runtime's clocks together."""
        self.clock.advance(delta)
        self.runtime_clock.advance(delta)

    def config(self, **changes: Any) -> RuntimeConfig:
        values: dict[str, Any] = {
            "provider_url": PROVIDER_URL,
            "token": self.demo.token,
            "runtime_id": "test-runtime",
        }
        values.update(changes)
        return RuntimeConfig(**values)

    def sync_client(self, **changes: Any) -> EngramClient:
        """A blocking client on the runtime clock, through ``wire``, in-process."""
        if self._blocking is None:
            self._blocking = BlockingASGITransport(self.app)
        transport = self.wire.sync(self._blocking)
        return EngramClient(self.config(**changes), transport=transport, clock=self.runtime_clock)

    def async_client(self, **changes: Any) -> AsyncEngramClient:
        """An asyncio client on the runtime clock, through ``wire``, in-process."""
        transport = self.wire.async_(httpx.ASGITransport(app=self.app))
        return AsyncEngramClient(
            self.config(**changes), transport=transport, clock=self.runtime_clock
        )

    def belief_id(self, category: str) -> str:
        return next(b.id for b in self.demo.beliefs if b.category == category)


__all__ = [
    "PROVIDER_URL",
    "BlockingASGITransport",
    "LoopbackServer",
    "RealProvider",
    "RecordingLLM",
    "Wire",
]
