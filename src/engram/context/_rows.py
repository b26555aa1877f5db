"""The row shapes of the context tables (``_schema``), as the store returns them.

Spec: docs/spec/context-provider.md (state persisted). The store hands back ``dict[str, Any]``
rows for every table; these TypedDicts name each table's columns and their SQL types so mypy
checks what ``_repo`` reads from a row (a misspelt column or a TEXT instant used as a datetime is
an error, not a KeyError at run time). Instants are TEXT in ``format_instant_precise`` form and
booleans INTEGER 0/1 (engram.store's portable subset).
"""

from __future__ import annotations

from typing import TypedDict


class SubjectRow(TypedDict):
    id: str
    display_name: str
    timezone: str
    created_at: str
    last_updated: str
    state_version: int
    erased_at: str | None


class BeliefRow(TypedDict):
    id: str
    subject_id: str
    category: str
    statement: str
    confidence: float
    source: str
    created_at: str
    updated_at: str
    version: int
    deleted_at: str | None


class CorrectionRow(TypedDict):
    id: str
    subject_id: str
    belief_id: str
    new_value: str
    runtime_id: str
    reason: str
    proposed_at: str
    received_at: str
    status: str
    resolved_at: str | None
    applied_belief_id: str | None


class EvolutionRow(TypedDict):
    seq: int
    subject_id: str
    belief_id: str
    version: int
    kind: str
    previous: str | None
    value: str | None
    at: str
    correction_id: str | None
    runtime_id: str | None


class TokenRow(TypedDict):
    token_hash: str
    token_id: str
    subject_id: str
    permissions: str
    created_at: str
    expires_at: str
    revoked_at: str | None
    label: str


class TokenStateRow(TypedDict):
    """What authentication reads per request: a token's columns and its subject's state version
    (None when the subject is erased; the LEFT JOIN leaves it out)."""

    token_id: str
    subject_id: str
    permissions: str
    expires_at: str
    revoked_at: str | None
    state_version: int | None


__all__ = [
    "BeliefRow",
    "CorrectionRow",
    "EvolutionRow",
    "SubjectRow",
    "TokenRow",
    "TokenStateRow",
]
