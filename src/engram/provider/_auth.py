"""The provider's one authentication surface: bearer parsing, the guard, the 401/403 challenge.

Engram v0.1 "Error Code Reference" (``unauthorized``, ``token_expired``, ``forbidden``) and RFC 6750
(the Bearer scheme and its ``WWW-Authenticate`` challenge); ``docs/spec/context-provider.md``
"Authentication and errors". Every route that needs a token, the MCP endpoint at ``/mcp`` included,
is wrapped in one :class:`AuthGuard` naming the permission it needs; the guard reads the
``Authorization`` header once (:func:`bearer_token`), asks the domain's one token rule
(:func:`engram.context.internals.authorize`, through :meth:`Services.authorize`), charges the
token's rate bucket, and leaves the grant in the ASGI ``state`` for the route. A refusal is raised
and rendered by the app's error handler with :func:`challenge`, so ``/v1/context`` and ``/mcp``
answer an expired, unknown or under-privileged token with the same status, body and challenge.

Client addresses for rate limiting come from :func:`client_address`: the socket peer, or the
``X-Forwarded-For`` hop just before the first trusted proxy when the peer is a trusted proxy
(``ENGRAM_TRUSTED_PROXIES``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from engram.context import Permission
from engram.errors import AuthError, MissingCredentials, TokenExpired, Unauthorized

REALM = "engram"
MAX_TOKEN_CHARS = 200  # far above eng_ + 43 characters; a longer value is not worth hashing

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` value (scheme case-insensitive, RFC
    7235 §2.1). MissingCredentials without a Bearer credential, Unauthorized when it is empty
    or absurdly long."""
    if not authorization:
        raise MissingCredentials("token missing or invalid")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise MissingCredentials("token missing or invalid")
    token = token.strip()
    if not token or len(token) > MAX_TOKEN_CHARS:
        raise Unauthorized("token missing or invalid")
    return token


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lowercase bytes) in the ASGI scope, or None."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def challenge(error: AuthError) -> str:
    """The ``WWW-Authenticate`` value for a refusal (RFC 6750 §3): no error code when no
    credential was presented, ``invalid_token`` for an unknown, revoked or expired one,
    ``insufficient_scope`` for a valid token without the permission."""
    if isinstance(error, MissingCredentials):
        return f'Bearer realm="{REALM}"'
    if isinstance(error, Unauthorized | TokenExpired):
        return f'Bearer realm="{REALM}", error="invalid_token"'
    return f'Bearer realm="{REALM}", error="insufficient_scope"'


def parse_trusted_proxies(text: str) -> tuple[Network, ...]:
    """``ENGRAM_TRUSTED_PROXIES``: comma-separated addresses or CIDR networks."""
    networks: list[Network] = []
    for item in text.split(","):
        item = item.strip()
        if item:
            networks.append(ipaddress.ip_network(item, strict=False))
    return tuple(networks)


def _trusted(address: str, proxies: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(scope: Scope, proxies: Sequence[Network]) -> str:
    """Who is calling, for per-address limits.

    The socket peer, unless the peer is a trusted proxy: then ``X-Forwarded-For`` is read from
    the right (the hop each proxy appended), skipping trusted proxies, and the first other hop
    is the client. Without trusted proxies the header is ignored: anyone can write it.
    """
    client = scope.get("client")
    peer = str(client[0]) if client else "unknown"
    if not proxies or not _trusted(peer, proxies):
        return peer
    forwarded = header(scope, b"x-forwarded-for")
    if not forwarded:
        return peer
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop[:64]
    return hops[0][:64] if hops else peer


class AuthGuard:
    """ASGI wrapper of one route: a token with ``permission`` before ``app`` sees the request.

    The app's ``state.services`` (:class:`~engram.provider._services.Services`) authenticates;
    the guard is built before the services exist, so it looks them up per request.
    """

    def __init__(self, app: ASGIApp, permission: Permission) -> None:
        self.app = app
        self.permission = permission

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        services: Any = scope["app"].state.services
        state: dict[str, Any] = scope.setdefault("state", {})
        raw = bearer_token(header(scope, b"authorization"))
        grant, version = await services.authorize(raw, self.permission, state)
        state["grant"] = grant
        state["state_version"] = version
        await self.app(scope, receive, send)


__all__ = [
    "AuthGuard",
    "bearer_token",
    "challenge",
    "client_address",
    "header",
    "parse_trusted_proxies",
]
