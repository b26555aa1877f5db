"""Helpers for the MCP tests: a seat directory, the real ``engram mcp`` subprocess, the provider
app with ``/mcp`` in process, and a loopback uvicorn for subprocesses that need a provider.

Everything is driven with the official MCP Python client (``mcp.client``), as a user would.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import httpx2
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent
from starlette.applications import Starlette

from engram.memory import default_manifest_text

# The ``engram`` console script, run by this interpreter.
ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]
HTTP_BASE = "http://testserver"


def write_seat(directory: Path) -> Path:
    """A repository-like directory with the built-in manifest at .engram/ote.toml."""
    manifest = directory / ".engram" / "ote.toml"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    # The model-free seat: new seats get the bundled MiniLM model, these tests are not about it.
    text = default_manifest_text().replace(
        'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
    )
    manifest.write_text(text, encoding="utf-8")
    return manifest


def server_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The subprocess environment: this one without engram settings that would leak in, but
    with the test's own ENGRAM_HOME (tests/conftest.py), so the server's index folder and any
    default seat stay out of the ``~/.engram`` of whoever runs the suite."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k == "ENGRAM_HOME" or not k.startswith(("ENGRAM_", "THALAMUS_"))
    }
    env.update(extra or {})
    return env


@asynccontextmanager
async def stdio_session(
    cwd: Path, database: str, *args: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """``engram mcp --database DB ARGS`` as a real subprocess, with an initialised session."""
    params = StdioServerParameters(
        command=ENGRAM[0],
        args=[*ENGRAM[1:], "mcp", "--database", database, *args],
        env=server_environment(env),
        cwd=cwd,
    )
    with (cwd / "engram-mcp.stderr").open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(app: Starlette, token: str | None) -> AsyncIterator[ClientSession]:
    """An MCP session over Streamable HTTP to ``app``'s /mcp, in process (lifespan running)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url=HTTP_BASE, headers=headers) as client,
        streamable_http_client(f"{HTTP_BASE}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def structured(result: CallToolResult) -> dict[str, Any]:
    """The tool's structured result; fails the test with the error text if it was an error."""
    assert not result.is_error, error_text(result)
    assert result.structured_content is not None
    return dict(result.structured_content)


def error_text(result: CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


class LoopbackServer:
    """uvicorn serving ``app`` on a pre-bound 127.0.0.1 socket in a thread: connections queue
    in the socket's backlog until uvicorn accepts them, so nothing waits for start-up. The URL
    is known before the app is set (an app may need its own public URL)."""

    def __init__(self, app: Any, *, lifespan: Literal["on", "off"] = "off") -> None:
        self.app = app
        self._lifespan = lifespan
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan=self._lifespan, access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        assert self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


__all__ = [
    "ENGRAM",
    "HTTP_BASE",
    "LoopbackServer",
    "error_text",
    "http_session",
    "server_environment",
    "stdio_session",
    "structured",
    "write_seat",
]
