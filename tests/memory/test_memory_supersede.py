"""Supersede and recall as of an instant: facts that change over time (text that is not LoCoMo)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engram.core.clock import FixedClock
from engram.errors import ConflictError, InvalidRequest, ResourceNotFound
from engram.memory import (
    MemoryEngine,
    RecordInput,
    history,
    recall,
    record,
    restore,
    subject_view,
    supersede,
)

ALICE, BOB = "alice-0001", "bob-0002"


def _texts(engine: MemoryEngine, query: str, **kwargs: object) -> list[str]:
    return [h.memory.text for h in recall(engine, query, 10, **kwargs).hits]  # type: ignore[arg-type]


@pytest.mark.req("engram.memory.supersede", "engram.memory.as-of", "engram.memory.history")
def test_the_current_version_is_served_and_the_old_one_answers_as_of_its_time(
    engine: MemoryEngine, clock: FixedClock
) -> None:
    alice = subject_view(engine, ALICE)
    start = clock.now()
    clock.advance(timedelta(days=1))
    york = record(alice, "Alice lives in York, near the Minster.", "decision").memory
    record(alice, "Alice's cat is called Pebble.", "decision")
    clock.advance(timedelta(days=30))
    between = clock.now()
    clock.advance(timedelta(days=30))
    leeds = supersede(
        alice, york.id, RecordInput("Alice lives in Leeds since the move.", "decision"), actor="t"
    )
    clock.advance(timedelta(days=1))

    now_texts = _texts(alice, "where does Alice live")
    assert "Alice lives in Leeds since the move." in now_texts
    assert york.text not in now_texts  # never both
    then = _texts(alice, "where does Alice live", as_of=between)
    assert york.text in then
    assert leeds.record.memory.text not in then
    assert _texts(alice, "where does Alice live", as_of=start) == []  # before the first memory
    assert _texts(alice, "where does Alice live", as_of=clock.now() + timedelta(days=400)) == (
        now_texts
    )  # a future instant answers what is current
    old = history(alice, york.id)
    assert old.state == "superseded"  # withdrawn from recall, kept
    assert [(e.event, e.detail) for e in old.entries] == [
        ("recorded", f"subject:{ALICE}"),
        ("superseded", f"by {leeds.record.memory.id}"),
    ]
    assert [e.event for e in history(alice, leeds.record.memory.id).entries] == [
        "recorded",
        "supersedes",
    ]
    with pytest.raises(ConflictError, match="was superseded"):
        restore(alice, [york.id], actor="t")


@pytest.mark.req("engram.memory.supersede")
def test_a_supersede_chain_stays_linear_and_never_cycles(engine: MemoryEngine) -> None:
    alice, bob = subject_view(engine, ALICE), subject_view(engine, BOB)
    first = record(alice, "The team meets on Tuesdays.", "decision").memory
    second = supersede(
        alice, first.id, RecordInput("The team meets on Wednesdays.", "decision"), actor="t"
    ).record.memory

    with pytest.raises(ConflictError, match="a cycle"):
        supersede(alice, second.id, RecordInput(first.text, "decision"), actor="t")
    with pytest.raises(ConflictError, match="already superseded by"):
        supersede(alice, first.id, RecordInput("The team meets on Fridays.", "decision"), actor="t")
    with pytest.raises(InvalidRequest, match="cannot supersede itself"):
        supersede(alice, second.id, RecordInput(second.text, "decision"), actor="t")
    with pytest.raises(ResourceNotFound, match="no memory"):
        supersede(bob, second.id, RecordInput("Bob's meeting is Monday.", "decision"), actor="t")
    again = supersede(
        alice, first.id, RecordInput("The team meets on Wednesdays.", "decision"), actor="t"
    )
    assert again.changed is False  # the same supersede twice is one
    third = supersede(
        alice, second.id, RecordInput("The team meets on Thursdays.", "decision"), actor="t"
    )
    assert _texts(alice, "when does the team meet")[0] == third.record.memory.text
