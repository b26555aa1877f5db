"""Fusion: the stages' columns summed into one score over the candidates, best first.

Fusion is by score: the lexical score (BM25 + thread context + thread BM25) over its best value,
plus ``w_local`` x local cosine, ``w_dense`` x dense cosine, and the author / entity boosts. A
weak stage then nudges ties instead of outvoting a strong one, as rank fusion would (rank
fusion lost on LoCoMo).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from engram.memory._engine import MemoryEngine
from engram.memory._index import View
from engram.memory._recall.search import Search
from engram.memory._recall.stages import (
    Column,
    LexicalColumn,
    candidates,
    dense_stage,
    embed_query,
    lexical_stage,
    local_stage,
    normalised,
    tag_stage,
)
from engram.memory._recall.time_prior import TimeQuery, time_stage
from engram.memory._recall.tuning import DEFAULT_TUNING, Tuning
from engram.memory._text import local_vector, terms


class _Unset:
    """The type of UNSET: "not computed yet", distinct from None ("no dense vector")."""


UNSET = _Unset()
ALL_STAGES = ("lexical", "local_vector", "dense")


class Parts(dict[int, dict[str, float]]):
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
class Ranking:
    """Fused candidates (documents of the view, best first) with their per-stage scores."""

    order: list[int]
    parts: Parts
    dense: dict[int, float] | None  # dense cosine of every candidate, when the stage ran
    local: np.ndarray | None = None  # local-hash-128 rows of the candidates (by parts.row_of)
    # With ``exact_head``: only order[:exact] is guaranteed to be the exact ranking's prefix
    # (None: all of it is); see fused_ranking.
    exact: int | None = None
    # The status of each stage that ran ("ok"; the dense one as fetched when fetched here).
    stages: dict[str, str] = field(default_factory=dict)


def fused_ranking(
    engine: MemoryEngine,
    query: str,
    ring_ids: Sequence[str],
    tuning: Tuning = DEFAULT_TUNING,
    *,
    use: Sequence[str] = ALL_STAGES,
    query_vector: np.ndarray | _Unset | None = UNSET,
    view: View | None = None,
    exact_head: int | None = None,
    when: TimeQuery | None = None,
) -> Ranking:
    """Fused candidate documents with per-stage raw scores, on a bounded candidate set
    (``stages.candidates``), the stages of ``use`` run on it and fused in a fixed order.

    ``query_vector``: the dense query vector already fetched (None: no dense stage); unset, it
    is fetched here when ``use`` has "dense". ``exact_head`` (recall's MMR depth) lets the
    ranking skip the exact BM25 of candidates that provably cannot reach its first
    ``exact_head`` places; ``Ranking.exact`` then says how long the exact prefix of ``order`` is
    (the rest may be out of order, never the prefix). ``when``: the query's time intent, a
    prior on the fused score (``time_prior``; the whole ranking is then exact).
    """
    view = view or engine.index.sync(engine.store)
    if when is not None:
        exact_head = None  # the prior reads every candidate's time: no bound to settle on
    lexical_on = "lexical" in use
    search = Search(view, terms(query) if lexical_on else [], ring_ids, tuning)
    statuses: dict[str, str] = {}
    qv: np.ndarray | None = None
    if "dense" in use:
        if isinstance(query_vector, _Unset):
            fetched = embed_query(engine, query)
            statuses["dense"] = fetched.status
            qv = fetched.vector
        else:
            qv = query_vector
    local_q = local_vector(query) if "local_vector" in use else None
    pool = candidates(view, search, tuning, lexical=lexical_on, local_q=local_q, dense_q=qv)
    columns: list[Column] = []
    lexical = lexical_stage(view, search, pool, tuning, exact_head) if lexical_on else None
    if lexical is not None:
        columns.append(lexical)
    local = None
    if local_q is not None:
        local = local_stage(view, pool, local_q, tuning.w_local if len(use) > 1 else 1.0)
        columns.append(local)
    dense = dense_stage(view, pool, qv, tuning) if qv is not None else None
    if dense is not None:
        columns.append(dense)
    if lexical_on:
        patterns = engine.spec.ontology.compiled_patterns()
        tagged = tag_stage(view, search, pool, query, patterns, tuning)
        if tagged is not None:
            columns.append(tagged)
    if when is not None:
        timed = time_stage(
            engine, view, ring_ids, pool, fuse(len(pool.docs), columns), when, tuning
        )
        if timed is not None:
            columns.append(timed)
    fused = fuse(len(pool.docs), columns)
    exact: int | None = None
    if lexical is not None and lexical.pending:
        settled, exact = settle(search, pool.docs, lexical, fused, exact_head or 0)
        columns = [settled if c is lexical else c for c in columns]
        fused = fuse(len(pool.docs), columns)
    for column in columns:
        if column.name in ALL_STAGES:
            statuses[column.name] = column.status
    shown = {c.name: c.scores for c in columns} | {"fused": fused}
    order = [pool.docs[i] for i in _top(fused, tuning.pool)]
    parts = Parts(shown, dict(zip(pool.docs, range(len(pool.docs)), strict=True)))
    return Ranking(
        order,
        parts,
        None if dense is None else dense.by_doc,
        None if local is None else local.rows,
        exact,
        statuses,
    )


def fuse(n: int, columns: Sequence[Column]) -> np.ndarray:
    """The fused score: the columns' terms added to zero in order (the same float32 sums)."""
    fused = np.zeros(n, dtype=np.float32)
    for column in columns:
        for term in column.terms:
            fused += term
    return fused


def settle(
    search: Search, docs: Sequence[int], lexical: LexicalColumn, fused: np.ndarray, head: int
) -> tuple[LexicalColumn, int | None]:
    """The lexical column with exact BM25 scores for its ``pending`` candidates (holding the
    top's bound as their lexical score) that could reach the first ``head`` places of ``fused``,
    and ``head`` when the others were left out, None when all were scored (the whole order is
    then exact).

    Why it is exact: the fused score only grows with the lexical one, so a pending candidate's
    true score is at most its bounded one. Let T be the ``head``-th best score among the other
    (exactly scored) candidates; a pending candidate bounded below T truly scores below ``head``
    candidates, so it is not in the exact ranking's first ``head`` places, and with its bound it
    is not in the computed ones either: both prefixes hold the same documents with the same
    scores in the same order (ties by position, as ``_top`` breaks them). The best lexical score
    (the normaliser) is a top document's, never a pending one's.
    """
    row = dict(zip(docs, range(len(docs)), strict=True))
    rows = np.asarray([row[d] for d in lexical.pending], dtype=np.int64)
    known = np.ones(len(docs), dtype=bool)
    known[rows] = False
    settled = fused[known]
    settled = settled[settled > 0]
    cut = head if head > 0 and settled.shape[0] >= head else 0
    if cut:
        threshold = float(np.partition(settled, settled.shape[0] - cut)[settled.shape[0] - cut])
        rows = rows[fused[rows] >= threshold]
    exact = search.scores_of([docs[int(i)] for i in rows])
    lex = lexical.scores.copy()
    lex[rows] = [exact.get(docs[int(i)], 0.0) for i in rows]
    terms = normalised(lex) if lexical.terms else ()
    return replace(lexical, scores=lex, terms=terms, pending=[]), (head if cut else None)


def _top(scores: np.ndarray, n: int) -> list[int]:
    """Positions of the ``n`` best positive scores, best first (ties: earlier first)."""
    positive = np.flatnonzero(scores > 0)
    if positive.shape[0] == 0:
        return []
    ranked = positive[np.argsort(-scores[positive], kind="stable")]
    out: list[int] = ranked[:n].tolist()
    return out
