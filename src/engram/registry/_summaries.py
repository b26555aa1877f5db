"""How each registry artifact type is verified and projected into its index entry: the one
per-kind piece of behaviour beside the facts in ``_layout.ARTIFACTS`` (issue 28).

Every summariser takes ``(root, relative, *, trust, now, source=None)``; a cartridge's also takes
the level resolver, which only the index passes.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Protocol

from engram.registry._artifacts import Summary, summarize_cartridge
from engram.registry._documents import summarize_graph, summarize_workflow
from engram.registry._layout import AGENT, AGENT_GRAPH, WORKFLOW
from engram.trust import TrustRegistry


class Summarize(Protocol):
    def __call__(
        self,
        root: Path,
        relative: str | None,
        *,
        trust: TrustRegistry | None,
        now: datetime,
        source: Path | None = None,
    ) -> Summary: ...


SUMMARIZE: dict[str, Summarize] = {
    AGENT: summarize_cartridge,
    WORKFLOW: summarize_workflow,
    AGENT_GRAPH: summarize_graph,
}
"""The summariser of each artifact type (every one of ``ARTIFACTS`` has one: a test checks)."""

__all__ = ["SUMMARIZE", "Summarize"]
