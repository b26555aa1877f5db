"""``recall``: hybrid retrieval over the seat's mounted rings, cut to its token budget.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_recall: "Two-stage hybrid lexical
(FTS5 BM25 + Corpus IDF) + dense neural (/v1/embeddings) + cross-encoder reranked (/v1/rerank)
retrieval with MMR slate diversity", and §3.1 keyspace_budget_tokens / budget_share_pct / fail_open.

Recall ranks a bounded candidate set from the derived index (``_index``): the best memories by
BM25 from tantivy, the members of the best threads, their thread neighbours and, on small
stores, the best by vector scans; so its cost does not grow with N. Stages: (1) BM25 (corpus
IDF), smoothed with the neighbouring memories of the same thread and the thread's own BM25,
because an answer often sits next to the words that find it; (2) local-hash-128 cosine; (3)
dense cosine when an embedder is configured (the bundled MiniLM model or a remote endpoint);
(4) author and entity boosts; (5) fusion by score (rank fusion lost on LoCoMo); (6) the
optional cross-encoder reorders the first ``candidates_k`` (plus ``guaranteed_dense_k`` dense
hits that fusion left out); (7) MMR; (8) the token budget, split across mounts by
``budget_share_pct`` (the unassigned share is a pool any mount may use). Remote failures
degrade to the local stages when ``fail_open`` is true and say so in ``stages``; otherwise
they raise RemoteError. The index handle is synced and read under ``engine.lock``, so one
engine serves many threads; the remote calls (query embedding, cross-encoder) run outside it.
Decisions: ``docs/spec/memory-retrieval.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import tantivy

from engram.errors import Forbidden, InvalidRequest, RemoteError
from engram.memory import _repo
from engram.memory._engine import MemoryEngine
from engram.memory._index import SCAN_LIMIT, TEXT_SCHEMA, THREAD_SCHEMA, RowFile, View, matvec
from engram.memory._manifest import Mount
from engram.memory._models import Memory, RecallHit, RecallResult
from engram.memory._supersede import hidden_as_of
from engram.memory._text import STOPWORDS, extract_entities, local_vector, terms, words
from engram.memory._withdrawn import withdrawn_ns


@dataclass(frozen=True)
class Tuning:
    """Fusion constants (chosen on the LoCoMo development half; see bench/bench_locomo.py)."""

    pool: int = 200  # candidates kept after fusion, and from each exact vector scan
    lexical_k: int = 100  # candidates by BM25 from the index (200: same LoCoMo figures, slower)
    context: float = 0.5  # share of a thread neighbour's BM25 added to a memory's own
    context_window: int = 2  # neighbours on each side; each further step halves the share
    thread: float = 0.8  # weight of the whole thread's BM25 (scaled to the best memory's)
    threads_k: int = 20  # best threads whose members join the candidates
    thread_members: int = 200  # at most this many members of one thread join
    w_local: float = 0.1  # local-hash-128 cosine, added to the normalised lexical score
    w_dense: float = 0.5  # dense cosine over the best candidate's, added likewise
    dense_context: float = 0.0  # share of the thread neighbours' (±1) dense cosine (0: lost)
    dense_floor: float = 0.0  # cosines up to this count nothing (tried 0.2-0.3: lost)
    dense_scaled: bool = True  # dense cosine over its best candidate's, as lexical is
    dense_thread: float = 0.6  # cosine with the thread's centroid (below SCAN_LIMIT memories)
    w_author: float = 0.3  # the query names the memory's author (provenance author/speaker)
    w_entity: float = 0.2  # the query names one of the memory's entities
    mmr_lambda: float = 0.85
    mmr_depth: int = 60
    duplicate_cosine: float = 0.9  # a candidate this close to a chosen one goes to the back
    # The exact common-terms rewrite of the BM25 query (``common_terms_query``); it changes
    # how fast the lexical top is found, never what it is. A share above 1 turns it off.
    common_term_share: float = 0.1  # a term in more than this share of the documents is common
    common_rare_share: float = 0.05  # ... and the rare terms' postings must stay under this share
    common_min_docs: int = 50_000  # below this many documents the rewrite does not pay
    common_bound_share: float = 0.8  # skip it when the common terms' bound nears a rare term's


DEFAULT_TUNING = Tuning()
STAGES = ("lexical", "local_vector", "dense", "rerank")
_Q = tantivy.Query
_MUST, _SHOULD = tantivy.Occur.Must, tantivy.Occur.Should


class _Unset:
    """The type of UNSET: "not computed yet", distinct from None ("no dense vector")."""


UNSET = _Unset()


def _remote_query_vector(
    engine: MemoryEngine, query: str, stages: dict[str, str]
) -> np.ndarray | None:
    if engine.embedder is None:
        stages["dense"] = "disabled"
        return None
    try:
        vec = engine.embedder.embed([query])[0]
    except RemoteError as e:
        if not engine.spec.retrieval.fail_open:
            raise
        stages["dense"] = f"degraded: {e.message}"
        return None
    stages["dense"] = "ok"
    return vec


class _Search:
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
        if not set(view.meta.rings) <= mounted:
            rings = _Q.term_set_query(TEXT_SCHEMA, "ring", sorted(mounted))
            self.ring_filter = _Q.const_score_query(rings, 0.0)
        self.query_terms = query_terms
        self.complete = False  # the last top() returned every matching document
        self._raw = 0  # hits tantivy returned in the last search (before the docs cut)

    def _run(self, query: Any, limit: int, within: Sequence[int] | None) -> dict[int, float]:
        parts = [(_MUST, query)]
        if self.ring_filter is not None:
            parts.append((_MUST, self.ring_filter))
        if within is not None:
            if not within:
                return {}
            parts.append((_MUST, _Q.const_score_query(_doc_filter(within), 0.0)))
        full = parts[0][1] if len(parts) == 1 else _Q.boolean_query(parts)
        searcher = self.view.text_searcher
        hits = searcher.search(full, limit, count=False).hits
        self._raw = len(hits)
        if not hits:
            return {}
        docs_of = searcher.fast_field_values("doc", [a for _, a in hits])
        limit_doc = self.view.docs  # documents past the meta are an update in progress
        return {
            int(d): float(score)
            for (score, _), d in zip(hits, docs_of, strict=True)
            if d is not None and d < limit_doc
        }

    def top(self, n: int) -> dict[int, float]:
        if self.lexical is None:
            return {}
        if self.common is not None:
            query, bound = self.common
            found = self._run(query, n, None)
            # Exact: a document outside this query matches only common terms, so its score is
            # at most ``bound``; n hits at or above it are the disjunction's own top n.
            if len(found) >= n and min(found.values()) >= bound:
                return found
        found = self._run(self.lexical, n, None)
        self.complete = self._raw < n
        return found

    def scores_of(self, docs: Sequence[int]) -> dict[int, float]:
        if self.lexical is None or not docs:
            return {}
        return self._run(self.lexical, len(docs), docs)

    def in_rings(self, docs: Sequence[int]) -> list[int]:
        if self.ring_filter is None:
            return list(docs)
        found = self._run(_Q.all_query(), len(docs), docs)
        return [d for d in docs if d in found]

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
    disjunction's (``_Search.top``), else the plain disjunction runs (4 % of the 1M bench's
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
    return _Q.term_set_query(TEXT_SCHEMA, "doc", [int(d) for d in docs])


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


def _walk(view: View, start: int, step: np.ndarray, steps: int) -> list[int]:
    out = []
    d = start
    item = step.item
    for _ in range(steps):
        d = item(d)
        if d < 0 or d >= view.docs:
            break
        out.append(d)
    return out


def _neighbours(
    docs: Sequence[int], prev_of: np.ndarray, next_of: np.ndarray, window: int, limit: int
) -> np.ndarray:
    """Each document's thread neighbours as a (len(docs), 2 x window) matrix: the previous
    memory, the one before it, ..., then the next, the one after it, ...; -1 past a thread's
    end (or past ``limit``). One array step per column instead of a Python walk per document:
    a thread-heavy recall walks thousands (issue 16, the MCP bench: 9 ms at 10k memories)."""
    start = np.asarray(docs, dtype=np.int64)
    out = np.full((len(start), 2 * window), -1, dtype=np.int64)
    for side, step in enumerate((prev_of, next_of)):
        at = start
        for k in range(window):
            ok = (at >= 0) & (at < limit)
            at = np.where(ok, step[np.where(ok, at, 0)], -1).astype(np.int64)
            at[(at < 0) | (at >= limit)] = -1
            out[:, side * window + k] = at
    return out


def _with_neighbours(docs: Sequence[int], around: np.ndarray | None) -> dict[int, None]:
    """``docs`` (distinct) in order, then the neighbours ``around`` gives them (their rows of
    ``_neighbours``) in walking order, first occurrence kept."""
    found = dict.fromkeys(docs)
    if around is not None:
        flat = around.ravel()
        found.update(dict.fromkeys(flat[flat >= 0].tolist()))
    return found


@dataclass
class Ranking:
    """Fused candidates (documents of the view, best first) with their per-stage scores."""

    order: list[int]
    parts: _Parts
    dense: dict[int, float] | None  # dense cosine of every candidate, when the stage ran
    local: np.ndarray | None = None  # local-hash-128 rows of the candidates (by parts.row_of)
    # With ``exact_head``: only order[:exact] is guaranteed to be the exact ranking's prefix
    # (None: all of it is); see fused_ranking.
    exact: int | None = None


def fused_ranking(
    engine: MemoryEngine,
    query: str,
    ring_ids: Sequence[str],
    stages: dict[str, str],
    tuning: Tuning = DEFAULT_TUNING,
    *,
    use: Sequence[str] = ("lexical", "local_vector", "dense"),
    query_vector: np.ndarray | _Unset | None = UNSET,
    view: View | None = None,
    exact_head: int | None = None,
) -> Ranking:
    """Fused candidate documents with per-stage raw scores, on a bounded candidate set.

    Candidates: the ``pool`` best memories by BM25 from the index, the members of the best
    threads, their thread neighbours, and (below ``SCAN_LIMIT`` memories) the best by local and
    dense cosine over every row. Fusion is by score: the lexical score (BM25 + thread context +
    thread BM25) over its best value, plus ``w_local`` x local cosine, ``w_dense`` x dense
    cosine, and the author / entity boosts. A weak stage then nudges ties instead of
    outvoting a strong one, as rank fusion would.

    ``exact_head`` (recall's MMR depth) lets the ranking skip the exact BM25 of candidates
    that provably cannot reach its first ``exact_head`` places; ``Ranking.exact`` then says how
    long the exact prefix of ``order`` is (the rest may be out of order, never the prefix).
    """
    view = view or engine.index.sync(engine.store)
    search = _Search(view, terms(query) if "lexical" in use else [], ring_ids, tuning)
    arrays = view.arrays
    prev_of, next_of = arrays["prev"], arrays["next"]
    own = search.top(tuning.lexical_k)
    core = dict.fromkeys(own)
    thread_scores: dict[int, float] = {}
    if "lexical" in use and own and tuning.thread > 0:
        thread_scores = search.threads(tuning.threads_k)
        for code in thread_scores:
            first = view.first_in_thread(code)
            if 0 <= first < view.docs:
                core[first] = None
                core.update(dict.fromkeys(_walk(view, first, next_of, tuning.thread_members - 1)))
    qv: np.ndarray | None = None
    if "dense" in use:
        qv = (
            _remote_query_vector(engine, query, stages)
            if isinstance(query_vector, _Unset)
            else query_vector
        )
    local_q = local_vector(query) if "local_vector" in use else None
    small = view.docs <= SCAN_LIMIT
    if small and view.docs:
        # Exact scans are cheap here: the vector stages may find what no word matches.
        if local_q is not None:
            core.update(dict.fromkeys(_best(matvec(view.local.all(), local_q), tuning.pool)))
        if qv is not None and view.dense is not None and view.dense.dims == qv.shape[0]:
            core.update(dict.fromkeys(_best(matvec(view.dense.all(), qv), tuning.pool)))
    window = tuning.context_window if tuning.context > 0 and view.meta.threads else 0

    def around_of(ds: Sequence[int]) -> np.ndarray | None:
        return _neighbours(ds, prev_of, next_of, window, view.docs) if window else None

    core_docs = list(core)
    core = _with_neighbours(core_docs, around_of(core_docs))
    docs = search.in_rings(list(core)) if search.ring_filter is not None else list(core)
    around = around_of(docs)  # for the scoring set and the thread context both
    scoring = _with_neighbours(docs, around)
    missing = [d for d in scoring if d not in own]
    # A BM25 top that came back short holds every matching document: the rest score 0.
    if search.complete:
        missing = []
    # Candidates outside the BM25 top-n score at most its n-th score. Without thread context
    # (each score counts for its own document only), such a candidate first takes that bound
    # as its lexical score; only those whose bounded fused score could still reach the head get
    # their exact BM25 below. At 10k memories the restricted BM25 query over the ~180 scan
    # candidates was about a third of recall (0.47 of 1.3 ms).
    pending: list[int] = []
    bound = 0.0
    if (
        exact_head is not None
        and missing
        and around is None
        and not thread_scores
        and len(own) >= tuning.lexical_k
    ):
        pending, missing = missing, []
        bound = min(own.values())
    own_all = {**own, **search.scores_of(missing)} if "lexical" in use else {}
    cand = np.asarray(docs, dtype=np.int64)
    columns: dict[str, np.ndarray] = {}
    # The fused score's terms, added in this order (float32 sums: the order is part of it).
    adds: list[np.ndarray] = []
    lexical_at = -1
    if "lexical" in use:
        lex = np.asarray([own_all.get(d, 0.0) for d in docs], dtype=np.float32)
        if pending:
            unknown = np.isin(cand, np.asarray(pending, dtype=np.int64))
            lex[unknown] = bound
        best_own = float(lex.max()) if len(docs) else 0.0
        if around is not None:
            lex = lex + _context(around, own_all, tuning)
        if thread_scores and best_own > 0:
            top_thread = max(thread_scores.values())
            codes = arrays["thread"][cand] if len(docs) else np.zeros(0, dtype=np.int32)
            per = np.asarray([thread_scores.get(int(c), 0.0) for c in codes], dtype=np.float32)
            lex = lex + tuning.thread * best_own * per / top_thread
        best = float(lex.max()) if len(docs) else 0.0
        if best > 0:
            lexical_at = len(adds)
            adds.append(lex / best)
        columns["lexical"] = lex
        stages["lexical"] = "ok"
    local_rows: np.ndarray | None = None
    if local_q is not None:
        local_rows = view.local.rows(cand)
        loc = matvec(local_rows, local_q) if len(docs) else np.zeros(0, np.float32)
        adds.append((tuning.w_local if len(use) > 1 else 1.0) * np.maximum(loc, 0.0))
        columns["local_vector"] = loc
        stages["local_vector"] = "ok"
    dense_of: dict[int, float] | None = None
    if qv is not None and view.dense is not None and view.dense.dims == qv.shape[0]:
        den = matvec(view.dense.rows(cand), qv) if len(docs) else np.zeros(0, np.float32)
        contribution = np.maximum(den - tuning.dense_floor, 0.0)
        if tuning.dense_scaled and len(docs) and float(contribution.max()) > 0:
            contribution = contribution / float(contribution.max())
        adds.append(tuning.w_dense * contribution)
        if tuning.dense_thread > 0 and view.meta.threads and len(docs) and small:
            centroids = view.thread_centroids()
            codes = arrays["thread"][cand]
            tcos = np.where(codes >= 0, matvec(centroids, qv)[np.maximum(codes, 0)], 0.0)
            adds.append(tuning.dense_thread * np.maximum(tcos, 0.0).astype(np.float32))
        if tuning.dense_context > 0 and view.meta.threads and len(docs):
            around = np.concatenate([prev_of[cand], next_of[cand]])
            ok = (around >= 0) & (around < view.docs)
            near = np.zeros(around.shape[0], dtype=np.float32)
            if ok.any():
                near[ok] = matvec(view.dense.rows(around[ok]), qv)
            pair = np.maximum(near, 0.0).reshape(2, len(docs)).sum(axis=0)
            adds.append(tuning.w_dense * tuning.dense_context * pair)
        columns["dense"] = den
        dense_of = {d: float(v) for d, v in zip(docs, den, strict=True)}
    if "lexical" in use and (tuning.w_author > 0 or tuning.w_entity > 0):
        tags = query_tags(view, query, engine.spec.ontology.compiled_patterns())
        authors = [t for t in tags if t.startswith("a:")]
        entities = [t for t in tags if t.startswith("e:")]
        if authors or entities:
            by_author = search.tagged(authors, docs)
            by_entity = search.tagged(entities, docs)
            boost = np.asarray(
                [
                    tuning.w_author * (d in by_author) + tuning.w_entity * (d in by_entity)
                    for d in docs
                ],
                dtype=np.float32,
            )
            adds.append(boost)
            columns["entity"] = boost
    fused = _fuse(len(docs), adds)
    exact: int | None = None
    if pending:
        exact = _settle(search, docs, pending, lex, lexical_at, adds, fused, exact_head or 0)
        fused = _fuse(len(docs), adds)
    columns["fused"] = fused
    best_idx = _top(fused, tuning.pool)
    order = [docs[i] for i in best_idx]
    parts = _Parts(columns, {d: i for i, d in enumerate(docs)})
    return Ranking(order, parts, dense_of, local_rows, exact)


def _fuse(n: int, adds: Sequence[np.ndarray]) -> np.ndarray:
    """The fused score: the terms added to zero in order (always the same float32 sums)."""
    fused = np.zeros(n, dtype=np.float32)
    for add in adds:
        fused += add
    return fused


def _settle(
    search: _Search,
    docs: Sequence[int],
    pending: Sequence[int],
    lex: np.ndarray,
    lexical_at: int,
    adds: list[np.ndarray],
    fused: np.ndarray,
    head: int,
) -> int | None:
    """Give exact BM25 scores to the ``pending`` candidates (holding the top's bound as their
    lexical score, in ``lex`` and in the lexical term ``adds[lexical_at]``) that could reach the
    first ``head`` places; returns ``head`` when the others were left out, None when all were
    scored (the whole order is then exact).

    Why it is exact: the fused score only grows with the lexical one, so a pending candidate's
    true score is at most its bounded one. Let T be the ``head``-th best score among the other
    (exactly scored) candidates; a pending candidate bounded below T truly scores below ``head``
    candidates, so it is not in the exact ranking's first ``head`` places, and with its bound it
    is not in the computed ones either: both prefixes hold the same documents with the same
    scores in the same order (ties by position, as ``_top`` breaks them). The best lexical score
    (the normaliser) is a top document's, never a pending one's.
    """
    row = {d: i for i, d in enumerate(docs)}
    rows = np.asarray([row[d] for d in pending], dtype=np.int64)
    known = np.ones(len(docs), dtype=bool)
    known[rows] = False
    settled = fused[known]
    settled = settled[settled > 0]
    cut = head if head > 0 and settled.shape[0] >= head else 0
    if cut:
        threshold = float(np.partition(settled, settled.shape[0] - cut)[settled.shape[0] - cut])
        rows = rows[fused[rows] >= threshold]
    exact = search.scores_of([docs[int(i)] for i in rows])
    lex[rows] = [exact.get(docs[int(i)], 0.0) for i in rows]
    if lexical_at >= 0:
        best = float(lex.max())
        adds[lexical_at] = lex / best
    return head if cut else None


def _best(scores: np.ndarray, n: int) -> list[int]:
    """Documents with the ``n`` best positive scores."""
    keep = int(np.count_nonzero(scores > 0))
    n = min(n, keep)
    if n <= 0:
        return []
    part = np.argpartition(-scores, n - 1)[:n]
    # One vector test and one ``tolist`` instead of 200 numpy scalar reads (same order).
    out: list[int] = part[scores[part] > 0].tolist()
    return out


def _top(scores: np.ndarray, n: int) -> list[int]:
    """Positions of the ``n`` best positive scores, best first (ties: earlier first)."""
    positive = np.flatnonzero(scores > 0)
    if positive.shape[0] == 0:
        return []
    ranked = positive[np.argsort(-scores[positive], kind="stable")]
    out: list[int] = ranked[:n].tolist()
    return out


def _context(around: np.ndarray, own: dict[int, float], tuning: Tuning) -> np.ndarray:
    """A decaying share of the thread neighbours' BM25 (up to context_window away), for the
    documents whose ``_neighbours`` rows ``around`` holds."""
    window = tuning.context_window
    get = own.get
    scores = np.asarray([get(a, 0.0) for a in around.ravel().tolist()], dtype=np.float64)
    scores = scores.reshape(around.shape)
    shares = [tuning.context * 0.5**k for k in range(window)] * 2
    # Summed left to right in float64, in the order the walk added them before: same bits.
    total = np.zeros(len(around), dtype=np.float64)
    for column, share in enumerate(shares):
        total = total + share * scores[:, column]
    return total.astype(np.float32)


class _Parts(dict[int, dict[str, float]]):
    """Per-stage scores of a document, computed when first asked for (most are never shown)."""

    def __init__(self, columns: dict[str, np.ndarray], row_of: dict[int, int]) -> None:
        super().__init__()
        self.columns = columns
        self.row_of = row_of

    def column(self, name: str, docs: Sequence[int]) -> dict[int, float]:
        col, row_of = self.columns[name], self.row_of
        return {d: float(col[row_of[d]]) for d in docs}

    def __missing__(self, doc: int) -> dict[str, float]:
        row = self.row_of[doc]
        value = {name: float(col[row]) for name, col in self.columns.items()}
        self[doc] = value
        return value


@dataclass
class _Ranked:
    """What recall takes out from under ``engine.lock``: the fused ranking, the cross-encoder's
    candidates and their texts, and the view MMR and the budget read (a view never changes:
    a newer index state is a new view)."""

    order: list[int]
    parts: _Parts
    head: list[int]  # cross-encoder candidates (empty when the stage is disabled)
    head_texts: list[str]
    view: View
    local: np.ndarray | None
    exact: int | None = None  # the ranking's exact prefix (None: all of it)

    def local_rows(self, docs: Sequence[int]) -> np.ndarray:
        """The local vectors of these documents (read during ranking when it could)."""
        if self.local is None:
            return self.view.local.rows(docs)
        row_of = self.parts.row_of
        return np.asarray(self.local[[row_of[d] for d in docs]], dtype=np.float32)


def _rank(
    engine: MemoryEngine,
    query: str,
    mounts: Sequence[Mount],
    query_vector: np.ndarray | None,
    stages: dict[str, str],
    tuning: Tuning,
    exact_head: bool = True,
) -> _Ranked:
    """The local stages and the cross-encoder's candidate texts; call under engine.lock.
    ``exact_head``: only the first ``mmr_depth`` places need be exact (``fused_ranking``)."""
    view = engine.index.sync(engine.store)
    cfg = engine.spec.retrieval.reranker
    rerank = engine.reranker is not None and cfg.enabled
    ranking = fused_ranking(
        engine,
        query,
        [m.ring_id for m in mounts],
        stages,
        tuning,
        query_vector=query_vector,
        view=view,
        # Only MMR's head must be exact when no cross-encoder reads further (the slate checks
        # that its walk stayed in it, else ranks again in full: ``_slate``).
        exact_head=None if rerank or not exact_head else tuning.mmr_depth,
    )
    order, dense = ranking.order, ranking.dense
    head: list[int] = []
    texts: list[str] = []
    if not rerank:
        stages["rerank"] = "disabled"
    else:
        head = order[: cfg.candidates_k]
        if dense is not None and cfg.guaranteed_dense_k > 0:
            # The best dense hits get a seat at the cross-encoder even if fusion ranked them low.
            best_dense = sorted(dense, key=lambda d: -dense[d])[: cfg.guaranteed_dense_k]
            head += [d for d in best_dense if d not in head and dense[d] > 0.0]
        ns = [int(view.arrays["n"][d]) for d in head]
        with engine.store.read() as tx:
            found = _repo.texts_by_n(tx, ns)
        texts = [found[n] for n in ns]
    return _Ranked(order, ranking.parts, head, texts, view, ranking.local, ranking.exact)


def _rerank(engine: MemoryEngine, query: str, ranked: _Ranked, stages: dict[str, str]) -> list[int]:
    """Reorder the candidates by the cross-encoder (a remote call: never under engine.lock)."""
    order, head = ranked.order, ranked.head
    if engine.reranker is None or stages.get("rerank") == "disabled":
        return order
    try:
        scores = engine.reranker.rerank(query, ranked.head_texts)
    except RemoteError as e:
        if not engine.spec.retrieval.fail_open:
            raise
        stages["rerank"] = f"degraded: {e.message}"
        return order
    stages["rerank"] = "ok"
    for d, s in zip(head, scores, strict=True):
        ranked.parts[d]["rerank"] = s
    reranked = [d for _, d in sorted(zip(scores, head, strict=True), key=lambda p: -p[0])]
    return reranked + [d for d in order if d not in set(head)]


def _mmr(
    local: RowFile | np.ndarray,
    order: list[int],
    relevance_of: dict[int, float] | None,
    tuning: Tuning,
    picks: int | None = None,
) -> list[int]:
    """Maximal marginal relevance over the head of the ranking (local vectors as similarity).

    Relevance is the fused score over the best one (or rank-based after a cross-encoder);
    near-duplicates of a chosen memory (cosine >= duplicate_cosine) go behind everything else.
    ``picks`` stops the greedy choice early (recall needs k plus a margin for the budget's
    skips); the rest of the head follows in ranked order, near-duplicates last.
    ``local`` is the index's vector file, or the head's rows already read.
    """
    depth = min(len(order), tuning.mmr_depth)
    if depth <= 1 or tuning.mmr_lambda >= 1.0:
        return order
    head = np.asarray(order[:depth], dtype=np.int64)
    vecs = local.rows(head) if isinstance(local, RowFile) else local[:depth]
    relevance: np.ndarray
    if relevance_of is None:
        relevance = 1.0 - np.arange(depth, dtype=np.float32) / depth  # rank-based, in (0, 1]
    else:
        raw = np.asarray([relevance_of[d] for d in order[:depth]], dtype=np.float32)
        relevance = raw / (float(raw.max()) or 1.0)
    chosen: list[int] = []
    best_sim = np.zeros(depth, dtype=np.float32)
    taken = np.zeros(depth, dtype=np.float32)  # -inf once chosen
    base = tuning.mmr_lambda * relevance
    diversity = 1 - tuning.mmr_lambda
    duplicate = tuning.duplicate_cosine
    score = np.empty(depth, dtype=np.float32)
    near = np.empty(depth, dtype=bool)
    # The same float32 operations as ``score = base - diversity * best_sim; score[near] -= 2``
    # in the same order, written into buffers with ``out=``/``where=``: the loop runs k + 10
    # times per recall and the temporaries and boolean indexing were most of its cost.
    for _ in range(depth if picks is None else min(depth, picks)):
        np.multiply(best_sim, diversity, out=score)
        np.subtract(base, score, out=score)
        np.greater_equal(best_sim, duplicate, out=near)
        np.subtract(score, 2.0, out=score, where=near)
        np.add(score, taken, out=score)
        pick = int(score.argmax())
        chosen.append(pick)
        taken[pick] = -np.inf
        # Only the chosen rows of the similarity matrix are ever read: one row per pick, as an
        # ``einsum`` (not ``vecs @ vecs.T``: that goes through OpenBLAS, which waits for a second
        # thread the other, busy core cannot run; issue 16: 14.0 ms vs 0.98 ms recall p50
        # under load; and the whole 60 x 60 einsum cost more than these k + 10 rows).
        np.maximum(best_sim, np.einsum("id,d->i", vecs, vecs[pick]), out=best_sim)
    rest: list[int] = np.flatnonzero(taken == 0).tolist()
    last = (best_sim >= duplicate).tolist()
    rest.sort(key=last.__getitem__)  # stable: rank order, near-duplicates last
    return [order[i] for i in chosen + rest] + order[depth:]


def _slate(
    engine: MemoryEngine,
    query: str,
    k: int,
    mounts: Sequence[Mount],
    tuning: Tuning,
    stages: dict[str, str],
    hidden: frozenset[int] = frozenset(),
) -> tuple[list[tuple[int, int]], _Parts, int]:
    """The ranked, budgeted slate as (row number n, index document) pairs, leaving out the
    rows numbered in ``hidden``.

    Only the local stages run under ``engine.lock``; the dense query vector is fetched before
    it and the cross-encoder called after it, so a slow endpoint stalls only its own recall.
    """
    query_vector = _remote_query_vector(engine, query, stages)
    # A slate of k needs about k places of MMR's head; a larger k ranks everything exactly.
    head_only = k + 10 <= tuning.mmr_depth
    while True:
        slate = _slate_of(engine, query, k, mounts, tuning, stages, query_vector, head_only, hidden)
        if slate is not None:
            return slate
        head_only = False  # the budget walked past the exact head: rank again, in full


def _slate_of(
    engine: MemoryEngine,
    query: str,
    k: int,
    mounts: Sequence[Mount],
    tuning: Tuning,
    stages: dict[str, str],
    query_vector: np.ndarray | None,
    head_only: bool,
    hidden: frozenset[int] = frozenset(),
) -> tuple[list[tuple[int, int]], _Parts, int] | None:
    """``_slate``'s work; None when the ranking was exact only in its head and the budget's
    walk would have read past it."""
    with engine.lock:  # the index handle is shared by every thread using this engine
        ranked = _rank(engine, query, mounts, query_vector, stages, tuning, head_only)
    order = _rerank(engine, query, ranked, stages)
    parts = ranked.parts
    reranked = stages.get("rerank") == "ok"
    fused_of = None if reranked else ranked.parts.column("fused", order[: tuning.mmr_depth])
    view = ranked.view
    order = _mmr(ranked.local_rows(order[: tuning.mmr_depth]), order, fused_of, tuning, k + 10)

    spec = engine.spec
    budget = spec.seat.keyspace_budget_tokens
    left = {m.ring_id: budget * m.budget_share_pct // 100 for m in mounts}
    pool = budget - sum(budget * m.budget_share_pct // 100 for m in spec.mounts)
    picked: list[tuple[int, int]] = []
    used = 0
    ring_of, tokens, n_of = view.arrays["ring"], view.arrays["tokens"], view.arrays["n"]
    exact = len(order) if ranked.exact is None else ranked.exact
    for at, doc in enumerate(order):
        if len(picked) == k:
            break
        if at >= exact:
            return None
        if hidden and int(n_of[doc]) in hidden:
            continue
        ring_id = view.ring_names[int(ring_of[doc])]
        cost = int(tokens[doc])
        if left.get(ring_id, 0) >= cost:
            left[ring_id] -= cost
        elif pool >= cost:
            pool -= cost
        else:
            continue
        picked.append((int(n_of[doc]), doc))
        used += cost
    return picked, parts, used


def recall(
    engine: MemoryEngine,
    query: str,
    k: int = 10,
    *,
    rings: Sequence[str] | None = None,
    tuning: Tuning = DEFAULT_TUNING,
    as_of: datetime | None = None,
) -> RecallResult:
    """The best memories for ``query`` from the seat's mounted rings, within its token budget;
    ``as_of``: from the memories that were current at that instant (recorded by then, not yet
    superseded; docs/spec/memory-ownership.md "Supersede and as-of")."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidRequest("query: expected a non-empty string")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
        raise InvalidRequest(f"k: expected an integer from 1 to 1000, got {k!r}")
    spec = engine.spec
    mounts = list(spec.mounts)
    if rings is not None:
        chosen = [spec.mount_for(r) for r in rings]
        missing = [r for r, m in zip(rings, chosen, strict=True) if m is None]
        if missing:
            raise Forbidden(f"ring {missing[0]!r} is not mounted by {spec.seat.seat_id}")
        mounts = [m for m in chosen if m is not None]
    stages: dict[str, str] = {}
    with engine.store.read() as tx:
        # Forgotten and retracted memories are kept, never served: left out of the slate
        # itself, so they take no place of k and none of the token budget.
        ring_ids = [m.ring_id for m in mounts]
        hidden = withdrawn_ns(tx, ring_ids) if as_of is None else hidden_as_of(tx, ring_ids, as_of)
    picked, parts, used = _slate(engine, query, k, mounts, tuning, stages, hidden)
    with engine.store.read() as tx:
        found: dict[int, Memory] = _repo.memories_by_n(tx, [n for n, _ in picked])
    hits = tuple(RecallHit(found[n], parts[d]["fused"], parts[d]) for n, d in picked if n in found)
    degraded = any(v.startswith("degraded") for v in stages.values())
    return RecallResult(
        query,
        hits,
        {s: stages.get(s, "disabled") for s in STAGES},
        degraded,
        spec.seat.keyspace_budget_tokens,
        used,
    )


__all__ = [
    "DEFAULT_TUNING",
    "Ranking",
    "Tuning",
    "common_terms_query",
    "fused_ranking",
    "query_tags",
    "recall",
]
