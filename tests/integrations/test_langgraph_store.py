"""Every ``BaseStore`` method of LangGraph 1.x against ``EngramStore`` on memory, SQLite and
PostgreSQL (docs/integrations.md "LangGraph").

The expectations are LangGraph's (langgraph.store.base): the item shape and timestamps, a
batch's reads seeing the state before its writes, filters with ``$eq``/``$ne``/``$gt``/...,
``list_namespaces`` prefix/suffix/wildcards/max_depth, TTLs in minutes refreshed on read. Where
LangGraph's in-memory store is the reference for a behaviour, the test runs it side by side.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from engram.cli.internals import discover_components
from engram.core.canonical import Json
from engram.core.clock import FixedClock
from engram.errors import CanonicalJsonError
from engram.integrations.langgraph import EngramStore
from engram.integrations.langgraph.internals import manifest_text, ring_id_for
from engram.memory import open_engine, parse_manifest, recall
from engram.store import Store


@pytest.mark.req("engram.integrations.langgraph-store")
def test_put_get_keeps_the_value_and_langgraphs_timestamps(
    lg_store: EngramStore, clock: FixedClock
) -> None:
    value: dict[str, Json] = {"text": "Ada drinks green tea", "n": 3, "deep": {"a": [1, 2]}}
    lg_store.put(("users", "ada"), "tea", value)
    first = lg_store.get(("users", "ada"), "tea")
    assert first is not None
    assert (first.namespace, first.key, first.value) == (("users", "ada"), "tea", value)
    assert first.created_at == first.updated_at == clock.now()
    clock.advance(timedelta(minutes=5))
    lg_store.put(("users", "ada"), "tea", {"text": "Ada drinks oolong"})
    second = lg_store.get(("users", "ada"), "tea")
    assert second is not None
    assert second.value == {"text": "Ada drinks oolong"}
    assert second.created_at == first.created_at  # an update keeps the creation time
    assert second.updated_at == clock.now()
    assert lg_store.get(("users", "ada"), "coffee") is None
    assert lg_store.get(("users", "bob"), "tea") is None


@pytest.mark.req("engram.integrations.langgraph-store")
def test_delete_removes_the_item_from_get_search_and_namespaces(lg_store: EngramStore) -> None:
    lg_store.put(("docs",), "a", {"text": "incident report on the database failover"})
    lg_store.delete(("docs",), "a")
    assert lg_store.get(("docs",), "a") is None
    assert lg_store.search(("docs",)) == []
    assert lg_store.search(("docs",), query="database failover") == []
    assert lg_store.list_namespaces() == []
    lg_store.delete(("docs",), "never-there")  # deleting nothing is not an error


@pytest.mark.req(
    "engram.integrations.langgraph-store", "engram.integrations.langgraph-namespace-rings"
)
def test_a_query_search_ranks_only_the_namespaces_searched(lg_store: EngramStore) -> None:
    # Many more relevant items elsewhere must not crowd the searched namespace out of the
    # ranking: each namespace is a ring of its own, so recall reads only the ones searched.
    for i in range(60):
        lg_store.put(("users", f"u{i}"), "tea", {"text": f"user {i} drinks green tea daily"})
    lg_store.put(("users", "ada"), "tea", {"text": "Ada once tried tea"})
    lg_store.put(("users", "ada"), "job", {"text": "Ada writes compilers"})
    hits = lg_store.search(("users", "ada"), query="green tea", limit=5)
    # The match first; then, as LangGraph's stores answer, the namespace's other items.
    assert [(h.namespace, h.key) for h in hits] == [
        (("users", "ada"), "tea"),
        (("users", "ada"), "job"),
    ]
    assert hits[0].score is not None
    assert hits[0].score > 0
    assert hits[1].score == 0.0  # indexed, not ranked by recall
    # Over the whole prefix the 60 better matches come first, Ada's weaker one after them.
    wide = lg_store.search(("users",), query="green tea", limit=100)
    assert len(wide) == 62
    assert {h.namespace[1] for h in wide[:60]} == {f"u{i}" for i in range(60)}
    assert (wide[60].namespace, wide[60].key) == (("users", "ada"), "tea")
    assert (wide[61].namespace, wide[61].key, wide[61].score) == (("users", "ada"), "job", 0.0)
    assert ring_id_for("users.ada", 0) != ring_id_for("users.bob", 0)


@pytest.mark.req("engram.integrations.langgraph-hybrid-recall")
def test_query_scores_are_engrams_recall_scores(lg_store: EngramStore) -> None:
    texts = {
        "deploy": "Run the database migrations before every deploy",
        "tea": "The team drinks green tea on Fridays",
        "typo": "Deployment checklist: migrate, then restart the workers",
    }
    for key, text in texts.items():
        lg_store.put(("notes",), key, {"text": text}, index=["text"])
    hits = lg_store.search(("notes",), query="deploying migrations")
    # The same query through engram.memory.recall on the namespace's ring, directly.
    spec = parse_manifest(manifest_text([ring_id_for("notes", 0)]))
    direct = recall(open_engine(lg_store.store, spec, FixedClock()), "deploying migrations", 10)
    by_text = {h.memory.text: h.score for h in direct.hits}
    assert direct.stages["lexical"] == "ok"
    assert direct.stages["local_vector"] == "ok"
    assert hits, "stemming finds 'deploy' and 'migrations' for 'deploying migrations'"
    assert len(hits) == 3  # the top `limit` items under the prefix, as LangGraph's stores answer
    for hit in hits:
        assert hit.score == pytest.approx(by_text.get(texts[hit.key], 0.0))
    assert [h.score for h in hits] == sorted((h.score or 0.0 for h in hits), reverse=True)
    assert hits[0].key == "deploy"


@pytest.mark.req("engram.integrations.langgraph-store")
def test_listing_is_newest_first_and_pages(lg_store: EngramStore, clock: FixedClock) -> None:
    for i in range(7):
        lg_store.put(("log",), f"k{i}", {"i": i})
        clock.advance(timedelta(seconds=1))
    assert [h.key for h in lg_store.search(("log",))] == [f"k{i}" for i in range(6, -1, -1)]
    page = lg_store.search(("log",), limit=3, offset=2)
    assert [h.key for h in page] == ["k4", "k3", "k2"]
    assert all(h.score is None for h in page)
    assert lg_store.search(("log",), limit=0) == []
    assert len(lg_store.search((), limit=100)) == 7  # the empty prefix is the whole store


FILTER_ITEMS: list[tuple[str, dict[str, Json]]] = [
    ("a", {"kind": "report", "score": 4.5, "meta": {"lang": "en"}, "tags": ["x", "y"]}),
    ("b", {"kind": "report", "score": 2, "meta": {"lang": "fr"}, "tags": ["x"]}),
    ("c", {"kind": "note", "score": 9, "meta": {"lang": "en"}}),
    ("d", {"kind": "note", "score": "7.5"}),
]
FILTERS: list[dict[str, Json]] = [
    {"kind": "report"},
    {"kind": {"$eq": "note"}},
    {"kind": {"$ne": "note"}},
    {"score": {"$gt": 4.5}},
    {"score": {"$gte": 4.5}},
    {"score": {"$lt": 4.5}},
    {"score": {"$lte": 4.5, "$gt": 1}},
    {"meta": {"lang": "en"}},
    {"tags": ["x", "y"]},
    {"kind": "report", "meta": {"lang": "fr"}},
    {"missing": "x"},
]


@pytest.mark.req("engram.integrations.langgraph-filters")
@pytest.mark.parametrize("wanted", FILTERS, ids=[str(f) for f in FILTERS])
def test_filters_select_what_langgraphs_own_store_selects(
    lg_store: EngramStore, wanted: dict[str, Json]
) -> None:
    reference = InMemoryStore()
    for key, value in FILTER_ITEMS:
        lg_store.put(("f",), key, value)
        reference.put(("f",), key, value)
    ours = {h.key for h in lg_store.search(("f",), filter=wanted)}
    theirs = {h.key for h in reference.search(("f",), filter=wanted)}
    assert ours == theirs


@pytest.mark.req("engram.integrations.langgraph-filters")
def test_a_filter_applies_to_a_query_search_and_bad_operators_are_refused(
    lg_store: EngramStore,
) -> None:
    lg_store.put(("f",), "en", {"text": "green tea notes", "lang": "en"})
    lg_store.put(("f",), "fr", {"text": "green tea notes, en français", "lang": "fr"})
    hits = lg_store.search(("f",), query="green tea", filter={"lang": "fr"})
    assert [h.key for h in hits] == ["fr"]
    with pytest.raises(ValueError, match="Unsupported operator"):
        lg_store.search(("f",), filter={"lang": {"$regex": "f.*"}})


@pytest.mark.req("engram.integrations.langgraph-store")
def test_index_false_and_field_paths_decide_what_a_query_finds(lg_store: EngramStore) -> None:
    lg_store.put(("i",), "hidden", {"text": "volcano eruption"}, index=False)
    lg_store.put(("i",), "title", {"title": "volcano", "body": "unrelated"}, index=["body"])
    lg_store.put(
        ("i",),
        "many",
        {"ctx": [{"content": "lava"}, {"content": "volcano ash"}]},
        index=["ctx[*].content"],
    )
    lg_store.put(("i",), "whole", {"nested": {"deep": "volcano monitoring"}})  # default "$"
    found = lg_store.search(("i",), query="volcano")
    assert {h.key for h in found[:2]} == {"many", "whole"}
    # Then what recall did not rank: indexed (score 0.0), then put with index=False (None).
    assert [(h.key, h.score) for h in found[2:]] == [("title", 0.0), ("hidden", None)]
    assert {h.key for h in lg_store.search(("i",), query="volcano", limit=2)} == {"many", "whole"}
    assert {h.key for h in lg_store.search(("i",))} == {"hidden", "title", "many", "whole"}


@pytest.mark.req("engram.integrations.langgraph-store")
def test_list_namespaces_matches_langgraphs_in_memory_store(lg_store: EngramStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("x", "y"),
    ]
    reference = InMemoryStore()
    for ns in namespaces:
        lg_store.put(ns, "k", {"v": 1})
        reference.put(ns, "k", {"v": 1})
    cases: list[dict[str, object]] = [
        {},
        {"prefix": ("a", "b")},
        {"prefix": ("a", "b"), "max_depth": 3},
        {"suffix": ("f",)},
        {"prefix": ("a", "*"), "suffix": ("f",)},
        {"prefix": ("a",), "limit": 2, "offset": 1},
        {"max_depth": 1},
    ]
    for case in cases:
        assert lg_store.list_namespaces(**case) == reference.list_namespaces(**case), case  # type: ignore[arg-type]


@pytest.mark.req("engram.integrations.langgraph-store")
def test_a_batch_reads_before_it_writes_and_the_last_put_wins(lg_store: EngramStore) -> None:
    lg_store.put(("b",), "k", {"v": 0})
    results = lg_store.batch(
        [
            PutOp(("b",), "k", {"v": 1}),
            GetOp(("b",), "k"),
            PutOp(("b",), "k", {"v": 2}),
            SearchOp(("b",)),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("b",)),)),
            PutOp(("b",), "new", {"v": 3}),
        ]
    )
    assert results[0] is None
    assert results[2] is None
    assert results[5] is None
    got, listed = results[1], results[3]
    assert isinstance(got, Item)
    assert got.value == {"v": 0}
    assert isinstance(listed, list)
    assert [i.key for i in listed if isinstance(i, Item)] == ["k"]
    assert results[4] == [("b",)]
    final = lg_store.get(("b",), "k")
    assert final is not None
    assert final.value == {"v": 2}
    assert lg_store.get(("b",), "new") is not None


@pytest.mark.req("engram.integrations.langgraph-store")
def test_the_async_methods_match_the_sync_ones(lg_store: EngramStore) -> None:
    async def run() -> None:
        await lg_store.aput(("as",), "k", {"text": "asynchronous green tea"})
        item = await lg_store.aget(("as",), "k")
        assert item is not None
        assert item.value == {"text": "asynchronous green tea"}
        hits = await lg_store.asearch(("as",), query="green tea")
        assert [h.key for h in hits] == ["k"]
        assert await lg_store.alist_namespaces() == [("as",)]
        both = await lg_store.abatch([GetOp(("as",), "k"), SearchOp(("as",))])
        assert both[0] == item
        assert isinstance(both[1], list)
        assert [i.key for i in both[1] if isinstance(i, Item)] == ["k"]
        await lg_store.adelete(("as",), "k")
        assert await lg_store.aget(("as",), "k") is None

    asyncio.run(run())


@pytest.mark.req("engram.integrations.langgraph-ttl")
def test_ttls_expire_refresh_on_read_and_are_swept(
    lg_store: EngramStore, clock: FixedClock
) -> None:
    lg_store.put(("t",), "short", {"text": "ephemeral note"}, ttl=10)
    lg_store.put(("t",), "forever", {"text": "permanent note"})
    clock.advance(timedelta(minutes=8))
    assert lg_store.get(("t",), "short") is not None  # read at 8 min: expiry moves to 18 min
    clock.advance(timedelta(minutes=8))
    assert lg_store.get(("t",), "short", refresh_ttl=False) is not None  # 16 min: still alive
    clock.advance(timedelta(minutes=3))  # 19 min: the refresh at 16 did not happen
    assert lg_store.get(("t",), "short") is None
    assert [h.key for h in lg_store.search(("t",))] == ["forever"]
    assert [h.key for h in lg_store.search(("t",), query="note")] == ["forever"]
    assert lg_store.sweep_ttl() == 1
    assert lg_store.sweep_ttl() == 0
    assert lg_store.get(("t",), "forever") is not None


@pytest.mark.req("engram.integrations.langgraph-ttl")
def test_the_ttl_config_default_applies_to_puts(any_store: Store, clock: FixedClock) -> None:
    store = EngramStore(any_store, clock=clock, ttl={"default_ttl": 1, "refresh_on_read": False})
    store.put(("t",), "k", {"v": 1})
    clock.advance(timedelta(seconds=50))
    assert store.get(("t",), "k") is not None
    clock.advance(timedelta(seconds=20))
    assert store.get(("t",), "k") is None
    assert store.supports_ttl


@pytest.mark.req("engram.integrations.langgraph-namespace-rings")
def test_a_namespace_full_of_stale_memories_moves_to_a_fresh_ring(
    any_store: Store, clock: FixedClock
) -> None:
    store = EngramStore(any_store, clock=clock, compact_after=5)
    for i in range(20):
        store.put(("profile",), "ada", {"text": f"Ada's favourite number is {i}"})
    with any_store.read() as tx:
        ring = tx.one("SELECT ring_id, generation FROM langgraph_rings WHERE prefix = 'profile'")
    assert ring is not None
    assert ring["generation"] >= 1
    assert ring["ring_id"] == ring_id_for("profile", ring["generation"])
    hits = store.search(("profile",), query="favourite number")
    assert [h.value for h in hits] == [{"text": "Ada's favourite number is 19"}]


@pytest.mark.req("engram.integrations.langgraph-store")
def test_bad_input_is_refused_and_writes_nothing(lg_store: EngramStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        lg_store.batch([PutOp(("a.b",), "k", {"v": 1})])  # "a.b" must not address ("a", "b")
    with pytest.raises(InvalidNamespaceError):
        lg_store.put(("langgraph",), "k", {"v": 1})  # LangGraph reserves the root label
    with pytest.raises(CanonicalJsonError):
        lg_store.put(("a",), "k", {"v": float("nan")})
    assert lg_store.list_namespaces() == []
    with pytest.raises(ValueError, match="engine"):
        EngramStore(lg_store.store, index={"dims": 1536, "embed": "openai:text-embedding-3-small"})


@pytest.mark.req("engram.integrations.langgraph-store")
def test_engram_db_knows_the_adapters_tables() -> None:
    names = {c.name for c in discover_components()}
    assert {"langgraph-store", "openai-agents-sessions", "pam", "memory-withdrawn"} <= names
