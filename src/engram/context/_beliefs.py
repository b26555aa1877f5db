"""Subjects and beliefs: create, read, tombstone (Engram v0.1 data model).

Decisions: ``docs/spec/context-model.md``.

Every write runs in one store transaction, appends to the belief's evolution history and bumps the
subject's ``state_version`` so cached signed exports are never served stale.
"""

from __future__ import annotations

import uuid

from engram.context import _repo, _validate
from engram.context._model import Belief, ChangeKind, EvolutionEntry, Subject
from engram.context._registry import check_category
from engram.context._schema import CONTEXT_COMPONENT, ensure_schema
from engram.core.clock import Clock
from engram.errors import BeliefNotFound
from engram.store import Store, Tx
from engram.store.internals import CHANGES_COMPONENT, writing


def require_schema(store: Store, tx: Tx | None = None) -> None:
    """Refuse, naming ``engram db migrate``, unless the context tables are current (a dict
    lookup after the first check on a store object; read through ``tx`` when given)."""
    store.require(CHANGES_COMPONENT, CONTEXT_COMPONENT, tx=tx)


def create_subject(store: Store, clock: Clock, display_name: str, timezone: str) -> Subject:
    """A new subject (a person whose context is served) with a fresh uuid."""
    name = _validate.text("display_name", display_name, _validate.MAX_DISPLAY_NAME)
    zone = _validate.timezone(timezone)
    now = clock.now()
    subject = Subject(str(uuid.uuid4()), name, zone, now, now, 1)
    require_schema(store)
    with store.transaction() as tx:
        _repo.insert_subject(tx, subject)
    return subject


def get_subject(store: Store, subject_id: str) -> Subject:
    """The subject, or UserNotFound."""
    require_schema(store)
    with store.read() as tx:
        return _repo.require_subject(tx, subject_id)


def list_subjects(store: Store) -> list[Subject]:
    require_schema(store)
    with store.read() as tx:
        return _repo.list_subjects(tx)


def erase_subject(store: Store, clock: Clock, subject_id: str) -> None:
    """Forget a subject: beliefs, corrections and history are deleted; its tokens then answer
    ``404 user_not_found`` (the record is gone) until they expire."""
    require_schema(store)
    with store.transaction() as tx:
        _repo.require_subject(tx, subject_id)
        _repo.erase_subject(tx, subject_id, clock.now())


def add_belief(
    store: Store,
    clock: Clock,
    subject_id: str,
    category: str,
    statement: str,
    confidence: float = 0.8,
    source: str = "user",
    *,
    tx: Tx | None = None,
) -> Belief:
    """Record a belief about the subject; it is authoritative at once (the subject or an admin
    states it directly, unlike a runtime's correction). With ``tx`` it joins the caller's
    transaction (which commits it)."""
    check_category(category)
    text = _validate.text("statement", statement, _validate.MAX_STATEMENT)
    conf = _validate.check_confidence(confidence)
    src = _validate.text("source", source, _validate.MAX_SOURCE)
    now = clock.now()
    belief = Belief(str(uuid.uuid4()), subject_id, category, text, conf, src, now, now, 1)
    require_schema(store, tx)
    with writing(store, tx) as w:
        _repo.require_subject(w, subject_id)
        _repo.insert_belief(w, belief)
        _repo.append_evolution(w, subject_id, belief.id, 1, ChangeKind.CREATED, None, text, now)
        _repo.touch_subject(w, subject_id, now)
    return belief


def get_belief(store: Store, subject_id: str, belief_id: str) -> Belief:
    """A live belief of the subject, or BeliefNotFound (deleted beliefs are not found)."""
    require_schema(store)
    with store.read() as tx:
        _repo.require_subject(tx, subject_id)
        belief = _repo.find_belief(tx, subject_id, belief_id)
    if belief is None or belief.is_deleted:
        raise BeliefNotFound(f"belief {belief_id!r} does not exist")
    return belief


def list_beliefs(store: Store, subject_id: str) -> list[Belief]:
    """The subject's live beliefs, oldest first."""
    require_schema(store)
    with store.read() as tx:
        _repo.require_subject(tx, subject_id)
        return _repo.live_beliefs(tx, subject_id)


def delete_belief(
    store: Store, clock: Clock, subject_id: str, belief_id: str, *, tx: Tx | None = None
) -> Belief:
    """Tombstone a belief: its content and history values are erased, pending corrections of it
    are rejected, and diffs report it as deleted. Returns the tombstone. ``tx``: join the
    caller's transaction."""
    now = clock.now()
    require_schema(store, tx)
    with writing(store, tx) as tx:
        _repo.require_subject(tx, subject_id)
        belief = _repo.find_belief(tx, subject_id, belief_id)
        if belief is None or belief.is_deleted:
            raise BeliefNotFound(f"belief {belief_id!r} does not exist")
        _repo.tombstone_belief(tx, belief, now)
        _repo.append_evolution(
            tx, subject_id, belief.id, belief.version + 1, ChangeKind.DELETED, None, None, now
        )
        _repo.reject_pending_for_belief(tx, subject_id, belief.id, now)
        _repo.touch_subject(tx, subject_id, now)
        tombstone = _repo.find_belief(tx, subject_id, belief_id)
    assert tombstone is not None
    return tombstone


def belief_history(store: Store, subject_id: str, belief_id: str) -> list[EvolutionEntry]:
    """Every change of one belief, newest first (deleted beliefs keep their history, with the
    values erased); BeliefNotFound if the id was never a belief of this subject."""
    require_schema(store)
    with store.read() as tx:
        _repo.require_subject(tx, subject_id)
        if _repo.find_belief(tx, subject_id, belief_id) is None:
            raise BeliefNotFound(f"belief {belief_id!r} does not exist")
        return _repo.evolution(tx, subject_id, belief_id)


__all__ = [
    "add_belief",
    "belief_history",
    "create_subject",
    "delete_belief",
    "ensure_schema",
    "erase_subject",
    "get_belief",
    "get_subject",
    "list_beliefs",
    "list_subjects",
    "require_schema",
]
