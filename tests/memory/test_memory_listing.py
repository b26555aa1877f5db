"""Listing memories newest first, with their state, by cursor pages (issue 29)."""

from __future__ import annotations

import pytest

from engram.errors import InvalidRequest
from engram.memory import (
    MemoryEngine,
    RecordInput,
    forget,
    list_memories,
    record,
    subject_view,
    supersede,
)

ALICE, BOB = "alice-0001", "bob-0002"


@pytest.mark.req("engram.memory.list")
def test_a_listing_is_newest_first_in_stable_pages_with_each_state(engine: MemoryEngine) -> None:
    alice, bob = subject_view(engine, ALICE), subject_view(engine, BOB)
    texts = [f"Alice noted item number {i} in her garden diary." for i in range(7)]
    ids = [record(alice, t, "decision").memory.id for t in texts]
    record(bob, "Bob keeps bees behind the shed.", "decision")
    forget(alice, [ids[1]], actor="t")
    new = supersede(
        alice,
        ids[2],
        RecordInput("Alice noted item two moved to the orchard.", "decision"),
        actor="t",
    ).record.memory

    first = list_memories(alice, limit=3, own_only=True)
    assert [m.memory.id for m in first.items] == [new.id, ids[6], ids[5]]
    assert first.next_cursor is not None
    record(alice, "Alice noted a late frost.", "decision")  # lands before page one, not in page two
    second = list_memories(alice, limit=3, cursor=first.next_cursor, own_only=True)
    third = list_memories(alice, limit=3, cursor=second.next_cursor, own_only=True)
    assert [m.memory.id for m in second.items] == [ids[4], ids[3], ids[2]]
    assert [m.memory.id for m in third.items] == [ids[1], ids[0]]
    assert third.next_cursor is None
    states = {m.memory.id: m.state for m in (*first.items, *second.items, *third.items)}
    assert states[ids[1]] == "forgotten"
    assert states[ids[2]] == "superseded"
    assert states[ids[0]] == "current"
    assert states[new.id] == "current"
    assert all("Bob" not in m.memory.text for m in (*first.items, *second.items, *third.items))
    current = list_memories(alice, limit=200, own_only=True, include_withdrawn=False)
    assert {m.state for m in current.items} == {"current"}
    assert len(current.items) == 7  # 8 recorded + 1 superseding, less 2 withdrawn


@pytest.mark.req("engram.memory.list")
@pytest.mark.parametrize("cursor", ["-1", "1e3", "x", "9" * 20, "١٢"])
def test_a_cursor_the_server_did_not_give_is_refused_in_one_line(
    engine: MemoryEngine, cursor: str
) -> None:
    with pytest.raises(InvalidRequest, match=r"^cursor: "):
        list_memories(engine, cursor=cursor)


@pytest.mark.req("engram.memory.list")
@pytest.mark.parametrize("limit", [0, -3, 201])
def test_a_page_size_out_of_range_is_refused(engine: MemoryEngine, limit: int) -> None:
    with pytest.raises(InvalidRequest, match=r"^limit: "):
        list_memories(engine, limit=limit)
