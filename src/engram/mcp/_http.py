"""The engram MCP server over Streamable HTTP, behind the provider's bearer-token auth.

Issue 7 / ``docs/spec/mcp.md`` "Streamable HTTP": ``engram serve`` adds :attr:`McpHttp.route`
to the provider app (``create_app(..., routes=[...], lifespan=...)``) so ``POST /mcp`` speaks
MCP. Every request is authenticated exactly as the provider authenticates its own routes
(:func:`engram.context.authenticate_token`: hashed bearer tokens, expiry, revocation) and must
carry the ``admin`` permission, because the tools write the seat's memory, which belongs to the
host rather than to one subject. Refusals use the spec's error shape
``{"error": {"code", "message", "status"}}`` with ``WWW-Authenticate: Bearer``.

The session manager runs stateless with JSON responses: every POST stands alone, so any of
``engram serve --workers N`` can answer it, and nothing waits on a server-to-client stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.context import Permission, TokenGrant, authenticate_token
from engram.core.canonical import canonicalize
from engram.core.clock import Clock
from engram.errors import AuthError, Forbidden, TokenExpired, Unauthorized
from engram.store import Store

MCP_PATH = "/mcp"
REQUIRED_PERMISSION = Permission.ADMIN
MAX_BODY_BYTES = 1_048_576
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class McpHttp:
    """What the provider app needs: the ``/mcp`` route and the lifespan that runs its sessions."""

    route: Route
    lifespan: Callable[[Any], AbstractAsyncContextManager[None]]


def _bearer(scope: Scope) -> str:
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            text = bytes(value).decode("latin-1")
            if text[:7].lower() == "bearer ":
                return text[7:].strip()
    return ""


class BearerAuth:
    """ASGI wrapper: the provider's token check (and ``admin``) before any MCP byte is read."""

    def __init__(self, app: ASGIApp, store: Store, clock: Clock) -> None:
        self.app = app
        self.store = store
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        try:
            grant = await anyio.to_thread.run_sync(self._authorize, _bearer(scope))
        except AuthError as e:
            state["error_code"] = e.code
            await _refuse(e, send)
            return
        # The provider's access log names the subject; it never sees the token.
        state["subject_id"] = grant.subject_id
        await self.app(scope, receive, send)

    def _authorize(self, raw: str) -> TokenGrant:
        grant = authenticate_token(self.store, self.clock, raw)
        if not grant.allows(REQUIRED_PERMISSION):
            raise Forbidden(
                f"the MCP endpoint needs a token with the {REQUIRED_PERMISSION.value!r} "
                "permission (its tools write the seat's memory)"
            )
        return grant


async def _refuse(error: AuthError, send: Send) -> None:
    body = canonicalize(error.to_wire())
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    if isinstance(error, Unauthorized | TokenExpired):
        kind = "invalid_token" if isinstance(error, TokenExpired) else "invalid_request"
        challenge = f'Bearer realm="engram", error="{kind}"'
        headers.append((b"www-authenticate", challenge.encode()))
    await send({"type": "http.response.start", "status": error.http_status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


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
    server: MCPServer,
    store: Store,
    clock: Clock,
    *,
    public_netlocs: Sequence[str],
    path: str = MCP_PATH,
) -> McpHttp:
    """The ``/mcp`` route (auth-wrapped Streamable HTTP) and the lifespan that must run it."""
    # streamable_http_app creates the server's session manager; its own Starlette wrapper is
    # not used, because the route joins the provider's app and middleware instead.
    server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        json_response=True,
        max_request_body_size=MAX_BODY_BYTES,
        transport_security=allowed_hosts(public_netlocs),
    )
    manager = server.session_manager
    endpoint = BearerAuth(StreamableHTTPASGIApp(manager), store, clock)

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return McpHttp(Route(path, endpoint=endpoint), lifespan)


__all__ = [
    "MCP_PATH",
    "REQUIRED_PERMISSION",
    "BearerAuth",
    "McpHttp",
    "allowed_hosts",
    "http_endpoint",
]
