"""Recall over some of the rings when threads cross rings: which candidates are mounted is read
from the index's ring array (not a tantivy search), and the thread context of a mounted memory
reads its mounted neighbours only. On every backend."""

from __future__ import annotations

import pytest
import tantivy

from engram.memory import MemoryEngine, RecordInput, Tuning, recall, record_many
from engram.memory.internals import TEXT_SCHEMA

REPO, TEAM = "repo:0000000000000000", "team:shared"
NO_THREAD_BM25 = Tuning(thread=0.0)  # only the neighbours' context links thread members


def _two_threads(engine: MemoryEngine) -> None:
    """Threads x and y hold texts alike for BM25 ("quartz" once in as many words; the last
    word, north or south, keeps the memories apart), in the same order; x's first memory is in
    the team ring (M3), every other one in the repository ring (M2)."""
    record_many(
        engine,
        [
            RecordInput(text="quartz amber north", kind="fact", ring="M3", thread="x"),
            RecordInput(text="quartz basalt north", kind="fact", ring="M2", thread="x"),
            RecordInput(text="quartz amber south", kind="fact", ring="M2", thread="y"),
            RecordInput(text="quartz basalt south", kind="fact", ring="M2", thread="y"),
        ],
    )


@pytest.mark.req("engram.memory.recall-mounted-rings", "engram.memory.recall-thread-context")
def test_a_neighbour_in_a_ring_left_out_lends_no_context(engine: MemoryEngine) -> None:
    _two_threads(engine)

    def lexical(rings: list[str] | None) -> dict[str, float]:
        hits = recall(engine, "quartz", k=10, rings=rings, tuning=NO_THREAD_BM25).hits
        return {h.memory.text: h.components["lexical"] for h in hits}

    both = lexical(None)
    repo = lexical([REPO])
    assert set(repo) == {"quartz basalt north", "quartz amber south", "quartz basalt south"}
    # Every ring mounted: x and y are alike, so are their second memories' lexical scores.
    assert both["quartz basalt north"] == both["quartz basalt south"]
    # The repository ring alone: y's second memory still has its mounted neighbour's context,
    # x's lost the one in the team ring.
    assert repo["quartz basalt south"] == both["quartz basalt south"]
    assert repo["quartz basalt north"] < repo["quartz basalt south"]


@pytest.mark.req("engram.memory.recall-mounted-rings")
def test_the_ring_array_agrees_with_the_text_index_ring_field(engine: MemoryEngine) -> None:
    """Recall keeps a candidate by the ring array's code: it must name the ring the text
    index's ``ring`` field holds for the same document, for every document."""
    record_many(
        engine,
        [
            RecordInput(text=f"note {i} about quartz", kind="fact", ring=ring, thread=f"t{i // 4}")
            for i, ring in enumerate(["M2", "M3", "M4"] * 8)
        ],
    )
    view = engine.index.sync(engine.store)
    searcher = view.text_searcher
    codes = view.arrays["ring"]
    for ring, code in view.meta.rings.items():
        query = tantivy.Query.term_query(TEXT_SCHEMA, "ring", ring)
        hits = searcher.search(query, view.docs + 1, count=False).hits
        by_field = set(searcher.fast_field_values("doc", [a for _, a in hits]))
        by_array = {d for d in range(view.docs) if int(codes[d]) == code}
        assert by_array
        assert by_field == by_array
