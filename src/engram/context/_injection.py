"""``system_prompt_injection``: the text a runtime puts into its LLM system prompt.

Format (``docs/spec/context-export.md``, deterministic for a given state and scope)::

    User: <display_name> (<timezone>).
    Known about the user (scope <scope>):
    - [<category>] <statement> (confidence <c.cc>)
    ...
    (<n> more beliefs omitted to fit the size budget.)

With no beliefs it is the first line alone, exactly as the spec's minimal fixture
(``User: Test User (UTC).``). Beliefs are ordered by confidence (highest first), then by
``updated_at`` (newest first), then by id. The whole text is at most ``budget`` characters
(default 4000, about 1000 tokens): beliefs that do not fit are dropped from the end and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from engram.context._model import Belief
from engram.core.clock import format_instant_precise

DEFAULT_BUDGET = 4000
_MIN_BUDGET = 600


class InjectionItem(NamedTuple):
    """What the injection shows of one belief; ``updated`` is its ``updated_at`` in the stored
    precise form, which sorts as text in time order."""

    id: str
    category: str
    statement: str
    confidence: float
    updated: str


def _order(items: Sequence[InjectionItem]) -> list[InjectionItem]:
    by_id = sorted(items, key=lambda b: b.id)
    by_time = sorted(by_id, key=lambda b: b.updated, reverse=True)
    return sorted(by_time, key=lambda b: b.confidence, reverse=True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def render_injection(
    display_name: str,
    timezone: str,
    scope: str,
    beliefs: Sequence[Belief],
    budget: int = DEFAULT_BUDGET,
) -> str:
    """Render the injection text for these (already scope-filtered) beliefs."""
    items = [
        InjectionItem(
            b.id, b.category, b.statement, b.confidence, format_instant_precise(b.updated_at)
        )
        for b in beliefs
    ]
    return render_injection_items(display_name, timezone, scope, items, budget)


def render_injection_items(
    display_name: str,
    timezone: str,
    scope: str,
    beliefs: Sequence[InjectionItem],
    budget: int = DEFAULT_BUDGET,
) -> str:
    """:func:`render_injection` from :class:`InjectionItem` rows (the export's fast path, which
    reads belief rows without building :class:`Belief` objects)."""
    budget = max(budget, _MIN_BUDGET)
    head = _clip(f"User: {display_name} ({timezone}).", budget)
    if not beliefs:
        return head
    lines = [head, f"Known about the user (scope {scope}):"]
    used = sum(len(line) + 1 for line in lines)
    ordered = _order(beliefs)
    kept = 0
    for belief in ordered:
        line = f"- [{belief.category}] {belief.statement} (confidence {belief.confidence:.2f})"
        # Reserve room for the omission note so the total never exceeds the budget.
        reserve = 64 if kept + 1 < len(ordered) else 0
        if used + len(line) + 1 + reserve > budget:
            break
        lines.append(line)
        used += len(line) + 1
        kept += 1
    omitted = len(ordered) - kept
    if omitted:
        lines.append(f"({omitted} more beliefs omitted to fit the size budget.)")
    return "\n".join(lines)


__all__ = ["DEFAULT_BUDGET", "InjectionItem", "render_injection", "render_injection_items"]
