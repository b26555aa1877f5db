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

from engram.context._model import Belief

DEFAULT_BUDGET = 4000
_MIN_BUDGET = 600


def _order(beliefs: Sequence[Belief]) -> list[Belief]:
    by_id = sorted(beliefs, key=lambda b: b.id)
    by_time = sorted(by_id, key=lambda b: b.updated_at, reverse=True)
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


__all__ = ["DEFAULT_BUDGET", "render_injection"]
