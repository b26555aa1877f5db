"""``engram_instructions``: an OpenAI Agents SDK agent's instructions from verified Engram context.

The Agents SDK (openai-agents, ``Agent.instructions``) takes a function ``(run_context, agent)
-> str`` called before every model call. This one asks the runtime SDK (``engram.runtime``) for
the subject's context each time: fetched, verified (Ed25519 over RFC 8785 bytes under a
published key, unexpired, the scope asked for), refreshed before it expires, and only then put
after the agent's own instructions. An export that cannot be verified raises the runtime's
error (``SignatureInvalid``, ``ExportExpired``, …) and the run stops before any model is called:
unverified context never reaches the instructions (Engram v0.1 Conformance, engramspec.org, Tier
1 "rejects invalid signatures", "injects system_prompt_injection"). docs/integrations.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from engram.runtime import AsyncEngramClient, EngramClient, system_prompt_with_context

Instructions = Callable[[object, object], Awaitable[str]]
"""The SDK's dynamic-instructions shape, ``(run_context, agent) -> str``; neither is read, so
``object`` (a function taking ``object`` fits wherever the SDK's own types are asked for)."""


def engram_instructions(client: AsyncEngramClient | EngramClient, base: str = "") -> Instructions:
    """Dynamic instructions: ``base``, then the verified context under its heading.

    ``client`` is an ``engram.runtime`` client (an ``AsyncEngramClient`` is awaited on the
    agent's loop; a blocking ``EngramClient`` runs on a worker thread).
    """

    async def instructions(run_context: object, agent: object) -> str:  # noqa: ARG001 - the SDK's shape
        if isinstance(client, AsyncEngramClient):
            view = await client.context()
        else:
            view = await asyncio.to_thread(client.context)
        return system_prompt_with_context(base, view)

    return instructions


__all__ = ["Instructions", "engram_instructions"]
