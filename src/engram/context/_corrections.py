"""Corrections proposed by runtimes and resolved by the subject (Engram v0.1, Tier 2 — Writer).

A correction is never applied when proposed: it waits as ``pending_user_confirmation`` until the
subject confirms (a new belief version and a ``corrected`` evolution entry are written) or rejects
it. Unknown and deleted belief ids are decided in ``docs/spec/context-corrections.md``:

- a ``belief_id`` the provider never issued for this subject is accepted as a proposal of a *new*
  belief (category ``general``), so the spec's self-certification checklist (``belief_id: "test"``)
  answers ``pending_user_confirmation``; confirming it creates the belief under a fresh id;
- a ``belief_id`` that names a *deleted* belief is ``404 belief_not_found``: the runtime holds a
  stale view and must re-sync instead of resurrecting what the subject removed.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from engram.context import _repo, _validate
from engram.context._beliefs import require_schema
from engram.context._model import Belief, ChangeKind, Correction, CorrectionStatus
from engram.core.clock import Clock
from engram.errors import BeliefNotFound, ConflictError, InvalidRequest, ResourceNotFound
from engram.store import Store, Tx
from engram.store.internals import writing

NEW_BELIEF_CATEGORY = "general"
"""Category of a belief created by confirming a correction of an id the provider never issued."""

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
MAX_CLOCK_SKEW = timedelta(days=1)
CONFIRMED_CONFIDENCE = 1.0
CONFIRMED_SOURCE = "user_confirmed_correction"


def propose_correction(
    store: Store,
    clock: Clock,
    subject_id: str,
    belief_id: str,
    new_value: str,
    runtime_id: str,
    timestamp: datetime | None = None,
    reason: str = "",
    *,
    tx: Tx | None = None,
) -> Correction:
    """Record a runtime's proposed correction as pending; nothing about the belief changes.

    ``timestamp`` is when the runtime saw the correction (default: now); ``reason`` is an
    optional note for the subject. With ``tx`` it joins the caller's transaction.
    """
    if not isinstance(reason, str) or len(reason) > _validate.MAX_STATEMENT:
        raise InvalidRequest(
            f"reason must be a string of at most {_validate.MAX_STATEMENT} characters"
        )
    bid = _validate.text("belief_id", belief_id, _validate.MAX_ID)
    value = _validate.text("new_value", new_value, _validate.MAX_STATEMENT)
    rid = _validate.text("runtime_id", runtime_id, _validate.MAX_ID)
    now = clock.now()
    if timestamp is not None and not EARLIEST <= timestamp <= now + MAX_CLOCK_SKEW:
        raise InvalidRequest("timestamp must lie between 1970 and now (allowing one day of skew)")
    correction = Correction(
        id=str(uuid.uuid4()),
        subject_id=subject_id,
        belief_id=bid,
        new_value=value,
        runtime_id=rid,
        timestamp=now if timestamp is None else timestamp,
        received_at=now,
        status=CorrectionStatus.PENDING,
        reason=reason.strip(),
    )
    require_schema(store, tx)
    with writing(store, tx) as tx:
        _repo.require_subject(tx, subject_id)
        existing = _repo.find_belief(tx, subject_id, bid)
        if existing is not None and existing.is_deleted:
            raise BeliefNotFound(f"belief {bid!r} was deleted; re-sync before correcting it")
        _repo.insert_correction(tx, correction)
        # Pending corrections appear in the export, so the exportable state changed; what is
        # known about the subject did not, so identity.last_updated stays (issue 12).
        _repo.touch_subject(tx, subject_id, now, identity_changed=False)
    return correction


def _pending(tx: Tx, subject_id: str, correction_id: str) -> Correction:
    correction = _repo.find_correction(tx, subject_id, correction_id)
    if correction is None:
        raise ResourceNotFound(f"correction {correction_id!r} does not exist")
    if correction.status is not CorrectionStatus.PENDING:
        raise ConflictError(f"correction {correction_id!r} is already {correction.status.value}")
    return correction


def confirm_correction(
    store: Store, clock: Clock, subject_id: str, correction_id: str, *, tx: Tx | None = None
) -> Correction:
    """The subject accepts a pending correction: it becomes authoritative now.

    The belief gets the new statement as a new version (confidence 1.0, source
    ``user_confirmed_correction``) and a ``corrected`` evolution entry; a correction of an id the
    provider never issued creates a new ``general`` belief. Raises ConflictError if the correction
    is no longer pending, BeliefNotFound if its belief was deleted meanwhile. ``tx``: join the
    caller's transaction.
    """
    now = clock.now()
    require_schema(store, tx)
    with writing(store, tx) as tx:
        _repo.require_subject(tx, subject_id)
        correction = _pending(tx, subject_id, correction_id)
        belief = _repo.find_belief(tx, subject_id, correction.belief_id)
        if belief is not None and belief.is_deleted:
            raise BeliefNotFound(f"belief {correction.belief_id!r} was deleted")
        if belief is None:
            applied = Belief(
                str(uuid.uuid4()),
                subject_id,
                NEW_BELIEF_CATEGORY,
                correction.new_value,
                CONFIRMED_CONFIDENCE,
                CONFIRMED_SOURCE,
                now,
                now,
                1,
            )
            _repo.insert_belief(tx, applied)
            version, previous = 1, None
        else:
            _repo.update_belief_statement(
                tx, belief, correction.new_value, CONFIRMED_CONFIDENCE, CONFIRMED_SOURCE, now
            )
            applied, version, previous = belief, belief.version + 1, belief.statement
        if not _repo.resolve_correction(
            tx, correction.id, CorrectionStatus.CONFIRMED, now, applied.id
        ):
            raise ConflictError(f"correction {correction_id!r} was resolved concurrently")
        _repo.append_evolution(
            tx,
            subject_id,
            applied.id,
            version,
            ChangeKind.CORRECTED if previous is not None else ChangeKind.CREATED,
            previous,
            correction.new_value,
            now,
            correction_id=correction.id,
            runtime_id=correction.runtime_id,
        )
        _repo.touch_subject(tx, subject_id, now)
        resolved = _repo.find_correction(tx, subject_id, correction.id)
    assert resolved is not None
    return resolved


def reject_correction(
    store: Store, clock: Clock, subject_id: str, correction_id: str, *, tx: Tx | None = None
) -> Correction:
    """The subject refuses a pending correction; the belief is untouched. ``tx``: join the
    caller's transaction."""
    now = clock.now()
    require_schema(store, tx)
    with writing(store, tx) as tx:
        _repo.require_subject(tx, subject_id)
        correction = _pending(tx, subject_id, correction_id)
        if not _repo.resolve_correction(tx, correction.id, CorrectionStatus.REJECTED, now, None):
            raise ConflictError(f"correction {correction_id!r} was resolved concurrently")
        _repo.touch_subject(tx, subject_id, now, identity_changed=False)
        resolved = _repo.find_correction(tx, subject_id, correction.id)
    assert resolved is not None
    return resolved


def get_correction(store: Store, subject_id: str, correction_id: str) -> Correction:
    require_schema(store)
    with store.read() as tx:
        _repo.require_subject(tx, subject_id)
        correction = _repo.find_correction(tx, subject_id, correction_id)
    if correction is None:
        raise ResourceNotFound(f"correction {correction_id!r} does not exist")
    return correction


def list_corrections(
    store: Store, subject_id: str, status: CorrectionStatus | None = None
) -> list[Correction]:
    """The subject's corrections, newest first, optionally of one status."""
    require_schema(store)
    with store.read() as tx:
        _repo.require_subject(tx, subject_id)
        return _repo.list_corrections(tx, subject_id, status)


def list_pending_corrections(store: Store, subject_id: str) -> list[Correction]:
    """Corrections waiting for the subject's decision, newest first."""
    return list_corrections(store, subject_id, CorrectionStatus.PENDING)


def recent_decisions(store: Store, subject_id: str, limit: int) -> list[Correction]:
    """The ``limit`` most recently received corrections the subject decided, newest first (the
    review page's "Recent decisions"; the export carries the same query's first 20)."""
    require_schema(store)
    with store.read() as tx:
        _repo.require_subject(tx, subject_id)
        return _repo.recent_decisions(tx, subject_id, limit)


__all__ = [
    "confirm_correction",
    "get_correction",
    "list_corrections",
    "list_pending_corrections",
    "propose_correction",
    "recent_decisions",
    "reject_correction",
]
