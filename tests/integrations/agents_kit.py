"""Test peers for the Agents SDK adapter: the fake model's reading aid and a real provider.

The fake model is tests/conftest.py's ``openai_peer``: ``POST /v1/chat/completions`` on
127.0.0.1, what the Agents SDK's ``OpenAIChatCompletionsModel`` calls through the ``openai``
client. :func:`provider_on_loopback` serves engram's own context provider (the demo subject
seeded) with uvicorn on a loopback port, so the runtime SDK fetches and verifies real signed
exports over HTTP; :class:`TamperingTransport` changes its answers in flight.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx
import uvicorn

from engram.context.internals import DemoSubject, seed_demo
from engram.core.clock import FixedClock
from engram.provider import ProviderConfig, create_app
from engram.store import open_store


class ChatPeer(Protocol):
    """The ``openai_peer`` of tests/conftest.py: an OpenAI-compatible server on loopback,
    written without engram's code, answering ``re: <last user message>`` and recording each
    request as (path, body)."""

    @property
    def url(self) -> str: ...

    requests: list[tuple[str, Any]]


def system_prompts(peer: ChatPeer) -> list[str]:
    """The system message of every chat completion request the peer received, in order."""
    return [
        next(m["content"] for m in body["messages"] if m["role"] == "system")
        for path, body in peer.requests
        if path == "/v1/chat/completions"
    ]


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


__all__ = ["ChatPeer", "Provider", "TamperingTransport", "provider_on_loopback", "system_prompts"]
