"""The common-terms rewrite of the BM25 query finds the same lexical top as the plain
disjunction (docs/spec/memory-retrieval.md "Common terms").

The corpus has a word in nine documents of ten (as the 1M bench's commonest word is in 88 %
of them), words of middling frequency and rare ones; every query is recalled with the rewrite
forced on (``common_min_docs=0``, any share of rare postings) and switched off
(``common_term_share`` above 1), and the two answers must be the same memories in the same
order with the same scores. The queries cover the rewrite's three outcomes: taken, taken and
then abandoned for the disjunction (fewer than n hits, or hits below the bound that documents
with common terms only can reach: short notes repeating one), and not applicable (one term, or
common terms only).
"""

from __future__ import annotations

import random

import pytest

from engram.memory import MemoryEngine, RecordInput, Tuning, recall, record_many
from engram.memory.internals import common_terms_query, terms

ON = Tuning(common_min_docs=0, common_rare_share=1.0)
OFF = Tuning(common_term_share=2.0)

COMMON = ["zorblax", "quennit"]  # in 90 % and 40 % of the documents
MIDDLE = [f"mid{c}word" for c in "abcdefgh"]  # about 5 % each
RARE = [f"rare{c}thing" for c in "abcdefghijklmnop"]  # a few documents each


def _corpus(n: int) -> list[str]:
    rng = random.Random(16)
    texts = []
    for i in range(n):
        words = [f"filler{rng.randrange(400)}" for _ in range(rng.randrange(3, 12))]
        if rng.random() < 0.9:
            words += [COMMON[0]] * rng.randrange(1, 4)
        if rng.random() < 0.4:
            words.append(COMMON[1])
        if rng.random() < 0.4:
            words.append(rng.choice(MIDDLE))
        if i % 97 == 0:
            words.append(RARE[(i // 97) % len(RARE)])
        rng.shuffle(words)
        texts.append(f"note {i}: " + " ".join(words))
    # Where the bound matters: 150 long notes carry "longtail" once (a low BM25 each), while
    # 60 short ones say "quennit" four times and would outscore them on the common term alone.
    for i in range(150):
        texts.append(
            f"long {i}: longtail " + " ".join(f"filler{rng.randrange(400)}" for _ in range(60))
        )
    texts += [f"short {i}: quennit quennit quennit quennit" for i in range(60)]
    return texts


@pytest.fixture
def engine_with_corpus(engine: MemoryEngine) -> MemoryEngine:
    record_many(engine, [RecordInput(t, "fact", "M4") for t in _corpus(3000)])
    return engine


def _answer(engine: MemoryEngine, query: str, tuning: Tuning) -> list[tuple[str, dict[str, float]]]:
    hits = recall(engine, query, k=10, tuning=tuning).hits
    return [(h.memory.id, dict(h.components)) for h in hits]


def _same(a: list[tuple[str, dict[str, float]]], b: list[tuple[str, dict[str, float]]]) -> None:
    assert [i for i, _ in a] == [i for i, _ in b]
    for (_, x), (_, y) in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for key in x:
            assert x[key] == pytest.approx(y[key], rel=1e-5, abs=1e-5), key


@pytest.mark.req("engram.memory.recall-common-terms-exact")
@pytest.mark.parametrize(
    ("query", "outcome"),
    [
        ("zorblax midaword", "taken"),
        ("zorblax quennit midbword midcword", "taken"),
        ("zorblax zorblax middword", "taken"),
        ("zorblax rareathing", "abandoned"),  # 4 documents with the rare term: fewer than n
        ("quennit rarebthing rarecthing", "abandoned"),
        ("quennit longtail", "abandoned"),  # 150 hits, but short notes of "quennit" beat most
        ("zorblax", "none"),
        ("zorblax quennit", "none"),
        ("midaword mideword", "none"),
    ],
)
def test_the_rewrite_finds_the_same_memories_with_the_same_scores(
    engine_with_corpus: MemoryEngine, query: str, outcome: str
) -> None:
    engine = engine_with_corpus
    view = engine.index.sync(engine.store)
    rewritten = common_terms_query(view, terms(query), ON)
    assert (rewritten is None) == (outcome == "none")
    assert common_terms_query(view, terms(query), OFF) is None
    if rewritten is not None:
        query_object, bound = rewritten
        hits = view.text_searcher.search(query_object, ON.lexical_k, count=False).hits
        reaches = len(hits) >= ON.lexical_k and min(s for s, _ in hits) >= bound
        assert reaches == (outcome == "taken")
    _same(_answer(engine, query, ON), _answer(engine, query, OFF))


@pytest.mark.req("engram.memory.recall-common-terms-exact")
def test_the_rewrite_is_left_out_where_it_would_not_pay(engine_with_corpus: MemoryEngine) -> None:
    view = engine_with_corpus.index.sync(engine_with_corpus.store)
    query = terms("zorblax midbword midcword")  # the two middle words: about 10 % of the docs
    assert common_terms_query(view, query, ON) is not None
    assert common_terms_query(view, query, Tuning()) is None  # 3,000 documents < 50,000
    assert common_terms_query(view, query, Tuning(common_min_docs=0)) is None  # 10 % > 5 %
    assert common_terms_query(view, terms("zorblax rareathing"), Tuning(common_min_docs=0))
    # the common terms' bound (about 2.2 here) against the rare term's own limit (about 6.6)
    mixed = terms("zorblax quennit midaword")
    assert common_terms_query(view, mixed, ON) is not None
    strict = Tuning(common_min_docs=0, common_bound_share=0.1)
    assert common_terms_query(view, mixed, strict) is None
