"""engram.mcp: the six engram tools and the verified-context resources for any MCP client.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) "Engram MCP Tools (engram mcp)"; our
decisions where it is silent (limits, errors, the seat, the context resources, HTTP auth):
``docs/spec/mcp.md``.
:func:`create_server` builds an ``MCPServer`` over one seat's :class:`~engram.memory.MemoryEngine`;
``engram mcp`` runs it over stdio, and :func:`http_endpoint` mounts it at ``/mcp`` of
``engram serve`` behind the provider's bearer-token auth. Each tool is a thin adapter over one
engine function; nothing here reads the environment (the CLI does, via :func:`locate_seat`).
"""

import typing

from engram.core.lazy import lazy_attributes as _lazy_attributes

if typing.TYPE_CHECKING:
    from engram.mcp._context import ProviderContext
    from engram.mcp._http import MCP_PATH, http_endpoint
    from engram.mcp._server import create_server
    from engram.memory.internals import SeatSource, load_seat, locate_seat

# Bound on first use (PEP 562): `engram mcp` over stdio never loads the Streamable HTTP
# transport (``_http``: the SDK's HTTP session manager, starlette) nor the memory engine's
# numpy until a tool needs it (issue 33: they were most of its start-up).
_LAZY: dict[str, str] = {
    "ProviderContext": "engram.mcp._context",
    "MCP_PATH": "engram.mcp._http",
    "http_endpoint": "engram.mcp._http",
    "create_server": "engram.mcp._server",
    "SeatSource": "engram.memory.internals",
    "load_seat": "engram.memory.internals",
    "locate_seat": "engram.memory.internals",
}

__all__ = [
    "MCP_PATH",
    "ProviderContext",
    "SeatSource",
    "create_server",
    "http_endpoint",
    "load_seat",
    "locate_seat",
]

if not typing.TYPE_CHECKING:  # type checkers read the imports above: a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
