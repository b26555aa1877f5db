"""Recall's head-only ranking gives the slate the full ranking gives (docs/spec/memory-retrieval.md
"Fifth pass").

Below SCAN_LIMIT the local scan adds candidates outside the BM25 top-100; recall scores them
exactly only when their bounded fused score could reach MMR's head, and ranks again in full
when the budget walks past that head. Every query here is answered both ways and must give
the same memories, in the same order, with the same scores and token use; the corpus makes
the shortcut act (a word in most documents, so the BM25 top is full) and the tight budget
makes the walk run past the head (the fallback).
"""

from __future__ import annotations

import random

import pytest

from engram.memory import MemoryEngine, RecordInput, Tuning, record_many
from engram.memory.internals import fused_ranking, slate, slate_of

QUERIES = [
    "zorblax filler12 filler7",
    "quennit midaword",
    "zorblax quennit filler3 filler300",
    "filler1 filler2 filler3 filler4",
    "zorblax",
    "midbword rareathing filler99",
    "zorblaks quennet",  # misspelt: only the local scan finds these words' neighbours
    # One common word and misspelt ones: BM25 barely separates the candidates, so the local
    # cosine decides which scan candidates reach the head and which are left at their bound.
    "zorblax fillr12 fillr7",
    "zorblax filer300 fillr31",
    "quennit fillr2",
    "blorvik quintesa marmelad",
]


def _corpus(n: int) -> list[str]:
    rng = random.Random(5)
    texts = []
    for i in range(n):
        words = [f"filler{rng.randrange(400)}" for _ in range(rng.randrange(3, 40))]
        if rng.random() < 0.8:
            words.append("zorblax")
        if rng.random() < 0.3:
            words.append("quennit")
        if rng.random() < 0.2:
            words.append(rng.choice(["midaword", "midbword", "midcword"]))
        if i % 50 == 0:
            words.append("rareathing")
        rng.shuffle(words)
        texts.append(f"note {i}: " + " ".join(words))
    # Where the bound matters: 150 short notes hold the BM25 top for "blorvik", while 100
    # longer ones (lower BM25) spell the query's other words nearly alike, so the local scan
    # brings them in with a high cosine: bounded, they reach the head; scored, most do not.
    texts += [f"short {i}: blorvik filler{i % 400}" for i in range(150)]
    texts += [
        f"long {i}: blorvik quintessa quintessal marmelade marmeladen "
        + " ".join(f"filler{rng.randrange(400)}" for _ in range(12))
        for i in range(100)
    ]
    return texts


def _slate(
    engine: MemoryEngine, query: str, k: int, head_only: bool
) -> tuple[list[tuple[int, int]], list[dict[str, float]], int] | None:
    mounts = list(engine.spec.mounts)
    found = slate_of(engine, query, k, mounts, Tuning(), None, head_only)
    if found is None:
        return None
    return found.picked, [dict(found.parts[d]) for _, d in found.picked], found.used


@pytest.fixture
def engine_with_corpus(engine: MemoryEngine) -> MemoryEngine:
    record_many(engine, [RecordInput(t, "fact", "M4") for t in _corpus(1500)])
    return engine


@pytest.mark.req("engram.memory.recall-hybrid")
@pytest.mark.parametrize("k", [1, 10, 20])
def test_the_head_only_ranking_gives_the_full_rankings_slate(
    engine_with_corpus: MemoryEngine, k: int
) -> None:
    engine = engine_with_corpus
    rings = [m.ring_id for m in engine.spec.mounts]
    acted = 0
    for query in QUERIES:
        full = _slate(engine, query, k, head_only=False)
        fast = _slate(engine, query, k, head_only=True)
        assert full is not None
        assert fast is None or fast == full, query  # None: the walk passed the head
        ranking = fused_ranking(engine, query, rings, exact_head=60)
        acted += ranking.exact is not None
    assert acted  # the shortcut was taken


@pytest.mark.req("engram.memory.recall-hybrid")
def test_a_walk_past_the_head_ranks_again_in_full(engine_with_corpus: MemoryEngine) -> None:
    engine = engine_with_corpus
    query = QUERIES[0]
    # 70 picks read past the 60 exact places: the head-only pass gives up ...
    assert _slate(engine, query, 70, head_only=True) is None
    # ... and the slate recall uses is the full ranking's.
    found = slate(engine, query, 70, list(engine.spec.mounts), Tuning(), None)
    full = _slate(engine, query, 70, head_only=False)
    assert full is not None
    assert (found.picked, [dict(found.parts[d]) for _, d in found.picked], found.used) == full
