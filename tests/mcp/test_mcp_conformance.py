"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance@0.1.13``) against
``/mcp`` of the provider app, served by uvicorn on loopback.

Only the scenarios that apply to any server are run; the others assume the suite's reference
server's tools (``test_simple_text`` and friends). The suite cannot send an Authorization header,
so a one-line ASGI shim in front of the app adds the bearer token, as a configured client would;
the token check itself is the real one. docs/spec/mcp.md "Transports".
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_kit import LoopbackServer, write_seat
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.cli.internals import provider_app_with_mcp
from engram.context.internals import seed_demo
from engram.core.clock import SystemClock
from engram.mcp import SeatSource
from engram.provider import ProviderConfig
from engram.store import open_store

SUITE = "@modelcontextprotocol/conformance@0.1.13"
SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "dns-rebinding-protection",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("npx") is None, reason="npx (Node.js) is needed for the MCP conformance suite"
    ),
]


class _WithToken:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.header = (b"authorization", f"Bearer {token}".encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, "headers": [*scope["headers"], self.header]}
        await self.app(scope, receive, send)


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[str]:
    store = open_store(f"sqlite:///{tmp_path / 'engram.db'}")
    clock = SystemClock()
    demo = seed_demo(store, clock)
    seat = SeatSource("--ote", write_seat(tmp_path / "repo"))
    server = LoopbackServer(None, lifespan="on")
    app = provider_app_with_mcp(ProviderConfig(public_url=server.url), store, clock, seat)
    server.app = _WithToken(app, demo.token)
    with server:
        yield f"{server.url}/mcp"
    store.close()


@pytest.mark.req("engram.mcp.http-conformance")
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_mcp_endpoint_passes_the_conformance_scenario(endpoint: str, scenario: str) -> None:
    result = subprocess.run(
        ["npx", "-y", SUITE, "server", "--url", endpoint, "--scenario", scenario],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout
