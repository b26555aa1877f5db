"""Typed inputs and results of the memory engine's public functions; each serialises to JSON.

These are the shapes the MCP tools (engram.ote.v1 & MCP contract, Part V, Plate 03, §3.2) and the
CLI render; a cartridge carries :class:`MemoryRecord` values (``export_memories`` /
``import_memories``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engram.core.canonical import JsonObject as Json


class MemoryStatus(StrEnum):
    """Where a memory stands in graduation (engram.ote.v1 & MCP contract, §3.2 engram_complete)."""

    CANDIDATE = "candidate"
    GRADUATED = "graduated"
    HELD_IMPORT = "held_import"  # an imported graduation not yet verified by this store


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
    status: MemoryStatus
    graduated_at: str | None
    origin: str  # local | import
    created_at: str

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    def to_wire(self) -> Json:
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
            "status": self.status.value,
            "graduated_at": self.graduated_at,
            "origin": self.origin,
            "created_at": self.created_at,
        }

    @property
    def author(self) -> str:
        """Who said or wrote it: provenance ``author`` (or ``speaker``), else empty."""
        return author_of(self.provenance)


def author_of(provenance: Json) -> str:
    """The author a memory's provenance names (``author``, else ``speaker``; strings only)."""
    for key in ("author", "speaker"):
        value = provenance.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


@dataclass(frozen=True)
class OutcomeEvent:
    """One evidence event on a memory (a row of ``memory_outcomes``)."""

    memory_id: str
    decision_id: str
    seat_id: str
    signal: str
    oracle: str
    delta_alpha: float
    delta_beta: float
    attested: bool
    verified: bool
    principal: str | None
    key_fingerprint: str | None
    signature: str | None
    reverify: bool
    origin: str  # local | import
    created_at: str

    @staticmethod
    def from_row(row: Any) -> OutcomeEvent:
        return OutcomeEvent(
            memory_id=row["memory_id"],
            decision_id=row["decision_id"],
            seat_id=row["seat_id"],
            signal=row["signal"],
            oracle=row["oracle"],
            delta_alpha=float(row["delta_alpha"]),
            delta_beta=float(row["delta_beta"]),
            attested=bool(row["attested"]),
            verified=bool(row["verified"]),
            principal=row["principal"],
            key_fingerprint=row["key_fingerprint"],
            signature=row["signature"],
            reverify=bool(row["reverify"]),
            origin=row["origin"],
            created_at=row["created_at"],
        )

    def to_export_json(self) -> Json:
        """What a cartridge carries: the event without this store's verification state."""
        return {
            "decision_id": self.decision_id,
            "seat_id": self.seat_id,
            "signal": self.signal,
            "oracle": self.oracle,
            "delta_alpha": self.delta_alpha,
            "delta_beta": self.delta_beta,
            "attested": self.attested,
            "principal": self.principal,
            "key_fingerprint": self.key_fingerprint,
            "signature": self.signature,
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
    def from_wire(value: Any, where: str = "record") -> RecordInput:
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

    def to_wire(self) -> Json:
        return {"memory": self.memory.to_wire(), "created": self.created, "dense": self.dense}


@dataclass(frozen=True)
class RecallHit:
    memory: Memory
    score: float
    components: dict[str, float]

    def to_wire(self) -> Json:
        return {
            "memory": self.memory.to_wire(),
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

    def to_wire(self) -> Json:
        return {
            "query": self.query,
            "hits": [h.to_wire() for h in self.hits],
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

    def to_wire(self) -> Json:
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
    status_before: MemoryStatus
    status_after: MemoryStatus
    full_lcb: float
    full_samples: float
    strong_lcb: float
    strong_samples: float
    nominated: bool
    reason: str

    def to_wire(self) -> Json:
        return {
            "memory_id": self.memory_id,
            "status_before": self.status_before.value,
            "status_after": self.status_after.value,
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

    def summary(self) -> dict[str, int]:
        """How many memories the rule looked at, and how many end in or move to each status."""
        out = {"memories": len(self.verdicts), "changed": 0}
        for status in MemoryStatus:
            out[status.value] = 0
        for v in self.verdicts:
            out[v.status_after.value] += 1
            out["changed"] += v.status_before != v.status_after
        return out

    def to_wire(self) -> Json:
        return {
            "graduation": self.graduation,
            "applied": self.applied,
            "verdicts": [v.to_wire() for v in self.verdicts],
        }


@dataclass(frozen=True)
class StatusReport:
    seat_id: str
    rings: list[Json]
    graduation: str
    attestation: Json
    oracle_split: Json
    grandfathered_until_apply: int
    vector_coverage: Json
    retrieval: Json

    def to_wire(self) -> Json:
        return {
            "seat_id": self.seat_id,
            "rings": [*self.rings],
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

    def to_wire(self) -> Json:
        return {"memory": self.memory.to_wire(), "events": [dict(e) for e in self.events]}


__all__ = [
    "Memory",
    "MemoryRecord",
    "MemoryStatus",
    "OutcomeEvent",
    "OutcomeResult",
    "RecallHit",
    "RecallResult",
    "RecordInput",
    "RecordResult",
    "StatusReport",
    "Verdict",
    "author_of",
]
