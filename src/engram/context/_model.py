"""Domain objects of the Engram context protocol (v0.1): subjects, beliefs, corrections, history.

These are plain frozen dataclasses; ``to_wire()`` gives the JSON members the export envelope and
the HTTP API carry (spec: "Test Fixtures / Minimal valid export"; our additions are in
``docs/spec/context-model.md``). Instants are held as aware datetimes and rendered with
:func:`engram.core.clock.format_instant`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from engram.core.canonical import JsonObject
from engram.core.clock import format_instant


class Permission(StrEnum):
    """What a bearer token may do. ``admin`` implies every other permission.

    ``memory`` is for agents that use the MCP memory tools at ``/mcp``: it grants nothing over
    the subject's beliefs (no reading, proposing, confirming, adding or deleting them).
    ``metrics`` is for a Prometheus scraper: it reads the provider's ``/metrics`` (operational
    counters, no subject data) and nothing else.
    """

    READ = "read"
    CORRECT = "correct"
    CONFIRM = "confirm"
    MEMORY = "memory"
    METRICS = "metrics"
    ADMIN = "admin"


class CorrectionStatus(StrEnum):
    PENDING = "pending_user_confirmation"
    CONFIRMED = "confirmed"
    REJECTED = "rejected"


class ChangeKind(StrEnum):
    """Kinds of entries in a belief's append-only evolution history."""

    CREATED = "created"
    CORRECTED = "corrected"
    DELETED = "deleted"


@dataclass(frozen=True)
class Subject:
    id: str
    display_name: str
    timezone: str
    created_at: datetime
    last_updated: datetime
    state_version: int

    def identity_wire(self) -> JsonObject:
        """The export's ``identity`` object."""
        return {
            "display_name": self.display_name,
            "timezone": self.timezone,
            "created_at": format_instant(self.created_at),
            "last_updated": format_instant(self.last_updated),
        }

    def to_wire(self) -> JsonObject:
        return {"id": self.id, **self.identity_wire(), "state_version": self.state_version}


@dataclass(frozen=True)
class Belief:
    id: str
    subject_id: str
    category: str
    statement: str
    confidence: float
    source: str
    created_at: datetime
    updated_at: datetime
    version: int
    deleted_at: datetime | None = None

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    def to_wire(self) -> JsonObject:
        return {
            "id": self.id,
            "category": self.category,
            "statement": self.statement,
            "confidence": self.confidence,
            "source": self.source,
            "created_at": format_instant(self.created_at),
            "updated_at": format_instant(self.updated_at),
            "version": self.version,
        }

    def tombstone_wire(self) -> JsonObject:
        assert self.deleted_at is not None
        return {
            "id": self.id,
            "deleted": True,
            "deleted_at": format_instant(self.deleted_at),
            "version": self.version,
        }


@dataclass(frozen=True)
class Correction:
    id: str
    subject_id: str
    belief_id: str
    new_value: str
    runtime_id: str
    timestamp: datetime
    received_at: datetime
    status: CorrectionStatus
    resolved_at: datetime | None = None
    applied_belief_id: str | None = None
    reason: str = ""

    def to_wire(self) -> JsonObject:
        return {
            "id": self.id,
            "belief_id": self.belief_id,
            "new_value": self.new_value,
            "reason": self.reason,
            "runtime_id": self.runtime_id,
            "timestamp": format_instant(self.timestamp),
            "received_at": format_instant(self.received_at),
            "status": self.status.value,
            "resolved_at": None if self.resolved_at is None else format_instant(self.resolved_at),
            "applied_belief_id": self.applied_belief_id,
        }


@dataclass(frozen=True)
class EvolutionEntry:
    """One append-only record of a belief change (the export's ``evolution`` array)."""

    seq: int
    belief_id: str
    version: int
    kind: ChangeKind
    previous: str | None
    value: str | None
    at: datetime
    correction_id: str | None = None
    runtime_id: str | None = None

    def to_wire(self) -> JsonObject:
        return {
            "belief_id": self.belief_id,
            "version": self.version,
            "change": self.kind.value,
            "previous": self.previous,
            "value": self.value,
            "at": format_instant(self.at),
            "correction_id": self.correction_id,
            "runtime_id": self.runtime_id,
        }


@dataclass(frozen=True)
class TokenGrant:
    """What an authenticated bearer token is allowed: one subject, a set of permissions."""

    token_id: str
    subject_id: str
    permissions: frozenset[Permission]
    expires_at: datetime

    def allows(self, permission: Permission) -> bool:
        return Permission.ADMIN in self.permissions or permission in self.permissions


@dataclass(frozen=True)
class TokenInfo:
    """A stored token as listings show it: never the raw token, never its hash."""

    token_id: str
    subject_id: str
    permissions: frozenset[Permission]
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None
    label: str

    def to_wire(self) -> JsonObject:
        return {
            "token_id": self.token_id,
            "subject_id": self.subject_id,
            "permissions": [p.value for p in sorted(self.permissions, key=lambda p: p.value)],
            "created_at": format_instant(self.created_at),
            "expires_at": format_instant(self.expires_at),
            "revoked_at": None if self.revoked_at is None else format_instant(self.revoked_at),
            "label": self.label,
        }


@dataclass(frozen=True)
class DemoSubject:
    """What :func:`seed_demo` made: the subject, its beliefs and a raw all-permissions token."""

    subject: Subject
    beliefs: tuple[Belief, ...]
    token: str


__all__ = [
    "Belief",
    "ChangeKind",
    "Correction",
    "CorrectionStatus",
    "DemoSubject",
    "EvolutionEntry",
    "Permission",
    "Subject",
    "TokenGrant",
    "TokenInfo",
]
