"""Typed inputs and results of the memory engine's public functions; each serialises to JSON.

These are the shapes the MCP tools (engram.ote.v1 & MCP contract, Part V, Plate 03, §3.2) and the
CLI render; a cartridge carries :class:`MemoryRecord` values (``export_memories`` /
``import_memories``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True)
class Memory:
    """One stored memory as recall and status show it."""

    id: str
    ring: str
    ring_id: str
    kind: str
    text: str
    entities: tuple[str, ...]
    provenance: Json
    thread: str
    seat_id: str
    tokens: int
    alpha: float
    beta: float
    status: str  # candidate | graduated | held_import
    graduated_at: str | None
    origin: str  # local | import
    created_at: str

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    def to_json(self) -> Json:
        return {
            "id": self.id,
            "ring": self.ring,
            "ring_id": self.ring_id,
            "kind": self.kind,
            "text": self.text,
            "entities": list(self.entities),
            "provenance": self.provenance,
            "thread": self.thread,
            "seat_id": self.seat_id,
            "tokens": self.tokens,
            "alpha": self.alpha,
            "beta": self.beta,
            "mean": round(self.mean, 6),
            "status": self.status,
            "graduated_at": self.graduated_at,
            "origin": self.origin,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class RecordInput:
    """One memory to record. ``ring`` is a ring level (M2-M4) or a mounted ring id."""

    text: str
    kind: str
    ring: str = "M4"
    provenance: Json = field(default_factory=dict)
    thread: str = ""

    @staticmethod
    def from_json(value: Any, where: str = "record") -> RecordInput:
        from engram.errors import InvalidRequest

        if not isinstance(value, dict):
            raise InvalidRequest(f"{where}: expected a JSON object")
        unknown = set(value) - {"text", "kind", "ring", "provenance", "thread"}
        if unknown:
            raise InvalidRequest(f"{where}: unknown field {sorted(unknown)[0]!r}")
        text, kind = value.get("text"), value.get("kind")
        ring, prov, thread = (
            value.get("ring", "M4"),
            value.get("provenance", {}),
            value.get("thread", ""),
        )
        if not isinstance(text, str) or not isinstance(kind, str):
            raise InvalidRequest(f"{where}: 'text' and 'kind' must be strings")
        if not isinstance(ring, str) or not isinstance(thread, str) or not isinstance(prov, dict):
            raise InvalidRequest(
                f"{where}: 'ring' and 'thread' are strings, 'provenance' an object"
            )
        return RecordInput(text=text, kind=kind, ring=ring, provenance=prov, thread=thread)


@dataclass(frozen=True)
class RecordResult:
    memory: Memory
    created: bool  # False when the same content was already in that ring
    dense: str  # "stored:<engine>" | "disabled" | "degraded: <reason>"

    def to_json(self) -> Json:
        return {"memory": self.memory.to_json(), "created": self.created, "dense": self.dense}


@dataclass(frozen=True)
class RecallHit:
    memory: Memory
    score: float
    components: dict[str, float]

    def to_json(self) -> Json:
        return {
            "memory": self.memory.to_json(),
            "score": round(self.score, 6),
            "components": {k: round(v, 6) for k, v in sorted(self.components.items())},
        }


@dataclass(frozen=True)
class RecallResult:
    query: str
    hits: tuple[RecallHit, ...]
    stages: dict[str, str]  # stage -> "ok" | "disabled" | "degraded: <reason>"
    degraded: bool
    budget_tokens: int
    used_tokens: int

    def to_json(self) -> Json:
        return {
            "query": self.query,
            "hits": [h.to_json() for h in self.hits],
            "stages": dict(self.stages),
            "degraded": self.degraded,
            "budget_tokens": self.budget_tokens,
            "used_tokens": self.used_tokens,
        }


@dataclass(frozen=True)
class OutcomeResult:
    memory_id: str
    decision_id: str
    signal: str
    oracle: str
    delta_alpha: float
    delta_beta: float
    alpha: float
    beta: float
    attested: bool
    principal: str | None
    reverify: bool
    duplicate: bool  # the decision_id was already recorded: this is the first event, unchanged

    def to_json(self) -> Json:
        return {
            "memory_id": self.memory_id,
            "decision_id": self.decision_id,
            "signal": self.signal,
            "oracle": self.oracle,
            "delta_alpha": self.delta_alpha,
            "delta_beta": self.delta_beta,
            "alpha": self.alpha,
            "beta": self.beta,
            "attested": self.attested,
            "principal": self.principal,
            "reverify": self.reverify,
            "duplicate": self.duplicate,
        }


@dataclass(frozen=True)
class Verdict:
    """The graduation rule applied to one memory."""

    memory_id: str
    status_before: str
    status_after: str
    full_lcb: float
    full_samples: float
    strong_lcb: float
    strong_samples: float
    nominated: bool
    reason: str

    def to_json(self) -> Json:
        return {
            "memory_id": self.memory_id,
            "status_before": self.status_before,
            "status_after": self.status_after,
            "full_lcb": round(self.full_lcb, 6),
            "full_samples": self.full_samples,
            "strong_lcb": round(self.strong_lcb, 6),
            "strong_samples": self.strong_samples,
            "nominated": self.nominated,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class CompleteResult:
    graduation: str  # "open" | "blocked (no attested evidence)"
    applied: bool
    verdicts: tuple[Verdict, ...]

    def to_json(self) -> Json:
        return {
            "graduation": self.graduation,
            "applied": self.applied,
            "verdicts": [v.to_json() for v in self.verdicts],
        }


@dataclass(frozen=True)
class StatusReport:
    seat_id: str
    rings: list[Json]
    graduation: str
    attestation: Json
    oracle_split: dict[str, int]
    grandfathered_until_apply: int
    vector_coverage: Json
    retrieval: Json

    def to_json(self) -> Json:
        return {
            "seat_id": self.seat_id,
            "rings": self.rings,
            "graduation": self.graduation,
            "attestation": self.attestation,
            "oracle_split": self.oracle_split,
            "grandfathered_until_apply": self.grandfathered_until_apply,
            "vector_coverage": self.vector_coverage,
            "retrieval": self.retrieval,
        }


@dataclass(frozen=True)
class MemoryRecord:
    """A memory as it travels between stores (cartridges): content, posterior and its events."""

    memory: Memory
    events: tuple[Json, ...]

    def to_json(self) -> Json:
        return {"memory": self.memory.to_json(), "events": [dict(e) for e in self.events]}


__all__ = [
    "Memory",
    "MemoryRecord",
    "OutcomeResult",
    "RecallHit",
    "RecallResult",
    "RecordInput",
    "RecordResult",
    "StatusReport",
    "Verdict",
]
