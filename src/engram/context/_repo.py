"""SQL of the context domain, in the store's portable subset (``engram.store._base``).

Only this module speaks SQL; the public functions in the sibling modules call it inside one
transaction each. Rows become domain objects here.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from engram.context._model import (
    Belief,
    ChangeKind,
    Correction,
    CorrectionStatus,
    EvolutionEntry,
    Permission,
    Subject,
    TokenInfo,
)
from engram.context._rows import (
    BeliefRow,
    CorrectionRow,
    EvolutionRow,
    SubjectRow,
    TokenRow,
    TokenStateRow,
)
from engram.core.canonical import JsonObject
from engram.core.clock import format_instant, format_instant_precise, parse_instant
from engram.errors import UserNotFound
from engram.store import Tx


def _t(value: datetime) -> str:
    return format_instant_precise(value)


def _opt(text: str | None) -> datetime | None:
    return None if text is None else parse_instant(text)


# -- subjects ---------------------------------------------------------------------------------


def _subject(row: SubjectRow) -> Subject:
    return Subject(
        id=row["id"],
        display_name=row["display_name"],
        timezone=row["timezone"],
        created_at=parse_instant(row["created_at"]),
        last_updated=parse_instant(row["last_updated"]),
        state_version=int(row["state_version"]),
    )


def insert_subject(tx: Tx, subject: Subject) -> None:
    tx.execute(
        "INSERT INTO context_subjects (id, display_name, timezone, created_at, last_updated,"
        " state_version) VALUES (?, ?, ?, ?, ?, ?)",
        (
            subject.id,
            subject.display_name,
            subject.timezone,
            _t(subject.created_at),
            _t(subject.last_updated),
            subject.state_version,
        ),
    )


def find_subject(tx: Tx, subject_id: str) -> Subject | None:
    row = tx.one("SELECT * FROM context_subjects WHERE id = ? AND erased_at IS NULL", (subject_id,))
    return None if row is None else _subject(cast(SubjectRow, row))


def require_subject(tx: Tx, subject_id: str) -> Subject:
    subject = find_subject(tx, subject_id)
    if subject is None:
        raise UserNotFound(f"no Engram record for subject {subject_id!r}")
    return subject


def list_subjects(tx: Tx) -> list[Subject]:
    rows = tx.execute(
        "SELECT * FROM context_subjects WHERE erased_at IS NULL ORDER BY created_at, id"
    )
    return [_subject(cast(SubjectRow, r)) for r in rows]


def state_version(tx: Tx, subject_id: str) -> int | None:
    value = tx.scalar(
        "SELECT state_version FROM context_subjects WHERE id = ? AND erased_at IS NULL",
        (subject_id,),
    )
    return None if value is None else int(value)


SUBJECT_TOPIC = "subject"
TOKEN_TOPIC = "token"  # noqa: S105 - a change-feed topic name, not a secret
"""Change-feed topics: a subject's state version (key: subject id) and a token (key: its hash)."""


def touch_subject(tx: Tx, subject_id: str, now: datetime, *, identity_changed: bool = True) -> None:
    """Record that the subject's exportable state changed (bumps the cache key, and tells every
    process through the change feed); with ``identity_changed`` also ``identity.last_updated``.
    A pending or rejected correction changes the export (its ``corrections`` list) but not what
    is known about the subject."""
    if identity_changed:
        tx.execute(
            "UPDATE context_subjects SET state_version = state_version + 1, last_updated = ?"
            " WHERE id = ?",
            (_t(now), subject_id),
        )
    else:
        tx.execute(
            "UPDATE context_subjects SET state_version = state_version + 1 WHERE id = ?",
            (subject_id,),
        )
    # Last in the transaction: the change counter's row lock is held only until the commit.
    tx.record_change(SUBJECT_TOPIC, subject_id)


def erase_subject(tx: Tx, subject_id: str, now: datetime) -> None:
    """Remove every belief, correction and history row; keep a bare erased marker."""
    for table in ("context_beliefs", "context_corrections", "context_evolution"):
        tx.execute(f"DELETE FROM {table} WHERE subject_id = ?", (subject_id,))  # noqa: S608
    tx.execute(
        "UPDATE context_subjects SET display_name = ?, erased_at = ?,"
        " state_version = state_version + 1 WHERE id = ?",
        ("", _t(now), subject_id),
    )
    tx.record_change(SUBJECT_TOPIC, subject_id)


# -- beliefs ----------------------------------------------------------------------------------


def _belief(row: BeliefRow) -> Belief:
    return Belief(
        id=row["id"],
        subject_id=row["subject_id"],
        category=row["category"],
        statement=row["statement"],
        confidence=float(row["confidence"]),
        source=row["source"],
        created_at=parse_instant(row["created_at"]),
        updated_at=parse_instant(row["updated_at"]),
        version=int(row["version"]),
        deleted_at=_opt(row["deleted_at"]),
    )


def wire_instant(stored: str) -> str:
    """A stored precise instant (``2026-01-01T10:00:00.123456Z``) in wire form
    (``2026-01-01T10:00:00Z``, :func:`engram.core.clock.format_instant`) without parsing it:
    the export renders thousands of them. Anything not in the stored form is parsed."""
    if len(stored) == 27 and stored[19] == "." and stored[26] == "Z":
        return stored[:19] + "Z"
    return format_instant(parse_instant(stored))


def belief_rows(tx: Tx, subject_id: str) -> list[BeliefRow]:
    """Every belief row of the subject, live and deleted, oldest first."""
    rows = tx.execute(
        "SELECT * FROM context_beliefs WHERE subject_id = ? ORDER BY created_at, id",
        (subject_id,),
    )
    return cast(list[BeliefRow], rows)


def belief_row_wire(row: BeliefRow) -> JsonObject:
    """:meth:`Belief.to_wire` of a live belief row, straight from the row."""
    return {
        "id": row["id"],
        "category": row["category"],
        "statement": row["statement"],
        "confidence": float(row["confidence"]),
        "source": row["source"],
        "created_at": wire_instant(row["created_at"]),
        "updated_at": wire_instant(row["updated_at"]),
        "version": int(row["version"]),
    }


def insert_belief(tx: Tx, b: Belief) -> None:
    tx.execute(
        "INSERT INTO context_beliefs (id, subject_id, category, statement, confidence, source,"
        " created_at, updated_at, version, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
        (
            b.id,
            b.subject_id,
            b.category,
            b.statement,
            b.confidence,
            b.source,
            _t(b.created_at),
            _t(b.updated_at),
            b.version,
        ),
    )


def find_belief(tx: Tx, subject_id: str, belief_id: str) -> Belief | None:
    row = tx.one(
        "SELECT * FROM context_beliefs WHERE subject_id = ? AND id = ?", (subject_id, belief_id)
    )
    return None if row is None else _belief(cast(BeliefRow, row))


def live_beliefs(tx: Tx, subject_id: str) -> list[Belief]:
    rows = tx.execute(
        "SELECT * FROM context_beliefs WHERE subject_id = ? AND deleted_at IS NULL"
        " ORDER BY created_at, id",
        (subject_id,),
    )
    return [_belief(cast(BeliefRow, r)) for r in rows]


def beliefs_changed_since(tx: Tx, subject_id: str, since: datetime) -> list[Belief]:
    rows = tx.execute(
        "SELECT * FROM context_beliefs WHERE subject_id = ? AND updated_at > ?"
        " ORDER BY updated_at, id",
        (subject_id, _t(since)),
    )
    return [_belief(cast(BeliefRow, r)) for r in rows]


def update_belief_statement(
    tx: Tx, b: Belief, statement: str, confidence: float, source: str, now: datetime
) -> None:
    tx.execute(
        "UPDATE context_beliefs SET statement = ?, confidence = ?, source = ?, updated_at = ?,"
        " version = version + 1 WHERE id = ?",
        (statement, confidence, source, _t(now), b.id),
    )


def tombstone_belief(tx: Tx, b: Belief, now: datetime) -> None:
    """Mark deleted and forget the content: the statement and its history values are erased."""
    tx.execute(
        "UPDATE context_beliefs SET statement = ?, deleted_at = ?, updated_at = ?,"
        " version = version + 1 WHERE id = ?",
        ("", _t(now), _t(now), b.id),
    )
    tx.execute(
        "UPDATE context_evolution SET previous = NULL, value = NULL WHERE belief_id = ?",
        (b.id,),
    )
    tx.execute(
        "UPDATE context_corrections SET new_value = ?, reason = ?"
        " WHERE belief_id = ? AND subject_id = ?",
        ("", "", b.id, b.subject_id),
    )


# -- corrections ------------------------------------------------------------------------------


def _correction(row: CorrectionRow) -> Correction:
    return Correction(
        id=row["id"],
        subject_id=row["subject_id"],
        belief_id=row["belief_id"],
        new_value=row["new_value"],
        runtime_id=row["runtime_id"],
        timestamp=parse_instant(row["proposed_at"]),
        received_at=parse_instant(row["received_at"]),
        status=CorrectionStatus(row["status"]),
        resolved_at=_opt(row["resolved_at"]),
        applied_belief_id=row["applied_belief_id"],
        reason=row["reason"],
    )


def insert_correction(tx: Tx, c: Correction) -> None:
    tx.execute(
        "INSERT INTO context_corrections (id, subject_id, belief_id, new_value, runtime_id,"
        " reason, proposed_at, received_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            c.id,
            c.subject_id,
            c.belief_id,
            c.new_value,
            c.runtime_id,
            c.reason,
            _t(c.timestamp),
            _t(c.received_at),
            c.status.value,
        ),
    )


def find_correction(tx: Tx, subject_id: str, correction_id: str) -> Correction | None:
    row = tx.one(
        "SELECT * FROM context_corrections WHERE subject_id = ? AND id = ?",
        (subject_id, correction_id),
    )
    return None if row is None else _correction(cast(CorrectionRow, row))


def list_corrections(
    tx: Tx, subject_id: str, status: CorrectionStatus | None, limit: int | None = None
) -> list[Correction]:
    sql = "SELECT * FROM context_corrections WHERE subject_id = ?"
    params: list[object] = [subject_id]
    if status is not None:
        sql += " AND status = ?"
        params.append(status.value)
    sql += " ORDER BY received_at DESC, id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [_correction(cast(CorrectionRow, r)) for r in tx.execute(sql, params)]


def recent_decisions(tx: Tx, subject_id: str, limit: int) -> list[Correction]:
    """The ``limit`` most recently received corrections that were decided (confirmed or
    rejected), newest first: the export's resolved corrections and the review page's "Recent
    decisions" both read this one query."""
    rows = tx.execute(
        "SELECT * FROM context_corrections WHERE subject_id = ? AND status <> ?"
        " ORDER BY received_at DESC, id DESC LIMIT ?",
        (subject_id, CorrectionStatus.PENDING.value, limit),
    )
    return [_correction(cast(CorrectionRow, r)) for r in rows]


def resolve_correction(
    tx: Tx,
    correction_id: str,
    status: CorrectionStatus,
    now: datetime,
    applied_belief_id: str | None,
) -> bool:
    """Move a pending correction to ``status``; False if it was no longer pending (a race)."""
    rows = tx.execute(
        "UPDATE context_corrections SET status = ?, resolved_at = ?, applied_belief_id = ?"
        " WHERE id = ? AND status = ? RETURNING id",
        (status.value, _t(now), applied_belief_id, correction_id, CorrectionStatus.PENDING.value),
    )
    return bool(rows)


def reject_pending_for_belief(tx: Tx, subject_id: str, belief_id: str, now: datetime) -> None:
    tx.execute(
        "UPDATE context_corrections SET status = ?, resolved_at = ?"
        " WHERE subject_id = ? AND belief_id = ? AND status = ?",
        (
            CorrectionStatus.REJECTED.value,
            _t(now),
            subject_id,
            belief_id,
            CorrectionStatus.PENDING.value,
        ),
    )


# -- evolution --------------------------------------------------------------------------------


def _entry(row: EvolutionRow) -> EvolutionEntry:
    return EvolutionEntry(
        seq=int(row["seq"]),
        belief_id=row["belief_id"],
        version=int(row["version"]),
        kind=ChangeKind(row["kind"]),
        previous=row["previous"],
        value=row["value"],
        at=parse_instant(row["at"]),
        correction_id=row["correction_id"],
        runtime_id=row["runtime_id"],
    )


def append_evolution(
    tx: Tx,
    subject_id: str,
    belief_id: str,
    version: int,
    kind: ChangeKind,
    previous: str | None,
    value: str | None,
    at: datetime,
    correction_id: str | None = None,
    runtime_id: str | None = None,
) -> None:
    tx.execute(
        "INSERT INTO context_evolution (subject_id, belief_id, version, kind, previous, value,"
        " at, correction_id, runtime_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            subject_id,
            belief_id,
            version,
            kind.value,
            previous,
            value,
            _t(at),
            correction_id,
            runtime_id,
        ),
    )


def evolution(
    tx: Tx, subject_id: str, belief_id: str | None = None, limit: int | None = None
) -> list[EvolutionEntry]:
    """History, newest first (one belief, or the whole subject)."""
    sql = "SELECT * FROM context_evolution WHERE subject_id = ?"
    params: list[object] = [subject_id]
    if belief_id is not None:
        sql += " AND belief_id = ?"
        params.append(belief_id)
    sql += " ORDER BY seq DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [_entry(cast(EvolutionRow, r)) for r in tx.execute(sql, params)]


# -- tokens -----------------------------------------------------------------------------------


def _token(row: TokenRow) -> TokenInfo:
    return TokenInfo(
        token_id=row["token_id"],
        subject_id=row["subject_id"],
        permissions=parse_permissions(row["permissions"]),
        created_at=parse_instant(row["created_at"]),
        expires_at=parse_instant(row["expires_at"]),
        revoked_at=_opt(row["revoked_at"]),
        label=row["label"],
    )


def parse_permissions(text: str) -> frozenset[Permission]:
    return frozenset(Permission(p) for p in text.split() if p)


def insert_token(tx: Tx, token_hash: str, info: TokenInfo) -> None:
    tx.execute(
        "INSERT INTO context_tokens (token_hash, token_id, subject_id, permissions, created_at,"
        " expires_at, revoked_at, label) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
        (
            token_hash,
            info.token_id,
            info.subject_id,
            " ".join(sorted(p.value for p in info.permissions)),
            _t(info.created_at),
            _t(info.expires_at),
            info.label,
        ),
    )


def token_and_state(tx: Tx, token_hash: str) -> TokenStateRow | None:
    """The columns authentication needs and the subject's state version (None if erased), in
    one query: this runs on every ``GET /v1/context``, so it parses nothing."""
    row = tx.one(
        "SELECT t.token_id, t.subject_id, t.permissions, t.expires_at, t.revoked_at,"
        " s.state_version FROM context_tokens t LEFT JOIN context_subjects s"
        " ON s.id = t.subject_id AND s.erased_at IS NULL WHERE t.token_hash = ?",
        (token_hash,),
    )
    return None if row is None else cast(TokenStateRow, row)


def tokens_for(tx: Tx, subject_id: str) -> list[TokenInfo]:
    rows = tx.execute(
        "SELECT * FROM context_tokens WHERE subject_id = ? ORDER BY created_at, token_id",
        (subject_id,),
    )
    return [_token(cast(TokenRow, r)) for r in rows]


def revoke_token(tx: Tx, subject_id: str, token_id: str, now: datetime) -> bool:
    rows = tx.execute(
        "UPDATE context_tokens SET revoked_at = ? WHERE subject_id = ? AND token_id = ?"
        " AND revoked_at IS NULL RETURNING token_hash",
        (_t(now), subject_id, token_id),
    )
    for row in rows:
        tx.record_change(TOKEN_TOPIC, str(row["token_hash"]))
    return bool(rows)


def evolution_in_categories(
    tx: Tx, subject_id: str, categories: frozenset[str], limit: int
) -> list[EvolutionEntry]:
    """The newest ``limit`` history entries of beliefs in ``categories``, newest first."""
    if not categories:
        return []
    marks = ", ".join("?" for _ in categories)
    # Only "?" marks are interpolated; categories travel as parameters.
    head = "SELECT e.* FROM context_evolution e JOIN context_beliefs b ON b.id = e.belief_id"
    tail = "ORDER BY e.seq DESC LIMIT ?"
    sql = f"{head} WHERE e.subject_id = ? AND b.category IN ({marks}) {tail}"
    rows = tx.execute(sql, [subject_id, *sorted(categories), limit])
    return [_entry(cast(EvolutionRow, r)) for r in rows]
