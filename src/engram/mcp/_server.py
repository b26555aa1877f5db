"""``create_server``: one MCPServer with the six engram tools and the context resources.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) ("Engram MCP Tools (engram mcp)");
``docs/spec/mcp.md`` documents the tool contract, the limits, the resources and both transports. The
same server object is run over stdio (``engram mcp``) and mounted over Streamable HTTP
(``engram serve``, see ``_http``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import mcp.types as mt
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from engram import __version__
from engram.errors import EngramError
from engram.mcp._context import (
    CALLER_TOKEN,
    CONTEXT_TEMPLATE,
    CONTEXT_URI,
    ContextSource,
    context_document,
)
from engram.mcp._tools import EngramTools, tool_descriptions
from engram.memory import Distiller, MemoryEngine, SeatSource

SERVER_NAME = "engram"
TOOL_NAMES = (
    "engram_recall",
    "engram_record",
    "engram_distill",
    "engram_complete",
    "engram_outcome",
    "engram_status",
)
INSTRUCTIONS = (
    "engram is this agent's long-term memory for one seat. Call engram_recall before working on "
    "something you may have met before; engram_record what a later session should know; "
    "engram_outcome after a recalled memory helped or misled you; engram_status to see the seat. "
    "Read engram://context for the user's verified context (signed by their Engram provider)."
)
NO_PROVIDER = (
    "no context provider is configured: set ENGRAM_PROVIDER_URL and ENGRAM_TOKEN for "
    "`engram mcp`, or use the /mcp endpoint of `engram serve`"
)


def _bearer(request: Any) -> str | None:
    headers = getattr(request, "headers", None)
    value = headers.get("authorization") if headers is not None else None
    if isinstance(value, str) and value[:7].lower() == "bearer ":
        return value[7:].strip() or None
    return None


class _Guard:
    """MCP middleware: exposes the HTTP caller's token to the resources for one message, and
    refuses tool calls that carry arguments the tool does not have (a misspelt ``memory_id``
    must not be silently dropped)."""

    def __init__(self, parameters: Mapping[str, frozenset[str]]) -> None:
        self.parameters = parameters

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method == "tools/call" and ctx.params is not None:
            refusal = self._unknown_arguments(ctx.params)
            if refusal is not None:
                return mt.CallToolResult(
                    content=[mt.TextContent(type="text", text=refusal)], is_error=True
                )
        reset = CALLER_TOKEN.set(_bearer(ctx.request))
        try:
            return await call_next(ctx)
        finally:
            CALLER_TOKEN.reset(reset)

    def _unknown_arguments(self, params: Mapping[str, Any]) -> str | None:
        name, arguments = params.get("name"), params.get("arguments")
        expected = self.parameters.get(name) if isinstance(name, str) else None
        if expected is None or not isinstance(arguments, dict):
            return None
        unknown = sorted(set(arguments) - expected)
        if not unknown:
            return None
        return (
            f"Error executing tool {name}: invalid_request: unknown argument {unknown[0]!r}; "
            f"{name} takes {', '.join(sorted(expected)) or 'no arguments'}"
        )


def create_server(
    engine: MemoryEngine,
    seat: SeatSource,
    *,
    context: ContextSource | None = None,
    distiller: Distiller | None = None,
) -> MCPServer:
    """The engram MCP server for one seat's engine; ``context`` feeds the context resources."""
    tools = EngramTools(engine, seat, distiller)
    server: MCPServer = MCPServer(
        SERVER_NAME,
        title="engram memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        website_url="https://engramspec.org",
        log_level="WARNING",
    )
    descriptions = tool_descriptions(engine)
    for name in TOOL_NAMES:
        server.add_tool(
            getattr(tools, name),
            name=name,
            description=descriptions[name],
            structured_output=True,
        )
    parameters = {
        name: frozenset(inspect.signature(getattr(tools, name)).parameters) for name in TOOL_NAMES
    }
    server.middleware.append(_Guard(parameters))
    _add_resources(server, context)
    return server


def _add_resources(server: MCPServer, source: ContextSource | None) -> None:
    async def read(scope: str | None) -> str:
        if source is None:
            raise ResourceError(NO_PROVIDER)
        try:
            view = await source.fetch(scope)
        except EngramError as e:
            raise ResourceError(f"{e.code}: {e.message}") from e
        return context_document(view)

    where = source.describe() if source is not None else "not configured"

    @server.resource(
        CONTEXT_URI,
        name="context",
        title="Verified context (default scope)",
        description="The subject's signed Engram export, verified against the provider's "
        f"published key, with its system prompt. Provider: {where}.",
        mime_type="application/json",
    )
    async def context_default() -> str:
        return await read(None)

    @server.resource(
        CONTEXT_TEMPLATE,
        name="context-scoped",
        title="Verified context for one scope",
        description="The same, restricted to one scope (e.g. professional, which leaves out "
        "health and financial beliefs); an unknown scope is an invalid_scope error.",
        mime_type="application/json",
    )
    async def context_scoped(scope: str) -> str:
        return await read(scope)


__all__ = ["INSTRUCTIONS", "SERVER_NAME", "TOOL_NAMES", "create_server"]
