"""The export envelope and the diff, unsigned (Engram v0.1, "Test Fixtures", Tiers 1-3).

These functions build the exact JSON members a provider signs; signing (kid, Ed25519 over the
RFC 8785 bytes without ``signature``) is the provider's job, because it owns the keys. Both
documents are a pure function of (subject state, scope, instants, issuer, kid): the provider caches
signed exports per (subject, scope, ``state_version``). ``docs/spec/context-export.md`` lists the
members and limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from engram.context import _repo
from engram.context._corrections import NEW_BELIEF_CATEGORY
from engram.context._injection import DEFAULT_BUDGET, InjectionItem, render_injection_items
from engram.context._model import Belief, CorrectionStatus
from engram.context._registry import Scope
from engram.core.canonical import JsonObject
from engram.core.clock import format_instant
from engram.errors import ExpiryTooLong, UserNotFound
from engram.store import Store

ENGRAM_VERSION = "0.1"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_EXPORT_TTL = timedelta(hours=24)
EXPORT_EVOLUTION_LIMIT = 50
EXPORT_RESOLVED_CORRECTIONS_LIMIT = 20


@dataclass(frozen=True)
class Issuer:
    """Who signs: the export's ``issuer`` object."""

    name: str
    url: str

    def to_wire(self) -> JsonObject:
        return {"name": self.name, "url": self.url}


def state_version(store: Store, subject_id: str) -> int:
    """The subject's state counter (the export cache key); UserNotFound if there is none."""
    with store.read() as tx:
        version = _repo.state_version(tx, subject_id)
    if version is None:
        raise UserNotFound(f"no Engram record for subject {subject_id!r}")
    return version


def _check_window(issued_at: datetime, expires_at: datetime) -> None:
    if expires_at <= issued_at or expires_at - issued_at > MAX_EXPORT_TTL:
        raise ExpiryTooLong("expires_at must be after issued_at and at most 24 hours later")


def _head(
    subject_id: str,
    display_name: str,
    scope: Scope,
    issuer: Issuer,
    issued_at: datetime,
    expires_at: datetime,
    kid: str,
) -> JsonObject:
    _check_window(issued_at, expires_at)
    return {
        "engram_version": ENGRAM_VERSION,
        "issued_at": format_instant(issued_at),
        "expires_at": format_instant(expires_at),
        "kid": kid,
        "issuer": issuer.to_wire(),
        "subject": {"id": subject_id, "display_name": display_name},
        "scope": scope.name,
    }


def build_export(
    store: Store,
    subject_id: str,
    scope: Scope,
    issuer: Issuer,
    issued_at: datetime,
    expires_at: datetime,
    kid: str,
    injection_budget: int = DEFAULT_BUDGET,
) -> JsonObject:
    """The full export envelope, every member except ``signature``.

    ``beliefs``: live beliefs the scope admits, oldest first. ``corrections``: pending ones and the
    20 most recently resolved, for admitted beliefs. ``evolution``: the 50 newest history entries
    of admitted beliefs, newest first.
    """
    with store.read() as tx:
        subject = _repo.require_subject(tx, subject_id)
        rows = _repo.belief_rows(tx, subject_id)  # live and deleted, one scan
        pending = _repo.list_corrections(tx, subject_id, CorrectionStatus.PENDING)
        resolved = _repo.recent_decisions(tx, subject_id, EXPORT_RESOLVED_CORRECTIONS_LIMIT)
        history = _repo.evolution_in_categories(
            tx, subject_id, scope.categories, EXPORT_EVOLUTION_LIMIT
        )
    issued = {r["id"] for r in rows}
    admitted = {r["id"] for r in rows if scope.admits(r["category"])}
    # Beliefs go from rows to wire members directly: this is the cost of every re-sign.
    live = [r for r in rows if r["deleted_at"] is None and r["id"] in admitted]
    items = [
        InjectionItem(
            r["id"], r["category"], r["statement"], float(r["confidence"]), r["updated_at"]
        )
        for r in live
    ]
    # A proposal for an id never issued would become a ``general`` belief when confirmed.
    new_ok = scope.admits(NEW_BELIEF_CATEGORY)
    corrections = [
        c
        for c in pending + resolved
        if c.belief_id in admitted or (c.belief_id not in issued and new_ok)
    ]
    envelope = _head(subject.id, subject.display_name, scope, issuer, issued_at, expires_at, kid)
    envelope.update(
        {
            "identity": subject.identity_wire(),
            "beliefs": [_repo.belief_row_wire(r) for r in live],
            "corrections": [c.to_wire() for c in corrections],
            "evolution": [e.to_wire() for e in history],
            "system_prompt_injection": render_injection_items(
                subject.display_name, subject.timezone, scope.name, items, injection_budget
            ),
        }
    )
    return envelope


def build_diff(
    store: Store,
    subject_id: str,
    scope: Scope,
    since: datetime,
    issuer: Issuer,
    issued_at: datetime,
    expires_at: datetime,
    kid: str,
) -> JsonObject:
    """Changes since ``since`` (exclusive): ``changes`` (beliefs created or updated, current
    values) and ``tombstones`` (beliefs deleted), both oldest first, for the beliefs the scope
    admits; ``until`` is the instant to pass as the next ``since``. Unsigned.

    A ``since`` before 1970 means "from the beginning" and is echoed as 1970-01-01T00:00:00Z.
    """
    since = max(since, EPOCH)
    with store.read() as tx:
        subject = _repo.require_subject(tx, subject_id)
        changed: list[Belief] = [
            b
            for b in _repo.beliefs_changed_since(tx, subject_id, since)
            if scope.admits(b.category)
        ]
    envelope = _head(subject.id, subject.display_name, scope, issuer, issued_at, expires_at, kid)
    envelope.update(
        {
            "since": format_instant(since),
            "until": format_instant(issued_at),
            "changes": [b.to_wire() for b in changed if not b.is_deleted],
            "tombstones": [b.tombstone_wire() for b in changed if b.is_deleted],
        }
    )
    return envelope


__all__ = [
    "ENGRAM_VERSION",
    "EXPORT_EVOLUTION_LIMIT",
    "EXPORT_RESOLVED_CORRECTIONS_LIMIT",
    "MAX_EXPORT_TTL",
    "Issuer",
    "build_diff",
    "build_export",
    "state_version",
]
