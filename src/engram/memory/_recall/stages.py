"""Recall's stages: the candidate set, then one function per stage, each returning a typed
column over the candidates (its shown score, the terms it adds to the fused score, its status).

The stages never write into a shared structure: ``fusion.fused_ranking`` calls them in order and
adds their terms in that order (float32 sums: the order is part of the result).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engram.errors import RemoteError
from engram.memory._engine import MemoryEngine
from engram.memory._index import SCAN_LIMIT, View, matvec
from engram.memory._recall.search import Search, query_tags
from engram.memory._recall.tuning import Tuning

OK = "ok"


@dataclass(frozen=True)
class Column:
    """One stage's output over the candidates (rows in ``Candidates.docs`` order).

    ``scores``: what a hit shows as this stage's component; ``terms``: what the stage adds to
    the fused score, in order (none: it adds nothing, e.g. no document matched a word)."""

    name: str
    scores: np.ndarray
    terms: tuple[np.ndarray, ...]
    status: str = OK


@dataclass(frozen=True)
class LexicalColumn(Column):
    """The lexical column, with the candidates whose exact BM25 was left for later.

    ``pending``: documents outside the BM25 top holding its n-th score ``bound`` as their own
    (``fusion.settle`` scores those that could reach the head)."""

    pending: list[int] = field(default_factory=list)
    bound: float = 0.0


@dataclass(frozen=True)
class LocalColumn(Column):
    rows: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))


@dataclass(frozen=True)
class DenseColumn(Column):
    by_doc: dict[int, float] = field(default_factory=dict)  # the cosine of every candidate


@dataclass(frozen=True)
class QueryVector:
    """The dense query vector and the dense stage's status ("ok", "disabled" or "degraded:
    <reason>"); ``vector`` is None unless the status is "ok"."""

    vector: np.ndarray | None
    status: str


def embed_query(engine: MemoryEngine, query: str) -> QueryVector:
    """The query's dense vector from the seat's embedder (a remote call or the bundled model:
    never under engine.lock); a failure degrades to no vector when ``fail_open``, else raises."""
    if engine.embedder is None:
        return QueryVector(None, "disabled")
    try:
        vec = engine.embedder.embed([query])[0]
    except RemoteError as e:
        if not engine.spec.retrieval.fail_open:
            raise
        return QueryVector(None, f"degraded: {e.message}")
    return QueryVector(vec, OK)


class _Table:
    """Scores by document (or thread code), for array look-ups: ``at(keys)`` is each key's
    score, 0.0 for keys it does not hold (as ``dict.get(key, 0.0)`` would give)."""

    def __init__(self, keys: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(keys)  # distinct keys: any sort gives this order
        self.keys, self.values = keys[order], values[order]

    def joined(self, keys: np.ndarray, values: np.ndarray) -> _Table:
        """This table and more keys (none of them already held)."""
        return _Table(np.concatenate([self.keys, keys]), np.concatenate([self.values, values]))

    def _positions(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return pos, self.keys[pos] == keys

    def holds(self, keys: np.ndarray) -> np.ndarray:
        """Which ``keys`` the table holds: a binary search each (``np.isin`` sorted or hashed
        both sides, 0.1-0.3 ms a call at a few hundred documents)."""
        if not len(self.keys):
            return np.zeros(keys.shape, dtype=bool)
        return self._positions(keys)[1]

    def at(self, keys: np.ndarray) -> np.ndarray:
        if not len(self.keys):
            return np.zeros(keys.shape, dtype=np.float64)
        pos, held = self._positions(keys)
        return np.where(held, self.values[pos], 0.0)


@dataclass(frozen=True)
class Candidates:
    """The bounded candidate set and what finding it computed that the stages reuse."""

    docs: list[int]  # candidate documents, in the order every column's rows follow
    around: np.ndarray | None  # each candidate's thread neighbours (None: no thread context)
    scoring: np.ndarray  # candidates and neighbours (int64): whose BM25 the context reads
    own: dict[int, float]  # the BM25 top from the index
    threads: dict[int, float]  # the best threads' BM25, by thread code
    array: np.ndarray  # ``docs`` as an int64 array (built once: every stage indexes with it)
    top: _Table  # ``own`` as a table for array look-ups


def candidates(
    view: View,
    search: Search,
    tuning: Tuning,
    *,
    lexical: bool,
    local_q: np.ndarray | None,
    dense_q: np.ndarray | None,
) -> Candidates:
    """The ``lexical_k`` best memories by BM25, the members of the best threads, (below
    ``SCAN_LIMIT`` memories) the best by local and dense cosine over every row, and the thread
    neighbours of all of them, within the mounted rings."""
    prev_of, next_of = view.arrays["prev"], view.arrays["next"]
    own_docs, own_scores = search.top_hits(tuning.lexical_k)
    own = dict(zip(own_docs.tolist(), own_scores.tolist(), strict=True))
    core = dict.fromkeys(own)
    thread_scores: dict[int, float] = {}
    if lexical and own and tuning.thread > 0:
        thread_scores = search.threads(tuning.threads_k)
        for code in thread_scores:
            first = view.first_in_thread(code)
            if 0 <= first < view.docs:
                core[first] = None
                core.update(dict.fromkeys(_walk(view, first, next_of, tuning.thread_members - 1)))
    if view.docs <= SCAN_LIMIT and view.docs:
        # Exact scans are cheap here: the vector stages may find what no word matches.
        if local_q is not None:
            core.update(dict.fromkeys(_best(matvec(view.local.all(), local_q), tuning.pool)))
        if dense_q is not None and view.dense is not None and view.dense.dims == dense_q.shape[0]:
            core.update(dict.fromkeys(_best(matvec(view.dense.all(), dense_q), tuning.pool)))
    window = tuning.context_window if tuning.context > 0 and view.meta.threads else 0

    def around_of(ds: np.ndarray) -> np.ndarray | None:
        return _neighbours(ds, prev_of, next_of, window, view.docs) if window else None

    core_docs = own_docs if len(core) == len(own) else np.fromiter(core, np.int64, len(core))
    found = _with_neighbours(core_docs, around_of(core_docs))
    if search.ring_filter is not None:
        found = search.in_rings(found)
    around = around_of(found)  # for the scoring set and the thread context both
    scoring = found if around is None else _distinct(np.concatenate([found, around.ravel()]))
    top = _Table(own_docs, own_scores)
    return Candidates(found.tolist(), around, scoring, own, thread_scores, found, top)


def lexical_stage(
    view: View, search: Search, pool: Candidates, tuning: Tuning, exact_head: int | None
) -> LexicalColumn:
    """BM25 (corpus IDF) plus a decaying share of the thread neighbours' BM25 and the thread's
    own BM25 (scaled to the best memory's); its fused term is that over its best value."""
    docs, own, around = pool.docs, pool.own, pool.around
    # Every BM25 read below goes through one table sorted by document (the top's scores and
    # the missing documents'), looked up as arrays: thousands of dict reads a recall on the
    # MCP bench's thread-heavy corpus.
    top = pool.top
    # A BM25 top that came back short holds every matching document: the rest score 0.
    missing: list[int] = []
    if not search.complete:
        missing = pool.scoring[~top.holds(pool.scoring)].tolist()
    # Candidates outside the BM25 top-n score at most its n-th score. Without thread context
    # (each score counts for its own document only), such a candidate first takes that bound
    # as its lexical score; only those whose bounded fused score could still reach the head get
    # their exact BM25 (``fusion.settle``). At 10k memories the restricted BM25 query over the
    # ~180 scan candidates was about a third of recall (0.47 of 1.3 ms).
    pending: list[int] = []
    bound = 0.0
    if (
        exact_head is not None
        and missing
        and around is None
        and not pool.threads
        and len(own) >= tuning.lexical_k
    ):
        pending, missing = missing, []
        bound = min(own.values())
    found_docs, found_scores = search.scores_array(missing)
    bm25 = top.joined(found_docs, found_scores) if len(found_docs) else top
    lex = bm25.at(pool.array).astype(np.float32)
    if pending:  # without context the scoring set is the candidates: pending = not in the top
        lex[~top.holds(pool.array)] = bound
    best_own = float(lex.max()) if len(docs) else 0.0
    if around is not None:
        lex = lex + _context(around, bm25, tuning)
    if pool.threads and best_own > 0:
        top_thread = max(pool.threads.values())
        cand = pool.array
        codes = view.arrays["thread"][cand] if len(docs) else np.zeros(0, dtype=np.int32)
        threads = _Table(
            np.fromiter(pool.threads, dtype=np.int64, count=len(pool.threads)),
            np.fromiter(pool.threads.values(), dtype=np.float64, count=len(pool.threads)),
        )
        per = threads.at(codes.astype(np.int64)).astype(np.float32)
        lex = lex + tuning.thread * best_own * per / top_thread
    return LexicalColumn("lexical", lex, normalised(lex), OK, pending, bound)


def normalised(lex: np.ndarray) -> tuple[np.ndarray, ...]:
    """The lexical term: the scores over their best one (none when nothing scored)."""
    best = float(lex.max()) if len(lex) else 0.0
    return (lex / best,) if best > 0 else ()


def local_stage(view: View, pool: Candidates, local_q: np.ndarray, weight: float) -> LocalColumn:
    """local-hash-128 cosine; adds ``weight`` x its positive part."""
    rows = view.local.rows(pool.array)
    loc = matvec(rows, local_q) if len(pool.docs) else np.zeros(0, np.float32)
    return LocalColumn("local_vector", loc, (weight * np.maximum(loc, 0.0),), OK, rows)


def dense_stage(view: View, pool: Candidates, qv: np.ndarray, tuning: Tuning) -> DenseColumn | None:
    """Dense cosine (over the best candidate's), the cosine with the candidate's thread centroid
    (small stores) and the thread neighbours' cosine; None when the index holds no vectors of
    the query vector's size."""
    if view.dense is None or view.dense.dims != qv.shape[0]:
        return None
    docs, cand = pool.docs, pool.array
    prev_of, next_of = view.arrays["prev"], view.arrays["next"]
    den = matvec(view.dense.rows(cand), qv) if len(docs) else np.zeros(0, np.float32)
    contribution = np.maximum(den - tuning.dense_floor, 0.0)
    if tuning.dense_scaled and len(docs) and float(contribution.max()) > 0:
        contribution = contribution / float(contribution.max())
    terms = [tuning.w_dense * contribution]
    small = view.docs <= SCAN_LIMIT
    if tuning.dense_thread > 0 and view.meta.threads and len(docs) and small:
        centroids = view.thread_centroids()
        codes = view.arrays["thread"][cand]
        tcos = np.where(codes >= 0, matvec(centroids, qv)[np.maximum(codes, 0)], 0.0)
        terms.append(tuning.dense_thread * np.maximum(tcos, 0.0).astype(np.float32))
    if tuning.dense_context > 0 and view.meta.threads and len(docs):
        around = np.concatenate([prev_of[cand], next_of[cand]])
        ok = (around >= 0) & (around < view.docs)
        near = np.zeros(around.shape[0], dtype=np.float32)
        if ok.any():
            near[ok] = matvec(view.dense.rows(around[ok]), qv)
        pair = np.maximum(near, 0.0).reshape(2, len(docs)).sum(axis=0)
        terms.append(tuning.w_dense * tuning.dense_context * pair)
    by_doc = {d: float(v) for d, v in zip(docs, den, strict=True)}
    return DenseColumn("dense", den, tuple(terms), OK, by_doc)


def tag_stage(
    view: View,
    search: Search,
    pool: Candidates,
    query: str,
    patterns: Sequence[Any],
    tuning: Tuning,
) -> Column | None:
    """``w_author`` when the query names the memory's author, ``w_entity`` when it names one of
    its entities; None when it names neither (or both weights are 0)."""
    if tuning.w_author <= 0 and tuning.w_entity <= 0:
        return None
    tags = query_tags(view, query, patterns)
    authors = [t for t in tags if t.startswith("a:")]
    entities = [t for t in tags if t.startswith("e:")]
    if not authors and not entities:
        return None
    docs = pool.docs
    by_author = search.tagged(authors, docs)
    by_entity = search.tagged(entities, docs)
    boost = np.asarray(
        [tuning.w_author * (d in by_author) + tuning.w_entity * (d in by_entity) for d in docs],
        dtype=np.float32,
    )
    return Column("entity", boost, (boost,))


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
    docs: np.ndarray, prev_of: np.ndarray, next_of: np.ndarray, window: int, limit: int
) -> np.ndarray:
    """Each document's thread neighbours as a (len(docs), 2 x window) matrix: the previous
    memory, the one before it, ..., then the next, the one after it, ...; -1 past a thread's
    end (or past ``limit``). One array step per column instead of a Python walk per document:
    a thread-heavy recall walks thousands (issue 16, the MCP bench: 9 ms at 10k memories).
    ``docs`` are documents of the view (0 <= d < ``limit``)."""
    out = np.empty((len(docs), 2 * window), dtype=np.int64)
    for side, step in enumerate((prev_of, next_of)):
        at = docs
        for k in range(window):
            ok = at >= 0
            nxt = step[np.where(ok, at, 0)]
            at = np.where(ok & (nxt >= 0) & (nxt < limit), nxt, -1)
            out[:, side * window + k] = at
    return out


def _with_neighbours(docs: np.ndarray, around: np.ndarray | None) -> np.ndarray:
    """``docs`` (distinct) in order, then the neighbours ``around`` gives them (their rows of
    ``_neighbours``) in walking order, first occurrence kept: as ``dict.fromkeys`` would keep
    them, in one sort instead of thousands of dict inserts."""
    if around is None:
        return docs
    flat = around.ravel()
    every = np.concatenate([docs, flat[flat >= 0]])
    _, first = np.unique(every, return_index=True)  # a stable sort: each value's first index
    first.sort()
    out: np.ndarray = every[first]
    return out


def _distinct(docs: np.ndarray) -> np.ndarray:
    """The documents (>= 0) among ``docs``, each once, sorted: the scoring set, whose order is
    never read (its BM25 is looked up by document). A sort and a neighbour test: numpy 2's
    hash-based ``np.unique`` took 1 ms for the 7,000 of a thread-heavy recall."""
    docs = np.sort(docs)
    keep = np.empty(len(docs), dtype=bool)
    keep[:1] = True
    np.not_equal(docs[1:], docs[:-1], out=keep[1:])
    keep &= docs >= 0
    out: np.ndarray = docs[keep]
    return out


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


def _context(around: np.ndarray, bm25: _Table, tuning: Tuning) -> np.ndarray:
    """A decaying share of the thread neighbours' BM25 (up to context_window away), for the
    documents whose ``_neighbours`` rows ``around`` holds."""
    window = tuning.context_window
    scores = bm25.at(around)  # -1 (no neighbour) is never a key: 0.0
    shares = [tuning.context * 0.5**k for k in range(window)] * 2
    # Summed left to right in float64, in the order the walk added them before: same bits.
    total = np.zeros(len(around), dtype=np.float64)
    for column, share in enumerate(shares):
        total = total + share * scores[:, column]
    return total.astype(np.float32)
