"""The tantivy searches recall runs on one view: the BM25 top (with the exact common-terms
rewrite), the exact BM25 of chosen documents, the best threads, and the author / entity tags a
query names."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import tantivy

from engram.memory._index import TEXT_SCHEMA, THREAD_SCHEMA, View
from engram.memory._recall.tuning import DEFAULT_TUNING, Tuning
from engram.memory._text import STOPWORDS, extract_entities, words

_Q = tantivy.Query
_MUST, _SHOULD = tantivy.Occur.Must, tantivy.Occur.Should
_NO_DOCS = np.zeros(0, dtype=np.int64)
_NO_SCORES = np.zeros(0, dtype=np.float64)
_NO_DOCS.flags.writeable = _NO_SCORES.flags.writeable = False


class Search:
    """tantivy searches of one view: BM25 top-k, and the exact BM25 of chosen documents."""

    def __init__(
        self,
        view: View,
        query_terms: Sequence[str],
        ring_ids: Sequence[str],
        tuning: Tuning = DEFAULT_TUNING,
    ) -> None:
        self.view = view
        clauses = [(_SHOULD, _Q.term_query(TEXT_SCHEMA, "terms", t)) for t in query_terms]
        self.lexical = _Q.boolean_query(clauses) if clauses else None
        self.common = common_terms_query(view, query_terms, tuning)
        mounted = set(ring_ids)
        self.ring_filter = None
        self.ring_codes = _NO_DOCS  # the mounted rings' codes, when some ring is left out
        if not set(view.meta.rings) <= mounted:
            rings = _Q.term_set_query(TEXT_SCHEMA, "ring", sorted(mounted))
            self.ring_filter = _Q.const_score_query(rings, 0.0)
            self.ring_codes = np.asarray(
                sorted(code for ring, code in view.meta.rings.items() if ring in mounted),
                dtype=np.int64,
            )
        self.query_terms = query_terms
        self.complete = False  # the last top() returned every matching document
        self._raw = 0  # hits tantivy returned in the last search (before the docs cut)

    def _run(self, query: Any, limit: int, within: Sequence[int] | None) -> dict[int, float]:
        docs, scores = self._hits(query, limit, within)
        return dict(zip(docs.tolist(), scores.tolist(), strict=True))

    def _hits(
        self, query: Any, limit: int, within: Sequence[int] | None, rings: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """The documents (int64) ``query`` matches, best first, and their scores (float64 of
        tantivy's float32), as arrays: a thread-heavy recall scores ~2,000 documents, and one
        Python object per hit was a fifth of the restricted BM25's cost (the MCP bench).
        ``rings``: False when ``within`` holds mounted documents only (no ring clause)."""
        parts = [(_MUST, query)]
        if self.ring_filter is not None and rings:
            parts.append((_MUST, self.ring_filter))
        if within is not None:
            if not within:
                return _NO_DOCS, _NO_SCORES
            parts.append((_MUST, _Q.const_score_query(_doc_filter(within), 0.0)))
        full = parts[0][1] if len(parts) == 1 else _Q.boolean_query(parts)
        searcher = self.view.text_searcher
        hits = searcher.search(full, limit, count=False).hits
        self._raw = len(hits)
        if not hits:
            return _NO_DOCS, _NO_SCORES
        scores, addresses = zip(*hits, strict=True)
        docs_of = searcher.fast_field_values("doc", list(addresses))
        limit_doc = self.view.docs  # documents past the meta are an update in progress
        try:
            docs = np.asarray(docs_of, dtype=np.int64)
        except TypeError:  # None: a segment without the column; keep the others
            keep = [i for i, d in enumerate(docs_of) if d is not None and d < limit_doc]
            return (
                np.asarray([docs_of[i] for i in keep], dtype=np.int64),
                np.asarray([scores[i] for i in keep], dtype=np.float64),
            )
        values = np.asarray(scores, dtype=np.float64)
        inside = docs < limit_doc
        if not inside.all():
            docs, values = docs[inside], values[inside]
        return docs, values

    def top(self, n: int) -> dict[int, float]:
        docs, scores = self.top_hits(n)
        return dict(zip(docs.tolist(), scores.tolist(), strict=True))

    def top_hits(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``top`` as arrays: the BM25 top ``n`` documents, best first, and their scores."""
        if self.lexical is None:
            return _NO_DOCS, _NO_SCORES
        if self.common is not None:
            query, bound = self.common
            docs, scores = self._hits(query, n, None)
            # Exact: a document outside this query matches only common terms, so its score is
            # at most ``bound``; n hits at or above it are the disjunction's own top n.
            if len(docs) >= n and float(scores.min()) >= bound:
                return docs, scores
        found = self._hits(self.lexical, n, None)
        self.complete = self._raw < n
        return found

    def scores_of(self, docs: Sequence[int]) -> dict[int, float]:
        if self.lexical is None or not docs:
            return {}
        return self._run(self.lexical, len(docs), docs)

    def scores_array(self, docs: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``scores_of`` as arrays: the documents of ``docs`` that match, and their BM25."""
        if self.lexical is None or not docs:
            return _NO_DOCS, _NO_SCORES
        if self.ring_filter is None:
            return self._hits(self.lexical, len(docs), docs)
        # The ring array leaves out the other rings' documents (thread neighbours, mostly)
        # before tantivy sees them: a shorter filter and no ring clause (a ninth of its cost
        # on the MCP bench); the scores are the same (the clause only ever adds 0.0).
        mounted = self.in_rings(np.asarray(docs, dtype=np.int64)).tolist()
        if not mounted:
            return _NO_DOCS, _NO_SCORES
        return self._hits(self.lexical, len(mounted), mounted, rings=False)

    def in_rings(self, docs: np.ndarray) -> np.ndarray:
        """The documents of ``docs`` (in order) that are in the mounted rings, by the index's
        ring array, which holds each document's ring from the same row as the text index's
        ``ring`` field; a restricted tantivy search over them was 3.5 ms a recall at 1,400
        candidates when a seat mounts only some of the rings (the MCP bench)."""
        if self.ring_filter is None:
            return docs
        if not len(self.ring_codes):
            return docs[:0]
        codes = self.view.arrays["ring"][docs].astype(np.int64)
        pos = np.minimum(np.searchsorted(self.ring_codes, codes), len(self.ring_codes) - 1)
        out: np.ndarray = docs[self.ring_codes[pos] == codes]
        return out

    def tagged(self, tags: Sequence[str], docs: Sequence[int]) -> set[int]:
        if not tags or not docs:
            return set()
        query = _Q.term_set_query(TEXT_SCHEMA, "tags", list(tags))
        return set(self._run(query, len(docs), docs))

    def threads(self, k: int) -> dict[int, float]:
        if not self.query_terms or not self.view.meta.threads:
            return {}
        # Built here, not in __init__: a store without threads never needs it.
        query = _Q.boolean_query(
            [(_SHOULD, _Q.term_query(THREAD_SCHEMA, "terms", t)) for t in self.query_terms]
        )
        searcher = self.view.thread_searcher
        hits = searcher.search(query, k, count=False).hits
        if not hits:
            return {}
        codes = searcher.fast_field_values("code", [a for _, a in hits])
        return {int(c): float(s) for (s, _), c in zip(hits, codes, strict=True) if c is not None}


# tantivy's BM25 constant k1, for the bound on what common terms alone can score. The rewrite's
# thresholds are in ``Tuning``: in the 1M synthetic corpus the commonest word is in 88 % of the
# documents and its postings were most of the BM25 time (issue 16). The rewrite seeks in the
# common postings once per document with a rare term, and a seek costs more than a step: past
# 5 % of rare postings the plain disjunction was faster (1M bench: 5 % gave p50 3.4 ms against
# 4.8 ms for the disjunction, 10 % 3.1 ms but p99 13.9 against 8.7); below 50k documents every
# posting list is short and the lookups cost more than they save (10k: 1.31 against 1.27 ms;
# 100k: 1.03 against 1.20). When the common terms' bound exceeds 0.8 of the best rare term's own
# limit, the rewritten top rarely reaches it (1M bench: 7 of the 8 abandoned rewrites, against 2
# of the 146 kept), so the plain disjunction runs at once instead of after a wasted rewrite.
_BM25_K1 = 1.2


def common_terms_query(
    view: View, query_terms: Sequence[str], tuning: Tuning
) -> tuple[Any, float] | None:
    """The BM25 disjunction rewritten as Lucene's common-terms query, with the score bound that
    keeps it exact; None when the query has no common term, nothing else, or rare terms whose
    postings are long enough that the rewrite would not pay.

    The rewrite requires one of the rare terms and adds the common ones as optional clauses, so
    tantivy walks the rare postings and only seeks in the long ones; the documents it scores get
    exactly the disjunction's BM25 (a sum over matching clauses either way). A document matching
    only common terms scores below the sum of their ``idf x (k1 + 1)``, the limit of BM25's term
    frequency factor: when the rewritten query's n-th hit reaches that bound its top n is the
    disjunction's (``Search.top``), else the plain disjunction runs (4 % of the 1M bench's
    queries). Same hits, the same scores up to float32 summation order
    (docs/spec/memory-retrieval.md "Common terms")."""
    searcher = view.text_searcher
    # tantivy's idf counts every document of the segments; never fewer than ours.
    total = max(int(searcher.num_docs), view.docs)
    if len(query_terms) < 2 or total < tuning.common_min_docs:
        return None
    freq = {t: int(searcher.doc_freq("terms", t)) for t in set(query_terms)}
    cut = tuning.common_term_share * total
    common = [t for t in query_terms if freq[t] > cut]
    rare = [t for t in query_terms if freq[t] <= cut]
    if not common or not rare or sum(freq[t] for t in set(rare)) > tuning.common_rare_share * total:
        return None

    def limit(term: str) -> float:  # the most one term can add to a document's BM25
        n = freq[term]
        return math.log(1 + (total - n + 0.5) / (n + 0.5)) * (_BM25_K1 + 1)

    bound = sum(limit(t) for t in common)
    if bound > tuning.common_bound_share * max(limit(t) for t in rare):
        return None  # the n-th hit would likely fall below it, and both queries would run
    required = _Q.boolean_query([(_SHOULD, _Q.term_query(TEXT_SCHEMA, "terms", t)) for t in rare])
    optional = [(_SHOULD, _Q.term_query(TEXT_SCHEMA, "terms", t)) for t in common]
    # tantivy scores in float32: a margin, so rounding never lets a common-only document tie in.
    return _Q.boolean_query([(_MUST, required), *optional]), bound * 1.001 + 1e-6


# Up to this many documents, a filter on them is a union of one-term queries: tantivy's term
# set query on the ``doc`` field walks a structure that grows with N (100k memories: 4.0 ms for
# 50 documents against 0.45 ms as a union; 200: 6.7 vs 1.6 ms), while the union grows with the
# number of clauses (1,000: 16 vs 25 ms), so large sets keep the term set.
_UNION_MAX = 400


def _doc_filter(docs: Sequence[int]) -> Any:
    """A query matching exactly these documents (by our ``doc`` number)."""
    if len(docs) <= _UNION_MAX:
        return _Q.boolean_query(
            [(_SHOULD, _Q.term_query(TEXT_SCHEMA, "doc", int(d))) for d in docs]
        )
    return _Q.term_set_query(TEXT_SCHEMA, "doc", list(docs))


def query_tags(view: View, query: str, patterns: Sequence[Any]) -> list[str]:
    """Author and entity tags the query names and some memory carries.

    Word runs of one to three words are tried as authors and entities (so "Caroline" or
    "Jane Doe"), and the seat's entity_patterns' matches in the query as entities; a tag
    counts only when the index has it (one dictionary lookup each).
    """
    found: list[str] = []
    if not view.has_tags():
        return found
    ws = words(query)
    grams = {" ".join(ws[i : i + size]) for size in (1, 2, 3) for i in range(len(ws) - size + 1)}
    entities = {e.lower() for e in extract_entities(query, patterns)}
    candidates = [f"a:{g}" for g in sorted(grams) if g not in STOPWORDS]
    candidates += [f"e:{g}" for g in sorted(grams | entities) if g not in STOPWORDS]
    searcher = view.text_searcher
    for tag in candidates:
        if searcher.doc_freq("tags", tag) > 0:
            found.append(tag)
    return found
