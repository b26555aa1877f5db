"""engram.mcp: the six engram tools and the verified-context resources for any MCP client.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) "Engram MCP Tools (engram mcp)"; our
decisions where it is silent (limits, errors, the seat, the context resources, HTTP auth):
``docs/spec/mcp.md``.
:func:`create_server` builds an ``MCPServer`` over one seat's :class:`~engram.memory.MemoryEngine`;
``engram mcp`` runs it over stdio, and :func:`http_endpoint` mounts it at ``/mcp`` of
``engram serve`` behind the provider's bearer-token auth. Each tool is a thin adapter over one
engine function; nothing here reads the environment (the CLI does, via :func:`locate_seat`).
"""

from engram.mcp._context import (
    CALLER_TOKEN,
    CONTEXT_TEMPLATE,
    CONTEXT_URI,
    ContextSource,
    ProviderContext,
    context_document,
)
from engram.mcp._http import MCP_PATH, REQUIRED_PERMISSION, McpHttp, http_endpoint
from engram.mcp._server import INSTRUCTIONS, SERVER_NAME, TOOL_NAMES, create_server
from engram.mcp._tools import ATTESTED_REFUSAL, EngramTools, model_signals
from engram.memory import SeatSource, load_seat, locate_seat

__all__ = [
    "ATTESTED_REFUSAL",
    "CALLER_TOKEN",
    "CONTEXT_TEMPLATE",
    "CONTEXT_URI",
    "INSTRUCTIONS",
    "MCP_PATH",
    "REQUIRED_PERMISSION",
    "SERVER_NAME",
    "TOOL_NAMES",
    "ContextSource",
    "EngramTools",
    "McpHttp",
    "ProviderContext",
    "SeatSource",
    "context_document",
    "create_server",
    "http_endpoint",
    "load_seat",
    "locate_seat",
    "model_signals",
]
