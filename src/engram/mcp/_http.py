"""The engram MCP server over Streamable HTTP, for the provider to serve behind its own auth.

Issue 7 / ``docs/spec/mcp.md`` "Streamable HTTP": ``engram serve`` hands :attr:`McpHttp.protected`
to the provider app (``create_app(..., protected=[...], lifespan=...)``), which serves ``/mcp``
behind the same AuthGuard as every provider route: the same bearer parsing, the same token rule
(:func:`engram.context.internals.authorize`), the same per-token rate limit and the same 401/403
challenge. The endpoint needs the ``memory`` permission (or ``admin``), which grants nothing over
the subject's beliefs: an agent given an MCP token cannot skip the review page. This module is MCP
only: it builds the transport and says which permission it needs.

The session manager runs stateless with JSON responses: every POST stands alone, so any of
``engram serve --workers N`` can answer it, and nothing waits on a server-to-client stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from engram.context import Permission

MCP_PATH = "/mcp"
REQUIRED_PERMISSION = Permission.MEMORY
MAX_BODY_BYTES = 1_048_576
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class McpHttp:
    """What the provider app needs: the MCP ASGI app at ``path``, the permission it needs, and
    the lifespan that runs its sessions."""

    path: str
    app: ASGIApp
    lifespan: Callable[[Any], AbstractAsyncContextManager[None]]
    permission: Permission = REQUIRED_PERMISSION

    @property
    def protected(self) -> tuple[str, ASGIApp, Permission]:
        """``(path, app, permission)`` for ``create_app(protected=[...])``."""
        return self.path, self.app, self.permission


def allowed_hosts(public_netlocs: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection: the provider's public host(s) and loopback, any port."""
    hosts: list[str] = []
    origins: list[str] = []
    for netloc in public_netlocs:
        hosts.append(netloc)
        origins += [f"http://{netloc}", f"https://{netloc}"]
    for host in LOOPBACK_HOSTS:
        hosts.append(f"{host}:*")
        origins.append(f"http://{host}:*")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def http_endpoint(
    server: MCPServer, *, public_netlocs: Sequence[str], path: str = MCP_PATH
) -> McpHttp:
    """The Streamable HTTP app for ``server`` at ``path`` and the lifespan that must run it."""
    # streamable_http_app creates the server's session manager; its own Starlette wrapper is
    # not used, because the endpoint joins the provider's app, middleware and auth instead.
    server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        json_response=True,
        max_request_body_size=MAX_BODY_BYTES,
        transport_security=allowed_hosts(public_netlocs),
    )
    manager = server.session_manager

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return McpHttp(path, StreamableHTTPASGIApp(manager), lifespan)


__all__ = ["MCP_PATH", "REQUIRED_PERMISSION", "McpHttp", "allowed_hosts", "http_endpoint"]
