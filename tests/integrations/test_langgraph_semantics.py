"""EngramStore beside LangGraph's own InMemoryStore where LangGraph's store tests state a
behaviour (a query search answers the top ``limit`` items under the prefix, pages, index=False,
TTL refresh on read, namespaces of deleted items), and a ``put`` of a chat recorded as a
conversation: one memory per turn with its speaker and time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from engram.core.clock import FixedClock
from engram.integrations.langgraph import EngramStore
from engram.memory import get_memory
from engram.store import Store


def letters(texts: Sequence[str]) -> list[list[float]]:
    """A toy embedding for the reference store: how often each letter a-z occurs."""
    out = []
    for text in texts:
        counts = [0.0] * 26
        for c in text.lower():
            if "a" <= c <= "z":
                counts[ord(c) - 97] += 1
        out.append(counts)
    return out


def reference() -> InMemoryStore:
    return InMemoryStore(index={"dims": 26, "embed": letters})


DOCS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


@pytest.mark.req("engram.integrations.langgraph-search-top-limit")
def test_a_query_search_answers_every_item_under_the_prefix_best_first(
    lg_store: EngramStore,
) -> None:
    ref = reference()
    for key, value in DOCS:
        lg_store.put(("test",), key, value)
        ref.put(("test",), key, value)
    cases: list[tuple[str, dict[str, Any] | None]] = [
        ("bbbbluuu", {"score": {"$gt": 3.2}}),  # matches no word: still every filtered item
        ("apple", {"color": "red"}),
        ("car", None),
    ]
    for query, wanted in cases:
        ours = lg_store.search(("test",), query=query, filter=wanted)
        theirs = ref.search(("test",), query=query, filter=wanted)
        assert {h.key for h in ours} == {h.key for h in theirs}, query
        assert all(h.score is not None for h in ours)  # every indexed item has a score
    best = lg_store.search(("test",), query="apple", filter={"color": "red"})
    assert [h.key for h in best] == ["doc1", "doc2"]  # the match first
    assert best[0].score is not None
    assert best[0].score > 0.0


@pytest.mark.req("engram.integrations.langgraph-search-top-limit")
def test_query_pages_cover_every_item_and_unindexed_items_come_last(
    lg_store: EngramStore, clock: FixedClock
) -> None:
    for i in range(5):
        lg_store.put(("p",), f"doc{i}", {"text": f"test document number {i}"})
        clock.advance(timedelta(seconds=1))
    first = lg_store.search(("p",), query="test", limit=2)
    second = lg_store.search(("p",), query="test", limit=2, offset=2)
    third = lg_store.search(("p",), query="test", limit=2, offset=4)
    keys = [h.key for h in (*first, *second, *third)]
    assert sorted(keys) == [f"doc{i}" for i in range(5)]
    assert len(lg_store.search(("p",), query="test", limit=10)) == 5
    lg_store.put(("p",), "hidden", {"text": "test document number 9"}, index=False)
    top = lg_store.search(("p",), query="test document", limit=3)
    assert "hidden" not in [h.key for h in top]  # indexed items fill the page first
    everything = lg_store.search(("p",), query="test document", limit=10)
    assert (everything[-1].key, everything[-1].score) == ("hidden", None)
    for empty in ("", None):  # no query: the listing, newest first
        assert [h.key for h in lg_store.search(("p",), query=empty, limit=2)] == [
            "hidden",
            "doc4",
        ]


@pytest.mark.req("engram.integrations.langgraph-ttl")
def test_search_refreshes_what_it_returns_and_never_an_expired_item(
    any_store: Store, clock: FixedClock
) -> None:
    store = EngramStore(any_store, clock=clock, ttl={"default_ttl": 10})
    store.put(("t",), "a", {"text": "kept alive by searches"})
    store.put(("t",), "b", {"text": "left alone"}, ttl=5)
    clock.advance(timedelta(minutes=8))  # b expired at 5
    assert [h.key for h in store.search(("t",), query="searches", refresh_ttl=True)] == ["a"]
    clock.advance(timedelta(minutes=8))  # 16 min: a's expiry moved to 18
    assert store.get(("t",), "a", refresh_ttl=False) is not None
    assert store.get(("t",), "b", refresh_ttl=True) is None  # not resurrected
    no_refresh = EngramStore(any_store, clock=clock, ttl={"refresh_on_read": False})
    no_refresh.put(("u",), "k", {"v": 1}, ttl=10)
    clock.advance(timedelta(minutes=8))
    assert no_refresh.get(("u",), "k") is not None  # read, but the config says no refresh
    clock.advance(timedelta(minutes=3))
    assert no_refresh.get(("u",), "k") is None


@pytest.mark.req("engram.integrations.langgraph-store")
def test_a_namespace_whose_items_are_all_deleted_is_no_longer_listed(
    lg_store: EngramStore,
) -> None:
    """As LangGraph's SQLite and PostgreSQL stores answer (their rows are the namespaces);
    InMemoryStore keeps listing an emptied namespace, a difference docs/integrations.md notes."""
    lg_store.put(("a", "b"), "k", {"v": 1})
    lg_store.put(("a", "c"), "k", {"v": 1})
    lg_store.delete(("a", "b"), "k")
    assert lg_store.list_namespaces() == [("a", "c")]
    ref = InMemoryStore()
    ref.put(("a", "b"), "k", {"v": 1})
    ref.delete(("a", "b"), "k")
    assert ref.list_namespaces() == [("a", "b")]


CHAT = [
    {"role": "system", "content": "You are a gardening assistant."},
    {
        "role": "user",
        "name": "Noor",
        "content": "My tomatoes have yellow leaves since the heatwave.",
        "timestamp": "2026-07-02T18:05:00Z",
    },
    {
        "role": "assistant",
        "content": "Water them at the base in the morning and mulch the bed.",
        "timestamp": "2026-07-02T18:05:30Z",
    },
]


@pytest.mark.req("engram.integrations.langgraph-conversations")
def test_a_put_of_messages_records_each_turn_with_its_speaker_and_time(
    any_store: Store,
) -> None:
    clock = FixedClock(datetime(2026, 7, 3, tzinfo=UTC))
    store = EngramStore(any_store, clock=clock)
    store.put(("chats", "noor"), "2026-07-02", {"messages": CHAT, "topic": "garden"})
    assert store.get(("chats", "noor"), "2026-07-02").value["messages"] == CHAT  # type: ignore[union-attr]
    [hit] = store.search(("chats", "noor"), query="why are my tomato leaves yellow?")
    assert hit.key == "2026-07-02"
    assert hit.score is not None
    assert hit.score > 0.0
    with any_store.read() as tx:
        rows = tx.execute(
            "SELECT path, memory_id FROM langgraph_texts WHERE key = '2026-07-02' ORDER BY path"
        )
        recorded = int(tx.scalar("SELECT recorded FROM langgraph_rings") or 0)
    assert [r["path"] for r in rows] == ["messages.1", "messages.2"]  # "$" is the turns
    memories = [get_memory(store.engine, r["memory_id"]) for r in rows[:2]]
    noor, reply = (m for m in memories if m is not None)
    assert noor.text == (
        "[2 Jul 2026, 18:05 UTC] Noor: My tomatoes have yellow leaves since the heatwave."
    )
    assert noor.provenance["speaker"] == "Noor"
    assert noor.provenance["occurred_at"] == "2026-07-02T18:05:00.000000Z"
    assert reply.provenance["role"] == "assistant"
    assert noor.thread == reply.thread == "langgraph:chats.noor/2026-07-02"
    # Putting the same conversation again records nothing new; the item still finds its turns.
    store.put(("chats", "noor"), "2026-07-02", {"messages": CHAT, "topic": "garden"})
    with any_store.read() as tx:
        assert int(tx.scalar("SELECT recorded FROM langgraph_rings") or 0) == recorded
    assert [h.key for h in store.search(("chats",), query="mulch the bed")] == ["2026-07-02"]


@pytest.mark.req("engram.integrations.langgraph-conversations")
def test_messages_that_are_not_a_chat_are_indexed_as_any_value(lg_store: EngramStore) -> None:
    lg_store.put(("n",), "k", {"messages": ["just", "strings"]})
    lg_store.put(("n",), "sys", {"messages": [{"role": "system", "content": "only a prompt"}]})
    lg_store.put(("n",), "off", {"messages": [{"role": "user", "content": "hi"}]}, index=False)
    with lg_store.store.read() as tx:
        paths = [r["path"] for r in tx.execute("SELECT path FROM langgraph_texts ORDER BY key")]
    assert paths == ["$", "$"]  # indexed whole, as any value; the index=False one not at all
