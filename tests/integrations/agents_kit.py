"""Test peers for the Agents SDK adapter: a fake OpenAI-compatible model and a real provider.

:class:`FakeChatModel` speaks ``POST /v1/chat/completions`` on 127.0.0.1 (what the Agents SDK's
``OpenAIChatCompletionsModel`` calls through the ``openai`` client), written from the OpenAI
API's published shape without engram's code, and records every request. :func:`provider_on_loopback`
serves engram's own context provider (the demo subject seeded) with uvicorn on a loopback port,
so the runtime SDK fetches and verifies real signed exports over HTTP.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import uvicorn

from engram.context import DemoSubject, seed_demo
from engram.core.clock import FixedClock
from engram.provider import ProviderConfig, create_app
from engram.store import open_store


@dataclass
class FakeChatModel:
    """``/v1/chat/completions`` answering ``"reply <n>"``; every request body is kept."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def system_prompts(self) -> list[str]:
        return [
            next(m["content"] for m in r["messages"] if m["role"] == "system")
            for r in self.requests
        ]

    def start(self) -> FakeChatModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                model.requests.append(body)
                n = len(model.requests)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "created": 1767261600,
                        "model": body.get("model", "fake"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": f"reply {n}"},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )

            def _send(self, status: int, value: Any) -> None:
                data = json.dumps(value).encode()  # noqa: TID251 - a peer without engram code
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@dataclass(frozen=True)
class Provider:
    url: str
    demo: DemoSubject


@contextlib.contextmanager
def provider_on_loopback() -> Iterator[Provider]:
    """engram's provider over an in-memory store, served by uvicorn on 127.0.0.1."""
    store = open_store("memory://")
    clock = FixedClock(datetime.now(UTC))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = create_app(ProviderConfig(public_url=url), store, clock)
    demo = seed_demo(store, clock)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    runner = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    runner.start()
    try:
        yield Provider(url, demo)
    finally:
        server.should_exit = True
        runner.join(timeout=10)
        sock.close()
        store.close()


Tamper = Callable[[str, bytes], bytes]


class TamperingTransport(httpx.AsyncBaseTransport):
    """Real HTTP to the provider, with each response body passed through ``tamper(path, body)``."""

    def __init__(self, tamper: Tamper) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._tamper = tamper

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        body = self._tamper(request.url.path, await response.aread())
        hop = ("content-length", "content-encoding", "transfer-encoding")  # the body is decoded
        headers = [(k, v) for k, v in response.headers.items() if k.lower() not in hop]
        return httpx.Response(response.status_code, headers=headers, content=body, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


__all__ = ["FakeChatModel", "Provider", "TamperingTransport", "provider_on_loopback"]
