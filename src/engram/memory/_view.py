"""One engine seen through another seat manifest, sharing its store, index and remote stages.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.1): a seat mounts rings and recall reads
only the mounted ones. An adapter that keeps its own rings (the LangGraph store keeps one per
namespace, engram.integrations.langgraph) recalls and records through a manifest it builds per
call; opening an engine per call would load the retrieval index each time, so the view shares
the engine's index and lock (the index holds every ring; the manifest only chooses which are
read).
"""

from __future__ import annotations

import copy

from engram.memory._engine import MemoryEngine
from engram.memory._manifest import OteSpec
from engram.memory._owner import subject_spec


def seat_view(engine: MemoryEngine, spec: OteSpec) -> MemoryEngine:
    """``engine`` with ``spec`` as its seat manifest; the index, lock and remote stages shared."""
    view = copy.copy(engine)  # a shallow copy: the same index object, lock, store and stages
    view.spec = spec
    view.seat_spec = spec
    view.subject = None
    return view


def subject_view(engine: MemoryEngine, subject_id: str | None) -> MemoryEngine:
    """``engine`` acting for ``subject_id``: the shared rings read-only, the subject's own ring
    in place of the seat's M4 (``engram.memory._owner``); ``engine`` itself for None (the seat).

    A view of a view acts for the new subject over the seat's manifest, never over another
    subject's: the seat's spec is kept on every view."""
    if subject_id is None:
        return engine
    # Read before the copy: a deferred engine (engram mcp) opens here, so the copy shares the
    # opened engine instead of opening one of its own.
    seat_spec = engine.seat_spec
    view = copy.copy(engine)
    view.spec = subject_spec(seat_spec, subject_id)
    view.subject = subject_id
    return view


__all__ = ["seat_view", "subject_view"]
