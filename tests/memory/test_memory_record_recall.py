"""record and recall on every backend: content addresses, ring rights, hybrid retrieval, budgets."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from memory_kit import manifest_text

from engram.core.canonical import canonicalize
from engram.core.clock import FixedClock
from engram.errors import Forbidden, InvalidRequest
from engram.memory import (
    MemoryEngine,
    RecordInput,
    memory_id,
    open_engine,
    parse_manifest,
    recall,
    record,
    record_many,
    status,
)
from engram.memory.internals import LOCAL_ENGINE, indexed_local_vector, local_vector
from engram.store import Store


@pytest.mark.req("engram.memory.record-content-addressed")
def test_a_memory_id_is_the_content_address_and_recording_twice_is_one_memory(
    engine: MemoryEngine,
) -> None:
    first = record(engine, "Pin numpy in CI", "invariant", "M3")
    again = record(engine, "Pin numpy in CI", "invariant", "M3")
    elsewhere = record(engine, "Pin numpy in CI", "invariant", "M4")
    assert first.created
    assert not again.created
    assert elsewhere.created
    assert (
        first.memory.id
        == again.memory.id
        == memory_id("team:shared", "invariant", "Pin numpy in CI")
    )
    assert elsewhere.memory.id != first.memory.id  # same text, another ring: another memory
    assert first.memory.ring == "M3"
    assert first.memory.ring_id == "team:shared"
    assert canonicalize(first.to_wire())  # the result is I-JSON


@pytest.mark.req("engram.memory.record-writable-rings")
@pytest.mark.parametrize("ring", ["M0", "M1", "canon:shared", "team:elsewhere", "M5"])
def test_records_go_only_into_writable_m2_to_m4_mounts(engine: MemoryEngine, ring: str) -> None:
    with pytest.raises(Forbidden):
        record(engine, "not allowed here", "fact", ring)
    assert status(engine).vector_coverage["memories"] == 0


@pytest.mark.req("engram.memory.record-allowed-kinds")
def test_a_kind_outside_allowed_kinds_is_refused(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidRequest, match="kind 'gossip' is not in this seat's allowed_kinds"):
        record(engine, "text", "gossip")


@pytest.mark.req("engram.memory.record-entities", "engram.memory.record-local-vector")
def test_entities_come_from_entity_patterns_and_every_memory_has_a_local_vector(
    engine: MemoryEngine,
) -> None:
    result = record(engine, "ADR-0042 replaced K07 and ADR-0042 stays", "decision", "M2")
    assert result.memory.entities == ("ADR-0042", "K07")
    # Derived bit for bit from the text, the vector lives in the index beside the store.
    stored = indexed_local_vector(engine, result.memory.id)
    assert stored is not None
    assert stored.shape == (128,)
    assert stored.tobytes() == local_vector(result.memory.text).tobytes()
    assert abs(float(np.linalg.norm(stored)) - 1.0) < 1e-5
    assert status(engine).vector_coverage[LOCAL_ENGINE] == 1


@pytest.mark.req("engram.memory.record-local-vector")
def test_the_local_vector_is_deterministic_and_offline() -> None:
    a, b = local_vector("the build cache is stale"), local_vector("the build cache is stale")
    assert a.dtype == np.float32
    assert a.shape == (128,)
    assert np.array_equal(a, b)
    assert float(a @ local_vector("stale build cache")) > float(a @ local_vector("tea party"))


@pytest.mark.req("engram.memory.record-batch-atomic")
def test_a_batch_with_one_bad_item_writes_nothing(engine: MemoryEngine) -> None:
    items = [RecordInput("good one", "fact"), RecordInput("bad kind", "gossip")]
    with pytest.raises(InvalidRequest, match=r"record\[1\]"):
        record_many(engine, items)
    assert status(engine).vector_coverage["memories"] == 0
    seen: list[int] = []
    results = record_many(
        engine, [RecordInput(f"memory number {i}", "fact") for i in range(5)], progress=seen.append
    )
    assert seen == [1, 2, 3, 4, 5]
    assert all(r.created for r in results)


@pytest.mark.req("engram.memory.recall-hybrid")
def test_recall_ranks_by_fused_lexical_and_vector_evidence(engine: MemoryEngine) -> None:
    record(engine, "The deploy failed because the database migration was not applied", "incident")
    record(engine, "Lunch is at noon on Fridays", "fact")
    record(engine, "Run database migrations before deploying the service", "procedure", "M2")
    result = recall(engine, "why did the deploy fail? database migration", k=2)
    texts = [h.memory.text for h in result.hits]
    assert texts[0].startswith("The deploy failed")
    assert "Lunch is at noon on Fridays" not in texts
    assert result.stages == {
        "lexical": "ok",
        "local_vector": "ok",
        "dense": "disabled",
        "rerank": "disabled",
    }
    assert not result.degraded
    assert {"lexical", "local_vector", "fused"} <= set(result.hits[0].components)
    assert canonicalize(result.to_wire())


@pytest.mark.req("engram.memory.recall-hybrid")
def test_a_misspelt_query_still_finds_a_memory_through_the_local_vector(
    engine: MemoryEngine,
) -> None:
    record(engine, "kubernetes autoscaler thresholds", "fact")
    result = recall(engine, "kubernetis autoscaling", k=1)
    assert [h.memory.text for h in result.hits] == ["kubernetes autoscaler thresholds"]


@pytest.mark.req("engram.memory.recall-mounted-rings")
def test_recall_sees_only_the_rings_this_seat_mounts(any_store: Store, clock: FixedClock) -> None:
    mine = open_engine(any_store, parse_manifest(manifest_text(), "a.toml"), clock)
    other_text = manifest_text().replace("repo:0000000000000000", "repo:1111111111111111")
    other = open_engine(any_store, parse_manifest(other_text, "b.toml"), clock)
    record(other, "the other repository's secret handshake", "fact", "M2")
    record(mine, "our own handshake procedure", "procedure", "M2")
    texts = [h.memory.text for h in recall(mine, "handshake", k=10).hits]
    assert texts == ["our own handshake procedure"]
    with pytest.raises(Forbidden):
        recall(mine, "handshake", rings=["repo:1111111111111111"])


@pytest.mark.req("engram.memory.recall-index-current")
def test_an_engine_sees_memories_another_engine_recorded_in_the_same_store(
    any_store: Store,
    spec: object,
    clock: FixedClock,
) -> None:
    text = manifest_text()
    reader = open_engine(any_store, parse_manifest(text, "a.toml"), clock)
    writer = open_engine(any_store, parse_manifest(text, "a.toml"), clock)
    assert recall(reader, "semaphore").hits == ()
    record(writer, "the semaphore guards the pool", "invariant")
    assert [h.memory.text for h in recall(reader, "semaphore").hits] == [
        "the semaphore guards the pool"
    ]


@pytest.mark.req("engram.memory.recall-budget")
def test_the_slate_is_cut_to_the_budget_split_by_mount_share(
    any_store: Store,
    clock: FixedClock,
) -> None:
    # budget 100 tokens: M2 30, M3 15, M4 25 (and M0 20, M1 10 with nothing in them).
    engine = open_engine(any_store, parse_manifest(manifest_text(budget=100), "a.toml"), clock)
    words = "alpha " * 38  # 228 characters: 57 tokens, bigger than any single share
    record(engine, "alpha beta gamma " + words, "fact", "M2")
    m4 = [record(engine, f"alpha note {i} " + "x" * 40, "fact").memory for i in range(4)]
    result = recall(engine, "alpha", k=10)
    assert result.budget_tokens == 100
    assert result.used_tokens <= 100
    by_ring: dict[str, int] = {}
    for hit in result.hits:
        by_ring[hit.memory.ring] = by_ring.get(hit.memory.ring, 0) + hit.memory.tokens
    assert "M2" not in by_ring  # 57 tokens fit neither M2's 30 nor any pool
    assert by_ring["M4"] <= 25
    assert by_ring["M4"] == m4[0].tokens * (25 // m4[0].tokens)


@pytest.mark.req("engram.memory.recall-mmr")
def test_mmr_keeps_near_duplicates_from_filling_the_slate(engine: MemoryEngine) -> None:
    for i in range(4):
        record(engine, f"restart the cache server to fix stale reads{'!' * i}", "procedure")
    record(engine, "stale reads come from the replica lag; read from the primary", "incident")
    hits = [h.memory.text for h in recall(engine, "fix stale reads cache", k=2).hits]
    assert "stale reads come from the replica lag; read from the primary" in hits


@pytest.mark.req("engram.memory.recall-thread-context")
def test_a_neighbouring_turn_of_the_same_thread_lifts_the_answer(engine: MemoryEngine) -> None:
    turns = [
        "Mel: did you go anywhere nice last weekend?",
        "Caroline: yes, the pottery workshop",
        "Mel: how was it?",
        "Caroline: I made a bowl for my mum",
    ]
    record_many(engine, [RecordInput(t, "episode", thread="conv-1/s1") for t in turns])
    for i in range(6):
        record(
            engine,
            f"Caroline: unrelated remark number {i} about weekend plans",
            "episode",
            thread=f"conv-1/s{i + 2}",
        )
    hits = [
        h.memory.text for h in recall(engine, "what did Caroline make at the workshop?", k=4).hits
    ]
    # The answer shares only the speaker's name with the question; its neighbour carries it.
    assert "Caroline: I made a bowl for my mum" in hits
    assert not any("unrelated remark" in text for text in hits)


@pytest.mark.req("engram.memory.recall-hybrid")
def test_recall_refuses_an_empty_query_and_a_bad_k(engine: MemoryEngine) -> None:
    with pytest.raises(InvalidRequest):
        recall(engine, "   ")
    with pytest.raises(InvalidRequest):
        recall(engine, "x", k=0)


@pytest.mark.req("engram.memory.record-content-addressed")
def test_results_serialise(make_engine: Callable[..., MemoryEngine]) -> None:
    engine = make_engine()
    result = record(engine, "serialise me", "fact", provenance={"source": "test"})
    assert result.memory.provenance == {"source": "test"}
    assert canonicalize(status(engine).to_wire())
