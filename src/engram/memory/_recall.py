"""``recall``: hybrid retrieval over the seat's mounted rings, cut to its token budget.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_recall: "Two-stage hybrid lexical
(FTS5 BM25 + Corpus IDF) + dense neural (/v1/embeddings) + cross-encoder reranked (/v1/rerank)
retrieval with MMR slate diversity", and §3.1 keyspace_budget_tokens / budget_share_pct / fail_open.

Stages: (1) BM25 over the in-process index, smoothed with the neighbouring memories of the same
thread (a conversation, an episode) because an answer often sits next to the words that find it;
(2) local-hash-128 cosine; (3) dense cosine when an embedder is configured; (4) fusion by
score (lexical over its best, plus weighted cosines; rank fusion lost on LoCoMo); (5) the
optional cross-encoder reorders the first ``candidates_k`` (plus ``guaranteed_dense_k`` dense
hits that fusion left out); (6) MMR; (7) the token budget, split across mounts by
``budget_share_pct`` (the unassigned share is a pool any mount may use). Remote failures
degrade to the local stages when ``fail_open`` is true and say so in ``stages``; otherwise
they raise RemoteError. The index is read and loaded under ``engine.lock``, so one engine
serves many threads; the remote calls (query embedding, cross-encoder) run outside it.
Decisions: ``docs/spec/memory-retrieval.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engram.errors import Forbidden, InvalidRequest, RemoteError
from engram.memory import _repo
from engram.memory._engine import MemoryEngine
from engram.memory._manifest import Mount
from engram.memory._models import Memory, RecallHit, RecallResult
from engram.memory._text import local_vector, terms
from engram.memory._withdrawn import withdrawn_among


@dataclass(frozen=True)
class Tuning:
    """Fusion constants (chosen on the LoCoMo development half; see bench/bench_locomo.py)."""

    pool: int = 200  # candidates kept after fusion
    context: float = 0.5  # share of a thread neighbour's BM25 added to a memory's own
    context_window: int = 2  # neighbours on each side; each further step halves the share
    thread: float = 0.8  # weight of the whole thread's BM25 (scaled to the best memory's)
    w_local: float = 0.1  # local-hash-128 cosine, added to the normalised lexical score
    w_dense: float = 1.0  # dense cosine, added likewise
    mmr_lambda: float = 0.85
    mmr_depth: int = 60
    duplicate_cosine: float = 0.9  # a candidate this close to a chosen one goes to the back


DEFAULT_TUNING = Tuning()
STAGES = ("lexical", "local_vector", "dense", "rerank")


def _top(scores: np.ndarray, mask: np.ndarray | None, n: int, *, positive: bool) -> np.ndarray:
    """Indices of the ``n`` best scores (within ``mask``; None = every document), best first."""
    keep = scores > 0 if positive else np.isfinite(scores)
    if mask is not None:
        keep &= mask
    n = min(n, int(np.count_nonzero(keep)))
    masked = np.where(keep, scores, -np.inf)
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-masked, n - 1)[:n]
    best: np.ndarray = part[np.argsort(-masked[part], kind="stable")]
    return best


def _with_context(lex: np.ndarray, prev: np.ndarray, nxt: np.ndarray, tuning: Tuning) -> np.ndarray:
    """Add a decaying share of the neighbours' scores (same thread, up to context_window away)."""
    out = lex.copy()
    p, n, share = prev, nxt, tuning.context
    for _ in range(tuning.context_window):
        out += share * (
            np.where(p >= 0, lex[np.maximum(p, 0)], 0.0)
            + np.where(n >= 0, lex[np.maximum(n, 0)], 0.0)
        )
        p = np.where(p >= 0, prev[np.maximum(p, 0)], -1)
        n = np.where(n >= 0, nxt[np.maximum(n, 0)], -1)
        share *= 0.5
    return out


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


def fused_ranking(
    engine: MemoryEngine,
    query: str,
    ring_ids: Sequence[str],
    stages: dict[str, str],
    tuning: Tuning = DEFAULT_TUNING,
    *,
    use: Sequence[str] = ("lexical", "local_vector", "dense"),
    query_vector: np.ndarray | _Unset | None = UNSET,
) -> tuple[list[int], dict[int, dict[str, float]], np.ndarray | None]:
    """Fused candidate documents (index positions, best first) with per-stage raw scores.

    Fusion is by score: the lexical score (BM25 + thread context) divided by its best value,
    plus ``w_local`` x local cosine, plus ``w_dense`` x dense cosine. A weak stage then nudges
    ties instead of outvoting a strong one, as rank fusion would. ``query_vector`` is the dense
    query vector when the caller already asked the embedder (``recall`` does, before taking
    ``engine.lock``; None = no dense stage); left out, it is fetched here.
    """
    index = engine.index
    mask: np.ndarray | None = index.ring_mask(ring_ids)
    if mask is not None and mask.all():
        mask = None  # every memory is in a mounted ring: skip the masking passes

    def best_of(values: np.ndarray) -> float:
        if mask is None:
            return float(values.max()) if values.shape[0] else 0.0
        return float(values[mask].max()) if mask.any() else 0.0

    fused = np.zeros(len(index), dtype=np.float32)
    columns: dict[str, np.ndarray] = {}
    if "lexical" in use:
        query_terms = terms(query)
        own = index.bm25(query_terms)
        lex = own
        if tuning.context > 0 and index.has_threads:
            prev, nxt = index.neighbours()
            lex = _with_context(own, prev, nxt, tuning)
        best_own = best_of(own)
        if tuning.thread > 0 and best_own > 0 and index.has_threads:
            thread = index.thread_bm25(query_terms)
            top_thread = best_of(thread)
            if top_thread > 0:
                lex = lex + tuning.thread * best_own * thread / top_thread
        best = best_of(lex)
        if best > 0:
            fused += lex / best
        columns["lexical"] = lex
        stages["lexical"] = "ok"
    if "local_vector" in use:
        loc = index.local_scores(local_vector(query))
        fused += (tuning.w_local if len(use) > 1 else 1.0) * np.maximum(loc, 0.0)
        columns["local_vector"] = loc
        stages["local_vector"] = "ok"
    dense_scores = None
    qv: np.ndarray | None = None
    if "dense" in use:
        qv = (
            _remote_query_vector(engine, query, stages)
            if isinstance(query_vector, _Unset)
            else query_vector
        )
    if qv is not None:
        dense_scores = index.dense_scores(qv)
        if dense_scores is not None:
            fused += tuning.w_dense * np.maximum(dense_scores, 0.0)
            columns["dense"] = dense_scores
    order = _top(fused, mask, tuning.pool, positive=True).tolist()
    columns["fused"] = fused
    return order, _Parts(columns), dense_scores


class _Parts(dict[int, dict[str, float]]):
    """Per-stage scores of a document, computed when first asked for (most are never shown)."""

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        super().__init__()
        self.columns = columns

    def __missing__(self, doc: int) -> dict[str, float]:
        value = {name: float(col[doc]) for name, col in self.columns.items()}
        self[doc] = value
        return value


@dataclass
class _Ranked:
    """What recall takes out from under ``engine.lock``: the fused ranking, the cross-encoder's
    candidates and their texts, and the index columns MMR and the budget read.

    The columns are the index's own arrays as they were: the index only appends rows (a
    rebuild replaces the arrays), so positions in ``order`` stay valid after the lock is gone.
    """

    order: list[int]
    parts: dict[int, dict[str, float]]
    head: list[int]  # cross-encoder candidates (empty when the stage is disabled)
    head_texts: list[str]
    ids: list[str]
    local: np.ndarray
    ring_of: np.ndarray
    tokens: np.ndarray
    ring_of_code: dict[int, str]


def _rank(
    engine: MemoryEngine,
    query: str,
    mounts: Sequence[Mount],
    query_vector: np.ndarray | None,
    stages: dict[str, str],
    tuning: Tuning,
) -> _Ranked:
    """The local stages and the cross-encoder's candidate texts; call under engine.lock."""
    index = engine.index
    index.sync(engine.store)
    order, parts, dense = fused_ranking(
        engine, query, [m.ring_id for m in mounts], stages, tuning, query_vector=query_vector
    )
    head: list[int] = []
    texts: list[str] = []
    cfg = engine.spec.retrieval.reranker
    if engine.reranker is None or not cfg.enabled:
        stages["rerank"] = "disabled"
    else:
        head = order[: cfg.candidates_k]
        if dense is not None and cfg.guaranteed_dense_k > 0:
            # The best dense hits get a seat at the cross-encoder even if fusion ranked them low.
            best_dense = np.argsort(-dense, kind="stable")[: cfg.guaranteed_dense_k].tolist()
            head += [d for d in best_dense if d not in head and dense[d] > -1.0]
        with engine.store.read() as tx:
            found = _repo.get_memories(tx, [index.ids[d] for d in head])
        texts = [found[index.ids[d]].text for d in head]
    return _Ranked(
        order,
        parts,
        head,
        texts,
        index.ids,
        index.local.view(),
        index.ring_of.view(),
        index.tokens.view(),
        {code: rid for rid, code in index.ring_codes.items()},
    )


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
    local: np.ndarray, order: list[int], relevance_of: dict[int, float] | None, tuning: Tuning
) -> list[int]:
    """Maximal marginal relevance over the head of the ranking (local vectors as similarity).

    Relevance is the fused score over the best one (or rank-based after a cross-encoder);
    near-duplicates of a chosen memory (cosine >= duplicate_cosine) go behind everything else.
    """
    depth = min(len(order), tuning.mmr_depth)
    if depth <= 1 or tuning.mmr_lambda >= 1.0:
        return order
    head = np.asarray(order[:depth], dtype=np.int64)
    vecs = local[head]
    sims = vecs @ vecs.T
    relevance: np.ndarray
    if relevance_of is None:
        relevance = 1.0 - np.arange(depth, dtype=np.float32) / depth  # rank-based, in (0, 1]
    else:
        raw = np.asarray([relevance_of[d] for d in order[:depth]], dtype=np.float32)
        relevance = raw / (float(raw.max()) or 1.0)
    chosen: list[int] = []
    best_sim = np.zeros(depth, dtype=np.float32)
    available = np.ones(depth, dtype=bool)
    for _ in range(depth):
        score = tuning.mmr_lambda * relevance - (1 - tuning.mmr_lambda) * best_sim
        score[best_sim >= tuning.duplicate_cosine] -= 2.0
        score[~available] = -np.inf
        pick = int(np.argmax(score))
        chosen.append(pick)
        available[pick] = False
        best_sim = np.maximum(best_sim, sims[pick])
    return [order[i] for i in chosen] + order[depth:]


def _slate(
    engine: MemoryEngine,
    query: str,
    k: int,
    mounts: Sequence[Mount],
    tuning: Tuning,
    stages: dict[str, str],
) -> tuple[list[tuple[str, int]], dict[int, dict[str, float]], int]:
    """The ranked, budgeted slate as (memory id, index position) pairs.

    Only the local stages run under ``engine.lock``; the dense query vector is fetched before
    it and the cross-encoder called after it, so a slow endpoint stalls only its own recall.
    """
    query_vector = _remote_query_vector(engine, query, stages)
    with engine.lock:  # the index is shared by every thread using this engine
        ranked = _rank(engine, query, mounts, query_vector, stages, tuning)
    order = _rerank(engine, query, ranked, stages)
    parts = ranked.parts
    reranked = stages.get("rerank") == "ok"
    fused_of = None if reranked else {d: parts[d]["fused"] for d in order[: tuning.mmr_depth]}
    order = _mmr(ranked.local, order, fused_of, tuning)

    spec = engine.spec
    budget = spec.seat.keyspace_budget_tokens
    left = {m.ring_id: budget * m.budget_share_pct // 100 for m in mounts}
    pool = budget - sum(budget * m.budget_share_pct // 100 for m in spec.mounts)
    picked: list[tuple[str, int]] = []
    used = 0
    for doc in order:
        if len(picked) == k:
            break
        ring_id = ranked.ring_of_code[int(ranked.ring_of[doc])]
        cost = int(ranked.tokens[doc])
        if left.get(ring_id, 0) >= cost:
            left[ring_id] -= cost
        elif pool >= cost:
            pool -= cost
        else:
            continue
        picked.append((ranked.ids[doc], doc))
        used += cost
    return picked, parts, used


def recall(
    engine: MemoryEngine,
    query: str,
    k: int = 10,
    *,
    rings: Sequence[str] | None = None,
    tuning: Tuning = DEFAULT_TUNING,
) -> RecallResult:
    """The best memories for ``query`` from the seat's mounted rings, within its token budget."""
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
    picked_ids, parts, used = _slate(engine, query, k, mounts, tuning, stages)
    with engine.store.read() as tx:
        found: dict[str, Memory] = _repo.get_memories(tx, [m for m, _ in picked_ids])
        for gone in withdrawn_among(tx, list(found)):  # kept, never served (_withdrawn.py)
            del found[gone]
    hits = tuple(
        RecallHit(found[mid], parts[d]["fused"], parts[d]) for mid, d in picked_ids if mid in found
    )
    degraded = any(v.startswith("degraded") for v in stages.values())
    return RecallResult(
        query,
        hits,
        {s: stages.get(s, "disabled") for s in STAGES},
        degraded,
        spec.seat.keyspace_budget_tokens,
        used,
    )


__all__ = ["DEFAULT_TUNING", "Tuning", "fused_ranking", "recall"]
