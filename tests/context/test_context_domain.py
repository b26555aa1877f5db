"""The context domain on every store backend: subjects, beliefs, tombstones, history, and the
correction functions the review page builds on (list pending, confirm, reject, history)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engram.context import (
    ChangeKind,
    CorrectionStatus,
    add_belief,
    belief_history,
    confirm_correction,
    create_subject,
    delete_belief,
    get_belief,
    list_beliefs,
    list_corrections,
    list_pending_corrections,
    propose_correction,
    reject_correction,
)
from engram.core.clock import FixedClock
from engram.errors import (
    BeliefNotFound,
    ConflictError,
    InvalidRequest,
    ResourceNotFound,
    UserNotFound,
)
from engram.store import Store


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.mark.req("engram.provider.state-persisted")
def test_a_subject_holds_beliefs_until_one_is_deleted(any_store: Store, clock: FixedClock) -> None:
    subject = create_subject(any_store, clock, "Grace", "Europe/Paris")
    kept = add_belief(any_store, clock, subject.id, "preference", "Likes tea.", 0.7)
    gone = add_belief(any_store, clock, subject.id, "health", "Has asthma.")
    clock.advance(timedelta(minutes=1))

    tombstone = delete_belief(any_store, clock, subject.id, gone.id)

    assert [b.id for b in list_beliefs(any_store, subject.id)] == [kept.id]
    assert tombstone.deleted_at == clock.now()
    assert tombstone.statement == ""
    assert tombstone.version == 2
    with pytest.raises(BeliefNotFound):
        get_belief(any_store, subject.id, gone.id)
    with pytest.raises(BeliefNotFound):
        delete_belief(any_store, clock, subject.id, gone.id)
    history = belief_history(any_store, subject.id, gone.id)
    assert [e.kind for e in history] == [ChangeKind.DELETED, ChangeKind.CREATED]
    assert all(e.value is None and e.previous is None for e in history)


@pytest.mark.parametrize(
    ("category", "statement", "confidence", "complaint"),
    [
        ("astrology", "x", 0.5, "category"),
        ("goal", "", 0.5, "statement"),
        ("goal", "x" * 2001, 0.5, "statement"),
        ("goal", "two\nlines", 0.5, "statement"),
        ("goal", "x", 1.5, "confidence"),
        ("goal", "x", float("nan"), "confidence"),
    ],
)
def test_bad_beliefs_are_refused_and_nothing_is_stored(
    any_store: Store,
    clock: FixedClock,
    category: str,
    statement: str,
    confidence: float,
    complaint: str,
) -> None:
    subject = create_subject(any_store, clock, "Grace", "UTC")

    with pytest.raises(InvalidRequest, match=complaint):
        add_belief(any_store, clock, subject.id, category, statement, confidence)

    assert list_beliefs(any_store, subject.id) == []


def test_subjects_need_a_name_and_a_known_time_zone(any_store: Store, clock: FixedClock) -> None:
    with pytest.raises(InvalidRequest, match="time zone"):
        create_subject(any_store, clock, "Grace", "Mars/Olympus")
    with pytest.raises(InvalidRequest, match="display_name"):
        create_subject(any_store, clock, "  ", "UTC")
    with pytest.raises(UserNotFound):
        add_belief(any_store, clock, "no-such-subject", "goal", "x")


@pytest.mark.req("engram.provider.confirm-applies", "engram.context.p2.correction-not-applied")
def test_the_review_flow_lists_pending_confirms_and_records_history(
    any_store: Store, clock: FixedClock
) -> None:
    subject = create_subject(any_store, clock, "Grace", "UTC")
    belief = add_belief(any_store, clock, subject.id, "personal", "Lives in Lyon.")
    first = propose_correction(any_store, clock, subject.id, belief.id, "Lives in Nice.", "rt-a")
    clock.advance(timedelta(seconds=1))
    second = propose_correction(any_store, clock, subject.id, belief.id, "Lives in Pau.", "rt-b")

    pending = list_pending_corrections(any_store, subject.id)
    assert [c.id for c in pending] == [second.id, first.id]
    assert get_belief(any_store, subject.id, belief.id).statement == "Lives in Lyon."

    clock.advance(timedelta(seconds=1))
    confirmed = confirm_correction(any_store, clock, subject.id, first.id)
    rejected = reject_correction(any_store, clock, subject.id, second.id)

    assert confirmed.status is CorrectionStatus.CONFIRMED
    assert confirmed.applied_belief_id == belief.id
    assert confirmed.resolved_at == clock.now()
    assert rejected.status is CorrectionStatus.REJECTED
    assert list_pending_corrections(any_store, subject.id) == []
    assert len(list_corrections(any_store, subject.id, CorrectionStatus.CONFIRMED)) == 1
    current = get_belief(any_store, subject.id, belief.id)
    assert (current.statement, current.version, current.confidence) == ("Lives in Nice.", 2, 1.0)
    history = belief_history(any_store, subject.id, belief.id)
    assert [(e.kind, e.previous, e.value) for e in history] == [
        (ChangeKind.CORRECTED, "Lives in Lyon.", "Lives in Nice."),
        (ChangeKind.CREATED, None, "Lives in Lyon."),
    ]
    assert history[0].correction_id == first.id
    assert history[0].runtime_id == "rt-a"
    with pytest.raises(ConflictError):
        confirm_correction(any_store, clock, subject.id, first.id)
    with pytest.raises(ResourceNotFound):
        reject_correction(any_store, clock, subject.id, "no-such-correction")


@pytest.mark.req("engram.provider.deleted-belief-not-found")
def test_deleting_a_belief_rejects_its_pending_corrections(
    any_store: Store, clock: FixedClock
) -> None:
    subject = create_subject(any_store, clock, "Grace", "UTC")
    belief = add_belief(any_store, clock, subject.id, "goal", "Learn Welsh.")
    correction = propose_correction(any_store, clock, subject.id, belief.id, "Learn Irish.", "rt")

    delete_belief(any_store, clock, subject.id, belief.id)

    [after] = list_corrections(any_store, subject.id)
    assert after.id == correction.id
    assert after.status is CorrectionStatus.REJECTED
    assert after.new_value == ""
    with pytest.raises(BeliefNotFound):
        propose_correction(any_store, clock, subject.id, belief.id, "again", "rt")
    with pytest.raises(BeliefNotFound):
        belief_history(any_store, subject.id, "never-issued")


def test_a_correction_timestamp_must_be_plausible(any_store: Store, clock: FixedClock) -> None:
    subject = create_subject(any_store, clock, "Grace", "UTC")

    with pytest.raises(InvalidRequest, match="timestamp"):
        propose_correction(
            any_store, clock, subject.id, "b", "v", "rt", clock.now() + timedelta(days=2)
        )
    assert list_corrections(any_store, subject.id) == []
