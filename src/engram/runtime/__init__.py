"""engram.runtime: fetch, verify, inject, sync and correct Engram context in any LLM runtime.

The runtime side of the Engram context protocol v0.1 (https://engramspec.org), Tiers 1-3.
It depends on ``engram.core``, ``engram.errors`` and httpx only, so ``pip install
"engram-memory-stack[runtime]"`` brings no web server or database driver. docs/spec/runtime.md
holds the decisions the spec leaves open.

    from engram.runtime import EngramClient, RuntimeConfig

    config = RuntimeConfig(provider_url="https://memory.example", token=token, runtime_id="my-bot")
    with EngramClient(config) as engram:
        messages = engram.messages([{"role": "user", "content": "Plan my week"}])
"""

from engram.runtime._beliefs import Belief, build_system_prompt, render_belief
from engram.runtime._client import AsyncEngramClient, EngramClient
from engram.runtime._config import RuntimeConfig
from engram.runtime._engine import Discovery, ProposedCorrection
from engram.runtime._prompt import system_prompt_with_context, with_context
from engram.runtime._verify import PublishedKey, Verified
from engram.runtime._view import ContextView, DiffNotApplicableError, verify_export

__all__ = [
    "AsyncEngramClient",
    "Belief",
    "ContextView",
    "DiffNotApplicableError",
    "Discovery",
    "EngramClient",
    "ProposedCorrection",
    "PublishedKey",
    "RuntimeConfig",
    "Verified",
    "build_system_prompt",
    "render_belief",
    "system_prompt_with_context",
    "verify_export",
    "with_context",
]
