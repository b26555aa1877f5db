"""Whose memory in the framework adapters: a LangGraph store and an Agents SDK session opened
for a subject see only that subject's items, and deleting the subject deletes them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engram.core.clock import FixedClock
from engram.errors import InvalidRequest
from engram.integrations import erase_subject_integrations
from engram.integrations.agents import EngramSession
from engram.integrations.langgraph import EngramStore
from engram.store import Store

ALICE, BOB = "alice-0001", "bob-0002"


@pytest.mark.req("engram.memory.owner.isolation", "engram.memory.subject-delete")
def test_a_langgraph_store_per_subject_keeps_their_items_apart(
    any_store: Store, clock: FixedClock
) -> None:
    shared = EngramStore(any_store, clock=clock)
    alice, bob = shared.for_subject(ALICE), EngramStore(any_store, clock=clock, subject=BOB)
    alice.put(("memories",), "pin", {"text": "My bank PIN hint is the Wyvernmere heron"})
    bob.put(("memories",), "pin", {"text": "My bank PIN hint is my first bicycle"})
    shared.put(("memories",), "team", {"text": "The office bank holiday rota"})

    assert bob.get(("memories",), "pin").value["text"].endswith("bicycle")  # type: ignore[union-attr]
    found = bob.search(("memories",), query="bank PIN hint heron Wyvernmere", limit=10)
    assert [i.value["text"] for i in found] == ["My bank PIN hint is my first bicycle"]
    assert [i.namespace for i in alice.search((), limit=10)] == [("memories",)]
    assert alice.list_namespaces() == [("memories",)]
    assert [i.key for i in shared.search(("memories",), limit=10)] == ["team"]
    assert all("Wyvernmere" not in str(i.value) for i in shared.search((), query="heron"))

    removed = erase_subject_integrations(shared.engine, ALICE, actor="test")

    assert removed >= 2  # the item row, its text row and ring, and the recorded memory
    assert alice.get(("memories",), "pin") is None
    assert alice.search((), query="Wyvernmere heron", limit=10) == []
    assert bob.get(("memories",), "pin") is not None
    with any_store.read() as tx:
        left = tx.scalar("SELECT COUNT(*) FROM memory_items WHERE text LIKE ?", ("%Wyvernmere%",))
    assert left == 0
    shared.close()


@pytest.mark.req("engram.memory.owner.isolation", "engram.memory.subject-delete")
def test_an_agents_session_per_subject_keeps_their_items_apart(
    any_store: Store, clock: FixedClock
) -> None:
    alice = EngramSession("chat-1", any_store, clock=clock, subject=ALICE)
    bob = EngramSession("chat-1", any_store, clock=clock, subject=BOB)
    plain = EngramSession("chat-1", any_store, clock=clock)
    item: Any = {"role": "user", "content": "my locker code is 5512"}

    asyncio.run(alice.add_items([item]))

    assert asyncio.run(alice.get_items()) == [item]
    assert asyncio.run(bob.get_items()) == []
    assert asyncio.run(plain.get_items()) == []
    with pytest.raises(InvalidRequest, match="reserved"):
        EngramSession("\x1falice-0001\x1fchat-1", any_store, clock=clock)
    from engram.memory import default_manifest_text, open_engine, parse_manifest

    engine = open_engine(any_store, parse_manifest(default_manifest_text()), clock)
    assert erase_subject_integrations(engine, ALICE, actor="test") == 1
    assert asyncio.run(alice.get_items()) == []
