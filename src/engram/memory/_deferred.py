"""An engine opened when it is first used, for a server that must answer before it needs one.

``engram mcp`` is started by an agent host at every session start and must answer
``initialize`` and ``tools/list`` at once; those need only the seat's manifest (the tool
descriptions name its kinds and rings). Opening the engine loads numpy and tantivy and migrates
the store, so the stdio server holds a :func:`deferred_engine` instead: ``spec`` is there from the
start, and the first other attribute a tool reads opens the real engine (once, under a lock: the
MCP server runs tools on worker threads). Issue 33, docs/spec/mcp.md "Start-up".
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from engram.memory._engine import MemoryEngine
    from engram.memory._manifest import OteSpec


class _Deferred:
    def __init__(self, spec: OteSpec, open_engine: Callable[[], MemoryEngine]) -> None:
        self.spec = spec
        self._open = open_engine
        self._engine: MemoryEngine | None = None
        self._lock = threading.Lock()

    def _opened(self) -> MemoryEngine:
        with self._lock:
            if self._engine is None:
                self._engine = self._open()
            return self._engine

    def __getattr__(self, name: str) -> Any:  # only names not set in __init__ come here
        if name.startswith("_"):
            # Private and special names are never the engine's: copy.copy (subject_view) asks
            # a half-built copy for __setstate__, whose _lock is not there yet.
            raise AttributeError(name)
        return getattr(self._opened(), name)


def deferred_engine(spec: OteSpec, open_engine: Callable[[], MemoryEngine]) -> MemoryEngine:
    """A stand-in for ``open_engine()``'s engine whose ``spec`` is ``spec`` and whose every other
    attribute is the real engine's, opened by ``open_engine`` on first use."""
    return cast("MemoryEngine", _Deferred(spec, open_engine))


__all__ = ["deferred_engine"]
