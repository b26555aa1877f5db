"""The subject's verified context as MCP resources: ``engram://context`` and ``…/{scope}``.

Beyond engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) (issue 7, ``docs/spec/mcp.md`` "Context
resources"): an MCP client can read the same signed export and system prompt a runtime would inject.
The export is fetched from an Engram provider and verified by :mod:`engram.runtime` (Ed25519 over
the RFC 8785 bytes, checked with :mod:`engram.core` against the provider's published keys; expiry
and the 24 h lifetime cap too) before a byte of it is served. Nothing here signs or builds exports:
the provider is the only issuer, so there is exactly one path to a signed context.

Over stdio the provider and token are configured (``ENGRAM_PROVIDER_URL`` + ``ENGRAM_TOKEN``);
over Streamable HTTP under ``engram serve`` the caller's own bearer token is used against the
provider in the same process, so each caller sees its own subject.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from engram.core.clock import Clock, format_instant
from engram.core.jsonio import dumps_text
from engram.errors import Unauthorized

if TYPE_CHECKING:  # the runtime client and httpx load at the first resource read (issue 33)
    import httpx

    from engram.runtime import ContextView

CONTEXT_URI = "engram://context"
CONTEXT_TEMPLATE = "engram://context/{scope}"
RUNTIME_ID = "engram-mcp"

#: The bearer token of the HTTP request being served (set per MCP message by the server's
#: middleware; None over stdio).
CALLER_TOKEN: ContextVar[str | None] = ContextVar("engram_mcp_caller_token", default=None)
#: Whom the HTTP request acts for: (subject id, actor) from its token (docs/spec/mcp.md
#: "Whose memory"); None over stdio, where the server's own subject (or the seat) is used.
CALLER: ContextVar[tuple[str, str] | None] = ContextVar("engram_mcp_caller", default=None)


class ContextSource(Protocol):
    """Where verified context comes from."""

    def describe(self) -> str: ...

    async def fetch(self, scope: str | None) -> ContextView: ...


class ProviderContext:
    """Fetch ``/v1/context`` from a provider and verify it with the runtime SDK.

    ``token`` None means "the caller's": the bearer token of the HTTP request being served.
    ``transport`` (a factory, so it can be bound after the provider app exists) lets the mount
    under ``engram serve`` reach its own provider in process instead of over the network.
    """

    def __init__(
        self,
        provider_url: str,
        token: str | None = None,
        *,
        transport: Callable[[], httpx.AsyncBaseTransport] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.provider_url = provider_url
        self._token = token
        self._transport = transport
        self._clock = clock

    def describe(self) -> str:
        whose = "configured token" if self._token else "caller's bearer token"
        return f"{self.provider_url} ({whose})"

    async def fetch(self, scope: str | None) -> ContextView:
        token = self._token or CALLER_TOKEN.get()
        if not token:
            raise Unauthorized("no bearer token to ask the provider with")
        from engram.runtime import AsyncEngramClient, RuntimeConfig

        config = RuntimeConfig(
            provider_url=self.provider_url,
            token=token,
            runtime_id=RUNTIME_ID,
            user_agent=RUNTIME_ID,
        )
        transport = self._transport() if self._transport is not None else None
        async with AsyncEngramClient(config, transport=transport, clock=self._clock) as client:
            return await client.fetch(scope)


def context_document(view: ContextView) -> str:
    """What a resource read returns: the verification facts, the prompt and the signed export."""
    body: dict[str, Any] = {
        "verified": True,
        "kid": view.kid,
        "subject_id": view.subject_id,
        "display_name": view.display_name,
        "scope": view.scope,
        "issued_at": format_instant(view.issued_at),
        "expires_at": format_instant(view.expires_at),
        "system_prompt": view.system_prompt(),
        "export": dict(view.export),
    }
    return dumps_text(body, indent=2)


__all__ = [
    "CALLER",
    "CALLER_TOKEN",
    "CONTEXT_TEMPLATE",
    "CONTEXT_URI",
    "ContextSource",
    "ProviderContext",
    "context_document",
]
