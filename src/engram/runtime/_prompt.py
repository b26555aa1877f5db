"""Putting verified context into what an LLM reads: OpenAI-style messages and plain prompts.

Engram v0.1 conformance, Tier 1: "Injects system_prompt_injection into LLM system prompt".
These helpers take a :class:`~engram.runtime.ContextView` (or its prompt text) and never a raw
export, so only verified, unexpired context can reach a model through them
(docs/spec/runtime.md, "Injection").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engram.runtime._view import ContextView

#: The heading that separates a runtime's own instructions from the subject's context.
CONTEXT_HEADING = "Context about the user (Engram, verified):"


def _text(context: ContextView | str) -> str:
    return context.system_prompt() if isinstance(context, ContextView) else context


def system_prompt_with_context(base: str | None, context: ContextView | str) -> str:
    """A plain system-prompt string: the runtime's ``base`` instructions, then the context.

    With no base prompt the context text is returned as the provider wrote it.
    """
    text = _text(context)
    if not base or not base.strip():
        return text
    return f"{base.rstrip()}\n\n{CONTEXT_HEADING}\n{text}"


def with_context(
    messages: Sequence[Mapping[str, Any]], context: ContextView | str
) -> list[dict[str, Any]]:
    """OpenAI-style chat messages with the context as the system message.

    A leading ``system`` message keeps its instructions and gains the context after them (some
    chat templates accept only one system message, first); otherwise a system message is put
    first. The input is not modified.
    """
    result = [dict(m) for m in messages]
    if result and result[0].get("role") == "system":
        base = result[0].get("content")
        result[0]["content"] = system_prompt_with_context(
            base if isinstance(base, str) else None, context
        )
        return result
    return [{"role": "system", "content": _text(context)}, *result]


__all__ = ["CONTEXT_HEADING", "system_prompt_with_context", "with_context"]
