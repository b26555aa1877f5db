"""Structured output of the six engram tools: the memory engine's results, described for models.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2). Each model mirrors the ``to_wire()`` of one
engine result (:mod:`engram.memory`) field for field, so the MCP ``outputSchema`` documents exactly
what the engine returns; a tool builds its answer with ``Model.model_validate(result.to_wire())``
and adds nothing of its own except ``seat`` on ``engram_status``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    # The engine is the source of truth: a field it adds later must not break the tool.
    model_config = ConfigDict(extra="allow")


class MemoryOut(_Out):
    """One stored memory."""

    id: str = Field(description="Content address: mem: + sha256 of {kind, ring_id, text}.")
    ring: str = Field(description="Ring level: M0 fleet canon … M4 this seat.")
    ring_id: str = Field(description="The mounted ring's id, e.g. repo:0123abcd… or seat:….")
    kind: str = Field(description="One of the seat's allowed_kinds.")
    text: str
    entities: list[str] = Field(description="Entities matched by the seat's entity_patterns.")
    provenance: dict[str, Any]
    thread: str = Field(description="Conversation or episode the memory belongs to ('' if none).")
    seat_id: str = Field(description="The seat that recorded it.")
    tokens: int = Field(description="Its cost against the seat's keyspace_budget_tokens.")
    alpha: float = Field(description="Beta posterior α (prior 1).")
    beta: float = Field(description="Beta posterior β (prior 1).")
    mean: float = Field(description="Posterior mean α / (α + β).")
    status: str = Field(description="candidate | graduated | held_import.")
    graduated_at: str | None
    origin: str = Field(description="local, or import (arrived in a cartridge).")
    created_at: str


class RecordOut(_Out):
    """The memory as stored; recording the same text twice returns the first one."""

    memory: MemoryOut
    created: bool = Field(description="False when identical content was already in that ring.")
    dense: str = Field(description="stored:<engine> | disabled | degraded: <reason>.")


class RecallHitOut(_Out):
    memory: MemoryOut
    score: float = Field(description="Fused relevance score (higher is better).")
    components: dict[str, float] = Field(description="Per-stage scores behind the fused score.")


class RecallOut(_Out):
    """The slate: the best memories for the query within the seat's token budget."""

    query: str
    hits: list[RecallHitOut] = Field(description="Best first, diversified by MMR.")
    stages: dict[str, str] = Field(
        description="lexical, local_vector, dense, rerank: ok | disabled | degraded: <reason>."
    )
    degraded: bool = Field(description="True when a remote stage failed open.")
    budget_tokens: int
    used_tokens: int


class TurnOut(_Out):
    """What became of one message of a conversation."""

    index: int = Field(description="The message's place in the list given (from 0).")
    status: str = Field(description="recorded | duplicate | near_duplicate | skipped.")
    memory_id: str | None = Field(
        default=None, description="The turn's memory (recorded), or the one it repeats."
    )
    speaker: str | None = Field(default=None, description="Its name, else its role.")
    occurred_at: str | None = Field(
        default=None, description="When it was said (RFC 3339 UTC), when the message says."
    )
    reason: str | None = Field(default=None, description="Why a message was skipped.")


class ConversationOut(_Out):
    """A conversation recorded: one memory per user or assistant turn, in one thread."""

    thread: str = Field(description="The thread its turns are in (recall them together).")
    ring_id: str
    counts: dict[str, int] = Field(description="messages, recorded, duplicate, … facts.")
    messages: list[TurnOut] = Field(description="One per message given, in order.")
    facts: list[RecordOut] = Field(description="Facts a model extracted (none without one).")
    extraction: str = Field(description="disabled | ok:<extractor> | degraded: <reason>.")
    dense: str = Field(description="As for engram_record; n/a when no turn was new.")


class OutcomeOut(_Out):
    """The evidence event as recorded (or, for a repeated decision_id, as first recorded)."""

    memory_id: str
    decision_id: str
    signal: str
    oracle: str = Field(description="structural | lint | rubric | model (derived from the signal).")
    delta_alpha: float = Field(description="Δα applied (model-judged signals are capped at 0.30).")
    delta_beta: float = Field(description="Δβ applied (model-judged signals are capped at 0.30).")
    alpha: float = Field(description="The memory's α after the event.")
    beta: float = Field(description="The memory's β after the event.")
    attested: bool
    principal: str | None
    reverify: bool = Field(description="Tagged for a sealed re-run (reverify_fraction).")
    duplicate: bool = Field(description="True when decision_id was already recorded.")


class VerdictOut(_Out):
    memory_id: str
    status_before: str
    status_after: str
    full_lcb: float = Field(description="Lower credible bound of the full posterior.")
    full_samples: float
    strong_lcb: float = Field(description="Lower credible bound of B_strong (attested evidence).")
    strong_samples: float
    nominated: bool
    reason: str


class CompleteOut(_Out):
    """The graduation rule applied to one memory or to every mounted memory."""

    graduation: str = Field(description="open | blocked (no attested evidence).")
    applied: bool
    verdicts: list[VerdictOut]


class SeatOut(_Out):
    origin: str = Field(
        description="--ote | ENGRAM_OTE | .engram/ote.toml | default (engram serve's own, "
        "under $ENGRAM_HOME): how it was found."
    )
    path: str = Field(description="Absolute path of the seat manifest in use.")


class ForgetOut(_Out):
    """What engram_forget did to the memory."""

    memory_id: str
    action: str = Field(description="forget | erase.")
    changed: bool = Field(description="False when it already was forgotten (or erased).")
    state: str = Field(description="forgotten (restorable by `engram restore`) | erased.")
    at: str = Field(description="When (UTC).")


class StatusOut(_Out):
    """Ring counts, graduation state, attestation anchor, oracle split and vector coverage."""

    seat: SeatOut = Field(description="Which seat manifest this server uses, and why.")
    seat_id: str
    rings: list[dict[str, Any]]
    graduation: str = Field(description="open | blocked (no attested evidence).")
    attestation: dict[str, Any] = Field(description="Anchor path, sha256, key fingerprints.")
    oracle_split: dict[str, int]
    grandfathered_until_apply: int
    vector_coverage: dict[str, Any]
    retrieval: dict[str, Any]


__all__ = [
    "CompleteOut",
    "ConversationOut",
    "ForgetOut",
    "MemoryOut",
    "OutcomeOut",
    "RecallHitOut",
    "RecallOut",
    "RecordOut",
    "SeatOut",
    "StatusOut",
    "TurnOut",
    "VerdictOut",
]
