"""engram.mcp's building blocks for benchmarks and tests: not public API.

The declarations test compares what the server lists with each tool's declaration, and the MCP
bench runs a baseline server with every tool on a worker thread; both need the tool class and
the declaration helpers, which ``engram.mcp``'s API does not offer. They import them from here
rather than from the private modules. Nothing here is a stable API: use ``engram.mcp``.
"""

from __future__ import annotations

from engram.mcp._declare import SeatWords, declared_tools
from engram.mcp._tools import EngramTools

__all__ = ["EngramTools", "SeatWords", "declared_tools"]
